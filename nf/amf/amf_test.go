package amf

import (
	"bytes"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/syncbuf"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
)

func TestNGSetup(t *testing.T) {
	a, _ := newTestAMF(t, nil)
	g := attachGNB(t, a)
	g.send(0, ngSetupRequest(testPLMN, 1, identity.SNSSAI{SST: 1, SD: 0x010203}))
	resp := expect[*ngap.NGSetupResponse](t, g.recv())
	if resp.AMFName != DefaultName {
		t.Errorf("AMF name %q", resp.AMFName)
	}
	want := identity.GUAMI{PLMN: testPLMN, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8}}
	if len(resp.ServedGUAMIs) != 1 || resp.ServedGUAMIs[0] != want {
		t.Errorf("served GUAMIs %+v, want %+v", resp.ServedGUAMIs, want)
	}
	if resp.RelativeAMFCapacity != DefaultRelativeCapacity {
		t.Errorf("relative capacity %d", resp.RelativeAMFCapacity)
	}
	if len(resp.PLMNSupport) != 1 || resp.PLMNSupport[0].PLMN != testPLMN || len(resp.PLMNSupport[0].Slices) != 2 {
		t.Errorf("PLMN support %+v", resp.PLMNSupport)
	}
	waitFor(t, "gNB counted", func() bool { return a.Stats().GNBs == 1 })
}

func TestNGSetupFailure(t *testing.T) {
	a, _ := newTestAMF(t, nil)
	for _, tc := range []struct {
		name  string
		req   *ngap.NGSetupRequest
		cause ngap.Cause
	}{
		{"unknown PLMN", ngSetupRequest(identity.PLMN{MCC: "001", MNC: "01"}, 1, identity.SNSSAI{SST: 1, SD: identity.NoSD}), causeUnknownPLMN},
		{"unknown TAC", ngSetupRequest(testPLMN, 99, identity.SNSSAI{SST: 1, SD: identity.NoSD}), causeUnknownPLMN},
		{"no common slice", ngSetupRequest(testPLMN, 1, identity.SNSSAI{SST: 2, SD: identity.NoSD}), causeSliceNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := attachGNB(t, a)
			g.send(0, tc.req)
			f := expect[*ngap.NGSetupFailure](t, g.recv())
			if f.Cause != tc.cause {
				t.Errorf("cause %v, want %v", f.Cause, tc.cause)
			}
		})
	}
	if s := a.Stats(); s.NGSetupFailures != 3 || s.GNBs != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestNGSetupFailureLogsTAs: a refused NG Setup logs its cause by name
