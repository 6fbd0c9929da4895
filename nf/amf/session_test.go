package amf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// ---- fake SMF ----

// smMsg builds a 5GSM message header (TS 24.501 §9: EPD, PDU session ID,
// PTI, message type) with an opaque body: the AMF never looks inside.
func smMsg(id, pti uint8, typ nas.MsgType, body ...byte) []byte {
	return append([]byte{nas.EPD5GSM, id, pti, uint8(typ)}, body...)
}

// smfCall is one Nsmf_PDUSession operation the fake SMF received.
type smfCall struct {
	op      string // "create", "update", "release"
	ref     string
	supi    string
	id      uint8
	dnn     string
	snssai  identity.SNSSAI
	n1, n2  []byte
	n2Type  models.Smf_PDUSess_N2SmInfoType
	upCnx   models.Smf_PDUSess_UpCnxState
	cause   models.Smf_PDUSess_Cause
	hoState models.Smf_PDUSess_HoState
}

type smContext struct {
	supi      string
	id        uint8
	snssai    identity.SNSSAI
	statusURI string
}

// fakeSMF implements sbi.PDUSession the way an SMF drives the AMF: it
// answers establishment with an N1N2MessageTransfer (PDU Session Resource
// Setup Request + Establishment Accept), issued from inside CreateSMContext
// or from another goroutine; it answers a UE-requested release in the
// UpdateSMContext response and a modification with an N1N2MessageTransfer,
// and notifies the release of a context with SMContextStatusNotify.
type fakeSMF struct {
	amf interface {
		sbi.Communication
		sbi.SMContextStatusNotifier
	}
	// async: callbacks come from a new goroutine; otherwise from inside
	// the call. mixed alternates per created context.
	async, mixed bool
	rejectDNN    string // refused with a PDU Session Establishment Reject (SMContextError + N1)
	problemDNN   string // refused with a ProblemDetails only (DNN_NOT_SUPPORTED)
	// stall holds CreateSMContext for a SUPI until the channel closes or
	// the caller's deadline passes (an SMF that does not answer).
	stall map[string]chan struct{}
	// refuseActivation: UpdateSMContext(ACTIVATING) fails; refuseHandover:
	// every handover step does.
	refuseActivation, refuseHandover bool
	failures                         []models.Amf_Comm_N1N2MsgTxfrFailureNotification // N1N2TransferFailureNotify calls

	mu      sync.Mutex
	nextRef int
	ctxs    map[string]*smContext
	calls   []smfCall
	cbErrs  []error
	// staleReleases counts ReleaseSMContext calls for a context the SMF
	// no longer has (404): released already, and said so.
	staleReleases int

	wg sync.WaitGroup // async callbacks
}

func newFakeSMF() *fakeSMF { return &fakeSMF{ctxs: make(map[string]*smContext)} }

func (f *fakeSMF) record(c smfCall) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

// callsOf returns the calls of operation op so far.
func (f *fakeSMF) callsOf(op string) []smfCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []smfCall
	for _, c := range f.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSMF) contexts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ctxs)
}

// callback runs fn as the SMF's call into the AMF, synchronously or from
// another goroutine, and keeps its error for checkCallbacks.
func (f *fakeSMF) callback(async bool, fn func() error) {
	run := func() {
		if err := fn(); err != nil {
			f.mu.Lock()
			f.cbErrs = append(f.cbErrs, err)
			f.mu.Unlock()
		}
	}
	if !async {
		run()
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		run()
	}()
}

func (f *fakeSMF) checkCallbacks(t testing.TB) {
	t.Helper()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, err := range f.cbErrs {
		t.Errorf("SMF callback into the AMF failed: %v", err)
	}
}

func badRequest(format string, args ...any) error {
	return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, format, args...)
}

