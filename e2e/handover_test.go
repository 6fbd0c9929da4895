package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/usim"
)

// Handover against the real core: Xn (Path Switch) and N2 (Handover
// Required to Notify) between two gNBs in different tracking areas, with
// downlink injected into the UPF running through them.

// hoCore starts a core whose AMF serves TACs 1 and 2, with the SMF's N2
// handover data mode (smf.mobility.handoverData) set to mode.
func hoCore(t *testing.T, subscribers int, mode string, mutate func(*config.Config)) *testCore {
	t.Helper()
	return startCore(t, subscribers, func(cfg *config.Config) {
		cfg.AMF.TAIs = []amf.TAIConfig{
			{PLMN: "20893", TAC: 1, Slices: []string{"1-010203", "1"}},
			{PLMN: "20893", TAC: 2, Slices: []string{"1-010203", "1"}},
		}
		if mode != "" {
			cfg.SMF.Mobility.HandoverData = mode
		}
		if mutate != nil {
			mutate(cfg)
		}
	})
}

// hoGNB is a gNB of a handover test: its TAC, an N3 on port 2152 of an
// address of 127/8 of this process's own, every NGAP message it got kept.
type hoGNB struct {
	*gnb.GNB
	mu   sync.Mutex
	msgs []string // the types of the NGAP messages received, in order
}

func dialHOGNB(t *testing.T, c *testCore, id, tac uint32, cfg gnb.Config) *hoGNB {
	t.Helper()
	h := &hoGNB{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBID, cfg.PLMN, cfg.TAC, cfg.Slices = id, plmn, tac, slices
	cfg.N3Addr = netip.AddrPortFrom(loopbackAddr(byte(60+id)), gtpu.Port).String()
	cfg.N3PeerPort = c.UPF.N3Addr().Port()
	on := cfg.OnMessage
	cfg.OnMessage = func(m ngap.Message) {
		h.mu.Lock()
		h.msgs = append(h.msgs, strings.TrimPrefix(fmt.Sprintf("%T", m), "*ngap."))
		h.mu.Unlock()
		if on != nil {
			on(m)
		}
	}
	g, err := gnb.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	h.GNB = g
	return h
}

// got returns how many messages of type name the gNB received.
func (h *hoGNB) got(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m == name {
			n++
		}
	}
	return n
}

// hoUE is a registered UE with one session and a probe that collects the
// sequence numbers of its downlink.
type hoUE struct {
	*ue.UE
	port *gnb.Port
	rec  *report.Recorder
	s    ue.Session
	mu   sync.Mutex
	seqs []int
}

func newHOUE(t *testing.T, c *testCore, g *gnb.GNB, msin string) *hoUE {
	t.Helper()
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: msin, K: demoK, OPc: demoOP, AMF: []byte{0x80, 0}})
	if err != nil {
		t.Fatal(err)
	}
	h := &hoUE{rec: report.NewRecorder()}
	u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, Timeout: 10 * time.Second, Observer: h.rec})
	if err != nil {
		t.Fatal(err)
	}
	h.UE = u
	h.port = g.NewPort(u)
	u.Attach(h.port)
	if err := u.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	est := c.Stats().SMF.Established
	h.s = establish(t, u)
	// The UE is done when the gNB answered the setup; the SMF then
	// completes it. A path switch coming from another gNB's association
	// before that is refused (the session is not active yet).
	waitUntil(t, "the SMF to complete the session", func() bool { return c.Stats().SMF.Established > est })
	if err := u.SetProbe(h.s.ID, receiverFunc(func(pkt []byte) bool {
		ip, err := ipv4pkt.ParseIPv4(pkt)
		if err != nil || ip.Dst != h.s.Address || ip.Protocol != ipv4pkt.ProtoUDP {
			return false
		}
		d, ok := ipv4pkt.ParseUDP(ip.Payload)
		if !ok || !strings.HasPrefix(string(d.Payload), "dl-") {
			return false
		}
		n, err := strconv.Atoi(string(d.Payload[3:]))
		if err != nil {
			return false
		}
		h.mu.Lock()
		h.seqs = append(h.seqs, n)
		h.mu.Unlock()
		return true
	})); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *hoUE) received() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.seqs...)
}

