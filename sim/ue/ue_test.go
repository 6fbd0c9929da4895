package ue

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/sim/usim"
)

// The tests below play the AMF by hand against one UE: each downlink
// message is built here and fed to HandleNAS (as the gNB's reader would),
// and each uplink message the UE sends is checked.

var (
	plmn       = identity.PLMN{MCC: "208", MNC: "93"}
	testK      = mustHex("8baf473f2f8fd09487cccbd7097c6862")
	testOP     = mustHex("8e27b6af0e692e750f32667a3b14605d")
	testSlices = []identity.SNSSAI{{SST: 1, SD: 0x010203}}
	guti1      = identity.GUTI{GUAMI: identity.GUAMI{PLMN: plmn, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8, Pointer: 0}}, TMSI: 0x1234}
	guti2      = identity.GUTI{GUAMI: guti1.GUAMI, TMSI: 0x5678}
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// link captures the UE's uplink.
type link struct {
	up              chan upPDU
	mu              sync.Mutex
	dropped         int
	releaseRequests int
	paging          *identity.STMSI // SetPagingIdentity
	data            chan dataPDU    // nil: SendData fails
}

type dataPDU struct {
	psi uint8
	pkt []byte
}

type upPDU struct {
	pdu     []byte
	initial bool
	cause   ngap.RRCEstablishmentCause
	stmsi   *identity.STMSI
}

func newLink() *link { return &link{up: make(chan upPDU, 16)} }

func (l *link) SendInitial(pdu []byte, cause ngap.RRCEstablishmentCause, s *identity.STMSI) (time.Time, error) {
	l.up <- upPDU{pdu: append([]byte(nil), pdu...), initial: true, cause: cause, stmsi: s}
	return time.Now(), nil
}

func (l *link) SetPagingIdentity(s *identity.STMSI) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == nil {
		l.paging = nil
		return
	}
	c := *s
	l.paging = &c
}

func (l *link) pagingIdentity() *identity.STMSI {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paging
}

func (l *link) SendUplink(pdu []byte) (time.Time, error) {
	l.up <- upPDU{pdu: append([]byte(nil), pdu...)}
	return time.Now(), nil
}

func (l *link) RequestRelease() (time.Time, error) {
	l.mu.Lock()
	l.releaseRequests++
	l.mu.Unlock()
	return time.Now(), nil
}

func (l *link) SendData(psi uint8, pkt []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.data == nil {
		return errors.New("test link: no user plane")
	}
	l.data <- dataPDU{psi: psi, pkt: append([]byte(nil), pkt...)}
	return nil
}

func (l *link) Drop() {
	l.mu.Lock()
	l.dropped++
	l.mu.Unlock()
}

// amf is the scripted network side.
type amf struct {
	t    *testing.T
	u    *UE
	l    *link
	snn  string
	sqn  uint64
	kamf []byte
	ksi  uint8
	sec  *nas.SecurityContext
}

func newUE(t *testing.T, k []byte, sqn uint64) (*UE, *amf) {
	t.Helper()
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: "0000000001", K: k, OPc: testOP, SQN: sqn})
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: testSlices, EA: 0xF0, IA: 0xF0, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := newLink()
	u.Attach(l)
	return u, &amf{t: t, u: u, l: l, snn: kdf.ServingNetworkName(plmn), sqn: 0x20}
}

// start runs f (a UE procedure) in the background and returns its result channel.
func start(f func(context.Context) error) chan error {
	ch := make(chan error, 1)
	go func() { ch <- f(context.Background()) }()
	return ch
}

func (a *amf) next() upPDU {
	a.t.Helper()
	select {
	case p := <-a.l.up:
		return p
	case <-time.After(2 * time.Second):
		a.t.Fatal("UE sent nothing")
	}
	return upPDU{}
}

func (a *amf) noUplink() {
	a.t.Helper()
	select {
	case p := <-a.l.up:
		a.t.Fatalf("unexpected uplink % x", p.pdu)
	default:
	}
}

