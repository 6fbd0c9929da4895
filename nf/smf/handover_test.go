package smf

import (
	"context"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

var (
	targetN3  = ngap.GTPTunnel{Addr: gnbN3.Next(), TEID: 0xB001}
	targetFwd = ngap.GTPTunnel{Addr: gnbN3.Next(), TEID: 0xB0F1}
)

func n2Update(t testing.TB, typ models.Smf_PDUSess_N2SmInfoType, ho models.Smf_PDUSess_HoState, b []byte) *sbi.SMContextUpdate {
	t.Helper()
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: typ, HoState: ho,
	}, N2SmInfo: b}
}

func hoStateUpdate(ho models.Smf_PDUSess_HoState) *sbi.SMContextUpdate {
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{HoState: ho}}
}

func mustEncode[T any](t testing.TB, enc func(*T) ([]byte, error), v *T) []byte {
	t.Helper()
	b, err := enc(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPathSwitch: TS 23.502 §4.9.1.2.2 steps 2-4: the downlink FAR moves
// to the target's tunnel with SNDEM; the answer carries the UL tunnel.
func TestPathSwitch(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, tr := h.establish(t, testSUPI, 1, "internet")
	up, err := h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ, "",
		mustEncode(t, ngap.EncodePathSwitchRequestTransfer, &ngap.PathSwitchRequestTransfer{DLTunnel: targetN3, QoSFlows: []uint8{defaultQFI}})))
	if err != nil || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ_ACK {
		t.Fatalf("path switch: %+v %v", up, err)
	}
	ack, err := ngap.DecodePathSwitchRequestAcknowledgeTransfer(up.N2SmInfo)
	st, _ := ngap.DecodeSetupRequestTransfer(tr.n2)
	if err != nil || ack.ULTunnel == nil || *ack.ULTunnel != st.ULTunnel {
		t.Errorf("ack transfer %+v %v, want the session's UL tunnel %+v", ack, err, st.ULTunnel)
	}
	far := h.upf.lastMod(t).UpdateFARs[0]
	if far.Forwarding == nil || !far.Forwarding.SendEndMarker || far.Forwarding.OuterHeaderCreation == nil ||
		far.Forwarding.OuterHeaderCreation.TEID != targetN3.TEID || far.Forwarding.OuterHeaderCreation.IPv4 != targetN3.Addr {
		t.Errorf("DL FAR update %+v, want the target's tunnel with SNDEM", far.Forwarding)
	}
	// A setup failure at the target deactivates the user plane.
	if _, err := h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_SETUP_FAIL, "",
		mustEncode(t, ngap.EncodePathSwitchRequestSetupFailedTransfer, &ngap.PathSwitchRequestSetupFailedTransfer{
			Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkRadioResourcesNotAvailable}}))); err != nil {
		t.Fatal(err)
	}
	if a := h.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("after setup failure the DL FAR is %v, want BUFF|NOCP", a)
	}
	if s := h.smf.Stats(); s.PathSwitches != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestPathSwitchOvertakesSetupResponse: the UE moved right after its
// session was set up, and the target's Path Switch Request reached the SMF
// before the source's PDU Session Resource Setup Response (two
// associations, read apart). The switch completes the establishment at the
// target, with no End Marker (there was no downlink path), and the late
// response changes nothing.
func TestPathSwitchOvertakesSetupResponse(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	created, err := h.smf.CreateSMContext(ctx, createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	h.amf.next(t) // the Accept, with the setup request for the source
	up, err := h.smf.UpdateSMContext(ctx, created.Ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ, "",
		mustEncode(t, ngap.EncodePathSwitchRequestTransfer, &ngap.PathSwitchRequestTransfer{DLTunnel: targetN3, QoSFlows: []uint8{defaultQFI}})))
	if err != nil || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ_ACK ||
		up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_ACTIVATED {
		t.Fatalf("path switch before the setup response: %+v %v", up, err)
	}
	far := h.upf.lastMod(t).UpdateFARs[0]
	if far.Forwarding == nil || far.Forwarding.SendEndMarker || far.Forwarding.OuterHeaderCreation == nil ||
		far.Forwarding.OuterHeaderCreation.TEID != targetN3.TEID || far.Forwarding.OuterHeaderCreation.IPv4 != targetN3.Addr {
		t.Errorf("DL FAR update %+v, want the target's tunnel without SNDEM", far.Forwarding)
	}
	if s := h.smf.Stats(); s.Established != 1 || s.PathSwitches != 1 {
		t.Errorf("stats %+v", s)
	}
	if _, err := h.smf.UpdateSMContext(ctx, created.Ref, setupResponse(t, 1)); err == nil {
		t.Error("the source's late setup response was taken")
	}
	if far := h.upf.lastMod(t).UpdateFARs[0]; far.Forwarding == nil || far.Forwarding.OuterHeaderCreation.TEID != targetN3.TEID {
		t.Errorf("after the late response the DL FAR is %+v", far.Forwarding)
	}
	// The session is an ordinary one at the target: it moves again.
	up, err = h.smf.UpdateSMContext(ctx, created.Ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ, "",
		mustEncode(t, ngap.EncodePathSwitchRequestTransfer, &ngap.PathSwitchRequestTransfer{DLTunnel: targetFwd, QoSFlows: []uint8{defaultQFI}})))
	if err != nil || !h.upf.lastMod(t).UpdateFARs[0].Forwarding.SendEndMarker {
		t.Fatalf("second path switch: %+v %v", up, err)
	}
}

