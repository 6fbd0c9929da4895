package rules_test

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

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
	if rules.Crossed(0, 100, 100) {
		t.Error("zero threshold crossed")
	}
}

func TestURRCrossingsAndQuota(t *testing.T) {
	u := &rules.URR{Counters: &rules.Counters{}, Threshold: rules.Volume{UL: 250}, Quota: rules.Volume{Total: 400}}
	var got []rules.UsageTrigger
	for range 5 {
		if u.QuotaExhausted(rules.Uplink) {
			break
		}
		d, tot := u.Counters.Add(rules.Uplink, 100)
		got = append(got, u.Crossings(rules.Uplink, d, tot, 100))
	}
	want := []rules.UsageTrigger{0, 0, rules.UsageVolumeThreshold, rules.UsageVolumeQuota}
	if !slices.Equal(got, want) {
		t.Fatalf("crossings %v, want %v", got, want)
	}
	if !u.QuotaExhausted(rules.Downlink) {
		t.Error("a total quota used up by uplink must stop downlink too")
	}
	spent := &rules.URR{Counters: &rules.Counters{}, QuotaSpent: true}
	if !spent.HasQuota() || !spent.QuotaExhausted(rules.Uplink) {
		t.Error("a spent quota must stay exhausted")
	}
}

func TestBufferOrderAndLimits(t *testing.T) {
	b := rules.NewBuffer(3, 10)
	if b.PushIfHolding([]byte{1}, 0) != rules.NotHolding {
		t.Fatal("idle buffer took a packet")
	}
	if r, first := b.Push([]byte{1, 1}, true, 0); r != rules.Buffered || !first {
		t.Fatal(r, first)
	}
	if r, first := b.Push([]byte{2, 2, 2}, true, 0); r != rules.Buffered || first {
		t.Fatal("second push reported first", r)
	}
	if b.PushIfHolding([]byte{3, 3, 3, 3, 3, 3}, 0) != rules.BufferFull {
		t.Fatal("byte limit not enforced")
	}
	if b.PushIfHolding([]byte{3}, 0) != rules.Buffered {
		t.Fatal("holding buffer refused")
	}
	if r, _ := b.Push([]byte{4}, false, 0); r != rules.BufferFull {
		t.Fatal("packet limit not enforced")
	}
	var got [][]byte
	n := b.Release(0, func(p []byte) {
		got = append(got, append([]byte(nil), p...))
		if len(got) == 1 {
			// Arrives during the drain: goes out after the others.
			if b.PushIfHolding([]byte{5}, 0) != rules.Buffered {
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
	if b.Holding() || b.PushIfHolding([]byte{1}, 0) != rules.NotHolding {
		t.Error("still holding after release")
	}
	// A new episode notifies again; Drop empties and ends it.
	if _, first := b.Push([]byte{9}, true, 0); !first {
		t.Error("new episode not first")
	}
	if b.Drop() != 1 || b.Holding() {
		t.Error("drop")
	}
	if p, by := b.Len(); p != 0 || by != 0 {
		t.Error(p, by)
	}
	if _, first := b.Push([]byte{9}, true, 0); !first {
		t.Error("episode after a drop not first")
	}
	// A lower packet limit (a BAR's count) applies to the next push.
	b.SetMaxPackets(1)
	if r, _ := b.Push([]byte{9}, false, 0); r != rules.BufferFull {
		t.Errorf("SetMaxPackets(1): %v", r)
	}
}

func TestBufferPoolAccounting(t *testing.T) {
	pool := rules.NewBufferPool(10)
	a := pool.NewBuffer(100, 8, 0)
	c := pool.NewBuffer(100, 8, 0)
	if r, _ := a.Push(make([]byte, 6), false, 0); r != rules.Buffered {
		t.Fatal(r)
	}
	// c is within its own limit but not within the pool's.
	if r, _ := c.Push(make([]byte, 5), true, 0); r != rules.BufferGlobalCap {
		t.Fatalf("global cap: %v", r)
	}
	if c.Holding() {
		t.Error("a refused packet started an episode")
	}
	if r, first := c.Push(make([]byte, 4), true, 0); r != rules.Buffered || !first {
		t.Fatalf("within the cap: %v %v", r, first)
	}
	if st := pool.Stats(); st.Packets != 2 || st.Bytes != 10 {
		t.Fatalf("pool %+v", st)
	}
	a.Release(0, func([]byte) {})
	if st := pool.Stats(); st.Packets != 1 || st.Bytes != 4 {
		t.Fatalf("after release %+v", st)
	}
	if c.Close() != 1 {
		t.Error("close dropped nothing")
	}
	if r, _ := c.Push([]byte{1}, false, 0); r != rules.BufferClosed {
		t.Errorf("push after close: %v", r)
	}
	c.Hold()
	if c.Holding() || c.PushIfHolding([]byte{1}, 0) != rules.NotHolding {
		t.Error("a closed buffer holds")
	}
	if st := pool.Stats(); st != (rules.BufferPoolStats{Discarded: 1}) {
		t.Errorf("after close %+v", st)
	}
}

func TestBufferExpiry(t *testing.T) {
	const ms = int64(1e6)
	pool := rules.NewBufferPool(0)
	b := pool.NewBuffer(100, 1000, 100*time.Millisecond)
	b.Push([]byte{1}, true, 0)
	b.Push([]byte{2, 2}, true, 50*ms)
	b.Push([]byte{3, 3, 3}, true, 90*ms)
	if n := b.Expire(100 * ms); n != 0 {
		t.Fatalf("expired %d at the hold time", n)
	}
	if n := b.Expire(101 * ms); n != 1 {
		t.Fatalf("expired %d, want the first", n)
	}
	// On push: the second is now too old as well.
	if r, first := b.Push([]byte{4}, true, 151*ms); r != rules.Buffered || first {
		t.Fatal(r, first)
	}
	if p, by := b.Len(); p != 2 || by != 4 {
		t.Fatalf("left %d packets %d bytes", p, by)
	}
	// On release: the third expires, the fourth goes out.
	var got [][]byte
	b.Release(191*ms, func(p []byte) { got = append(got, append([]byte(nil), p...)) })
	if len(got) != 1 || !bytes.Equal(got[0], []byte{4}) {
		t.Fatalf("released %v", got)
	}
	if st := pool.Stats(); st != (rules.BufferPoolStats{Expired: 3}) {
		t.Errorf("pool %+v", st)
	}
	// An episode whose packets all expire ends: the next one notifies
	// again, and forwarded packets no longer queue.
	b.Push([]byte{5}, true, 1000*ms)
	b.Expire(2000 * ms)
	if b.Holding() {
		t.Error("holding with every packet expired")
	}
	if _, first := b.Push([]byte{6}, true, 2000*ms); !first {
		t.Error("episode after expiry not first")
	}
	// Hold keeps the episode (and the queueing) without packets until
	// Release, even when the packets expire.
	b.Drop()
	b.Hold()
	if b.PushIfHolding([]byte{7}, 3000*ms) != rules.Buffered {
		t.Fatal("held buffer did not queue")
	}
	b.Expire(4000 * ms)
	if !b.Holding() || b.PushIfHolding([]byte{8}, 4000*ms) != rules.Buffered {
		t.Fatal("hold ended by expiry")
	}
	got = got[:0]
	b.Release(4000*ms, func(p []byte) { got = append(got, append([]byte(nil), p...)) })
	if len(got) != 1 || got[0][0] != 8 || b.Holding() {
		t.Fatalf("after hold: released %v, holding %v", got, b.Holding())
	}
}

// Pushes interleaved with expiry reuse the storage (compaction) and keep
// the order; a steady buffering cycle allocates nothing.
func TestBufferCompactionAndNoAllocations(t *testing.T) {
	pool := rules.NewBufferPool(0)
	b := pool.NewBuffer(1<<20, 1<<20, time.Nanosecond*1000)
	pkt := make([]byte, 1400)
	next := byte(0)
	var now int64
	for range 200 {
		// Each round: 30 packets in, the older ones expire.
		for range 30 {
			pkt[0] = next
			next++
			if r, _ := b.Push(pkt, false, now); r != rules.Buffered {
				t.Fatal(r)
			}
			now += 100
		}
	}
	// 1000 ns hold at 100 ns per packet: the last 10 are live.
	want := next - 10
	b.Release(now, func(p []byte) {
		if p[0] != want {
			t.Fatalf("released %d, want %d", p[0], want)
		}
		want++
	})
	if want != next {
		t.Fatalf("released up to %d, want %d", want, next)
	}
	if st := pool.Stats(); st.Packets != 0 || st.Bytes != 0 || st.Expired != 6000-10 {
		t.Errorf("pool %+v", st)
	}

	c := pool.NewBuffer(64, 1<<20, 0)
	cycle := func() {
		for range 20 {
			c.Push(pkt, true, 0)
		}
		c.PushIfHolding(pkt, 0)
		c.Release(0, func([]byte) {})
	}
	cycle()
	if a := testing.AllocsPerRun(100, cycle); a != 0 {
		t.Errorf("%v allocations per buffering episode", a)
	}
}

// Concurrent pushes, releases and expiry keep the pool's account exact.
func TestBufferPoolConcurrent(t *testing.T) {
	pool := rules.NewBufferPool(64 << 10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := pool.NewBuffer(50, 32<<10, time.Microsecond)
			pkt := make([]byte, 100+g)
			for i := range 2000 {
				b.Push(pkt, true, int64(i*100))
				b.PushIfHolding(pkt, int64(i*100))
				switch i % 7 {
				case 0:
					b.Release(int64(i*100), func([]byte) {})
				case 3:
					b.Expire(int64(i * 100))
				case 5:
					b.Drop()
				}
			}
			b.Close()
		}()
	}
	wg.Wait()
	if st := pool.Stats(); st.Packets != 0 || st.Bytes != 0 {
		t.Errorf("pool after all buffers closed: %+v", st)
	}
}

// CountersFrom starts at the usage given, field by field, and counts on.
func TestCountersFrom(t *testing.T) {
	start := rules.Usage{Volume: rules.Volume{Total: 1000, UL: 600, DL: 399}, ULPackets: 6, DLPackets: 4}
	c := rules.CountersFrom(start)
	if got := c.Load(); got != start {
		t.Fatalf("CountersFrom(%+v).Load() = %+v", start, got)
	}
	d, tot := c.Add(rules.Downlink, 1)
	if d != 400 || tot != 1001 {
		t.Errorf("after one downlink byte: dir %d total %d, want 400 1001", d, tot)
	}
	if got := c.Load(); got.DLPackets != 5 || got.ULPackets != 6 || got.Volume.UL != 600 {
		t.Errorf("after one downlink packet %+v", got)
	}
}
