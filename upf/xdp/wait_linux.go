package xdp

import (
	"time"

	"golang.org/x/sys/unix"
)

// waitPrograms returns once every program run that started before it has
// ended. XDP programs run in NAPI polls, inside an RCU read-side section
// that also covers the flush of their redirected frames at the end of the
// poll: a map update is seen by every run that starts after it, and
// synchronize_rcu() waits for the runs that started before.
// membarrier(MEMBARRIER_CMD_GLOBAL) is synchronize_rcu() for user space.
// Where the kernel refuses it (nohz_full CPUs), a pause longer than a
// poll's time budget (net.core.netdev_budget_usecs, 2 ms by default)
// stands in.
func waitPrograms() {
	const membarrierCmdGlobal = 1
	if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); errno != 0 {
		time.Sleep(5 * time.Millisecond)
	}
}