// n2Prepare runs HANDOVER_REQUIRED and HANDOVER_REQ_ACK and returns the
// Handover Command transfer.
func n2Prepare(t testing.TB, h *harness, ref string, fwd *ngap.GTPTunnel) *ngap.HandoverCommandTransfer {
	t.Helper()
	ctx := context.Background()
	up, err := h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED, models.Smf_PDUSess_HoState_PREPARING,
		mustEncode(t, ngap.EncodeHandoverRequiredTransfer, &ngap.HandoverRequiredTransfer{})))
	if err != nil || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ || up.Data.HoState != models.Smf_PDUSess_HoState_PREPARING {
		t.Fatalf("preparation: %+v %v", up, err)
	}
	if _, err := ngap.DecodeSetupRequestTransfer(up.N2SmInfo); err != nil {
		t.Fatalf("setup transfer for the target: %v", err)
	}
	up, err = h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK, models.Smf_PDUSess_HoState_PREPARED,
		mustEncode(t, ngap.EncodeHandoverRequestAcknowledgeTransfer, &ngap.HandoverRequestAcknowledgeTransfer{
			DLTunnel: targetN3, DLForwardingTunnel: fwd, QoSFlows: []ngap.QoSFlowWithDataForwarding{{QFI: defaultQFI, DataForwardingAccepted: fwd != nil}}})))
	if err != nil || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_HANDOVER_CMD || up.Data.HoState != models.Smf_PDUSess_HoState_PREPARED {
		t.Fatalf("prepared: %+v %v", up, err)
	}
	cmd, err := ngap.DecodeHandoverCommandTransfer(up.N2SmInfo)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestN2HandoverForwarding: the 3GPP mode: an indirect forwarding tunnel