func (f *fakeSMF) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	d := req.Data
	switch {
	case d == nil:
		return nil, badRequest("no data")
	case d.Supi == "" || d.PduSessionId < 1 || d.PduSessionId > 15 || d.Dnn == "" || d.SNssai == nil:
		return nil, badRequest("supi/pduSessionId/dnn/sNssai: %+v", d)
	case d.N1SmMsg == nil || d.N1SmMsg.ContentId != sbi.ContentIDN1SM:
		return nil, badRequest("n1SmMsg reference")
	case d.AnType != models.AccessType_3_GPP_ACCESS || d.RatType != models.RatType_NR:
		return nil, badRequest("anType %q ratType %q", d.AnType, d.RatType)
	case d.ServingNfId == "" || d.Guami == nil || d.SmContextStatusUri == "":
		return nil, badRequest("servingNfId/guami/smContextStatusUri")
	case d.UeLocation == nil || d.UeLocation.NrLocation == nil || d.UeLocation.NrLocation.Tai == nil:
		return nil, badRequest("ueLocation")
	case d.RequestType != models.Smf_PDUSess_RequestType_INITIAL_REQUEST:
		return nil, badRequest("requestType %q", d.RequestType)
	}
	n1 := req.N1SmMsg
	if len(n1) < 4 || n1[0] != nas.EPD5GSM || nas.MsgType(n1[3]) != nas.MsgPDUSessionEstablishmentRequest ||
		int32(n1[1]) != d.PduSessionId {
		return nil, badRequest("N1 is not an establishment request for the session: % x", n1)
	}
	id, pti := uint8(d.PduSessionId), n1[2]
	snssai, err := sbi.SNSSAIFromModel(*d.SNssai)
	if err != nil {
		return nil, badRequest("sNssai: %v", err)
	}
	f.record(smfCall{op: "create", supi: d.Supi, id: id, dnn: d.Dnn, snssai: snssai, n1: bytes.Clone(n1)})
	if ch := f.stall[d.Supi]; ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("smf did not answer: %w", ctx.Err())
		}
	}
	switch d.Dnn {
	case f.rejectDNN:
		// TS 23.502 §4.3.2.2.1 step 3: 403 with the reject in N1.
		return nil, &sbi.SMContextError{
			Problem: sbi.NewProblem(http.StatusForbidden, sbi.CauseDNNDenied, "dnn %s", d.Dnn),
			N1SmMsg: smMsg(id, pti, nas.MsgPDUSessionEstablishmentReject, 27),
		}
	case f.problemDNN:
		return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseDNNNotSupported, "dnn %s", d.Dnn)
	}
	f.mu.Lock()
	f.nextRef++
	ref := fmt.Sprintf("sm-%d", f.nextRef)
	async := f.async || f.mixed && f.nextRef%2 == 0
	f.ctxs[ref] = &smContext{supi: d.Supi, id: id, snssai: snssai, statusURI: d.SmContextStatusUri}
	f.mu.Unlock()

	// TS 23.502 §4.3.2.2.1 step 11: N2 setup request + N1 accept.
	supi, sn := d.Supi, *d.SNssai
	msg := &sbi.N1N2Message{
		Data: &models.Amf_Comm_N1N2MessageTransferReqData{
			PduSessionId: int32(id),
			N1MessageContainer: &models.Amf_Comm_N1MessageContainer{
				N1MessageClass: models.Amf_Comm_N1MessageClass_SM, N1MessageContent: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM},
			},
			N2InfoContainer: &models.Amf_Comm_N2InfoContainer{
				N2InformationClass: models.Amf_Comm_N2InformationClass_SM,
				SmInfo: &models.Amf_Comm_N2SmInformation{
					PduSessionId: int32(id), SNssai: &sn,
					N2InfoContent: &models.Amf_Comm_N2InfoContent{
						NgapIeType: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ,
						NgapData:   &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM},
					},
				},
			},
		},
		N1Msg:  smMsg(id, pti, nas.MsgPDUSessionEstablishmentAccept, 0x11),
		N2Info: []byte(fmt.Sprintf("setup-request-transfer-%d", id)),
	}
	f.callback(async, func() error {
		rsp, err := f.amf.N1N2MessageTransfer(context.Background(), supi, msg)
		if err != nil {
			return err
		}
		if rsp.Cause != models.Amf_Comm_N1N2MessageTransferCause_N1_N2_TRANSFER_INITIATED {
			return fmt.Errorf("N1N2MessageTransfer cause %q", rsp.Cause)
		}
		return nil
	})
	return &sbi.SMContextCreated{Ref: ref, Data: &models.Smf_PDUSess_SmContextCreatedData{PduSessionId: int32(id), SNssai: &sn}}, nil
}

