package smf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

var (
	sliceA = identity.SNSSAI{SST: 1, SD: 0x010203}
	sliceB = identity.SNSSAI{SST: 2, SD: identity.NoSD}
	upfN3  = netip.MustParseAddr("10.100.3.2")
	gnbN3  = netip.MustParseAddr("10.100.3.1")
)

const testSUPI = "imsi-208930000000001"

// ---- fake UPF (pfcp.UserPlane) ----

type fakeUPF struct {
	mu          sync.Mutex
	nextSEID    uint64
	nextTEID    uint32
	sessions    map[uint64]*pfcp.SessionEstablishmentRequest
	establishes []*pfcp.SessionEstablishmentRequest
	mods        []*pfcp.SessionModificationRequest
	deletes     []uint64
	reject      bool // answer establishments with No resources available
	down        bool // fail every request (UPF unreachable)
	recovery    time.Time
	assocs      int
	nodeID      pfcp.NodeID // given at association; zero: upfN3
	unassoc     bool        // restarted and not associated again: session requests get cause 72
	lostBeats   int         // heartbeats still to go unanswered
	beats       int         // heartbeats answered
	features    uint64      // UP Function Features given at association
	onlyChoose  bool        // refuse an F-TEID the CP sets, even with RESTI
	// brokenAssoc: answer every establishment "No established PFCP
	// Association", also after an association (a broken UPF).
	brokenAssoc bool
	// reuseSEIDs: a restart counts SEIDs from the start again.
	reuseSEIDs bool
	// restiNewTEID: answer a RESTI establishment with a Created PDR
	// announcing another F-TEID all the same.
	restiNewTEID bool
	// holdDeletes, holdMods: a deletion or modification waits for gate
	// to close (a request the SMF's endpoint will retransmit later) or
	// for its context to end (the SMF gave it up); holding counts those
	// waiting, held all that did. Then it is served as the UPF is then.
	holdDeletes, holdMods, holdEstablishments bool
	gate                                      chan struct{}
	holding, held                             int
	// establishCause, when set, answers every establishment; noFSEID:
	// an accepted establishment comes without UP F-SEID.
	establishCause pfcp.Cause
	noFSEID        bool
	// noCreatedPDR: an establishment that asks to CHOOSE is accepted
	// without the Created PDR that would announce the F-TEID.
	noCreatedPDR bool
	// deleteCause, when set, answers every deletion; deleting and
	// maxDeleting count deletions being served at once.
	deleteCause           pfcp.Cause
	deleting, maxDeleting int
	// dropEstablishments: establishments get no answer (the rest does).
	dropEstablishments bool
}

// hold makes a request wait while *what is set (see fakeUPF.gate).
func (f *fakeUPF) hold(ctx context.Context, what *bool) error {
	f.mu.Lock()
	if !*what {
		f.mu.Unlock()
		return nil
	}
	gate := f.gate
	f.holding++
	f.held++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.holding--
		f.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-gate:
		return nil
	}
}

// holds is how many requests wait for the gate.
func (f *fakeUPF) holds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holding
}

// loseAssociation loses the association with the SMF, and with it every
// session, without restarting (same Recovery Time Stamp).
func (f *fakeUPF) loseAssociation() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.sessions)
	f.unassoc = true
}

// establishmentsOf is how many establishments with CP SEID seid the UPF
// got since its last restart.
func (f *fakeUPF) establishmentsOf(seid uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.establishes {
		if r.CPFSEID.SEID == seid {
			n++
		}
	}
	return n
}

func newFakeUPF() *fakeUPF {
	return &fakeUPF{sessions: make(map[uint64]*pfcp.SessionEstablishmentRequest), nextSEID: 0x1000, nextTEID: 0x100,
		recovery: time.Now().Truncate(time.Second), features: upFeatureFTUP}
}

// restart loses every session and advertises a new Recovery Time Stamp.
func (f *fakeUPF) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.sessions)
	f.unassoc = true
	f.recovery = f.recovery.Add(time.Second)
	f.establishes = nil
	if f.reuseSEIDs {
		f.nextSEID = 0x1000
	}
}

func (f *fakeUPF) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

var errUPFDown = errors.New("fake upf: no response")

