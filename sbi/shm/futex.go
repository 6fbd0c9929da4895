package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex words live in a MAP_SHARED file mapping, so the operations must
// be the shared (non-private) ones: the kernel then keys the wait queue on
// the page and offset, and a wake from another process finds the sleeper.
const (
	futexWaitOp = 0 // FUTEX_WAIT, without FUTEX_PRIVATE_FLAG
	futexWakeOp = 1 // FUTEX_WAKE, without FUTEX_PRIVATE_FLAG
)

// futexWait sleeps while *w == val, at most ts (relative). Spurious
// returns, EAGAIN (the word changed) and timeouts all just return: every
// caller re-checks its condition in a loop.
func futexWait(w *atomic.Uint32, val uint32, ts *unix.Timespec) {
	// Syscall (not RawSyscall): the wait blocks, and the runtime must know
	// so that it can hand this thread's P to other goroutines.
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWake wakes up to n waiters on w. It does not block, so the raw form
// saves the scheduler bookkeeping.
func futexWake(w *atomic.Uint32, n int) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakeOp, uintptr(n), 0, 0, 0)
}

func timespec(d time.Duration) unix.Timespec { return unix.NsecToTimespec(int64(d)) }