// and what did not match: the TAC and PLMN the gNB serves, and the TAIs
// the AMF is configured with (issue 37: "misc(4)" and nothing else).
func TestNGSetupFailureLogsTAs(t *testing.T) {
	var logs syncbuf.Buffer
	cfg := testConfig()
	a, err := New(cfg, newFakeHN().deps(), slog.New(&dupKeyHandler{inner: slog.NewTextHandler(&logs, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	g := attachGNB(t, a)
	g.send(0, ngSetupRequest(testPLMN, 99, identity.SNSSAI{SST: 1, SD: 0x010203}))
	expect[*ngap.NGSetupFailure](t, g.recv())
	// The log line is written before the failure is sent.
	line := logs.Line("NG Setup rejected")
	for _, want := range []string{
		`cause="misc(4) unknown-PLMN-or-SNPN"`,
		`why="no TAC the gNB serves is in amf.tais for its PLMN"`,
		`gnb_tas="plmn 20893 tac 99 slices 1-010203"`,
		`amf_tais="plmn 20893 tac 1 slices 1-010203,1"`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	g = attachGNB(t, a)
	g.send(0, ngSetupRequest(identity.PLMN{MCC: "001", MNC: "01"}, 1, identity.SNSSAI{SST: 1, SD: identity.NoSD}))
	expect[*ngap.NGSetupFailure](t, g.recv())
	if line := logs.Line("gnb_tas=\"plmn 00101"); !strings.Contains(line, `why="no PLMN the gNB broadcasts is one of amf.tais"`) {
		t.Errorf("unknown PLMN logged as %q", line)
	}
}

func TestGarbledPDUErrorIndication(t *testing.T) {
	a, _ := newTestAMF(t, nil)
	g := attachGNB(t, a)
	g.sendRaw(0, []byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x01})
	ind := expect[*ngap.ErrorIndication](t, g.recv())
	if ind.Cause == nil || ind.Cause.Group != ngap.CauseProtocol {
		t.Errorf("error indication cause %v, want a protocol cause", ind.Cause)
	}
	// The association stays up: NG Setup still works.
	g.send(0, ngSetupRequest(testPLMN, 1, identity.SNSSAI{SST: 1, SD: 0x010203}))
	expect[*ngap.NGSetupResponse](t, g.recv())
	// And once more after setup.
	g.sendRaw(0, []byte{0x00})
	expect[*ngap.ErrorIndication](t, g.recv())
	waitFor(t, "two error indications counted", func() bool { return a.Stats().ErrorIndications == 2 })
}

func TestMessageBeforeNGSetup(t *testing.T) {
	a, _ := newTestAMF(t, nil)
	g := attachGNB(t, a)
	g.send(1, &ngap.UplinkNASTransport{AMFUENGAPID: 1, RANUENGAPID: 1, NASPDU: []byte{0x7e, 0, 0x43},
		UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1}, TAI: testTAI}})
	ind := expect[*ngap.ErrorIndication](t, g.recv())
	if ind.Cause == nil || *ind.Cause != causeNotCompatibleState {
		t.Errorf("cause %v", ind.Cause)
	}
}

func TestUnknownUEIDErrorIndication(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	g.send(1, &ngap.UplinkNASTransport{AMFUENGAPID: 4242, RANUENGAPID: 7, NASPDU: []byte{0x7e, 0, 0x43},
		UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1}, TAI: testTAI}})
	ind := expect[*ngap.ErrorIndication](t, g.recv())
	if ind.Cause == nil || *ind.Cause != causeUnknownLocalID {
		t.Errorf("cause %v, want %v", ind.Cause, causeUnknownLocalID)
	}
	if ind.AMFUENGAPID == nil || *ind.AMFUENGAPID != 4242 || ind.RANUENGAPID == nil || *ind.RANUENGAPID != 7 {
		t.Errorf("IDs not echoed: %+v", ind)
	}
	// A known AMF UE NGAP ID with the wrong RAN UE NGAP ID.
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	g.send(1, &ngap.UplinkNASTransport{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID + 100, NASPDU: []byte{0x7e, 0, 0x43},
		UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1}, TAI: testTAI}})
	ind = expect[*ngap.ErrorIndication](t, g.recv())
	if ind.Cause == nil || *ind.Cause != causeInconsistentRemoteID {
		t.Errorf("cause %v, want %v", ind.Cause, causeInconsistentRemoteID)
	}
}

func TestRegistrationAndDeregistration(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	acc := u.register()

	if acc.Result != nas.Registered3GPP || len(acc.AllowedNSSAI) != 1 || acc.AllowedNSSAI[0] != (identity.SNSSAI{SST: 1, SD: 0x010203}) {
		t.Errorf("accept %+v", acc)
	}
	if len(acc.TAIList) == 0 || acc.TAIList[0] != testTAI {
		t.Errorf("TAI list %+v", acc.TAIList)
	}
	if acc.T3512 == nil {
		t.Error("no T3512")
	}
	if acc.GUTI.GUAMI != a.cfg.guamis[0] {
		t.Errorf("GUTI GUAMI %v", acc.GUTI.GUAMI)
	}
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	s := a.Stats()
	if s.Registrations != 1 || s.Authentications != 1 || s.SecurityModes != 1 {
		t.Errorf("stats %+v", s)
	}
	if hn.uecmRegs[u.supi] == nil {
		t.Error("no Nudm_UECM registration")
	}

	// Deregistration (normal): Accept, then release with cause deregister.
	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	if cmd.Cause != causeNASDeregister {
		t.Errorf("release cause %v", cmd.Cause)
	}
	u.releaseComplete(cmd)
	waitFor(t, "context removed", func() bool {
		s := a.Stats()
		return s.RegisteredUEs == 0 && s.UEContexts == 0 && s.UEContextReleases == 1
	})
	if hn.deregCalls.Load() != 1 {
		t.Errorf("Nudm_UECM deregistration calls %d", hn.deregCalls.Load())
	}
	if a.gutis.lookup(u.guti.TMSI) != nil || a.supis.Get(u.supi) != nil || a.ranUEs.Get(u.amfID) != nil {
		t.Error("tables still hold the UE")
	}
}

