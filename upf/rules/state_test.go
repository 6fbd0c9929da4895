package rules_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/tern5g/tern/upf/rules"
)

func TestTokenBucket(t *testing.T) {
	tb := rules.NewTokenBucket(1000, 1500) // 1000 B/s, 1500 B burst
	const sec = int64(1e9)
	now := 10 * sec
	if !tb.Allow(now, 1000) {
		t.Fatal("first packet within burst refused")
	}
	if tb.Allow(now, 1000) {
		t.Fatal("2000 bytes at once passed a 1500-byte burst")
	}
	if !tb.Allow(now, 500) {
		t.Fatal("500 more bytes (burst 1500) refused")
	}
	if tb.Allow(now, 1) {
		t.Fatal("burst exceeded")
	}
	now += sec // one second refills 1000 bytes
	if !tb.Allow(now, 1000) || tb.Allow(now, 100) {
		t.Fatal("rate not 1000 B/s")
	}
	// Idle time does not accumulate beyond the burst.
	now += 100 * sec
	if !tb.Allow(now, 1500) || tb.Allow(now, 1) {
		t.Fatal("idle credit beyond the burst")
	}
	if a := testing.AllocsPerRun(100, func() { tb.Allow(now, 1) }); a != 0 {
		t.Errorf("Allow allocates %v", a)
	}
}

func TestTokenBucketConcurrent(t *testing.T) {
	tb := rules.NewTokenBucket(1, 100_000) // 1 B/s: only the burst can pass
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range 10_000 {
				if tb.Allow(1e9, 10) {
					n++
				}
			}
			mu.Lock()
			passed += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if passed != 10_000 {
		t.Errorf("%d packets of 10 bytes passed a 100000-byte burst, want exactly 10000", passed)
	}
}

func TestCountersAndCrossing(t *testing.T) {
	var c rules.Counters
	crossings := 0
	for range 10 {
		d, tot := c.Add(rules.Uplink, 100)
		if rules.Crossed(350, tot, 100) {
			crossings++
		}
		_ = d
	}
	c.Add(rules.Downlink, 5)
	u := c.Load()
	if crossings != 1 || u.Volume != (rules.Volume{Total: 1005, UL: 1000, DL: 5}) || u.ULPackets != 10 || u.DLPackets != 1 {
		t.Fatalf("crossings %d usage %+v", crossings, u)
	}
	if r := c.Reset(); r != u {
		t.Errorf("reset returned %+v", r)
	}
	if z := c.Load(); z != (rules.Usage{}) {
		t.Errorf("after reset %+v", z)
	}
	if rules.Crossed(0, 100, 100) {
		t.Error("zero threshold crossed")
	}
}

func TestBufferOrderAndLimits(t *testing.T) {
	b := rules.NewBuffer(3, 10)
	if b.PushIfHolding([]byte{1}) != rules.NotHolding {
		t.Fatal("idle buffer took a packet")
	}
	if r, first := b.Push([]byte{1, 1}, true); r != rules.Buffered || !first {
		t.Fatal(r, first)
	}
	if r, first := b.Push([]byte{2, 2, 2}, true); r != rules.Buffered || first {
		t.Fatal("second push reported first", r)
	}
	if b.PushIfHolding([]byte{3, 3, 3, 3, 3, 3}) != rules.BufferFull {
		t.Fatal("byte limit not enforced")
	}
	if b.PushIfHolding([]byte{3}) != rules.Buffered {
		t.Fatal("holding buffer refused")
	}
	if r, _ := b.Push([]byte{4}, false); r != rules.BufferFull {
		t.Fatal("packet limit not enforced")
	}
	var got [][]byte
	n := b.Release(func(p []byte) {
		got = append(got, append([]byte(nil), p...))
		if len(got) == 1 {
			// Arrives during the drain: goes out after the others.
			if b.PushIfHolding([]byte{5}) != rules.Buffered {
				t.Error("push during drain refused")
			}
		}
	})
	want := [][]byte{{1, 1}, {2, 2, 2}, {3}, {5}}
	if n != 4 || len(got) != 4 {
		t.Fatalf("released %d: %v", n, got)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("order: %v", got)
		}
	}
	if b.Holding() || b.PushIfHolding([]byte{1}) != rules.NotHolding {
		t.Error("still holding after release")
	}
	// A new episode notifies again; Drop empties.
	if _, first := b.Push([]byte{9}, true); !first {
		t.Error("new episode not first")
	}
	if b.Drop() != 1 || b.Holding() {
		t.Error("drop")
	}
	if p, by := b.Len(); p != 0 || by != 0 {
		t.Error(p, by)
	}
	if b.Dropped() != 3 {
		t.Errorf("dropped %d, want 3", b.Dropped())
	}
}