func (f *fakeUPF) SetupAssociation(ctx context.Context, req *pfcp.AssociationSetupRequest) (*pfcp.AssociationSetupResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errUPFDown
	}
	if f.assocs > 0 && !f.unassoc {
		// TS 29.244 §6.2.6.2.2, as tern's UPF-C does: a setup from an
		// associated Node ID replaces the association and deletes its
		// sessions (no PFCP Session Retention Information).
		clear(f.sessions)
	}
	f.assocs++
	f.unassoc = false
	id := f.nodeID
	if id == (pfcp.NodeID{}) {
		id = pfcp.NodeID{IP: upfN3}
	}
	return &pfcp.AssociationSetupResponse{NodeID: id, Cause: pfcp.CauseRequestAccepted, RecoveryTime: f.recovery,
		UPFunctionFeatures: f.features}, nil
}

func (f *fakeUPF) EstablishSession(ctx context.Context, req *pfcp.SessionEstablishmentRequest) (*pfcp.SessionEstablishmentResponse, error) {
	if err := f.hold(ctx, &f.holdEstablishments); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down || f.dropEstablishments {
		return nil, errUPFDown
	}
	f.establishes = append(f.establishes, req)
	if f.unassoc || f.brokenAssoc {
		return &pfcp.SessionEstablishmentResponse{Cause: pfcp.CauseNoEstablishedPFCPAssociation}, nil
	}
	if f.reject {
		return &pfcp.SessionEstablishmentResponse{Cause: pfcp.CauseNoResourcesAvailable}, nil
	}
	if f.establishCause != 0 {
		return &pfcp.SessionEstablishmentResponse{Cause: f.establishCause}, nil
	}
	if f.noFSEID {
		return &pfcp.SessionEstablishmentResponse{Cause: pfcp.CauseRequestAccepted}, nil
	}
	if ft := req.CreatePDRs[0].PDI.FTEID; f.onlyChoose && ft != nil && !ft.Choose {
		return &pfcp.SessionEstablishmentResponse{Cause: pfcp.CauseInvalidFTEIDAllocationOption, OffendingIE: pfcp.IEFTEID}, nil
	}
	f.nextSEID++
	f.sessions[f.nextSEID] = req
	rsp := &pfcp.SessionEstablishmentResponse{
		NodeID:  pfcp.NodeID{IP: upfN3},
		Cause:   pfcp.CauseRequestAccepted,
		UPFSEID: &pfcp.FSEID{SEID: f.nextSEID, IPv4: upfN3},
	}
	if ft := req.CreatePDRs[0].PDI.FTEID; ft != nil && (ft.Choose && !f.noCreatedPDR || req.RESTI && f.restiNewTEID) {
		f.nextTEID++
		rsp.CreatedPDRs = []pfcp.CreatedPDR{{ID: pdrUplink, LocalFTEID: &pfcp.FTEID{TEID: f.nextTEID, IPv4: upfN3}}}
	}
	return rsp, nil
}

func (f *fakeUPF) ModifySession(ctx context.Context, seid uint64, req *pfcp.SessionModificationRequest) (*pfcp.SessionModificationResponse, error) {
	if err := f.hold(ctx, &f.holdMods); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errUPFDown
	}
	if _, ok := f.sessions[seid]; !ok {
		return &pfcp.SessionModificationResponse{Cause: pfcp.CauseSessionContextNotFound}, nil
	}
	f.mods = append(f.mods, req)
	rsp := &pfcp.SessionModificationResponse{Cause: pfcp.CauseRequestAccepted}
	for _, p := range req.CreatePDRs {
		if p.PDI.FTEID != nil && p.PDI.FTEID.Choose {
			f.nextTEID++
			rsp.CreatedPDRs = append(rsp.CreatedPDRs, pfcp.CreatedPDR{ID: p.ID, LocalFTEID: &pfcp.FTEID{TEID: f.nextTEID, IPv4: upfN3}})
		}
	}
	return rsp, nil
}

func (f *fakeUPF) DeleteSession(ctx context.Context, seid uint64) (*pfcp.SessionDeletionResponse, error) {
	f.mu.Lock()
	f.deleting++
	f.maxDeleting = max(f.maxDeleting, f.deleting)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.deleting--
		f.mu.Unlock()
	}()
	if err := f.hold(ctx, &f.holdDeletes); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errUPFDown
	}
	if f.deleteCause != 0 {
		return &pfcp.SessionDeletionResponse{Cause: f.deleteCause}, nil
	}
	if _, ok := f.sessions[seid]; !ok {
		return &pfcp.SessionDeletionResponse{Cause: pfcp.CauseSessionContextNotFound}, nil
	}
	delete(f.sessions, seid)
	f.deletes = append(f.deletes, seid)
	return &pfcp.SessionDeletionResponse{Cause: pfcp.CauseRequestAccepted, UsageReports: []pfcp.UsageReport{
		{URRID: urrSession, Trigger: pfcp.UsageTriggerTermination, Volume: pfcp.Volume{UL: 10, DL: 20, Total: 30, HasUL: true, HasDL: true, HasTotal: true}},
	}}, nil
}

