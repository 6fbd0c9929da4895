package upfu_test

import (
	"context"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// pathEvents records what path supervision reports.
type pathEvents struct {
	mu                  sync.Mutex
	failed, recovered   []netip.Addr
	sessions            []uint64
	sessionReports      []rules.Report
	reportCh, pathEvent chan struct{}
}

func newPathEvents() *pathEvents {
	return &pathEvents{reportCh: make(chan struct{}, 100), pathEvent: make(chan struct{}, 100)}
}

func (e *pathEvents) PathFailure(a netip.Addr) {
	e.mu.Lock()
	e.failed = append(e.failed, a)
	e.mu.Unlock()
	notify(e.pathEvent)
}

func (e *pathEvents) PathRecovery(a netip.Addr) {
	e.mu.Lock()
	e.recovered = append(e.recovered, a)
	e.mu.Unlock()
	notify(e.pathEvent)
}

func (e *pathEvents) Report(seid uint64, r rules.Report) {
	e.mu.Lock()
	e.sessions = append(e.sessions, seid)
	e.sessionReports = append(e.sessionReports, r)
	e.mu.Unlock()
	notify(e.reportCh)
}

// notify signals ch without ever blocking the pipeline's goroutines.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (e *pathEvents) snapshot() (failed, recovered []netip.Addr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.failed), slices.Clone(e.recovered)
}

// gnbSim plays the gNBs: it takes the Echo Requests the pipeline sends
// (through the sink) and, for the peers that are up, answers them through
// a worker, as the driver would hand them in from N3.
type gnbSim struct {
	p    *upfu.Pipeline
	w    *upfu.Worker
	sink *sink
	up   map[netip.Addr]bool
	// requests seen per peer, in order, by sequence number.
	requests map[netip.Addr][]uint16
}

func newGNBSim(p *upfu.Pipeline, s *sink) *gnbSim {
	return &gnbSim{p: p, w: p.NewWorker(), sink: s, up: map[netip.Addr]bool{}, requests: map[netip.Addr][]uint16{}}
}

// poll handles the Echo Requests sent since the last call.
func (g *gnbSim) poll(t *testing.T) {
	t.Helper()
	g.sink.mu.Lock()
	pkts := g.sink.pkts
	g.sink.pkts = nil
	g.sink.mu.Unlock()
	for _, pk := range pkts {
		var h gtpu.Header
		if err := gtpu.Parse(pk.Data(), &h); err != nil || h.Type != gtpu.TypeEchoRequest || !h.HasSeq {
			t.Fatalf("pipeline sent %+v (%v), want an Echo Request", h, err)
		}
		if pk.Peer.Port() != gtpu.Port {
			t.Errorf("Echo Request to port %d", pk.Peer.Port())
		}
		a := pk.Peer.Addr()
		g.requests[a] = append(g.requests[a], h.Seq)
		if g.up[a] {
			g.answer(a, gtpu.AppendEchoResponse(nil, h.Seq))
		}
	}
}

func (g *gnbSim) answer(from netip.Addr, msg []byte) {
	g.w.Uplink([]upfu.Packet{withHeadroom(msg, netip.AddrPortFrom(from, gtpu.Port))}, nil)
}

// run polls until done returns true or the time is up.
func (g *gnbSim) run(t *testing.T, d time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		g.poll(t)
		if done != nil && done() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	if done != nil {
		t.Fatalf("not done within %v", d)
	}
}

const (
	echoInterval = 40 * time.Millisecond
	echoT3       = 20 * time.Millisecond
	echoN3       = 2
)

func supervised(t *testing.T) (*upfu.Pipeline, *gnbSim, *pathEvents) {
	t.Helper()
	p := newPipeline(t, upfu.Config{EchoInterval: echoInterval, EchoT3: echoT3, EchoN3: echoN3})
	s := &sink{}
	p.SetSink(s)
	ev := newPathEvents()
	p.SetReporter(ev)
	p.SetPathReporter(ev)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, newGNBSim(p, s), ev
}

var (
	gnbB    = netip.MustParseAddrPort("10.100.3.5:2152")
	gnbIdle = netip.MustParseAddrPort("10.100.3.9:2152")
)

