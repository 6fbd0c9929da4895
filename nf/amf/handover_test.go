package amf

import (
	"bytes"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/security/kdf"
)

var (
	testTAI2 = identity.TAI{PLMN: testPLMN, TAC: 2}
	loc2     = ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 0x20}, TAI: testTAI2}
)

// twoTAConfig serves TACs 1 and 2, so that a second gNB can be in another
// TA (a mobility registration update after the move).
func twoTAConfig(c *Config) {
	c.TAIs = append(c.TAIs, TAIConfig{PLMN: "20893", TAC: 2, Slices: []string{"1-010203"}})
}

// setupGNBAs attaches a gNB with global ID id serving tac.
func setupGNBAs(t testing.TB, a *AMF, id uint32, tac uint32) *testGNB {
	t.Helper()
	g := attachGNB(t, a)
	req := ngSetupRequest(testPLMN, tac, testSlice)
	req.GlobalRANNodeID.GNBID = id
	g.send(0, req)
	expect[*ngap.NGSetupResponse](t, g.recv())
	return g
}

func gnbID(id uint32) ngap.GlobalGNBID {
	return ngap.GlobalGNBID{PLMN: testPLMN, GNBID: id, BitLen: 22}
}

// hoFixture: a UE registered on g1 (gNB 1, TAC 1) with session 1 set up,
// and g2 (gNB 2, TAC 2) ready to take it.
type hoFixture struct {
	a      *AMF
	smf    *fakeSMF
	g1, g2 *testGNB
	u      *testUE
	kgnb   []byte
}

func newHOFixture(t *testing.T, mutate func(*Config)) *hoFixture {
	t.Helper()
	f := &hoFixture{smf: newFakeSMF()}
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = f.smf
	cfg := testConfig()
	twoTAConfig(&cfg)
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	f.a = a
	f.smf.amf = a
	t.Cleanup(func() { f.smf.checkCallbacks(t); a.Close() })
	f.g1 = setupGNBAs(t, a, 1, 1)
	f.g2 = setupGNBAs(t, a, 2, 2)
	f.u = newTestUE(t, f.g1, hn, "0000000001")
	f.u.sec, f.u.smcDone = nil, false
	req := f.u.registrationRequest(f.u.suci(), nas.RegistrationInitial)
	f.u.sendInitial(req, nas.Plain)
	f.u.answerAuth(expect[*nas.AuthenticationRequest](t, f.u.recvNAS()))
	f.u.answerSMC(expect[*nas.SecurityModeCommand](t, f.u.recvNAS()), req)
	m := f.u.recvNAS()
	f.kgnb = bytes.Clone(f.u.lastICS.SecurityKey[:])
	f.u.acceptRegistration(m)
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	f.u.establish(1, "")
	waitFor(t, "session set up", func() bool { return len(f.smf.callsOf("update")) == 1 })
	return f
}

func (f *hoFixture) updates(typ models.Smf_PDUSess_N2SmInfoType, ho models.Smf_PDUSess_HoState) int {
	n := 0
	for _, c := range f.smf.callsOf("update") {
		if c.n2Type == typ && c.hoState == ho {
			n++
		}
	}
	return n
}