// recv reads the next uplink message, removing protection when the network
// has a context; it returns the plain message and the header type.
func (a *amf) recv() (nas.Message, nas.SecurityHeaderType) {
	a.t.Helper()
	p := a.next()
	hdr, err := nas.SecurityHeader(p.pdu)
	if err != nil {
		a.t.Fatal(err)
	}
	plain := p.pdu
	if hdr != nas.Plain {
		if a.sec == nil {
			a.t.Fatalf("protected uplink (%s) but the network has no context", hdr)
		}
		if plain, _, err = a.sec.Unprotect(p.pdu, nas.Uplink); err != nil {
			a.t.Fatalf("uplink unprotect: %v", err)
		}
	}
	m, err := nas.Decode(plain)
	if err != nil {
		a.t.Fatalf("uplink decode: %v", err)
	}
	return m, hdr
}

func (a *amf) sendPlain(m nas.Message) {
	a.t.Helper()
	b, err := nas.Encode(m)
	if err != nil {
		a.t.Fatal(err)
	}
	a.u.HandleNAS(b)
}

func (a *amf) sendProtected(m nas.Message, hdr nas.SecurityHeaderType) []byte {
	a.t.Helper()
	b, err := nas.Encode(m)
	if err != nil {
		a.t.Fatal(err)
	}
	pdu, err := a.sec.Protect(b, hdr, nas.Downlink)
	if err != nil {
		a.t.Fatal(err)
	}
	a.u.HandleNAS(pdu)
	return pdu
}

func (a *amf) vector() (milenage.Vector, []byte) {
	a.t.Helper()
	a.sqn++
	sqn, _ := milenage.SQNBytes(a.sqn)
	rnd := bytes.Repeat([]byte{byte(a.sqn)}, 16)
	v, err := milenage.Generate(testK, testOP, rnd, sqn, []byte{0x80, 0x00})
	if err != nil {
		a.t.Fatal(err)
	}
	return v, kdf.RESStar(v.CK, v.IK, a.snn, v.RAND, v.XRES)
}

// authenticate runs 5G AKA from the network side and derives KAMF.
func (a *amf) authenticate() {
	a.t.Helper()
	v, xres := a.vector()
	a.ksi = (a.ksi + 1) % 7
	a.sendAuth(v)
	m, _ := a.recv()
	resp, ok := m.(*nas.AuthenticationResponse)
	if !ok {
		a.t.Fatalf("want Authentication Response, got %T %+v", m, m)
	}
	if !bytes.Equal(resp.RESStar, xres) {
		a.t.Fatalf("RES* %x, want %x", resp.RESStar, xres)
	}
	kseaf := kdf.KSEAF(kdf.KAUSF(v.CK, v.IK, a.snn, v.AUTN[:6]), a.snn)
	a.kamf = kdf.KAMF(kseaf, "imsi-208930000000001", []byte{0, 0})
}

func (a *amf) sendAuth(v milenage.Vector) {
	req := &nas.AuthenticationRequest{NgKSI: nas.NgKSI{KSI: a.ksi}, ABBA: []byte{0, 0}, RAND: v.RAND, AUTN: v.AUTN}
	if a.sec != nil {
		a.sendProtected(req, nas.IntegrityProtectedAndCiphered)
		return
	}
	a.sendPlain(req)
}

