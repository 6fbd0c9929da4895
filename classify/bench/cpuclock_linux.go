package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has run. The kernel's
// paravirtual time accounting (CONFIG_PARAVIRT_TIME_ACCOUNTING) leaves
// out time the hypervisor stole from the virtual CPU, and a thread's
// clock never counts time other processes ran, so on a shared virtual
// machine this is the cost of the passes themselves; wall time is what a
// packet waits. The caller holds its goroutine on the thread
// (runtime.LockOSThread).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
