package shm

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ring is one direction of a channel: a single-producer single-consumer ring
// of fixed-size slots in the shared mapping. The indices run freely (they
// never wrap in practice: 2^64 records) and a slot is index & (slots-1).
//
// Both ends read the shared indices rather than private copies, which makes
// the consumer's resynchronisation (head = tail when the distance is
// impossible) repair the ring for both of them.
type ring struct {
	tail      *atomic.Uint64 // written by the producer only
	head      *atomic.Uint64 // written by the consumer only
	wake      *atomic.Uint32 // futex: wakeNone, wakeLeader or wakeStandby
	standby   *atomic.Uint32 // futex event count for standby consumers
	data      []byte         // slots * slotBytes
	n         uint64         // slots, a power of two
	slotBytes int
}

func newRing(m words, off int64, g geometry) ring {
	start := off + ringHeaderBytes
	end := start + int64(g.slots)*int64(g.slotBytes)
	return ring{
		tail:      m.u64(off + ringTail),
		head:      m.u64(off + ringHead),
		wake:      m.u32(off + ringWake),
		standby:   m.u32(off + ringStandby),
		data:      m[start:end:end],
		n:         uint64(g.slots),
		slotBytes: g.slotBytes,
	}
}

func (r *ring) slot(i uint64) []byte {
	off := int(i&(r.n-1)) * r.slotBytes
	return r.data[off : off+r.slotBytes : off+r.slotBytes]
}

// reserve returns the next free slot and its index, or ok=false when the
// ring is full (or its indices are corrupt, until the consumer resyncs).
// Producer only.
func (r *ring) reserve() (slot []byte, t uint64, ok bool) {
	t = r.tail.Load()
	if t-r.head.Load() >= r.n {
		return nil, t, false
	}
	return r.slot(t), t, true
}

// publish makes slot t visible and wakes the consumer if it sleeps. The
// atomic store orders the slot's bytes before the index (release); the
// wake syscall is skipped unless the consumer announced it would sleep.
func (r *ring) publish(t uint64) {
	r.tail.Store(t + 1)
	r.nudge()
}

// Values of the wake word: whom a producer must wake after publishing.
const (
	wakeNone    = 0 // the consumer is awake and will look at the ring
	wakeLeader  = 1 // the consumer (a server channel's leader) sleeps on the wake word
	wakeStandby = 2 // the leader is busy in a handler: wake a standby (event count)
)

// nudge wakes a sleeping consumer. Sequential consistency of sync/atomic
// makes this race-free against sleep: either the consumer's store of the
// wake word precedes our load (we see it and wake it) or its re-check of
// tail follows our store of tail (it sees the record and does not sleep).
// The wake syscall is skipped when nobody sleeps, the common case under
// load.
func (r *ring) nudge() {
	if r.wake.Load() == wakeNone {
		return
	}
	switch r.wake.Swap(wakeNone) {
	case wakeLeader:
		futexWake(r.wake, 1)
	case wakeStandby:
		r.standby.Add(1)
		futexWake(r.standby, 1)
	case wakeNone:
	default: // a scribbled word: wake everyone rather than no one
		r.kick()
	}
}

// Results of peek.
const (
	peekEmpty = iota
	peekRecord
	peekResync // the indices were impossible; head jumped to tail
)

// peek returns the oldest unread slot. Consumer only.
func (r *ring) peek() (slot []byte, h uint64, what int) {
	h = r.head.Load()
	t := r.tail.Load()
	switch {
	case t == h:
		return nil, h, peekEmpty
	case t-h > r.n:
		// The producer cannot be more than n ahead: someone wrote the
		// indices. Skip to what the producer published; the producer reads
		// the shared head, so both ends agree again.
		r.head.Store(t)
		return nil, t, peekResync
	}
	return r.slot(h), h, peekRecord
}

// release frees slot h for the producer. Consumer only.
func (r *ring) release(h uint64) { r.head.Store(h + 1) }

func (r *ring) empty() bool { return r.tail.Load() == r.head.Load() }

// poll spins (yielding the P) until the ring has a record, stop is set, or
// d has passed. It reports whether waiting is over (no need to sleep).
func (r *ring) poll(d time.Duration, stop *atomic.Bool) bool {
	if d <= 0 {
		return false
	}
	start := time.Now()
	for i := 0; ; i++ {
		if !r.empty() || stop.Load() {
			return true
		}
		if i&31 == 31 && time.Since(start) >= d {
			return false
		}
		runtime.Gosched()
	}
}

// sleep blocks on the wake futex until a producer publishes, someone kicks
// the ring, or ts passes. For the ring's one leader consumer (a client's
// reading caller, a server channel's leader).
func (r *ring) sleep(stop *atomic.Bool, ts *unix.Timespec) {
	r.wake.Store(wakeLeader)
	if !r.empty() || stop.Load() {
		return
	}
	futexWait(r.wake, wakeLeader, ts)
}

// sleepStandby blocks a standby consumer until a producer finds the leader
// busy, someone kicks the ring, or ts passes. seq is the event count read
// before the caller last found the ring empty.
func (r *ring) sleepStandby(seq uint32, stop *atomic.Bool, ts *unix.Timespec) {
	if !r.empty() || stop.Load() {
		return
	}
	futexWait(r.standby, seq, ts)
}

// kick wakes every sleeper so that it sees a stop flag its owner just set
// (same ordering argument as nudge), or a ring that filled up.
func (r *ring) kick() {
	r.wake.Store(wakeNone)
	futexWake(r.wake, 1<<30)
	r.standby.Add(1)
	futexWake(r.standby, 1<<30)
}

// reset empties the ring. Only while neither end uses it.
func (r *ring) reset() {
	r.tail.Store(0)
	r.head.Store(0)
	r.wake.Store(0)
	r.standby.Store(0)
}
