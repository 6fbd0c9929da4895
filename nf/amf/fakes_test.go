package amf

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

// ---- in-memory SCTP association ----

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// memConn is one end of an in-memory association: ordered, reliable,
// unbounded enough for tests.
type memConn struct {
	in      chan sctp.Message
	peer    *memConn
	closed  chan struct{}
	once    sync.Once
	streams uint16
	name    string
}

func memPipe(streams uint16) (a, b *memConn) {
	a = &memConn{in: make(chan sctp.Message, 1024), closed: make(chan struct{}), streams: streams, name: "gnb"}
	b = &memConn{in: make(chan sctp.Message, 1024), closed: make(chan struct{}), streams: streams, name: "amf"}
	a.peer, b.peer = b, a
	return a, b
}

func (c *memConn) Send(stream uint16, ppid uint32, data []byte) error {
	if stream >= c.streams {
		return sctp.ErrInvalidStream
	}
	select {
	case <-c.closed:
		return net.ErrClosed
	case <-c.peer.closed:
		return io.EOF
	default:
	}
	c.peer.in <- sctp.Message{Stream: stream, PPID: ppid, Data: bytes.Clone(data)}
	return nil
}

func (c *memConn) Recv() (sctp.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.closed:
		return sctp.Message{}, net.ErrClosed
	case <-c.peer.closed:
		select {
		case m := <-c.in:
			return m, nil
		default:
			return sctp.Message{}, io.EOF
		}
	}
}

func (c *memConn) LocalAddr() net.Addr     { return memAddr(c.name) }
func (c *memConn) RemoteAddr() net.Addr    { return memAddr(c.peer.name) }
func (c *memConn) OutboundStreams() uint16 { return c.streams }
func (c *memConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// ---- fake home network: AUSF + UDM + NSSF behaviour in one ----

type subscriber struct {
	k, opc []byte
	sqn    uint64
}

type authCtx struct {
	supi, snn string
	xresStar  []byte
	kseaf     []byte
}

// fakeHN implements the four sbi interfaces the AMF consumes with real
// 5G-AKA (Milenage, TS 33.501 Annex A) over an in-memory subscriber list.
type fakeHN struct {
	mu       sync.Mutex
	subs     map[string]*subscriber // by SUPI
	ctxs     map[string]*authCtx
	nextID   int
	slices   []identity.SNSSAI
	dnns     []string // subscribed DNNs on every slice (sm-data)
	dflDNN   string   // the one of dnns marked default (smf-select-data)
	uecmRegs map[string]*models.Udm_UECM_Amf3GppAccessRegistration

	authCalls, resyncCalls, deregCalls atomic.Int32
}

func newFakeHN() *fakeHN {
	return &fakeHN{
		subs:     make(map[string]*subscriber),
		ctxs:     make(map[string]*authCtx),
		slices:   []identity.SNSSAI{{SST: 1, SD: 0x010203}},
		dnns:     []string{"internet"},
		uecmRegs: make(map[string]*models.Udm_UECM_Amf3GppAccessRegistration),
	}
}

func (h *fakeHN) add(supi string, k, opc []byte, sqn uint64) {
	h.mu.Lock()
	h.subs[supi] = &subscriber{k: k, opc: opc, sqn: sqn}
	h.mu.Unlock()
}

func (h *fakeHN) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	h.authCalls.Add(1)
	supi := req.SupiOrSuci
	if s, err := suci.Parse(req.SupiOrSuci); err == nil {
		supi = identity.IMSI(s.PLMN, s.MSIN)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sub := h.subs[supi]
	if sub == nil {
		return "", nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "no subscriber %s", supi)
	}
	if r := req.ResynchronizationInfo; r != nil {
		h.resyncCalls.Add(1)
		rnd, _ := hex.DecodeString(r.Rand)
		auts, _ := hex.DecodeString(r.Auts)
		sqnMS, err := milenage.VerifyAUTS(sub.k, sub.opc, rnd, auts)
		if err != nil {
			return "", nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseAuthenticationRejected, "auts: %v", err)
		}
		sub.sqn = sqnMS
	}
	sub.sqn++
	sqn, _ := milenage.SQNBytes(sub.sqn)
	rnd := make([]byte, 16)
	rand.Read(rnd)
	v, err := milenage.Generate(sub.k, sub.opc, rnd, sqn, []byte{0x80, 0x00})
	if err != nil {
		return "", nil, err
	}
	snn := req.ServingNetworkName
	xresStar := kdf.RESStar(v.CK, v.IK, snn, rnd, v.XRES)
	kausf := kdf.KAUSF(v.CK, v.IK, snn, v.SQNXorAK())
	h.nextID++
	id := hex.EncodeToString([]byte{byte(h.nextID >> 8), byte(h.nextID)})
	h.ctxs[id] = &authCtx{supi: supi, snn: snn, xresStar: xresStar, kseaf: kdf.KSEAF(kausf, snn)}
	return id, &models.Ausf_UEAU_UEAuthenticationCtx{
		AuthType: models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{
			Rand:      hex.EncodeToString(rnd),
			Autn:      hex.EncodeToString(v.AUTN),
			HxresStar: hex.EncodeToString(kdf.HXRESStar(rnd, xresStar)),
		},
		ServingNetworkName: snn,
	}, nil
}

