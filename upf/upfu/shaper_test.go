package upfu_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// sport is the UDP source port of a downlink G-PDU's inner packet.
func sport(t *testing.T, pk upfu.Packet) uint16 {
	t.Helper()
	var h gtpu.Header
	b := pk.Data()
	if err := gtpu.Parse(b, &h); err != nil {
		t.Fatal(err)
	}
	inner := h.Payload(b)
	return binary.BigEndian.Uint16(inner[20:22])
}

// With ShapingDelay, packets over the MBR wait and leave in order at the
// rate instead of being dropped; without it they are dropped (policing).
func TestShapingDelaysInsteadOfDropping(t *testing.T) {
	const n, size = 20, 200
	for _, shape := range []bool{false, true} {
		cfg := upfu.Config{}
		if shape {
			cfg.ShapingDelay = time.Second
		}
		p := newPipeline(t, cfg)
		runReports(t, p)
		snk := &sink{}
		p.SetSink(snk)
		// 100 kB/s with a 1500-byte burst: about 6 packets at once, the
		// other 14 over some 30 ms.
		q := &rules.QER{ID: 1, ULOpen: true, DLOpen: true, MBRDL: rules.NewTokenBucket(100_000, 1500)}
		p.Install(session(t, sessionOpts{qers: []*rules.QER{q}}))
		w := p.NewWorker()
		var now []uint16
		start := time.Now()
		for i := range n {
			for _, o := range w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), size)}, nil) {
				now = append(now, sport(t, o))
			}
		}
		if len(now) == 0 || len(now) == n {
			t.Fatalf("shape %v: %d of %d packets passed at once, want the burst only", shape, len(now), n)
		}
		if !shape {
			if st := p.Stats(); st.Drops["mbr"] != uint64(n-len(now)) {
				t.Fatalf("policing dropped %d, want %d", st.Drops["mbr"], n-len(now))
			}
			continue
		}
		waitStats(t, p, func(upfu.Stats) bool {
			snk.mu.Lock()
			defer snk.mu.Unlock()
			return len(snk.pkts) == n-len(now)
		})
		elapsed := time.Since(start)
		got := now
		snk.mu.Lock()
		for _, o := range snk.pkts {
			got = append(got, sport(t, o))
		}
		snk.mu.Unlock()
		for i, sp := range got {
			if sp != uint16(i) {
				t.Fatalf("order %v", got)
			}
		}
		// The waiting bytes leave at 100 kB/s at the earliest.
		waited := (n - len(now)) * (size + 28)
		if min := time.Duration(waited-1500) * time.Second / 100_000; elapsed < min {
			t.Errorf("%d shaped bytes left in %v, faster than the rate allows (%v)", waited, elapsed, min)
		}
		if st := p.Stats(); st.Drops["mbr"] != 0 || st.Drops["shaping-queue-full"] != 0 {
			t.Errorf("drops while shaping %v", st.Drops)
		}
	}
}

// The shaper's queue is bounded across the UPF.
func TestShapingQueueBounded(t *testing.T) {
	p := newPipeline(t, upfu.Config{ShapingDelay: time.Second, ShapingPackets: 2})
	q := &rules.QER{ID: 1, ULOpen: true, DLOpen: true, MBRDL: rules.NewTokenBucket(1000, 150)}
	p.Install(session(t, sessionOpts{qers: []*rules.QER{q}}))
	w := p.NewWorker()
	passed := 0
	for i := range 5 {
		passed += len(w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 100)}, nil))
	}
	st := p.Stats()
	if passed != 1 || st.Drops["shaping-queue-full"] != 2 || st.Drops["mbr"] != 0 {
		t.Fatalf("passed %d, drops %v; want 1 at once, 2 queued, 2 refused by the full queue", passed, st.Drops)
	}
}