func TestInitialContextSetupContents(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	smc := expect[*nas.SecurityModeCommand](t, u.recvNAS())
	// Default priorities: NIA2 and NEA2; the UE's capabilities are replayed.
	if smc.IntegrityAlg != nas.NIA2 || smc.CipheringAlg != nas.NEA2 {
		t.Errorf("selected NIA%d/NEA%d", smc.IntegrityAlg, smc.CipheringAlg)
	}
	if smc.ReplayedUESecurityCapability.EA != u.secCap.EA || smc.ReplayedUESecurityCapability.IA != u.secCap.IA {
		t.Errorf("replayed capability %+v", smc.ReplayedUESecurityCapability)
	}
	if !smc.IMEISVRequest || !smc.RetransmitInitialNAS {
		t.Errorf("IMEISV request %v, RINMR %v", smc.IMEISVRequest, smc.RetransmitInitialNAS)
	}
	u.answerSMC(smc, req)
	msg := u.recvNAS()
	ics := u.lastICS
	if ics == nil {
		t.Fatal("Registration Accept not in an Initial Context Setup Request")
	}
	want := kdf.KgNB(u.kamf, u.smcUL, kdf.AccessType3GPP)
	if !bytes.Equal(ics.SecurityKey[:], want) {
		t.Error("KgNB differs from KDF(KAMF, UL NAS COUNT of Security Mode Complete)")
	}
	if ics.GUAMI != a.cfg.guamis[0] || len(ics.AllowedNSSAI) != 1 {
		t.Errorf("ICS GUAMI %v allowed %v", ics.GUAMI, ics.AllowedNSSAI)
	}
	wantCap := ngap.UESecurityCapabilitiesFromNAS(u.secCap.EA, u.secCap.IA, 0, 0)
	if ics.UESecurityCapabilities != wantCap {
		t.Errorf("UE security capabilities %+v, want %+v", ics.UESecurityCapabilities, wantCap)
	}
	u.acceptRegistration(msg)
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
}

func TestDeregistrationSwitchOff(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	u.sendUL(&nas.DeregistrationRequestUEOriginating{SwitchOff: true, AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	// No Deregistration Accept: the release comes first.
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	if cmd.Cause != causeNASDeregister {
		t.Errorf("release cause %v", cmd.Cause)
	}
	u.releaseComplete(cmd)
	waitFor(t, "context removed", func() bool { s := a.Stats(); return s.UEContexts == 0 && s.RegisteredUEs == 0 })
}

func TestBadMACAfterSecurityModeDiscarded(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })

	dereg := &nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}}
	// Protect with a scratch copy and flip a MAC bit: the AMF must drop it.
	bad, err := u.sec.Clone().Protect(u.encode(dereg), nas.IntegrityProtectedAndCiphered, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	bad[3] ^= 0x01
	u.sendULPDU(bad)
	// An unprotected message after the secure exchange is dropped too.
	u.sendULPDU(u.encode(dereg))
	// The context is intact: a good message with the next count works, and
	// its answer is the first thing the AMF sends (the UE's work is serial).
	u.sendUL(dereg)
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	u.releaseComplete(cmd)
	if d := a.Stats().NASDiscarded; d != 2 {
		t.Errorf("discarded %d NAS messages, want 2", d)
	}
}

