package xdp

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// mapArray maps m, a BPF_F_MMAPABLE array that must hold entries values
// of size bytes each, into the process: the URR counters and the session
// indexes are read and written through it with no system call. The
// mapping is released by unmapArray, not left to the garbage collector:
// it holds the map's memory until it is unmapped, and a process that
// starts UPFs over and over (the tests, the benchmark) would otherwise
// keep each one's.
func mapArray(what string, m *ebpf.Map, entries uint32, size int) ([]byte, error) {
	if m.MaxEntries() != entries || int(m.ValueSize()) != size {
		return nil, fmt.Errorf("xdp: %s: %d entries of %d bytes, want %d of %d",
			what, m.MaxEntries(), m.ValueSize(), entries, size)
	}
	b, err := unix.Mmap(m.FD(), 0, int(entries)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("xdp: map the %s: %w", what, err)
	}
	return b, nil
}

// unmapArray releases the mapping *b (once: *b is nil after).
func unmapArray(b *[]byte) error {
	m := *b
	*b = nil
	if m == nil {
		return nil
	}
	return unix.Munmap(m)
}
