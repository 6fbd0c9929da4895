package amf

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

var (
	testPLMN  = identity.PLMN{MCC: "208", MNC: "93"}
	testTAI   = identity.TAI{PLMN: testPLMN, TAC: 1}
	testSlice = identity.SNSSAI{SST: 1, SD: 0x010203}
	testK     = mustHex("465b5ce8b199b49faa5f0a2ee238a6bc")
	testOPc   = mustHex("cd63cb71954a9f4e48a5994e37a02baf")
	// recvTimeout bounds waits for a message that must come; generous so
	// that a loaded machine does not fail tests.
	recvTimeout = 10 * time.Second
)

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		fmt.Sscanf(s[2*i:2*i+2], "%02x", &b[i])
	}
	return b
}

func testLogger() *slog.Logger { return slog.New(newTestLogHandler()) }

func testConfig() Config {
	c := DefaultConfig()
	c.Timers.T3550 = time.Second
	c.Timers.T3560 = time.Second
	c.Timers.T3570 = time.Second
	return c
}

func newTestAMF(t testing.TB, mutate func(*Config)) (*AMF, *fakeHN) {
	t.Helper()
	cfg := testConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	hn := newFakeHN()
	a, err := New(cfg, hn.deps(), testLogger())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a, hn
}

// testGNB is the RAN side of one in-memory association.
type testGNB struct {
	t       testing.TB
	conn    sctp.Conn
	in      chan sctp.Message // filled by a reader goroutine
	nextRAN int64
}

func attachGNB(t testing.TB, a *AMF) *testGNB {
	t.Helper()
	gEnd, amfEnd := memPipe(8)
	a.ServeConn(amfEnd)
	return newTestGNB(t, gEnd)
}