func (f *fakeSMF) UpdateSMContext(ctx context.Context, ref string, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	f.mu.Lock()
	c := f.ctxs[ref]
	f.mu.Unlock()
	if c == nil {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "%s", ref)
	}
	if req.Data == nil {
		return nil, badRequest("no data")
	}
	if len(req.N2SmInfo) > 0 && (req.Data.N2SmInfo == nil || req.Data.N2SmInfo.ContentId != sbi.ContentIDN2SM || req.Data.N2SmInfoType == "") {
		return nil, badRequest("n2SmInfo reference/type")
	}
	if len(req.N1SmMsg) > 0 && (req.Data.N1SmMsg == nil || req.Data.N1SmMsg.ContentId != sbi.ContentIDN1SM) {
		return nil, badRequest("n1SmMsg reference")
	}
	f.record(smfCall{op: "update", ref: ref, supi: c.supi, id: c.id, n1: bytes.Clone(req.N1SmMsg),
		n2: bytes.Clone(req.N2SmInfo), n2Type: req.Data.N2SmInfoType, upCnx: req.Data.UpCnxState, hoState: req.Data.HoState})
	if ho := req.Data.HoState; ho == models.Smf_PDUSess_HoState_COMPLETED || ho == models.Smf_PDUSess_HoState_CANCELLED {
		return &sbi.SMContextUpdated{Data: &models.Smf_PDUSess_SmContextUpdatedData{HoState: ho}}, nil
	}
	// Handover (TS 23.502 §4.9.1): each N2 type has its answer.
	if answer, ok := map[models.Smf_PDUSess_N2SmInfoType]models.Smf_PDUSess_N2SmInfoType{
		models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED:       models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ,
		models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK:        models.Smf_PDUSess_N2SmInfoType_HANDOVER_CMD,
		models.Smf_PDUSess_N2SmInfoType_HANDOVER_RES_ALLOC_FAIL: models.Smf_PDUSess_N2SmInfoType_HANDOVER_PREP_FAIL,
		models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ:         models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ_ACK,
	}[req.Data.N2SmInfoType]; ok {
		if f.refuseHandover {
			return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseN2SMError, "no handover")
		}
		return &sbi.SMContextUpdated{
			Data:     &models.Smf_PDUSess_SmContextUpdatedData{HoState: req.Data.HoState, N2SmInfoType: answer},
			N2SmInfo: []byte(fmt.Sprintf("%s-%d", answer, c.id)),
		}, nil
	}
	if req.Data.UpCnxState == models.Smf_PDUSess_UpCnxState_ACTIVATING {
		// TS 23.502 §4.2.3.2 step 5: the N2 content to set the user plane up.
		if f.refuseActivation {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "no user plane")
		}
		return &sbi.SMContextUpdated{
			Data: &models.Smf_PDUSess_SmContextUpdatedData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING,
				N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ},
			N2SmInfo: []byte(fmt.Sprintf("activate-transfer-%d", c.id)),
		}, nil
	}
	if len(req.N1SmMsg) < 4 {
		return &sbi.SMContextUpdated{Data: &models.Smf_PDUSess_SmContextUpdatedData{}}, nil
	}
	pti := req.N1SmMsg[2]
	switch nas.MsgType(req.N1SmMsg[3]) {
	case nas.MsgPDUSessionReleaseRequest:
		// TS 23.502 §4.3.4.2 step 3b: the command comes in the answer.
		return &sbi.SMContextUpdated{
			Data:     &models.Smf_PDUSess_SmContextUpdatedData{N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD},
			N1SmMsg:  smMsg(c.id, pti, nas.MsgPDUSessionReleaseCommand, 36),
			N2SmInfo: []byte("release-command-transfer"),
		}, nil
	case nas.MsgPDUSessionReleaseComplete:
		// TS 23.502 §4.3.4.2 step 11: context gone, the AMF is told.
		f.mu.Lock()
		delete(f.ctxs, ref)
		f.mu.Unlock()
		uri := c.statusURI
		f.callback(true, func() error {
			return f.amf.SMContextStatusNotify(context.Background(), uri, &models.Smf_PDUSess_SmContextStatusNotification{
				StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED},
			})
		})
	case nas.MsgPDUSessionModificationRequest:
		// Network answers through N1N2MessageTransfer (TS 23.502 §4.3.3.2
		// step 3a/3b), here from inside the UpdateSMContext call.
		supi, sn := c.supi, sbi.SNSSAIToModel(c.snssai)
		msg := &sbi.N1N2Message{
			Data: &models.Amf_Comm_N1N2MessageTransferReqData{
				N2InfoContainer: &models.Amf_Comm_N2InfoContainer{
					N2InformationClass: models.Amf_Comm_N2InformationClass_SM,
					SmInfo: &models.Amf_Comm_N2SmInformation{PduSessionId: int32(c.id), SNssai: &sn,
						N2InfoContent: &models.Amf_Comm_N2InfoContent{NgapIeType: models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ}},
				},
			},
			N1Msg:  smMsg(c.id, pti, nas.MsgPDUSessionModificationCommand),
			N2Info: []byte("modify-request-transfer"),
		}
		f.callback(false, func() error {
			_, err := f.amf.N1N2MessageTransfer(context.Background(), supi, msg)
			return err
		})
	}
	return &sbi.SMContextUpdated{Data: &models.Smf_PDUSess_SmContextUpdatedData{}}, nil
}

func (f *fakeSMF) N1N2TransferFailureNotify(ctx context.Context, uri string, n *models.Amf_Comm_N1N2MsgTxfrFailureNotification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, *n)
	return nil
}

func (f *fakeSMF) failureCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.failures)
}

func (f *fakeSMF) ReleaseSMContext(ctx context.Context, ref string, req *sbi.SMContextRelease) error {
	f.mu.Lock()
	c := f.ctxs[ref]
	delete(f.ctxs, ref)
	if c == nil {
		f.staleReleases++
	}
	f.mu.Unlock()
	if c == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "%s", ref)
	}
	call := smfCall{op: "release", ref: ref, supi: c.supi, id: c.id}
	if req != nil && req.Data != nil {
		call.cause = req.Data.Cause
	}
	f.record(call)
	return nil
}

