package classify

// lookup4 is lookup4Go (ranked.go) in assembly. Go keeps about ten of
// the probe loop's values on the stack and reloads them every probe;
// written out, the loop keeps them all in registers, and a probe that
// finds nothing runs 46 instructions where Go's runs about 78. On a
// shared core, where another tenant's thread takes part of the core's
// width, that is most of a lookup's cost once its lines are in cache:
// fw1_100k, which probes three tuples a lookup, took 47 against 55-56 ns
// over 1,000 cached headers and 72-75 against 81-89 ns over its trace
// (both loops alternated in one process). TestLookup4AgreesWithGo holds
// the two to the same answers.
func lookup4(list []rtRef, h *Header, best uint64) (uint64, int) {
	if len(list) == 0 {
		return best, 0
	}
	return lookup4asm(&list[0], len(list), h, best)
}

//go:noescape
func lookup4asm(list *rtRef, n int, h *Header, best uint64) (b uint64, i int)
