package ue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
)

// moverLink is the test link that can hand the UE over: each handover
// reports scripted instants and moves the serving TAI (or fails).
type moverLink struct {
	*link
	mu         sync.Mutex
	tai, next  identity.TAI
	err        error
	start, end time.Time
	calls      []string
}

func (m *moverLink) move(kind string, target uint32) (time.Time, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, kind)
	if m.err != nil {
		return time.Time{}, time.Time{}, m.err
	}
	m.tai = m.next
	m.start = time.Now()
	m.end = m.start.Add(time.Millisecond)
	return m.start, m.end, nil
}

func (m *moverLink) HandoverXn(_ context.Context, target uint32) (time.Time, time.Time, error) {
	return m.move("xn", target)
}

func (m *moverLink) HandoverN2(_ context.Context, target uint32) (time.Time, time.Time, error) {
	return m.move("n2", target)
}

func (m *moverLink) ServingTAI() identity.TAI {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tai
}

var (
	tai1 = identity.TAI{PLMN: plmn, TAC: 1}
	tai2 = identity.TAI{PLMN: plmn, TAC: 2}
)

// moverUE is a registered, connected UE on a moverLink in TA 1.
func moverUE(t *testing.T) (*UE, *amf, *moverLink, *obs) {
	t.Helper()
	u, a := newUE(t, testK, 0)
	m := &moverLink{link: a.l, tai: tai1, next: tai1}
	u.Attach(m)
	o := &obs{ok: map[string]int{}, fail: map[string]int{}}
	u.cfg.Observer = o
	a.register()
	return u, a, m, o
}

// TestHandoverWithinRegistrationArea: the target's TA is in the TAI list:
// no registration, the window is the Mover's.
func TestHandoverWithinRegistrationArea(t *testing.T) {
	u, a, m, o := moverUE(t)
	if err := u.Handover(context.Background(), HandoverXn, 2); err != nil {
		t.Fatal(err)
	}
	a.noUplink()
	if w := u.LastWindow(); w != m.end.Sub(m.start) {
		t.Fatalf("window %v, want the Mover's %v", w, m.end.Sub(m.start))
	}
	if st := u.Stats(); st.Handovers != 1 || st.MobilityUpdates != 0 || o.ok[ProcHandoverXn] != 1 || !u.Connected() || !u.Registered() {
		t.Fatalf("stats %+v, observer %v", st, o.ok)
	}
}

// TestHandoverRegistrationUpdate: in a TA outside the TAI list the UE runs
// a mobility registration update over the moved connection (protected and
// ciphered, 5G-GUTI, last visited TAI, PDU session status); the window
// ends at Registration Complete and the new TAI list is kept.
func TestHandoverRegistrationUpdate(t *testing.T) {
	u, a, m, o := moverUE(t)
	m.next = tai2
	done := start(func(ctx context.Context) error { return u.Handover(ctx, HandoverN2, 2) })
	msg, hdr := a.recv()
	rr, ok := msg.(*nas.RegistrationRequest)
	if !ok || hdr != nas.IntegrityProtectedAndCiphered || rr.RegistrationType != nas.RegistrationMobilityUpdating ||
		rr.MobileIdentity.Type != nas.IdentityGUTI || rr.MobileIdentity.GUTI != guti1 || rr.LastVisitedTAI == nil ||
		*rr.LastVisitedTAI != tai1 || rr.PDUSessionStatus == nil || len(rr.RequestedNSSAI) != 1 || rr.UESecurityCapability == nil {
		t.Fatalf("want a protected mobility Registration Request, got %T (%s) %+v", msg, hdr, msg)
	}
	select {
	case err := <-done:
		t.Fatalf("handover ended before the registration: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	g := guti2
	a.sendProtected(&nas.RegistrationAccept{Result: nas.Registered3GPP, GUTI: &g, TAIList: []identity.TAI{tai2}, AllowedNSSAI: testSlices},
		nas.IntegrityProtectedAndCiphered)
	if msg, _ := a.recv(); msg.MessageType() != nas.MsgRegistrationComplete {
		t.Fatalf("want Registration Complete, got %T", msg)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := u.LastWindow(); w <= m.end.Sub(m.start) {
		t.Fatalf("window %v: it must run to the Registration Complete", w)
	}
	if l := u.TAIList(); len(l) != 1 || l[0] != tai2 {
		t.Fatalf("TAI list %v", l)
	}
	if gu, _ := u.GUTI(); gu != guti2 {
		t.Fatalf("GUTI %v", gu)
	}
	if st := u.Stats(); st.Handovers != 1 || st.MobilityUpdates != 1 || o.ok[ProcHandoverN2] != 1 || o.ok[ProcRegistration] != 1 {
		t.Fatalf("stats %+v, observer %v", st, o.ok)
	}
	// Back to TA 1, now outside the list: another update.
	m.next = tai1
	done = start(func(ctx context.Context) error { return u.Handover(ctx, HandoverXn, 1) })
	if msg, _ := a.recv(); msg.MessageType() != nas.MsgRegistrationRequest {
		t.Fatalf("want Registration Request, got %T", msg)
	}
	a.sendProtected(&nas.RegistrationAccept{Result: nas.Registered3GPP, TAIList: []identity.TAI{tai1, tai2}, AllowedNSSAI: testSlices},
		nas.IntegrityProtectedAndCiphered)
	if err := <-done; err != nil { // no new GUTI: no Registration Complete
		t.Fatal(err)
	}
	a.noUplink()
	if l := u.TAIList(); len(l) != 2 {
		t.Fatalf("TAI list %v", l)
	}
}

// TestHandoverFailures: a failed move fails the procedure (observed) and
// leaves the UE free for the next; a UE without connection or a link that
// cannot move cannot hand over.
func TestHandoverFailures(t *testing.T) {
	u, a, m, o := moverUE(t)
	m.err = errors.New("Handover Preparation Failure")
	if err := u.Handover(context.Background(), HandoverN2, 2); err == nil || !errors.Is(err, m.err) {
		t.Fatalf("handover: %v", err)
	}
	if o.fail[ProcHandoverN2] != 1 || !u.Connected() || !u.Registered() {
		t.Fatalf("observer fail %v, connected %v", o.fail, u.Connected())
	}
	m.err = nil
	if err := u.Handover(context.Background(), HandoverN2, 2); err != nil {
		t.Fatalf("handover after a failed one: %v", err)
	}
	if err := u.Handover(context.Background(), HandoverKind(9), 2); err == nil {
		t.Fatal("unknown kind accepted")
	}
	a.deregister(false)
	if err := u.Handover(context.Background(), HandoverXn, 2); !errors.Is(err, ErrNotConnectedHO) {
		t.Fatalf("handover of a deregistered UE: %v", err)
	}
	plain, b := newUE(t, testK, 0)
	b.register()
	if err := plain.Handover(context.Background(), HandoverXn, 2); !errors.Is(err, ErrNoMover) {
		t.Fatalf("handover over a link that cannot move: %v", err)
	}
}
