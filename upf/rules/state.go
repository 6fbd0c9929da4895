package rules

import (
	"sync"
	"sync/atomic"
)

// TokenBucket limits a byte rate with a burst allowance. It implements the
// generic cell rate algorithm (virtual scheduling): one atomic "theoretical
// arrival time", so Allow is lock-free, allocation-free and safe for
// concurrent use by every worker.
type TokenBucket struct {
	tat       atomic.Int64 // theoretical arrival time of the next byte, ns
	nsPerByte int64        // 1e9/rate in 1/65536 ns units
	burstNs   int64        // time the burst takes at the rate
	rate      uint64
	burst     uint64
}

// NewTokenBucket limits to bytesPerSec (at least 1) with a burst of burst
// bytes (at least one maximum-size packet is sensible).
func NewTokenBucket(bytesPerSec, burst uint64) *TokenBucket {
	bytesPerSec = max(bytesPerSec, 1)
	t := &TokenBucket{rate: bytesPerSec, burst: burst}
	t.nsPerByte = int64(min(1e9*65536/float64(bytesPerSec), 1<<46))
	t.burstNs = int64(min(float64(burst)*1e9/float64(bytesPerSec), 1<<62))
	return t
}

// Rate is the configured rate in bytes per second.
func (t *TokenBucket) Rate() uint64 { return t.rate }

// Burst is the configured burst in bytes.
func (t *TokenBucket) Burst() uint64 { return t.burst }

// Allow reports whether n bytes may pass at time nowNanos (any monotonic
// clock in nanoseconds) and, if so, consumes them.
func (t *TokenBucket) Allow(nowNanos int64, n int) bool {
	inc := int64(uint64(n)*uint64(t.nsPerByte)) >> 16
	for {
		old := t.tat.Load()
		next := max(old, nowNanos) + inc
		if next-nowNanos > t.burstNs {
			return false
		}
		if t.tat.CompareAndSwap(old, next) {
			return true
		}
	}
}

// Counters measure a URR's volume. Safe for concurrent use.
type Counters struct {
	ulBytes, dlBytes, totalBytes atomic.Uint64
	ulPackets, dlPackets         atomic.Uint64
}

// Add counts one packet of n bytes in direction d and returns the byte
// counts of that direction and of both directions after the addition.
func (c *Counters) Add(d Direction, n int) (dirBytes, totalBytes uint64) {
	if d == Uplink {
		c.ulPackets.Add(1)
		dirBytes = c.ulBytes.Add(uint64(n))
	} else {
		c.dlPackets.Add(1)
		dirBytes = c.dlBytes.Add(uint64(n))
	}
	return dirBytes, c.totalBytes.Add(uint64(n))
}

// Usage is a snapshot of Counters.
type Usage struct {
	Volume               Volume
	ULPackets, DLPackets uint64
}

// Load returns the current counts.
func (c *Counters) Load() Usage {
	return Usage{
		Volume:    Volume{Total: c.totalBytes.Load(), UL: c.ulBytes.Load(), DL: c.dlBytes.Load()},
		ULPackets: c.ulPackets.Load(), DLPackets: c.dlPackets.Load(),
	}
}

// Reset returns the counts and starts a new measurement (after a usage
// report). Each field is swapped atomically; a packet counted during Reset
// lands in exactly one of the two measurements per field.
func (c *Counters) Reset() Usage {
	return Usage{
		Volume:    Volume{Total: c.totalBytes.Swap(0), UL: c.ulBytes.Swap(0), DL: c.dlBytes.Swap(0)},
		ULPackets: c.ulPackets.Swap(0), DLPackets: c.dlPackets.Swap(0),
	}
}

// Crossed reports whether a count that went from after-n to after crossed
// threshold (0 = no threshold). Exactly one of several concurrent adders
// sees the crossing.
func Crossed(threshold, after uint64, n int) bool {
	return threshold != 0 && after >= threshold && after-uint64(n) < threshold
}

