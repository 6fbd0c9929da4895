package amf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// goIdle takes the UE to CM-IDLE with a gNB-initiated release (TS 23.502
// §4.2.6).
func (u *testUE) goIdle(a *AMF) {
	u.t.Helper()
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](u.t, u.recvNGAP()))
	waitFor(u.t, "CM-IDLE", func() bool { return a.Stats().ConnectedUEs == 0 })
	if s := a.Stats(); s.IdleUEs != s.RegisteredUEs {
		u.t.Errorf("%d registered UEs, none connected, but %d idle", s.RegisteredUEs, s.IdleUEs)
	}
}

// serviceRequest sends a Service Request as the initial NAS message of a
// new connection, integrity protected with the current context (TS 24.501
// §4.4.6: cleartext IEs only, not ciphered).
func (u *testUE) serviceRequest(typ uint8, uplinkData, status *uint16) *nas.ServiceRequest {
	u.t.Helper()
	sr := &nas.ServiceRequest{ServiceType: typ, NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, STMSI: u.guti.STMSI(),
		UplinkDataStatus: uplinkData, PDUSessionStatus: status}
	u.sendInitial(sr, nas.IntegrityProtected)
	return sr
}

func bits(ids ...uint8) *uint16 {
	var v uint16
	for _, id := range ids {
		v |= 1 << id
	}
	return &v
}

// downlinkData is the N1N2MessageTransfer an SMF sends when the UPF
// reports downlink data for an idle UE (TS 23.502 §4.2.3.3 step 3a).
func downlinkData(id uint8, arpLevel int32) *sbi.N1N2Message {
	sn := sbi.SNSSAIToModel(testSlice)
	return &sbi.N1N2Message{
		Data: &models.Amf_Comm_N1N2MessageTransferReqData{
			PduSessionId: int32(id),
			Arp:          &models.Arp{PriorityLevel: arpLevel},
			N2InfoContainer: &models.Amf_Comm_N2InfoContainer{
				N2InformationClass: models.Amf_Comm_N2InformationClass_SM,
				SmInfo: &models.Amf_Comm_N2SmInformation{PduSessionId: int32(id), SNssai: &sn,
					N2InfoContent: &models.Amf_Comm_N2InfoContent{NgapIeType: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ}},
			},
			N1n2FailureTxfNotifURI: fmt.Sprintf("urn:test:failure:%d", id),
		},
		N2Info: []byte("paging-setup-transfer"),
	}
}

// idleUEWithSessions registers a UE, establishes the sessions and takes it
// to CM-IDLE.
func idleUEWithSessions(t *testing.T, a *AMF, hn *fakeHN, smf *fakeSMF, ids ...uint8) *testUE {
	t.Helper()
	u := registeredUE(t, a, hn)
	for i, id := range ids {
		u.establish(id, "")
		waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == i+1 })
	}
	u.goIdle(a)
	return u
}

// TestPagingThenServiceRequest: downlink data for an idle UE -> Paging to
// the registration area -> Service Request -> the session's user plane is
// activated at the SMF and set up in the Initial Context Setup that carries
// the Service Accept (TS 23.502 §4.2.3.3, §4.2.3.2).
func TestPagingThenServiceRequest(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 1, 2)
	updatesBefore := len(smf.callsOf("update"))

	rsp, err := a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(2, 2))
	if err != nil || rsp.Cause != models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE {
		t.Fatalf("N1N2MessageTransfer to an idle UE: %+v %v", rsp, err)
	}
	p := expect[*ngap.Paging](t, u.g.recv())
	if p.UEPagingIdentity != u.guti.STMSI() || len(p.TAIListForPaging) != 1 || p.TAIListForPaging[0] != testTAI ||
		p.PagingPriority != 2 {
		t.Fatalf("Paging %+v, want the UE's 5G-S-TMSI, its TAI and priority 2 from ARP level 2", p)
	}

	u.serviceRequest(nas.ServiceMobileTerminated, nil, bits(1, 2))
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	acc := expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if acc.PDUSessionStatus == nil || *acc.PDUSessionStatus != *bits(1, 2) {
		t.Errorf("Service Accept PDU session status %v, want sessions 1 and 2", acc.PDUSessionStatus)
	}
	if len(ics.PDUSessionResourceSetupItems) != 1 || ics.PDUSessionResourceSetupItems[0].ID != 2 ||
		string(ics.PDUSessionResourceSetupItems[0].Transfer) != "activate-transfer-2" ||
		ics.PDUSessionResourceSetupItems[0].SNSSAI != testSlice {
		t.Fatalf("ICS setup items %+v, want session 2 with the SMF's activation transfer", ics.PDUSessionResourceSetupItems)
	}
	if ics.UEAggregateMaxBitRate == nil {
		t.Error("ICS with sessions lacks the UE-AMBR (TS 38.413 §9.2.2.1)")
	}
	ups := smf.callsOf("update")[updatesBefore:]
	if len(ups) != 1 || ups[0].id != 2 || ups[0].upCnx != models.Smf_PDUSess_UpCnxState_ACTIVATING {
		t.Fatalf("SMF updates %+v, want one activation of session 2", ups)
	}
	u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		PDUSessionResourceSetupItems: []ngap.PDUSessionResourceItem{{ID: 2, Transfer: []byte("setup-response-transfer-2")}}})
	waitFor(t, "setup response at the SMF", func() bool { return len(smf.callsOf("update")) == updatesBefore+2 })
	if up := smf.callsOf("update")[updatesBefore+1]; up.n2Type != models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP || up.id != 2 {
		t.Errorf("after ICS response: %+v", up)
	}
	s := a.Stats()
	if s.Pagings != 1 || s.ServiceRequests != 1 || s.ConnectedUEs != 1 || s.IdleUEs != 0 || s.PendingTransfers != 0 || s.PagingFailures != 0 {
		t.Errorf("stats %+v", s)
	}
	if smf.failureCount() != 0 {
		t.Error("failure notified for a UE that answered")
	}
}

