package report

import (
	"testing"
)

const procStat = `cpu  1203824 2663 241584 1774742 10371 0 44900 73472 0 0
cpu0 510972 959 113604 986552 3433 0 23677 36701 0 0
cpu1 692851 1704 127979 788189 6937 0 21222 36770 0 0
intr 1 2 3
ctxt 12345
`

func TestParseCPUTicks(t *testing.T) {
	one, err := parseCPUTicks([]byte(procStat), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUTicks{Busy: 692851 + 1704 + 127979 + 0 + 21222, Idle: 788189 + 6937, Steal: 36770}); one != want {
		t.Errorf("cpu1: %+v, want %+v", one, want)
	}
	all, err := parseCPUTicks([]byte(procStat), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The aggregate "cpu" line is skipped; all is the sum of cpu0 and cpu1.
	if all.Steal != 36701+36770 || all.Idle != 986552+3433+788189+6937 {
		t.Errorf("all: %+v", all)
	}
	if _, err := parseCPUTicks([]byte(procStat), []int{7}); err == nil {
		t.Error("no error for a CPU /proc/stat does not list")
	}
	if _, err := parseCPUTicks([]byte("cpu0 1 2 3 4 x 6 7 8\n"), nil); err == nil {
		t.Error("no error for a malformed line")
	}
}

func TestStealShare(t *testing.T) {
	a := CPUTicks{Busy: 100, Idle: 100, Steal: 10}
	b := CPUTicks{Busy: 160, Idle: 120, Steal: 30}
	if got := StealShare(a, b); got != 0.2 {
		t.Errorf("steal share %v, want 0.2 (20 of 100 ticks)", got)
	}
	if got := StealShare(a, a); got != 0 {
		t.Errorf("no time passed: %v", got)
	}
}

func TestReadCPUTicksHere(t *testing.T) {
	cpus := AffinityCPUs()
	if len(cpus) == 0 {
		t.Skip("no CPU affinity on this platform")
	}
	if _, err := ReadCPUTicks(cpus); err != nil {
		t.Fatalf("affinity %v: %v", cpus, err)
	}
}
