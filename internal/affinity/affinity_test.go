package affinity

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// onEveryThread reports whether ok holds for the mask of every thread.
func onEveryThread(t *testing.T, ok func(unix.CPUSet) bool) bool {
	t.Helper()
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		var m unix.CPUSet
		if unix.SchedGetaffinity(tid, &m) == nil && !ok(m) {
			t.Logf("thread %d: %d CPUs, CPU 1 %v", tid, m.Count(), m.IsSet(1))
			return false
		}
	}
	return true
}

// lockedThreads starts n goroutines, each on a thread of its own (Go
// starts new ones while they hold theirs), and runs f on each; they hold
// their threads until the returned function is called, and exit without
// unlocking them, so that Go ends the threads rather than reuse a mask a
// test changed.
func lockedThreads(n int, f func()) (release func()) {
	var ready, done sync.WaitGroup
	stop := make(chan struct{})
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			f()
			ready.Done()
			<-stop
		}()
	}
	ready.Wait()
	return func() { close(stop); done.Wait() }
}

func TestExcludeAndRestore(t *testing.T) {
	var self unix.CPUSet
	if err := unix.SchedGetaffinity(0, &self); err != nil || !self.IsSet(0) || !self.IsSet(1) {
		t.Skipf("needs CPUs 0 and 1 in this process's affinity (%d CPUs, %v)", self.Count(), err)
	}
	// A thread pinned to CPU 1 alone keeps its mask.
	var pinned int
	var only1 unix.CPUSet
	only1.Set(1)
	release := lockedThreads(1, func() {
		pinned = unix.Gettid()
		if err := unix.SchedSetaffinity(0, &only1); err != nil {
			t.Error(err)
		}
	})
	defer release()

	e, err := Exclude([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	if !onEveryThread(t, func(m unix.CPUSet) bool { return !m.IsSet(1) || m == only1 }) {
		t.Fatal("a thread may still run on CPU 1")
	}
	var m unix.CPUSet
	if unix.SchedGetaffinity(pinned, &m); m != only1 {
		t.Fatal("the thread pinned to CPU 1 lost its mask")
	}
	// Threads Go starts now inherit the narrowed mask.
	var mu sync.Mutex
	var fresh []unix.CPUSet
	releaseFresh := lockedThreads(4, func() {
		var m unix.CPUSet
		unix.SchedGetaffinity(0, &m)
		mu.Lock()
		fresh = append(fresh, m)
		mu.Unlock()
	})
	for _, m := range fresh {
		if m.IsSet(1) {
			t.Fatal("a thread started after Exclude may run on CPU 1")
		}
	}

	e.Restore()
	releaseFresh()
	if !onEveryThread(t, func(m unix.CPUSet) bool { return m.IsSet(1) }) {
		t.Fatal("a thread did not get CPU 1 back")
	}
	if unix.SchedGetaffinity(0, &m); m != self {
		t.Fatalf("this thread's mask: %d CPUs, was %d", m.Count(), self.Count())
	}
}

func TestExcludeOutOfRange(t *testing.T) {
	if _, err := Exclude([]int{-1}); err == nil {
		t.Fatal("CPU -1 accepted")
	}
}
