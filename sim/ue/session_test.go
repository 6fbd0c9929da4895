package ue

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sim/usim"
)

// 5GSM tests: the scripted network answers over DL NAS Transport, and the
// test plays the gNB's part (HandleSessionSetup/Released, HandleData).

// recvSM reads an uplink UL NAS Transport and the 5GSM message in it.
func (a *amf) recvSM() (*nas.ULNASTransport, nas.SMMessage) {
	a.t.Helper()
	m, hdr := a.recv()
	ul, ok := m.(*nas.ULNASTransport)
	if !ok || hdr != nas.IntegrityProtectedAndCiphered {
		a.t.Fatalf("want ciphered UL NAS Transport, got %T (%s)", m, hdr)
	}
	if ul.PayloadContainerType != nas.PayloadN1SMInformation {
		a.t.Fatalf("payload container type %d", ul.PayloadContainerType)
	}
	sm, err := nas.DecodeSM(ul.Payload)
	if err != nil {
		a.t.Fatal(err)
	}
	if sm.PDUSessionID() != ul.PDUSessionID {
		a.t.Fatalf("5GSM for session %d in a transport for %d", sm.PDUSessionID(), ul.PDUSessionID)
	}
	return ul, sm
}

// sendSM sends a 5GSM message in a DL NAS Transport.
func (a *amf) sendSM(sm nas.SMMessage) {
	a.t.Helper()
	b, err := nas.Encode(sm)
	if err != nil {
		a.t.Fatal(err)
	}
	a.sendProtected(&nas.DLNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, PDUSessionID: sm.PDUSessionID(), Payload: b},
		nas.IntegrityProtectedAndCiphered)
}

func acceptFor(req nas.SMMessage, addr string, qfi uint8) *nas.PDUSessionEstablishmentAccept {
	s := testSlices[0]
	return &nas.PDUSessionEstablishmentAccept{
		SMHeader:       nas.SMHeader{SessionID: req.PDUSessionID(), TransactionID: req.PTI()},
		PDUSessionType: nas.PDUSessionTypeIPv4, SSCMode: nas.SSCMode1,
		QoSRules: []nas.QoSRule{{ID: 1, Operation: nas.QoSRuleCreate, Default: true, Precedence: 255, QFI: qfi,
			Filters: []nas.PacketFilter{{ID: 1, Direction: nas.FilterBidirectional, MatchAll: true}}}},
		SessionAMBR: nas.SessionAMBR{DL: 1_000_000_000, UL: 500_000_000},
		PDUAddress:  &nas.PDUAddress{Type: nas.PDUSessionTypeIPv4, IPv4: netip.MustParseAddr(addr)},
		SNSSAI:      &s,
		DNN:         "internet",
	}
}

type establishResult struct {
	s   Session
	err error
}

func startEstablish(u *UE, req SessionRequest) chan establishResult {
	ch := make(chan establishResult, 1)
	go func() {
		s, err := u.EstablishSession(context.Background(), req)
		ch <- establishResult{s, err}
	}()
	return ch
}

// notYet checks that a procedure has not finished.
func notYet[T any](t *testing.T, ch chan T) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("finished early: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
}

type receiverFunc func([]byte) bool

func (f receiverFunc) Receive(p []byte) bool { return f(p) }