// TestXnHandoverPathSwitch: TS 38.413 §8.4.4, TS 23.502 §4.9.1.2.2: the
// SMF switches the session, the target gets a new AMF UE NGAP ID, the
// session's acknowledge transfer and {NH, NCC} (TS 33.501 §6.9.2.3.2:
// NCC 1 with NH from KgNB, then NCC 2 from that NH); the UE goes on over
// the target and the source's IDs are gone.
func TestXnHandoverPathSwitch(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	srcAMFID := u.amfID
	f.g2.send(1, &ngap.PathSwitchRequest{RANUENGAPID: 900, SourceAMFUENGAPID: srcAMFID, UserLocation: loc2,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(u.secCap.EA, u.secCap.IA, 0, 0),
		ToBeSwitched:           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("path-switch-transfer")}}})
	ack := expect[*ngap.PathSwitchRequestAcknowledge](t, f.g2.recv())
	if ack.AMFUENGAPID == srcAMFID || ack.RANUENGAPID != 900 {
		t.Errorf("ack IDs %d/%d, want a new AMF UE NGAP ID and RAN UE NGAP ID 900", ack.AMFUENGAPID, ack.RANUENGAPID)
	}
	nh1 := kdf.NH(u.kamf, f.kgnb)
	if ack.SecurityContext.NextHopChainingCount != 1 || !bytes.Equal(ack.SecurityContext.NextHopNH[:], nh1) {
		t.Errorf("security context NCC %d, want 1 with NH from KgNB", ack.SecurityContext.NextHopChainingCount)
	}
	if len(ack.Switched) != 1 || ack.Switched[0].ID != 1 || string(ack.Switched[0].Transfer) != "PATH_SWITCH_REQ_ACK-1" {
		t.Errorf("switched %+v", ack.Switched)
	}
	if len(ack.AllowedNSSAI) == 0 {
		t.Error("no allowed NSSAI")
	}
	if n := f.updates(models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ, ""); n != 1 {
		t.Errorf("path switch at the SMF: %d", n)
	}
	// The UE continues on the target.
	u.g, u.amfID, u.ranID, u.loc = f.g2, ack.AMFUENGAPID, 900, &loc2
	u.sendSM(1, requestModification, "", nil, smMsg(1, 4, nas.MsgPDUSessionModificationRequest))
	expect[*ngap.PDUSessionResourceModifyRequest](t, u.recvNGAP())
	// The source's IDs are unknown now.
	f.g1.send(1, &ngap.UplinkNASTransport{AMFUENGAPID: srcAMFID, RANUENGAPID: 1, NASPDU: []byte{0x7e, 0, 0x67}, UserLocation: loc2})
	if ei := expect[*ngap.ErrorIndication](t, f.g1.recv()); ei.Cause == nil || *ei.Cause != causeUnknownLocalID {
		t.Errorf("error indication %+v", ei)
	}
	// A second switch back: NCC 2.
	f.g1.send(1, &ngap.PathSwitchRequest{RANUENGAPID: 901, SourceAMFUENGAPID: ack.AMFUENGAPID, UserLocation: loc2,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(u.secCap.EA, u.secCap.IA, 0, 0),
		ToBeSwitched:           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("path-switch-transfer")}}})
	ack2 := expect[*ngap.PathSwitchRequestAcknowledge](t, f.g1.recv())
	if ack2.SecurityContext.NextHopChainingCount != 2 || !bytes.Equal(ack2.SecurityContext.NextHopNH[:], kdf.NH(u.kamf, nh1)) {
		t.Errorf("second switch NCC %d", ack2.SecurityContext.NextHopChainingCount)
	}
	if s := f.a.Stats(); s.PathSwitches != 2 || s.ConnectedUEs != 1 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestPathSwitchFailures: an unknown source and a switch the SMF refuses
// for every session get Path Switch Request Failure (TS 38.413 §8.4.4.3).
func TestPathSwitchFailures(t *testing.T) {
	f := newHOFixture(t, nil)
	req := &ngap.PathSwitchRequest{RANUENGAPID: 900, SourceAMFUENGAPID: 424242,
		UserLocation: loc2, ToBeSwitched: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("x")}}}
	f.g2.send(1, req)
	fail := expect[*ngap.PathSwitchRequestFailure](t, f.g2.recv())
	if len(fail.Released) != 1 || fail.Released[0].ID != 1 {
		t.Errorf("failure %+v", fail)
	}
	f.smf.refuseHandover = true
	req.SourceAMFUENGAPID = f.u.amfID
	f.g2.send(1, req)
	expect[*ngap.PathSwitchRequestFailure](t, f.g2.recv())
	// The UE lost its path: the source connection is released.
	expect[*ngap.UEContextReleaseCommand](t, f.g1.recv())
	if s := f.a.Stats(); s.PathSwitchFailures != 2 || s.PathSwitches != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestPathSwitchDuringRegistrationUpdate: the UE moves by Xn while the
// registration update of its previous move waits for Registration
// Complete: the path switch is done, and the registration completes over
// the target.
func TestPathSwitchDuringRegistrationUpdate(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	before := f.a.Stats().Registrations
	u.sendUL(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationMobilityUpdating))
	acc := expect[*nas.RegistrationAccept](t, u.recvNAS())
	f.g2.send(1, &ngap.PathSwitchRequest{RANUENGAPID: 900, SourceAMFUENGAPID: u.amfID, UserLocation: loc2,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(u.secCap.EA, u.secCap.IA, 0, 0),
		ToBeSwitched:           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("path-switch-transfer")}}})
	ack := expect[*ngap.PathSwitchRequestAcknowledge](t, f.g2.recv())
	u.g, u.amfID, u.ranID, u.loc = f.g2, ack.AMFUENGAPID, 900, &loc2
	u.guti = acc.GUTI
	u.sendUL(&nas.RegistrationComplete{})
	waitFor(t, "registration complete over the target", func() bool { return f.a.Stats().Registrations == before+1 })
	if s := f.a.Stats(); s.PathSwitches != 1 || s.PathSwitchFailures != 0 || s.ConnectedUEs != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestRANStatusAfterNotify: the source's Uplink RAN Status Transfer comes
