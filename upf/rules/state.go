package rules

import (
	"sync"
	"sync/atomic"
	"time"
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
	_, ok := t.Reserve(nowNanos, n, 0)
	return ok
}

// Reserve is Allow for a shaper: n bytes that exceed the burst by at most
// maxDelay nanoseconds of sending time at the rate are consumed, and delay
// says how long they must wait before they leave (0: at once). ok is false,
// and nothing consumed, when they would wait longer. The packets that wait
// leave in the order they were reserved: each reservation moves the
// theoretical arrival time on.
func (t *TokenBucket) Reserve(nowNanos int64, n int, maxDelay int64) (delay int64, ok bool) {
	inc := int64(uint64(n)*uint64(t.nsPerByte)) >> 16
	for {
		old := t.tat.Load()
		next := max(old, nowNanos) + inc
		wait := next - nowNanos - t.burstNs
		if wait > maxDelay {
			return 0, false
		}
		if t.tat.CompareAndSwap(old, next) {
			return max(wait, 0), true
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

// AddN counts pkts packets of bytes bytes in all in direction d, counted
// elsewhere (an offload's per-CPU counters) and added in at once, and
// returns the byte counts like Add.
func (c *Counters) AddN(d Direction, pkts, bytes uint64) (dirBytes, totalBytes uint64) {
	if d == Uplink {
		c.ulPackets.Add(pkts)
		dirBytes = c.ulBytes.Add(bytes)
	} else {
		c.dlPackets.Add(pkts)
		dirBytes = c.dlBytes.Add(bytes)
	}
	return dirBytes, c.totalBytes.Add(bytes)
}

// Usage is a snapshot of Counters.
type Usage struct {
	Volume               Volume
	ULPackets, DLPackets uint64
}

// CountersFrom returns Counters that start at u, every field as it is
// (Total need not be UL+DL): a URR's count carried over from another
// instance, which UPF-C restores from its records (issue 36).
func CountersFrom(u Usage) *Counters {
	c := &Counters{}
	c.totalBytes.Store(u.Volume.Total)
	c.ulBytes.Store(u.Volume.UL)
	c.dlBytes.Store(u.Volume.DL)
	c.ulPackets.Store(u.ULPackets)
	c.dlPackets.Store(u.DLPackets)
	return c
}

// Load returns the current counts.
func (c *Counters) Load() Usage {
	return Usage{
		Volume:    Volume{Total: c.totalBytes.Load(), UL: c.ulBytes.Load(), DL: c.dlBytes.Load()},
		ULPackets: c.ulPackets.Load(), DLPackets: c.dlPackets.Load(),
	}
}

// Crossed reports whether a count that went from after-n to after crossed
// threshold (0 = no threshold). Exactly one of several concurrent adders
// sees the crossing.
func Crossed(threshold, after uint64, n int) bool {
	return threshold != 0 && after >= threshold && after-uint64(n) < threshold
}

// BufferPool is the UPF-wide side of downlink buffering: it counts the
// packets and bytes every Buffer created from it holds now, caps those
// bytes, counts the packets discarded other than at a push (expired, or
// dropped with the buffer), and recycles the buffers' packet storage, so
// that buffering allocates nothing in steady state and an idle session
// keeps no storage. Safe for concurrent use.
type BufferPool struct {
	maxBytes           int64 // 0: no cap
	bytes, packets     atomic.Int64
	expired, discarded atomic.Uint64

	mu   sync.Mutex
	free []*chunk
}

// Storage recycling: a chunk starts at chunkInitial bytes (two full-size
// packets: paging buffers few) and grows by append up to the buffer's byte
// limit; the pool keeps at most maxFree chunks of at most keepChunk bytes
// each (16 MiB in all) for reuse. The byte limits count packet bytes, not
// this storage, which can reach twice a buffer's packet bytes.
const (
	chunkInitial = 4 << 10
	keepChunk    = 64 << 10
	maxFree      = 256
)

// chunk is one run of buffered packets: their bytes back to back, the end
// offset and the arrival time of each.
type chunk struct {
	data  []byte
	ends  []int
	times []int64
}

// start is the offset of packet i.
func (c *chunk) start(i int) int {
	if i == 0 {
		return 0
	}
	return c.ends[i-1]
}

// NewBufferPool creates a pool whose buffers together hold at most
// maxBytes bytes (0: no cap).
func NewBufferPool(maxBytes int) *BufferPool {
	p := &BufferPool{maxBytes: int64(max(maxBytes, 0))}
	p.free = make([]*chunk, 0, maxFree)
	return p
}

// BufferPoolStats are a pool's counters.
type BufferPoolStats struct {
	Packets, Bytes int // held by the pool's buffers now
	// Expired counts packets discarded for being older than the hold time;
	// Discarded those dropped with their buffer (Drop, Close).
	Expired, Discarded uint64
}

// Stats returns the pool's counters.
func (p *BufferPool) Stats() BufferPoolStats {
	return BufferPoolStats{Packets: int(p.packets.Load()), Bytes: int(p.bytes.Load()),
		Expired: p.expired.Load(), Discarded: p.discarded.Load()}
}

// reserve accounts one packet of n bytes, or refuses it when the bytes
// would pass the cap. Add-then-check: concurrent reservations near the cap
// may refuse a packet that a serial order would have fitted, never admit
// one beyond it.
func (p *BufferPool) reserve(n int) bool {
	if b := p.bytes.Add(int64(n)); p.maxBytes > 0 && b > p.maxBytes {
		p.bytes.Add(-int64(n))
		return false
	}
	p.packets.Add(1)
	return true
}

func (p *BufferPool) release(packets, bytes int) {
	if packets != 0 {
		p.packets.Add(-int64(packets))
		p.bytes.Add(-int64(bytes))
	}
}

func (p *BufferPool) get() *chunk {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return c
	}
	p.mu.Unlock()
	return &chunk{data: make([]byte, 0, chunkInitial), ends: make([]int, 0, 8), times: make([]int64, 0, 8)}
}

func (p *BufferPool) put(c *chunk) {
	if c == nil || cap(c.data) > keepChunk {
		return // a burst's storage goes back to the garbage collector
	}
	c.data, c.ends, c.times = c.data[:0], c.ends[:0], c.times[:0]
	p.mu.Lock()
	if len(p.free) < maxFree {
		p.free = append(p.free, c)
	}
	p.mu.Unlock()
}

// Buffer is a session's downlink packet buffer (TS 29.244 §5.2.4 BAR;
// TS 23.502 §4.2.3.3 paging, and handover "smart buffering"): a FIFO bounded
// in packets, in bytes, by its pool's UPF-wide byte cap, and in time (the
// hold time), that keeps packets in arrival order.
//
// A buffering episode starts with the first packet pushed and ends when
// Release has handed out every packet, or Drop has discarded them, or every
// packet has expired. While the episode lasts the buffer is "holding":
// packets that a forwarding FAR would send must queue behind the buffered
// ones (PushIfHolding), so that the drain keeps the order; and at most one
// push per episode is told to notify the CP function (Push's first).
//
// Packet copies live in pooled storage (BufferPool), so buffering
// allocates nothing per packet in steady state. Expiry is checked when
// packets are pushed or released and by Expire, which the data path calls
// at a coarse period: there are no per-packet timers.
type Buffer struct {
	pool     *BufferPool
	maxBytes int
	hold     int64 // ns; 0: packets never expire
	holding  atomic.Bool

	mu         sync.Mutex
	maxPackets int
	cur        *chunk // nil: nothing stored
	head       int    // first live packet in cur
	draining   bool   // Release is handing out packets it took from cur
	held       bool   // Hold: holding without packets until Release
	notified   bool   // a push of this episode was told to notify
	closed     bool
}

// NewBuffer creates a buffer bounded to maxPackets packets and maxBytes
// bytes (both at least 1), in a pool of its own without a cap, whose
// packets never expire.
func NewBuffer(maxPackets, maxBytes int) *Buffer {
	return NewBufferPool(0).NewBuffer(maxPackets, maxBytes, 0)
}

// NewBuffer creates a buffer bounded to maxPackets packets and maxBytes
// bytes (both at least 1) whose packets expire hold after they were pushed
// (0: never).
func (p *BufferPool) NewBuffer(maxPackets, maxBytes int, hold time.Duration) *Buffer {
	return &Buffer{pool: p, maxPackets: max(maxPackets, 1), maxBytes: max(maxBytes, 1), hold: int64(max(hold, 0))}
}

// SetMaxPackets changes the packet limit (at least 1), e.g. to a BAR's
// Suggested Buffering Packets Count. Packets already held stay.
func (b *Buffer) SetMaxPackets(n int) {
	b.mu.Lock()
	b.maxPackets = max(n, 1)
	b.mu.Unlock()
}

// PushResult says what Push did.
type PushResult uint8

// Push results.
const (
	Buffered        PushResult = iota // stored
	NotHolding                        // PushIfHolding only: the buffer is empty and idle; forward normally
	BufferFull                        // dropped: the buffer's packet or byte limit is reached
	BufferGlobalCap                   // dropped: the pool's byte cap is reached
	BufferClosed                      // dropped: the buffer is closed (its session is gone)
)

// Push stores a copy of pkt at the tail; now is the arrival time on the
// clock of Expire and Release (nanoseconds). first is true for the first
// packet stored in a buffering episode that asked for notification: the
// caller raises the episode's one Downlink Data Report for it (TS 29.244
// §5.2.4.1 NOCP).
func (b *Buffer) Push(pkt []byte, notify bool, now int64) (r PushResult, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return BufferClosed, false
	}
	b.expireLocked(now)
	r = b.pushLocked(pkt, now)
	if r == Buffered && notify && !b.notified {
		b.notified = true
		first = true
	}
	return r, first
}

// NotifyHeld is Push's notification for packets already held: when the
// buffer holds packets and its episode has not notified yet, it marks the
// episode notified and returns true, and the caller raises the episode's
// Downlink Data Report. For a FAR that turns to BUFF|NOCP over packets a
// plain BUFF kept (say, after an Error Indication stopped the tunnel): no
// new packet may come to notify for them (TS 29.244 §5.2.4.1).
func (b *Buffer) NotifyHeld() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, _ := b.live(); n == 0 || b.notified || b.closed {
		return false
	}
	b.notified = true
	return true
}

