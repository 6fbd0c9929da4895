package serial

import (
	"slices"
	"sync"
	"time"
)

// Clock is where a Group's steps take their time (Queue.Now) and its
// timers their expiries. A Group without one runs on the wall clock, at
// the cost of the time package's calls and nothing more.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// At has f called (on any goroutine) once the clock reaches deadline,
	// unless the returned Stopper stops it first.
	At(deadline time.Time, f func()) Stopper
}

// Stopper stops a pending call of Clock.At; false when it had run or was
// stopped already. *time.Timer is one.
type Stopper interface {
	Stop() bool
}

// ManualClock is a Clock that moves only when told (Set): the clock of a
// replay, which sets it to the time each logged input came with before
// delivering the input, so that the steps take the times they took the
// first time and the timers expire between the same inputs. Once the log
// is replayed, Live hands it to the wall clock. Safe for concurrent use.
type ManualClock struct {
	mu   sync.Mutex
	now  time.Time
	live bool
	seq  uint64
	// pending are the armed calls, in the order they fire: by deadline,
	// then by arming.
	pending []*manualCall
}

type manualCall struct {
	c        *ManualClock
	deadline time.Time
	seq      uint64
	f        func()
	done     bool
	wall     *time.Timer // once the clock is live
}

// NewManualClock returns a clock stopped at now.
func NewManualClock(now time.Time) *ManualClock { return &ManualClock{now: now} }

// Now is the time the clock was last set to, or the wall clock's once live.
func (m *ManualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live {
		return time.Now()
	}
	return m.now
}

// At arms f for deadline. For a deadline the clock has reached already, f
// is called at once, on the caller's goroutine, as time.AfterFunc would
// (on another) for a negative duration: a Timer's f posts the expiry to
// its queue, so it runs right after the step that armed it, before any
// input delivered later, whatever the replayer does with the clock.
func (m *ManualClock) At(deadline time.Time, f func()) Stopper {
	m.mu.Lock()
	m.seq++
	c := &manualCall{c: m, deadline: deadline, seq: m.seq, f: f}
	switch {
	case m.live:
		c.wall = time.AfterFunc(time.Until(deadline), f)
	case !deadline.After(m.now):
		c.done = true
		m.mu.Unlock()
		f()
		return c
	default:
		i, _ := slices.BinarySearchFunc(m.pending, c, compareCalls)
		m.pending = slices.Insert(m.pending, i, c)
	}
	m.mu.Unlock()
	return c
}

func compareCalls(x, y *manualCall) int {
	if c := x.deadline.Compare(y.deadline); c != 0 {
		return c
	}
	switch {
	case x.seq < y.seq:
		return -1
	case x.seq > y.seq:
		return 1
	}
	return 0
}

// Stop implements Stopper.
func (c *manualCall) Stop() bool {
	m := c.c
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.done {
		return false
	}
	c.done = true
	if c.wall != nil {
		return c.wall.Stop()
	}
	if i, ok := slices.BinarySearchFunc(m.pending, c, compareCalls); ok {
		m.pending = slices.Delete(m.pending, i, i+1)
	}
	return true
}

// Set moves the clock to t (never back: an earlier t only fires what is
// due) and calls, in deadline order, every f whose deadline is not after
// t, on the caller's goroutine. A timer's f posts the expiry to its queue,
// so the expiries of one queue run in deadline order, before anything
// posted after Set returns.
func (m *ManualClock) Set(t time.Time) {
	m.mu.Lock()
	if t.After(m.now) {
		m.now = t
	}
	var due []*manualCall
	for len(m.pending) > 0 && !m.pending[0].deadline.After(m.now) {
		c := m.pending[0]
		c.done = true
		due = append(due, c)
		m.pending = m.pending[1:]
	}
	m.mu.Unlock()
	for _, c := range due {
		c.f()
	}
}

// Live hands the clock to the wall clock: Now reads it from then on, and
// the calls still armed (and those armed later) fire at their deadlines by
// it (at once for one past). Calls due by the last Set fire first.
func (m *ManualClock) Live() {
	m.Set(m.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = true
	for _, c := range m.pending {
		c.wall = time.AfterFunc(time.Until(c.deadline), c.f)
	}
	m.pending = nil
}

// Pending is the number of armed calls that have not fired (while not
// live).
func (m *ManualClock) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}
