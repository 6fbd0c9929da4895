package classify

import "unsafe"

// prefetch asks the CPU for p's cache line and returns without waiting
// for it (PREFETCHT0). Updates issue the loads they will need together
// this way, so that their cache misses overlap instead of queueing one
// after another (an update's lines are scattered over megabytes of
// tables and are seldom in cache).
//
//go:noescape
func prefetch(p unsafe.Pointer)