// securityMode sends the SMC (NEA2/NIA2) and checks the Complete; it
// returns the registration request from the container.
func (a *amf) securityMode(rinmr bool) *nas.RegistrationRequest {
	a.t.Helper()
	enc, integ := kdf.NASKeys(a.kamf, nas.NEA2, nas.NIA2)
	a.sec = nas.NewSecurityContext(enc, integ, nas.NEA2, nas.NIA2, a.ksi)
	a.sendProtected(&nas.SecurityModeCommand{
		CipheringAlg: nas.NEA2, IntegrityAlg: nas.NIA2, NgKSI: nas.NgKSI{KSI: a.ksi},
		ReplayedUESecurityCapability: nas.UESecurityCapability{EA: 0xF0, IA: 0xF0},
		IMEISVRequest:                true, RetransmitInitialNAS: rinmr,
	}, nas.IntegrityProtectedNewContext)
	m, hdr := a.recv()
	if hdr != nas.IntegrityProtectedAndCipheredNewContext {
		a.t.Fatalf("security mode complete with header %s", hdr)
	}
	c, ok := m.(*nas.SecurityModeComplete)
	if !ok {
		a.t.Fatalf("want Security Mode Complete, got %T %+v", m, m)
	}
	if len(c.IMEISV) != 16 {
		a.t.Fatalf("IMEISV %q", c.IMEISV)
	}
	if c.NASMessageContainer == nil {
		return nil
	}
	inner, err := nas.Decode(c.NASMessageContainer)
	if err != nil {
		a.t.Fatal(err)
	}
	rr, ok := inner.(*nas.RegistrationRequest)
	if !ok {
		a.t.Fatalf("container holds %T", inner)
	}
	return rr
}

func (a *amf) accept(g identity.GUTI) {
	a.t.Helper()
	gg := g
	a.sendProtected(&nas.RegistrationAccept{
		Result: nas.Registered3GPP, GUTI: &gg,
		TAIList:      []identity.TAI{{PLMN: plmn, TAC: 1}},
		AllowedNSSAI: testSlices,
	}, nas.IntegrityProtectedAndCiphered)
	m, hdr := a.recv()
	if _, ok := m.(*nas.RegistrationComplete); !ok || hdr != nas.IntegrityProtectedAndCiphered {
		a.t.Fatalf("want protected Registration Complete, got %T (%s)", m, hdr)
	}
}

// register drives a full initial registration with SUCI.
func (a *amf) register() {
	a.t.Helper()
	done := start(a.u.Register)
	m, hdr := a.recv()
	rr, ok := m.(*nas.RegistrationRequest)
	if !ok || hdr != nas.Plain {
		a.t.Fatalf("want plain Registration Request, got %T (%s)", m, hdr)
	}
	if rr.MobileIdentity.Type != nas.IdentitySUCI || rr.MobileIdentity.SUCI != "suci-0-208-93-0000-0-0-0000000001" {
		a.t.Fatalf("mobile identity %+v", rr.MobileIdentity)
	}
	if rr.RequestedNSSAI != nil {
		a.t.Fatal("initial message carries a non-cleartext IE (requested NSSAI)")
	}
	if rr.NgKSI.KSI != nas.KSINoKey || rr.UESecurityCapability == nil {
		a.t.Fatalf("ngKSI %+v, capability %v", rr.NgKSI, rr.UESecurityCapability)
	}
	a.authenticate()
	full := a.securityMode(false)
	if full == nil || len(full.RequestedNSSAI) != 1 || full.RequestedNSSAI[0] != testSlices[0] {
		a.t.Fatalf("security mode complete container %+v, want the full request with NSSAI", full)
	}
	a.accept(guti1)
	if err := <-done; err != nil {
		a.t.Fatal(err)
	}
}

