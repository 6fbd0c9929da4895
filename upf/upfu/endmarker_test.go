package upfu_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

var gnb2 = netip.MustParseAddrPort("10.100.3.9:2152")

// sent is a packet on the wire as a test sees it: a G-PDU or an End Marker,
// its TEID and peer.
type sent struct {
	typ     uint8
	teid    uint32
	peer    netip.AddrPort
	payload []byte
}

func (s sent) String() string { return fmt.Sprintf("type %d TEID %#x to %v", s.typ, s.teid, s.peer) }

func parseSent(t testing.TB, p upfu.Packet) sent {
	t.Helper()
	var h gtpu.Header
	if err := gtpu.Parse(p.Data(), &h); err != nil {
		t.Fatalf("unparseable output % x: %v", p.Data(), err)
	}
	return sent{typ: h.Type, teid: h.TEID, peer: p.Peer, payload: append([]byte(nil), h.Payload(p.Data())...)}
}

func sinkSent(t *testing.T, s *sink) []sent {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sent
	for _, p := range s.pkts {
		out = append(out, parseSent(t, p))
	}
	return out
}

// Xn/N2 handover (TS 23.502 §4.9.1.2.2 step 6, §4.9.1.3.3 step 4): Update FAR
// to a new tunnel with SNDEM. One End Marker goes to the old peer with the
// old TEID (TS 29.281 §7.3.2), and new packets to the new tunnel.
func TestEndMarkerOnTunnelSwitch(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	snk := &sink{}
	p.SetSink(snk)
	w := p.NewWorker()
	p.Install(session(t, sessionOpts{encapTEID: 0x200}))
	if out := w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 100)}, nil); len(out) != 1 || parseSent(t, out[0]).teid != 0x200 {
		t.Fatalf("before the switch: %v", out)
	}
	p.Install(session(t, sessionOpts{encapTEID: 0x300, peer: gnb2, sndem: true}))
	got := sinkSent(t, snk)
	if len(got) != 1 || got[0].typ != gtpu.TypeEndMarker || got[0].teid != 0x200 || got[0].peer != gnb || len(got[0].payload) != 0 {
		t.Fatalf("sink got %v, want one End Marker for TEID 0x200 to %v", got, gnb)
	}
	if teid, err := gtpu.ParseEndMarker(snk.pkts[0].Data()); err != nil || teid != 0x200 {
		t.Errorf("End Marker: %#x %v", teid, err)
	}
	out := w.Downlink([]upfu.Packet{dlPacket(ueIP, 2, 100)}, nil)
	if len(out) != 1 || parseSent(t, out[0]).teid != 0x300 || out[0].Peer != gnb2 {
		t.Fatalf("after the switch: %v", out)
	}
	if st := p.Stats(); st.EndMarkersSent != 1 || st.Buffered != 0 || st.DLPackets != 2 {
		t.Errorf("stats %+v", st)
	}

	// No End Marker without SNDEM, nor when the tunnel stays.
	p.Install(session(t, sessionOpts{encapTEID: 0x400}))
	p.Install(session(t, sessionOpts{encapTEID: 0x400, sndem: true}))
	if got := sinkSent(t, snk); len(got) != 1 {
		t.Errorf("sink got %v after switches that send no End Marker", got)
	}
	// A snapshot with SNDEM for a new session has no old tunnel.
	p.Remove(seid)
	p.Install(session(t, sessionOpts{encapTEID: 0x500, sndem: true}))
	if st := p.Stats(); st.EndMarkersSent != 1 {
		t.Errorf("End Markers %d", st.EndMarkersSent)
	}
}

// Smart buffering at handover: FORW(old) -> BUFF -> FORW(new) with SNDEM.
// The End Marker goes to the old tunnel first, then the buffered packets
// to the new one, in order.
func TestEndMarkerBeforeDrain(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	snk := &sink{}
	p.SetSink(snk)
	w := p.NewWorker()
	p.Install(session(t, sessionOpts{encapTEID: 0x200}))
	// Handover starts: the FAR buffers (keeping its forwarding parameters).
	p.Install(session(t, sessionOpts{encapTEID: 0x200, dlFAR: rules.ActionBuffer}))
	var want [][]byte
	for i := range 4 {
		pk := dlPacket(ueIP, uint16(i), 80+i)
		want = append(want, append([]byte(nil), pk.Data()...))
		w.Downlink([]upfu.Packet{pk}, nil)
	}
	p.Install(session(t, sessionOpts{encapTEID: 0x300, peer: gnb2, sndem: true}))
	got := sinkSent(t, snk)
	if len(got) != 5 || got[0].typ != gtpu.TypeEndMarker || got[0].teid != 0x200 || got[0].peer != gnb {
		t.Fatalf("sink got %v", got)
	}
	for i, g := range got[1:] {
		if g.typ != gtpu.TypeGPDU || g.teid != 0x300 || g.peer != gnb2 || !bytes.Equal(g.payload, want[i]) {
			t.Fatalf("drained packet %d: %v", i, g)
		}
	}
}