// Buffer is a session's downlink packet buffer (TS 29.244 §5.2.4 BAR;
// TS 23.502 §4.2.3.3 paging, and handover "smart buffering"): a bounded
// FIFO in packets and bytes that keeps packets in arrival order.
//
// The buffer is "holding" from the first Push until Release has handed out
// every packet. While it holds, packets that a forwarding FAR would send
// must be queued behind the buffered ones (PushIfHolding), so that the
// drain keeps the order. Packet copies live in one arena that grows up to
// the byte limit, so steady buffering allocates nothing per packet.
type Buffer struct {
	maxPackets, maxBytes int
	holding              atomic.Bool

	mu       sync.Mutex
	arena    []byte
	ends     []int // end offset of each packet in arena
	spare    []byte
	spareEnd []int
	notified bool // a downlink data report was raised for this episode
	dropped  uint64
}

// NewBuffer creates a buffer bounded to maxPackets packets and maxBytes
// bytes (both at least 1).
func NewBuffer(maxPackets, maxBytes int) *Buffer {
	return &Buffer{maxPackets: max(maxPackets, 1), maxBytes: max(maxBytes, 1)}
}

// PushResult says what Push did.
type PushResult uint8

// Push results.
const (
	Buffered   PushResult = iota // stored
	NotHolding                   // PushIfHolding only: the buffer is empty and idle; forward normally
	BufferFull                   // dropped: the packet or byte limit is reached
)

// Push stores a copy of pkt at the tail. first is true for the first
// packet of a buffering episode that asked for notification: the caller
// raises one Downlink Data Report for it.
func (b *Buffer) Push(pkt []byte, notify bool) (r PushResult, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r = b.pushLocked(pkt)
	if r == Buffered && notify && !b.notified {
		b.notified = true
		first = true
	}
	return r, first
}

// PushIfHolding stores pkt only while the buffer holds packets (or is
// being drained), to keep order behind them.
func (b *Buffer) PushIfHolding(pkt []byte) PushResult {
	if !b.holding.Load() {
		return NotHolding
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.holding.Load() {
		return NotHolding
	}
	return b.pushLocked(pkt)
}

func (b *Buffer) pushLocked(pkt []byte) PushResult {
	if len(b.ends) >= b.maxPackets || len(b.arena)+len(pkt) > b.maxBytes {
		b.dropped++
		return BufferFull
	}
	if b.arena == nil {
		// One allocation per buffering session, sized for a few packets;
		// append grows it up to maxBytes.
		b.arena = make([]byte, 0, min(b.maxBytes, 64<<10))
		b.ends = make([]int, 0, min(b.maxPackets, 64))
	}
	b.arena = append(b.arena, pkt...)
	b.ends = append(b.ends, len(b.arena))
	b.holding.Store(true)
	return Buffered
}

// Holding reports whether the buffer holds or is draining packets.
func (b *Buffer) Holding() bool { return b.holding.Load() }

// Release hands every buffered packet to fn in order, including packets
// pushed while it runs, then leaves the buffer idle. pkt is only valid
// during the call. Calls to Release must not overlap.
func (b *Buffer) Release(fn func(pkt []byte)) int {
	n := 0
	for {
		b.mu.Lock()
		if len(b.ends) == 0 {
			b.holding.Store(false)
			b.notified = false
			b.mu.Unlock()
			return n
		}
		arena, ends := b.arena, b.ends
		b.arena, b.ends = b.spare[:0], b.spareEnd[:0]
		b.mu.Unlock()

		start := 0
		for _, end := range ends {
			fn(arena[start:end:end])
			start = end
			n++
		}

		b.mu.Lock()
		b.spare, b.spareEnd = arena[:0], ends[:0]
		b.mu.Unlock()
	}
}

// Drop discards the buffered packets (session removed, or its FAR now
// drops) and returns how many there were.
func (b *Buffer) Drop() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.ends)
	b.arena, b.ends = b.arena[:0], b.ends[:0]
	b.dropped += uint64(n)
	b.notified = false
	b.holding.Store(false)
	return n
}

// Len returns the number of buffered packets and bytes.
func (b *Buffer) Len() (packets, bytes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ends), len(b.arena)
}

// Dropped is the number of packets discarded so far (full or Drop).
func (b *Buffer) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
