package gnb

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
)

// connect gives the UE of p a signalling connection with AMF UE NGAP ID
// amfID (Initial UE Message, then a Downlink NAS Transport naming it).
func (a *fakeAMF) connect(t *testing.T, p *Port, u *ue, amfID int64) {
	t.Helper()
	if _, err := p.SendInitial([]byte{0x7e, 0x00, 0x41}, ngap.RRCMOSignalling, nil); err != nil {
		t.Fatal(err)
	}
	init := expectMsg[*ngap.InitialUEMessage](t, a.recv())
	a.send(1, &ngap.DownlinkNASTransport{AMFUENGAPID: amfID, RANUENGAPID: init.RANUENGAPID, NASPDU: []byte{0x7e, 0x00, 0x56}})
	u.wait(t)
}

func expectMsg[T ngap.Message](t *testing.T, r recvd) T {
	t.Helper()
	m, ok := r.m.(T)
	if !ok {
		var zero T
		t.Fatalf("got %T (%+v), want %T", r.m, r.m, zero)
	}
	return m
}

func (u *ue) releaseCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.releases
}

// TestNGResetFromAMF: TS 38.413 §8.7.4.2.2 at the gNB: the listed
// connections (or all of them) are dropped, their UEs released to idle,
// and NG Reset Acknowledge lists the items in the order received, unknown
// ones included.
func TestNGResetFromAMF(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	u1, u2 := newUE(), newUE()
	p1, p2 := g.NewPort(u1), g.NewPort(u2)
	a.connect(t, p1, u1, 100)
	a.connect(t, p2, u2, 200)
	ran1 := p1.RANUENGAPID()

	amf1, unknown := int64(100), int64(999)
	items := []ngap.UEConnection{{AMFUENGAPID: &amf1, RANUENGAPID: &ran1}, {AMFUENGAPID: &unknown}}
	a.send(0, &ngap.NGReset{Cause: ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscOMIntervention}, Connections: items})
	r := a.recv()
	ack := expectMsg[*ngap.NGResetAcknowledge](t, r)
	if r.stream != 0 || !reflect.DeepEqual(ack.Connections, items) {
		t.Fatalf("acknowledge %+v on stream %d, want the items as sent on stream 0", ack, r.stream)
	}
	u1.wait(t)
	if u1.releaseCount() != 1 || p1.RANUENGAPID() != 0 || p1.AMFUENGAPID() != -1 {
		t.Errorf("u1: %d releases, IDs %d/%d", u1.releaseCount(), p1.AMFUENGAPID(), p1.RANUENGAPID())
	}
	if u2.releaseCount() != 0 || p2.RANUENGAPID() == 0 {
		t.Error("u2 was not listed but lost its connection")
	}
	// The reset RAN UE NGAP ID is unknown now (TS 38.413 §10.6).
	a.send(1, &ngap.DownlinkNASTransport{AMFUENGAPID: 100, RANUENGAPID: ran1, NASPDU: []byte{1}})
	expectMsg[*ngap.ErrorIndication](t, a.recv())

	a.send(0, &ngap.NGReset{Cause: ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscOMIntervention}})
	if ack := expectMsg[*ngap.NGResetAcknowledge](t, a.recv()); ack.Connections != nil {
		t.Errorf("acknowledge of a whole reset lists %+v", ack.Connections)
	}
	u2.wait(t)
	if u2.releaseCount() != 1 || p2.RANUENGAPID() != 0 {
		t.Error("u2 not released by the whole reset")
	}
	// The UE comes back with a new connection.
	a.connect(t, p1, u1, 101)
	if c := g.Counters(); c.Resets != 2 {
		t.Errorf("counters %+v", c)
	}
}

// TestGNBReset: TS 38.413 §8.7.4.2.1: Reset drops the connections at once,
// sends NG Reset naming them and returns with the acknowledge.
func TestGNBReset(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	u1, u2 := newUE(), newUE()
	p1, p2 := g.NewPort(u1), g.NewPort(u2)
	a.connect(t, p1, u1, 100)
	a.connect(t, p2, u2, 200)
	ran1 := p1.RANUENGAPID()
	ctx := context.Background()

	done := make(chan error, 1)
	go func() { done <- g.Reset(ctx, p1) }()
	req := expectMsg[*ngap.NGReset](t, a.recv())
	amf1 := int64(100)
	if want := []ngap.UEConnection{{AMFUENGAPID: &amf1, RANUENGAPID: &ran1}}; !reflect.DeepEqual(req.Connections, want) {
		t.Fatalf("NG Reset lists %+v, want u1's pair", req.Connections)
	}
	if u1.releaseCount() != 1 || p1.RANUENGAPID() != 0 {
		t.Error("u1 not released before the NG Reset went out")
	}
	select {
	case err := <-done:
		t.Fatalf("Reset returned %v before the acknowledge", err)
	case <-time.After(50 * time.Millisecond):
	}
	a.send(0, &ngap.NGResetAcknowledge{Connections: req.Connections})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := g.Reset(ctx, p1); !errors.Is(err, ErrNoConnection) {
		t.Errorf("reset of an idle UE: %v", err)
	}

	// The whole interface; no answer: the deadline ends the wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := g.Reset(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("reset without answer: %v", err)
	}
	if req := expectMsg[*ngap.NGReset](t, a.recv()); req.Connections != nil {
		t.Errorf("whole reset lists %+v", req.Connections)
	}
	if u2.releaseCount() != 1 || p2.RANUENGAPID() != 0 {
		t.Error("u2 not released by the whole reset")
	}
}

// TestReconnect: the association goes and a new one comes with NG Setup;
// the UEs are released to idle and use the new association afterwards.
func TestReconnect(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	u := newUE()
	p := g.NewPort(u)
	a.connect(t, p, u, 100)
	oldDone := g.Done()

	done := make(chan error, 1)
	go func() { done <- g.Reconnect(context.Background()) }()
	c, err := a.l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	a.conn = c
	t.Cleanup(func() { c.Close() })
	req := expectMsg[*ngap.NGSetupRequest](t, a.recv())
	if req.GlobalRANNodeID.GNBID != 7 {
		t.Errorf("NG Setup Request %+v", req)
	}
	a.send(0, &ngap.NGSetupResponse{
		AMFName: "fake-amf-2", ServedGUAMIs: []identity.GUAMI{guami}, RelativeAMFCapacity: 255,
		PLMNSupport: []ngap.PLMNSupport{{PLMN: plmn, Slices: testSlices}},
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-oldDone:
	default:
		t.Error("the old association's reader still runs")
	}
	if g.Err() != nil || g.AMF().AMFName != "fake-amf-2" {
		t.Errorf("after Reconnect: err %v, AMF %q", g.Err(), g.AMF().AMFName)
	}
	if u.releaseCount() != 1 || p.RANUENGAPID() != 0 {
		t.Error("the UE was not released to idle")
	}
	// The UE's next connection goes over the new association.
	a.connect(t, p, u, 300)
	if c := g.Counters(); c.Reconnects != 1 {
		t.Errorf("counters %+v", c)
	}
}
