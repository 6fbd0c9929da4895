package classify

import (
	"math/bits"
	"slices"
)

// grid4 is the set of IPv4 prefix lengths a RankedTuple keys its address
// tuples on, one bit per length (bit 0, /0, is always set). A rule's
// prefix is relaxed to the longest grid length it covers: coarse grids
// make few tuples (fewer probes a lookup) but put more rules on one key
// (more slots to verify, and port splits); fine grids the reverse.
type grid4 uint64

// gridDefault keys on /0, /8 and /16: on ClassBench 100k it probes 1.1
// (acl1) to 2.9 (fw1) tuples a lookup. It serves classifiers built
// empty until they hold regridMin IPv4 5-tuple rules.
const gridDefault = grid4(1 | 1<<8 | 1<<16)

// gridChoices are the grids a bulk build chooses from.
var gridChoices = []grid4{
	gridDefault,
	1 | 1<<8 | 1<<16 | 1<<24,
	1 | 1<<16 | 1<<32,
	1 | 1<<8 | 1<<16 | 1<<24 | 1<<32,
	1 | 1<<16 | 1<<24 | 1<<32,
}

// relax is the longest grid length at most l.
func (g grid4) relax(l uint8) uint8 {
	return uint8(63 - bits.LeadingZeros64(uint64(g)&(2<<l-1)))
}

// Cost model weights, in tuple probes: verifying a slot costs about half
// a probe (no hashing, one compare chain), and a key with more than
// rtSplitAt rules sends its lookups into a port-level space, which costs
// about three probes more.
const (
	costSlot  = 0.5
	costSplit = 3.0
)

// chooseGrid picks the grid with the least estimated lookup cost for the
// IPv4 5-tuple slots s (sorted by rank), taking a header that matches a
// rule r as the unit of work (ClassBench traces draw headers from rules):
//
//   - r's lookup probes every tuple whose best rank is at or before r's
//     (the search stops only at a tuple that cannot beat r),
//   - and in r's tuple verifies the rules of r's key that rank before r
//     (rules of one key share the control byte's hash bits),
//   - plus a split's cost when the key holds more than rtSplitAt rules.
//
// This is DynamicTuple's idea (choose tuples from rule statistics)
// restricted to a few grids, so that a build stays a few sorts.
func chooseGrid(s []rslot) grid4 {
	if len(s) == 0 {
		return gridDefault
	}
	keys := make([]uint64, len(s))
	var pos []int
	best, bestCost := gridDefault, 0.0
	for gi, g := range gridChoices {
		var bound [33][33]int // tuple (source, destination length): 1 + its best rule
		for i := range s {
			ls, ld := g.relax(s[i].srcLen()), g.relax(s[i].dstLen())
			ms, md := uint32(^uint64(0)<<(32-ls)), uint32(^uint64(0)<<(32-ld))
			if bound[ls][ld] == 0 {
				bound[ls][ld] = i + 1 // s is in rank order: the first rule is the best
			}
			keys[i] = rtMix(uint64(s[i].src&ms)<<32|uint64(s[i].dst&md)) ^ (uint64(ls)<<8|uint64(ld))*k2
		}
		// Probes: tuples whose bound is at or before r.
		pos = pos[:0]
		for ls := range bound {
			for _, b := range bound[ls] {
				if b != 0 {
					pos = append(pos, b)
				}
			}
		}
		slices.Sort(pos)
		cost := 0.0
		for i := range s {
			n, _ := slices.BinarySearch(pos, i+2)
			cost += float64(n)
		}
		// Slots: runs of equal keys. The k-th rule of a key (in rank
		// order) verifies k slots, at most rtSplitAt before a split.
		slices.Sort(keys)
		for i := 0; i < len(keys); {
			j := i + 1
			for j < len(keys) && keys[j] == keys[i] {
				j++
			}
			n := j - i
			m := min(n, rtSplitAt)
			cost += costSlot * float64(m*(m+1)/2+(n-m)*rtSplitAt)
			if n > rtSplitAt {
				cost += costSplit * float64(n)
			}
			i = j
		}
		if gi == 0 || cost < bestCost {
			best, bestCost = g, cost
		}
	}
	return best
}