func (f *fakeUPF) Heartbeat(ctx context.Context) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return time.Time{}, errUPFDown
	}
	if f.lostBeats > 0 {
		f.lostBeats--
		return time.Time{}, errUPFDown
	}
	f.beats++
	return f.recovery, nil
}

func (f *fakeUPF) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

func (f *fakeUPF) lastMod(t testing.TB) *pfcp.SessionModificationRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.mods) == 0 {
		t.Fatal("no PFCP session modification")
	}
	return f.mods[len(f.mods)-1]
}

// ---- fake SDM ----

type fakeSDM struct {
	mu        sync.Mutex
	withdrawn map[string]bool // "supi/dnn" no longer subscribed
}

// withdraw removes dnn from supi's sm-data.
func (f *fakeSDM) withdraw(supi, dnn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.withdrawn == nil {
		f.withdrawn = make(map[string]bool)
	}
	f.withdrawn[supi+"/"+dnn] = true
}

func subscribedDNN(fiveQI int32, ambr string) models.Udm_SDM_DnnConfiguration {
	return models.Udm_SDM_DnnConfiguration{
		PduSessionTypes: &models.Udm_SDM_PduSessionTypes{DefaultSessionType: models.PduSessionType_IPV4, AllowedSessionTypes: []models.PduSessionType{models.PduSessionType_IPV4}},
		SscModes:        &models.Udm_SDM_SscModes{DefaultSscMode: models.SscMode_1, AllowedSscModes: []models.SscMode{models.SscMode_1}},
		Var5gQosProfile: &models.SubscribedDefaultQos{Var5qi: fiveQI, Arp: &models.Arp{PriorityLevel: 8, PreemptCap: models.PreemptionCapability_NOT_PREEMPT, PreemptVuln: models.PreemptionVulnerability_PREEMPTABLE}},
		SessionAmbr:     &models.Ambr{Uplink: "1 Gbps", Downlink: "2 Gbps"},
	}
}

// GetSmData: slice A has internet, ims and tiny; "enterprise" is subscribed
// in slice B only; unknown SUPIs are USER_NOT_FOUND.
func (f *fakeSDM) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	if supi == "imsi-208930000009999" {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, supi)
	}
	a, b := sbi.SNSSAIToModel(sliceA), sbi.SNSSAIToModel(sliceB)
	sm := []models.Udm_SDM_SessionManagementSubscriptionData{
		{SingleNssai: &a, DnnConfigurations: map[string]models.Udm_SDM_DnnConfiguration{
			"internet": subscribedDNN(9, "1 Gbps"), "ims": subscribedDNN(5, "10 Mbps"), "tiny": subscribedDNN(9, "1 Gbps"),
		}},
		{SingleNssai: &b, DnnConfigurations: map[string]models.Udm_SDM_DnnConfiguration{"enterprise": subscribedDNN(9, "1 Gbps")}},
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range sm {
		for dnn := range d.DnnConfigurations {
			if f.withdrawn[supi+"/"+dnn] {
				delete(d.DnnConfigurations, dnn)
			}
		}
	}
	return sm, nil
}

func (f *fakeSDM) GetAmData(context.Context, string, identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	return nil, errors.New("not used")
}

func (f *fakeSDM) GetNSSAI(context.Context, string, identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	return nil, errors.New("not used")
}

func (f *fakeSDM) GetSmfSelectData(context.Context, string, identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	return nil, errors.New("not used")
}

// ---- fake AMF (Communication + SMContextStatusNotifier) ----

// transfer is one recorded N1N2MessageTransfer, decoded.
type transfer struct {
	supi       string
	psi        uint8
	n1         nas.SMMessage
	n2Type     models.Amf_Comm_NgapIeType
	n2         []byte
	arp        *models.Arp
	failureURI string
}

type statusNote struct {
	supi string
	psi  int32
}