// traffic injects downlink to the UE through the UPF, one packet every
// interval, numbered from 0, until stop; it returns how many it sent.
type traffic struct {
	stop chan struct{}
	done chan struct{}
	sent atomic.Int64
}

func startTraffic(c *testCore, dst netip.Addr, interval time.Duration) *traffic {
	tr := &traffic{stop: make(chan struct{}), done: make(chan struct{})}
	inject := downlinkInjector(c)
	go func() {
		defer close(tr.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tr.stop:
				return
			case <-tick.C:
			}
			n := tr.sent.Load()
			inject(dst, fmt.Appendf(nil, "dl-%d", n))
			tr.sent.Add(1)
		}
	}()
	return tr
}

func (tr *traffic) end() int {
	close(tr.stop)
	<-tr.done
	return int(tr.sent.Load())
}

// checkInOrder waits until the UE has n packets and checks that they are
// 0..n-1 in order: none lost, none reordered or repeated.
func checkInOrder(t *testing.T, h *hoUE, n int) (lost, reordered int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.received()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // duplicates would show now
	got := h.received()
	seen := make(map[int]bool, len(got))
	for i, v := range got {
		if i > 0 && v < got[i-1] {
			reordered++
		}
		seen[v] = true
	}
	for i := range n {
		if !seen[i] {
			lost++
		}
	}
	if len(got) != n || lost != 0 || reordered != 0 {
		var missing []int
		for i := range n {
			if !seen[i] {
				missing = append(missing, i)
			}
		}
		t.Errorf("downlink: %d sent, %d delivered, %d lost %v, %d out of order", n, len(got), lost, missing, reordered)
	}
	return lost, reordered
}

// n3Tap records the End Markers a gNB's N3 sees.
type n3Tap struct {
	mu  sync.Mutex
	ems []tapEndMarker
}

type tapEndMarker struct {
	out   bool           // sent by the gNB (forwarded), else received
	local netip.AddrPort // the gNB's N3
	teid  uint32
}

func (x *n3Tap) Packet(out bool, local, _ netip.AddrPort, b []byte) {
	if teid, err := gtpu.ParseEndMarker(b); err == nil {
		x.mu.Lock()
		x.ems = append(x.ems, tapEndMarker{out: out, local: local, teid: teid})
		x.mu.Unlock()
	}
}

// received reports whether an End Marker for teid came in at local.
func (x *n3Tap) received(local netip.AddrPort, teid uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range x.ems {
		if !e.out && e.local == local && e.teid == teid {
			return true
		}
	}
	return false
}

// hoRig is a core (N2 handover data mode), gNBs 1 (TAC 1) and 2 (TAC 2)
// with an N3 tap, and a registered UE on gNB 1 with a session.
type hoRig struct {
	c      *testCore
	g1, g2 *hoGNB
	tap    *n3Tap
	h      *hoUE
}

func newHORig(t *testing.T, mode string, interruption time.Duration) *hoRig {
	t.Helper()
	r := &hoRig{c: hoCore(t, 1, mode, nil), tap: &n3Tap{}}
	cfg := gnb.Config{N3Tap: r.tap, HandoverInterruption: interruption}
	r.g1 = dialHOGNB(t, r.c, 1, 1, cfg)
	r.g2 = dialHOGNB(t, r.c, 2, 2, cfg)
	gnb.Neighbours(r.g1.GNB, r.g2.GNB)
	r.h = newHOUE(t, r.c, r.g1.GNB, "0000000001")
	return r
}

// move hands the UE to gNB to and checks it got there.
func (r *hoRig) move(t *testing.T, kind ue.HandoverKind, to *hoGNB) {
	t.Helper()
	if err := r.h.Handover(context.Background(), kind, to.ID()); err != nil {
		t.Fatalf("%s handover to gNB %d: %v", kind, to.ID(), err)
	}
	if g := r.h.port.GNB(); g != to.GNB {
		t.Fatalf("after the %s handover the UE is at gNB %d, want %d", kind, g.ID(), to.ID())
	}
	if s := r.h.port.Sessions(); len(s) != 1 || s[0].ID != r.h.s.ID {
		t.Fatalf("gNB %d sessions after the handover: %+v", to.ID(), s)
	}
	if !slicesContains(r.h.TAIList(), to.TAI()) {
		t.Fatalf("TAI list %v after moving to %v: no registration update", r.h.TAIList(), to.TAI())
	}
}

