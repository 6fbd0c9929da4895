//go:build linux

// Package netnstest runs test code in a network namespace of its own on a
// thread other than the main one, as lab.Do runs a UPF or a gNB: for the
// tests of what must not read the main thread's namespace (/proc/self/net
// is the main thread's).
package netnstest

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Run runs fn on a thread, not the main one, in a new network namespace
// (only lo, down). The thread is never given back to the scheduler: it
// ends with fn's goroutine, namespace and all. Run skips t where this
// user may not make a namespace (root only).
func Run(t testing.TB, fn func()) {
	t.Helper()
	errc := make(chan error, 1)
	body := func() {
		runtime.LockOSThread() // not unlocked: the thread leaves with the namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		fn()
		errc <- nil
	}
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != os.Getpid() {
			body()
			return
		}
		// The main thread: hold it, so that body runs on another.
		done := make(chan struct{})
		go func() { defer close(done); body() }()
		<-done
		runtime.UnlockOSThread()
	}()
	if err := <-errc; err != nil {
		t.Skipf("a network namespace of its own: %v (needs root)", err)
	}
}