// newTestAMFWithSMF is newTestAMF with a fake SMF wired both ways.
func newTestAMFWithSMF(t testing.TB, smf *fakeSMF) (*AMF, *fakeHN) {
	t.Helper()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	a, err := New(testConfig(), deps, testLogger())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	smf.amf = a
	t.Cleanup(func() {
		smf.checkCallbacks(t)
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a, hn
}

// ---- UE side of the 5GSM procedures ----

// sendSM sends a 5GSM message in an UL NAS Transport (TS 24.501 §8.2.10).
func (u *testUE) sendSM(id uint8, requestType uint8, dnn string, snssai *identity.SNSSAI, sm []byte) {
	u.t.Helper()
	u.sendUL(&nas.ULNASTransport{
		PayloadContainerType: nas.PayloadN1SMInformation, Payload: sm,
		PDUSessionID: id, RequestType: requestType, DNN: dnn, SNSSAI: snssai,
	})
}

// dlSM opens the DL NAS Transport in pdu and checks it carries N1 SM
// information for session id.
func (u *testUE) dlSM(pdu []byte, id uint8) *nas.DLNASTransport {
	u.t.Helper()
	dl := expect[*nas.DLNASTransport](u.t, u.openNAS(pdu))
	if dl.PayloadContainerType != nas.PayloadN1SMInformation || dl.PDUSessionID != id {
		u.t.Fatalf("DL NAS Transport type %d session %d, want N1 SM for %d", dl.PayloadContainerType, dl.PDUSessionID, id)
	}
	return dl
}

// establish runs a UE-requested PDU session establishment up to the PDU
// Session Resource Setup Response and returns the setup request.
func (u *testUE) establish(id uint8, dnn string) *ngap.PDUSessionResourceSetupRequest {
	u.t.Helper()
	u.sendSM(id, requestInitial, dnn, nil, smMsg(id, 1, nas.MsgPDUSessionEstablishmentRequest, 0x91, 0xA1))
	req := expect[*ngap.PDUSessionResourceSetupRequest](u.t, u.recvNGAP())
	if len(req.Items) != 1 || req.Items[0].ID != id {
		u.t.Fatalf("setup request items %+v", req.Items)
	}
	dl := u.dlSM(req.Items[0].NASPDU, id)
	if want := smMsg(id, 1, nas.MsgPDUSessionEstablishmentAccept, 0x11); !bytes.Equal(dl.Payload, want) || dl.Cause != 0 {
		u.t.Fatalf("NAS in setup request: payload % x cause %d, want the accept", dl.Payload, dl.Cause)
	}
	u.g.send(1, &ngap.PDUSessionResourceSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Setup: []ngap.PDUSessionResourceItem{{ID: id, Transfer: []byte(fmt.Sprintf("setup-response-transfer-%d", id))}}})
	return req
}

func registeredUE(t *testing.T, a *AMF, hn *fakeHN) *testUE {
	t.Helper()
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	return u
}

// ---- tests ----

func TestPDUSessionEstablishment(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			smf := newFakeSMF()
			smf.async = async
			a, hn := newTestAMFWithSMF(t, smf)
			u := registeredUE(t, a, hn)

			// No DNN and no S-NSSAI from the UE: subscription defaults.
			req := u.establish(5, "")
			if req.Items[0].SNSSAI != testSlice || string(req.Items[0].Transfer) != "setup-request-transfer-5" {
				t.Errorf("setup item %+v", req.Items[0])
			}
			if req.UEAggregateMaxBitRate == nil || *req.UEAggregateMaxBitRate != (ngap.AMBR{UL: 1e9, DL: 2e9}) {
				t.Errorf("UE-AMBR %+v, want the subscribed 1/2 Gbps with the first session", req.UEAggregateMaxBitRate)
			}
			creates := smf.callsOf("create")
			if len(creates) != 1 || creates[0].supi != u.supi || creates[0].id != 5 || creates[0].dnn != "internet" ||
				creates[0].snssai != testSlice || !bytes.Equal(creates[0].n1, smMsg(5, 1, nas.MsgPDUSessionEstablishmentRequest, 0x91, 0xA1)) {
				t.Fatalf("CreateSMContext calls %+v", creates)
			}
			// Step 14: the gNB's answer reaches the SMF.
			waitFor(t, "setup response at the SMF", func() bool { return len(smf.callsOf("update")) == 1 })
			up := smf.callsOf("update")[0]
			if up.ref != "sm-1" || up.n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP ||
				string(up.n2) != "setup-response-transfer-5" {
				t.Errorf("update %+v", up)
			}

			// A second session with the UE's DNN: no UE-AMBR any more.
			req = u.establish(6, "ims")
			if req.UEAggregateMaxBitRate != nil {
				t.Error("UE-AMBR repeated with the second session")
			}
			if c := smf.callsOf("create"); len(c) != 2 || c[1].dnn != "ims" {
				t.Errorf("second create %+v", c)
			}
			waitFor(t, "second setup response", func() bool { return len(smf.callsOf("update")) == 2 })
			if s := a.Stats(); s.PDUSessions != 2 || s.SMContextsCreated != 2 || s.N1N2Transfers != 2 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestPDUSessionSetupFailureForwarded(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.sendSM(1, requestInitial, "internet", &testSlice, smMsg(1, 3, nas.MsgPDUSessionEstablishmentRequest))
	expect[*ngap.PDUSessionResourceSetupRequest](t, u.recvNGAP())
	u.g.send(1, &ngap.PDUSessionResourceSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Failed: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("unsuccessful")}}})
	waitFor(t, "failure at the SMF", func() bool { return len(smf.callsOf("update")) == 1 })
	if up := smf.callsOf("update")[0]; up.n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_FAIL || string(up.n2) != "unsuccessful" {
		t.Errorf("update %+v", up)
	}
}