// The ordering under load: workers forward downlink while the tunnel
// switches with SNDEM again and again. A worker hands its outputs to the
// "wire" some time after Downlink returns (as the driver does) and then
// calls Sent. On the wire, no packet for a tunnel follows its End Marker,
// and no packet for the new tunnel precedes it.
func TestEndMarkerOrderUnderLoad(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	var mu sync.Mutex
	var wire []sent
	put := func(pkts []upfu.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, pk := range pkts {
			wire = append(wire, parseSent(t, pk))
		}
	}
	p.SetSink(sinkFunc(put))
	const switches = 40
	teidOf := func(i int) uint32 { return 0x1000 + uint32(i) }
	p.Install(session(t, sessionOpts{encapTEID: teidOf(0)}))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.NewWorker()
			w.SendsLater()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			in := make([]upfu.Packet, 4)
			out := make([]upfu.Packet, 0, 4)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range in {
					in[i] = dlPacket(ueIP, uint16(i), 60)
				}
				out = w.Downlink(in, out[:0])
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond) // a slow sendmmsg
				}
				put(out)
				w.Sent()
			}
		}()
	}
	for i := 1; i <= switches; i++ {
		time.Sleep(time.Millisecond)
		p.Install(session(t, sessionOpts{encapTEID: teidOf(i), sndem: true}))
	}
	time.Sleep(time.Millisecond)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	ems := 0
	current := 0 // index of the tunnel packets may go to
	for k, s := range wire {
		switch s.typ {
		case gtpu.TypeEndMarker:
			if s.teid != teidOf(current) {
				t.Fatalf("wire[%d]: End Marker for %#x while %#x is current", k, s.teid, teidOf(current))
			}
			ems++
			current++
		case gtpu.TypeGPDU:
			if s.teid != teidOf(current) {
				t.Fatalf("wire[%d]: G-PDU for %#x while %#x is current (after %d End Markers)", k, s.teid, teidOf(current), ems)
			}
		}
	}
	if ems != switches || p.Stats().EndMarkersSent != switches {
		t.Errorf("%d End Markers on the wire, %d counted; want %d", ems, p.Stats().EndMarkersSent, switches)
	}
	if st := p.Stats(); st.Buffered != 0 || st.BufferedBytes != 0 {
		t.Errorf("left buffered: %+v", st)
	}
}

type sinkFunc func([]upfu.Packet)

func (f sinkFunc) Send(p []upfu.Packet) { f(p) }

// A FAR that stops forwarding to its tunnel (the hold of smart buffering):
// Install returns only once no batch that still saw the old snapshot is
// on its way to that tunnel, so that the PFCP response, and the Handover
// Command after it, come after the last packet the source gets.
func TestHoldWaitsForBatchesInFlight(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.SetSink(&sink{})
	p.Install(session(t, sessionOpts{encapTEID: 0x200}))
	w := p.NewWorker()
	w.SendsLater()
	if out := w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 100)}, nil); len(out) != 1 {
		t.Fatalf("forwarded %d", len(out))
	}
	// The batch's output is not on the wire yet.
	installed := make(chan struct{})
	go func() {
		p.Install(session(t, sessionOpts{encapTEID: 0x200, dlFAR: rules.ActionBuffer}))
		close(installed)
	}()
	select {
	case <-installed:
		t.Fatal("the hold was installed while a batch for the old tunnel was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	w.Sent()
	select {
	case <-installed:
	case <-time.After(2 * time.Second):
		t.Fatal("Install still waits after the batch was sent")
	}
	// Nothing to wait for when the FAR keeps forwarding.
	done := make(chan struct{})
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 2, 100)}, nil) // buffered: the FAR holds
	w.Sent()
	go func() {
		p.Install(session(t, sessionOpts{encapTEID: 0x200}))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Install of a forwarding FAR waited")
	}
}