// Echo Requests go to exactly the peers the sessions' forwarding FARs
// tunnel to; a peer that answers stays up; a silent one is one path
// failure after the request and its N3 retransmissions, all with the same
// sequence number; supervision of a peer stops with its last session.
func TestEchoSupervisesSessionPeers(t *testing.T) {
	p, g, ev := supervised(t)
	g.up[gnb.Addr()] = true
	p.Install(session(t, sessionOpts{seid: 1, ue: netip.MustParseAddr("10.60.0.1"), ulTEID: 0x101, peer: gnb}))
	p.Install(session(t, sessionOpts{seid: 2, ue: netip.MustParseAddr("10.60.0.2"), ulTEID: 0x102, peer: gnb, encapTEID: 0x202}))
	p.Install(session(t, sessionOpts{seid: 3, ue: netip.MustParseAddr("10.60.0.3"), ulTEID: 0x103, peer: gnbB}))
	// Buffering: the FAR sends nothing, so its peer is not watched.
	p.Install(session(t, sessionOpts{seid: 4, ue: netip.MustParseAddr("10.60.0.4"), ulTEID: 0x104, peer: gnbIdle,
		dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))

	g.run(t, 5*time.Second, func() bool { f, _ := ev.snapshot(); return len(f) > 0 })
	failed, recovered := ev.snapshot()
	if !slices.Equal(failed, []netip.Addr{gnbB.Addr()}) || len(recovered) != 0 {
		t.Fatalf("failed %v recovered %v, want gNB 2 failed", failed, recovered)
	}
	if got := g.requests[gnbB.Addr()]; len(got) != 1+echoN3 || got[0] != got[1] || got[1] != got[2] {
		t.Errorf("requests to the silent gNB before its failure: seq %v, want %d of one", got, 1+echoN3)
	}
	if len(g.requests[gnb.Addr()]) == 0 || len(g.requests[gnbIdle.Addr()]) != 0 || len(g.requests) != 2 {
		t.Errorf("Echo Requests to %v", g.requests)
	}
	st := p.Stats()
	if st.PathFailures != 1 || st.PathsSupervised != 2 || st.PathsUp != 1 || st.EchoRequestsSent < 1+echoN3+1 {
		t.Errorf("stats %+v", st)
	}

	// The answering gNB stays up for several rounds.
	g.run(t, 6*echoInterval, nil)
	if failed, _ := ev.snapshot(); len(failed) != 1 {
		t.Errorf("failures %v", failed)
	}
	if n := len(g.requests[gnb.Addr()]); n < 3 {
		t.Errorf("%d requests to the answering gNB in 7 intervals", n)
	}

	// gNB 2's last session goes: its supervision stops. gNB 1 keeps one
	// session, then none.
	p.Remove(3)
	p.Remove(1)
	g.run(t, echoInterval, nil) // a request in flight may still go
	g.requests = map[netip.Addr][]uint16{}
	g.run(t, 4*echoInterval, nil)
	if len(g.requests[gnbB.Addr()]) != 0 || len(g.requests[gnb.Addr()]) == 0 {
		t.Errorf("after removing gNB 2's session: requests %v", g.requests)
	}
	if st := p.Stats(); st.PathsSupervised != 1 || st.PathsUp != 1 {
		t.Errorf("stats %+v", st)
	}
	p.Remove(2)
	g.run(t, echoInterval, nil)
	g.requests = map[netip.Addr][]uint16{}
	g.run(t, 4*echoInterval, nil)
	if len(g.requests) != 0 {
		t.Errorf("requests with no session: %v", g.requests)
	}
	if st := p.Stats(); st.PathsSupervised != 0 || st.PathFailures != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A failed peer that answers again is reported recovered, once.
func TestEchoPathRecovery(t *testing.T) {
	p, g, ev := supervised(t)
	p.Install(session(t, sessionOpts{peer: gnb}))
	g.run(t, 5*time.Second, func() bool { f, _ := ev.snapshot(); return len(f) == 1 })
	g.up[gnb.Addr()] = true
	g.run(t, 5*time.Second, func() bool { _, r := ev.snapshot(); return len(r) == 1 })
	g.run(t, 4*echoInterval, nil)
	failed, recovered := ev.snapshot()
	if len(failed) != 1 || !slices.Equal(recovered, []netip.Addr{gnb.Addr()}) {
		t.Errorf("failed %v recovered %v", failed, recovered)
	}
	if st := p.Stats(); st.PathsUp != 1 || st.PathFailures != 1 {
		t.Errorf("stats %+v", st)
	}
}

// An Echo Response whose Recovery IE is missing or cut short is dropped
// and counted; it answers nothing (the path is judged by the responses
// that are well-formed). One whose sequence number matches no request is
// counted as unmatched.
func TestEchoBadRecoveryIsCountedDrop(t *testing.T) {
	p, g, ev := supervised(t)
	p.Install(session(t, sessionOpts{peer: gnb}))
	noIE := gtpu.AppendEchoResponse(nil, 1)
	noIE = noIE[:len(noIE)-2]
	noIE[3] -= 2 // length without the Recovery IE
	badIE := gtpu.AppendEchoResponse(nil, 1)
	badIE = append(badIE[:len(badIE)-2], 99, 0) // an unknown TV type instead
	// Answer every request with the malformed responses only.
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.poll(t)
		for _, seqs := range g.requests {
			for range seqs {
				g.answer(gnb.Addr(), noIE)
				g.answer(gnb.Addr(), badIE)
			}
		}
		g.requests = map[netip.Addr][]uint16{}
		if f, _ := ev.snapshot(); len(f) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	st := p.Stats()
	if st.Drops["echo-bad-recovery"] < 2*(1+echoN3) || st.EchoResponsesUnmatched != 0 {
		t.Errorf("stats %+v", st)
	}
	// A well-formed answer to nothing outstanding.
	g.answer(gnb.Addr(), gtpu.AppendEchoResponse(nil, 0x7777))
	deadline = time.Now().Add(5 * time.Second)
	for p.Stats().EchoResponsesUnmatched != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := p.Stats(); st.EchoResponsesUnmatched != 1 {
		t.Errorf("unmatched %d", st.EchoResponsesUnmatched)
	}
}

// An Error Indication from a gNB for a tunnel a session forwards to is
// reported for that session only, with the tunnel; one for a tunnel no
// FAR forwards to is a counted drop, and so is a malformed one. Neither
// allocates on the packet path.
func TestErrorIndicationReported(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	ev := newPathEvents()
	p.SetReporter(ev)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	p.Install(session(t, sessionOpts{seid: 1, ue: netip.MustParseAddr("10.60.0.1"), ulTEID: 0x101, peer: gnb, encapTEID: 0x201}))
	p.Install(session(t, sessionOpts{seid: 2, ue: netip.MustParseAddr("10.60.0.2"), ulTEID: 0x102, peer: gnb, encapTEID: 0x202}))
	w := p.NewWorker()
	ei := func(teid uint32, addr netip.Addr) upfu.Packet {
		a := addr.As4()
		return withHeadroom(gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{Seq: 1, TEID: teid, PeerAddr: a[:]}), gnb)
	}
	if out := w.Uplink([]upfu.Packet{ei(0x202, gnb.Addr())}, nil); len(out) != 0 {
		t.Errorf("answered an Error Indication: %v", out)
	}
	select {
	case <-ev.reportCh:
	case <-time.After(5 * time.Second):
		t.Fatal("no report")
	}
	ev.mu.Lock()
	if !slices.Equal(ev.sessions, []uint64{2}) || ev.sessionReports[0] != (rules.Report{Kind: rules.ReportErrorIndication,
		RemoteTEID: 0x202, RemotePeer: gnb.Addr()}) {
		t.Errorf("reports %v %+v", ev.sessions, ev.sessionReports)
	}
	ev.mu.Unlock()

	// Unknown tunnel: a TEID no FAR uses, or a known TEID from another
	// peer; and a malformed one (no GTP-U Peer Address).
	w.Uplink([]upfu.Packet{ei(0x999, gnb.Addr()), ei(0x201, gnbB.Addr())}, nil)
	bad := gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{Seq: 1, TEID: 0x201, PeerAddr: []byte{1, 2, 3}})
	w.Uplink([]upfu.Packet{withHeadroom(bad, gnb)}, nil)
	st := p.Stats()
	if st.Drops["error-indication-unknown"] != 2 || st.Drops["malformed"] != 1 || st.ErrorIndicationsReceived != 4 {
		t.Errorf("stats %+v", st)
	}
	select {
	case <-ev.reportCh:
		t.Error("unknown tunnel reported")
	case <-time.After(20 * time.Millisecond):
	}

	// No allocation on the packet path, with a report raised each time
	// (the bounded queue drops what it cannot hold) or not.
	in := []upfu.Packet{ei(0x201, gnb.Addr()), ei(0x999, gnb.Addr()), withHeadroom(gtpu.AppendEchoResponse(nil, 3), gnb)}
	out := make([]upfu.Packet, 0, 8)
	if n := testing.AllocsPerRun(200, func() { w.Uplink(in, out[:0]) }); n != 0 {
		t.Errorf("%v allocations per batch", n)
	}
	// A replaced session's tunnel leaves the map with the old snapshot.
	p.Install(session(t, sessionOpts{seid: 2, ue: netip.MustParseAddr("10.60.0.2"), ulTEID: 0x102, peer: gnb, encapTEID: 0x203}))
	before := p.Stats().Drops["error-indication-unknown"]
	w.Uplink([]upfu.Packet{ei(0x202, gnb.Addr())}, nil)
	if got := p.Stats().Drops["error-indication-unknown"]; got != before+1 {
		t.Errorf("Error Indication for the replaced tunnel: unknown drops %d, want %d", got, before+1)
	}
}

// Run's path supervision ends with it: no goroutine is left behind.
func TestSupervisionEndsWithRun(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newPipeline(t, upfu.Config{EchoInterval: time.Millisecond, EchoT3: time.Millisecond, EchoN3: 1})
	p.SetSink(&sink{})
	p.Install(session(t, sessionOpts{peer: gnb}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().PathFailures == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Run, %d before", n, before)
	}
	if p.Stats().PathFailures != 1 {
		t.Errorf("stats %+v", p.Stats())
	}
}