func TestT3560Retransmission(t *testing.T) {
	a, hn := newTestAMF(t, func(c *Config) { c.Timers.T3560 = 20 * time.Millisecond })
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	first := expect[*nas.AuthenticationRequest](t, u.recvNAS())
	// Ignore it: T3560 expires and the same challenge is resent.
	again := expect[*nas.AuthenticationRequest](t, u.recvNAS())
	if !bytes.Equal(first.RAND, again.RAND) || !bytes.Equal(first.AUTN, again.AUTN) {
		t.Fatal("retransmission carries a different challenge")
	}
	u.answerAuth(again)
	// Further copies may cross our answer on a loaded machine; skip them.
	var smc *nas.SecurityModeCommand
	for smc == nil {
		switch m := u.recvNAS().(type) {
		case *nas.AuthenticationRequest:
		case *nas.SecurityModeCommand:
			smc = m
		default:
			t.Fatalf("got %T, want Security Mode Command", m)
		}
	}
	u.answerSMC(smc, req)
	// The SMC may have been retransmitted before our answer arrived; skip those.
	for {
		m := u.recvNAS()
		if _, ok := m.(*nas.SecurityModeCommand); ok {
			continue
		}
		u.acceptRegistration(m)
		break
	}
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	if a.Stats().Retransmissions == 0 {
		t.Error("no retransmission counted")
	}
}

func TestT3560ExpiryAbortsAndReleases(t *testing.T) {
	a, hn := newTestAMF(t, func(c *Config) { c.Timers.T3560 = 5 * time.Millisecond })
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	// Five sends in all (TS 24.501 §5.4.1.3.7 b)), then the release.
	for i := 0; i < 5; i++ {
		expect[*nas.AuthenticationRequest](t, u.recvNAS())
	}
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	u.releaseComplete(cmd)
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
	if s := a.Stats(); s.Retransmissions != 4 || s.ProcedureTimeouts != 1 {
		t.Errorf("retransmissions %d timeouts %d", s.Retransmissions, s.ProcedureTimeouts)
	}
}

func TestAuthenticationSynchFailureResync(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.usim.SQN = 1000 // the USIM is ahead of the network (SQN_HE starts at 0)
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	ar := expect[*nas.AuthenticationRequest](t, u.recvNAS())
	_, _, _, err := u.usim.Authenticate(ar.RAND, ar.AUTN)
	var se *milenage.SyncError
	if !errors.As(err, &se) {
		t.Fatalf("USIM did not report a synch failure: %v", err)
	}
	auts := se.AUTS
	u.sendUL(&nas.AuthenticationFailure{Cause: nas.CauseSynchFailure, AUTS: auts})
	// The AMF re-authenticates with RAND+AUTS; the new challenge verifies.
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	u.answerSMC(expect[*nas.SecurityModeCommand](t, u.recvNAS()), req)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	if hn.resyncCalls.Load() != 1 || a.Stats().Resyncs != 1 {
		t.Errorf("resync calls %d stats %d", hn.resyncCalls.Load(), a.Stats().Resyncs)
	}
}

func TestAuthenticationMACFailureRejected(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.usim.K = mustHex("000102030405060708090a0b0c0d0e0f") // wrong key in the UE
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	ar := expect[*nas.AuthenticationRequest](t, u.recvNAS())
	if _, _, _, err := u.usim.Authenticate(ar.RAND, ar.AUTN); err == nil {
		t.Fatal("USIM accepted AUTN from a different key")
	}
	u.sendUL(&nas.AuthenticationFailure{Cause: nas.CauseMACFailure})
	// Identified by SUCI: Authentication Reject and release.
	expect[*nas.AuthenticationReject](t, u.recvNAS())
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	if cmd.Cause != causeNASAuthFailure {
		t.Errorf("release cause %v", cmd.Cause)
	}
	u.releaseComplete(cmd)
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
	if a.Stats().AuthenticationFails != 1 {
		t.Errorf("stats %+v", a.Stats())
	}
}

