package classify

import "testing"

// TestPackWordFields checks the one-load packWord against the fields it
// stands for, each at its own position.
func TestPackWordFields(t *testing.T) {
	h := Header{TEID: 0x89abcdef, QFI: 0x3f, SourceInterface: 2, Proto: 17, ToS: 0xb8,
		NetworkInstance: ^uint32(0), SrcPort: 0xffff, DstPort: 0xffff}
	want := uint64(h.TEID) | uint64(h.QFI)<<32 | uint64(h.SourceInterface)<<40 | uint64(h.Proto)<<48 | uint64(h.ToS)<<56
	if got := packWord(&h); got != want {
		t.Fatalf("packWord = %#x, want %#x", got, want)
	}
	// Neighbouring fields must not leak into the word.
	h2 := Header{TEID: h.TEID, QFI: h.QFI, SourceInterface: h.SourceInterface, Proto: h.Proto, ToS: h.ToS}
	if packWord(&h2) != want {
		t.Fatalf("packWord depends on fields outside the word")
	}
}
