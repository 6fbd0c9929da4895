// Package serial is how tern's NFs run per-UE work: one lifecycle (Group)
// per NF, one serial executor (Queue) per UE, and timers whose expiries run
// on that executor (Timer, Retransmission). The AMF and the SMF both use it,
// so that there is one implementation of each.
//
// # The model
//
// Everything that concerns one UE (a received message, a timer expiry, the
// answer of another NF) is a function posted to the UE's Queue. A Queue runs
// its functions one at a time, in the order they were posted, on a worker
// goroutine of its Group while the queue is not empty: an idle UE costs no
// goroutine, different UEs run in parallel, and one UE's procedures need no
// locks because only its queue touches its state. Workers are shared by all
// the queues of a group and wait a moment for the next queue before they
// end, so a burst of UEs runs on warm goroutines.
//
// Readers of sockets (an SCTP association, a PFCP endpoint) only decode and
// post; they never run UE work themselves, so a UE whose work blocks (an SBI
// or N4 call waiting for its deadline) delays that UE only, never the other
// UEs of the same gNB.
//
// A Group owns the goroutines of one NF: queues and background loops start
// through it, Close cancels its context (every outbound call made with it
// fails at once) and waits for all of them. Work posted after Close is
// dropped, which is what an NF that is going away wants.
//
// Timers deliver their expiry to a Queue, and a generation number discards
// an expiry that raced with Stop or a restart: when the expiry function
// runs, it runs on the same goroutine as everything else of that UE, so the
// check needs no lock.
//
// # Time (clock.go)
//
// Each function a Queue runs is one step, and a step has one time, Now:
// the first read of the group's Clock in the step, or, for a timer's
// expiry, the timer's deadline. Timers started in a step expire at its
// time plus their duration. So a step's times (the deadlines it arms, the
// times it records) are a function of its input and of the time the input
// came with, which is what lets a replica replay a log of inputs into the
// same state (issue 36 §1): a replayer drives a ManualClock, setting it to
// each input's time before delivering it.
package serial

import (
	"context"
	"sync"
	"time"
)

// Group is an NF's lifecycle: the goroutines it started, a context that
// Close cancels, and the refusal of new work after Close. The zero value is
// not usable; use NewGroup.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	// clock is where steps take their time and timers their expiries; nil
	// is the wall clock (the time package, called directly).
	clock Clock

	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup

	// idle hands a queue to a worker goroutine waiting for one. Queues are
	// drained by workers that outlive a drain for a while (workerIdle):
	// a burst of UEs reuses warm goroutines, whose stacks have already
	// grown to what a procedure needs, instead of starting a goroutine
	// and growing its stack per message.
	idle chan *Queue
}

// workerIdle is how long a worker waits for another queue before it ends.
const workerIdle = 2 * time.Second

// NewGroup returns an open group on the wall clock.
func NewGroup() *Group { return NewGroupClock(nil) }

// NewGroupClock returns an open group whose steps and timers run on c (nil:
// the wall clock).
func NewGroupClock(c Clock) *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{ctx: ctx, cancel: cancel, idle: make(chan *Queue), clock: c}
}

// Clock is the group's clock; nil for the wall clock.
func (g *Group) Clock() Clock { return g.clock }

// now reads the group's clock.
func (g *Group) now() time.Time {
	if g.clock == nil {
		return time.Now()
	}
	return g.clock.Now()
}

// at has f called at deadline by the group's clock.
func (g *Group) at(deadline time.Time, f func()) Stopper {
	if g.clock == nil {
		return time.AfterFunc(time.Until(deadline), f)
	}
	return g.clock.At(deadline, f)
}

// run has q drained: by a waiting worker if there is one, else by a new
// one. False after Close.
func (g *Group) run(q *Queue) bool {
	select {
	case g.idle <- q:
		return true
	default:
	}
	if !g.acquire() {
		return false
	}
	go g.worker(q)
	return true
}

// worker drains q, then the queues handed to it, until it has waited
// workerIdle for one or the group closes.
func (g *Group) worker(q *Queue) {
	defer g.wg.Done()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		q.drain()
		t.Reset(workerIdle)
		select {
		case q = <-g.idle:
		case <-t.C:
			return
		case <-g.ctx.Done():
			// Work handed over while the group closes was accepted before
			// Close: a worker still running takes it (Close waits for it).
			select {
			case q = <-g.idle:
			default:
				return
			}
		}
	}
}

// Context is cancelled by Close: outbound calls made with it (or a context
// derived from it) end when the NF closes.
func (g *Group) Context() context.Context { return g.ctx }

// Closed reports whether Close has been called.
func (g *Group) Closed() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.closed
}

// Go runs f on a new goroutine that Close waits for; false (and f does not
// run) after Close.
func (g *Group) Go(f func()) bool {
	if !g.acquire() {
		return false
	}
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

func (g *Group) acquire() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Close refuses new work, cancels the context and waits for every goroutine
// started through the group. Safe to call more than once.
func (g *Group) Close() { g.CloseFunc(nil) }

// CloseFunc is Close that runs f (if not nil) once the group refuses new
// work and its context is cancelled, before waiting for its goroutines: the
// place to close the sockets whose readers are among them.
func (g *Group) CloseFunc(f func()) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	if f != nil {
		f()
	}
	g.wg.Wait()
}

// Queue is a serial executor: functions posted to it run one at a time, in
// order, on one of its group's worker goroutines while the queue has work. The zero value
// is not usable; call Init (a Queue is meant to be embedded in a per-UE
// struct, so that a UE costs one allocation).
type Queue struct {
	g       *Group
	mu      sync.Mutex
	items   []func()
	head    int
	running bool
	// now is the time of the step running (Now); zero until the step reads
	// it. Only the running step and drain, on one goroutine, touch it.
	now time.Time
}

