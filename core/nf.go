package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/ausf"
	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/nf/nssf"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/nf/udm"
	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/shm"
	"github.com/tern5g/tern/sbi/shmsbi"
	"github.com/tern5g/tern/store"
)

// NF is one control-plane NF running as its own process (tern nf NAME):
// it serves its SBI over HTTP/2 at sbi.listen[NAME], registers with the NRF
// (heartbeats, deregistration on Close) and reaches every peer through
// NRF discovery, so the NFs can start in any order, run on other hosts and
// restart on their own (TS 23.501 §6.3.1, TS 29.510).
type NF struct {
	Name    string
	APIRoot string

	cfg     config.Config
	log     *slog.Logger
	baseLog *slog.Logger
	http    *httpBinding
	disc    *nrfclient.Discoverer
	agent   *nrfclient.Agent

	nrf   *nrf.NRF
	store *store.Store
	sqns  *sqnReservations
	udr   *udr.UDR
	smf   *smf.SMF
	amf   *amf.AMF
	n4    *pfcp.Endpoint

	nrfClient     *ops.Client
	shm           *shm.Config // binding shm: peers on this node over shared memory
	shmServer     *shmsbi.Server
	shmMu         sync.Mutex
	shmPeers      map[string]*shmsbi.Caller // by NF name
	instanceID    string                    // the NF instance ID it registers
	tokens        *nrfclient.TokenSource    // nil: access tokens are off
	stopFollow    func()
	stopSubscribe func()
}

// profileOf is what each NF registers: its type and services.
var profileOf = map[string]struct {
	t        sbi.NFType
	services []models.Nrf_NFMgmt_ServiceName
}{
	"udr":  {sbi.NFTypeUDR, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NUDR_DR}},
	"udm":  {sbi.NFTypeUDM, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NUDM_UEAU, models.Nrf_NFMgmt_ServiceName_NUDM_SDM, models.Nrf_NFMgmt_ServiceName_NUDM_UECM}},
	"ausf": {sbi.NFTypeAUSF, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH}},
	"nssf": {sbi.NFTypeNSSF, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NNSSF_NSSELECTION}},
	"pcf":  {sbi.NFTypePCF, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL}},
	"smf":  {sbi.NFTypeSMF, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION}},
	"amf":  {sbi.NFTypeAMF, []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NAMF_COMM}},
}

