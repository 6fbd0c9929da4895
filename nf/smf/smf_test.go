package smf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

func TestEstablishment(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	// The UE asks for DNS and MTU in the extended PCO.
	pco := []byte{0x80, 0x00, 0x0D, 0x00, 0x00, 0x10, 0x00}
	created, err := h.smf.CreateSMContext(ctx, createReq(testSUPI, 5, "internet", sliceA, estRequest(t, 5, nas.PDUSessionTypeIPv4v6, nas.SSCMode1, pco)))
	if err != nil {
		t.Fatal(err)
	}
	if created.Ref == "" || created.Data.PduSessionId != 5 {
		t.Fatalf("created %+v", created)
	}
	tr := h.amf.next(t)

	// N4: TS 23.502 §4.3.2.2.1 step 10a.
	h.upf.mu.Lock()
	est := h.upf.establishes[0]
	h.upf.mu.Unlock()
	if len(est.CreatePDRs) != 2 || len(est.CreateFARs) != 2 || len(est.CreateQERs) != 1 || len(est.CreateURRs) != 1 || est.CreateBAR == nil {
		t.Fatalf("establishment rules: %+v", est)
	}
	ul, dl := est.CreatePDRs[0], est.CreatePDRs[1]
	if ul.PDI.SourceInterface != pfcp.InterfaceAccess || ul.PDI.FTEID == nil || !ul.PDI.FTEID.Choose || ul.OuterHeaderRemoval == nil ||
		*ul.OuterHeaderRemoval != pfcp.OuterHeaderRemovalGTPUUDPIPv4 || len(ul.PDI.QFIs) != 1 || ul.PDI.QFIs[0] != defaultQFI {
		t.Errorf("UL PDR %+v", ul)
	}
	if dl.PDI.SourceInterface != pfcp.InterfaceCore || dl.PDI.NetworkInstance != "internet" || dl.PDI.UEIP == nil || !dl.PDI.UEIP.Destination {
		t.Errorf("DL PDR %+v", dl)
	}
	farUL, farDL := est.CreateFARs[0], est.CreateFARs[1]
	if farUL.ApplyAction != pfcp.ActionForward || farUL.Forwarding == nil || farUL.Forwarding.Destination != pfcp.InterfaceCore || farUL.Forwarding.NetworkInstance != "internet" {
		t.Errorf("UL FAR %+v", farUL)
	}
	if farDL.ApplyAction != pfcp.ActionBuffer || farDL.Forwarding != nil {
		t.Errorf("DL FAR %+v (want buffering until the gNB tunnel is known)", farDL)
	}
	if q := est.CreateQERs[0]; q.MBR == nil || q.MBR.UL != 1_000_000 || q.MBR.DL != 2_000_000 || q.QFI != defaultQFI {
		t.Errorf("QER %+v (want the subscribed session AMBR in kbit/s)", q)
	}
	if u := est.CreateURRs[0]; u.Method&pfcp.MethodVolume == 0 {
		t.Errorf("URR %+v", u)
	}
	if est.CPFSEID.SEID == 0 || est.PDNType != pfcp.PDNTypeIPv4 {
		t.Errorf("CP F-SEID %+v PDN type %d", est.CPFSEID, est.PDNType)
	}

	// N1: TS 24.501 §8.3.2.
	acc, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept)
	if !ok || tr.supi != testSUPI || tr.psi != 5 {
		t.Fatalf("transfer %+v", tr)
	}
	if acc.PDUSessionID() != 5 || acc.PTI() != 1 || acc.PDUSessionType != nas.PDUSessionTypeIPv4 || acc.SSCMode != nas.SSCMode1 ||
		acc.Cause != nas.CausePDUSessionTypeIPv4OnlyAllowed {
		t.Errorf("accept header/type/cause: %+v", acc)
	}
	if acc.PDUAddress == nil || !netip.MustParsePrefix("10.60.0.0/16").Contains(acc.PDUAddress.IPv4) || acc.PDUAddress.IPv4 != est.CreatePDRs[1].PDI.UEIP.IPv4 {
		t.Errorf("PDU address %+v", acc.PDUAddress)
	}
	if len(acc.QoSRules) != 1 || !acc.QoSRules[0].Default || acc.QoSRules[0].QFI != defaultQFI || len(acc.QoSRules[0].Filters) != 1 || !acc.QoSRules[0].Filters[0].MatchAll {
		t.Errorf("QoS rules %+v", acc.QoSRules)
	}
	if acc.SessionAMBR.UL != 1e9 || acc.SessionAMBR.DL != 2e9 {
		t.Errorf("session AMBR %+v", acc.SessionAMBR)
	}
	if acc.SNSSAI == nil || *acc.SNSSAI != sliceA || acc.DNN != "internet" {
		t.Errorf("S-NSSAI %v DNN %q", acc.SNSSAI, acc.DNN)
	}
	if len(acc.QoSFlowDescriptions) != 1 || acc.QoSFlowDescriptions[0].FiveQI != 9 || acc.QoSFlowDescriptions[0].QFI != defaultQFI {
		t.Errorf("QoS flow descriptions %+v", acc.QoSFlowDescriptions)
	}
	wantPCO := []byte{0x80, 0x00, 0x0D, 4, 8, 8, 8, 8, 0x00, 0x10, 2, 0x05, 0x78}
	if string(acc.ExtendedPCO) != string(wantPCO) {
		t.Errorf("ePCO % x, want % x", acc.ExtendedPCO, wantPCO)
	}

	// N2: TS 38.413 §9.3.4.1.
	if tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ {
		t.Fatalf("N2 type %q", tr.n2Type)
	}
	st, err := ngap.DecodeSetupRequestTransfer(tr.n2)
	if err != nil {
		t.Fatal(err)
	}
	if st.ULTunnel.Addr != upfN3 || st.ULTunnel.TEID == 0 || st.PDUSessionType != ngap.PDUSessionTypeIPv4 ||
		st.SessionAMBR == nil || st.SessionAMBR.UL != 1e9 || st.SessionAMBR.DL != 2e9 ||
		len(st.QoSFlows) != 1 || st.QoSFlows[0].FiveQI != 9 || st.QoSFlows[0].PriorityLevelARP != 8 || st.QoSFlows[0].QFI != defaultQFI {
		t.Errorf("setup request transfer %+v", st)
	}

	// Step 14-16a: the gNB's tunnel turns the DL FAR to forwarding.
	up, err := h.smf.UpdateSMContext(ctx, created.Ref, setupResponse(t, 5))
	if err != nil {
		t.Fatal(err)
	}
	if up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_ACTIVATED {
		t.Errorf("upCnxState %q", up.Data.UpCnxState)
	}
	mod := h.upf.lastMod(t)
	if len(mod.UpdateFARs) != 1 {
		t.Fatalf("modification %+v", mod)
	}
	f := mod.UpdateFARs[0]
	if f.ID != farDownlink || f.ApplyAction == nil || *f.ApplyAction != pfcp.ActionForward || f.Forwarding == nil ||
		f.Forwarding.Destination != pfcp.InterfaceAccess || f.Forwarding.OuterHeaderCreation == nil ||
		f.Forwarding.OuterHeaderCreation.IPv4 != gnbN3 || f.Forwarding.OuterHeaderCreation.TEID != 0xA005 ||
		f.Forwarding.OuterHeaderCreation.Description != pfcp.OuterHeaderCreationGTPUUDPIPv4 {
		t.Errorf("DL FAR update %+v", f)
	}
	s := h.smf.Stats()
	if s.Contexts != 1 || s.IPs["internet"] != 1 || s.N4Sessions != 1 || s.Policies != 1 || s.Established != 1 {
		t.Errorf("stats %+v", s)
	}
	// A second setup response is out of place.
	if _, err := h.smf.UpdateSMContext(ctx, created.Ref, setupResponse(t, 5)); sbi.CauseOf(err) != sbi.CauseN2SMError {
		t.Errorf("repeated setup response: %v", err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, "nope", setupResponse(t, 5)); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("unknown ref: %v", err)
	}
}

