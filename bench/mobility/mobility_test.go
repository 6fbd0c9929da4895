package mobility

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/report"
)

// TestPagingRuns runs a small paging experiment end to end: the windows
// are measured, and every packet of the stream arrives, in order.
func TestPagingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Paging(ctx, PagingConfig{Setup: Setup{Trials: 3, Log: t.Logf}, Concurrency: []int{4}, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures != 0 || len(res.Unit) != 3 || len(res.Full) != 3 || len(res.Concurrent[4]) != 2 {
		t.Fatalf("failures %d, %d unit windows, %d full, concurrent %v", res.Failures, len(res.Unit), len(res.Full), res.Concurrent)
	}
	if res.DL.Sent == 0 || res.DL.Lost != 0 || res.DL.Reordered != 0 {
		t.Errorf("downlink over the trials: %+v: %s", res.DL, res.Loss)
	}
	t.Logf("unit %v, full %v, baseline %v, concurrent %v, DL sent %d delayed %d", res.Unit, res.Full, res.Baseline, res.Concurrent, res.DL.Sent, res.DL.Delayed)
}

// TestHandoverRuns runs a small handover experiment in every mode: the
// windows are measured, and no packet of the stream is lost; with smart
// buffering none is reordered either.
func TestHandoverRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := Handover(ctx, HandoverConfig{Setup: Setup{Trials: 4, Log: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != len(HandoverModes) {
		t.Fatalf("%d modes", len(res.Modes))
	}
	for _, m := range res.Modes {
		if m.Failures != 0 || len(m.Window) != 4 {
			t.Errorf("%s: %d failures, %d windows", m.Mode, m.Failures, len(m.Window))
		}
		if m.DL.Sent == 0 || m.DL.Lost != 0 {
			t.Errorf("%s: downlink %+v: %s", m.Mode, m.DL, m.Loss)
		}
		if m.Mode == ModeN2Smart && m.DL.Reordered != 0 {
			t.Errorf("%s: %d packets reordered", m.Mode, m.DL.Reordered)
		}
		if len(m.Trace) == 0 {
			t.Errorf("%s: no trace", m.Mode)
		}
	}
	for _, r := range res.Results() {
		t.Logf("%s %s: median %.0f %s, extra %v", r.Name, r.Variant, r.Median, r.Unit, r.Extra)
	}
}

// TestOneMedianPerWindow: the progress lines and the table give a window
// the same median, whatever the number of trials (issue 37: with
// --trials 2 the line gave the upper sample and the table the lower).
func TestOneMedianPerWindow(t *testing.T) {
	for _, ds := range [][]time.Duration{
		{3 * time.Millisecond, time.Millisecond},
		{4, 1, 3, 2},
		{5, 1, 4},
		{7},
	} {
		table := report.Summarize("handover", slices.Clone(ds), 0).Median
		if got := median(ds); got != table {
			t.Errorf("%v: progress median %v, table median %v", ds, got, table)
		}
	}
	if median(nil) != 0 {
		t.Error("median of no window")
	}
}

// TestHandoverLossAttributed: packets lost to a known cause are counted
// there, none left unattributed (issue 37: 144 packets lost with every
// drop counter shown at zero). The cause here: gNB N3 sockets with the
// smallest receive buffer the kernel allows, which a stream burst of ten
// packets a millisecond overflows.
func TestHandoverLossAttributed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Handover(ctx, HandoverConfig{Setup: Setup{Trials: 2, GNBReadBuffer: 1, Log: t.Logf}, Modes: []string{ModeXn}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	l := m.Loss
	t.Logf("%s", l)
	if m.DL.Lost == 0 || l.Lost != m.DL.Lost {
		t.Fatalf("downlink %+v, loss %+v: want packets lost, and the loss to count them", m.DL, l)
	}
	if l.N3Socket == 0 || l.N3SocketUnknown || l.Unattributed != 0 {
		t.Errorf("%d lost: %d at the gNBs' sockets (unknown %v), %d unattributed; want them at the sockets, none unattributed",
			l.Lost, l.N3Socket, l.N3SocketUnknown, l.Unattributed)
	}
	var table strings.Builder
	res.WriteTable(&table)
	if !strings.Contains(table.String(), "dropped by the kernel at the gNBs' N3 sockets (receive buffer full)") {
		t.Errorf("the table does not say where the packets went:\n%s", table.String())
	}
	for _, r := range res.Results() {
		if r.Name == "handover-dl" {
			if got, ok := r.Extra["loss"].(Loss); !ok || got.N3Socket != l.N3Socket {
				t.Errorf("JSON row's loss %#v", r.Extra["loss"])
			}
		}
	}
}

// TestSettleLatePackets: a packet that arrives after the window was first
// analysed, while settle waits, is delivered: received and late, not lost.
func TestSettleLatePackets(t *testing.T) {
	s := NewStream(func(...[]byte) error { return nil }, netip.MustParseAddrPort("192.0.2.1:9000"), netip.MustParseAddrPort("10.60.0.1:9000"), 1000, 32)
	from := s.Mark()
	pkts := make([][]byte, 10)
	for i := range pkts {
		pkts[i] = s.packet()
	}
	to := s.Mark()
	for _, p := range pkts[:7] {
		s.Receive(p)
	}
	w := s.Analyze(from, to, time.Hour)
	if w.Lost != 3 {
		t.Fatalf("window %+v, want 3 lost", w)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		s.Receive(pkts[7])
		s.Receive(pkts[8])
	}()
	got := settle(context.Background(), s, w, from, to, time.Hour)
	if got.Sent != 10 || got.Received != 9 || got.Lost != 1 || got.Late != 2 {
		t.Errorf("settled window: sent %d, received %d, lost %d, late %d; want 10, 9, 1, 2", got.Sent, got.Received, got.Lost, got.Late)
	}
}

// TestAccount: losses go to the counters that grew over the window; the
// UPF's buffers count what they gained, not what they held before; the
// rest is unattributed, and counters that count more than was lost say
// so instead of clamping to zero.
func TestAccount(t *testing.T) {
	before := lossCounters{refused: 1, socket: 100, buffered: 40, upf: map[string]uint64{"no-session": 5}}
	after := lossCounters{refused: 3, socket: 104, buffered: 43, upf: map[string]uint64{"no-session": 6}}
	// 2 generator + 4 socket + 3 buffered + 1 UPF = 10
	if l := account(12, before, after); l.Generator != 2 || l.N3Socket != 4 || l.UPFBuffered != 3 || l.UPF["no-session"] != 1 ||
		l.Unattributed != 2 || l.Overattributed != 0 {
		t.Errorf("12 lost: %+v, want 2 generator, 4 socket, 3 buffered, 1 UPF, 2 unattributed", l)
	}
	l := account(7, before, after)
	if l.Unattributed != 0 || l.Overattributed != 3 || !strings.Contains(l.String(), "3 more drops than were lost") {
		t.Errorf("7 lost, 10 counted: %+v (%s), want 3 over-attributed, said", l, l)
	}
	// Buffers that shrank hold none of this window's packets.
	after.buffered = 10
	if l := account(12, before, after); l.UPFBuffered != 0 {
		t.Errorf("buffers shrank from 40 to 10: %d counted as buffered", l.UPFBuffered)
	}
}
