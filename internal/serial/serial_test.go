package serial

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueRunsInOrderOneAtATime(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var running atomic.Int32
	var got []int
	var wg sync.WaitGroup
	const n = 1000
	wg.Add(n)
	for i := range n {
		q.Post(func() {
			if running.Add(1) != 1 {
				t.Error("two functions of one queue ran at once")
			}
			got = append(got, i) // no lock: the queue serialises
			running.Add(-1)
			wg.Done()
		})
	}
	wg.Wait()
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d ran as %d: order lost", i, v)
		}
	}
}

func TestQueuesRunInParallel(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var a, b Queue
	a.Init(g)
	b.Init(g)
	release := make(chan struct{})
	a.Post(func() { <-release }) // a is stuck...
	done := make(chan struct{})
	b.Post(func() { close(done) }) // ...b is not
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked queue stalled another queue")
	}
	close(release)
}

func TestGroupCloseWaitsAndRefuses(t *testing.T) {
	g := NewGroup()
	var q Queue
	q.Init(g)
	var ran atomic.Bool
	q.Post(func() {
		<-g.Context().Done() // work that ends with the NF
		ran.Store(true)
	})
	g.Close()
	if !ran.Load() {
		t.Fatal("Close returned before the queue's work ended")
	}
	if q.Post(func() { t.Error("posted after Close and ran") }) {
		t.Fatal("Post after Close reported success")
	}
	if g.Go(func() { t.Error("Go after Close ran") }) {
		t.Fatal("Go after Close reported success")
	}
	if !q.Idle() {
		t.Fatal("queue not idle after Close")
	}
}

