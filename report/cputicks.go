package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// CPUTicks is the kernel's account of where CPU time went (/proc/stat,
// in clock ticks): Busy (user, nice, system, irq, softirq), Idle (idle,
// iowait) and Steal, the time the hypervisor ran something else while
// this machine's virtual CPU wanted to run. Steal is what makes a shared
// virtual machine noisy in a way the guest can see: a benchmark reads it
// around its timed passes to say how much of their wall time was not
// its own.
type CPUTicks struct{ Busy, Idle, Steal uint64 }

// ReadCPUTicks sums the /proc/stat lines of the given CPUs (all of them
// when cpus is empty).
func ReadCPUTicks(cpus []int) (CPUTicks, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTicks{}, fmt.Errorf("report: cpu ticks: %w", err)
	}
	return parseCPUTicks(b, cpus)
}

func parseCPUTicks(b []byte, cpus []int) (CPUTicks, error) {
	var t CPUTicks
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || (len(cpus) > 0 && !slices.Contains(cpus, n)) {
			continue
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// guest time is already inside user.
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
				return CPUTicks{}, fmt.Errorf("report: /proc/stat %s: %w", f[0], err)
			}
		}
		t.Busy += v[0] + v[1] + v[2] + v[5] + v[6]
		t.Idle += v[3] + v[4]
		t.Steal += v[7]
		found++
	}
	if found == 0 {
		return CPUTicks{}, fmt.Errorf("report: /proc/stat: no line for cpus %v", cpus)
	}
	return t, nil
}

// StealShare is the share of the time between readings a and b (a
// first) that was stolen, 0 when no time passed.
func StealShare(a, b CPUTicks) float64 {
	total := (b.Busy - a.Busy) + (b.Idle - a.Idle) + (b.Steal - a.Steal)
	if total == 0 {
		return 0
	}
	return float64(b.Steal-a.Steal) / float64(total)
}