func slicesContains[T comparable](l []T, v T) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// Downlink rate and handover interruption of the tests with traffic: one
// packet every 500 µs (2,000 packets/s) and 10 ms between the source
// letting the UE go and its arrival at the target. What waits in a buffer
// is bounded by these: about 20 packets forwarded per handover, at most
// EndMarkerTimeout (100 ms) x 2,000/s = 200 packets held at the target
// (gnb.DefaultForwardBuffer is 1,024), and the UPF's smart buffer holds
// the interruption's worth. Nothing may be lost or reordered.
const (
	hoTrafficInterval = 500 * time.Microsecond
	hoInterruption    = 10 * time.Millisecond
)

// TestHandoverXnDownlink: the UE moves from gNB 1 to gNB 2 and back by Xn
// handover while downlink runs through the UPF before, during and after:
// every packet arrives, in order; the source gets the UPF's End Marker on
// the old path (its DL tunnel) and has forwarded what came before it; each
// move to the other TA ends with a mobility registration update.
func TestHandoverXnDownlink(t *testing.T) {
	r := newHORig(t, "", hoInterruption)
	old := r.h.port.Sessions()[0].DL
	tr := startTraffic(r.c, r.h.s.Address, hoTrafficInterval)
	time.Sleep(30 * time.Millisecond)
	r.move(t, ue.HandoverXn, r.g2)
	back := r.h.port.Sessions()[0].DL
	time.Sleep(30 * time.Millisecond)
	r.move(t, ue.HandoverXn, r.g1)
	time.Sleep(30 * time.Millisecond)
	n := tr.end()
	lost, reordered := checkInOrder(t, r.h, n)

	c1, c2 := r.g1.Counters().Handover, r.g2.Counters().Handover
	if !r.tap.received(r.g1.N3Addr(), old.TEID) || !r.tap.received(r.g2.N3Addr(), back.TEID) {
		t.Errorf("End Markers seen on N3: %+v; want one at each source on its old DL tunnel (%d at gNB 1, %d at gNB 2)", r.tap.ems, old.TEID, back.TEID)
	}
	fwd := c1.Forwarded + c2.Forwarded
	if fwd == 0 || c1.EndMarkersForwarded != 1 || c2.EndMarkersForwarded != 1 || c1.ForwardDropped+c2.ForwardDropped != 0 ||
		c1.HeldDropped+c2.HeldDropped != 0 || c2.PathSwitchAcks != 1 || c1.PathSwitchAcks != 1 {
		t.Errorf("gNB 1 %+v\ngNB 2 %+v", c1, c2)
	}
	if st := r.c.AMF.Stats(); st.PathSwitches != 2 || st.PathSwitchFailures != 0 {
		t.Errorf("AMF: %d path switches, %d failures", st.PathSwitches, st.PathSwitchFailures)
	}
	if us := r.h.Stats(); us.Handovers != 2 || us.MobilityUpdates != 2 || len(r.h.rec.Samples(ue.ProcHandoverXn)) != 2 {
		t.Errorf("UE %+v, %d handover-xn samples", us, len(r.h.rec.Samples(ue.ProcHandoverXn)))
	}
	t.Logf("Xn: %d downlink packets, %d delivered in order, %d forwarded over Xn-U, %d held behind the End Marker, %d lost, %d reordered; windows %v",
		n, len(r.h.received()), fwd, c1.Held+c2.Held, lost, reordered, r.h.rec.Samples(ue.ProcHandoverXn))
}

// TestHandoverN2Downlink: N2 handover there and back with downlink
// running, in each of the SMF's modes. Forwarding: the source sends what
// reaches it after the Handover Command through the UPF's indirect
// forwarding tunnel to the target, which delivers it before the new
// path's packets. Smart: nothing is forwarded; the UPF holds the downlink
// from the acknowledgement to the Notify and sends it to the target in
// order. Either way every packet arrives, in order.
func TestHandoverN2Downlink(t *testing.T) {
	for _, mode := range []string{"forwarding", "smart"} {
		t.Run(mode, func(t *testing.T) { testHandoverN2Downlink(t, mode) })
	}
}