// at the UPF (CHOOSE F-TEID -> the target's DL forwarding tunnel), given to
// the source in the Handover Command transfer; COMPLETED switches the
// downlink with SNDEM and removes the tunnel after the hold.
func TestN2HandoverForwarding(t *testing.T) {
	cfg := testConfig()
	cfg.Mobility.ForwardingHold = 20 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	fwd := targetFwd
	cmd := n2Prepare(t, h, ref, &fwd)
	mod := h.upf.lastMod(t)
	if len(mod.CreatePDRs) != 1 || mod.CreatePDRs[0].PDI.FTEID == nil || !mod.CreatePDRs[0].PDI.FTEID.Choose ||
		mod.CreatePDRs[0].PDI.UEIP != nil || len(mod.CreateFARs) != 1 ||
		mod.CreateFARs[0].Forwarding.OuterHeaderCreation.TEID != targetFwd.TEID {
		t.Fatalf("forwarding rules %+v / %+v", mod.CreatePDRs, mod.CreateFARs)
	}
	if cmd.DLForwardingTunnel == nil || cmd.DLForwardingTunnel.Addr != upfN3 || len(cmd.QoSFlowsToBeForwarded) != 1 {
		t.Errorf("command transfer %+v, want the UPF's forwarding F-TEID", cmd)
	}
	if _, err := h.smf.UpdateSMContext(context.Background(), ref, hoStateUpdate(models.Smf_PDUSess_HoState_COMPLETED)); err != nil {
		t.Fatal(err)
	}
	far := h.upf.lastMod(t).UpdateFARs[0]
	if !far.Forwarding.SendEndMarker || far.Forwarding.OuterHeaderCreation.TEID != targetN3.TEID {
		t.Errorf("DL FAR after completion %+v", far.Forwarding)
	}
	waitForCond(t, "forwarding rules removed", func() bool {
		h.upf.mu.Lock()
		defer h.upf.mu.Unlock()
		m := h.upf.mods[len(h.upf.mods)-1]
		return len(m.RemovePDRs) == 1 && m.RemovePDRs[0] == pdrForward && len(m.RemoveFARs) == 1
	})
	if s := h.smf.Stats(); s.Handovers != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestN2HandoverSmart: L25GC smart buffering: at the acknowledgement the
// downlink FAR buffers (no NOCP, no forwarding tunnel); COMPLETED sends it
// to the target (with SNDEM for the source).
func TestN2HandoverSmart(t *testing.T) {
	cfg := testConfig()
	cfg.Mobility.HandoverData = HandoverSmart
	h := newHarness(t, cfg, pcf.Config{})
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	fwd := targetFwd
	cmd := n2Prepare(t, h, ref, &fwd)
	if cmd.DLForwardingTunnel != nil {
		t.Error("smart mode gave the source a forwarding tunnel")
	}
	far := h.upf.lastMod(t).UpdateFARs[0]
	if far.ApplyAction == nil || *far.ApplyAction != pfcp.ActionBuffer || far.BARID != nil {
		t.Errorf("DL FAR at preparation %+v, want BUFF alone", far)
	}
	if _, err := h.smf.UpdateSMContext(context.Background(), ref, hoStateUpdate(models.Smf_PDUSess_HoState_COMPLETED)); err != nil {
		t.Fatal(err)
	}
	far = h.upf.lastMod(t).UpdateFARs[0]
	if far.ApplyAction == nil || *far.ApplyAction != pfcp.ActionForward || !far.Forwarding.SendEndMarker ||
		far.Forwarding.OuterHeaderCreation.TEID != targetN3.TEID {
		t.Errorf("DL FAR at completion %+v", far)
	}
}

// TestN2HandoverCancelAndFailures: CANCELLED puts the downlink back on the
// source (smart) and removes forwarding rules; a session the target could
// not admit gets a preparation unsuccessful transfer; out-of-order steps
// are refused.
func TestN2HandoverCancelAndFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("smart cancel", func(t *testing.T) {
		cfg := testConfig()
		cfg.Mobility.HandoverData = HandoverSmart
		h := newHarness(t, cfg, pcf.Config{})
		ref, _, _ := h.establish(t, testSUPI, 1, "internet")
		n2Prepare(t, h, ref, nil)
		if _, err := h.smf.UpdateSMContext(ctx, ref, hoStateUpdate(models.Smf_PDUSess_HoState_CANCELLED)); err != nil {
			t.Fatal(err)
		}
		far := h.upf.lastMod(t).UpdateFARs[0]
		if far.ApplyAction == nil || *far.ApplyAction != pfcp.ActionForward || far.Forwarding.OuterHeaderCreation.TEID != 0xA001 {
			t.Errorf("DL FAR after cancel %+v, want FORW to the source's tunnel", far)
		}
	})
	t.Run("forwarding cancel", func(t *testing.T) {
		h := newHarness(t, testConfig(), pcf.Config{})
		ref, _, _ := h.establish(t, testSUPI, 1, "internet")
		fwd := targetFwd
		n2Prepare(t, h, ref, &fwd)
		if _, err := h.smf.UpdateSMContext(ctx, ref, hoStateUpdate(models.Smf_PDUSess_HoState_CANCELLED)); err != nil {
			t.Fatal(err)
		}
		if m := h.upf.lastMod(t); len(m.RemovePDRs) != 1 || m.RemovePDRs[0] != pdrForward {
			t.Errorf("last modification %+v, want the forwarding rules removed", m)
		}
	})
	t.Run("failures", func(t *testing.T) {
		h := newHarness(t, testConfig(), pcf.Config{})
		ref, _, _ := h.establish(t, testSUPI, 1, "internet")
		if _, err := h.smf.UpdateSMContext(ctx, ref, hoStateUpdate(models.Smf_PDUSess_HoState_COMPLETED)); sbi.StatusOf(err) != 409 {
			t.Errorf("COMPLETED without a handover: %v", err)
		}
		ack := n2Update(t, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK, models.Smf_PDUSess_HoState_PREPARED,
			mustEncode(t, ngap.EncodeHandoverRequestAcknowledgeTransfer, &ngap.HandoverRequestAcknowledgeTransfer{DLTunnel: targetN3, QoSFlows: []ngap.QoSFlowWithDataForwarding{{QFI: 1}}}))
		if _, err := h.smf.UpdateSMContext(ctx, ref, ack); sbi.CauseOf(err) != sbi.CauseN2SMError {
			t.Errorf("acknowledge before preparation: %v", err)
		}
		if _, err := h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED, "", []byte{0xff, 0xff})); sbi.CauseOf(err) != sbi.CauseN2SMError {
			t.Errorf("garbled transfer: %v", err)
		}
		up, err := h.smf.UpdateSMContext(ctx, ref, n2Update(t, models.Smf_PDUSess_N2SmInfoType_HANDOVER_RES_ALLOC_FAIL, "",
			mustEncode(t, ngap.EncodeHandoverResourceAllocationUnsuccessfulTransfer, &ngap.HandoverResourceAllocationUnsuccessfulTransfer{
				Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkNoRadioResourcesAvailableInTarget}})))
		if err != nil || up.Data.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_HANDOVER_PREP_FAIL {
			t.Fatalf("resource allocation failure: %+v %v", up, err)
		}
		if f, err := ngap.DecodeHandoverPreparationUnsuccessfulTransfer(up.N2SmInfo); err != nil ||
			f.Cause.Value != ngap.RadioNetworkNoRadioResourcesAvailableInTarget {
			t.Errorf("preparation unsuccessful transfer %+v %v", f, err)
		}
	})
}