func TestWrongRESStarRejected(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	u.sendUL(&nas.AuthenticationResponse{RESStar: bytes.Repeat([]byte{0x5a}, 16)})
	expect[*nas.AuthenticationReject](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
}

func TestUnknownSubscriberRejected(t *testing.T) {
	a, _ := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, nil, "0000000099") // not provisioned
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	rej := expect[*nas.RegistrationReject](t, u.recvNAS())
	if rej.Cause != nas.Cause5GSServicesNotAllowed {
		t.Errorf("cause #%d", rej.Cause)
	}
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
}

func TestReRegistrationWithGUTIReusesSecurityContext(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	oldGUTI := *u.guti
	oldAMFID, oldRANID := u.amfID, u.ranID

	// A new RRC connection: integrity-protected Registration Request with
	// the 5G-GUTI. No authentication, no security mode command.
	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: oldGUTI},
		nas.RegistrationMobilityUpdating), nas.IntegrityProtected)
	// The old connection is released first.
	newAMFID := int64(-1)
	var acc nas.Message
	for acc == nil {
		m := g.recv()
		switch v := m.(type) {
		case *ngap.UEContextReleaseCommand:
			if v.AMFUENGAPID != oldAMFID || v.RANUENGAPID != oldRANID {
				t.Fatalf("release of %d/%d, want the old connection %d/%d", v.AMFUENGAPID, v.RANUENGAPID, oldAMFID, oldRANID)
			}
			g.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: v.AMFUENGAPID, RANUENGAPID: v.RANUENGAPID})
		case *ngap.InitialContextSetupRequest:
			newAMFID = v.AMFUENGAPID
			u.amfID = newAMFID
			u.lastICS = v
			acc = u.openNAS(v.NASPDU)
		default:
			t.Fatalf("unexpected %T", m)
		}
	}
	if newAMFID == oldAMFID {
		t.Error("new connection reuses the old AMF UE NGAP ID")
	}
	got := u.acceptRegistration(acc)
	if got.GUTI.TMSI == oldGUTI.TMSI {
		t.Error("5G-GUTI not refreshed")
	}
	waitFor(t, "second registration", func() bool { return a.Stats().Registrations == 2 })
	if s := a.Stats(); s.Authentications != 1 || s.SecurityModes != 1 || s.RegisteredUEs != 1 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
	waitFor(t, "old GUTI released", func() bool { return a.gutis.lookup(oldGUTI.TMSI) == nil })
	if a.gutis.lookup(got.GUTI.TMSI) == nil {
		t.Error("new GUTI not in the table")
	}
}

func TestUnknownGUTITriggersIdentification(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	unknown := identity.GUTI{GUAMI: a.cfg.guamis[0], TMSI: 0x01020304}
	req := u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: unknown}, nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	ir := expect[*nas.IdentityRequest](t, u.recvNAS())
	if ir.IdentityType != nas.IdentitySUCI {
		t.Errorf("identity type %v", ir.IdentityType)
	}
	u.sendUL(&nas.IdentityResponse{MobileIdentity: u.suci()})
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	u.answerSMC(expect[*nas.SecurityModeCommand](t, u.recvNAS()), req)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	if a.Stats().Identifications != 1 {
		t.Errorf("identifications %d", a.Stats().Identifications)
	}
}

func TestT3570Retransmission(t *testing.T) {
	a, hn := newTestAMF(t, func(c *Config) { c.Timers.T3570 = 5 * time.Millisecond })
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI,
		GUTI: identity.GUTI{GUAMI: a.cfg.guamis[0], TMSI: 7}}, nas.RegistrationInitial), nas.Plain)
	for i := 0; i < 5; i++ {
		expect[*nas.IdentityRequest](t, u.recvNAS())
	}
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
}

func TestT3550RetransmissionOfRegistrationAccept(t *testing.T) {
	a, hn := newTestAMF(t, func(c *Config) { c.Timers.T3550 = 20 * time.Millisecond })
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	u.answerSMC(expect[*nas.SecurityModeCommand](t, u.recvNAS()), req)
	first := expect[*nas.RegistrationAccept](t, u.recvNAS())
	g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
	// Not completed: the accept comes again in a Downlink NAS Transport.
	m := u.recvNGAP()
	dl := expect[*ngap.DownlinkNASTransport](t, m)
	again := expect[*nas.RegistrationAccept](t, u.openNAS(dl.NASPDU))
	if again.GUTI == nil || *again.GUTI != *first.GUTI {
		t.Error("retransmitted accept carries another GUTI")
	}
	u.lastICS = nil
	u.acceptRegistration(again)
	waitFor(t, "registered", func() bool { return a.Stats().Registrations == 1 })
}