// NewNF builds the NF name of cfg; nothing listens for peers until Start.
func NewNF(cfg config.Config, name string, log *slog.Logger, opts ...Option) (*NF, error) {
	if !slices.Contains(config.NFNames, name) {
		return nil, fmt.Errorf("core: no NF %q (want one of %v)", name, config.NFNames)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.SBI.Binding == config.BindingInproc {
		cfg.SBI.Binding = config.BindingHTTP
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SBI.Listen[name] == "" {
		return nil, fmt.Errorf("core: sbi.listen.%s: where %s serves its SBI is not configured", name, name)
	}
	hb, err := newHTTPBinding(cfg.SBI, log, cfg.SBI.Listen)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	hb.observe = o.observeSBI
	n := &NF{Name: name, cfg: cfg, log: log.With("nf", name), baseLog: log, http: hb}
	ok := false
	defer func() {
		if !ok {
			n.Close()
		}
	}()
	if n.APIRoot, err = hb.root(name); err != nil {
		return nil, err
	}
	nrfClient := hb.clientOf(cfg.SBI.NRFRoot())
	n.nrfClient = nrfClient
	if cfg.SBI.Binding == config.BindingShm {
		sc := cfg.SBI.ShmConfig()
		n.shm = &sc
	}
	n.instanceID = identity.NewNFInstanceID()
	switch {
	case name == "amf" && cfg.AMF.InstanceID != "":
		n.instanceID = cfg.AMF.InstanceID
	case name == "ausf" && cfg.AUSF.InstanceID != "":
		n.instanceID = cfg.AUSF.InstanceID
	}
	if cfg.NRF.AccessTokens && name != "nrf" {
		// TS 33.501 §13.4.1: consumers present a token from the NRF,
		// producers verify it with the NRF's public key.
		if cfg.NRF.SigningKey == "" {
			return nil, errors.New("core: nrf.accessTokens needs nrf.signingKey, the PEM file producers verify tokens with (the NRF's key, or its public half)")
		}
		key, err := nrf.VerificationKey(cfg.NRF.SigningKey)
		if err != nil {
			return nil, err
		}
		n.tokens = nrfclient.NewTokenSource(nrfClient, n.instanceID, profileOf[name].t)
		hb.verifier = &nrfclient.TokenVerifier{Key: key, Issuer: cfg.NRF.InstanceID, NFType: profileOf[name].t, NFInstanceID: n.instanceID, Leeway: 5 * time.Second}
	}
	if n.disc, err = nrfclient.NewDiscoverer(nrfclient.DiscovererConfig{NRF: nrfClient, Logger: n.log}); err != nil {
		return nil, err
	}
	if err := n.build(nrfClient); err != nil {
		return nil, err
	}
	if name != "nrf" {
		prof, err := n.profile()
		if err != nil {
			return nil, err
		}
		if n.agent, err = nrfclient.NewAgent(nrfclient.AgentConfig{NRF: nrfClient, Profile: prof, Logger: n.log}); err != nil {
			return nil, err
		}
	}
	ok = true
	return n, nil
}

// serve serves producer (and the discovery cache's notifications) over
// HTTP/2 and, with binding shm, on the node's shared-memory pool under the
// NF's name.
func (n *NF) serve(producer any) error {
	if _, err := n.http.serve(n.Name, producer, n.disc); err != nil {
		return err
	}
	if n.shm == nil || n.Name == "nrf" {
		return nil
	}
	s, err := shmsbi.Listen(*n.shm, n.Name, n.log.With("if", "sbi-shm"), producer, n.disc)
	if err != nil {
		return fmt.Errorf("core: %s on shared memory: %w", n.Name, err)
	}
	n.shmServer = s
	return nil
}

// peer is a client of the NF type t's service s: found through discovery,
// or, with binding shm, the pool of that NF on this node (one per type;
// the NFs still register with the NRF over HTTP/2).
func (n *NF) peer(t sbi.NFType, s models.Nrf_NFMgmt_ServiceName) *ops.Client {
	if n.shm != nil {
		return ops.NewClient(n.shmPeer(strings.ToLower(string(t))), "")
	}
	me := profileOf[n.Name].t
	r := nrfclient.NewRouter(n.disc, t, s, sbi.DiscoveryQuery{RequesterNFType: me}, n.dial)
	return ops.NewClient(r, "")
}

// shmPeer is the shared-memory caller of the NF named name, one per name:
// it connects when that NF serves, and again whenever it restarts.
func (n *NF) shmPeer(name string) ops.Caller {
	n.shmMu.Lock()
	defer n.shmMu.Unlock()
	if k, ok := n.shmPeers[name]; ok {
		return k
	}
	k, err := shmsbi.Dial(*n.shm, name)
	if err != nil {
		return failing{err}
	}
	if n.shmPeers == nil {
		n.shmPeers = map[string]*shmsbi.Caller{}
	}
	n.shmPeers[name] = k
	return k
}

// failing is a caller that cannot be built: every call gets its error.
type failing struct{ err error }

func (f failing) Call(context.Context, *ops.Op, any, any) error { return f.err }

// dial is the caller of a producer at root, with access tokens when the
// deployment uses them.
func (n *NF) dial(root string) ops.Caller {
	c := httpsbi.NewCaller(n.http.client, root)
	if n.tokens != nil {
		return c.WithTokens(n.tokens)
	}
	return c
}

// build makes the NF and serves it.
func (n *NF) build(nrfClient *ops.Client) error {
	cfg, log := n.cfg, n.baseLog // the NFs name themselves in their logs
	var err error
	switch n.Name {
	case "nrf":
		nc := cfg.NRF
		nc.APIRoot = n.APIRoot
		if n.nrf, err = nrf.New(nc, log); err != nil {
			return err
		}
		n.nrf.SetNotifier(nrfClient) // notifications go to absolute URIs
		err = n.serve(n.nrf)
	case "udr":
		if n.store, err = store.OpenDriver(cfg.Store.Driver, cfg.Store.Source()); err != nil {
			return fmt.Errorf("core: subscriber store: %w", err)
		}
		// The demo subscribers come in Start, as in the unit (Core.Start).
		n.sqns = &sqnReservations{Store: n.store}
		if n.udr, err = udr.New(cfg.UDR, n.sqns, log); err != nil {
			return err
		}
		err = n.serve(n.udr)
	case "udm":
		var u *udm.UDM
		if u, err = udm.New(cfg.UDM, n.peer(sbi.NFTypeUDR, models.Nrf_NFMgmt_ServiceName_NUDR_DR), log); err != nil {
			return err
		}
		u.SetAMF(n.peer(sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM))
		u.SetSMF(n.peer(sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION))
		err = n.serve(u)
	case "ausf":
		var a *ausf.AUSF
		ac := cfg.AUSF
		ac.InstanceID = n.instanceID
		if a, err = ausf.New(ac, n.peer(sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_UEAU), log); err != nil {
			return err
		}
		err = n.serve(a)
	case "nssf":
		var s *nssf.NSSF
		if s, err = nssf.New(cfg.NSSF, log); err != nil {
			return err
		}
		err = n.serve(s)
	case "pcf":
		var p *pcf.PCF
		if p, err = pcf.New(cfg.PCF, log); err != nil {
			return err
		}
		p.SetNotifier(n.peer(sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION))
		err = n.serve(p)
	case "smf":
		sc := cfg.SMF
		sc.APIRoot = n.APIRoot
		amfC := n.peer(sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM)
		n.smf, err = smf.New(sc, smf.Deps{AMF: amfC, AMFStatus: amfC,
			SDM: n.peer(sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM),
			PCF: n.peer(sbi.NFTypePCF, models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL)}, log)
		if err != nil {
			return err
		}
		if n.n4, err = wireN4(cfg, n.smf, nil, nil, log); err != nil {
			return err
		}
		err = n.serve(n.smf)
	case "amf":
		ac := cfg.AMF
		ac.APIRoot = n.APIRoot
		ac.InstanceID = n.instanceID
		udmC := n.peer(sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
		nssfC := n.peer(sbi.NFTypeNSSF, models.Nrf_NFMgmt_ServiceName_NNSSF_NSSELECTION)
		nssfC.NFInstanceID = ac.InstanceID // Nnssf_NSSelection's nf-id
		n.amf, err = amf.New(ac, amf.Deps{AUSF: n.peer(sbi.NFTypeAUSF, models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH),
			SDM: udmC, UECM: udmC, NSSF: nssfC,
			SMFSelector: smfSelector{n}}, log)
		if err != nil {
			return err
		}
		n.amf.SetSMF(n.peer(sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION))
		err = n.serve(n.amf)
	}
	return err
}

// smfSelector picks, through the NRF, the SMF serving a PDU session's
// S-NSSAI and DNN (TS 23.501 §6.3.2); the session stays with that SMF.
type smfSelector struct{ n *NF }

func (s smfSelector) SelectSMF(ctx context.Context, snssai identity.SNSSAI, dnn string) (sbi.PDUSession, error) {
	c, id, err := s.pick(ctx, snssai, dnn)
	if err != nil {
		return nil, err
	}
	smf := &selectedSMF{sel: s, snssai: snssai, dnn: dnn, Client: c}
	smf.id.Store(&id)
	return smf, nil
}

// ResolveSMF implements amf.SMFResolver: the SMF instance a restored PDU
// session's record names, found through the NRF by target-nf-instance-id
// (TS 29.510 §6.2.3.2.3.1) when it is first called. Over shared memory
// the node has one SMF, which holds every session.
func (s smfSelector) ResolveSMF(nfInstanceID string) (sbi.PDUSession, error) {
	n := s.n
	if n.shm != nil || nfInstanceID == "" {
		return n.peer(sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION), nil
	}
	r := nrfclient.NewRouter(n.disc, sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION,
		sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF, TargetNFInstanceID: nfInstanceID}, n.dial)
	smf := &selectedSMF{sel: s, Client: ops.NewClient(nrfclient.Pin(n.disc, nfInstanceID, r), "")}
	smf.id.Store(&nfInstanceID)
	return smf, nil
}

// pick returns a client of an SMF serving snssai and dnn and its NF
// instance ID ("" over shared memory, where the node has one SMF).
func (s smfSelector) pick(ctx context.Context, snssai identity.SNSSAI, dnn string) (*ops.Client, string, error) {
	n := s.n
	if n.shm != nil {
		// Departure: over shared memory the node has one SMF.
		return n.peer(sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION), "", nil
	}
	root, id, err := nrfclient.Pick(ctx, n.disc, sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION,
		sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF, SNSSAIs: []identity.SNSSAI{snssai}, DNN: dnn})
	if err != nil {
		return nil, "", err
	}
	return ops.NewClient(nrfclient.Pin(n.disc, id, n.dial(root)), ""), id, nil
}

// The AMF's record of a PDU session names the SMF the NRF picked for it,
// and a restored AMF finds that SMF again by its NF instance ID (issue 36:
// a restored session goes back to the SMF that holds its context).
var (
	_ amf.NamedSMF    = (*selectedSMF)(nil)
	_ amf.SMFResolver = smfSelector{}
)

// selectedSMF is the SMF of one PDU session. Its creation goes to another
// SMF when the one selected cannot be reached (an instance the NRF still
// lists after it died): nothing exists at the SMF yet. Afterwards every
// call goes to the SMF that holds the context, which the AMF's record of
// the session names (amf.NamedSMF).
type selectedSMF struct {
	sel    smfSelector
	snssai identity.SNSSAI
	dnn    string
	// id is the SMF's NF instance ID ("" over shared memory), read by
	// the AMF's record of the session on the UE's executor while a
	// creation may go on elsewhere.
	id atomic.Pointer[string]
	*ops.Client
}

// NFInstanceID implements amf.NamedSMF.
func (s *selectedSMF) NFInstanceID() string {
	if id := s.id.Load(); id != nil {
		return *id
	}
	return ""
}

func (s *selectedSMF) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	out, err := s.Client.CreateSMContext(ctx, req)
	if err == nil || nrfclient.Answered(err) || ctx.Err() != nil {
		return out, err
	}
	c, id, perr := s.sel.pick(ctx, s.snssai, s.dnn) // the unreachable one is gone from the cache
	if perr != nil {
		return out, err
	}
	s.Client = c
	s.id.Store(&id)
	return s.Client.CreateSMContext(ctx, req)
}

