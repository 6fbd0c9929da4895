package serial

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// onQueue runs f on q as one step and waits for it.
func onQueue(q *Queue, f func()) {
	done := make(chan struct{})
	q.Post(func() { f(); close(done) })
	<-done
}

// A step has one time: the clock read once, whatever the clock does
// during the step; the next step reads it again.
func TestStepTimeReadOnce(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewManualClock(t0)
	g := NewGroupClock(c)
	defer g.Close()
	var q Queue
	q.Init(g)
	var first, second, next time.Time
	onQueue(&q, func() {
		first = q.Now()
		c.Set(t0.Add(time.Hour))
		second = q.Now()
	})
	onQueue(&q, func() { next = q.Now() })
	if !first.Equal(t0) || !second.Equal(t0) {
		t.Errorf("step read %v then %v, want %v twice", first, second, t0)
	}
	if !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("next step read %v, want %v", next, t0.Add(time.Hour))
	}
}

// Timers started in a step expire at the step's time plus their duration,
// an expiry's step time is its deadline (however late the clock gets
// there), and a retransmission's next deadline follows from the last.
func TestTimerDeadlinesFromStepTime(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewManualClock(t0)
	g := NewGroupClock(c)
	defer g.Close()
	var q Queue
	q.Init(g)
	var tm Timer
	var r Retransmission
	var mu sync.Mutex
	var fired []time.Time
	note := func() { mu.Lock(); fired = append(fired, q.Now()); mu.Unlock() }
	onQueue(&q, func() {
		q.Now()
		c.Set(t0.Add(time.Second)) // the step's time stays t0
		tm.Start(&q, 3*time.Second, note)
		r.Start(&q, 2*time.Second, 2, func(int) { note() }, note)
	})
	var dl time.Time
	onQueue(&q, func() { dl = tm.Deadline() })
	if want := t0.Add(3 * time.Second); !dl.Equal(want) {
		t.Fatalf("deadline %v, want %v (the step's time + 3s)", dl, want)
	}
	// Nothing fires before Set reaches the deadlines; then all of them
	// (the retransmission re-arms from its last deadline) in order.
	if c.Pending() != 2 {
		t.Fatalf("%d calls armed, want 2", c.Pending())
	}
	for range 3 {
		c.Set(t0.Add(time.Hour))
		onQueue(&q, func() {})
	}
	want := []time.Time{t0.Add(2 * time.Second), t0.Add(3 * time.Second), t0.Add(4 * time.Second), t0.Add(6 * time.Second)}
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(fired, want, time.Time.Equal) {
		t.Errorf("expiries ran at step times %v, want %v", fired, want)
	}
}

// A timer armed for a deadline already past expires at once, with the
// time of the step that armed it: a retransmission restored late goes on
// from then.
func TestTimerPastDeadline(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewManualClock(t0)
	g := NewGroupClock(c)
	defer g.Close()
	var q Queue
	q.Init(g)
	var r Retransmission
	fired := make(chan time.Time, 1)
	onQueue(&q, func() {
		r.ResumeAt(&q, t0.Add(-time.Minute), 1, time.Second, 3, func(int) { fired <- q.Now() }, func() {})
	})
	c.Set(t0)
	if at := <-fired; !at.Equal(t0) {
		t.Errorf("late expiry ran at step time %v, want the arming step's %v", at, t0)
	}
	var dl time.Time
	onQueue(&q, func() { dl = r.Deadline() })
	if want := t0.Add(time.Second); !dl.Equal(want) {
		t.Errorf("next deadline %v, want %v", dl, want)
	}
}

// Set fires by deadline, then by arming order; Stop takes a call out; Live
// hands what is left to the wall clock.
func TestManualClockOrderStopLive(t *testing.T) {
	t0 := time.Now()
	c := NewManualClock(t0)
	var got []int
	c.At(t0.Add(2*time.Second), func() { got = append(got, 2) })
	c.At(t0.Add(time.Second), func() { got = append(got, 1) })
	c.At(t0.Add(time.Second), func() { got = append(got, 11) })
	s := c.At(t0.Add(time.Second), func() { got = append(got, 99) })
	if !s.Stop() || s.Stop() {
		t.Fatal("Stop: want true, then false")
	}
	c.Set(t0.Add(1500 * time.Millisecond))
	if !slices.Equal(got, []int{1, 11}) {
		t.Fatalf("fired %v, want [1 11]", got)
	}
	c.Set(t0) // never back
	if !c.Now().Equal(t0.Add(1500 * time.Millisecond)) {
		t.Fatalf("clock went back to %v", c.Now())
	}
	done := make(chan struct{})
	c.At(t0.Add(1600*time.Millisecond), func() { close(done) })
	c.Live()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call past its deadline did not fire once live")
	}
	if c.Now().Before(t0) {
		t.Error("live clock does not read the wall clock")
	}
}