func testHandoverN2Downlink(t *testing.T, mode string) {
	r := newHORig(t, mode, hoInterruption)
	old := r.h.port.Sessions()[0].DL
	tr := startTraffic(r.c, r.h.s.Address, hoTrafficInterval)
	time.Sleep(30 * time.Millisecond)
	r.move(t, ue.HandoverN2, r.g2)
	back := r.h.port.Sessions()[0].DL
	time.Sleep(30 * time.Millisecond)
	r.move(t, ue.HandoverN2, r.g1)
	time.Sleep(30 * time.Millisecond)
	n := tr.end()
	lost, reordered := checkInOrder(t, r.h, n)

	c1, c2 := r.g1.Counters().Handover, r.g2.Counters().Handover
	if !r.tap.received(r.g1.N3Addr(), old.TEID) || !r.tap.received(r.g2.N3Addr(), back.TEID) {
		t.Errorf("End Markers seen on N3: %+v; want one at each source on its old DL tunnel", r.tap.ems)
	}
	fwd, fwdIn := c1.Forwarded+c2.Forwarded, c1.ForwardedReceived+c2.ForwardedReceived
	switch mode {
	case "forwarding":
		if fwd == 0 || fwdIn != fwd {
			t.Errorf("forwarding: %d packets forwarded by the sources, %d received on the targets' forwarding tunnels; want the same, more than 0", fwd, fwdIn)
		}
	case "smart":
		if fwd != 0 || fwdIn != 0 || c1.RANStatusTransfers+c2.RANStatusTransfers != 0 {
			t.Errorf("smart: %d forwarded, %d received forwarded, %d RAN status transfers; want none", fwd, fwdIn, c1.RANStatusTransfers+c2.RANStatusTransfers)
		}
		if st := r.c.Stats().UPF.Pipeline; st.BufferedTotal == 0 {
			t.Errorf("smart: the UPF buffered nothing during the handovers (%+v)", st)
		}
	}
	if c1.N2Completed != 1 || c2.N2Completed != 1 || c1.N2Admitted != 1 || c2.N2Admitted != 1 ||
		c1.ForwardDropped+c2.ForwardDropped+c1.HeldDropped+c2.HeldDropped != 0 {
		t.Errorf("gNB 1 %+v\ngNB 2 %+v", c1, c2)
	}
	if st := r.c.AMF.Stats(); st.Handovers != 2 || st.HandoversCompleted != 2 || st.HandoverFailures != 0 {
		t.Errorf("AMF: %d handovers, %d completed, %d failed", st.Handovers, st.HandoversCompleted, st.HandoverFailures)
	}
	if r.g1.got("HandoverCommand") != 1 || r.g2.got("HandoverRequest") != 1 || r.g1.got("UEContextReleaseCommand") != 1 {
		t.Errorf("gNB 1 got %v", r.g1.msgs)
	}
	if us := r.h.Stats(); us.Handovers != 2 || us.MobilityUpdates != 2 || len(r.h.rec.Samples(ue.ProcHandoverN2)) != 2 {
		t.Errorf("UE %+v, %d handover-n2 samples", us, len(r.h.rec.Samples(ue.ProcHandoverN2)))
	}
	t.Logf("N2 %s: %d downlink packets, %d delivered in order, %d forwarded, %d held at the targets (%d holds ended by the timer), UPF buffered %d, %d lost, %d reordered; windows %v",
		mode, n, len(r.h.received()), fwd, c1.Held+c2.Held, c1.HoldTimeouts+c2.HoldTimeouts, r.c.Stats().UPF.Pipeline.BufferedTotal,
		lost, reordered, r.h.rec.Samples(ue.ProcHandoverN2))
	waitGNBTEIDs(t, 1, r.g1, r.g2)
}