func (a *amf) deregister(switchOff bool) {
	a.t.Helper()
	done := start(func(ctx context.Context) error { return a.u.Deregister(ctx, switchOff) })
	m, hdr := a.recv()
	d, ok := m.(*nas.DeregistrationRequestUEOriginating)
	if !ok || hdr != nas.IntegrityProtectedAndCiphered {
		a.t.Fatalf("want ciphered Deregistration Request, got %T (%s)", m, hdr)
	}
	if d.SwitchOff != switchOff || d.MobileIdentity.Type != nas.IdentityGUTI || d.MobileIdentity.GUTI != guti1 {
		a.t.Fatalf("deregistration request %+v", d)
	}
	if !switchOff {
		a.sendProtected(&nas.DeregistrationAcceptUEOriginating{}, nas.IntegrityProtectedAndCiphered)
		select {
		case err := <-done:
			a.t.Fatalf("deregistration finished before the release: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	a.u.HandleRelease(time.Now())
	if err := <-done; err != nil {
		a.t.Fatal(err)
	}
}

type obs struct {
	mu   sync.Mutex
	ok   map[string]int
	fail map[string]int
}

func (o *obs) Observe(p string, d time.Duration) {
	o.mu.Lock()
	o.ok[p]++
	o.mu.Unlock()
}

func (o *obs) Fail(p string) {
	o.mu.Lock()
	o.fail[p]++
	o.mu.Unlock()
}

func TestRegisterDeregister(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := &obs{ok: map[string]int{}, fail: map[string]int{}}
	u.cfg.Observer = o
	a.register()
	if g, ok := u.GUTI(); !ok || g != guti1 || !u.Registered() || !u.Connected() {
		t.Fatalf("after registration: guti %v %v registered %v connected %v", g, ok, u.Registered(), u.Connected())
	}
	if u.LastWindow() <= 0 || len(u.AllowedNSSAI()) != 1 || len(u.TAIList()) != 1 {
		t.Fatalf("window %v nssai %v tai %v", u.LastWindow(), u.AllowedNSSAI(), u.TAIList())
	}
	a.deregister(false)
	if u.Registered() || u.Connected() {
		t.Fatal("still registered or connected after deregistration")
	}
	if o.ok[ProcRegistration] != 1 || o.ok[ProcDeregistration] != 1 || len(o.fail) != 0 {
		t.Fatalf("observer ok %v fail %v", o.ok, o.fail)
	}
}

func TestSwitchOff(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	a.deregister(true)
	if u.Registered() {
		t.Fatal("registered after switch-off")
	}
}

func TestReregisterWithGUTI(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	a.deregister(false)

	done := start(u.Reregister)
	p := a.next()
	if !p.initial || p.stmsi == nil || p.stmsi.TMSI != guti1.TMSI {
		t.Fatalf("initial %v stmsi %+v", p.initial, p.stmsi)
	}
	if hdr, _ := nas.SecurityHeader(p.pdu); hdr != nas.IntegrityProtected {
		t.Fatalf("re-registration header %s, want integrity protected", hdr)
	}
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil {
		t.Fatalf("network cannot verify the re-registration: %v", err)
	}
	m, _ := nas.Decode(plain)
	rr, ok := m.(*nas.RegistrationRequest)
	if !ok || rr.MobileIdentity.Type != nas.IdentityGUTI || rr.MobileIdentity.GUTI != guti1 || rr.NgKSI.KSI != a.ksi {
		t.Fatalf("re-registration request %T %+v", m, m)
	}
	a.accept(guti2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g, _ := u.GUTI(); g != guti2 {
		t.Fatalf("GUTI %v, want the new one", g)
	}
}

func TestReregisterUnknownGUTI(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	a.deregister(false)
	a.sec = nil // the network lost the UE

	done := start(u.Reregister)
	a.next() // protected registration request the network cannot verify
	a.sendPlain(&nas.IdentityRequest{IdentityType: nas.IdentitySUCI})
	m, hdr := a.recv()
	id, ok := m.(*nas.IdentityResponse)
	if !ok || hdr != nas.Plain || id.MobileIdentity.Type != nas.IdentitySUCI {
		t.Fatalf("want plain Identity Response with SUCI, got %T %+v (%s)", m, m, hdr)
	}
	a.authenticate()
	// The network could not check the initial message: it asks for it again
	// (RINMR, TS 24.501 §5.4.2.2).
	full := a.securityMode(true)
	if full == nil || full.MobileIdentity.Type != nas.IdentityGUTI {
		t.Fatalf("container %+v", full)
	}
	a.accept(guti1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAuthenticationMACFailure(t *testing.T) {
	u, a := newUE(t, mustHex("000102030405060708090a0b0c0d0e0f"), 0)
	done := start(u.Register)
	a.recv()
	v, _ := a.vector()
	a.sendAuth(v)
	m, _ := a.recv()
	f, ok := m.(*nas.AuthenticationFailure)
	if !ok || f.Cause != nas.CauseMACFailure {
		t.Fatalf("want Authentication Failure #20, got %T %+v", m, m)
	}
	a.sendPlain(&nas.AuthenticationReject{})
	err := <-done
	var af *AuthFailureError
	if !errors.Is(err, ErrAuthenticationReject) || !errors.As(err, &af) || af.Cause != nas.CauseMACFailure {
		t.Fatalf("err %v", err)
	}
	if u.Registered() || u.HasSecurityContext() {
		t.Fatal("UE kept state after Authentication Reject")
	}
}

func TestResynchronisation(t *testing.T) {
	u, a := newUE(t, testK, 1000) // the USIM is ahead of the network
	done := start(u.Register)
	a.recv()
	v, _ := a.vector()
	a.sendAuth(v)
	m, _ := a.recv()
	f, ok := m.(*nas.AuthenticationFailure)
	if !ok || f.Cause != nas.CauseSynchFailure || len(f.AUTS) != 14 {
		t.Fatalf("want Authentication Failure #21 with AUTS, got %T %+v", m, m)
	}
	sqnMS, err := milenage.VerifyAUTS(testK, testOP, v.RAND, f.AUTS)
	if err != nil || sqnMS != 1000 {
		t.Fatalf("AUTS: sqnMS %d err %v", sqnMS, err)
	}
	a.sqn = sqnMS
	a.authenticate()
	a.securityMode(false)
	a.accept(guti1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRetransmissions(t *testing.T) {
	u, a := newUE(t, testK, 0)
	done := start(u.Register)
	a.recv()
	v, xres := a.vector()
	a.ksi = 1
	a.sendAuth(v)
	a.recv()
	a.sendAuth(v) // T3560 retransmission: same RAND
	m, _ := a.recv()
	if r, ok := m.(*nas.AuthenticationResponse); !ok || !bytes.Equal(r.RESStar, xres) {
		t.Fatalf("retransmitted challenge: got %T %+v", m, m)
	}
	kseaf := kdf.KSEAF(kdf.KAUSF(v.CK, v.IK, a.snn, v.AUTN[:6]), a.snn)
	a.kamf = kdf.KAMF(kseaf, "imsi-208930000000001", []byte{0, 0})
	a.securityMode(false)
	a.accept(guti1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// T3550: the network repeats Registration Accept; the UE completes again.
	a.accept(guti1)
	a.sendPlain(&nas.IdentityRequest{IdentityType: nas.IdentitySUCI})
	if m, _ := a.recv(); m.MessageType() != nas.MsgIdentityResponse {
		t.Fatalf("identity request: %T", m)
	}
	if s := u.Stats(); s.RepeatedResponses != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBadMACDiscarded(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	b, _ := nas.Encode(&nas.RegistrationAccept{Result: nas.Registered3GPP, GUTI: &guti2})
	pdu, _ := a.sec.Protect(b, nas.IntegrityProtectedAndCiphered, nas.Downlink)
	pdu[3] ^= 0xFF // break the MAC
	u.HandleNAS(pdu)
	a.noUplink()
	if s := u.Stats(); s.DiscardedMAC != 1 {
		t.Fatalf("stats %+v", s)
	}
	if g, _ := u.GUTI(); g != guti1 {
		t.Fatal("forged accept changed the GUTI")
	}
	// A replay of a genuine message is discarded too.
	good := a.sendProtected(&nas.Status5GMM{Cause: nas.CauseProtocolErrorUnspecified}, nas.IntegrityProtectedAndCiphered)
	u.HandleNAS(good)
	if s := u.Stats(); s.DiscardedMAC != 2 {
		t.Fatalf("replay not discarded: %+v", s)
	}
	// Unprotected messages that need protection are dropped.
	a.sendPlain(&nas.RegistrationAccept{Result: nas.Registered3GPP, GUTI: &guti2})
	a.noUplink()
	// The context is intact: normal deregistration still works.
	a.deregister(false)
}

func TestRegistrationReject(t *testing.T) {
	u, a := newUE(t, testK, 0)
	done := start(u.Register)
	a.recv()
	a.sendPlain(&nas.RegistrationReject{Cause: nas.CausePLMNNotAllowed})
	var rej *RejectError
	if err := <-done; !errors.As(err, &rej) || rej.Cause != nas.CausePLMNNotAllowed {
		t.Fatalf("err %v", err)
	}
	u.HandleRelease(time.Now())
	if u.Connected() || u.Registered() {
		t.Fatal("state after reject")
	}
}

func TestSecurityModeReject(t *testing.T) {
	u, a := newUE(t, testK, 0)
	done := start(u.Register)
	a.recv()
	a.authenticate()
	enc, integ := kdf.NASKeys(a.kamf, nas.NEA2, nas.NIA2)
	a.sec = nas.NewSecurityContext(enc, integ, nas.NEA2, nas.NIA2, a.ksi)
	a.sendProtected(&nas.SecurityModeCommand{
		CipheringAlg: nas.NEA2, IntegrityAlg: nas.NIA2, NgKSI: nas.NgKSI{KSI: a.ksi},
		ReplayedUESecurityCapability: nas.UESecurityCapability{EA: 0x80, IA: 0x80}, // bid down
	}, nas.IntegrityProtectedNewContext)
	p := a.next()
	m, err := nas.Decode(p.pdu)
	if r, ok := m.(*nas.SecurityModeReject); err != nil || !ok || r.Cause != nas.CauseUESecurityCapabilitiesMismatch {
		t.Fatalf("want Security Mode Reject #23, got %T %v", m, err)
	}
	if u.HasSecurityContext() {
		t.Fatal("context activated despite the reject")
	}
	u.HandleRelease(time.Now())
	if err := <-done; !errors.Is(err, ErrReleased) {
		t.Fatalf("err %v", err)
	}
}

func TestTimeoutDropsConnection(t *testing.T) {
	u, a := newUE(t, testK, 0)
	u.cfg.Timeout = 30 * time.Millisecond
	err := u.Register(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	a.recv()
	if a.l.dropped != 1 || u.Connected() {
		t.Fatalf("dropped %d connected %v", a.l.dropped, u.Connected())
	}
	// A late answer for the abandoned procedure is ignored, and the UE can start over.
	a.sendPlain(&nas.RegistrationReject{Cause: nas.CauseCongestion})
	a.register()
}

func TestBusy(t *testing.T) {
	u, a := newUE(t, testK, 0)
	done := start(u.Register)
	a.recv()
	if err := u.Register(context.Background()); !errors.Is(err, ErrBusy) {
		t.Fatalf("err %v", err)
	}
	a.sendPlain(&nas.RegistrationReject{Cause: nas.CauseCongestion})
	<-done
}

func TestIMEI(t *testing.T) {
	if got := imeiOf("4901542032375181"); got != "490154203237518" {
		t.Fatalf("imei %s", got)
	}
}

func FuzzHandleNAS(f *testing.F) {
	f.Add([]byte{0x7e, 0x00, 0x56, 0x01, 0x02, 0x00, 0x00})
	f.Add([]byte{0x7e, 0x03, 0, 0, 0, 0, 0, 0x7e, 0x00, 0x5d, 0x22, 0x01, 0x02, 0xf0, 0xf0})
	f.Add([]byte{0x7e, 0x00, 0x5b, 0x01})
	f.Fuzz(func(t *testing.T, pdu []byte) {
		u, a := newUE(t, testK, 0)
		done := start(u.Register)
		a.next()
		u.HandleNAS(pdu) // must not panic
		u.HandleRelease(time.Now())
		<-done
	})
}

func TestReregisterFromConnected(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := &obs{ok: map[string]int{}, fail: map[string]int{}}
	u.cfg.Observer = o
	a.register()
	done := start(u.Reregister)
	deadline := time.Now().Add(2 * time.Second)
	for {
		a.l.mu.Lock()
		n := a.l.releaseRequests
		a.l.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no UE Context Release Request")
		}
		time.Sleep(time.Millisecond)
	}
	a.noUplink()
	u.HandleRelease(time.Now()) // the AMF released the UE: CM-IDLE, still registered
	p := a.next()
	if !p.initial {
		t.Fatal("re-registration not in an initial message")
	}
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := nas.Decode(plain)
	if rr, ok := m.(*nas.RegistrationRequest); !ok || rr.RegistrationType != nas.RegistrationMobilityUpdating {
		t.Fatalf("want mobility registration update, got %+v", m)
	}
	a.accept(guti2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if o.ok[ProcANRelease] != 1 || o.ok[ProcReregistration] != 1 {
		t.Fatalf("observer %v", o.ok)
	}
	a.deregister2(guti2)
}

// deregister2 is deregister for a UE holding GUTI g.
func (a *amf) deregister2(g identity.GUTI) {
	a.t.Helper()
	done := start(func(ctx context.Context) error { return a.u.Deregister(ctx, false) })
	m, _ := a.recv()
	if d, ok := m.(*nas.DeregistrationRequestUEOriginating); !ok || d.MobileIdentity.GUTI != g {
		a.t.Fatalf("deregistration request %+v", m)
	}
	a.sendProtected(&nas.DeregistrationAcceptUEOriginating{}, nas.IntegrityProtectedAndCiphered)
	a.u.HandleRelease(time.Now())
	if err := <-done; err != nil {
		a.t.Fatal(err)
	}
}

func TestSendNASCorrupt(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	if err := u.SendNAS(&nas.Status5GMM{Cause: nas.CauseProtocolErrorUnspecified}, true); err != nil {
		t.Fatal(err)
	}
	p := a.next()
	if _, _, err := a.sec.Unprotect(p.pdu, nas.Uplink); !errors.Is(err, nas.ErrMAC) {
		t.Fatalf("corrupted PDU: %v, want ErrMAC", err)
	}
	if err := u.SendNAS(&nas.Status5GMM{Cause: nas.CauseProtocolErrorUnspecified}, false); err != nil {
		t.Fatal(err)
	}
	if m, _ := a.recv(); m.MessageType() != nas.MsgStatus5GMM {
		t.Fatalf("got %T", m)
	}
	a.deregister(false)
}

func TestSecurityModeRetransmission(t *testing.T) {
	u, a := newUE(t, testK, 0)
	done := start(u.Register)
	a.recv()
	a.authenticate()
	a.securityMode(false)
	// T3560 expired at the AMF: the same SMC again, with the next DL COUNT.
	a.sendProtected(&nas.SecurityModeCommand{
		CipheringAlg: nas.NEA2, IntegrityAlg: nas.NIA2, NgKSI: nas.NgKSI{KSI: a.ksi},
		ReplayedUESecurityCapability: nas.UESecurityCapability{EA: 0xF0, IA: 0xF0},
	}, nas.IntegrityProtectedNewContext)
	m, hdr := a.recv() // must verify with the network's context (counts continue)
	if _, ok := m.(*nas.SecurityModeComplete); !ok || hdr != nas.IntegrityProtectedAndCipheredNewContext {
		t.Fatalf("got %T (%s)", m, hdr)
	}
	a.accept(guti1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