func TestQueueGoroutineOnlyWhileBusy(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	done := make(chan struct{})
	q.Post(func() { close(done) })
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for !q.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("queue still running with nothing to do")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTimerStopDiscardsExpiry(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var tm Timer
	fired := make(chan int, 4)
	sync := func(f func()) {
		done := make(chan struct{})
		q.Post(func() { f(); close(done) })
		<-done
	}
	// Arm, let the expiry get posted behind the running item, and stop
	// before that item ends: the expiry must be discarded.
	sync(func() {
		tm.Start(&q, time.Millisecond, func() { fired <- 1 })
		time.Sleep(20 * time.Millisecond) // the expiry is queued behind this item
		tm.Stop()
	})
	sync(func() {}) // the expiry has run (and was discarded)
	select {
	case <-fired:
		t.Fatal("expiry ran after Stop")
	default:
	}
	// A restart discards the first arming's expiry too.
	sync(func() {
		tm.Start(&q, time.Millisecond, func() { fired <- 1 })
		tm.Start(&q, 30*time.Millisecond, func() { fired <- 2 })
	})
	select {
	case v := <-fired:
		if v != 2 {
			t.Fatalf("got expiry %d, want only the restarted one", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("restarted timer never fired")
	}
	select {
	case v := <-fired:
		t.Fatalf("extra expiry %d", v)
	case <-time.After(50 * time.Millisecond):
	}
	sync(func() {
		if tm.Running() {
			t.Error("timer running after its expiry")
		}
	})
}

func TestRetransmissionResendsThenAborts(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var r Retransmission
	var resends []int
	aborted := make(chan struct{})
	q.Post(func() {
		r.Start(&q, time.Millisecond, 4, func(n int) { resends = append(resends, n) }, func() { close(aborted) })
	})
	select {
	case <-aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("never aborted")
	}
	done := make(chan struct{})
	q.Post(func() {
		defer close(done)
		if len(resends) != 4 || resends[0] != 1 || resends[3] != 4 {
			t.Errorf("resends %v, want 1..4 (five sends in all, TS 24.501 §5.4.1.3.7)", resends)
		}
		if r.Sends() != 0 || r.Running() {
			t.Errorf("after abort: sends %d running %v", r.Sends(), r.Running())
		}
	})
	<-done
}

func TestRetransmissionStop(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var r Retransmission
	var resends atomic.Int32
	var aborted atomic.Bool
	done := make(chan struct{})
	q.Post(func() {
		r.Start(&q, 5*time.Millisecond, 4, func(int) { resends.Add(1) }, func() { aborted.Store(true) })
	})
	time.Sleep(12 * time.Millisecond)
	q.Post(func() { r.Stop(); close(done) })
	<-done
	n := resends.Load()
	time.Sleep(50 * time.Millisecond)
	if resends.Load() != n || aborted.Load() {
		t.Fatalf("stopped rule went on: resends %d -> %d, aborted %v", n, resends.Load(), aborted.Load())
	}
}

// TestTimerDeadline: an armed timer tells its deadline (what a record of
// its context carries), a stopped or expired one the zero Time; StartAt
// with a deadline already past fires at once, on the queue.
func TestTimerDeadline(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var tm Timer
	on := func(f func()) {
		done := make(chan struct{})
		q.Post(func() { f(); close(done) })
		<-done
	}
	on(func() {
		before := time.Now()
		tm.Start(&q, time.Hour, func() {})
		if d := tm.Deadline(); d.Before(before.Add(time.Hour)) || d.After(time.Now().Add(time.Hour)) {
			t.Errorf("deadline %v, want an hour from the start", d)
		}
		at := time.Now().Add(30 * time.Minute)
		tm.StartAt(&q, at, func() {})
		if !tm.Deadline().Equal(at) {
			t.Errorf("deadline %v after StartAt(%v)", tm.Deadline(), at)
		}
		tm.Stop()
		if !tm.Deadline().IsZero() || tm.Running() {
			t.Errorf("stopped timer: deadline %v, running %v", tm.Deadline(), tm.Running())
		}
	})
	fired := make(chan bool, 1)
	on(func() { tm.StartAt(&q, time.Now().Add(-time.Minute), func() { fired <- tm.Deadline().IsZero() }) })
	select {
	case zero := <-fired:
		if !zero {
			t.Error("deadline still set in the expiry")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a timer armed for a past deadline did not fire")
	}
}

// TestRetransmissionResumeAt: a rule resumed with the sends of another
// process's record goes on counting from there: with 2 sends made and 4
// resends allowed, 3 more resends (numbered 2, 3, 4), then the abort.
func TestRetransmissionResumeAt(t *testing.T) {
	g := NewGroup()
	defer g.Close()
	var q Queue
	q.Init(g)
	var r Retransmission
	var resends []int
	aborted := make(chan struct{})
	q.Post(func() {
		r.ResumeAt(&q, time.Now(), 2, time.Millisecond, 4, func(n int) { resends = append(resends, n) }, func() { close(aborted) })
		if r.Sends() != 2 {
			t.Errorf("sends %d after resuming at 2", r.Sends())
		}
	})
	select {
	case <-aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("never aborted")
	}
	done := make(chan struct{})
	q.Post(func() {
		defer close(done)
		if fmt.Sprint(resends) != "[2 3 4]" {
			t.Errorf("resends %v, want [2 3 4]", resends)
		}
	})
	<-done
}

// TestWorkersReusedAndEndedByClose: a burst over many queues leaves idle
// workers, which take the next burst (no goroutine per message) and end
// with the group.
func TestWorkersReusedAndEndedByClose(t *testing.T) {
	before := runtime.NumGoroutine()
	g := NewGroup()
	qs := make([]Queue, 50)
	burst := func() {
		var wg sync.WaitGroup
		wg.Add(len(qs))
		for i := range qs {
			qs[i].Post(func() { time.Sleep(time.Millisecond); wg.Done() })
		}
		wg.Wait()
	}
	for i := range qs {
		qs[i].Init(g)
	}
	burst()
	time.Sleep(20 * time.Millisecond) // the workers go idle
	workers := runtime.NumGoroutine() - before
	burst()
	time.Sleep(20 * time.Millisecond)
	if after := runtime.NumGoroutine() - before; after > workers {
		t.Errorf("%d goroutines after the second burst, %d after the first: idle workers not reused", after, workers)
	}
	g.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after Close", runtime.NumGoroutine()-before)
		}
		time.Sleep(time.Millisecond)
	}
}