func TestPDUSessionEstablishmentRejected(t *testing.T) {
	smf := newFakeSMF()
	smf.rejectDNN, smf.problemDNN = "blocked", "nowhere"
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)

	// The SMF's reject (SMContextError with N1) reaches the UE as is.
	u.sendSM(2, requestInitial, "blocked", nil, smMsg(2, 7, nas.MsgPDUSessionEstablishmentRequest))
	dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 2)
	if !bytes.Equal(dl.Payload, smMsg(2, 7, nas.MsgPDUSessionEstablishmentReject, 27)) || dl.Cause != 0 {
		t.Errorf("reject payload % x cause %d", dl.Payload, dl.Cause)
	}

	// A refusal without N1: the request comes back with #91 (TS 24.501
	// §5.4.5.3.1).
	req := smMsg(3, 8, nas.MsgPDUSessionEstablishmentRequest)
	u.sendSM(3, requestInitial, "nowhere", nil, req)
	dl = u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 3)
	if !bytes.Equal(dl.Payload, req) || dl.Cause != nas.CauseDNNNotSupportedOrNotSubscribed {
		t.Errorf("returned payload % x cause %d", dl.Payload, dl.Cause)
	}

	// An S-NSSAI outside the allowed NSSAI is not forwarded (#90).
	other := identity.SNSSAI{SST: 2, SD: identity.NoSD}
	req = smMsg(4, 9, nas.MsgPDUSessionEstablishmentRequest)
	u.sendSM(4, requestInitial, "internet", &other, req)
	dl = u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 4)
	if !bytes.Equal(dl.Payload, req) || dl.Cause != nas.CausePayloadNotForwarded {
		t.Errorf("returned payload % x cause %d", dl.Payload, dl.Cause)
	}
	if len(smf.callsOf("create")) != 2 {
		t.Errorf("creates %+v", smf.callsOf("create"))
	}

	// A 5GSM message for a session the AMF does not know (TS 24.501
	// §5.4.5.2.5): returned with #90, the SMF never sees it.
	rel := smMsg(9, 10, nas.MsgPDUSessionReleaseRequest)
	u.sendSM(9, 0, "", nil, rel)
	dl = u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 9)
	if !bytes.Equal(dl.Payload, rel) || dl.Cause != nas.CausePayloadNotForwarded {
		t.Errorf("returned payload % x cause %d", dl.Payload, dl.Cause)
	}
	if s := a.Stats(); s.PDUSessions != 0 || s.SMContextsRejected != 3 || len(smf.callsOf("update")) != 0 {
		t.Errorf("stats %+v, updates %d", s, len(smf.callsOf("update")))
	}
}

func TestULNASTransportWithoutSMF(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	u := registeredUE(t, a, hn)
	req := smMsg(1, 1, nas.MsgPDUSessionEstablishmentRequest)
	u.sendSM(1, requestInitial, "internet", nil, req)
	dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 1)
	if !bytes.Equal(dl.Payload, req) || dl.Cause != nas.CausePayloadNotForwarded {
		t.Errorf("payload % x cause %d, want the request back with #90", dl.Payload, dl.Cause)
	}
}

func TestPDUSessionReleaseUERequested(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.establish(5, "internet")
	waitFor(t, "session active", func() bool { return len(smf.callsOf("update")) == 1 })

	// Release Request -> UpdateSMContext; its answer carries the N2 release
	// command and the N1 Release Command.
	u.sendSM(5, 0, "", nil, smMsg(5, 2, nas.MsgPDUSessionReleaseRequest))
	cmd := expect[*ngap.PDUSessionResourceReleaseCommand](t, u.recvNGAP())
	if len(cmd.Items) != 1 || cmd.Items[0].ID != 5 || string(cmd.Items[0].Transfer) != "release-command-transfer" {
		t.Fatalf("release command items %+v", cmd.Items)
	}
	dl := u.dlSM(cmd.NASPDU, 5)
	if !bytes.Equal(dl.Payload, smMsg(5, 2, nas.MsgPDUSessionReleaseCommand, 36)) {
		t.Errorf("release command NAS % x", dl.Payload)
	}
	u.g.send(1, &ngap.PDUSessionResourceReleaseResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Released: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: []byte("release-response-transfer")}}})
	u.sendSM(5, 0, "", nil, smMsg(5, 2, nas.MsgPDUSessionReleaseComplete))
	// SMContextStatusNotify (from the SMF's goroutine) ends the session.
	waitFor(t, "session forgotten", func() bool { s := a.Stats(); return s.PDUSessions == 0 && s.SMContextsReleased == 1 })
	ups := smf.callsOf("update")
	if len(ups) != 4 || ups[2].n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_RSP ||
		string(ups[2].n2) != "release-response-transfer" || nas.MsgType(ups[3].n1[3]) != nas.MsgPDUSessionReleaseComplete {
		t.Errorf("updates %+v", ups)
	}
	// The ID is free: a 5GSM message for it is not forwarded any more.
	u.sendSM(5, 0, "", nil, smMsg(5, 3, nas.MsgPDUSessionReleaseRequest))
	if dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 5); dl.Cause != nas.CausePayloadNotForwarded {
		t.Errorf("cause %d", dl.Cause)
	}
}

