package classify

import (
	"math/bits"
	"slices"
	"strconv"
)

// grid4 is the set of IPv4 prefix lengths a RankedTuple keys its address
// tuples on, one bit per length (bit 0, /0, is always set). A rule's
// prefix is relaxed to the longest grid length it covers: coarse grids
// make few tuples (fewer probes a lookup) but put more rules on one key
// (more slots to verify, and port splits); fine grids the reverse.
//
// A grid with gridPorts set also keys rules for one destination port on
// that port, as classic tuple space search does for every field: such a
// rule goes to a kindAddr4P tuple (its prefixes and the port), the
// others to kindAddr4 tuples. Rules of one host pair that differ only in
// port (ClassBench acl1: up to 19 among its first 256 rules) then no
// longer share a key, and their lookups verify one slot instead of
// entering a port split; the price is up to twice the tuples to probe,
// which the cost model weighs.
type grid4 uint64

// gridPorts marks a grid that keys single-port rules on their port.
const gridPorts = grid4(1) << 63

// gridDefault keys on /0, /8 and /16: on ClassBench 100k it probes 1.1
// (acl1) to 2.9 (fw1) tuples a lookup. It serves classifiers built
// empty until they hold regridMin IPv4 5-tuple rules.
const gridDefault = grid4(1 | 1<<8 | 1<<16)

// gridChoices are the grids a bulk build chooses from.
var gridChoices = withPorts(
	gridDefault,
	1|1<<8|1<<16|1<<24,
	1|1<<16|1<<32,
	1|1<<8|1<<16|1<<24|1<<32,
	1|1<<16|1<<24|1<<32,
)

// withPorts lists the grids gs, then each with gridPorts.
func withPorts(gs ...grid4) []grid4 {
	for _, g := range gs {
		gs = append(gs, g|gridPorts)
	}
	return gs
}

// ports reports whether the grid keys single-port rules on their port.
func (g grid4) ports() bool { return g&gridPorts != 0 }

// keyed reports whether slot s's level-0 tuple keys on its destination
// port under grid g.
func (g grid4) keyed(s *rslot) bool { return g.ports() && s.dport.n == 0 }

// String lists the grid's lengths, and "ports" if it has gridPorts.
func (g grid4) String() string {
	var b []byte
	for l := range 33 {
		if g&(1<<l) != 0 {
			b = strconv.AppendInt(append(b, ' '), int64(l), 10)
		}
	}
	if g.ports() {
		b = append(b, " ports"...)
	}
	return "[" + string(b[1:]) + "]"
}

// relax is the longest grid length at most l.
func (g grid4) relax(l uint8) uint8 {
	return uint8(63 - bits.LeadingZeros64(uint64(g)&(2<<l-1)))
}

// Cost model weights, in tuple probes. A slot verified costs about two
// probes: a probe that finds no candidate runs a short loop whose
// branches the predictor learns, while a verification ends in a branch
// on the header (match or not) that it cannot. A key with more than
// rtSplitAt rules sends its lookups into a port-level space, about three
// probes more. Fitted to lookup times over every grid on the ClassBench
// 1k and 10k sets and acl1_1k's first 64-512 rules (one core, in
// cache): about 3 ns a probe and 10 ns a slot, the split folded into its
// slots. These weights pick the fastest grid, or one within 8% of it,
// on each of those 13 sets, and the same grids as before on the 100k
// sets, where both probes and slots are mostly cache misses.
const (
	costSlot  = 2.0
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
	var m gridModel
	best, bestCost := gridDefault, 0.0
	for gi, g := range gridChoices {
		if cost := m.cost(s, g); gi == 0 || cost < bestCost {
			best, bestCost = g, cost
		}
	}
	return best
}

// gridModel estimates a grid's lookup cost (chooseGrid); it keeps its
// scratch space between grids.
type gridModel struct {
	// keys counts the rules of each key hash. The cost of a key depends
	// only on its count; counting in a table rather than sorting the keys
	// took a build of acl1_100k from 151-159 ms to 92-97 ms (the grid
	// given, 51-62 ms).
	keys keyCounter[uint64]
	pos  []int
}

// cost is the estimated work of lookups for headers matching each rule
// of s (sorted by rank) once on grid g, in tuple probes.
func (m *gridModel) cost(s []rslot, g grid4) float64 {
	m.keys.reset(len(s))
	var bound [2][33][33]int // tuple (port keyed, source, destination length): 1 + its best rule
	for i := range s {
		ls, ld := g.relax(s[i].srcLen()), g.relax(s[i].dstLen())
		ms, md := uint32(^uint64(0)<<(32-ls)), uint32(^uint64(0)<<(32-ld))
		k, p := key4(s[i].src, s[i].dst, ms, md), 0
		if g.keyed(&s[i]) {
			k, p = portKey(k, s[i].dport.lo), 1
		}
		if bound[p][ls][ld] == 0 {
			bound[p][ls][ld] = i + 1 // s is in rank order: the first rule is the best
		}
		// The low bit tells port-keyed keys apart (the slot count below).
		x := (rtMix(k)^(uint64(ls)<<8|uint64(ld))*k2)&^1 | uint64(p)
		m.keys.add(x, x)
	}
	// Probes: tuples whose bound is at or before r.
	pos := m.pos[:0]
	for p := range bound {
		for ls := range bound[p] {
			for _, b := range bound[p][ls] {
				if b != 0 {
					pos = append(pos, b)
				}
			}
		}
	}
	m.pos = pos
	slices.Sort(pos)
	cost := 0.0
	for i := range s {
		n, _ := slices.BinarySearch(pos, i+2)
		cost += float64(n)
	}
	// Slots: the k-th rule of a key (in rank order) verifies k slots,
	// at most rtSplitAt before a split. A port-keyed key is taken not to
	// split (splittable): its rules share the port the split would hash.
	for i, x := range m.keys.keys {
		n := m.keys.counts[i]
		if x&1 != 0 {
			cost += costSlot * float64(n*(n+1)/2)
			continue
		}
		k := min(n, rtSplitAt)
		cost += costSlot * float64(k*(k+1)/2+(n-k)*rtSplitAt)
		if n > rtSplitAt {
			cost += costSplit * float64(n)
		}
	}
	return cost
}
