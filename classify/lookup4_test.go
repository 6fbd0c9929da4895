package classify

import (
	"testing"
	"unsafe"
)

// TestLookup4Layout: lookup4_amd64.s reads rtRef, Header and rslot at
// fixed offsets; a change to these structs must change it too.
func TestLookup4Layout(t *testing.T) {
	var e rtRef
	var h Header
	var s rslot
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"rtRef size", unsafe.Sizeof(e), 96},
		{"rtRef.best", unsafe.Offsetof(e.best), 0},
		{"rtRef.ms", unsafe.Offsetof(e.ms), 8},
		{"rtRef.md", unsafe.Offsetof(e.md), 12},
		{"rtRef.kind", unsafe.Offsetof(e.kind), 16},
		{"rtRef.fin", unsafe.Offsetof(e.fin), 20},
		{"rtRef.ng", unsafe.Offsetof(e.ng), 24},
		{"rtRef.ctrl", unsafe.Offsetof(e.ctrl), 32},
		{"rtRef.slots", unsafe.Offsetof(e.slots), 56},
		{"Header.SrcIP.Lo", unsafe.Offsetof(h.SrcIP) + unsafe.Offsetof(h.SrcIP.Lo), 8},
		{"Header.DstIP.Lo", unsafe.Offsetof(h.DstIP) + unsafe.Offsetof(h.DstIP.Lo), 24},
		{"Header.QFI", unsafe.Offsetof(h.QFI), 52},
		{"Header.Proto", unsafe.Offsetof(h.Proto), 54},
		{"Header.SrcPort", unsafe.Offsetof(h.SrcPort), 72},
		{"Header.DstPort", unsafe.Offsetof(h.DstPort), 74},
		{"rslot size", unsafe.Sizeof(s), 32},
		{"rslot.rank", unsafe.Offsetof(s.rank), 0},
		{"rslot.src", unsafe.Offsetof(s.src), 8},
		{"rslot.dst", unsafe.Offsetof(s.dst), 12},
		{"rslot.sport", unsafe.Offsetof(s.sport), 16},
		{"rslot.dport", unsafe.Offsetof(s.dport), 20},
		{"rslot.ss", unsafe.Offsetof(s.ss), 24},
		{"rslot.sd", unsafe.Offsetof(s.sd), 25},
		{"rslot.proto", unsafe.Offsetof(s.proto), 26},
		{"rslot.pmask", unsafe.Offsetof(s.pmask), 27},
		{"rslot.aux", unsafe.Offsetof(s.aux), 28},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, lookup4_amd64.s assumes %d", c.name, c.got, c.want)
		}
	}
	if kindAddr4 != 0 || kindPorts != 2 || kindAddr4P != 3 || unsafe.Offsetof(s.sport.n) != 2 {
		t.Errorf("kindAddr4 %d, kindPorts %d, kindAddr4P %d, span16.n at %d: lookup4_amd64.s assumes 0, 2, 3 and 2",
			kindAddr4, kindPorts, kindAddr4P, unsafe.Offsetof(s.sport.n))
	}
	if kPort != 0xd6e8feb86659fd93 {
		t.Errorf("kPort %#x: lookup4_amd64.s multiplies by 0xd6e8feb86659fd93", uint64(kPort))
	}
}