func TestPDUSessionModification(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.establish(1, "")
	waitFor(t, "session active", func() bool { return len(smf.callsOf("update")) == 1 })

	u.sendSM(1, 0, "", nil, smMsg(1, 4, nas.MsgPDUSessionModificationRequest))
	mod := expect[*ngap.PDUSessionResourceModifyRequest](t, u.recvNGAP())
	if len(mod.Items) != 1 || mod.Items[0].ID != 1 || string(mod.Items[0].Transfer) != "modify-request-transfer" {
		t.Fatalf("modify items %+v", mod.Items)
	}
	if dl := u.dlSM(mod.Items[0].NASPDU, 1); nas.MsgType(dl.Payload[3]) != nas.MsgPDUSessionModificationCommand {
		t.Errorf("modify NAS % x", dl.Payload)
	}
	u.g.send(1, &ngap.PDUSessionResourceModifyResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Modified: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("modify-response-transfer")}}})
	waitFor(t, "modify response at the SMF", func() bool { return len(smf.callsOf("update")) == 3 })
	if up := smf.callsOf("update")[2]; up.n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_RSP ||
		string(up.n2) != "modify-response-transfer" {
		t.Errorf("update %+v", up)
	}
}

func TestN1N2MessageTransferErrors(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	ctx := context.Background()
	n1Only := func(id uint8) *sbi.N1N2Message {
		return &sbi.N1N2Message{Data: &models.Amf_Comm_N1N2MessageTransferReqData{PduSessionId: int32(id)},
			N1Msg: smMsg(id, 0, nas.MsgPDUSessionReleaseCommand, 36)}
	}

	_, err := a.N1N2MessageTransfer(ctx, identity.IMSI(testPLMN, "0000009999"), n1Only(1))
	if sbi.CauseOf(err) != sbi.CauseContextNotFound || sbi.StatusOf(err) != http.StatusNotFound {
		t.Errorf("unknown UE: %v", err)
	}
	if _, err := a.N1N2MessageTransfer(ctx, "imsi-1", &sbi.N1N2Message{}); sbi.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("empty request: %v", err)
	}
	bad := n1Only(1)
	bad.N2Info = []byte("x") // N2 without its SM information
	if _, err := a.N1N2MessageTransfer(ctx, "imsi-1", bad); sbi.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("N2 without smInfo: %v", err)
	}
	if err := a.SMContextStatusNotify(ctx, smContextStatusPath+"imsi-1/1/1", &models.Smf_PDUSess_SmContextStatusNotification{
		StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED},
	}); sbi.CauseOf(err) != sbi.CauseContextNotFound {
		t.Errorf("notify for unknown UE: %v", err)
	}

	// N1 only to a CM-CONNECTED UE: a DL NAS Transport; the session ID
	// comes from the 5GSM header when the data omits it.
	u := registeredUE(t, a, hn)
	msg := n1Only(7)
	msg.Data.PduSessionId = 0
	if _, err := a.N1N2MessageTransfer(ctx, u.supi, msg); err != nil {
		t.Fatalf("N1 to a connected UE: %v", err)
	}
	if dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 7); !bytes.Equal(dl.Payload, msg.N1Msg) {
		t.Errorf("payload % x", dl.Payload)
	}

	// A CM-IDLE UE is paged (TS 23.502 §4.2.3.3): the answer says so.
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "CM-IDLE", func() bool { return a.Stats().ConnectedUEs == 0 })
	rsp, err := a.N1N2MessageTransfer(ctx, u.supi, n1Only(7))
	if err != nil || rsp.Cause != models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE {
		t.Errorf("idle UE: %+v %v, want ATTEMPTING_TO_REACH_UE", rsp, err)
	}
	expect[*ngap.Paging](t, u.g.recv())
}