func newTestGNB(t testing.TB, c sctp.Conn) *testGNB {
	g := &testGNB{t: t, conn: c, in: make(chan sctp.Message, 1024), nextRAN: 1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(g.in)
		for {
			m, err := c.Recv()
			if err != nil {
				return
			}
			g.in <- m
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return g
}

// setupGNB attaches a gNB and completes NG Setup.
func setupGNB(t testing.TB, a *AMF) *testGNB {
	t.Helper()
	g := attachGNB(t, a)
	g.send(0, ngSetupRequest(testPLMN, 1, identity.SNSSAI{SST: 1, SD: 0x010203}))
	if _, ok := g.recv().(*ngap.NGSetupResponse); !ok {
		t.Fatal("NG Setup did not succeed")
	}
	return g
}

// nextGNBID numbers the test gNBs: a node's Global RAN Node ID is unique,
// and a second NG Setup with the same one replaces the first association
// (TS 38.413 §8.7.1.2). The handover tests name theirs from 1.
var nextGNBID atomic.Uint32

func init() { nextGNBID.Store(1000) }

func ngSetupRequest(p identity.PLMN, tac uint32, slices ...identity.SNSSAI) *ngap.NGSetupRequest {
	return &ngap.NGSetupRequest{
		GlobalRANNodeID: ngap.GlobalGNBID{PLMN: p, GNBID: nextGNBID.Add(1), BitLen: 22},
		RANNodeName:     "test-gnb",
		SupportedTAs: []ngap.SupportedTA{{TAC: tac, BroadcastPLMNs: []ngap.BroadcastPLMN{
			{PLMN: p, Slices: slices},
		}}},
		DefaultPagingDRX: ngap.PagingDRX128,
	}
}

func (g *testGNB) send(stream uint16, m ngap.Message) {
	g.t.Helper()
	b, err := ngap.Encode(m)
	if err != nil {
		g.t.Fatalf("encode %T: %v", m, err)
	}
	g.sendRaw(stream, b)
}

func (g *testGNB) sendRaw(stream uint16, b []byte) {
	g.t.Helper()
	if err := g.conn.Send(stream, ngap.PPID, b); err != nil {
		g.t.Fatalf("send: %v", err)
	}
}

func (g *testGNB) recv() ngap.Message {
	g.t.Helper()
	select {
	case m, ok := <-g.in:
		if !ok {
			g.t.Fatal("association closed while waiting for a message")
		}
		if m.PPID != ngap.PPID {
			g.t.Fatalf("PPID %d, want %d", m.PPID, ngap.PPID)
		}
		msg, err := ngap.Decode(m.Data)
		if err != nil {
			g.t.Fatalf("decode NGAP from AMF: %v", err)
		}
		return msg
	case <-time.After(recvTimeout):
		g.t.Fatal("timed out waiting for an NGAP message from the AMF")
		return nil
	}
}

// testUE is a UE (with its RRC connection) driven by the test.
type testUE struct {
	t      testing.TB
	g      *testGNB
	msin   string
	supi   string
	usim   milenage.USIM
	secCap nas.UESecurityCapability

	ranID, amfID int64
	sec          *nas.SecurityContext
	kamf         []byte
	guti         *identity.GUTI
	lastICS      *ngap.InitialContextSetupRequest
	loc          *ngap.UserLocationNR // the cell the UE is in; nil = cell 0x10 of testTAI
	smcUL        uint32               // uplink count of Security Mode Complete
	smcDone      bool                 // Security Mode Complete sent for the current context
}

func newTestUE(t testing.TB, g *testGNB, hn *fakeHN, msin string) *testUE {
	u := &testUE{
		t: t, g: g, msin: msin, supi: identity.IMSI(testPLMN, msin),
		usim:   milenage.USIM{K: testK, OPc: testOPc, AMF: []byte{0x80, 0}},
		secCap: nas.UESecurityCapability{EA: 0xF0, IA: 0x70}, // EA0-3, IA1-3
	}
	if hn != nil {
		hn.add(u.supi, testK, testOPc, 0)
	}
	return u
}

func (u *testUE) suci() nas.MobileIdentity {
	s, err := suci.NullScheme(testPLMN, "0000", u.msin)
	if err != nil {
		u.t.Fatalf("suci: %v", err)
	}
	return nas.MobileIdentity{Type: nas.IdentitySUCI, SUCI: s.String()}
}

func (u *testUE) registrationRequest(id nas.MobileIdentity, typ nas.RegistrationType) *nas.RegistrationRequest {
	cap := u.secCap
	ksi := nas.NgKSI{KSI: nas.KSINoKey}
	if u.sec != nil {
		ksi.KSI = u.sec.NgKSI()
	}
	return &nas.RegistrationRequest{
		RegistrationType:     typ,
		FollowOnRequest:      false,
		NgKSI:                ksi,
		MobileIdentity:       id,
		UESecurityCapability: &cap,
		RequestedNSSAI:       []identity.SNSSAI{{SST: 1, SD: 0x010203}},
	}
}

func (u *testUE) encode(m nas.Message) []byte {
	u.t.Helper()
	b, err := nas.Encode(m)
	if err != nil {
		u.t.Fatalf("nas encode %T: %v", m, err)
	}
	return b
}

// sendInitial sends m in an Initial UE Message on a new RRC connection.
func (u *testUE) sendInitial(m nas.Message, hdr nas.SecurityHeaderType) {
	u.t.Helper()
	pdu := u.encode(m)
	if hdr != nas.Plain {
		var err error
		if pdu, err = u.sec.Protect(pdu, hdr, nas.Uplink); err != nil {
			u.t.Fatalf("protect: %v", err)
		}
	}
	u.ranID = u.g.nextRAN
	u.g.nextRAN++
	u.amfID = -1
	u.g.send(1, &ngap.InitialUEMessage{
		RANUENGAPID:           u.ranID,
		NASPDU:                pdu,
		UserLocation:          u.location(),
		RRCEstablishmentCause: ngap.RRCMOSignalling,
	})
}

// sendUL sends m in an Uplink NAS Transport, protected once a context exists.
func (u *testUE) sendUL(m nas.Message) {
	u.t.Helper()
	pdu := u.encode(m)
	if u.sec != nil {
		var err error
		if pdu, err = u.sec.Protect(pdu, nas.IntegrityProtectedAndCiphered, nas.Uplink); err != nil {
			u.t.Fatalf("protect: %v", err)
		}
	}
	u.sendULPDU(pdu)
}

func (u *testUE) sendULPDU(pdu []byte) {
	u.t.Helper()
	u.g.send(1, &ngap.UplinkNASTransport{
		AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, NASPDU: pdu,
		UserLocation: u.location(),
	})
}

func (u *testUE) location() ngap.UserLocationNR {
	if u.loc != nil {
		return *u.loc
	}
	return ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 0x10}, TAI: testTAI}
}

// recvNGAP returns the next NGAP message for this UE's connection.
func (u *testUE) recvNGAP() ngap.Message {
	u.t.Helper()
	m := u.g.recv()
	switch v := m.(type) {
	case *ngap.DownlinkNASTransport:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.InitialContextSetupRequest:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
		u.lastICS = v
	case *ngap.UEContextReleaseCommand:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceSetupRequest:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceModifyRequest:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceReleaseCommand:
		u.checkIDs(v.AMFUENGAPID, v.RANUENGAPID)
	}
	return m
}

func (u *testUE) checkIDs(amfID, ranID int64) {
	u.t.Helper()
	if ranID != u.ranID {
		u.t.Fatalf("RAN UE NGAP ID %d, want %d", ranID, u.ranID)
	}
	if u.amfID == -1 {
		u.amfID = amfID
	} else if amfID != u.amfID {
		u.t.Fatalf("AMF UE NGAP ID %d, want %d", amfID, u.amfID)
	}
}

// recvNAS returns the next downlink NAS message (from a Downlink NAS
// Transport or an Initial Context Setup Request), verified and deciphered.
func (u *testUE) recvNAS() nas.Message {
	u.t.Helper()
	m := u.recvNGAP()
	var pdu []byte
	switch v := m.(type) {
	case *ngap.DownlinkNASTransport:
		pdu = v.NASPDU
	case *ngap.InitialContextSetupRequest:
		pdu = v.NASPDU
	default:
		u.t.Fatalf("got %T, want a message carrying NAS", m)
	}
	return u.openNAS(pdu)
}