func TestSessionEstablishModifyRelease(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := &obs{ok: map[string]int{}, fail: map[string]int{}}
	u.cfg.Observer = o
	a.l.data = make(chan dataPDU, 4)
	a.register()

	slice := testSlices[0]
	done := startEstablish(u, SessionRequest{DNN: "internet", SNSSAI: &slice})
	ul, sm := a.recvSM()
	req, ok := sm.(*nas.PDUSessionEstablishmentRequest)
	if !ok || ul.RequestType != nas.RequestInitial || ul.DNN != "internet" || ul.SNSSAI == nil || *ul.SNSSAI != slice ||
		req.PDUSessionID() != 1 || req.PTI() == 0 || req.PTI() > 127 ||
		req.PDUSessionType != nas.PDUSessionTypeIPv4 || req.SSCMode != nas.SSCMode1 {
		t.Fatalf("establishment request %+v in %+v", sm, ul)
	}
	a.sendSM(acceptFor(req, "10.60.0.1", 1))
	notYet(t, done) // the gNB has not answered the resource setup yet
	u.HandleSessionSetup(1, time.Now(), nil)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.s.ID != 1 || r.s.Address != netip.MustParseAddr("10.60.0.1") || r.s.QFI != 1 || r.s.DNN != "internet" ||
		r.s.AMBR.DL != 1_000_000_000 || len(r.s.QoSRules) != 1 || !r.s.UserPlane || r.s.State != "PDU SESSION ACTIVE" {
		t.Fatalf("session %+v", r.s)
	}

	// A second session on another DNN, with its own ID and PTI.
	done = startEstablish(u, SessionRequest{DNN: "ims", SNSSAI: &slice})
	ul2, sm2 := a.recvSM()
	if sm2.PDUSessionID() != 2 || sm2.PTI() == req.PTI() || ul2.DNN != "ims" {
		t.Fatalf("second request %+v / %+v", sm2, ul2)
	}
	acc2 := acceptFor(sm2, "10.61.0.1", 5)
	acc2.DNN = "ims"
	a.sendSM(acc2)
	u.HandleSessionSetup(2, time.Now(), nil)
	if r := <-done; r.err != nil || r.s.DNN != "ims" || r.s.QFI != 5 {
		t.Fatalf("second session %+v %v", r.s, r.err)
	}
	if o.ok[ProcPDUSession] != 2 || len(u.Sessions()) != 2 {
		t.Fatalf("observer %v sessions %+v", o.ok, u.Sessions())
	}

	// User plane: uplink through the link, downlink to the probe, else
	// counted unclaimed.
	pkt := []byte{0x45, 1, 2, 3}
	if err := u.SendData(1, pkt); err != nil {
		t.Fatal(err)
	}
	if d := <-a.l.data; d.psi != 1 || string(d.pkt) != string(pkt) {
		t.Fatalf("uplink %+v", d)
	}
	var got int
	if err := u.SetProbe(1, receiverFunc(func(p []byte) bool { got++; return p[1] == 1 })); err != nil {
		t.Fatal(err)
	}
	u.HandleData(1, pkt)
	u.HandleData(1, []byte{0x45, 9})
	if ds, _ := u.DataStats(1); got != 2 || ds.Uplink != 1 || ds.Downlink != 2 || ds.Unclaimed != 1 {
		t.Fatalf("probe saw %d, stats %+v", got, ds)
	}
	// Downlink for a session the UE does not have is dropped, and counted.
	u.HandleData(3, pkt)
	u.HandleData(16, pkt)
	if n := u.Stats().DroppedDownlink; n != 2 {
		t.Fatalf("%d downlink packets for no session counted, want 2", n)
	}

	// Network-requested modification: new AMBR and a second QoS rule.
	a.sendSM(&nas.PDUSessionModificationCommand{
		SMHeader:    nas.SMHeader{SessionID: 1},
		SessionAMBR: &nas.SessionAMBR{DL: 2_000_000, UL: 1_000_000},
		QoSRules: []nas.QoSRule{{ID: 2, Operation: nas.QoSRuleCreate, Precedence: 10, QFI: 2,
			Filters: []nas.PacketFilter{{ID: 1, Direction: nas.FilterUplink, MatchAll: true}}}},
	})
	if _, sm := a.recvSM(); sm.MessageType() != nas.MsgPDUSessionModificationComplete || sm.PDUSessionID() != 1 || sm.PTI() != 0 {
		t.Fatalf("want Modification Complete, got %s %+v", sm.MessageType(), sm)
	}
	if s, _ := u.Session(1); s.AMBR.DL != 2_000_000 || len(s.QoSRules) != 2 || s.QFI != 1 {
		t.Fatalf("after modification %+v", s)
	}

	// UE-requested release of session 1.
	rel := start(func(ctx context.Context) error { return u.ReleaseSession(ctx, 1) })
	_, sm = a.recvSM()
	rr, ok := sm.(*nas.PDUSessionReleaseRequest)
	if !ok || rr.PDUSessionID() != 1 || rr.PTI() == 0 || rr.Cause != nas.CauseRegularDeactivation {
		t.Fatalf("release request %+v", sm)
	}
	a.sendSM(&nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: rr.PTI()}, Cause: nas.CauseRegularDeactivation})
	if _, sm := a.recvSM(); sm.MessageType() != nas.MsgPDUSessionReleaseComplete || sm.PTI() != rr.PTI() {
		t.Fatalf("want Release Complete, got %+v", sm)
	}
	notYet(t, rel) // the gNB still holds the tunnel
	u.HandleSessionReleased(1, time.Now())
	if err := <-rel; err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Session(1); ok || o.ok[ProcPDURelease] != 1 {
		t.Fatalf("session 1 still there, or release not observed: %v", o.ok)
	}
	if err := u.SendData(1, pkt); !errors.Is(err, ErrNoSession) {
		t.Fatalf("uplink on a released session: %v", err)
	}

	// Network-requested release of session 2.
	a.sendSM(&nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: 2}, Cause: nas.CauseRegularDeactivation})
	if _, sm := a.recvSM(); sm.MessageType() != nas.MsgPDUSessionReleaseComplete || sm.PDUSessionID() != 2 {
		t.Fatalf("want Release Complete for 2, got %+v", sm)
	}
	if len(u.Sessions()) != 0 || u.Stats().NetworkReleases != 1 || u.Stats().Modifications != 1 || len(o.fail) != 0 {
		t.Fatalf("sessions %+v stats %+v fail %v", u.Sessions(), u.Stats(), o.fail)
	}
}