func TestEstablishmentRejects(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg, pcf.Config{})
	ctx := context.Background()
	// Fill the one-address pool of "tiny".
	h.establish(t, "imsi-208930000000002", 1, "tiny")

	cases := []struct {
		name  string
		req   *sbi.SMContextCreate
		cause nas.Cause5GSM
	}{
		{name: "unknown DNN", req: createReq(testSUPI, 1, "nowhere", sliceA, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseMissingOrUnknownDNN},
		{name: "DNN not served in the slice", req: createReq(testSUPI, 1, "internet", sliceB, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseMissingOrUnknownDNNInSlice},
		{name: "DNN subscribed in another slice", req: createReq(testSUPI, 1, "enterprise", sliceA, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseMissingOrUnknownDNNInSlice},
		{name: "unknown subscriber", req: createReq("imsi-208930000009999", 1, "internet", sliceA, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseUserAuthFailed},
		{name: "Ethernet", req: createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeEthernet, 0, nil)), cause: nas.CauseUnknownPDUSessionType},
		{name: "IPv6", req: createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv6, 0, nil)), cause: nas.CausePDUSessionTypeIPv4OnlyAllowed},
		{name: "SSC mode 2", req: createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, 0, nas.SSCMode2, nil)), cause: nas.CauseNotSupportedSSCMode},
		{name: "pool exhausted", req: createReq(testSUPI, 1, "tiny", sliceA, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseInsufficientResources5GSM},
		{name: "PSI mismatch", req: createReq(testSUPI, 2, "internet", sliceA, estRequest(t, 1, 0, 0, nil)), cause: nas.CauseInvalidPDUSessionIdentity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.smf.CreateSMContext(ctx, tc.req)
			var se *sbi.SMContextError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want *sbi.SMContextError", err)
			}
			m, derr := nas.DecodeSM(se.N1SmMsg)
			if derr != nil {
				t.Fatal(derr)
			}
			rej, ok := m.(*nas.PDUSessionEstablishmentReject)
			if !ok || rej.Cause != tc.cause || rej.PTI() != 1 {
				t.Fatalf("N1 %+v, want a reject with %s", m, tc.cause)
			}
			if tc.cause == nas.CauseNotSupportedSSCMode && rej.AllowedSSCModes != 1 {
				t.Errorf("allowed SSC modes %b", rej.AllowedSSCModes)
			}
			if se.Problem == nil || se.Problem.Status < 400 {
				t.Errorf("problem %+v", se.Problem)
			}
		})
	}
	h.amf.noTransfer(t)
	st := h.smf.Stats()
	if st.Contexts != 1 || st.Policies != 1 || st.IPs["tiny"] != 1 || st.IPs["internet"] != 0 || h.pcf.Stats().Policies != 1 {
		t.Errorf("rejects left state behind: %+v", st)
	}
	// Malformed input is a plain problem, not a reject.
	bad := createReq(testSUPI, 1, "internet", sliceA, []byte{0x2e, 0x01})
	if _, err := h.smf.CreateSMContext(ctx, bad); sbi.CauseOf(err) != sbi.CauseN1SMError {
		t.Errorf("malformed N1: %v", err)
	}
}