// TestANReleaseDeactivatesSessions: TS 23.502 §4.2.6 step 5.
func TestANReleaseDeactivatesSessions(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.establish(1, "")
	u.establish(2, "")
	waitFor(t, "sessions active", func() bool { return len(smf.callsOf("update")) == 2 })
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "deactivations", func() bool { return len(smf.callsOf("update")) == 4 })
	for _, up := range smf.callsOf("update")[2:] {
		if up.upCnx != models.Smf_PDUSess_UpCnxState_DEACTIVATED {
			t.Errorf("update %+v, want UP deactivation", up)
		}
	}
	if s := a.Stats(); s.PDUSessions != 2 || s.RegisteredUEs != 1 {
		t.Errorf("stats %+v: the UE and its sessions stay", s)
	}
}

func TestDeregistrationReleasesSessions(t *testing.T) {
	for _, switchOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("switchOff=%v", switchOff), func(t *testing.T) {
			smf := newFakeSMF()
			a, hn := newTestAMFWithSMF(t, smf)
			u := registeredUE(t, a, hn)
			u.establish(1, "")
			u.establish(2, "ims")
			waitFor(t, "sessions active", func() bool { return len(smf.callsOf("update")) == 2 })

			u.sendUL(&nas.DeregistrationRequestUEOriginating{SwitchOff: switchOff, AccessType: nas.Access3GPP,
				NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
			if !switchOff {
				expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
			}
			cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
			// The SM contexts are released before the answer and the N2
			// release (TS 23.502 §4.2.2.3.2 step 2): by now the SMF has seen
			// both releases.
			rel := smf.callsOf("release")
			if len(rel) != 2 || rel[0].id != 1 || rel[1].id != 2 || rel[0].supi != u.supi {
				t.Errorf("releases %+v", rel)
			}
			u.releaseComplete(cmd)
			waitFor(t, "context removed", func() bool { s := a.Stats(); return s.UEContexts == 0 })
			if s := a.Stats(); s.PDUSessions != 0 || s.SMContextsReleased != 2 || smf.contexts() != 0 {
				t.Errorf("stats %+v, SMF contexts %d", s, smf.contexts())
			}
			// No deactivation for released sessions on the way out.
			if n := len(smf.callsOf("update")); n != 2 {
				t.Errorf("%d updates, want only the two setup responses", n)
			}
		})
	}
}

// TestManyUEsEstablishConcurrently drives 100 UEs through registration and
// establishment at once while the SMF calls back from inside
// CreateSMContext for half of them and from other goroutines for the rest:
// no deadlock, every session set up (run with -race).
func TestManyUEsEstablishConcurrently(t *testing.T) {
	smf := newFakeSMF()
	smf.mixed = true
	a, hn := newTestAMFWithSMF(t, smf)
	const n = 100
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok := false
			defer func() {
				if !ok {
					failed.Add(1)
				}
			}()
			g := setupGNB(t, a)
			u := newTestUE(t, g, hn, fmt.Sprintf("%010d", i+1))
			u.register()
			u.establish(uint8(1+i%15), "")
			ok = true
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d UEs failed", failed.Load())
	}
	waitFor(t, "all sessions set up at the SMF", func() bool { return len(smf.callsOf("update")) == n })
	if s := a.Stats(); s.PDUSessions != n || s.SMContextsCreated != n || s.RegisteredUEs != n {
		t.Errorf("stats %+v", s)
	}
	for _, up := range smf.callsOf("update") {
		if up.n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP {
			t.Fatalf("update %+v", up)
		}
	}
}

func TestParseBitRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1 Gbps", 1e9, true}, {"2 Gbps", 2e9, true}, {"100 Mbps", 1e8, true}, {"1.5 Kbps", 1500, true},
		{"64 bps", 64, true}, {"4 Tbps", 4e12, true},
		{"1Gbps", 0, false}, {"1 gbps", 0, false}, {" Gbps", 0, false}, {"-1 Mbps", 0, false}, {"1e3 bps", 0, false}, {"", 0, false},
	} {
		got, err := sbi.ParseBitRate(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseBitRate(%q) = %d, %v", c.in, got, err)
		}
	}
	if _, err := ambrFromModel("1 Gbps", "fast"); err == nil {
		t.Error("bad downlink accepted")
	}
}