// fakeAMF records transfers and notifications. With auto set it plays the
// AMF+gNB+UE synchronously inside N1N2MessageTransfer, calling back into
// the SMF (which must not deadlock): setup -> setup response, release
// command -> release response + release complete, modification command ->
// modify response + complete.
type fakeAMF struct {
	t         testing.TB
	smf       *SMF
	transfers chan transfer
	notes     chan statusNote
	auto      bool
	fail      bool // answer transfers with an error

	mu   sync.Mutex
	cond *sync.Cond
	refs map[string]string // supi/psi -> ref
}

func newFakeAMF(t testing.TB) *fakeAMF {
	a := &fakeAMF{t: t, transfers: make(chan transfer, 4096), notes: make(chan statusNote, 4096), refs: make(map[string]string)}
	a.cond = sync.NewCond(&a.mu)
	return a
}

func refKey(supi string, psi uint8) string { return fmt.Sprintf("%s/%d", supi, psi) }

func (a *fakeAMF) clearRef(supi string, psi uint8) {
	a.mu.Lock()
	delete(a.refs, refKey(supi, psi))
	a.mu.Unlock()
}

func (a *fakeAMF) setRef(supi string, psi uint8, ref string) {
	a.mu.Lock()
	a.refs[refKey(supi, psi)] = ref
	a.cond.Broadcast()
	a.mu.Unlock()
}

// ref waits for the AMF to know the context (the AMF records it before its
// UE executor runs the queued transfer).
func (a *fakeAMF) ref(supi string, psi uint8) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.refs[refKey(supi, psi)] == "" {
		a.cond.Wait()
	}
	return a.refs[refKey(supi, psi)]
}

func (a *fakeAMF) N1N2MessageTransfer(ctx context.Context, supi string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	tr := transfer{supi: supi, psi: uint8(req.Data.PduSessionId), n2: req.N2Info,
		arp: req.Data.Arp, failureURI: req.Data.N1n2FailureTxfNotifURI}
	if req.N1Msg != nil {
		m, err := nas.DecodeSM(req.N1Msg)
		if err != nil {
			a.t.Errorf("N1N2MessageTransfer: undecodable N1: %v", err)
		} else {
			tr.n1 = m
		}
		if req.Data.N1MessageContainer == nil || req.Data.N1MessageContainer.N1MessageClass != models.Amf_Comm_N1MessageClass_SM {
			a.t.Errorf("N1N2MessageTransfer: N1 without an SM N1MessageContainer")
		}
	}
	if req.N2Info != nil {
		sm := req.Data.N2InfoContainer.SmInfo
		if sm == nil || sm.N2InfoContent == nil || sm.PduSessionId != req.Data.PduSessionId || sm.SNssai == nil {
			a.t.Errorf("N1N2MessageTransfer: incomplete N2 SM information %+v", sm)
		} else {
			tr.n2Type = sm.N2InfoContent.NgapIeType
		}
	}
	if a.fail {
		a.transfers <- tr
		return nil, sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseUENotReachable, "fake")
	}
	if a.auto {
		a.play(ctx, tr)
	}
	a.transfers <- tr // after play, so that a test sees the procedure done
	return &models.Amf_Comm_N1N2MessageTransferRspData{Cause: models.Amf_Comm_N1N2MessageTransferCause_N1_N2_TRANSFER_INITIATED}, nil
}

func (a *fakeAMF) play(ctx context.Context, tr transfer) {
	ref := a.ref(tr.supi, tr.psi)
	switch tr.n2Type {
	case models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ:
		if _, err := a.smf.UpdateSMContext(ctx, ref, setupResponse(a.t, tr.psi)); err != nil {
			a.t.Errorf("auto setup response: %v", err)
		}
	case models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD:
		if _, err := a.smf.UpdateSMContext(ctx, ref, releaseResponse(a.t)); err != nil {
			a.t.Errorf("auto release response: %v", err)
		}
		if _, err := a.smf.UpdateSMContext(ctx, ref, n1Update(a.t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: tr.psi}})); err != nil {
			a.t.Errorf("auto release complete: %v", err)
		}
	}
}

func (a *fakeAMF) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	if n == nil || n.StatusInfo == nil || n.StatusInfo.ResourceStatus != models.Smf_PDUSess_ResourceStatus_RELEASED {
		a.t.Errorf("SMContextStatusNotify: %+v", n)
	}
	var supi string
	var psi int32
	if _, err := fmt.Sscanf(strings.ReplaceAll(uri, "/", " "), " status %s %d", &supi, &psi); err != nil {
		a.t.Errorf("SMContextStatusNotify to %q: %v", uri, err)
	}
	a.notes <- statusNote{supi, psi}
	return nil
}