// PushIfHolding stores pkt only while the buffering episode lasts (packets
// held, being drained, or Hold), to keep order behind them.
func (b *Buffer) PushIfHolding(pkt []byte, now int64) PushResult {
	if !b.holding.Load() {
		return NotHolding
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return BufferClosed
	}
	b.expireLocked(now) // may end the episode
	if !b.holding.Load() {
		return NotHolding
	}
	return b.pushLocked(pkt, now)
}

func (b *Buffer) live() (packets, bytes int) {
	if b.cur == nil {
		return 0, 0
	}
	return len(b.cur.ends) - b.head, len(b.cur.data) - b.cur.start(b.head)
}

func (b *Buffer) pushLocked(pkt []byte, now int64) PushResult {
	packets, bytes := b.live()
	if packets >= b.maxPackets || bytes+len(pkt) > b.maxBytes {
		return BufferFull
	}
	if !b.pool.reserve(len(pkt)) {
		return BufferGlobalCap
	}
	c := b.cur
	if c == nil {
		c = b.pool.get()
		b.cur, b.head = c, 0
	} else if b.head > 0 && len(c.data)+len(pkt) > cap(c.data) {
		b.compactLocked()
	}
	c.data = append(c.data, pkt...)
	c.ends = append(c.ends, len(c.data))
	c.times = append(c.times, now)
	b.holding.Store(true)
	return Buffered
}