func TestSessionReject(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := &obs{ok: map[string]int{}, fail: map[string]int{}}
	u.cfg.Observer = o
	a.register()
	done := startEstablish(u, SessionRequest{DNN: "nope"})
	_, sm := a.recvSM()
	// A reject with the wrong PTI is answered with 5GSM STATUS #81 and
	// does not end the procedure.
	a.sendSM(&nas.PDUSessionEstablishmentReject{SMHeader: nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI() + 1}, Cause: nas.CauseMissingOrUnknownDNN})
	if _, st := a.recvSM(); st.MessageType() != nas.MsgStatus5GSM || st.(*nas.Status5GSM).Cause != nas.CauseInvalidPTIValue {
		t.Fatalf("want 5GSM STATUS #81, got %+v", st)
	}
	notYet(t, done)
	a.sendSM(&nas.PDUSessionEstablishmentReject{SMHeader: nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI()}, Cause: nas.CauseMissingOrUnknownDNN})
	r := <-done
	var rej *SessionRejectError
	if !errors.As(r.err, &rej) || rej.Cause != nas.CauseMissingOrUnknownDNN {
		t.Fatalf("err %v", r.err)
	}
	if len(u.Sessions()) != 0 || o.fail[ProcPDUSession] != 1 || o.ok[ProcPDUSession] != 0 {
		t.Fatalf("sessions %+v observer %v %v", u.Sessions(), o.ok, o.fail)
	}
	// The ID is free again.
	done = startEstablish(u, SessionRequest{DNN: "internet"})
	if _, sm := a.recvSM(); sm.PDUSessionID() != 1 {
		t.Fatalf("session ID not reused: %d", sm.PDUSessionID())
	}
	// An AMF that cannot forward it (TS 24.501 §5.4.5.3.3, #91 DNN not
	// supported in the slice).
	a.sendProtected(&nas.DLNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, PDUSessionID: 1,
		Payload: []byte{0x2e, 1, 1, 0xc1, 0xff, 0xff}, Cause: 91}, nas.IntegrityProtectedAndCiphered)
	var nf *NotForwardedError
	if r := <-done; !errors.As(r.err, &nf) || nf.Cause != 91 {
		t.Fatalf("err %v", r.err)
	}
}

