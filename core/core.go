// Package core assembles the "5G core unit" of the L25GC design: every NF in
// one process, bound to each other through the in-process SBI binding (a Go
// call on the sbi interfaces, no serialization), with the AMF serving N2.
package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
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
	"github.com/tern5g/tern/pcap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/store"
	"github.com/tern5g/tern/upf"
)

// Core is a running core unit.
type Core struct {
	cfg     config.Config
	log     *slog.Logger
	store   *store.Store
	created *store.Creation // the store, when New created it
	sqns    *sqnReservations
	capture *pcap.Writer

	NRF  *nrf.NRF
	UDR  *udr.UDR
	UDM  *udm.UDM
	AUSF *ausf.AUSF
	NSSF *nssf.NSSF
	AMF  *amf.AMF
	PCF  *pcf.PCF
	SMF  *smf.SMF
	UPF  *upf.UPF // nil when the unit has no embedded UPF

	n4 *pfcp.Endpoint // the SMF's PFCP endpoint, when some UPF is remote

	sbi        binding                // how the NFs reach each other
	udmChanges sbi.DataChangeNotifier // the UDM, as the UDR reaches it
	nrf        sbi.NFManagement       // the NRF as the NFs reach it

	stopFollow func() // ends followStore's goroutine

	unit *Unit     // nil outside a replicated core (WithUnit)
	rec  *recorder // takes the records to unit.Records

	closeOnce sync.Once
	closeErr  error
}