func TestTwoDNNs(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ref1, acc1, _ := h.establish(t, testSUPI, 1, "internet")
	ref2, acc2, tr2 := h.establish(t, testSUPI, 2, "ims")
	if !netip.MustParsePrefix("10.60.0.0/16").Contains(acc1.PDUAddress.IPv4) || !netip.MustParsePrefix("10.61.0.0/16").Contains(acc2.PDUAddress.IPv4) {
		t.Errorf("addresses %v %v", acc1.PDUAddress.IPv4, acc2.PDUAddress.IPv4)
	}
	if acc2.QoSFlowDescriptions[0].FiveQI != 5 || acc2.DNN != "ims" {
		t.Errorf("ims accept %+v", acc2)
	}
	if st, _ := ngap.DecodeSetupRequestTransfer(tr2.n2); st == nil || st.QoSFlows[0].FiveQI != 5 {
		t.Errorf("ims setup transfer %+v", st)
	}
	s := h.smf.Stats()
	if s.Contexts != 2 || s.IPs["internet"] != 1 || s.IPs["ims"] != 1 || s.N4Sessions != 2 {
		t.Errorf("stats %+v", s)
	}
	ctx := context.Background()
	if err := h.smf.ReleaseSMContext(ctx, ref1, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	if err := h.smf.ReleaseSMContext(ctx, ref2, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	h.empty(t)
}

func TestPCFInitiatedModification(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")

	err := h.pcf.UpdatePolicy(ctx, testSUPI, 1, pcf.Change{SessionAMBR: &models.Ambr{Uplink: "100 Mbps", Downlink: "200 Mbps"}, FiveQI: 8})
	if err != nil {
		t.Fatal(err)
	}
	tr := h.amf.next(t)
	cmd, ok := tr.n1.(*nas.PDUSessionModificationCommand)
	if !ok || cmd.PTI() != 0 {
		t.Fatalf("N1 %+v, want a network-requested modification command", tr.n1)
	}
	if cmd.SessionAMBR == nil || cmd.SessionAMBR.UL != 100e6 || cmd.SessionAMBR.DL != 200e6 ||
		len(cmd.QoSFlowDescriptions) != 1 || cmd.QoSFlowDescriptions[0].FiveQI != 8 || cmd.QoSFlowDescriptions[0].Operation != nas.QoSFlowModify {
		t.Errorf("command %+v", cmd)
	}
	if tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
		t.Fatalf("N2 type %q", tr.n2Type)
	}
	mt, err := ngap.DecodeModifyRequestTransfer(tr.n2)
	if err != nil || mt.SessionAMBR == nil || mt.SessionAMBR.DL != 200e6 || len(mt.QoSFlowsAddOrModify) != 1 || mt.QoSFlowsAddOrModify[0].FiveQI != 8 {
		t.Errorf("modify request transfer %+v %v", mt, err)
	}
	mod := h.upf.lastMod(t)
	if len(mod.UpdateQERs) != 1 || mod.UpdateQERs[0].MBR == nil || mod.UpdateQERs[0].MBR.UL != 100_000 || mod.UpdateQERs[0].MBR.DL != 200_000 {
		t.Errorf("QER update %+v", mod)
	}
	// A second change while the first runs waits for it.
	if err := h.pcf.UpdatePolicy(ctx, testSUPI, 1, pcf.Change{FiveQI: 7}); err != nil {
		t.Fatal(err)
	}
	h.amf.noTransfer(t)
	if _, err := h.smf.UpdateSMContext(ctx, ref, modifyResponse(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionModificationComplete{SMHeader: nas.SMHeader{SessionID: 1}})); err != nil {
		t.Fatal(err)
	}
	tr = h.amf.next(t)
	if cmd, ok := tr.n1.(*nas.PDUSessionModificationCommand); !ok || cmd.QoSFlowDescriptions[0].FiveQI != 7 {
		t.Fatalf("pending change: %+v", tr.n1)
	}
	// The UE rejects this one: the procedure is aborted, the session stays.
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionModificationCommandReject{
		SMHeader: nas.SMHeader{SessionID: 1}, Cause: nas.CauseQoSNotAccepted})); err != nil {
		t.Fatal(err)
	}
	if s := h.smf.Stats(); s.Modified != 1 || s.Contexts != 1 {
		t.Errorf("stats %+v", s)
	}
	// UE-requested modification: answered inline with a command (PTI echoed).
	up, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionModificationRequest{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 9}}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nas.DecodeSM(up.N1SmMsg)
	if err != nil || m.PTI() != 9 || m.MessageType() != nas.MsgPDUSessionModificationCommand || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_REQ {
		t.Fatalf("UE-requested modification answer %+v %v", m, err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, modifyResponse(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionModificationComplete{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 9}})); err != nil {
		t.Fatal(err)
	}
	if s := h.smf.Stats(); s.Modified != 2 {
		t.Errorf("modified %d", s.Modified)
	}
}