// TestPagingFailure: T3513 runs out (TS 24.501 §5.6.2.2.1): Paging is
// repeated, then the SMF hears UE_NOT_RESPONDING (TS 29.518 §5.2.2.3.2).
func TestPagingFailure(t *testing.T) {
	smf := newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	cfg := testConfig()
	cfg.Timers.T3513 = 50 * time.Millisecond
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	smf.amf = a
	t.Cleanup(func() { smf.checkCallbacks(t); a.Close() })
	u := idleUEWithSessions(t, a, hn, smf, 1)
	if _, err := a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(1, 9)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= DefaultPagingRetransmissions; i++ {
		p := expect[*ngap.Paging](t, u.g.recv())
		if p.PagingPriority != 0 {
			t.Errorf("paging priority %d for ARP level 9, want none", p.PagingPriority)
		}
	}
	waitFor(t, "failure notification", func() bool { return smf.failureCount() == 1 })
	if f := smf.failures[0]; f.Cause != models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING || f.N1n2MsgDataUri != "urn:test:failure:1" {
		t.Errorf("failure notification %+v", f)
	}
	select {
	case m := <-u.g.in:
		t.Fatalf("message after paging gave up: % x", m.Data)
	case <-time.After(3 * cfg.Timers.T3513):
	}
	s := a.Stats()
	if s.PagingFailures != 1 || s.PendingTransfers != 0 || s.RegisteredUEs != 1 {
		t.Errorf("stats %+v: the UE stays registered and idle", s)
	}
	// A later Service Request still works.
	u.serviceRequest(nas.ServiceSignalling, nil, nil)
	expect[*nas.ServiceAccept](t, u.openNAS(expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP()).NASPDU))
}

// TestServiceRequestUplinkDataAndStatus: a UE-triggered service request
// with uplink data for session 1 and a PDU session status without session
// 2: session 2 is released locally and at the SMF, session 1 activated
// (TS 24.501 §5.6.1.4.1).
func TestServiceRequestUplinkDataAndStatus(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 1, 2)
	u.serviceRequest(nas.ServiceData, bits(1), bits(1))
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	acc := expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if acc.PDUSessionStatus == nil || *acc.PDUSessionStatus != *bits(1) {
		t.Errorf("PDU session status %v, want session 1 only", acc.PDUSessionStatus)
	}
	if acc.PDUSessionReactivationResult == nil || *acc.PDUSessionReactivationResult != 0 {
		t.Errorf("reactivation result %v, want every requested session set up", acc.PDUSessionReactivationResult)
	}
	if len(ics.PDUSessionResourceSetupItems) != 1 || ics.PDUSessionResourceSetupItems[0].ID != 1 {
		t.Fatalf("ICS items %+v", ics.PDUSessionResourceSetupItems)
	}
	rel := smf.callsOf("release")
	if len(rel) != 1 || rel[0].id != 2 {
		t.Fatalf("SMF releases %+v, want session 2", rel)
	}
	if s := a.Stats(); s.PDUSessions != 1 {
		t.Errorf("AMF holds %d sessions, want 1", s.PDUSessions)
	}
}

