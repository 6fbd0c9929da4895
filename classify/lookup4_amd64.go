package classify

import "unsafe"

// lookup4 is lookup4Go (ranked.go) in assembly. Go keeps about ten of
// the probe loop's values on the stack and reloads them every probe;
// written out, the loop keeps them all in registers, and a probe that
// finds nothing runs 37 instructions, and up to two NOPs that align the
// group loop's head (see the assembly), where Go's runs about 78 (46 while
// the assembly tested control words as Go does, before it took SSE2's
// byte compare). The assembly also asks for a probe's slot lines while
// the probe's control word loads (PREFETCHT0, 7 more instructions), so
// that a tuple out of cache costs one miss's wait rather than two in a
// row; over the three 100k sets that took lookups down by about 10%
// (README). On a shared
// core, where another tenant's thread takes part of the core's width,
// instructions are much of a lookup's cost: over the fw1_100k trace,
// which probes three tuples a lookup, the loop alone took 80-83 against
// 92-98 ns in a noisy hour before the prefetch, and 52-62 against 76-82
// ns with it (BenchmarkLookup4Loop); the byte compare then took the
// median of 15 alternated runs from 46.3 to 44.7 ns (minimum 40.7 to
// 39.0; lower in 9 of the 15). TestLookup4AgreesWithGo holds the two to
// the same answers.
//
// It is one call, so that it inlines into rtSpace.lookup: the assembly
// reads no tuple of an empty list (its data pointer may then be nil).
func lookup4(list []rtRef, h *Header, best uint64) (uint64, int) {
	return lookup4asm(unsafe.SliceData(list), len(list), h, best)
}

//go:noescape
func lookup4asm(list *rtRef, n int, h *Header, best uint64) (b uint64, i int)
