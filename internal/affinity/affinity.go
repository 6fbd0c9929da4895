// Package affinity keeps this process's threads off CPUs that a data path
// holds for itself.
//
// The xdp driver's fast path runs, with upf.xdpCPUs, in the kernel's
// cpumap threads on CPUs of their own, at normal priority. The kernel puts
// any thread of ours whose affinity allows it on those CPUs too, and Go
// starts threads as it needs them: a thread doing the UPF's control work,
// or the rest of the core in `tern up`, then takes a CPU from the fast
// path for a scheduler slice, and at 2 Mpps a slice of 1 ms overflows a
// cpumap queue of 2,048 frames. Narrowing the affinity of every thread of
// the process keeps them off, and keeps later threads off as well: a new
// thread inherits the mask of the thread that starts it.
//
// Threads are narrowed, never emptied: a thread allowed only on the
// excluded CPUs (pinned there on purpose) keeps its mask. An Exclusion is
// process-wide; two of them over the same CPUs do not nest.
package affinity

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Exclusion is the narrowing Exclude made, for Restore to undo.
type Exclusion struct {
	ex       unix.CPUSet
	before   map[int]unix.CPUSet // thread ID -> its mask before Exclude
	narrowed map[unix.CPUSet]bool
}

// Exclude takes cpus out of the affinity of every thread of this process.
// Threads that Go starts meanwhile from a thread not yet narrowed are
// found by scanning again until a scan changes nothing.
func Exclude(cpus []int) (*Exclusion, error) {
	e := &Exclusion{before: make(map[int]unix.CPUSet), narrowed: make(map[unix.CPUSet]bool)}
	for _, c := range cpus {
		if c < 0 || c >= len(e.ex)*64 {
			return nil, fmt.Errorf("affinity: CPU %d out of range", c)
		}
		e.ex.Set(c)
	}
	for range 8 {
		tids, err := threads()
		if err != nil {
			return nil, err
		}
		changed := false
		for _, tid := range tids {
			var m unix.CPUSet
			if unix.SchedGetaffinity(tid, &m) != nil {
				continue // exited
			}
			n := andNot(m, e.ex)
			if n == m || n.Count() == 0 {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &n); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue
				}
				e.Restore()
				return nil, fmt.Errorf("affinity: thread %d: %w", tid, err)
			}
			if _, seen := e.before[tid]; !seen {
				e.before[tid] = m
			}
			e.narrowed[n] = true
			changed = true
		}
		if !changed {
			break
		}
	}
	return e, nil
}

// Restore gives the excluded CPUs back: each thread Exclude narrowed gets
// its old mask, and a thread started since with a mask Exclude made gets
// the CPUs added. A thread whose mask changed since in another way keeps
// it.
// Like Exclude, it scans until a scan changes nothing, for the threads
// started meanwhile from threads not yet restored.
func (e *Exclusion) Restore() {
	for range 8 {
		tids, err := threads()
		if err != nil {
			return
		}
		changed := false
		for _, tid := range tids {
			var m unix.CPUSet
			if unix.SchedGetaffinity(tid, &m) != nil || !e.narrowed[m] {
				continue
			}
			w, ok := e.before[tid]
			if !ok {
				w = or(m, e.ex)
			}
			if unix.SchedSetaffinity(tid, &w) == nil { // one that exited needs nothing
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// threads lists the IDs of this process's threads.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("affinity: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, d := range ents {
		if tid, err := strconv.Atoi(d.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

func andNot(a, b unix.CPUSet) unix.CPUSet {
	for i := range a {
		a[i] &^= b[i]
	}
	return a
}

func or(a, b unix.CPUSet) unix.CPUSet {
	for i := range a {
		a[i] |= b[i]
	}
	return a
}