// after the target's Handover Notify (two associations, no order between
// them): it still reaches the target, now serving the UE.
func TestRANStatusAfterNotify(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	req, _ := f.prepare(t)
	f.g2.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 700, UserLocation: loc2})
	rel := expect[*ngap.UEContextReleaseCommand](t, f.g1.recv())
	drbs := []ngap.DRBStatus{{DRBID: 1, UL: ngap.COUNTValue{SNLength: 12, PDCPSN: 5}, DL: ngap.COUNTValue{SNLength: 12, PDCPSN: 9}}}
	f.g1.send(1, &ngap.UplinkRANStatusTransfer{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, DRBs: drbs})
	st := expect[*ngap.DownlinkRANStatusTransfer](t, f.g2.recv())
	if st.AMFUENGAPID != req.AMFUENGAPID || st.RANUENGAPID != 700 || len(st.DRBs) != 1 || st.DRBs[0].DL.PDCPSN != 9 {
		t.Errorf("Downlink RAN Status Transfer %+v", st)
	}
	f.g1.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: rel.AMFUENGAPID, RANUENGAPID: rel.RANUENGAPID})
	waitFor(t, "source released", func() bool { return f.a.Stats().ConnectedUEs == 1 && f.a.ranUEs.Get(u.amfID) == nil })
}

// n2Handover runs the preparation of an N2 handover of f.u from g1 to g2
// up to the Handover Command and returns the target's Handover Request.
func (f *hoFixture) prepare(t *testing.T) (*ngap.HandoverRequest, *ngap.HandoverCommand) {
	t.Helper()
	u := f.u
	f.g1.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause:                              ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID:                           ngap.TargetRANNodeID{GlobalGNBID: gnbID(2), SelectedTAI: testTAI2},
		Sessions:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-required-transfer")}},
		SourceToTargetTransparentContainer: []byte("s2t")})
	req := expect[*ngap.HandoverRequest](t, f.g2.recv())
	if len(req.Sessions) != 1 || req.Sessions[0].ID != 1 || string(req.Sessions[0].Transfer) != "PDU_RES_SETUP_REQ-1" ||
		req.Sessions[0].SNSSAI != testSlice || string(req.SourceToTargetTransparentContainer) != "s2t" {
		t.Fatalf("Handover Request %+v", req)
	}
	if req.SecurityContext.NextHopChainingCount != 1 || !bytes.Equal(req.SecurityContext.NextHopNH[:], kdf.NH(u.kamf, f.kgnb)) {
		t.Errorf("Handover Request NCC %d, want 1 with NH from KgNB (TS 33.501 §6.9.2.3.3)", req.SecurityContext.NextHopChainingCount)
	}
	if req.AMFUENGAPID == u.amfID || req.GUAMI != u.guti.GUAMI {
		t.Errorf("Handover Request AMF UE NGAP ID %d (source %d), GUAMI %v", req.AMFUENGAPID, u.amfID, req.GUAMI)
	}
	if n := f.updates(models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED, models.Smf_PDUSess_HoState_PREPARING); n != 1 {
		t.Errorf("preparation at the SMF: %d", n)
	}
	f.g2.send(1, &ngap.HandoverRequestAcknowledge{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 700,
		Admitted:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-ack-transfer")}},
		TargetToSourceTransparentContainer: []byte("t2s")})
	cmd := expect[*ngap.HandoverCommand](t, f.g1.recv())
	if cmd.AMFUENGAPID != u.amfID || cmd.RANUENGAPID != u.ranID || len(cmd.Handover) != 1 ||
		string(cmd.Handover[0].Transfer) != "HANDOVER_CMD-1" || string(cmd.TargetToSourceTransparentContainer) != "t2s" {
		t.Fatalf("Handover Command %+v", cmd)
	}
	if n := f.updates(models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK, models.Smf_PDUSess_HoState_PREPARED); n != 1 {
		t.Errorf("prepared at the SMF: %d", n)
	}
	return req, cmd
}