// TestPDUSessionDuplicateID: an initial request for an ID the AMF still
// holds releases the old SM context before creating the new one.
func TestPDUSessionDuplicateID(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.establish(3, "")
	u.establish(3, "ims")
	rel := smf.callsOf("release")
	if len(rel) != 1 || rel[0].ref != "sm-1" || rel[0].cause != models.Smf_PDUSess_Cause_REL_DUE_TO_DUPLICATE_SESSION_ID {
		t.Errorf("releases %+v", rel)
	}
	waitFor(t, "setup responses", func() bool { return len(smf.callsOf("update")) == 2 })
	if ups := smf.callsOf("update"); ups[0].ref != "sm-1" || ups[1].ref != "sm-2" {
		t.Errorf("updates %+v", ups)
	}
	if s := a.Stats(); s.PDUSessions != 1 || s.SMContextsCreated != 2 || s.SMContextsReleased != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A notification for a context the AMF already replaced (the UE asked for
// the same PDU session ID again first) must not remove the new session.
func TestStaleSMContextStatusNotifyKeepsNewSession(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := registeredUE(t, a, hn)
	u.establish(5, "internet")
	waitFor(t, "session active", func() bool { return len(smf.callsOf("update")) == 1 })
	released := models.Smf_PDUSess_SmContextStatusNotification{
		StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED}}
	ref := smf.callsOf("update")[0].ref
	smf.mu.Lock()
	uri := smf.ctxs[ref].statusURI
	smf.mu.Unlock()
	if err := a.SMContextStatusNotify(context.Background(), uri+"0", &released); err != nil {
		t.Fatal(err)
	}
	// Queued after the notification: still forwarded, so the session lives.
	u.sendSM(5, 0, "", nil, smMsg(5, 3, nas.MsgPDUSessionModificationRequest))
	waitFor(t, "5GSM forwarded to the SMF", func() bool { return len(smf.callsOf("update")) == 2 })
	if err := a.SMContextStatusNotify(context.Background(), uri, &released); err != nil {
		t.Fatal(err)
	}
	// The stale one was ignored; the right one removed the session.
	waitFor(t, "session forgotten", func() bool { return a.Stats().PDUSessions == 0 })
	if n := a.Stats().SMContextsReleased; n != 1 {
		t.Errorf("%d contexts released, want 1", n)
	}
}

// TS 23.502 §4.3.2.2.1 step 2: a request without a DNN gets the slice's
// default DNN from smf-select-data, not merely the first subscribed one;
// with several DNNs and none marked default the AMF refuses with #91.
func TestDefaultDNNFromSubscription(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	hn.mu.Lock()
	hn.dnns, hn.dflDNN = []string{"ims", "internet"}, "internet"
	hn.mu.Unlock()
	u := registeredUE(t, a, hn)
	u.establish(5, "")
	if c := smf.callsOf("create"); len(c) != 1 || c[0].dnn != "internet" {
		t.Fatalf("creates %+v, want the default DNN internet", c)
	}

	hn.mu.Lock()
	hn.dflDNN = ""
	hn.mu.Unlock()
	req := smMsg(6, 2, nas.MsgPDUSessionEstablishmentRequest)
	u.sendSM(6, requestInitial, "", nil, req)
	dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 6)
	if !bytes.Equal(dl.Payload, req) || dl.Cause != nas.CauseDNNNotSupportedOrNotSubscribed {
		t.Errorf("returned payload % x cause %d, want #91", dl.Payload, dl.Cause)
	}
	if c := smf.callsOf("create"); len(c) != 1 {
		t.Errorf("creates %+v", c)
	}
}

// selectorFunc is an SMFSelector.
type selectorFunc func(ctx context.Context, s identity.SNSSAI, dnn string) (sbi.PDUSession, error)

func (f selectorFunc) SelectSMF(ctx context.Context, s identity.SNSSAI, dnn string) (sbi.PDUSession, error) {
	return f(ctx, s, dnn)
}

// With an SMF selector, each PDU session goes to the SMF serving its DNN
// (TS 23.501 §6.3.2) and stays there; a DNN no SMF serves comes back to
// the UE with #91.
func TestSMFSelectedPerSession(t *testing.T) {
	internet, ims := newFakeSMF(), newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMFSelector = selectorFunc(func(ctx context.Context, s identity.SNSSAI, dnn string) (sbi.PDUSession, error) {
		switch dnn {
		case "internet":
			return internet, nil
		case "ims":
			return ims, nil
		}
		return nil, errors.New("no SMF serves " + dnn)
	})
	a, err := New(testConfig(), deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	internet.amf, ims.amf = a, a
	t.Cleanup(func() { a.Close() })
	u := registeredUE(t, a, hn)
	u.establish(1, "internet")
	u.establish(2, "ims")
	waitFor(t, "both sessions active", func() bool {
		return len(internet.callsOf("update")) == 1 && len(ims.callsOf("update")) == 1
	})
	if c := internet.callsOf("create"); len(c) != 1 || c[0].dnn != "internet" {
		t.Errorf("internet SMF created %+v", c)
	}
	if c := ims.callsOf("create"); len(c) != 1 || c[0].dnn != "ims" {
		t.Errorf("ims SMF created %+v", c)
	}
	req := smMsg(3, 8, nas.MsgPDUSessionEstablishmentRequest)
	u.sendSM(3, requestInitial, "nowhere", nil, req)
	dl := u.dlSM(expect[*ngap.DownlinkNASTransport](t, u.recvNGAP()).NASPDU, 3)
	if !bytes.Equal(dl.Payload, req) || dl.Cause != nas.CauseDNNNotSupportedOrNotSubscribed {
		t.Errorf("returned payload % x cause %d", dl.Payload, dl.Cause)
	}
}