// compactLocked moves the live packets to the front of their storage.
func (b *Buffer) compactLocked() {
	c := b.cur
	off := c.start(b.head)
	n := copy(c.data, c.data[off:])
	c.data = c.data[:n]
	k := copy(c.ends, c.ends[b.head:])
	for i := range k {
		c.ends[i] -= off
	}
	c.ends = c.ends[:k]
	c.times = c.times[:copy(c.times, c.times[b.head:])]
	b.head = 0
}

// expireLocked discards the packets at the head older than the hold time.
// Emptied outside a drain or Hold, the buffer ends its episode.
func (b *Buffer) expireLocked(now int64) int {
	c := b.cur
	if b.hold == 0 || c == nil {
		return 0
	}
	h := b.head
	for h < len(c.ends) && now-c.times[h] > b.hold {
		h++
	}
	n := h - b.head
	if n == 0 {
		return 0
	}
	b.pool.release(n, c.ends[h-1]-c.start(b.head))
	b.pool.expired.Add(uint64(n))
	b.head = h
	if h == len(c.ends) {
		c.data, c.ends, c.times, b.head = c.data[:0], c.ends[:0], c.times[:0], 0
		if !b.draining && !b.held {
			b.endEpisodeLocked()
		}
	}
	return n
}

// endEpisodeLocked leaves the buffer empty and idle; its storage goes back
// to the pool.
func (b *Buffer) endEpisodeLocked() {
	b.pool.put(b.cur)
	b.cur, b.head = nil, 0
	b.draining, b.held, b.notified = false, false, false
	b.holding.Store(false)
}