// waitGNBTEIDs waits (2 s) until the gNBs hold n DL tunnels together:
// the sources' forwarding and the targets' forwarding tunnels are gone.
func waitGNBTEIDs(t *testing.T, n int64, gs ...*hoGNB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var sum int64
		for _, g := range gs {
			sum += g.N3Counters().TEIDs
		}
		if sum == n {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("gNBs hold %d TEIDs, want %d", sum, n)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHandoverN2EndMarkerRelayed: in forwarding mode the source passes the
// End Marker it gets on the old path to the UPF's forwarding tunnel (TS
// 23.502 §4.9.1.3.3: the source forwards the end marker to the target;
// TS 29.281 §7.3.2), and the UPF relays it to the target's DL forwarding
// tunnel: the target ends its hold of the new path on it, not on its
// EndMarkerTimeout.
func TestHandoverN2EndMarkerRelayed(t *testing.T) {
	r := newHORig(t, "forwarding", hoInterruption)
	tr := startTraffic(r.c, r.h.s.Address, hoTrafficInterval)
	time.Sleep(20 * time.Millisecond)
	r.move(t, ue.HandoverN2, r.g2)
	time.Sleep(200 * time.Millisecond)
	checkInOrder(t, r.h, tr.end())
	c1, c2 := r.g1.Counters().Handover, r.g2.Counters().Handover
	if c1.EndMarkersForwarded != 1 {
		t.Fatalf("source forwarded %d End Markers", c1.EndMarkersForwarded)
	}
	if c2.HoldTimeouts != 0 || c2.EndMarkers == 0 {
		t.Errorf("target: %d End Markers received, %d holds ended by the timer; want the End Marker through the forwarding tunnel (UPF received %d, relayed %d)",
			c2.EndMarkers, c2.HoldTimeouts, r.c.Stats().UPF.Pipeline.EndMarkers, r.c.Stats().UPF.Pipeline.EndMarkersRelayed)
	}
}

// TestHandoverN2Refused: the target refuses (Handover Failure), then the
// source cancels after the command (Handover Cancel): the UE stays on the
// source each time and its downlink goes on, in order, without loss. A
// handover afterwards works. In both of the SMF's modes (smart: the UPF
// held the downlink from the acknowledgement and sends it back to the
// source on the cancel).
func TestHandoverN2Refused(t *testing.T) {
	for _, mode := range []string{"forwarding", "smart"} {
		t.Run(mode, func(t *testing.T) { testHandoverN2Refused(t, mode) })
	}
}

func testHandoverN2Refused(t *testing.T, mode string) {
	r := newHORig(t, mode, hoInterruption)
	ctx := context.Background()
	tr := startTraffic(r.c, r.h.s.Address, hoTrafficInterval)
	time.Sleep(20 * time.Millisecond)

	r.g2.SetHandoverAnswer(gnb.HandoverRefuse, nil)
	err := r.h.Handover(ctx, ue.HandoverN2, 2)
	var he *gnb.HandoverError
	if !errors.As(err, &he) || he.Message != "Handover Preparation Failure" {
		t.Fatalf("handover to a refusing target: %v, want Handover Preparation Failure", err)
	}
	stays := func(what string) {
		t.Helper()
		if g := r.h.port.GNB(); g != r.g1.GNB || !r.h.Connected() || len(r.h.port.Sessions()) != 1 {
			t.Fatalf("after %s: UE at gNB %d, connected %v, sessions %+v", what, g.ID(), r.h.Connected(), r.h.port.Sessions())
		}
	}
	stays("the preparation failure")
	time.Sleep(20 * time.Millisecond)

	r.g2.SetHandoverAnswer(gnb.HandoverAccept, nil)
	r.g1.CancelHandovers(true)
	if err := r.h.Handover(ctx, ue.HandoverN2, 2); !errors.Is(err, gnb.ErrHandoverCancelled) {
		t.Fatalf("handover the source cancels: %v", err)
	}
	stays("the cancel")
	r.g1.CancelHandovers(false)
	// The AMF released the target's connection.
	waitUntil(t, "the release of the target's connection", func() bool { return r.g2.got("UEContextReleaseCommand") == 1 })
	waitGNBTEIDs(t, 1, r.g1, r.g2)
	time.Sleep(20 * time.Millisecond)

	r.move(t, ue.HandoverN2, r.g2)
	time.Sleep(20 * time.Millisecond)
	n := tr.end()
	lost, reordered := checkInOrder(t, r.h, n)
	// Prepared: every Handover Request sent; failed: the refused and the
	// cancelled one.
	if st := r.c.AMF.Stats(); st.Handovers != 3 || st.HandoversCompleted != 1 || st.HandoverFailures != 2 {
		t.Errorf("AMF: %d handovers prepared, %d completed, %d failed; want 3, 1, 2", st.Handovers, st.HandoversCompleted, st.HandoverFailures)
	}
	c1, c2 := r.g1.Counters().Handover, r.g2.Counters().Handover
	if c1.N2PreparationFailures != 1 || c1.N2Cancelled != 1 || c2.N2Refused != 1 || c2.N2Admitted != 2 || c1.N2Completed != 1 {
		t.Errorf("gNB 1 %+v\ngNB 2 %+v", c1, c2)
	}
	t.Logf("%s: %d downlink packets, %d delivered, %d lost, %d reordered; UPF buffered %d",
		mode, n, len(r.h.received()), lost, reordered, r.c.Stats().UPF.Pipeline.BufferedTotal)
}

// TestHandoverTargetDisconnects: the target's association goes down while
// it holds the Handover Request unanswered: the AMF ends the preparation
// (Handover Preparation Failure), the UE stays on the source with its
// downlink, and a handover to another gNB works afterwards.
func TestHandoverTargetDisconnects(t *testing.T) {
	r := newHORig(t, "", hoInterruption)
	ctx := context.Background()
	closed := make(chan struct{})
	g3 := dialHOGNB(t, r.c, 3, 2, gnb.Config{HandoverInterruption: hoInterruption, OnMessage: func(m ngap.Message) {
		if _, ok := m.(*ngap.HandoverRequest); ok {
			go func() {
				defer close(closed)
				// Close waits for this reader: from another goroutine.
				time.Sleep(5 * time.Millisecond)
			}()
		}
	}})
	g3.SetHandoverAnswer(gnb.HandoverIgnore, nil)
	gnb.Neighbours(r.g1.GNB, r.g2.GNB, g3.GNB)
	go func() {
		<-closed
		g3.Close()
	}()
	tr := startTraffic(r.c, r.h.s.Address, hoTrafficInterval)
	time.Sleep(20 * time.Millisecond)
	err := r.h.Handover(ctx, ue.HandoverN2, 3)
	var he *gnb.HandoverError
	if !errors.As(err, &he) || he.Cause == nil || he.Cause.Value != ngap.RadioNetworkHOFailureInTarget {
		t.Fatalf("handover to a target that went away: %v, want Handover Preparation Failure (ho-failure-in-target)", err)
	}
	if g := r.h.port.GNB(); g != r.g1.GNB || !r.h.Connected() {
		t.Fatalf("UE at gNB %d, connected %v", g.ID(), r.h.Connected())
	}
	time.Sleep(20 * time.Millisecond)
	r.move(t, ue.HandoverN2, r.g2)
	time.Sleep(20 * time.Millisecond)
	lost, reordered := checkInOrder(t, r.h, tr.end())
	if st := r.c.AMF.Stats(); st.HandoverFailures != 1 || st.HandoversCompleted != 1 || st.GNBs != 2 {
		t.Errorf("AMF: %d failures, %d completed, %d gNBs", st.HandoverFailures, st.HandoversCompleted, st.GNBs)
	}
	t.Logf("target gone: %v; %d lost, %d reordered", err, lost, reordered)
}

// TestHandoverCyclesLeaveNothingBehind: in each of the SMF's modes, three
// UEs with a session are handed back and forth between two gNBs in
// different TAs 50 times each, Xn and N2 in turn (300 handovers in all,
// each with a registration update), then release the session and
// deregister: the core holds no PDU session, UPF session, buffered packet
// or TEID, no UE is registered or connected, the gNBs hold no tunnel, and
// the goroutines are back to where they were.
func TestHandoverCyclesLeaveNothingBehind(t *testing.T) {
	const ues, moves = 3, 50
	total := 0
	for _, mode := range []string{"forwarding", "smart"} {
		t.Run(mode, func(t *testing.T) {
			c := hoCore(t, ues, mode, nil)
			g1 := dialHOGNB(t, c, 1, 1, gnb.Config{})
			g2 := dialHOGNB(t, c, 2, 2, gnb.Config{})
			gnb.Neighbours(g1.GNB, g2.GNB)
			hs := make([]*hoUE, ues)
			for i := range hs {
				hs[i] = newHOUE(t, c, g1.GNB, fmt.Sprintf("%010d", i+1))
			}
			goroutines := runtime.NumGoroutine()
			// The UEs move together, a round at a time: a UE's next
			// handover waits until the AMF has taken the Registration
			// Complete of its last one. (It goes over the other gNB's
			// association than a Path Switch Request from the next
			// target, and the AMF refuses a path switch while the
			// registration runs.)
			regs := c.AMF.Stats().Registrations
			var xn, n2 uint64
			for i := range moves {
				// Xn there and back, N2 there and back, ...
				kind, to := ue.HandoverXn, g2
				if i%4 >= 2 {
					kind = ue.HandoverN2
				}
				if i%2 == 1 {
					to = g1
				}
				if kind == ue.HandoverXn {
					xn += ues
				} else {
					n2 += ues
				}
				var wg sync.WaitGroup
				var failed atomic.Int64
				for _, h := range hs {
					wg.Go(func() {
						if err := h.Handover(context.Background(), kind, to.ID()); err != nil {
							t.Errorf("move %d: %v", i, err)
							failed.Add(1)
						}
					})
				}
				wg.Wait()
				if failed.Load() != 0 {
					return
				}
				regs += ues
				waitUntil(t, "the AMF to complete the registration updates", func() bool { return c.AMF.Stats().Registrations == regs })
			}
			st := c.AMF.Stats()
			if st.PathSwitches != xn || st.HandoversCompleted != n2 || st.HandoverFailures != 0 || st.PathSwitchFailures != 0 {
				t.Errorf("AMF: %d path switches, %d N2 handovers, %d/%d failed; want %d and %d", st.PathSwitches, st.HandoversCompleted,
					st.HandoverFailures, st.PathSwitchFailures, xn, n2)
			}
			for _, h := range hs {
				if us := h.Stats(); us.Handovers != moves || us.MobilityUpdates != moves {
					t.Errorf("%s: %+v", h.SUPI(), us)
				}
				if err := h.ReleaseSession(context.Background(), h.s.ID); err != nil {
					t.Error(err)
				}
				if err := h.Deregister(context.Background(), false); err != nil {
					t.Error(err)
				}
			}
			cst := waitIdle(t, c.Core)
			waitUntil(t, "the AMF to release the connections and UE contexts", func() bool {
				st := c.AMF.Stats()
				return st.ConnectedUEs == 0 && st.UEContexts == 0
			})
			cst.AMF = c.AMF.Stats()
			if cst.AMF.RegisteredUEs != 0 || cst.AMF.ConnectedUEs != 0 || cst.AMF.UEContexts != 0 || cst.UPF.Pipeline.Buffered != 0 ||
				cst.AMF.UEContextReleases != n2+ues {
				t.Errorf("AMF %d registered, %d connected, %d UE contexts, %d context releases (want %d: the N2 sources and the deregistrations); UPF %d buffered",
					cst.AMF.RegisteredUEs, cst.AMF.ConnectedUEs, cst.AMF.UEContexts, cst.AMF.UEContextReleases, n2+ues, cst.UPF.Pipeline.Buffered)
			}
			waitGNBTEIDs(t, 0, g1, g2)
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > goroutines {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					n := runtime.Stack(buf, true)
					t.Fatalf("%d goroutines, %d before the handovers:\n%s", runtime.NumGoroutine(), goroutines, buf[:n])
				}
				time.Sleep(10 * time.Millisecond)
			}
			total += ues * moves
			t.Logf("%s: %d handovers; gNB 1 %+v; gNB 2 %+v", mode, ues*moves, g1.Counters().Handover, g2.Counters().Handover)
		})
	}
	if total != 300 {
		t.Errorf("%d handovers, want 300", total)
	}
}

// simHOConfig is a sim run against c with n UEs on two gNBs in TAs 1 and
// 2 (TACStep), each with an N3 the UPF can send to.
func simHOConfig(c *testCore, n int) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 2, n, 4
	cfg.TACStep = 1
	cfg.N3Addrs = []string{
		netip.AddrPortFrom(loopbackAddr(71), gtpu.Port).String(),
		netip.AddrPortFrom(loopbackAddr(72), gtpu.Port).String(),
	}
	cfg.N3PeerPort = c.UPF.N3Addr().Port()
	// The UE's time between cells; it also keeps a Path Switch Request
	// from overtaking the UE's last message on the source's association
	// (see sim.Config.HandoverInterruption).
	cfg.HandoverInterruption = 5 * time.Millisecond
	cfg.Timeout = 20 * time.Second
	return cfg
}