// TestServiceRequestActivationRefused: the SMF cannot set the user plane
// up: the accept says so per session (TS 24.501 §9.11.3.42-43).
func TestServiceRequestActivationRefused(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 3)
	smf.refuseActivation = true
	u.serviceRequest(nas.ServiceData, bits(3), nil)
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	acc := expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if acc.PDUSessionReactivationResult == nil || *acc.PDUSessionReactivationResult != *bits(3) ||
		len(acc.PDUSessionReactivationResultErrorCause) != 1 || acc.PDUSessionReactivationResultErrorCause[0].PSI != 3 ||
		acc.PDUSessionReactivationResultErrorCause[0].Cause != nas.CauseInsufficientUserPlaneResources {
		t.Errorf("accept %+v, want session 3 failed with #92", acc)
	}
	if len(ics.PDUSessionResourceSetupItems) != 0 {
		t.Errorf("ICS items %+v, want none", ics.PDUSessionResourceSetupItems)
	}
	u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
	waitFor(t, "connected", func() bool { return a.Stats().ServiceRequests == 1 })
}

// TestServiceRequestUnknownSTMSI: TS 24.501 §5.6.1.5: #9.
func TestServiceRequestUnknownSTMSI(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	stranger := newTestUE(t, g, hn, "0000000002")
	stranger.sec, stranger.guti = u.sec, &identity.GUTI{GUAMI: u.guti.GUAMI, TMSI: u.guti.TMSI + 1}
	stranger.sendInitial(&nas.ServiceRequest{STMSI: stranger.guti.STMSI(), NgKSI: nas.NgKSI{KSI: 1}}, nas.Plain)
	rej := expect[*nas.ServiceReject](t, stranger.recvNAS())
	if rej.Cause != nas.CauseUEIdentityCannotBeDerived {
		t.Errorf("Service Reject #%d, want #9", rej.Cause)
	}
	stranger.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, stranger.recvNGAP()))
	waitFor(t, "stranger's context gone", func() bool { return a.Stats().UEContexts == 1 })
	if s := a.Stats(); s.ServiceRejects != 1 || s.RegisteredUEs != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestServiceRequestBadMACReauthenticates: an idle UE's Service Request
// that does not verify (the UE's context is not usable) leads to
// authentication and security mode control on that context, and the
// request from the Security Mode Complete is served (TS 24.501 §4.4.6,
// §5.6.1.4.1; TS 33.501 §6.4.6).
func TestServiceRequestBadMACReauthenticates(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 1)
	sr := &nas.ServiceRequest{ServiceType: nas.ServiceData, NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, STMSI: u.guti.STMSI(),
		UplinkDataStatus: bits(1)}
	pdu, err := u.sec.Protect(u.encode(sr), nas.IntegrityProtected, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	pdu[3] ^= 0xFF // the MAC
	u.ranID = u.g.nextRAN
	u.g.nextRAN++
	u.amfID = -1
	u.g.send(1, &ngap.InitialUEMessage{RANUENGAPID: u.ranID, NASPDU: pdu, RRCEstablishmentCause: ngap.RRCMOData,
		UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 0x10}, TAI: testTAI}})
	u.sec, u.smcDone = nil, false
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	smc := expect[*nas.SecurityModeCommand](t, u.recvNAS())
	if !smc.RetransmitInitialNAS {
		t.Error("SMC does not ask for the complete Service Request")
	}
	c := &nas.SecurityModeComplete{IMEISV: "4370816125816151", NASMessageContainer: u.encode(sr)}
	u.smcDone = true
	spdu, err := u.sec.Protect(u.encode(c), nas.IntegrityProtectedAndCipheredNewContext, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	u.sendULPDU(spdu)
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if len(ics.PDUSessionResourceSetupItems) != 1 || ics.PDUSessionResourceSetupItems[0].ID != 1 {
		t.Fatalf("ICS items %+v", ics.PDUSessionResourceSetupItems)
	}
	if s := a.Stats(); s.Authentications != 2 || s.RegisteredUEs != 1 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestMobileReachableAndImplicitDeregistration: TS 24.501 §5.3.7: after
// the mobile reachable timer the idle UE is not paged (504
// UE_NOT_REACHABLE); after the implicit deregistration timer it is
// deregistered: SM contexts and the UDM registration go, then the context.
func TestMobileReachableAndImplicitDeregistration(t *testing.T) {
	smf := newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	cfg := testConfig()
	cfg.Timers.MobileReachable = 100 * time.Millisecond
	cfg.Timers.ImplicitDeregistration = 300 * time.Millisecond
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	smf.amf = a
	t.Cleanup(func() { smf.checkCallbacks(t); a.Close() })
	u := idleUEWithSessions(t, a, hn, smf, 1)
	time.Sleep(2 * cfg.Timers.MobileReachable)
	_, err = a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(1, 1))
	if sbi.CauseOf(err) != sbi.CauseUENotReachable {
		t.Fatalf("transfer to an unreachable UE: %v, want UE_NOT_REACHABLE", err)
	}
	waitFor(t, "implicit deregistration", func() bool { return a.Stats().ImplicitDeregistrations == 1 })
	waitFor(t, "context gone", func() bool { return a.Stats().UEContexts == 0 })
	if rel := smf.callsOf("release"); len(rel) != 1 {
		t.Errorf("SMF releases %+v, want the UE's session", rel)
	}
	if hn.deregCalls.Load() != 1 {
		t.Errorf("Nudm_UECM_Deregistration calls %d, want 1", hn.deregCalls.Load())
	}
	if s := a.Stats(); s.RegisteredUEs != 0 || s.PDUSessions != 0 {
		t.Errorf("stats %+v", s)
	}
	// The UE comes back with its 5G-S-TMSI: the network does not know it.
	u.serviceRequest(nas.ServiceSignalling, nil, nil)
	if rej := expect[*nas.ServiceReject](t, u.recvNAS()); rej.Cause != nas.CauseUEIdentityCannotBeDerived {
		t.Errorf("Service Reject #%d, want #9", rej.Cause)
	}
}