func TestUERequestedRelease(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 3, "internet")

	up, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: 3, TransactionID: 4}}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nas.DecodeSM(up.N1SmMsg)
	if err != nil {
		t.Fatal(err)
	}
	cmd, ok := m.(*nas.PDUSessionReleaseCommand)
	if !ok || cmd.PTI() != 4 || cmd.Cause != nas.CauseRegularDeactivation {
		t.Fatalf("answer %+v", m)
	}
	if up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD {
		t.Fatalf("N2 type %q", up.Data.N2SmInfoType)
	}
	if rc, err := ngap.DecodeReleaseCommandTransfer(up.N2SmInfo); err != nil || rc.Cause.Group != ngap.CauseNAS {
		t.Errorf("release command transfer %+v %v", rc, err)
	}
	// TS 23.502 §4.3.4.2 step 2: N4 and policy go at once; the address
	// stays until the UE confirms.
	h.settle(t)
	if s := h.smf.Stats(); s.N4Sessions != 0 || s.Policies != 0 || s.IPs["internet"] != 1 || h.upf.live() != 0 {
		t.Errorf("after the command: %+v", s)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, releaseResponse(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 3, TransactionID: 4}})); err != nil {
		t.Fatal(err)
	}
	if n := h.amf.note(t); n.supi != testSUPI || n.psi != 3 {
		t.Errorf("status notify %+v", n)
	}
	h.amf.noTransfer(t)
	h.empty(t)
	if _, err := h.smf.UpdateSMContext(ctx, ref, releaseResponse(t)); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("late update: %v", err)
	}
}

func TestNetworkRequestedRelease(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	ref2, _, _ := h.establish(t, testSUPI, 2, "ims")

	if err := h.smf.Release(ctx, testSUPI, 1); err != nil {
		t.Fatal(err)
	}
	tr := h.amf.next(t)
	if cmd, ok := tr.n1.(*nas.PDUSessionReleaseCommand); !ok || cmd.PTI() != 0 || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD {
		t.Fatalf("transfer %+v", tr)
	}
	// Complete first from the UE, then the N2 answer.
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 1}})); err != nil {
		t.Fatal(err)
	}
	if s := h.smf.Stats(); s.Contexts != 2 {
		t.Errorf("released before the N2 answer: %+v", s)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, releaseResponse(t)); err != nil {
		t.Fatal(err)
	}
	if n := h.amf.note(t); n.psi != 1 {
		t.Errorf("notify %+v", n)
	}

	// PCF-initiated termination of the other session.
	if err := h.pcf.Terminate(ctx, testSUPI, 2, ""); err != nil {
		t.Fatal(err)
	}
	tr = h.amf.next(t)
	if _, ok := tr.n1.(*nas.PDUSessionReleaseCommand); !ok || tr.psi != 2 {
		t.Fatalf("transfer %+v", tr)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref2, releaseResponse(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref2, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 2}})); err != nil {
		t.Fatal(err)
	}
	if n := h.amf.note(t); n.psi != 2 {
		t.Errorf("notify %+v", n)
	}
	h.empty(t)
	if err := h.smf.Release(ctx, testSUPI, 1); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("release of a gone session: %v", err)
	}
}