// TestN2Handover: the whole procedure (TS 23.502 §4.9.1.3), the RAN
// status relayed, then the mobility registration update over the target.
func TestN2Handover(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	req, _ := f.prepare(t)
	drbs := []ngap.DRBStatus{{DRBID: 1, UL: ngap.COUNTValue{SNLength: 12, PDCPSN: 5, HFN: 1}, DL: ngap.COUNTValue{SNLength: 12, PDCPSN: 9, HFN: 2}}}
	f.g1.send(1, &ngap.UplinkRANStatusTransfer{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, DRBs: drbs})
	st := expect[*ngap.DownlinkRANStatusTransfer](t, f.g2.recv())
	if st.AMFUENGAPID != req.AMFUENGAPID || st.RANUENGAPID != 700 || len(st.DRBs) != 1 || st.DRBs[0].DL.PDCPSN != 9 {
		t.Errorf("Downlink RAN Status Transfer %+v", st)
	}
	f.g2.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 700, UserLocation: loc2})
	rel := expect[*ngap.UEContextReleaseCommand](t, f.g1.recv())
	if rel.AMFUENGAPID != u.amfID || rel.Cause != (ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkSuccessfulHandover}) {
		t.Errorf("source release %+v", rel)
	}
	f.g1.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: rel.AMFUENGAPID, RANUENGAPID: rel.RANUENGAPID})
	waitFor(t, "completion at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_COMPLETED) == 1 })
	// Mobility registration update into TA 2, over the target.
	u.g, u.amfID, u.ranID, u.loc = f.g2, req.AMFUENGAPID, 700, &loc2
	u.sendUL(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationMobilityUpdating))
	acc := expect[*nas.RegistrationAccept](t, u.recvNAS())
	if len(acc.TAIList) == 0 || acc.TAIList[0] != testTAI2 {
		t.Errorf("TAI list %v after moving to TA 2", acc.TAIList)
	}
	u.guti = acc.GUTI
	u.sendUL(&nas.RegistrationComplete{})
	waitFor(t, "re-registered", func() bool { return f.a.Stats().Registrations == 2 })
	if s := f.a.Stats(); s.HandoversCompleted != 1 || s.HandoverFailures != 0 || s.ConnectedUEs != 1 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestN2HandoverPreparationFailures: an unknown target, a target that
// fails, and an SMF that refuses: Handover Preparation Failure, the UE
// stays on the source (TS 23.502 §4.9.1.3.2, TS 38.413 §8.4.1.3, §8.4.2.3).
func TestN2HandoverPreparationFailures(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	required := func(target uint32) {
		f.g1.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
			Cause:    ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
			TargetID: ngap.TargetRANNodeID{GlobalGNBID: gnbID(target), SelectedTAI: testTAI2},
			Sessions: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("x")}}, SourceToTargetTransparentContainer: []byte("c")})
	}
	required(99)
	pf := expect[*ngap.HandoverPreparationFailure](t, f.g1.recv())
	if pf.Cause.Value != ngap.RadioNetworkUnknownTargetID {
		t.Errorf("unknown target: cause %v", pf.Cause)
	}
	required(2)
	req := expect[*ngap.HandoverRequest](t, f.g2.recv())
	f.g2.send(1, &ngap.HandoverFailure{AMFUENGAPID: req.AMFUENGAPID, Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkNoRadioResourcesAvailableInTarget}})
	pf = expect[*ngap.HandoverPreparationFailure](t, f.g1.recv())
	if pf.Cause.Value != ngap.RadioNetworkNoRadioResourcesAvailableInTarget {
		t.Errorf("target failure: cause %v", pf.Cause)
	}
	waitFor(t, "cancel at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 1 })
	f.smf.refuseHandover = true
	required(2)
	expect[*ngap.HandoverPreparationFailure](t, f.g1.recv())
	f.smf.refuseHandover = false
	// The source still serves the UE.
	u.sendSM(1, requestModification, "", nil, smMsg(1, 4, nas.MsgPDUSessionModificationRequest))
	expect[*ngap.PDUSessionResourceModifyRequest](t, u.recvNGAP())
	// A gNB that does not serve the UE cannot start its handover.
	f.g2.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork}, TargetID: ngap.TargetRANNodeID{GlobalGNBID: gnbID(1), SelectedTAI: testTAI},
		Sessions: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("x")}}, SourceToTargetTransparentContainer: []byte("c")})
	if ei := expect[*ngap.ErrorIndication](t, f.g2.recv()); ei.Cause == nil || *ei.Cause != causeInconsistentRemoteID {
		t.Errorf("error indication %+v", ei)
	}
	if s := f.a.Stats(); s.HandoverFailures != 1 || s.HandoversCompleted != 0 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestN2HandoverCancel: the source cancels after the command (TS 38.413
// §8.4.6): acknowledged, the target's connection released, the SMF told.
func TestN2HandoverCancel(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	req, _ := f.prepare(t)
	f.g1.send(1, &ngap.HandoverCancel{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverCancelled}})
	expect[*ngap.HandoverCancelAcknowledge](t, f.g1.recv())
	rel := expect[*ngap.UEContextReleaseCommand](t, f.g2.recv())
	if rel.AMFUENGAPID != req.AMFUENGAPID || rel.RANUENGAPID != 700 {
		t.Errorf("target release %+v", rel)
	}
	waitFor(t, "cancel at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 1 })
	f.g2.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: rel.AMFUENGAPID, RANUENGAPID: rel.RANUENGAPID})
	// A late Handover Notify finds nothing.
	f.g2.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 700, UserLocation: loc2})
	expect[*ngap.ErrorIndication](t, f.g2.recv())
	u.sendSM(1, requestModification, "", nil, smMsg(1, 4, nas.MsgPDUSessionModificationRequest))
	expect[*ngap.PDUSessionResourceModifyRequest](t, u.recvNGAP())
}

