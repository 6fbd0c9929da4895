package xdp

import (
	"encoding/binary"
	"unsafe"

	"github.com/cilium/ebpf"
)

// urrCounters is the programs' URR counter array (bpf/upf.c: urrs), read
// and cleared through a mapping of it, with no system call: CPU c counts
// slot s in element c*slots + s, so each CPU writes only a region of its
// own and the counters need no atomics. A counter is one aligned 64-bit
// word, read whole while a program may be adding to it.
//
// The mapping is mapArray's.
type urrCounters struct {
	b     []byte
	slots uint32 // slots per CPU
	ncpu  int
}

const usageSize = int(unsafe.Sizeof(upfUsage{}))

func mapURRCounters(m *ebpf.Map, slots uint32, ncpu int) (*urrCounters, error) {
	b, err := mapArray("URR counters", m, slots*uint32(ncpu), usageSize)
	if err != nil {
		return nil, err
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

// unmap releases the mapping (nil: none); the counters are not to be
// used after it.
func (u *urrCounters) unmap() error {
	if u == nil {
		return nil
	}
	return unmapArray(&u.b)
}