func TestDeregistrationRelease(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref1, _, _ := h.establish(t, testSUPI, 1, "internet")
	ref2, _, _ := h.establish(t, testSUPI, 2, "ims")
	for _, ref := range []string{ref1, ref2} {
		if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
			t.Fatal(err)
		}
	}
	h.settle(t)
	h.upf.mu.Lock()
	deletes := len(h.upf.deletes)
	h.upf.mu.Unlock()
	if deletes != 2 {
		t.Errorf("%d PFCP deletions", deletes)
	}
	if s := h.smf.Stats(); s.UsageReports != 2 {
		t.Errorf("usage reports of the deletions: %d", s.UsageReports)
	}
	h.empty(t)
	select {
	case n := <-h.amf.notes:
		t.Errorf("status notify %+v for an AMF-initiated release", n)
	case <-time.After(20 * time.Millisecond):
	}
	if err := h.smf.ReleaseSMContext(ctx, ref1, &sbi.SMContextRelease{}); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("second release: %v", err)
	}
}

// TestCycles runs 1,000 establish/release cycles with an AMF that answers
// from inside N1N2MessageTransfer (re-entering the SMF) and checks that
// nothing is left.
func TestCycles(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.amf.auto = true
	ctx := context.Background()
	n := 1000
	if testing.Short() {
		n = 100
	}
	for i := 0; i < n; i++ {
		psi := uint8(i%15 + 1)
		ref, _, _ := h.establish(t, testSUPI, psi, "tiny")
		switch i % 3 {
		case 0: // UE-requested
			up, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: psi, TransactionID: 1}}))
			if err != nil {
				t.Fatal(err)
			}
			if up.N2SmInfo == nil {
				t.Fatal("no N2 release command")
			}
			if _, err := h.smf.UpdateSMContext(ctx, ref, releaseResponse(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: psi, TransactionID: 1}})); err != nil {
				t.Fatal(err)
			}
			h.amf.note(t)
		case 1: // network-requested; the fake AMF completes it
			if err := h.smf.Release(ctx, testSUPI, psi); err != nil {
				t.Fatal(err)
			}
			h.amf.next(t)
			h.amf.note(t)
		case 2: // AMF-side
			if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
				t.Fatal(err)
			}
		}
		// The tiny pool's one address is back once the UPF has deleted
		// the session.
		h.settle(t)
	}
	h.empty(t)
	if s := h.smf.Stats(); s.Established != uint64(n) || s.Released != uint64(n) {
		t.Errorf("stats %+v", s)
	}
}

func TestReleaseTimerT3592(t *testing.T) {
	cfg := testConfig()
	cfg.Timers.T3592 = 5 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	_, _, _ = h.establish(t, testSUPI, 1, "internet")
	if err := h.smf.Release(context.Background(), testSUPI, 1); err != nil {
		t.Fatal(err)
	}
	first := h.amf.next(t)
	if first.n2 == nil {
		t.Fatal("first release command without N2")
	}
	// TS 24.501 §6.3.3.5: four retransmissions (N1 only), then local release.
	for i := 0; i < DefaultMaxRetransmissions; i++ {
		tr := h.amf.next(t)
		if _, ok := tr.n1.(*nas.PDUSessionReleaseCommand); !ok || tr.n2 != nil {
			t.Fatalf("retransmission %d: %+v", i, tr)
		}
	}
	h.amf.note(t)
	h.amf.noTransfer(t)
	h.empty(t)
}

func TestModificationTimerT3591(t *testing.T) {
	cfg := testConfig()
	cfg.Timers.T3591 = 5 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	if err := h.pcf.UpdatePolicy(context.Background(), testSUPI, 1, pcf.Change{FiveQI: 6}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= DefaultMaxRetransmissions; i++ {
		if _, ok := h.amf.next(t).n1.(*nas.PDUSessionModificationCommand); !ok {
			t.Fatal("want a modification command")
		}
	}
	h.amf.noTransfer(t)
	// Aborted: the session is active again and takes a UE release.
	if _, err := h.smf.UpdateSMContext(context.Background(), ref, n1Update(t, &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 2}})); err != nil {
		t.Fatal(err)
	}
}

