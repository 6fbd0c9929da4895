//go:build !linux

package report

// AffinityCPUs lists the CPUs this process may run on; nil here: the
// platform has no affinity call we use.
func AffinityCPUs() []int { return nil }