// New builds the NFs from cfg, opening (on first start creating) the
// subscriber store. Nothing listens until Start, and the demo subscribers
// are provisioned only once it succeeded. A New that fails takes back the
// store it created (Discard).
func New(cfg config.Config, logger *slog.Logger, opts ...Option) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Core{cfg: cfg, log: logger}
	ok := false
	defer func() {
		if !ok {
			c.Discard()
		}
	}()

	st, err := store.OpenDriver(cfg.Store.Driver, cfg.Store.Source())
	if err != nil {
		return nil, fmt.Errorf("core: subscriber store: %w", err)
	}
	c.store, c.created, c.sqns = st, st.Created(), &sqnReservations{Store: st}
	if b := st.LegacyBackup(); b != "" {
		logger.Info("converted the legacy subscriber log to SQLite", "store", cfg.Store.Path, "kept", b)
	}

	if cfg.Capture != "" {
		w, err := pcap.Create(cfg.Capture)
		if err != nil {
			return nil, fmt.Errorf("core: capture: %w", err)
		}
		c.capture = w
		cfg.AMF.SCTP.Tap = w
	}

	// The SBI binding: in-process, each consumer holds the producer itself
	// behind the sbi interface it consumes; over HTTP/2 (or shared memory)
	// it holds a client of the producer's server.
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.unit != nil {
		if (o.unit.Records == nil) != o.unit.Unrecorded {
			return nil, errors.New("core: a unit has a record store unless it is unrecorded")
		}
		if cfg.UPF.Embedded {
			return nil, errors.New("core: a unit of a replicated core has no embedded UPF (the UPF outlives the unit)")
		}
		c.unit = o.unit
		if !o.unit.Unrecorded {
			c.rec = &recorder{store: o.unit.Records, onFail: o.unit.OnRecordFailure}
		}
	}
	if c.sbi, err = newBinding(cfg.SBI, logger, o); err != nil {
		return nil, err
	}
	b := c.sbi
	if c.NRF, err = nrf.New(cfg.NRF, logger); err != nil {
		return nil, err
	}
	if c.nrf, err = serveAs[sbi.NFManagement](b, "nrf", c.NRF); err != nil {
		return nil, err
	}
	if c.UDR, err = udr.New(cfg.UDR, c.sqns, logger); err != nil {
		return nil, err
	}
	udrC, err := serveAs[sbi.DataRepository](b, "udr", c.UDR)
	if err != nil {
		return nil, err
	}
	if c.UDM, err = udm.New(cfg.UDM, udrC, logger); err != nil {
		return nil, err
	}
	udmC, err := serveAs[udmService](b, "udm", c.UDM)
	if err != nil {
		return nil, err
	}
	c.udmChanges = udmC
	if c.AUSF, err = ausf.New(cfg.AUSF, udmC, logger); err != nil {
		return nil, err
	}
	ausfC, err := serveAs[sbi.UEAuthentication](b, "ausf", c.AUSF)
	if err != nil {
		return nil, err
	}
	if c.NSSF, err = nssf.New(cfg.NSSF, logger); err != nil {
		return nil, err
	}
	nssfC, err := serveAs[sbi.NetworkSliceSelection](b, "nssf", c.NSSF)
	if err != nil {
		return nil, err
	}
	amfCfg := cfg.AMF
	if amfCfg.APIRoot, err = b.root("amf"); err != nil {
		return nil, err
	}
	if amfCfg.InstanceID == "" {
		amfCfg.InstanceID = identity.NewNFInstanceID()
	}
	if c, ok := nssfC.(*ops.Client); ok {
		c.NFInstanceID = amfCfg.InstanceID // Nnssf_NSSelection's nf-id
	}
	c.AMF, err = amf.New(amfCfg, amf.Deps{AUSF: ausfC, SDM: udmC, UECM: udmC, NSSF: nssfC}, logger)
	if err != nil {
		return nil, err
	}
	amfC, err := serveAs[amfService](b, "amf", c.AMF)
	if err != nil {
		return nil, err
	}
	if c.PCF, err = pcf.New(cfg.PCF, logger); err != nil {
		return nil, err
	}
	pcfC, err := serveAs[sbi.SMPolicyControl](b, "pcf", c.PCF)
	if err != nil {
		return nil, err
	}
	// The AMF and the SMF consume each other (Nsmf_PDUSession one way,
	// Namf_Communication the other): the SMF is built with the AMF and then
	// handed to it.
	smfCfg := cfg.SMF
	if smfCfg.APIRoot, err = b.root("smf"); err != nil {
		return nil, err
	}
	smfDeps := smf.Deps{AMF: amfC, AMFStatus: amfC, SDM: udmC, PCF: pcfC}
	if c.rec != nil {
		smfDeps.Recorder = c.rec
	}
	c.SMF, err = smf.New(smfCfg, smfDeps, logger)
	if err != nil {
		return nil, err
	}
	smfC, err := serveAs[smfService](b, "smf", c.SMF)
	if err != nil {
		return nil, err
	}
	c.AMF.SetSMF(smfC)
	c.UDM.SetAMF(amfC)
	c.UDM.SetSMF(smfC)
	c.PCF.SetNotifier(smfC)
	if c.rec != nil {
		c.AMF.SetRecordSink(c.rec)
		c.AUSF.SetRecorder(c.rec)
		c.PCF.SetRecorder(c.rec)
		c.UDM.SetRecorder(udmRecorder{c.rec})
	}
	// A standby binds N4 when it takes over, with the Recovery Time Stamp
	// of the unit it replaces (Takeover).
	if o.unit == nil || !o.unit.Standby {
		if err := c.wireN4(); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

// wireN4 builds the embedded UPF, if any, and gives the SMF its N4.
func (c *Core) wireN4() error {
	if c.cfg.UPF.Embedded {
		var err error
		if c.UPF, err = NewUPF(c.cfg.UPF.Config, c.log); err != nil {
			return err
		}
	}
	ep, err := wireN4(c.cfg, c.SMF, c.UPF, c.pfcpTap(), c.log)
	c.n4 = ep
	return err
}

// wireN4 gives the SMF a PFCP client per UPF: the direct binding for the
// embedded UPF when its N4 is "direct", PFCP over UDP (TS 29.244) for the
// others, through one SMF endpoint (returned; nil when every UPF is
// direct).
func wireN4(cfg config.Config, s *smf.SMF, embedded *upf.UPF, tap pfcp.PacketTap, log *slog.Logger) (*pfcp.Endpoint, error) {
	var ep *pfcp.Endpoint
	for _, u := range cfg.SMF.UPFs {
		if u.N4 == "direct" {
			if embedded == nil || u.Name != cfg.UPF.Name {
				return ep, fmt.Errorf("core: smf.upfs %q: n4 direct needs the embedded UPF (upf.embedded, upf.name)", u.Name)
			}
			if err := s.SetUserPlane(u.Name, pfcp.Direct(embedded.Handler(), s)); err != nil {
				return ep, err
			}
			continue
		}
		peer, err := netip.ParseAddrPort(u.N4)
		if err != nil {
			return ep, fmt.Errorf("core: smf.upfs %q: n4 %q: want \"direct\" or IPv4:port", u.Name, u.N4)
		}
		if ep == nil {
			smfCfg := cfg.SMF.WithDefaults()
			addr := net.JoinHostPort(smfCfg.N4Address, strconv.Itoa(pfcp.Port))
			ep, err = pfcp.Listen(pfcp.EndpointConfig{Addr: addr, NodeID: nodeID(smfCfg.NodeID), CP: s,
				RecoveryTime: s.RecoveryTime(), Tap: tap, Logger: log.With("nf", "smf", "if", "n4")})
			if err != nil {
				return nil, fmt.Errorf("core: smf n4 endpoint: %w", err)
			}
		}
		if err := s.SetUserPlane(u.Name, ep.UserPlane(peer)); err != nil {
			return ep, err
		}
	}
	return ep, nil
}

// NewUPF builds a UPF from cfg, embedded in the unit or on its own (tern nf
// upf). Without root it runs without N6 devices rather than fail.
func NewUPF(cfg upf.Config, log *slog.Logger) (*upf.UPF, error) {
	if !cfg.NoN6 && os.Geteuid() != 0 {
		log.Warn("not root: the UPF runs without N6 TUN devices; sessions establish but DN traffic is dropped (run as root for the user plane)")
		cfg.NoN6 = true
	}
	u, err := upf.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	return u, nil
}

func nodeID(s string) pfcp.NodeID {
	if a, err := netip.ParseAddr(s); err == nil {
		return pfcp.NodeID{IP: a}
	}
	return pfcp.NodeID{FQDN: s}
}

// pfcpTap is the capture for N4 datagrams (nil without a capture file).
func (c *Core) pfcpTap() pfcp.PacketTap {
	if c.capture == nil {
		return nil
	}
	return c.capture
}

// Start registers the NFs with the NRF, starts the UPF, N4 and N2, and then
// provisions the demo subscribers (store.demoSubscribers) the store lacks.
// The NRF's expiry sweeper (nrf.NRF.Start) is not started: the unit's NFs
// live and die with the process and send no heartbeats, so their
// registrations must not lapse.
//
// A unit (WithUnit) does not listen on N2: its gNB associations come
// through the N2 front end (ServeN2, ResumeN2). A standby unit does not
// start: Takeover starts it.
func (c *Core) Start(ctx context.Context) error {
	if c.unit != nil && c.unit.Standby {
		return errors.New("core: a standby unit starts by taking over (Takeover)")
	}
	if c.rec != nil {
		c.putUnit()
	}
	return c.start(ctx)
}

func (c *Core) start(ctx context.Context) error {
	profiles, err := c.profiles()
	if err != nil {
		return fmt.Errorf("core: nf profiles: %w", err)
	}
	for _, p := range profiles {
		if _, _, err := c.nrf.Register(ctx, p); err != nil {
			return fmt.Errorf("core: nrf register %s: %w", p.NfType, err)
		}
	}
	if c.UPF != nil {
		if err := c.UPF.Start(ctx); err != nil {
			return fmt.Errorf("core: %w", err)
		}
	}
	if err := c.SMF.Start(ctx); err != nil {
		return err
	}
	if c.unit == nil {
		if err := c.AMF.Start(ctx); err != nil {
			return err
		}
	}
	// Last, so that a start that fails leaves the store as it found it
	// (Discard can then take back one it created), and before the change
	// feed is followed, which need not tell the UDM of them.
	if err := provisionDemo(c.store, c.cfg.Store.DemoSubscribers, c.sqns, c.log); err != nil {
		return err
	}
	c.followStore()
	return nil
}

// provisionDemo adds the n demo subscribers that st lacks, with the SQN
// reservation the UDR made for the subscribers there when it was built.
func provisionDemo(st *store.Store, n int, sqns *sqnReservations, log *slog.Logger) error {
	if n <= 0 {
		return nil
	}
	added, err := st.PutAll(store.DefaultSubscribers(n), false)
	if err != nil {
		return fmt.Errorf("core: provisioning demo subscribers: %w", err)
	}
	if added == 0 {
		return nil
	}
	log.Info("provisioned demo subscribers", "added", added, "driver", st.Driver())
	if err := st.ReserveSQNs(sqns.headroom); err != nil {
		return fmt.Errorf("core: reserving SQNs of the demo subscribers: %w", err)
	}
	return nil
}

// sqnReservations is the store as the UDR sees it: it remembers the SQN
// headroom the UDR reserves when it is built (udr.New), so that subscribers
// provisioned after that get the same reservation, and the first
// authentication of each costs no fsync.
type sqnReservations struct {
	*store.Store
	headroom uint64
}

func (r *sqnReservations) ReserveSQNs(headroom uint64) error {
	r.headroom = headroom
	return r.Store.ReserveSQNs(headroom)
}

// followStore has the UDR follow the store's change feed and hand each
// change to the UDM, which notifies the AMF (see udm.SubscriberChanged),
// until Close.
func (c *Core) followStore() {
	c.stopFollow = followChanges(c.UDR, c.store, c.cfg.Store.FollowInterval, c.udmChanges, c.log)
}

// followChanges has udr follow st's change feed every interval (default
// 1s) and notify the UDM of each subscriber another process changed
// (sbi.DataChangeNotifier), until the returned stop is called.
func followChanges(udr *udr.UDR, st *store.Store, every time.Duration, udm sbi.DataChangeNotifier, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if every <= 0 {
		every = time.Second
	}
	go func() {
		defer close(done)
		err := udr.Follow(ctx, st, every, func(supi string, deleted bool) {
			note := sbi.SubscriberWritten(supi)
			if deleted {
				note = sbi.SubscriberDeleted(supi)
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := udm.DataChanged(cctx, note); err != nil {
				log.Warn("data change notification to the UDM failed", "supi", supi, "err", err)
			}
		})
		if err != nil {
			log.Warn("not following subscriber changes: changes made by other processes apply at the UEs' next registration", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// profiles are the NF profiles the unit registers with its NRF (TS 29.510
// §6.1.6.2.2), so that discovery answers as it would across nodes. Over
// the in-process and shared-memory bindings the NFs have no SBI address:
// their profiles carry the loopback one (TS 29.510 requires an address).
func (c *Core) profiles() ([]*models.Nrf_NFMgmt_NFProfile, error) {
	var out []*models.Nrf_NFMgmt_NFProfile
	for _, nf := range config.NFNames {
		po, ok := profileOf[nf]
		if !ok {
			continue // the NRF itself
		}
		root, err := c.sbi.root(nf)
		if err != nil {
			return nil, err
		}
		if root == "" {
			root = "http://127.0.0.1"
		}
		id := identity.NewNFInstanceID()
		switch nf {
		case "amf":
			id = c.AMF.InstanceID()
		case "ausf":
			id = c.AUSF.InstanceID()
		}
		p, err := nrfclient.ProfileFor(po.t, id, root, po.services...)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Capture is the pcap writer of cfg.Capture (nil without one); the
// simulator adds its N3 side to it.
func (c *Core) Capture() *pcap.Writer { return c.capture }

// Store is the subscriber store behind the UDR.
func (c *Core) Store() *store.Store { return c.store }

// N2Addr is the address gNBs connect to.
func (c *Core) N2Addr() string { return c.AMF.Addr() }

// Stats is a snapshot of the unit for reports.
type Stats struct {
	AMF          amf.Stats
	SMF          smf.Stats
	UPF          upf.Stats // zero without an embedded UPF
	Subscribers  int
	ResidentSize uint64 // bytes (VmRSS), 0 where unknown
}

// Stats reads the NF counters and the process's resident memory.
func (c *Core) Stats() Stats {
	subs, err := c.store.Len()
	if err != nil {
		c.log.Warn("counting subscribers", "err", err)
	}
	st := Stats{AMF: c.AMF.Stats(), SMF: c.SMF.Stats(), Subscribers: subs, ResidentSize: report.ResidentBytes(0)}
	if c.UPF != nil {
		st.UPF = c.UPF.Stats()
	}
	return st
}

// N4Stats are the counters of the SMF's PFCP endpoint, and false when it
// has none (every UPF is reached by the direct binding).
func (c *Core) N4Stats() (pfcp.EndpointStats, bool) {
	if c.n4 == nil {
		return pfcp.EndpointStats{}, false
	}
	return c.n4.Stats(), true
}

// Discard closes the unit of a start that failed, and removes the SQLite
// store if New created it and nothing was put in it since (no demo
// subscriber, which Start provisions last, nor any another process added)
// and no other process has it open (store.Creation.RemoveUnused): a failed
// start leaves no store behind, and never takes one that is in use.
func (c *Core) Discard() error {
	err := c.Close()
	if c.created == nil {
		return err
	}
	removed, rerr := c.created.RemoveUnused()
	switch {
	case rerr != nil:
		c.log.Warn("keeping the store this failed start created", "store", c.created.Path(), "err", rerr)
	case removed:
		c.log.Info("removed the store this failed start created", "store", c.created.Path())
	default:
		c.log.Info("keeping the store this failed start created: another process has it open, or put subscribers in it", "store", c.created.Path())
	}
	return err
}

// Close stops N2, then the NFs, N4 and the UPF, then the store and the
// capture.
func (c *Core) Close() error {
	c.closeOnce.Do(func() {
		if c.stopFollow != nil {
			c.stopFollow()
		}
		var errs []error
		if c.AMF != nil {
			errs = append(errs, c.AMF.Close())
		}
		if c.SMF != nil {
			errs = append(errs, c.SMF.Close())
		}
		if c.n4 != nil {
			errs = append(errs, c.n4.Close())
		}
		if c.UPF != nil {
			errs = append(errs, c.UPF.Close())
		}
		if c.sbi != nil {
			errs = append(errs, c.sbi.close())
		}
		if c.NRF != nil {
			c.NRF.Stop() // ends its notification workers
		}
		if c.store != nil {
			errs = append(errs, c.store.Close())
		}
		if c.capture != nil {
			errs = append(errs, c.capture.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// The services an NF serves, as its consumers see them.
type (
	udmService interface {
		sbi.DataChangeNotifier
		sbi.UDMUEAuthentication
		sbi.SubscriberDataManagement
		sbi.UEContextManagement
	}
	amfService interface {
		sbi.Communication
		sbi.SMContextStatusNotifier
		udm.AMFNotifier
	}
	smfService interface {
		sbi.PDUSession
		sbi.SDMNotifier
		sbi.SMPolicyNotifier
	}
)

// serveAs serves producer as nf on b and returns the consumers' view of it.
func serveAs[T any](b binding, nf string, producer any) (T, error) {
	var zero T
	c, err := b.serve(nf, producer)
	if err != nil {
		return zero, err
	}
	t, ok := c.(T)
	if !ok {
		return zero, fmt.Errorf("core: %s: %T does not serve %T", nf, c, (*T)(nil))
	}
	return t, nil
}