func TestManyUEsInParallel(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	const n = 20
	gnbs := []*testGNB{setupGNB(t, a), setupGNB(t, a)}
	// One test goroutine per gNB drives its UEs strictly one message at a
	// time per UE but interleaved across UEs.
	done := make(chan struct{}, len(gnbs))
	for gi, g := range gnbs {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < n/len(gnbs); i++ {
				u := newTestUE(t, g, hn, "00000001"+string(rune('0'+gi))+string(rune('0'+i)))
				u.register()
			}
		}()
	}
	for range gnbs {
		<-done
	}
	waitFor(t, "all registered", func() bool { return a.Stats().RegisteredUEs == n })
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	hn := newFakeHN()
	cfg := testConfig()
	a, err := New(cfg, hn.deps(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS()) // T3560 running
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The association is closed: what is queued drains, then the reader ends.
	for range g.in {
	}
	// Nothing the AMF started is left running (timers included: T3560 was
	// armed with 1 s).
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"amf.guamis[0].plmn", func(c *Config) { c.GUAMIs[0].PLMN = "20x93" }},
		{"amf.guamis[0].set", func(c *Config) { c.GUAMIs[0].Set = 0x400 }},
		{"amf.guamis[0].pointer", func(c *Config) { c.GUAMIs[0].Pointer = 0x40 }},
		{"amf.tais[0].tac", func(c *Config) { c.TAIs[0].TAC = 1 << 24 }},
		{"amf.tais[0].slices[0]", func(c *Config) { c.TAIs[0].Slices = []string{"1-xyz"} }},
		{"amf.tais", func(c *Config) { c.TAIs = nil }},
		{"amf.security.integrity", func(c *Config) { c.Security.Integrity = []string{"NIA9"} }},
		{"amf.security.integrity", func(c *Config) { c.Security.Integrity = []string{"NIA0", "NIA2"} }},
		{"amf.security.ciphering", func(c *Config) { c.Security.Ciphering = []string{"NEA2", "NEA2"} }},
		{"amf.timers.t3560", func(c *Config) { c.Timers.T3560 = -time.Second }},
		{"amf.n2Address", func(c *Config) { c.N2Address = "nocolon" }},
		{"amf.n2Address", func(c *Config) { c.N2Address = "127.0.0.1:99999" }},
		{"amf.sctp.maxMissedHeartbeats", func(c *Config) { c.SCTP.MaxMissedHeartbeats = -1 }},
		{"amf.sctp.handshakeTimeout", func(c *Config) { c.SCTP.HandshakeTimeout = -time.Second }},
		{"amf.sctp.transport", func(c *Config) { c.SCTP.Transport = "tcp" }},
		{"amf.name", func(c *Config) { c.Name = strings.Repeat("x", 151) }},
	} {
		c := DefaultConfig()
		c.GUAMIs = append([]GUAMIConfig(nil), c.GUAMIs...)
		c.TAIs = append([]TAIConfig(nil), c.TAIs...)
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming the field", tc.field, err)
		}
	}
	// NEA0 first is allowed (used for readable captures).
	c := DefaultConfig()
	c.Security.Ciphering = []string{"NEA0", "NEA2"}
	if err := c.Validate(); err != nil {
		t.Errorf("NEA0 first: %v", err)
	}
}

func TestNEA0Selected(t *testing.T) {
	a, hn := newTestAMF(t, func(c *Config) { c.Security.Ciphering = []string{"NEA0"} })
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	smc := expect[*nas.SecurityModeCommand](t, u.recvNAS())
	if smc.CipheringAlg != nas.NEA0 {
		t.Errorf("NEA%d selected", smc.CipheringAlg)
	}
	u.answerSMC(smc, req)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
}