func (a *fakeAMF) next(t testing.TB) transfer {
	t.Helper()
	select {
	case tr := <-a.transfers:
		return tr
	case <-time.After(5 * time.Second):
		t.Fatal("no N1N2MessageTransfer")
	}
	return transfer{}
}

func (a *fakeAMF) noTransfer(t testing.TB) {
	t.Helper()
	select {
	case tr := <-a.transfers:
		t.Fatalf("unexpected N1N2MessageTransfer %+v", tr)
	case <-time.After(50 * time.Millisecond):
	}
}

func (a *fakeAMF) note(t testing.TB) statusNote {
	t.Helper()
	select {
	case n := <-a.notes:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no SMContextStatusNotify")
	}
	return statusNote{}
}

// ---- harness ----

type harness struct {
	smf *SMF
	amf *fakeAMF
	sdm *fakeSDM
	upf *fakeUPF
	pcf *pcf.PCF
}

func testConfig() Config {
	return Config{
		DNNs: []DNNConfig{
			{Name: "internet", SNSSAI: "1-010203", Pool: "10.60.0.0/16", DNS: []string{"8.8.8.8"}},
			{Name: "ims", SNSSAI: "1-010203", Pool: "10.61.0.0/16"},
			{Name: "tiny", SNSSAI: "1-010203", Pool: "10.70.0.0/30"}, // one usable address
			{Name: "enterprise", SNSSAI: "1-010203", Pool: "10.71.0.0/24"},
		},
		UPFs: []UPFConfig{{Name: "upf1", N4: "direct", N3: "10.100.3.2", DNNs: []string{"internet", "ims", "tiny", "enterprise"}}},
	}
}

func newHarness(t testing.TB, cfg Config, pcfCfg pcf.Config) *harness {
	t.Helper()
	h := buildHarness(t, cfg, pcfCfg, map[string]*fakeUPF{"upf1": newFakeUPF()})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// buildHarness builds an SMF on fake UPFs (by name; h.upf is "upf1") and
// does not start it.
func buildHarness(t testing.TB, cfg Config, pcfCfg pcf.Config, upfs map[string]*fakeUPF) *harness {
	t.Helper()
	ups := make(map[string]pfcp.UserPlane, len(upfs))
	for name, u := range upfs {
		ups[name] = u
	}
	h := buildHarnessOn(t, cfg, pcfCfg, ups)
	h.upf = upfs["upf1"]
	return h
}

// buildHarnessOn builds an SMF on the N4 clients ups (by UPF name; more
// may be set with SetUserPlane) and does not start it.
func buildHarnessOn(t testing.TB, cfg Config, pcfCfg pcf.Config, ups map[string]pfcp.UserPlane) *harness {
	t.Helper()
	h := &harness{amf: newFakeAMF(t), sdm: &fakeSDM{}}
	p, err := pcf.New(pcfCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.pcf = p
	s, err := New(cfg, Deps{AMF: h.amf, AMFStatus: h.amf, SDM: h.sdm, PCF: p, UPFs: ups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.SetNotifier(s)
	h.smf = s
	h.amf.smf = s
	t.Cleanup(func() { s.Close() })
	return h
}

func encodeN1(t testing.TB, m nas.Message) []byte {
	t.Helper()
	b, err := nas.Encode(m)
	if err != nil {
		t.Fatalf("encode %T: %v", m, err)
	}
	return b
}

func estRequest(t testing.TB, psi uint8, typ, ssc uint8, pco []byte) []byte {
	return encodeN1(t, &nas.PDUSessionEstablishmentRequest{
		SMHeader:             nas.SMHeader{SessionID: psi, TransactionID: 1},
		IntegrityMaxDataRate: [2]byte{nas.IntegrityMaxRateFull, nas.IntegrityMaxRateFull},
		PDUSessionType:       typ,
		SSCMode:              ssc,
		ExtendedPCO:          pco,
	})
}

func createReq(supi string, psi uint8, dnn string, slice identity.SNSSAI, n1 []byte) *sbi.SMContextCreate {
	sl := sbi.SNSSAIToModel(slice)
	return &sbi.SMContextCreate{
		Data: &models.Smf_PDUSess_SmContextCreateData{
			Supi: supi, PduSessionId: int32(psi), Dnn: dnn, SNssai: &sl,
			AnType: models.AccessType_3_GPP_ACCESS, RequestType: models.Smf_PDUSess_RequestType_INITIAL_REQUEST,
			N1SmMsg:            &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM},
			SmContextStatusUri: fmt.Sprintf("/status/%s/%d", supi, psi),
		},
		N1SmMsg: n1,
	}
}

func setupResponse(t testing.TB, psi uint8) *sbi.SMContextUpdate {
	t.Helper()
	b, err := ngap.EncodeSetupResponseTransfer(&ngap.PDUSessionResourceSetupResponseTransfer{
		DLTunnel: ngap.GTPTunnel{Addr: gnbN3, TEID: 0xA000 + uint32(psi)},
		QoSFlows: []uint8{defaultQFI},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP,
	}, N2SmInfo: b}
}

func releaseResponse(t testing.TB) *sbi.SMContextUpdate {
	t.Helper()
	b, err := ngap.EncodeReleaseResponseTransfer(&ngap.PDUSessionResourceReleaseResponseTransfer{})
	if err != nil {
		t.Fatal(err)
	}
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_RSP,
	}, N2SmInfo: b}
}

func modifyResponse(t testing.TB) *sbi.SMContextUpdate {
	t.Helper()
	b, err := ngap.EncodeModifyResponseTransfer(&ngap.PDUSessionResourceModifyResponseTransfer{QoSFlows: []uint8{defaultQFI}})
	if err != nil {
		t.Fatal(err)
	}
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_RSP,
	}, N2SmInfo: b}
}

