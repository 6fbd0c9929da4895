package xdp

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// urrCounters is the programs' URR counter array (bpf/upf.c: urrs), read
// and cleared through a mapping of it, with no system call: CPU c counts
// slot s in element c*slots + s, so each CPU writes only a region of its
// own and the counters need no atomics. A counter is one aligned 64-bit
// word, read whole while a program may be adding to it.
//
// The mapping is made and unmade here, not left to the garbage collector:
// it holds the map's memory (slots times the CPUs times 32 bytes) until it
// is unmapped, and a process that starts UPFs over and over (the tests,
// the benchmark) would otherwise keep each one's.
type urrCounters struct {
	b     []byte
	slots uint32 // slots per CPU
	ncpu  int
}

const usageSize = int(unsafe.Sizeof(upfUsage{}))

func mapURRCounters(m *ebpf.Map, slots uint32, ncpu int) (*urrCounters, error) {
	size := int(slots) * ncpu * usageSize
	if m.MaxEntries() != slots*uint32(ncpu) || int(m.ValueSize()) != usageSize {
		return nil, fmt.Errorf("xdp: URR counters: %d entries of %d bytes, want %d of %d",
			m.MaxEntries(), m.ValueSize(), slots*uint32(ncpu), usageSize)
	}
	b, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("xdp: map the URR counters: %w", err)
	}
	return &urrCounters{b: b, slots: slots, ncpu: ncpu}, nil
}

func (u *urrCounters) at(cpu int, slot uint32) []byte {
	off := (cpu*int(u.slots) + int(slot)) * usageSize
	return u.b[off : off+usageSize]
}

// sum is slot's counters summed over the CPUs.
func (u *urrCounters) sum(slot uint32) upfUsage {
	var s upfUsage
	for cpu := range u.ncpu {
		e := u.at(cpu, slot)
		s.UlPkts += binary.NativeEndian.Uint64(e[0:])
		s.UlBytes += binary.NativeEndian.Uint64(e[8:])
		s.DlPkts += binary.NativeEndian.Uint64(e[16:])
		s.DlBytes += binary.NativeEndian.Uint64(e[24:])
	}
	return s
}

// clear zeroes slot's counters on every CPU, for a slot handed out anew.
func (u *urrCounters) clear(slot uint32) {
	for cpu := range u.ncpu {
		clear(u.at(cpu, slot))
	}
}

// unmap releases the mapping; the counters are not to be used after it.
func (u *urrCounters) unmap() error {
	b := u.b
	u.b = nil
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}