func TestSessionT3580Retransmission(t *testing.T) {
	u, a := newUE(t, testK, 0)
	u.cfg.T3580 = 15 * time.Millisecond
	a.register()
	done := startEstablish(u, SessionRequest{DNN: "internet"})
	_, first := a.recvSM()
	// §6.4.1.6: four retransmissions of the same message, then abort.
	for i := 0; i < smMaxRetransmissions; i++ {
		_, again := a.recvSM()
		if again.PTI() != first.PTI() || again.PDUSessionID() != first.PDUSessionID() || again.MessageType() != nas.MsgPDUSessionEstablishmentRequest {
			t.Fatalf("retransmission %d: %+v, first %+v", i, again, first)
		}
	}
	r := <-done
	if !errors.Is(r.err, ErrRetransmissions) {
		t.Fatalf("err %v", r.err)
	}
	a.noUplink()
	if s := u.Stats(); s.SMRetransmissions != smMaxRetransmissions || s.SMTimeouts != 1 || len(u.Sessions()) != 0 {
		t.Fatalf("stats %+v sessions %+v", s, u.Sessions())
	}

	// An accept after a retransmission completes the procedure.
	done = startEstablish(u, SessionRequest{DNN: "internet"})
	a.recvSM()
	_, sm := a.recvSM()
	a.sendSM(acceptFor(sm, "10.60.0.9", 1))
	u.HandleSessionSetup(sm.PDUSessionID(), time.Now(), nil)
	if r := <-done; r.err != nil || r.s.Address != netip.MustParseAddr("10.60.0.9") {
		t.Fatalf("%+v %v", r.s, r.err)
	}
	time.Sleep(50 * time.Millisecond) // T3580 is stopped: nothing more is sent
	a.noUplink()
}

func TestSessionFailures(t *testing.T) {
	u, a := newUE(t, testK, 0)
	if _, err := u.EstablishSession(context.Background(), SessionRequest{}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("establish while deregistered: %v", err)
	}
	a.register()
	if err := u.ReleaseSession(context.Background(), 3); !errors.Is(err, ErrNoSession) {
		t.Fatalf("release of no session: %v", err)
	}

	// The gNB fails the resource setup: the procedure fails.
	done := startEstablish(u, SessionRequest{DNN: "internet"})
	_, sm := a.recvSM()
	a.sendSM(acceptFor(sm, "10.60.0.2", 1))
	u.HandleSessionSetup(sm.PDUSessionID(), time.Now(), errors.New("no radio"))
	if r := <-done; r.err == nil {
		t.Fatal("establishment succeeded without AN resources")
	}

	// An accept without an IPv4 address is refused and released.
	done = startEstablish(u, SessionRequest{DNN: "internet", ID: 7})
	_, sm = a.recvSM()
	acc := acceptFor(sm, "10.60.0.3", 1)
	acc.PDUAddress = nil
	a.sendSM(acc)
	if r := <-done; r.err == nil {
		t.Fatal("accept without an address succeeded")
	}
	if _, rel := a.recvSM(); rel.MessageType() != nas.MsgPDUSessionReleaseRequest || rel.PDUSessionID() != 7 {
		t.Fatalf("want a release request for 7, got %+v", rel)
	}

	// The network releases instead of accepting.
	done = startEstablish(u, SessionRequest{DNN: "internet", ID: 8})
	_, sm = a.recvSM()
	a.sendSM(&nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: 8, TransactionID: sm.PTI()}, Cause: nas.CauseNetworkFailure})
	if _, c := a.recvSM(); c.MessageType() != nas.MsgPDUSessionReleaseComplete {
		t.Fatalf("want release complete, got %+v", c)
	}
	var rej *SessionRejectError
	if r := <-done; !errors.As(r.err, &rej) || rej.Cause != nas.CauseNetworkFailure {
		t.Fatalf("err %v", r.err)
	}

	// A modification for a session that does not exist: 5GSM STATUS #43.
	a.sendSM(&nas.PDUSessionModificationCommand{SMHeader: nas.SMHeader{SessionID: 4, TransactionID: 0}})
	if _, st := a.recvSM(); st.MessageType() != nas.MsgStatus5GSM || st.(*nas.Status5GSM).Cause != nas.CauseInvalidPDUSessionIdentity {
		t.Fatalf("want 5GSM STATUS #43, got %+v", st)
	}

	// Deregistration releases the sessions locally.
	done = startEstablish(u, SessionRequest{DNN: "internet"})
	_, sm = a.recvSM()
	a.sendSM(acceptFor(sm, "10.60.0.4", 1))
	u.HandleSessionSetup(sm.PDUSessionID(), time.Now(), nil)
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	a.deregister(false)
	if len(u.Sessions()) != 0 {
		t.Fatalf("sessions after deregistration %+v", u.Sessions())
	}
}