func n1Update(t testing.TB, m nas.Message) *sbi.SMContextUpdate {
	return &sbi.SMContextUpdate{
		Data:    &models.Smf_PDUSess_SmContextUpdateData{N1SmMsg: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}},
		N1SmMsg: encodeN1(t, m),
	}
}

// establish runs a full establishment for (supi, psi, dnn) and returns the
// ref and the Accept. In auto mode the fake AMF answers the setup itself.
func (h *harness) establish(t testing.TB, supi string, psi uint8, dnn string) (string, *nas.PDUSessionEstablishmentAccept, transfer) {
	t.Helper()
	h.amf.clearRef(supi, psi)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(supi, psi, dnn, sliceA, estRequest(t, psi, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatalf("CreateSMContext %s/%d %s: %v", supi, psi, dnn, err)
	}
	h.amf.setRef(supi, psi, created.Ref)
	tr := h.amf.next(t)
	acc, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept)
	if !ok {
		t.Fatalf("transfer N1 is %T, want an Accept", tr.n1)
	}
	if !h.amf.auto {
		if _, err := h.smf.UpdateSMContext(context.Background(), created.Ref, setupResponse(t, psi)); err != nil {
			t.Fatalf("setup response: %v", err)
		}
	}
	return created.Ref, acc, tr
}

// settle waits for the PFCP deletions in flight (they run beside the UE
// executors, n4.go) to end, and with them the release of the UE addresses.
func (h *harness) settle(t testing.TB) {
	t.Helper()
	waitFor(t, "the PFCP deletions to end", func() bool { return h.smf.Stats().N4Deleting == 0 })
}

// empty checks that nothing of any session is left anywhere.
func (h *harness) empty(t testing.TB) {
	t.Helper()
	h.settle(t)
	st := h.smf.Stats()
	if st.Contexts != 0 || st.N4Sessions != 0 || st.Policies != 0 {
		t.Errorf("left behind: %+v", st)
	}
	for dnn, n := range st.IPs {
		if n != 0 {
			t.Errorf("%d addresses of %s still allocated", n, dnn)
		}
	}
	if h.upf != nil {
		if n := h.upf.live(); n != 0 {
			t.Errorf("%d PFCP sessions left at the UPF", n)
		}
	}
	if n := h.pcf.Stats().Policies; n != 0 {
		t.Errorf("%d policies left at the PCF", n)
	}
	// The UE table empties once the senders have drained.
	deadline := time.Now().Add(5 * time.Second)
	for h.smf.ues.Len() != 0 || h.smf.contexts.Len() != 0 || h.smf.seids.Len() != 0 {
		if time.Now().After(deadline) {
			t.Errorf("tables not empty: ues %d contexts %d seids %d",
				h.smf.ues.Len(), h.smf.contexts.Len(), h.smf.seids.Len())
			return
		}
		time.Sleep(time.Millisecond)
	}
}