// consumes lists the NF types each NF calls: it subscribes to their
// status at the NRF, so that its discovery cache forgets an instance that
// leaves (TS 29.510 §5.2.2.5).
var consumes = map[string][]sbi.NFType{
	"udr":  {sbi.NFTypeUDM},
	"udm":  {sbi.NFTypeUDR, sbi.NFTypeAMF, sbi.NFTypeSMF},
	"ausf": {sbi.NFTypeUDM},
	"pcf":  {sbi.NFTypeSMF},
	"smf":  {sbi.NFTypeAMF, sbi.NFTypeUDM, sbi.NFTypePCF},
	"amf":  {sbi.NFTypeAUSF, sbi.NFTypeUDM, sbi.NFTypeNSSF, sbi.NFTypeSMF},
}

// subscribe keeps, until ctx ends, a subscription at the NRF to the status
// of every NF type n consumes. A subscription is renewed before its
// validityTime and at least every subscriptionRenewal, so that an NRF that
// restarted (and forgot it) notifies again; the replaced one is removed.
// On the way out the last ones are removed too.
func (n *NF) subscribe(ctx context.Context, nrfClient sbi.NFManagement) {
	types := consumes[n.Name]
	if len(types) == 0 {
		return
	}
	ids := make([]string, len(types))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, id := range ids {
			if id != "" {
				nrfClient.Unsubscribe(cctx, id)
			}
		}
	}()
	for {
		next := subscriptionRenewal
		for i, t := range types {
			sd := &models.Nrf_NFMgmt_SubscriptionData{
				NfStatusNotificationUri: n.APIRoot + sbi.CallbackNFStatus + "/" + strings.ToLower(string(t)),
				ReqNfInstanceId:         n.instanceID,
				SubscrCond:              &models.Nrf_NFMgmt_SubscrCond{NfType: string(t)},
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := nrfClient.Subscribe(cctx, sd)
			if err == nil && ids[i] != "" && ids[i] != got.SubscriptionId {
				nrfClient.Unsubscribe(cctx, ids[i])
			}
			cancel()
			if err != nil {
				n.log.Debug("NF status subscription not taken (yet)", "type", t, "err", err)
				next = min(next, time.Second) // the NRF is not there yet
				continue
			}
			ids[i] = got.SubscriptionId
			if got.ValidityTime != nil {
				next = min(next, time.Until(*got.ValidityTime)/2)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(next, 100*time.Millisecond)):
		}
	}
}