// TestReachabilityTimersStopWhenConnected: a UE that comes back before the
// mobile reachable timer expires stays registered.
func TestReachabilityTimersStopWhenConnected(t *testing.T) {
	hn := newFakeHN()
	cfg := testConfig()
	cfg.Timers.MobileReachable = 150 * time.Millisecond
	cfg.Timers.ImplicitDeregistration = 50 * time.Millisecond
	a, err := New(cfg, hn.deps(), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	u := registeredUE(t, a, hn)
	u.goIdle(a)
	u.serviceRequest(nas.ServiceSignalling, nil, nil)
	expect[*nas.ServiceAccept](t, u.openNAS(expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP()).NASPDU))
	time.Sleep(4 * cfg.Timers.MobileReachable)
	if s := a.Stats(); s.ImplicitDeregistrations != 0 || s.RegisteredUEs != 1 {
		t.Errorf("stats %+v: a connected UE was deregistered", s)
	}
}

// TestNetworkInitiatedDeregistration: TS 24.501 §5.5.2.3 for a connected
// UE (Deregistration Request, accept, N2 release), with T3522
// retransmission, and locally for an idle one.
func TestNetworkInitiatedDeregistration(t *testing.T) {
	t.Run("connected", func(t *testing.T) {
		smf := newFakeSMF()
		a, hn := newTestAMFWithSMF(t, smf)
		u := registeredUE(t, a, hn)
		u.establish(1, "")
		if err := a.Deregister(context.Background(), u.supi, nas.Cause5GSServicesNotAllowed, false); err != nil {
			t.Fatal(err)
		}
		req := expect[*nas.DeregistrationRequestUETerminated](t, u.recvNAS())
		if req.Cause != nas.Cause5GSServicesNotAllowed || req.ReRegistrationRequired || req.AccessType != nas.Access3GPP {
			t.Errorf("request %+v", req)
		}
		waitFor(t, "SM context released", func() bool { return len(smf.callsOf("release")) == 1 })
		u.sendUL(&nas.DeregistrationAcceptUETerminated{})
		cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
		if cmd.Cause != causeNASDeregister {
			t.Errorf("release cause %v", cmd.Cause)
		}
		u.releaseComplete(cmd)
		waitFor(t, "context gone", func() bool { return a.Stats().UEContexts == 0 })
		if s := a.Stats(); s.NetworkDeregistrations != 1 || s.RegisteredUEs != 0 || s.PDUSessions != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("T3522", func(t *testing.T) {
		hn := newFakeHN()
		cfg := testConfig()
		cfg.Timers.T3522 = 30 * time.Millisecond
		a, err := New(cfg, hn.deps(), testLogger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		u := registeredUE(t, a, hn)
		if err := a.Deregister(context.Background(), u.supi, 0, true); err != nil {
			t.Fatal(err)
		}
		for range DefaultMaxRetransmissions + 1 {
			if req := expect[*nas.DeregistrationRequestUETerminated](t, u.recvNAS()); !req.ReRegistrationRequired {
				t.Error("re-registration required bit lost")
			}
		}
		u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
		waitFor(t, "context gone", func() bool { return a.Stats().UEContexts == 0 })
	})
	t.Run("accept not yet completed", func(t *testing.T) {
		// Deregister right after the Registration Accept, before (or while)
		// the AMF handles Registration Complete: the registration stands
		// and is the one deregistered.
		a, hn := newTestAMF(t, nil)
		g := setupGNB(t, a)
		u := newTestUE(t, g, hn, "0000000001")
		req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
		u.sendInitial(req, nas.Plain)
		u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
		u.answerSMC(expect[*nas.SecurityModeCommand](t, u.recvNAS()), req)
		acc := expect[*nas.RegistrationAccept](t, u.recvNAS())
		u.guti = acc.GUTI
		u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
		if err := a.Deregister(context.Background(), u.supi, 0, false); err != nil {
			t.Fatal(err)
		}
		expect[*nas.DeregistrationRequestUETerminated](t, u.recvNAS())
		u.sendUL(&nas.DeregistrationAcceptUETerminated{})
		u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
		waitFor(t, "context gone", func() bool { return a.Stats().UEContexts == 0 })
	})
	t.Run("idle", func(t *testing.T) {
		a, hn := newTestAMF(t, nil)
		u := registeredUE(t, a, hn)
		u.goIdle(a)
		if err := a.Deregister(context.Background(), u.supi, 0, false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "context gone", func() bool { return a.Stats().UEContexts == 0 })
		if hn.deregCalls.Load() != 1 {
			t.Errorf("UDM deregistrations %d", hn.deregCalls.Load())
		}
	})
}

// TestServiceRequestNASContainer: TS 24.501 §4.4.6: the UE sends the
// cleartext IEs outside and the complete request, with the Uplink data
// status, ciphered in the NAS message container.
func TestServiceRequestNASContainer(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 1)
	full := &nas.ServiceRequest{ServiceType: nas.ServiceData, NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, STMSI: u.guti.STMSI(),
		UplinkDataStatus: bits(1), PDUSessionStatus: bits(1)}
	ciphered, err := u.sec.Clone().Protect(u.encode(full), nas.IntegrityProtectedAndCiphered, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	u.sendInitial(&nas.ServiceRequest{ServiceType: nas.ServiceData, NgKSI: full.NgKSI, STMSI: full.STMSI,
		NASMessageContainer: ciphered[7:]}, nas.IntegrityProtected)
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	if len(ics.PDUSessionResourceSetupItems) != 1 || ics.PDUSessionResourceSetupItems[0].ID != 1 {
		t.Fatalf("ICS items %+v: the container's Uplink data status was not used", ics.PDUSessionResourceSetupItems)
	}
	if acc := expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU)); acc.PDUSessionStatus == nil {
		t.Error("accept without the PDU session status the container asked for")
	}
}

// TestRegistrationUpdateSessionStatus: a periodic registration update from
// CM-IDLE whose PDU session status lacks session 2: session 2 is released
// locally and at the SMF, and the Registration Accept carries the
// network's status (TS 24.501 §5.5.1.3.4); without the IE, neither.
func TestRegistrationUpdateSessionStatus(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	u := idleUEWithSessions(t, a, hn, smf, 1, 2)
	req := u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationPeriodicUpdating)
	req.PDUSessionStatus = bits(1)
	u.sendInitial(req, nas.IntegrityProtected)
	acc := u.acceptRegistration(u.recvNAS())
	if acc.PDUSessionStatus == nil || *acc.PDUSessionStatus != *bits(1) {
		t.Errorf("Registration Accept PDU session status %v, want session 1 only", acc.PDUSessionStatus)
	}
	if rel := smf.callsOf("release"); len(rel) != 1 || rel[0].id != 2 {
		t.Fatalf("SMF releases %+v, want session 2", rel)
	}
	if s := a.Stats(); s.PDUSessions != 1 {
		t.Errorf("AMF holds %d sessions, want 1", s.PDUSessions)
	}
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "CM-IDLE", func() bool { return a.Stats().ConnectedUEs == 0 })

	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationPeriodicUpdating), nas.IntegrityProtected)
	if acc := u.acceptRegistration(u.recvNAS()); acc.PDUSessionStatus != nil {
		t.Errorf("PDU session status %v in the accept of a request without one", *acc.PDUSessionStatus)
	}
}