func TestN4FailureRejectsAfterCreate(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.upf.mu.Lock()
	h.upf.reject = true
	h.upf.mu.Unlock()
	created, err := h.smf.CreateSMContext(context.Background(), createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, 0, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	tr := h.amf.next(t)
	if rej, ok := tr.n1.(*nas.PDUSessionEstablishmentReject); !ok || rej.Cause != nas.CauseInsufficientResources5GSM || tr.n2 != nil {
		t.Fatalf("transfer %+v", tr)
	}
	h.amf.note(t)
	h.empty(t)
	if s := h.smf.Stats(); s.Rejected != 1 || s.N4Failures != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestAMFCannotDeliverAccept(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.amf.fail = true
	created, err := h.smf.CreateSMContext(context.Background(), createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, 0, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	h.amf.next(t)
	h.amf.note(t)
	h.empty(t)
}

func TestRANSetupFailure(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	created, err := h.smf.CreateSMContext(ctx, createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, 0, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.next(t)
	b, err := ngap.EncodeSetupUnsuccessfulTransfer(&ngap.PDUSessionResourceSetupUnsuccessfulTransfer{Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: 0}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := h.smf.UpdateSMContext(ctx, created.Ref, &sbi.SMContextUpdate{
		Data: &models.Smf_PDUSess_SmContextUpdateData{N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_FAIL}, N2SmInfo: b})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := nas.DecodeSM(up.N1SmMsg); err != nil || m.MessageType() != nas.MsgPDUSessionEstablishmentReject {
		t.Fatalf("answer %v %v", m, err)
	}
	h.amf.note(t)
	h.empty(t)
}

func TestANReleaseAndServiceRequest(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, tr := h.establish(t, testSUPI, 1, "internet")
	up, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}})
	if err != nil || up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_DEACTIVATED {
		t.Fatalf("deactivate: %+v %v", up, err)
	}
	f := h.upf.lastMod(t).UpdateFARs[0]
	if f.ApplyAction == nil || *f.ApplyAction != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("DL FAR on AN release %+v", f)
	}
	// The UPF reports downlink data: acknowledged, counted, and the AMF is
	// asked to reach the UE with the N2 content of the user plane (TS
	// 23.502 §4.2.3.3 step 3a), the ARP for the paging priority and where
	// to report a UE that does not answer.
	seid := h.upf.establishes[0].CPFSEID.SEID
	rsp := h.smf.HandleSessionReport(ctx, seid, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR, DownlinkDataReport: &pfcp.DownlinkDataReport{PDRIDs: []uint16{pdrDownlink}}})
	if rsp.Cause != pfcp.CauseRequestAccepted || h.smf.Stats().DLDataReports != 1 {
		t.Errorf("DL data report: %+v %+v", rsp, h.smf.Stats())
	}
	dl := h.amf.next(t)
	if dl.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ || dl.n1 != nil || dl.arp == nil || dl.arp.PriorityLevel != 8 ||
		dl.failureURI == "" {
		t.Fatalf("transfer for downlink data %+v", dl)
	}
	// A second report in the same episode starts nothing new.
	h.smf.HandleSessionReport(ctx, seid, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR})
	h.amf.noTransfer(t)
	if rsp := h.smf.HandleSessionReport(ctx, 999999, &pfcp.SessionReportRequest{ReportType: pfcp.ReportUSAR}); rsp.Cause != pfcp.CauseSessionContextNotFound {
		t.Errorf("unknown SEID: %+v", rsp)
	}
	// Service request: the SMF hands the same tunnel to the new gNB context.
	up, err = h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}})
	if err != nil || up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_ACTIVATING || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ {
		t.Fatalf("activate: %+v %v", up, err)
	}
	st1, _ := ngap.DecodeSetupRequestTransfer(tr.n2)
	st2, err := ngap.DecodeSetupRequestTransfer(up.N2SmInfo)
	if err != nil || st2.ULTunnel != st1.ULTunnel {
		t.Errorf("reactivation tunnel %+v vs %+v (%v)", st2, st1, err)
	}
	up, err = h.smf.UpdateSMContext(ctx, ref, setupResponse(t, 1))
	if err != nil || up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_ACTIVATED {
		t.Fatalf("setup response after service request: %+v %v", up, err)
	}
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionForward {
		t.Errorf("DL FAR after service request %v", a)
	}
	if s := h.smf.Stats(); s.Deactivations != 1 || s.Activations != 1 {
		t.Errorf("deactivations %d, activations %d, want 1 each", s.Deactivations, s.Activations)
	}
	// A release while idle has no N2 part.
	if _, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}); err != nil {
		t.Fatal(err)
	}
	up, err = h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 3}}))
	if err != nil || up.N2SmInfo != nil || up.N1SmMsg == nil {
		t.Fatalf("idle release: %+v %v", up, err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 3}})); err != nil {
		t.Fatal(err)
	}
	h.amf.note(t)
	h.empty(t)
}

func TestDuplicatePDUSessionID(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ref1, acc1, _ := h.establish(t, testSUPI, 1, "internet")
	ref2, acc2, _ := h.establish(t, testSUPI, 1, "internet")
	if ref1 == ref2 || acc1.PDUAddress.IPv4 == acc2.PDUAddress.IPv4 {
		t.Errorf("refs %s %s addresses %v %v", ref1, ref2, acc1.PDUAddress.IPv4, acc2.PDUAddress.IPv4)
	}
	h.settle(t)
	if s := h.smf.Stats(); s.Contexts != 1 || s.IPs["internet"] != 1 || s.N4Sessions != 1 || s.Policies != 1 {
		t.Errorf("stats %+v", s)
	}
	if _, err := h.smf.UpdateSMContext(context.Background(), ref1, releaseResponse(t)); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("old ref: %v", err)
	}
}