// Expire discards the packets older than the hold time at time now and
// returns how many there were.
func (b *Buffer) Expire(now int64) int {
	if !b.holding.Load() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.expireLocked(now)
}

// Hold starts (or prolongs) an episode without a packet: until the next
// Release ends, packets pushed with PushIfHolding queue. The data path
// holds a session's forwarded downlink while it sends End Markers on the
// old tunnel, so that none reaches the new one before them.
func (b *Buffer) Hold() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.held = true
		b.holding.Store(true)
	}
}

// Holding reports whether a buffering episode lasts.
func (b *Buffer) Holding() bool { return b.holding.Load() }

// Release hands every buffered packet that has not expired at time now to
// fn in order, including packets pushed while it runs, then ends the
// episode. pkt is only valid during the call. Calls to Release, Drop and
// Close must not overlap.
func (b *Buffer) Release(now int64, fn func(pkt []byte)) int {
	n := 0
	for {
		b.mu.Lock()
		b.expireLocked(now)
		packets, bytes := b.live()
		if packets == 0 {
			b.endEpisodeLocked()
			b.mu.Unlock()
			return n
		}
		c, head := b.cur, b.head
		b.cur, b.head = nil, 0 // pushes during the drain start new storage
		b.draining = true
		b.pool.release(packets, bytes) // the packets are the caller's now
		b.mu.Unlock()

		start := c.start(head)
		for _, end := range c.ends[head:] {
			fn(c.data[start:end:end])
			start = end
			n++
		}
		b.pool.put(c)
	}
}

// Drop discards the buffered packets (the FAR now drops, or the session
// goes), ends the episode and returns how many there were.
func (b *Buffer) Drop() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropLocked()
}

func (b *Buffer) dropLocked() int {
	packets, bytes := b.live()
	b.pool.release(packets, bytes)
	b.pool.discarded.Add(uint64(packets))
	b.endEpisodeLocked()
	return packets
}

// Close drops the buffered packets and refuses every later push
// (BufferClosed): the session is removed, and a worker still holding its
// old snapshot must not refill a buffer no one drains.
func (b *Buffer) Close() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.dropLocked()
	b.closed = true
	return n
}

// Len returns the number of buffered packets and bytes.
func (b *Buffer) Len() (packets, bytes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live()
}