// subscriptionRenewal bounds how long an NF trusts its NRF subscriptions.
const subscriptionRenewal = 5 * time.Minute

// profile is the NF's profile (TS 29.510 §6.1.6.2.2): its services at its
// apiRoot, and for an SMF the slices and DNNs it serves (smfInfo), which
// the AMF's discovery filters on.
func (n *NF) profile() (*models.Nrf_NFMgmt_NFProfile, error) {
	po := profileOf[n.Name]
	p, err := nrfclient.ProfileFor(po.t, n.instanceID, n.APIRoot, po.services...)
	if err != nil {
		return nil, err
	}
	if n.Name == "smf" {
		info := &models.Nrf_NFMgmt_SmfInfo{}
		for _, d := range n.cfg.SMF.DNNs {
			s, err := identity.ParseSNSSAI(d.SNSSAI)
			if err != nil {
				return nil, fmt.Errorf("core: smf.dnns %s: %w", d.Name, err)
			}
			m := sbi.SNSSAIToModel(s)
			i := slices.IndexFunc(info.SNssaiSmfInfoList, func(it models.Nrf_NFMgmt_SnssaiSmfInfoItem) bool {
				return it.SNssai.Sst == m.Sst && it.SNssai.Sd == m.Sd
			})
			if i < 0 {
				info.SNssaiSmfInfoList = append(info.SNssaiSmfInfoList, models.Nrf_NFMgmt_SnssaiSmfInfoItem{SNssai: &models.ExtSnssai{Sst: m.Sst, Sd: m.Sd}})
				i = len(info.SNssaiSmfInfoList) - 1
			}
			it := &info.SNssaiSmfInfoList[i]
			it.DnnSmfInfoList = append(it.DnnSmfInfoList, models.Nrf_NFMgmt_DnnSmfInfoItem{Dnn: d.Name})
		}
		p.SmfInfo = info
	}
	return p, nil
}