// TestSimHandoverScenario runs the simulator's "handover" scenario: 10
// UEs register on two gNBs in different TAs, establish a session, move to
// the other gNB by Xn and back by N2 (each move with a registration
// update), release and deregister.
func TestSimHandoverScenario(t *testing.T) {
	const n = 10
	c := hoCore(t, n, "", nil)
	cfg := simHOConfig(c, n)
	var err error
	if cfg.Scenario, err = sim.ParseScenario("handover"); err != nil {
		t.Fatal(err)
	}
	res := runSim(t, cfg, n)
	counts := map[string]int{}
	for _, s := range res.Summaries {
		counts[s.Procedure] = s.Count
		if s.Failures != 0 {
			t.Errorf("%s: %d failures", s.Procedure, s.Failures)
		}
	}
	if counts[ue.ProcHandoverXn] != n || counts[ue.ProcHandoverN2] != n {
		t.Errorf("samples %v; want %d of each handover", counts, n)
	}
	var n2, xn, tacs int64
	for _, g := range res.GNBs {
		n2 += g.Counters.Handover.N2Completed
		xn += g.Counters.Handover.PathSwitchAcks
		tacs += int64(g.TAC)
	}
	if n2 != n || xn != n || tacs != 3 {
		t.Errorf("gNBs %+v", res.GNBs)
	}
	if st := c.AMF.Stats(); st.PathSwitches != n || st.HandoversCompleted != n || st.Registrations != 3*n {
		t.Errorf("AMF: %d path switches, %d N2 handovers, %d registrations; want %d, %d, %d", st.PathSwitches, st.HandoversCompleted, st.Registrations, n, n, 3*n)
	}
	waitIdle(t, c.Core)
}