func TestGNBInitiatedReleaseKeepsRegisteredUE(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	// User inactivity: the gNB asks for release (TS 38.413 §8.3.2).
	inactivity := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}
	g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, Cause: inactivity})
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())
	if cmd.Cause != inactivity {
		t.Errorf("release cause %v, want the gNB's", cmd.Cause)
	}
	u.releaseComplete(cmd)
	waitFor(t, "connection released", func() bool { return a.Stats().UEContextReleases == 1 })
	if s := a.Stats(); s.RegisteredUEs != 1 || s.UEContexts != 1 {
		t.Fatalf("UE context not kept in CM-IDLE: %+v", s)
	}
	// From CM-IDLE the UE comes back with its 5G-GUTI (periodic update).
	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti},
		nas.RegistrationPeriodicUpdating), nas.IntegrityProtected)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered again", func() bool { return a.Stats().Registrations == 2 })
	if s := a.Stats(); s.Authentications != 1 {
		t.Errorf("re-authenticated: %+v", s)
	}
}

func TestAssociationLossDropsUnregisteredUEs(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	g.conn.Close()
	waitFor(t, "context dropped", func() bool { s := a.Stats(); return s.UEContexts == 0 && s.GNBs == 0 })
	if a.ranUEs.Get(u.amfID) != nil {
		t.Error("connection still in the table")
	}
}

func TestConfigYAML(t *testing.T) {
	doc := `
name: amf-a
guamis: [{plmn: "00101", region: 1, set: 2, pointer: 3}]
tais: [{plmn: "00101", tac: 7, slices: ["1", "2-0000aa"]}]
n2Address: 10.0.0.1:38412
security: {integrity: [NIA1], ciphering: [NEA0, NEA2]}
timers: {t3550: 2s, t3560: 1500ms, t3570: 3s, t3512: 1h, maxRetransmissions: 2}
relativeCapacity: 0
`
	var c Config
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults()
	s, err := c.compile()
	if err != nil {
		t.Fatal(err)
	}
	if s.timers.T3560 != 1500*time.Millisecond || s.timers.MaxRetransmissions != 2 || s.relCapacity != 0 {
		t.Errorf("timers %+v capacity %d", s.timers, s.relCapacity)
	}
	if s.guamis[0].AMFID != (identity.AMFID{RegionID: 1, SetID: 2, Pointer: 3}) || s.encPrio[0] != nas.NEA0 {
		t.Errorf("compiled %+v", s)
	}
	if got := s.taSlices[identity.TAI{PLMN: identity.PLMN{MCC: "001", MNC: "01"}, TAC: 7}]; len(got) != 2 || got[1] != (identity.SNSSAI{SST: 2, SD: 0xaa}) {
		t.Errorf("slices %v", got)
	}
}

// TestBadIMEISVInSecurityModeComplete: an independent RAN simulator sends
// an IMEISV of 17 digits (odd indicator set, no filler). TS 24.501 §7.7.1:
// a syntactically incorrect optional IE is treated as not present, so the
// registration goes on (it used to end in 5GMM STATUS #96).
func TestBadIMEISVInSecurityModeComplete(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	smc := expect[*nas.SecurityModeCommand](t, u.recvNAS())
	plain := u.encode(&nas.SecurityModeComplete{IMEISV: "4370816125816151", NASMessageContainer: u.encode(req)})
	i := bytes.Index(plain, []byte{0x77, 0x00, 0x09})
	if i < 0 || !smc.RetransmitInitialNAS {
		t.Fatalf("no IMEISV IE in % x", plain)
	}
	plain[i+3] |= 1 << 3                    // odd number of digits
	plain[i+3+8] = plain[i+3+8]&0x0f | 0x70 // a 17th digit where the filler was
	u.smcDone = true
	pdu, err := u.sec.Protect(plain, nas.IntegrityProtectedAndCipheredNewContext, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	u.sendULPDU(pdu)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	if s := a.Stats(); s.NASDiscarded != 0 {
		t.Errorf("stats %+v", s)
	}
}