func (h *fakeHN) Confirm5gAka(ctx context.Context, id string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	h.mu.Lock()
	c := h.ctxs[id]
	delete(h.ctxs, id)
	h.mu.Unlock()
	if c == nil {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "auth ctx %s", id)
	}
	if req.ResStar == nil {
		return nil, sbi.ErrMandatoryIEMissing
	}
	got, _ := hex.DecodeString(*req.ResStar)
	if !bytes.Equal(got, c.xresStar) {
		return &models.Ausf_UEAU_ConfirmationDataResponse{AuthResult: models.Ausf_UEAU_AuthResult_FAILURE}, nil
	}
	return &models.Ausf_UEAU_ConfirmationDataResponse{
		AuthResult: models.Ausf_UEAU_AuthResult_SUCCESS, Supi: c.supi, Kseaf: hex.EncodeToString(c.kseaf),
	}, nil
}

func (h *fakeHN) GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[supi] == nil {
		return nil, sbi.ErrUserNotFound
	}
	n := &models.Udm_SDM_Nssai{}
	for _, s := range h.slices {
		n.DefaultSingleNssais = append(n.DefaultSingleNssais, sbi.SNSSAIToModel(s))
	}
	return &models.Udm_SDM_AccessAndMobilitySubscriptionData{
		Nssai:            n,
		SubscribedUeAmbr: &models.AmbrRm{Uplink: "1 Gbps", Downlink: "2 Gbps"},
	}, nil
}

func (h *fakeHN) GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	am, err := h.GetAmData(ctx, supi, plmn)
	if err != nil {
		return nil, err
	}
	return am.Nssai, nil
}

// GetSmfSelectData lists h.dnns on every subscribed slice, h.dflDNN marked
// as the default.
func (h *fakeHN) GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[supi] == nil {
		return nil, sbi.ErrUserNotFound
	}
	out := &models.Udm_SDM_SmfSelectionSubscriptionData{SubscribedSnssaiInfos: map[string]models.Udm_SDM_SnssaiInfo{}}
	for _, s := range h.slices {
		var info models.Udm_SDM_SnssaiInfo
		for _, d := range h.dnns {
			info.DnnInfos = append(info.DnnInfos, models.Udm_SDM_DnnInfo{Dnn: d, DefaultDnnIndicator: d == h.dflDNN})
		}
		out.SubscribedSnssaiInfos[s.String()] = info
	}
	return out, nil
}

// GetSmData returns the DNNs of h.dnns on every subscribed slice.
func (h *fakeHN) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[supi] == nil {
		return nil, sbi.ErrUserNotFound
	}
	var out []models.Udm_SDM_SessionManagementSubscriptionData
	for _, s := range h.slices {
		if q.SNSSAI != nil && *q.SNSSAI != s {
			continue
		}
		confs := make(map[string]models.Udm_SDM_DnnConfiguration)
		for _, d := range h.dnns {
			confs[d] = models.Udm_SDM_DnnConfiguration{}
		}
		if len(confs) == 0 {
			continue
		}
		m := sbi.SNSSAIToModel(s)
		out = append(out, models.Udm_SDM_SessionManagementSubscriptionData{SingleNssai: &m, DnnConfigurations: confs})
	}
	if len(out) == 0 {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "no sm-data for %s", supi)
	}
	return out, nil
}

func (h *fakeHN) RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[supi] == nil {
		return false, sbi.ErrUserNotFound
	}
	_, had := h.uecmRegs[supi]
	h.uecmRegs[supi] = reg
	return !had, nil
}

func (h *fakeHN) UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error {
	h.deregCalls.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.uecmRegs[supi] == nil {
		return sbi.ErrContextNotFound
	}
	if mod != nil && mod.PurgeFlag { // TS 29.503: only a purge deregisters
		delete(h.uecmRegs, supi)
	}
	return nil
}

func (h *fakeHN) GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.uecmRegs[supi]; r != nil {
		return r, nil
	}
	return nil, sbi.ErrContextNotFound
}

func (h *fakeHN) SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []sbi.SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error) {
	var allowed []models.Nssf_NSSel_AllowedSnssai
	for _, s := range subscribed {
		if len(requested) == 0 && s.Default || containsSNSSAI(requested, s.SNSSAI) {
			m := sbi.SNSSAIToModel(s.SNSSAI)
			allowed = append(allowed, models.Nssf_NSSel_AllowedSnssai{AllowedSnssai: &m})
		}
	}
	if len(allowed) == 0 {
		return nil, sbi.ErrSNSSAINotSupported
	}
	return &models.Nssf_NSSel_AuthorizedNetworkSliceInfo{
		AllowedNssaiList: []models.Nssf_NSSel_AllowedNssai{{AllowedSnssaiList: allowed, AccessType: models.AccessType_3_GPP_ACCESS}},
	}, nil
}

func (h *fakeHN) deps() Deps { return Deps{AUSF: h, SDM: h, UECM: h, NSSF: h} }