// Start registers with the NRF (in the background: the NF serves before
// the NRF answers), and starts N2 (AMF), N4 (SMF), the registry's expiry
// (NRF) or, having provisioned the demo subscribers, the change feed (UDR).
func (n *NF) Start(ctx context.Context) error {
	switch n.Name {
	case "nrf":
		n.nrf.Start()
	case "smf":
		if err := n.smf.Start(ctx); err != nil {
			return err
		}
	case "amf":
		if err := n.amf.Start(ctx); err != nil {
			return err
		}
	case "udr":
		if err := provisionDemo(n.store, n.cfg.Store.DemoSubscribers, n.sqns, n.log); err != nil {
			return err
		}
		n.follow()
	}
	if n.agent != nil {
		n.agent.Start()
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.stopSubscribe = func() { cancel(); <-done }
	go func() { defer close(done); n.subscribe(sctx, n.nrfClient) }()
	n.log.Info("serving", "sbi", n.APIRoot, "nrf", n.cfg.SBI.NRFRoot())
	return nil
}

// follow has the UDR read the store's change feed and notify the UDM of
// changes other processes made.
func (n *NF) follow() {
	udm := n.peer(sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_UECM)
	n.stopFollow = followChanges(n.udr, n.store, n.cfg.Store.FollowInterval, udm, n.log)
}

// N2Addr is the AMF's N2 address ("" for other NFs).
func (n *NF) N2Addr() string {
	if n.amf == nil {
		return ""
	}
	return n.amf.Addr()
}

// Registered reports whether the NRF holds the NF's profile (always true
// for the NRF itself).
func (n *NF) Registered() bool { return n.agent == nil || n.agent.Registered() }

// Close deregisters from the NRF, then stops the NF and its server. A
// deregistration that fails (the NRF is gone) is logged at Warn, not
// returned: the NRF drops an instance whose heartbeats stop (TS 29.510
// §5.2.2.3.2), so the stop itself went well. The agent bounds it by its
// StopTimeout.
func (n *NF) Close() error {
	var errs []error
	if n.stopSubscribe != nil {
		n.stopSubscribe()
	}
	if n.agent != nil {
		if err := n.agent.Stop(); err != nil {
			n.log.Warn("NRF deregistration failed; the NRF drops this instance when its heartbeats stop", "err", err)
		}
	}
	if n.stopFollow != nil {
		n.stopFollow()
	}
	if n.amf != nil {
		errs = append(errs, n.amf.Close())
	}
	if n.smf != nil {
		errs = append(errs, n.smf.Close())
	}
	if n.n4 != nil {
		errs = append(errs, n.n4.Close())
	}
	if n.nrf != nil {
		n.nrf.Stop()
	}
	n.shmMu.Lock()
	for _, k := range n.shmPeers {
		errs = append(errs, k.Close())
	}
	n.shmMu.Unlock()
	if n.shmServer != nil {
		errs = append(errs, n.shmServer.Close())
	}
	if n.http != nil {
		errs = append(errs, n.http.close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	return errors.Join(errs...)
}
