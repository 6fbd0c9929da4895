package report

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// AffinityCPUs lists the CPUs this process may run on (taskset), or nil
// when the kernel cannot tell.
func AffinityCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := 0; i < 8*int(unsafe.Sizeof(set)); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}