func TestParallelUEs(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.amf.auto = true
	ctx := context.Background()
	const ues = 20
	errs := make(chan error, ues)
	for i := 0; i < ues; i++ {
		supi := "imsi-2089300000001" + string(rune('0'+i/10)) + string(rune('0'+i%10))
		go func() {
			for psi := uint8(1); psi <= 2; psi++ {
				dnn := []string{"", "internet", "ims"}[psi]
				created, err := h.smf.CreateSMContext(ctx, createReq(supi, psi, dnn, sliceA, estRequest(t, psi, 0, 0, nil)))
				if err != nil {
					errs <- err
					return
				}
				h.amf.setRef(supi, psi, created.Ref)
			}
			errs <- nil
		}()
	}
	for i := 0; i < ues; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2*ues; i++ {
		h.amf.next(t)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.smf.Stats().Established != 2*ues {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", h.smf.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	if s := h.smf.Stats(); s.IPs["internet"] != ues || s.IPs["ims"] != ues {
		t.Errorf("stats %+v", s)
	}
}

func TestStartNeedsUserPlane(t *testing.T) {
	amf := newFakeAMF(t)
	p, _ := pcf.New(pcf.Config{}, nil)
	s, err := New(testConfig(), Deps{AMF: amf, AMFStatus: amf, SDM: &fakeSDM{}, PCF: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start without an N4 client succeeded")
	}
	if err := s.SetUserPlane("nope", newFakeUPF()); err == nil {
		t.Error("SetUserPlane of an unknown UPF succeeded")
	}
	if _, err := New(testConfig(), Deps{AMF: amf}, nil); err == nil {
		t.Error("New without deps succeeded")
	}
}

// TestPagingFailureDiscardsThenBuffersAgain: the AMF could not reach the
// UE (TS 29.518 §5.2.2.3.2): the UPF discards the buffer and drops the
// downlink for the backoff, then buffers (and so reports) again.
func TestPagingFailureDiscardsThenBuffersAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Mobility.PagingBackoff = 50 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	if _, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}); err != nil {
		t.Fatal(err)
	}
	seid := h.upf.establishes[0].CPFSEID.SEID
	h.smf.HandleSessionReport(ctx, seid, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR})
	tr := h.amf.next(t)
	if err := h.smf.N1N2TransferFailureNotify(ctx, "urn:nowhere", &models.Amf_Comm_N1N2MsgTxfrFailureNotification{}); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("unknown URI: %v", err)
	}
	mods := len(h.upf.mods)
	if err := h.smf.N1N2TransferFailureNotify(ctx, tr.failureURI, &models.Amf_Comm_N1N2MsgTxfrFailureNotification{
		Cause: models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING}); err != nil {
		t.Fatal(err)
	}
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; len(h.upf.mods) != mods+1 || a == nil || *a != pfcp.ActionDrop {
		t.Fatalf("DL FAR after the paging failure %v, want DROP", a)
	}
	if s := h.smf.Stats(); s.PagingFailures != 1 {
		t.Errorf("stats %+v", s)
	}
	waitForCond(t, "buffering again", func() bool {
		h.upf.mu.Lock()
		defer h.upf.mu.Unlock()
		return len(h.upf.mods) == mods+2
	})
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("DL FAR after the backoff %v, want BUFF|NOCP", a)
	}
	// The next report pages again.
	h.smf.HandleSessionReport(ctx, seid, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR})
	if tr := h.amf.next(t); tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ {
		t.Errorf("second transfer %+v", tr)
	}
}

// TestUnreachableUEDiscards: an AMF that refuses the transfer at once (the
// UE is not reachable, TS 24.501 §5.3.7) is a paging failure too.
func TestUnreachableUEDiscards(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	if _, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}); err != nil {
		t.Fatal(err)
	}
	h.amf.fail = true
	h.smf.HandleSessionReport(ctx, h.upf.establishes[0].CPFSEID.SEID, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR})
	h.amf.next(t)
	waitForCond(t, "the drop", func() bool { return h.smf.Stats().PagingFailures == 1 })
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionDrop {
		t.Errorf("DL FAR %v, want DROP", a)
	}
	// The UE comes back: activation turns the downlink to the new tunnel.
	if _, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(ctx, ref, setupResponse(t, 1)); err != nil {
		t.Fatal(err)
	}
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionForward {
		t.Errorf("DL FAR %v, want FORW", a)
	}
}

func waitForCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// establishAt establishes (supi, psi) with its downlink tunnel at gNB
// address gnb.
func establishAt(t *testing.T, h *harness, supi string, psi uint8, gnb netip.Addr) string {
	t.Helper()
	h.amf.clearRef(supi, psi)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(supi, psi, "internet", sliceA, estRequest(t, psi, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(supi, psi, created.Ref)
	h.amf.next(t)
	b, err := ngap.EncodeSetupResponseTransfer(&ngap.PDUSessionResourceSetupResponseTransfer{
		DLTunnel: ngap.GTPTunnel{Addr: gnb, TEID: 0xA000 + uint32(psi)}, QoSFlows: []uint8{defaultQFI}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.smf.UpdateSMContext(context.Background(), created.Ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP,
	}, N2SmInfo: b}); err != nil {
		t.Fatal(err)
	}
	return created.Ref
}

func (f *fakeUPF) modCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mods)
}