func TestSessionUserPlaneFollowsConnection(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.l.data = make(chan dataPDU, 4)
	a.register()
	done := startEstablish(u, SessionRequest{DNN: "internet"})
	_, sm := a.recvSM()
	a.sendSM(acceptFor(sm, "10.60.0.5", 1))
	u.HandleSessionSetup(1, time.Now(), nil)
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	// AN release (CM-IDLE): the session stays, its user plane goes.
	u.HandleRelease(time.Now())
	if s, ok := u.Session(1); !ok || s.UserPlane {
		t.Fatalf("after AN release: %+v %v", s, ok)
	}
	// Uplink in CM-IDLE is buffered and brings the user plane back with a
	// service request (idle_test.go has the details).
	if err := u.SendData(1, []byte{0x45, 1}); err != nil {
		t.Fatalf("uplink in CM-IDLE: %v", err)
	}
	if sr := a.recvServiceRequest(); sr.UplinkDataStatus == nil || *sr.UplinkDataStatus != 1<<1 {
		t.Fatalf("service request %+v", sr)
	}
	select {
	case d := <-a.l.data:
		t.Fatalf("uplink %x sent without user plane", d.pkt)
	default:
	}
	// Resources set up again (Initial Context Setup after the service request).
	u.HandleSessionSetup(1, time.Now(), nil)
	if err := u.SendData(1, []byte{0x45, 2}); err != nil {
		t.Fatal(err)
	}
	for want := byte(1); want <= 2; want++ {
		if d := <-a.l.data; d.psi != 1 || d.pkt[1] != want {
			t.Fatalf("uplink %d: %+v", want, d)
		}
	}
	a.sendProtected(&nas.ServiceAccept{}, nas.IntegrityProtectedAndCiphered)
	waitFor(t, "service request done", func() bool { return u.Stats().QueuedUplink == 1 && !u.busyAsync() })
}

// FuzzHandleSM feeds arbitrary 5GSM payloads to a registered UE with an
// establishment in progress (PDU session 1, PTI 1) and an active session 2.
func FuzzHandleSM(f *testing.F) {
	req := &nas.PDUSessionEstablishmentRequest{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 1}}
	for _, m := range []nas.SMMessage{
		acceptFor(req, "10.60.0.1", 1),
		&nas.PDUSessionEstablishmentReject{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: 1}, Cause: nas.CauseMissingOrUnknownDNN},
		&nas.PDUSessionModificationCommand{SMHeader: nas.SMHeader{SessionID: 2}, SessionAMBR: &nas.SessionAMBR{DL: 1, UL: 1}},
		&nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: 2}, Cause: nas.CauseRegularDeactivation},
	} {
		b, err := nas.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	f.Add([]byte{0x2e, 1, 1, 0xc2}, uint8(0))
	f.Add([]byte{0x2e, 1, 1, 0xc1}, uint8(90))
	f.Fuzz(func(t *testing.T, payload []byte, cause uint8) {
		card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: "0000000001", K: testK, OPc: testOP})
		if err != nil {
			t.Fatal(err)
		}
		u, err := New(Config{USIM: card, ServingPLMN: plmn})
		if err != nil {
			t.Fatal(err)
		}
		l := &link{up: make(chan upPDU, 64)}
		u.Attach(l)
		u.mu.Lock()
		u.mm, u.connected = mmRegistered, true
		u.sessions[1] = &pduSession{id: 1, state: smActivePending, proc: smProcEstablish, pti: 1, done: make(chan outcome, 1)}
		s2 := &pduSession{id: 2, state: smActive, done: make(chan outcome, 1)}
		s2.data = &dataPath{id: 2, link: l}
		u.sessions[2] = s2
		u.data[2].Store(s2.data)
		u.handleSMLocked(&nas.DLNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, PDUSessionID: 1, Payload: payload, Cause: nas.Cause5GMM(cause)})
		u.mu.Unlock()
		u.HandleSessionSetup(1, time.Now(), nil)
		u.HandleSessionReleased(2, time.Now())
		u.HandleData(1, payload)
		u.HandleData(2, payload)
		_ = u.Sessions()
	})
}
