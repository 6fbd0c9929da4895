package classify

// lookup4 is lookup4Go (ranked.go) in assembly. Go keeps about ten of
// the probe loop's values on the stack and reloads them every probe;
// written out, the loop keeps them all in registers, and a probe that
// finds nothing runs 46 instructions where Go's runs about 78. On a
// shared core, where another tenant's thread takes part of the core's
// width, instructions are much of a lookup's cost: over the fw1_100k
// trace, which probes three tuples a lookup, the loop alone took 80-83
// against 92-98 ns in a noisy hour (BenchmarkLookup4Loop).
// TestLookup4AgreesWithGo holds the two to the same answers.
func lookup4(list []rtRef, h *Header, best uint64) (uint64, int) {
	if len(list) == 0 {
		return best, 0
	}
	return lookup4asm(&list[0], len(list), h, best)
}

//go:noescape
func lookup4asm(list *rtRef, n int, h *Header, best uint64) (b uint64, i int)