// wantUPFailure checks the deactivation of one session's user plane for a
// broken N3 tunnel (TS 23.527 §5): the AMF is asked to release the AN
// resources (TS 23.502 §4.3.7) and the UPF to buffer and notify.
func wantUPFailure(t *testing.T, h *harness, supi string, psi uint8) {
	t.Helper()
	tr := h.amf.next(t)
	if tr.supi != supi || tr.psi != psi || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD || tr.n1 != nil {
		t.Fatalf("transfer %s/%d %s, want the release command of %s/%d", tr.supi, tr.psi, tr.n2Type, supi, psi)
	}
	f := h.upf.lastMod(t).UpdateFARs
	if len(f) != 1 || f[0].ID != farDownlink || f[0].ApplyAction == nil || *f[0].ApplyAction != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("DL FAR update %+v, want buffer and notify", f)
	}
}

// An Error Indication Report deactivates the session whose downlink tunnel
// it names and no other; one about a tunnel the session no longer uses is
// ignored.
func TestErrorIndicationReportDeactivates(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	h.establish(t, testSUPI, 1, "internet")
	h.establish(t, testSUPI, 2, "internet")
	seid1, seid2 := h.upf.establishes[0].CPFSEID.SEID, h.upf.establishes[1].CPFSEID.SEID
	mods := h.upf.modCount()

	eir := func(teid uint32) *pfcp.SessionReportRequest {
		return &pfcp.SessionReportRequest{ReportType: pfcp.ReportERIR,
			ErrorIndicationReport: &pfcp.ErrorIndicationReport{RemoteFTEIDs: []pfcp.FTEID{{TEID: teid, IPv4: gnbN3}}}}
	}
	if rsp := h.smf.HandleSessionReport(ctx, seid1, eir(0xA001)); rsp.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("report: %+v", rsp)
	}
	wantUPFailure(t, h, testSUPI, 1)
	// Session 2 is on the same gNB with another TEID: a report naming a
	// TEID it does not use changes nothing; the same UE's executor runs
	// it before the next report, which is for session 2's own tunnel.
	h.smf.HandleSessionReport(ctx, seid2, eir(0xA0FF))
	h.smf.HandleSessionReport(ctx, seid2, eir(0xA002))
	wantUPFailure(t, h, testSUPI, 2)
	if n := h.upf.modCount() - mods; n != 2 {
		t.Errorf("%d PFCP modifications, want one per deactivated session", n)
	}
	// A repeated report for a deactivated session does nothing more.
	h.smf.HandleSessionReport(ctx, seid1, eir(0xA001))
	h.amf.noTransfer(t)
	if s := h.smf.Stats(); s.ErrorIndicationReports != 4 || s.UPFailureDeactivations != 2 || s.Deactivations != 2 {
		t.Errorf("stats %+v", s)
	}
}

// A User Plane Path Failure Report deactivates exactly the sessions whose
// downlink tunnel ends at the failed gNB, of any UE; a recovery report
// deactivates nothing.
func TestNodeReportPathFailureDeactivates(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	other := netip.MustParseAddr("10.100.3.77")
	const supi2 = "imsi-208930000000002"
	establishAt(t, h, testSUPI, 1, gnbN3)
	establishAt(t, h, testSUPI, 2, other)
	establishAt(t, h, supi2, 1, gnbN3)
	mods := h.upf.modCount()

	rsp := h.smf.HandleNodeReport(ctx, &pfcp.NodeReportRequest{NodeID: pfcp.NodeID{IP: upfN3}, ReportType: pfcp.NodeReportUPFR,
		PathFailurePeers: []netip.Addr{gnbN3}})
	if rsp.Cause != pfcp.CauseRequestAccepted || !rsp.NodeID.IP.IsValid() {
		t.Fatalf("node report: %+v", rsp)
	}
	got := map[string]bool{}
	for range 2 {
		tr := h.amf.next(t)
		if tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD {
			t.Fatalf("transfer %+v", tr)
		}
		got[fmt.Sprintf("%s/%d", tr.supi, tr.psi)] = true
	}
	if !got[testSUPI+"/1"] || !got[supi2+"/1"] {
		t.Errorf("deactivated %v, want the sessions at %s", got, gnbN3)
	}
	h.amf.noTransfer(t) // not the session at the other gNB
	if n := h.upf.modCount() - mods; n != 2 {
		t.Errorf("%d PFCP modifications, want 2", n)
	}
	h.smf.HandleNodeReport(ctx, &pfcp.NodeReportRequest{NodeID: pfcp.NodeID{IP: upfN3}, ReportType: pfcp.NodeReportUPRR,
		PathRecoveryPeers: []netip.Addr{other}})
	h.amf.noTransfer(t)
	if s := h.smf.Stats(); s.NodeReports != 2 || s.UPFailureDeactivations != 2 {
		t.Errorf("stats %+v", s)
	}
}