// TestN2HandoverGuardAndVanishingTarget: a target that never answers (the
// guard runs out: TNGRELOCprep expiry, the target released by AMF UE NGAP
// ID) and a target whose association drops mid-handover both end with
// Handover Preparation Failure and the UE on the source.
func TestN2HandoverGuardAndVanishingTarget(t *testing.T) {
	f := newHOFixture(t, func(c *Config) { c.Timers.Handover = 100 * time.Millisecond })
	u := f.u
	required := &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause:    ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID: ngap.TargetRANNodeID{GlobalGNBID: gnbID(2), SelectedTAI: testTAI2},
		Sessions: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("x")}}, SourceToTargetTransparentContainer: []byte("c")}
	f.g1.send(1, required)
	req := expect[*ngap.HandoverRequest](t, f.g2.recv())
	pf := expect[*ngap.HandoverPreparationFailure](t, f.g1.recv())
	if pf.Cause.Value != ngap.RadioNetworkTNGRELOCprepExpiry {
		t.Errorf("guard: cause %v", pf.Cause)
	}
	if rel := expect[*ngap.UEContextReleaseCommand](t, f.g2.recv()); !rel.AMFIDOnly || rel.AMFUENGAPID != req.AMFUENGAPID {
		t.Errorf("target release %+v, want by AMF UE NGAP ID alone", rel)
	}
	// Now the target's association goes away during the preparation.
	f.g1.send(1, required)
	expect[*ngap.HandoverRequest](t, f.g2.recv())
	f.g2.conn.Close()
	pf = expect[*ngap.HandoverPreparationFailure](t, f.g1.recv())
	if pf.Cause.Value != ngap.RadioNetworkHOFailureInTarget {
		t.Errorf("vanished target: cause %v", pf.Cause)
	}
	waitFor(t, "cancels at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 2 })
	if s := f.a.Stats(); s.HandoverFailures != 2 || s.UEContexts != 1 || s.ConnectedUEs != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestANReleaseDuringHandover: the source asks for the UE's release while
// a handover runs: the handover ends, the UE goes idle.
func TestANReleaseDuringHandover(t *testing.T) {
	f := newHOFixture(t, nil)
	u := f.u
	req, _ := f.prepare(t)
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkRadioConnectionWithUELost}})
	rel := expect[*ngap.UEContextReleaseCommand](t, f.g2.recv())
	if rel.AMFUENGAPID != req.AMFUENGAPID {
		t.Errorf("target release %+v", rel)
	}
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, f.g1.recv()))
	waitFor(t, "idle", func() bool { return f.a.Stats().ConnectedUEs <= 1 })
	waitFor(t, "cancel at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 1 })
	if s := f.a.Stats(); s.RegisteredUEs != 1 || s.HandoverFailures != 1 {
		t.Errorf("stats %+v", s)
	}
}