// TestSimBackgroundMobility: while the UEs send uplink (the transfer
// step), the background mover hands one UE after another to the other
// gNB every 10 ms, Xn or N2 at random; the steps and the moves succeed.
func TestSimBackgroundMobility(t *testing.T) {
	const n = 4
	c := hoCore(t, n, "", nil)
	cfg := simHOConfig(c, n)
	cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepTransfer, sim.StepRelease, sim.StepDeregister}
	cfg.TransferBytes, cfg.TransferSize, cfg.TransferRate = 300<<10, 1000, 8_000_000 // 300 ms per session
	cfg.HandoverEvery, cfg.HandoverKind = 10*time.Millisecond, sim.HandoverKindRandom
	res := runSim(t, cfg, n)
	m := res.Mobility
	if m.Moved < 5 || m.Failed != 0 || m.Xn+m.N2 != m.Attempted {
		t.Errorf("background mobility %+v; want several moves, no failure", m)
	}
	if st := c.AMF.Stats(); uint64(m.Moved) != st.PathSwitches+st.HandoversCompleted {
		t.Errorf("AMF: %d path switches + %d N2 handovers, the mover moved %d", st.PathSwitches, st.HandoversCompleted, m.Moved)
	}
	t.Logf("background mobility %+v; transfer: %d datagrams sent, %d send errors", m, res.Data.TransferPacketsSent, res.Data.TransferSendErrors)
	waitIdle(t, c.Core)
}