func (u *testUE) openNAS(pdu []byte) nas.Message {
	u.t.Helper()
	hdr, err := nas.SecurityHeader(pdu)
	if err != nil {
		u.t.Fatalf("downlink NAS: %v", err)
	}
	plain := pdu
	switch hdr {
	case nas.Plain:
	case nas.IntegrityProtectedNewContext:
		// Security Mode Command: build the new context from its algorithms.
		inner, _, err := nas.PeekPlain(pdu)
		if err != nil {
			u.t.Fatal(err)
		}
		m, err := nas.Decode(inner)
		if err != nil {
			u.t.Fatal(err)
		}
		smc, ok := m.(*nas.SecurityModeCommand)
		if !ok {
			u.t.Fatalf("new-context header on %T", m)
		}
		if !u.smcDone {
			// A retransmitted command keeps the context already taken.
			kEnc, kInt := kdf.NASKeys(u.kamf, smc.CipheringAlg, smc.IntegrityAlg)
			u.sec = nas.NewSecurityContext(kEnc, kInt, smc.CipheringAlg, smc.IntegrityAlg, smc.NgKSI.KSI)
		}
		fallthrough
	default:
		if u.sec == nil {
			u.t.Fatalf("protected downlink NAS (%s) without a context", hdr)
		}
		if plain, _, err = u.sec.Unprotect(pdu, nas.Downlink); err != nil {
			u.t.Fatalf("downlink NAS does not verify: %v", err)
		}
	}
	m, err := nas.Decode(plain)
	if err != nil {
		u.t.Fatalf("decode downlink NAS: %v", err)
	}
	return m
}

func expect[T any](t testing.TB, m any) T {
	t.Helper()
	v, ok := m.(T)
	if !ok {
		var zero T
		t.Fatalf("got %T (%+v), want %T", m, m, zero)
	}
	return v
}

// answerAuth runs the USIM on an Authentication Request and derives KAMF.
func (u *testUE) answerAuth(req *nas.AuthenticationRequest) {
	u.t.Helper()
	res, ck, ik, err := u.usim.Authenticate(req.RAND, req.AUTN)
	if err != nil {
		u.t.Fatalf("USIM: %v", err)
	}
	snn := kdf.ServingNetworkName(testPLMN)
	resStar := kdf.RESStar(ck, ik, snn, req.RAND, res)
	kausf := kdf.KAUSF(ck, ik, snn, req.AUTN[:6])
	u.kamf = kdf.KAMF(kdf.KSEAF(kausf, snn), u.supi, req.ABBA)
	u.sendUL(&nas.AuthenticationResponse{RESStar: resStar})
}

// answerSMC sends Security Mode Complete under the new context.
func (u *testUE) answerSMC(smc *nas.SecurityModeCommand, full *nas.RegistrationRequest) {
	u.t.Helper()
	c := &nas.SecurityModeComplete{IMEISV: "4370816125816151"}
	if smc.RetransmitInitialNAS && full != nil {
		c.NASMessageContainer = u.encode(full)
	}
	u.smcDone = true
	u.smcUL = u.sec.NextCount(nas.Uplink)
	pdu, err := u.sec.Protect(u.encode(c), nas.IntegrityProtectedAndCipheredNewContext, nas.Uplink)
	if err != nil {
		u.t.Fatal(err)
	}
	u.sendULPDU(pdu)
}

// acceptRegistration handles the Registration Accept inside an Initial
// Context Setup Request and completes registration.
func (u *testUE) acceptRegistration(m nas.Message) *nas.RegistrationAccept {
	u.t.Helper()
	acc := expect[*nas.RegistrationAccept](u.t, m)
	if acc.GUTI == nil {
		u.t.Fatal("Registration Accept without 5G-GUTI")
	}
	u.guti = acc.GUTI
	if ics := u.lastICS; ics != nil {
		u.lastICS = nil
		u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
	}
	u.sendUL(&nas.RegistrationComplete{})
	return acc
}

// register runs a complete initial registration with SUCI.
func (u *testUE) register() *nas.RegistrationAccept {
	u.t.Helper()
	u.sec, u.smcDone = nil, false
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](u.t, u.recvNAS()))
	u.answerSMC(expect[*nas.SecurityModeCommand](u.t, u.recvNAS()), req)
	return u.acceptRegistration(u.recvNAS())
}

// releaseComplete answers a UE Context Release Command.
func (u *testUE) releaseComplete(cmd *ngap.UEContextReleaseCommand) {
	u.g.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: cmd.AMFUENGAPID, RANUENGAPID: cmd.RANUENGAPID})
}

// waitFor polls cond (state reached through the AMF's own goroutines).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(recvTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