// Init binds q to its group.
func (q *Queue) Init(g *Group) { q.g = g }

// Post queues f behind everything posted before it and returns true, or
// drops f and returns false when the group is closed.
func (q *Queue) Post(f func()) bool {
	q.mu.Lock()
	q.items = append(q.items, f)
	if q.running {
		q.mu.Unlock()
		return true
	}
	if q.g.Closed() {
		q.items = q.items[:0]
		q.head = 0
		q.mu.Unlock()
		return false
	}
	q.running = true
	q.mu.Unlock()
	if !q.g.run(q) {
		q.mu.Lock()
		q.items = q.items[:0]
		q.head = 0
		q.running = false
		q.mu.Unlock()
		return false
	}
	return true
}

// Idle reports whether nothing is queued or running.
func (q *Queue) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.running
}

func (q *Queue) drain() {
	for {
		q.mu.Lock()
		if q.head == len(q.items) {
			clear(q.items)
			q.items = q.items[:0]
			q.head = 0
			q.running = false
			q.mu.Unlock()
			return
		}
		f := q.items[q.head]
		q.items[q.head] = nil
		q.head++
		q.mu.Unlock()
		f()
		q.now = time.Time{}
	}
}

// Now is the time of the step running on q: its group's clock read once,
// at the step's first call, and the same for the rest of the step; a
// timer's expiry has its deadline. Call it from q.
func (q *Queue) Now() time.Time {
	if q.now.IsZero() {
		q.now = q.g.now()
	}
	return q.now
}

// Timer is a one-shot timer whose expiry runs on a Queue. Start, Stop and
// the expiry all run on that queue (the expiry is posted to it), so a Timer
// needs no lock: an expiry that was already on its way when Stop or a new
// Start ran carries an old generation and is ignored. The zero value is a
// stopped timer.
type Timer struct {
	t   Stopper
	gen uint64
	// deadline is when the armed timer expires, by the wall clock, so that
	// a context's record can carry it to another process (StartAt re-arms
	// it there); zero while stopped.
	deadline time.Time
}

// Start (re)arms the timer: d after the time of the running step (q.Now),
// fire runs on q unless Stop or Start is called first. Call it from q.
func (t *Timer) Start(q *Queue, d time.Duration, fire func()) {
	t.StartAt(q, q.Now().Add(d), fire)
}

// StartAt (re)arms the timer to expire at deadline, at once (on q, as any
// expiry) when deadline has passed: the way a timer taken from another
// process's record is re-armed. The expiry is a step whose time (q.Now) is
// deadline, whenever it runs, or the time of the step that armed the timer
// when deadline was past then (a timer restored late expires at the
// restore's time, not at a moment long gone: a retransmission goes on from
// there instead of firing again at once). Either is fixed when the timer
// is armed, so a replay gets the same. Call it from q.
func (t *Timer) StartAt(q *Queue, deadline time.Time, fire func()) {
	t.Stop()
	gen := t.gen
	t.deadline = deadline
	at := deadline
	if now := q.Now(); at.Before(now) {
		at = now
	}
	t.t = q.g.at(deadline, func() {
		q.Post(func() {
			if t.gen != gen || t.t == nil {
				return
			}
			t.t = nil
			t.deadline = time.Time{}
			q.now = at
			fire()
		})
	})
}

// Stop disarms the timer; a pending expiry is discarded. Call it from the
// timer's queue.
func (t *Timer) Stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
	t.deadline = time.Time{}
	t.gen++
}

// Running reports whether the timer is armed (started and neither expired
// nor stopped).
func (t *Timer) Running() bool { return t.t != nil }

// Deadline is when the armed timer expires; the zero Time when it is not
// armed. Call it from the timer's queue.
func (t *Timer) Deadline() time.Time { return t.deadline }

// Retransmission is the network-side timer rule shared by the 5GMM and 5GSM
// procedures (TS 24.501 §5.4.1.3.7, §5.4.2.7, §5.4.3.7, §5.5.1.2.8,
// §5.5.2.3.5, §5.6.2.2.3, §6.3.2.5, §6.3.3.5): a message is sent, a timer
// runs, each expiry resends it until it has been resent a given number of
// times, and the next expiry aborts the procedure.
type Retransmission struct {
	Timer
	sends int
}

// Start arms the rule after the first send: every d from the running
// step's time (q.Now), resend runs (with the number of sends so far, 1 for
// the first resend) until maxResends resends have been made; the expiry
// after the last one calls abort. Call it from q.
func (r *Retransmission) Start(q *Queue, d time.Duration, maxResends int, resend func(n int), abort func()) {
	r.ResumeAt(q, q.Now().Add(d), 1, d, maxResends, resend, abort)
}

// ResumeAt re-arms the rule as another process's record left it: sends
// messages sent so far (at least 1), the next expiry at deadline (at once
// when it has passed), then every d as Start does. Call it from q.
func (r *Retransmission) ResumeAt(q *Queue, deadline time.Time, sends int, d time.Duration, maxResends int, resend func(n int), abort func()) {
	r.sends = max(sends, 1)
	var fire func()
	fire = func() {
		if r.sends > maxResends {
			r.sends = 0
			abort()
			return
		}
		n := r.sends
		r.sends++
		r.Timer.Start(q, d, fire)
		resend(n)
	}
	r.Timer.StartAt(q, deadline, fire)
}

// Stop ends the rule without aborting.
func (r *Retransmission) Stop() {
	r.Timer.Stop()
	r.sends = 0
}

// Sends is how many times the message has been sent (0 when stopped).
func (r *Retransmission) Sends() int { return r.sends }
