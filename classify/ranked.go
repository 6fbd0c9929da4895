package classify

import (
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// RankedTuple is our classifier: a tuple space search in the
// TupleMerge/DynamicTuple family, laid out so that a lookup costs about
// one cache miss.
//
//   - Level 0 hashes the address fields with prefix lengths relaxed to a
//     grid, so that few tuples exist (TupleMerge's idea): for IPv4, the
//     grid a bulk build chooses from the rules' statistics
//     (ranked_grid.go), chosen again as inserts and deletes double or
//     quarter the rules, and which may also key rules for one
//     destination port on it (gridPorts, as classic TSS keys every
//     field); for 128-bit addresses, multiples of 8. Plain
//     IPv4 5-tuple rules hash their 32-bit source and destination; other
//     SDF-only rules (IPv6, ToS, QFI) hash 128-bit addresses. PDRs with
//     PDI fields (TEID, UE IP, source interface...) live in separate
//     engines keyed on their session (see ranked_sess.go and
//     ranked_pdr.go).
//   - Each tuple is an open-addressing table in the Swiss-table style: a
//     control byte per slot (7 hash bits, or empty, or deleted), eight to
//     a word, in front of 32-byte slots that hold the rule itself. The
//     control words (1 byte a rule) stay in cache; a probe that finds
//     nothing touches no slot, and a hit reads one slot. IPv4 rules are
//     checked in the slot; other rules keep their full form beside the
//     table, behind the slot's prefilter on ports and protocol.
//   - A key that collects more than splitAt rules moves to a second tuple
//     space over ports, protocol and QFI (DynamicTuple's port tables,
//     generalised), so no lookup scans a long chain.
//   - Tuples are probed best-rank first and the search stops as soon as
//     no remaining tuple can beat the match in hand, or as soon as the
//     match in hand is a rule that no rule of another tuple both
//     overlaps and outranks (a final slot: see markFinal).
//
// Concurrency: a slot is written once, before its control byte is
// published with an atomic store, and never rewritten in that table: a
// delete marks the control byte deleted, and a table that fills up is
// rebuilt and published whole. Readers load control words atomically, so
// a lookup never waits and never sees half an update. Stale (too good)
// best-rank bounds after deletes only cost probes, and are recomputed in
// batches.
type RankedTuple struct {
	mu    sync.Mutex
	top   atomic.Pointer[rtSpace] // replaced whole when the grid changes
	locs  idIndex[rtLoc]
	stale []*rtTuple // tuples whose best bound may be too good
	dels  int        // deletes since the last refresh
	sess  sessEngine // rules with PDI fields (isPDR) that name their session exactly
	pdr   tssCore    // other rules with PDI fields, levels 0 and 1
	grid  grid4      // IPv4 prefix lengths that key level-0 tuples
	plain int        // IPv4 5-tuple rules (the rules the grid is chosen for)
	chose int        // plain when the grid was last chosen
	moves int        // rebuilds for a new grid (diagnostics)
}

// rtLoc is where a rule lives, for Delete: its tuple and key hash.
type rtLoc struct {
	t *rtTuple
	x uint64
}

// rtSplitAt is the number of rules one level-0 key may hold before they
// move to a port-level space.
const rtSplitAt = 8

// Tuple kinds: which fields a tuple hashes.
const (
	kindAddr4  uint8 = iota // level 0: IPv4 source and destination prefixes
	kindAddr                // level 0: 128-bit addresses
	kindPorts               // level 1: ports, protocol and QFI within one level-0 key
	kindAddr4P              // level 0: IPv4 prefixes and one destination port (gridPorts)
)

// is4 reports whether tuples of kind k key on IPv4 prefixes (and hold
// plain slots that lookup4 probes).
func is4(k uint8) bool { return k == kindAddr4 || k == kindAddr4P }

// key4 is a kindAddr4 tuple's key: the masked addresses, side by side.
func key4(src, dst, ms, md uint32) uint64 { return uint64(src&ms)<<32 | uint64(dst&md) }

// portKey adds a destination port to a kindAddr4P tuple's key. The
// addresses may fill all 64 bits, so the port enters multiplied by an odd
// constant: two keys then collide only by chance, which costs a slot's
// verification, never a wrong answer.
func portKey(k uint64, port uint16) uint64 { return k ^ uint64(port)*kPort }

const kPort = 0xd6e8feb86659fd93

// portsKey is a kindPorts tuple's key: the ports, protocol and QFI under
// the tuple's masks, packed as rtRef keeps them (portMasks).
func portsKey(sport, dport uint16, proto, qfi uint8, ms, md uint32) uint64 {
	return uint64((uint32(sport)<<16|uint32(dport))&ms)<<16 | uint64((uint32(proto)<<8|uint32(qfi))&md)
}

// portMasks packs a kindPorts tuple's masks for portsKey: source and
// destination port masks in ms, protocol and QFI masks in md.
func portMasks(sp, dp uint16, pm, qm uint8) (ms, md uint32) {
	return uint32(sp)<<16 | uint32(dp), uint32(pm)<<8 | uint32(qm)
}

// rtSpace is one tuple space: the top level, or the split of one key.
type rtSpace struct {
	list   atomic.Pointer[[]rtRef]
	best   atomic.Uint64      // no rule in the space ranks better
	tuples map[rtKey]*rtTuple // writer only
	level  uint8
	parent *rtTuple // level 1: the tuple holding the key, and the key's hash
	px     uint64
	finHi  uint32 // writer: the highest fin among tuples with final slots (0: none)
}

// rtRef is a tuple as lookups see it: its bound and everything a probe
// reads, inline, so that a probe's first load is the control word.
type rtRef struct {
	best   uint64 // no rule in the tuple ranks better (lower) than this
	ms, md uint32 // kindAddr4(P) masks; kindPorts: port masks, and protocol and QFI masks
	kind   uint8
	fin    uint32 // final slots are final only below this precedence (rtTuple.fin)
	ng     uint64 // groups
	ctrl   []uint64
	slots  []rslot
	tab    *rtTable
	t      *rtTuple
}

// rtKey names a tuple: its kind and relaxed field lengths (kindAddr4 and
// kindAddr: source, destination; kindAddr4P: source, destination, 16;
// kindPorts: source port, destination port, protocol and QFI masks).
type rtKey struct {
	kind uint8
	l    [4]uint8
}

type rtTuple struct {
	kind uint8
	// masks: kindAddr4 and kindAddr4P
	ms, md uint32
	// masks: kindPorts
	sp, dp uint16
	pm, qm uint8
	// masks: kindAddr
	sHi, sLo, dHi, dLo uint64

	tab   *rtTable // writer; readers use the copy in the published list
	owner *rtSpace
	key   rtKey
	count int    // writer: live slots (rules and splits)
	best  uint64 // writer: the bound published in owner's list
	stale bool   // writer: queued for a bound refresh
	// fin: the best precedence of a rule inserted into another tuple
	// since the slots were marked (published in owner's list); final
	// flags hold only for precedences below it. finals: slots marked.
	fin    uint32
	finals int
}

// rtTable is one tuple's hash table. Groups of 8 slots share a control
// word; probing walks groups until one has an empty byte.
type rtTable struct {
	ctrl  []uint64 // atomic; byte i: slot i of the group
	slots []rslot
	aux   atomic.Pointer[[]rtAux] // append-only while this table lives
	ng    uint64                  // groups
	used  int                     // writer: full and deleted slots
}

// rtAux completes a slot: the full rule for rules that do not fit in the
// slot, or the split of a key (with, for kindAddr, the key as a rule).
type rtAux struct {
	c   *crule
	sub *rtSpace
}

const (
	ctrlLSB     = 0x0101010101010101
	ctrlMSB     = 0x8080808080808080
	ctrlEmpty   = 0x80
	ctrlDeleted = 0xfe
)

// rslot is a rule in 32 bytes: an IPv4 5-tuple rule whole, or the ports
// and protocol of any other rule (aux then points at the rest). A split's
// slot has rank 0 and matches its key.
type rslot struct {
	rank         uint64
	src, dst     uint32 // IPv4 prefixes, masked
	sport, dport span16
	ss, sd       uint8 // 32 - IPv4 prefix length: the address bits the prefix leaves free
	proto, pmask uint8
	aux          uint32 // ref (0, or 1 + index in the table's aux), or slotFinal
}

// slotFinal in a plain slot's aux marks it final: no rule of another
// tuple in the space both overlaps the slot's rule and outranks it, so a
// lookup that matches it need probe no other tuple (markFinal).
const slotFinal = 1 << 31

// ref is the slot's aux reference: 0, or 1 + index in the table's aux.
func (s *rslot) ref() uint32 { return s.aux &^ slotFinal }

func (s *rslot) srcLen() uint8 { return 32 - s.ss }

// miss is the slot's test, without branches: zero when a header with
// these fields passes every field the slot holds (all of a plain rule; the
// prefilter of others). n4s, n4d are all ones where the header's address
// is not IPv4, so that any IPv4 prefix but /0 fails. An address passes
// when its difference from the prefix has no bit left of the prefix's
// free bits (a /0 shifts all 32 out; the & 63 tells the compiler the
// shift is in range), and a port passes when its offset in the range is
// at most the range's width (otherwise width - offset wraps past 0xffff).
// The fields come as scalars, not a struct: Go keeps a struct of more
// than four fields in memory, and the probe loops are short of registers.
func (s *rslot) miss(src, dst, n4s, n4d uint32, sport, dport uint16, proto uint8) uint64 {
	return uint64((src^s.src)|n4s)>>(s.ss&63) | uint64((dst^s.dst)|n4d)>>(s.sd&63) |
		uint64((uint32(s.sport.n)-uint32(sport-s.sport.lo))|(uint32(s.dport.n)-uint32(dport-s.dport.lo)))>>16 |
		uint64(proto&s.pmask^s.proto)
}
func (s *rslot) dstLen() uint8 { return 32 - s.sd }

// span16 is a port range as its low end and width, so that the range
// test is one unsigned compare.
type span16 struct{ lo, n uint16 }

func spanOf(p PortRange) span16 { return span16{p.Lo, p.Hi - p.Lo} }

// addr4 gives an IPv4 prefix's 32-bit form; ok is false for IPv6 and
// for ::ffff:0:0/96 ("any IPv4"), which slots cannot express.
func addr4(a Addr, l uint8) (v uint32, n uint8, ok bool) {
	if l == 0 {
		return 0, 0, true
	}
	if l > 96 && a.Is4() {
		return uint32(a.Lo), l - 96, true
	}
	return 0, 0, false
}

// slotOf compiles a rule: the slot, and the full rule if the slot cannot
// hold it.
func slotOf(c *crule) (rslot, *crule) {
	s := rslot{rank: c.rank, sport: spanOf(c.sport), dport: spanOf(c.dport), proto: c.proto, pmask: c.protoMask, ss: 32, sd: 32}
	sv, sl, sok := addr4(c.src, c.srcLen)
	dv, dl, dok := addr4(c.dst, c.dstLen)
	if c.ext == nil && c.tosMask == 0 && c.qfiMask == 0 && sok && dok {
		s.src, s.ss, s.dst, s.sd = sv, 32-sl, dv, 32-dl
		return s, nil
	}
	full := *c
	return s, &full
}

// NewRankedTuple builds a RankedTuple classifier.
func NewRankedTuple(rules []Rule) (*RankedTuple, error) {
	return newRankedTuple(rules, chooseGrid)
}

// newRankedTuple builds a RankedTuple keyed on the grid choose picks for
// its IPv4 5-tuple rules.
func newRankedTuple(rules []Rule, choose func([]rslot) grid4) (*RankedTuple, error) {
	sorted, err := checkRules(rules)
	if err != nil {
		return nil, fmt.Errorf("rankedtuple: %w", err)
	}
	c := &RankedTuple{grid: gridDefault}
	c.pdr.top, c.pdr.locs = newSpace(0, nil, 0), make(map[uint32]loc)
	c.sess.init()
	slots := make([]rslot, 0, len(sorted))
	fulls := make([]*crule, 0, len(sorted))
	var pdrs []crule
	for i := range sorted {
		cr := compile(&sorted[i])
		if isPDR(&cr) {
			pdrs = append(pdrs, cr)
			continue
		}
		s, full := slotOf(&cr)
		slots, fulls = append(slots, s), append(fulls, full)
	}
	c.sess.reserveFor(len(pdrs))
	for i := range pdrs {
		c.insertPDR(pdrs[i])
	}
	c.sess.rebuild() // without the slots that bucket updates left behind
	c.locs = newIDIndex[rtLoc](len(slots))
	plain := plainOf(slots, fulls)
	c.build(slots, fulls, choose(plain), len(plain))
	return c, nil
}

// plainOf returns the IPv4 5-tuple rules among slots s (those without a
// full form), the rules the grid is chosen for.
func plainOf(s []rslot, fulls []*crule) []rslot {
	var plain []rslot
	for i := range s {
		if fulls[i] == nil {
			plain = append(plain, s[i])
		}
	}
	return plain
}

// build lays out the level-0 rules (slots s in rank order, with their
// full forms; plain of them IPv4 5-tuple rules) on grid g, and publishes
// the new top space whole (writer).
func (c *RankedTuple) build(s []rslot, fulls []*crule, g grid4, plain int) {
	c.grid, c.plain, c.chose = g, plain, plain
	top := newRtSpace(0, nil, 0)
	count := map[rtKey]int{}
	for i := range s {
		count[c.keyOf(0, &s[i], fulls[i])]++
	}
	// Tables sized for the whole set, half full, so that growth never
	// copies during the build (fuller tables measured slower: at 2/3 and
	// 4/5 probes read more control words and verify more slots).
	for k, n := range count {
		t := newRtTuple(top, k)
		t.tab = newRtTable(max(1, (2*n+7)/8))
		top.tuples[k] = t
	}
	for i := range s {
		c.insertIn(top, s[i], fulls[i])
	}
	top.markFinal()
	c.stale, c.dels = c.stale[:0], 0
	c.top.Store(top)
}

// markFinal flags the final slots of a space no lookup sees yet (a
// bulk build's top level): plain IPv4 rules that no rule of another tuple
// both overlaps and outranks. A lookup that matches one has its answer
// once it has finished the slot's own tuple. Over the ClassBench 100k
// traces (TestRankedShape) this cuts the tuples a lookup probes from
// 2.41 to 1.49 on ipc1 and from 2.93 to 2.76 on fw1 (fw1's rules overlap
// across tuples), and leaves acl1's 1.06. Inserts that come later lower
// the other tuples' fin instead of finding the slots they overlap
// (unflag), and the next build (a regrid) marks afresh.
func (sp *rtSpace) markFinal() {
	for _, t := range sp.tuples {
		if !is4(t.kind) {
			continue
		}
		for s := range t.tab.live() {
			if s.aux == 0 && sp.unbeaten(t, s) {
				s.aux = slotFinal
				t.finals++
			}
		}
		if t.finals > 0 {
			sp.finHi = max(sp.finHi, t.fin)
		}
	}
}

// unbeaten reports whether no rule of sp outside tuple own both overlaps
// slot s and outranks it (writer only). A tuple whose lengths are all at
// most s's holds every rule that overlaps s under s's own key (two
// overlapping prefixes agree on the shorter one's bits, and both are at
// least the tuple's length): one chain to read. A kindAddr4P tuple's
// rules overlap s only on s's port, so s needs one itself. Any other
// tuple may hold one under many keys, so it counts as beating s if its
// bound does.
func (sp *rtSpace) unbeaten(own *rtTuple, s *rslot) bool {
	for _, t := range sp.tuples {
		if t == own || t.best >= s.rank {
			continue
		}
		if !is4(t.kind) || s.srcLen() < t.key.l[0] || s.dstLen() < t.key.l[1] ||
			t.kind == kindAddr4P && s.dport.n != 0 {
			return false
		}
		tab, beaten := t.tab, false
		// An IPv4 tuple holds plain slots and splits; a split's slot
		// (rank 0) carries its key (prefixes, and its port in kindAddr4P)
		// and any other port, so it beats s whenever its key overlaps s's.
		k := key4(s.src, s.dst, t.ms, t.md)
		if t.kind == kindAddr4P {
			k = portKey(k, s.dport.lo)
		}
		tab.chain(rtMix(k), func(j uint64) bool {
			o := &tab.slots[j]
			beaten = o.rank < s.rank && o.overlaps(s)
			return !beaten
		})
		if beaten {
			return false
		}
	}
	return true
}

// overlaps reports whether some IPv4 header passes both plain slots.
func (s *rslot) overlaps(o *rslot) bool {
	free := func(a, b uint8) uint32 { // the bits the shorter prefix leaves free
		return uint32(uint64(1)<<max(a, b) - 1)
	}
	if (s.src^o.src)&^free(s.ss, o.ss) != 0 || (s.dst^o.dst)&^free(s.sd, o.sd) != 0 {
		return false
	}
	cross := func(a, b span16) bool {
		return uint32(a.lo) <= uint32(b.lo)+uint32(b.n) && uint32(b.lo) <= uint32(a.lo)+uint32(a.n)
	}
	return cross(s.sport, o.sport) && cross(s.dport, o.dport) && (s.proto^o.proto)&s.pmask&o.pmask == 0
}

// unflag keeps final slots honest after a rule of rank r is inserted into
// the tuple keyed own of space sp: it may overlap and outrank a final
// slot of another tuple. Finding those would mean reading every key under
// r's prefixes in tuples finer than r, so the other tuples' fin drops to
// r's precedence instead, and their final slots hold only for better
// precedences. Once the fins are low, most inserts stop at finHi.
func (sp *rtSpace) unflag(own rtKey, r uint64) {
	p := uint32(r >> 32)
	if p >= sp.finHi {
		return
	}
	changed, hi := false, uint32(0)
	for _, e := range *sp.list.Load() {
		t := e.t
		if t.finals == 0 {
			continue
		}
		if p < t.fin && t.key != own {
			t.fin, changed = p, true
		}
		hi = max(hi, t.fin)
	}
	sp.finHi = hi
	if changed {
		sp.publish()
	}
}

// Regridding: the grid is chosen again when the IPv4 5-tuple rules have
// doubled, or fallen to a quarter, since the last choice, so that a table
// filled by inserts (a UPF's global table starts empty) gets the layout
// a bulk build of the same rules would. Rebuilding at doublings keeps
// its cost O(1) amortized per insert; the insert that triggers one takes
// the rebuild's time (about 1 us a rule), lookups never wait.
const regridMin = 64

func (c *RankedTuple) mayRegrid() {
	if c.plain < regridMin || (c.plain < 2*c.chose && 4*c.plain > c.chose) {
		return
	}
	type rule struct {
		s    rslot
		full *crule
	}
	var all []rule
	c.top.Load().rules(func(s rslot, full *crule) { all = append(all, rule{s, full}) })
	slices.SortFunc(all, func(a, b rule) int { return cmpU64(a.s.rank, b.s.rank) })
	s, fulls := make([]rslot, len(all)), make([]*crule, len(all))
	for i := range all {
		s[i], fulls[i] = all[i].s, all[i].full
	}
	plain := plainOf(s, fulls)
	g := chooseGrid(plain)
	if g == c.grid {
		c.chose = c.plain
		return
	}
	c.build(s, fulls, g, len(plain))
	c.moves++
}

// rules calls fn for every rule of the space and its splits: its slot
// (aux cleared) and its full form, if any (writer only).
func (sp *rtSpace) rules(fn func(rslot, *crule)) {
	for _, t := range sp.tuples {
		tab := t.tab
		for p := range tab.live() {
			sl := *p
			a := tab.auxOf(&sl)
			sl.aux = 0
			switch {
			case a == nil:
				fn(sl, nil)
			case a.sub != nil:
				a.sub.rules(fn)
			default:
				fn(sl, a.c)
			}
		}
	}
}

// live yields the table's full slots (writer only).
func (tab *rtTable) live() iter.Seq[*rslot] {
	return func(yield func(*rslot) bool) {
		for g, cw := range tab.ctrl {
			for m := ^cw & ctrlMSB; m != 0; m &= m - 1 {
				if !yield(&tab.slots[g*8+bits.TrailingZeros64(m)>>3]) {
					return
				}
			}
		}
	}
}

func newRtSpace(level uint8, parent *rtTuple, px uint64) *rtSpace {
	s := &rtSpace{tuples: make(map[rtKey]*rtTuple), level: level, parent: parent, px: px}
	s.list.Store(&[]rtRef{})
	s.best.Store(noRank)
	return s
}

// Lookup implements Classifier.
func (c *RankedTuple) Lookup(h *Header) (uint32, bool) {
	best := noRank
	if list := *c.pdr.top.list.Load(); len(list) > 0 {
		best = lookupIn(list, h, best)
	}
	if c.sess.rules.Load() > 0 {
		best = c.sess.lookup(h, best)
	}
	if top := c.top.Load(); top.best.Load() < best {
		best = top.lookup(h, best)
	}
	if best == noRank {
		return 0, false
	}
	return uint32(best), true
}

// lookup probes the space's tuples, best bound first: IPv4 headers take
// lookup4 over the space's IPv4 tuples (and a split's), and whatever it
// leaves (another kind, a slot that needs more than its own fields)
// goes to lookupAny from that tuple on.
func (s *rtSpace) lookup(h *Header, best uint64) uint64 {
	list := *s.list.Load()
	if h.SrcIP.Is4() && h.DstIP.Is4() {
		var i int
		if best, i = lookup4(list, h, best); i == len(list) {
			return best
		}
		list = list[i:]
	}
	return lookupAny(list, h, best)
}

// lookup4Go is lookupAny for an IPv4 header, as long as the tuples are
// IPv4 (kindAddr4, kindAddr4P) or a split's (kindPorts) and the matching
// slots hold their whole rule: the common case,
// kept free of calls and bounds checks. It returns the best rank so far
// and the first tuple it did not finish, or len(list); probing that tuple
// again from its first slot is harmless, as best only improves. On amd64,
// lookup4 is the same loop in assembly (lookup4_amd64.s); elsewhere it is
// this function.
func lookup4Go(list []rtRef, h *Header, best uint64) (uint64, int) {
	src, dst := uint32(h.SrcIP.Lo), uint32(h.DstIP.Lo)
	sport, dport, proto, qfi := h.SrcPort, h.DstPort, h.Proto, h.QFI
	n := len(list)
	for i := 0; i < n; i++ {
		e := &list[i]
		if e.best >= best {
			break
		}
		var k uint64
		switch e.kind {
		case kindAddr4:
			k = key4(src, dst, e.ms, e.md)
		case kindAddr4P:
			k = portKey(key4(src, dst, e.ms, e.md), dport)
		case kindPorts:
			k = portsKey(sport, dport, proto, qfi, e.ms, e.md)
		default:
			return best, i
		}
		x := rtMix(k)
		g, _ := bits.Mul64(x, e.ng)
		pat := rtH2(x) * ctrlLSB
		// Unchecked indexing: g < ng by the range reduction and the wrap
		// below, and a table has ng control words and 8 ng slots.
		ctrl, slots := unsafe.Pointer(unsafe.SliceData(e.ctrl)), unsafe.Pointer(unsafe.SliceData(e.slots))
		for {
			cw := atomic.LoadUint64((*uint64)(unsafe.Add(ctrl, g*8)))
			v := cw ^ pat
			for m := (v - ctrlLSB) &^ v &^ cw & ctrlMSB; m != 0; m &= m - 1 {
				sl := (*rslot)(unsafe.Add(slots, (g*8+uint64(bits.TrailingZeros64(m)>>3))*uint64(unsafe.Sizeof(rslot{}))))
				if sl.rank >= best {
					continue
				}
				if sl.miss(src, dst, 0, 0, sport, dport, proto) == 0 {
					if sl.ref() != 0 {
						return best, i
					}
					best = sl.rank
					// A final slot: only its own tuple may still hold a
					// better match, so finish this tuple and stop.
					if sl.aux == slotFinal && uint32(best>>32) < e.fin {
						n = i + 1
					}
				}
			}
			if cw&^(cw<<6)&ctrlMSB != 0 {
				break
			}
			if g++; g == e.ng {
				g = 0
			}
		}
	}
	return best, len(list)
}

// lookupAny probes tuples of any kind for any header. The header's
// fields are plain locals (not an hdr4): Go keeps a struct of more than
// four fields in memory, and the loop is short of registers already.
func lookupAny(list []rtRef, h *Header, best uint64) uint64 {
	src, dst := uint32(h.SrcIP.Lo), uint32(h.DstIP.Lo)
	// n4s, n4d: all ones where the address is not IPv4, so that any IPv4
	// prefix but /0 fails.
	var n4s, n4d uint32
	if !h.SrcIP.Is4() {
		n4s = ^uint32(0)
	}
	if !h.DstIP.Is4() {
		n4d = ^uint32(0)
	}
	sport, dport, proto := h.SrcPort, h.DstPort, h.Proto
	for i := range list {
		e := &list[i]
		if e.best >= best {
			break
		}
		var k uint64
		switch e.kind {
		case kindAddr4, kindAddr4P:
			if (n4s&e.ms)|(n4d&e.md) != 0 {
				continue
			}
			k = key4(src, dst, e.ms, e.md)
			if e.kind == kindAddr4P {
				k = portKey(k, dport)
			}
		case kindPorts:
			k = portsKey(sport, dport, proto, h.QFI, e.ms, e.md)
		default:
			k = e.t.hkey(h)
		}
		x := rtMix(k)
		g, _ := bits.Mul64(x, e.ng)
		pat := rtH2(x) * ctrlLSB
		for {
			cw := atomic.LoadUint64(&e.ctrl[g])
			v := cw ^ pat
			for m := (v - ctrlLSB) &^ v &^ cw & ctrlMSB; m != 0; m &= m - 1 {
				sl := &e.slots[g*8+uint64(bits.TrailingZeros64(m)>>3)]
				if sl.rank >= best {
					continue
				}
				if sl.miss(src, dst, n4s, n4d, sport, dport, proto) == 0 {
					if sl.ref() == 0 {
						best = sl.rank
					} else {
						best = e.tab.more(sl, h, best)
					}
				}
			}
			if cw&^(cw<<6)&ctrlMSB != 0 {
				break
			}
			if g++; g == e.ng {
				g = 0
			}
		}
	}
	return best
}

// more finishes a slot whose prefilter matched: a full rule, or a split.
func (tab *rtTable) more(sl *rslot, h *Header, best uint64) uint64 {
	a := &(*tab.aux.Load())[sl.ref()-1]
	if a.sub == nil {
		if a.c.match(h) {
			return sl.rank
		}
		return best
	}
	if (a.c == nil || a.c.match(h)) && a.sub.best.Load() < best {
		return a.sub.lookup(h, best)
	}
	return best
}

// hkey is the tuple's key for a header. An IPv4 tuple first needs IPv4
// addresses where its masks are not /0 (see lookup).
func (t *rtTuple) hkey(h *Header) uint64 {
	switch t.kind {
	case kindAddr4:
		return key4(uint32(h.SrcIP.Lo), uint32(h.DstIP.Lo), t.ms, t.md)
	case kindAddr4P:
		return portKey(key4(uint32(h.SrcIP.Lo), uint32(h.DstIP.Lo), t.ms, t.md), h.DstPort)
	case kindPorts:
		ms, md := portMasks(t.sp, t.dp, t.pm, t.qm)
		return portsKey(h.SrcPort, h.DstPort, h.Proto, h.QFI, ms, md)
	}
	// Halves are folded before multiplying: collisions only cost a
	// verification, and two multiplies are cheaper than four.
	return (h.SrcIP.Hi&t.sHi^bits.RotateLeft64(h.SrcIP.Lo&t.sLo, 23))*k1 +
		(h.DstIP.Hi&t.dHi^bits.RotateLeft64(h.DstIP.Lo&t.dLo, 41))*k2
}

// rtMix spreads a key: the high bits pick the group (by multiply-shift
// range reduction, so tables need not be powers of two), bits 24-30 the
// control byte's hash. It folds the halves of a 128-bit product, as
// wyhash does, at the cost of one multiply. A plain multiplicative hash
// ((k ^ k>>32) * k1) crowded keys whose bits sit high in the word (a /16
// prefix is d<<16) on about half the groups: 65,536 /16 keys reach 7,155
// of 13,777 (TestRtMixSpreadsPrefixKeys), and a fw1_100k lookup read 3.74
// control words against 3.10 now (TestRankedShape).
func rtMix(k uint64) uint64 {
	hi, lo := bits.Mul64(k^k1, k2)
	return hi ^ lo
}

func rtH2(x uint64) uint64 { return (x >> 24) & 0x7f }

// exactKey is a tuple's key for a header without hashing (writer only):
// rules with equal exact keys share a chain and may share a split.
func (t *rtTuple) exactKey(h *Header) [4]uint64 {
	switch t.kind {
	case kindAddr4P: // not portKey: two keys may hash alike
		return [4]uint64{key4(uint32(h.SrcIP.Lo), uint32(h.DstIP.Lo), t.ms, t.md), uint64(h.DstPort)}
	case kindAddr4, kindPorts:
		return [4]uint64{t.hkey(h)}
	}
	return [4]uint64{h.SrcIP.Hi & t.sHi, h.SrcIP.Lo & t.sLo, h.DstIP.Hi & t.dHi, h.DstIP.Lo & t.dLo}
}

// keyOf is the tuple a rule belongs to at a level.
func (rt *RankedTuple) keyOf(level uint8, s *rslot, c *crule) rtKey {
	if level == 0 {
		if c == nil {
			k := rtKey{kind: kindAddr4, l: [4]uint8{rt.grid.relax(s.srcLen()), rt.grid.relax(s.dstLen())}}
			if rt.grid.keyed(s) {
				k.kind, k.l[2] = kindAddr4P, 16
			}
			return k
		}
		return rtKey{kind: kindAddr, l: [4]uint8{relaxIP(c.srcLen), relaxIP(c.dstLen)}}
	}
	k := rtKey{kind: kindPorts, l: [4]uint8{
		relaxPort(PortRange{s.sport.lo, s.sport.lo + s.sport.n}),
		relaxPort(PortRange{s.dport.lo, s.dport.lo + s.dport.n}), s.pmask}}
	if c != nil {
		k.l[3] = c.qfiMask
	}
	return k
}

func newRtTuple(owner *rtSpace, k rtKey) *rtTuple {
	t := &rtTuple{kind: k.kind, owner: owner, key: k, best: noRank, fin: ^uint32(0)}
	m4 := func(l uint8) uint32 { return ^uint32(0) << (32 - uint(l)) }
	switch k.kind {
	case kindAddr4, kindAddr4P:
		t.ms, t.md = m4(k.l[0]), m4(k.l[1])
	case kindPorts:
		t.sp, t.dp, t.pm, t.qm = mask16(k.l[0]), mask16(k.l[1]), k.l[2], k.l[3]
	default:
		t.sHi, t.sLo = mask128(k.l[0])
		t.dHi, t.dLo = mask128(k.l[1])
	}
	t.tab = newRtTable(1)
	return t
}

// mask16 is the mask of a 16-bit prefix of length l.
func mask16(l uint8) uint16 { return ^uint16(0) << (16 - uint(l)) }

func newRtTable(groups int) *rtTable {
	// One slot past the groups is the sentinel lookups test when a
	// probe has no candidate.
	tab := &rtTable{ctrl: make([]uint64, groups), slots: make([]rslot, groups*8+1), ng: uint64(groups)}
	tab.slots[groups*8].rank = noRank
	for i := range tab.ctrl {
		tab.ctrl[i] = ctrlEmpty * ctrlLSB
	}
	tab.aux.Store(&[]rtAux{})
	return tab
}

// slotHeader is a header carrying a slot's values: the tuple key of the
// slot's rule (or split) is the key of this header.
func slotHeader(s *rslot, a *rtAux) Header {
	if a != nil && a.c != nil {
		return ruleHeader(a.c)
	}
	h := Header{SrcPort: s.sport.lo, DstPort: s.dport.lo, Proto: s.proto}
	if s.ss < 32 {
		h.SrcIP = AddrFrom4(s.src)
	}
	if s.sd < 32 {
		h.DstIP = AddrFrom4(s.dst)
	}
	return h
}

// auxOf returns the slot's aux entry in tab, or nil.
func (tab *rtTable) auxOf(s *rslot) *rtAux {
	if s.ref() == 0 {
		return nil
	}
	return &(*tab.aux.Load())[s.ref()-1]
}

// keyOfSlot returns the exact key and hash of a slot in t (writer only).
func (t *rtTuple) keyOfSlot(tab *rtTable, s *rslot) ([4]uint64, uint64) {
	// Slots that hold their whole key skip building a header: every
	// IPv4 slot (its rules and splits are IPv4 prefixes, and in kindAddr4P
	// a port), and kindPorts slots without a full rule (no QFI).
	switch {
	case t.kind == kindAddr4:
		k := key4(s.src, s.dst, t.ms, t.md)
		return [4]uint64{k}, rtMix(k)
	case t.kind == kindAddr4P:
		k := key4(s.src, s.dst, t.ms, t.md)
		return [4]uint64{k, uint64(s.dport.lo)}, rtMix(portKey(k, s.dport.lo))
	case t.kind == kindPorts && s.ref() == 0:
		ms, md := portMasks(t.sp, t.dp, t.pm, t.qm)
		k := portsKey(s.sport.lo, s.dport.lo, s.proto, 0, ms, md)
		return [4]uint64{k}, rtMix(k)
	}
	h := slotHeader(s, tab.auxOf(s))
	return t.exactKey(&h), rtMix(t.hkey(&h))
}

// place writes s into the first never-used slot of x's chain and
// publishes it. The caller has reserved room.
func (tab *rtTable) place(x uint64, s rslot) {
	g, _ := bits.Mul64(x, tab.ng)
	h2 := rtH2(x)
	for {
		cw := tab.ctrl[g]
		if e := cw &^ (cw << 6) & ctrlMSB; e != 0 {
			i := uint64(bits.TrailingZeros64(e) >> 3)
			tab.slots[g*8+i] = s
			atomic.StoreUint64(&tab.ctrl[g], cw&^(0xff<<(8*i))|h2<<(8*i))
			tab.used++
			return
		}
		if g++; g == tab.ng {
			g = 0
		}
	}
}

// addAux appends an aux entry and returns its slot reference.
func (tab *rtTable) addAux(a rtAux) uint32 {
	old := *tab.aux.Load()
	next := append(old, a) // entries below len(old) are never written again
	tab.aux.Store(&next)
	return uint32(len(next))
}

// chain calls fn for every full slot of x's chain whose control byte
// holds x's hash bits (writer only), until fn returns false.
func (tab *rtTable) chain(x uint64, fn func(j uint64) bool) { ctrlChain(tab.ctrl, tab.ng, x, fn) }

// ctrlChain walks the control words of a Swiss-style table of ng groups
// (rtTable, sessTable) from x's group, calling fn for every full slot
// whose control byte holds x's hash bits, until fn returns false or a
// group has an empty byte (writer only).
func ctrlChain(ctrl []uint64, ng, x uint64, fn func(j uint64) bool) {
	g, _ := bits.Mul64(x, ng)
	h2 := rtH2(x)
	pat := h2 * ctrlLSB
	for {
		cw := ctrl[g]
		v := cw ^ pat
		for m := (v - ctrlLSB) &^ v &^ cw & ctrlMSB; m != 0; m &= m - 1 {
			i := uint64(bits.TrailingZeros64(m) >> 3)
			// The zero-byte test can flag a byte above a match; check it.
			if (cw>>(8*i))&0xff == h2 && !fn(g*8+i) {
				return
			}
		}
		if cw&^(cw<<6)&ctrlMSB != 0 {
			return
		}
		if g++; g == ng {
			g = 0
		}
	}
}

// kill marks slot j deleted.
func (tab *rtTable) kill(j uint64) {
	g, i := j/8, j%8
	cw := tab.ctrl[g]
	atomic.StoreUint64(&tab.ctrl[g], cw&^(0xff<<(8*i))|ctrlDeleted<<(8*i))
}

// reserve makes room for one more slot: a table seven eighths used is
// rebuilt, without its deleted slots, half full.
func (t *rtTuple) reserve() *rtTable {
	tab := t.tab
	if (tab.used+1)*8 <= int(tab.ng)*8*7 {
		return tab
	}
	live := 0
	for _, cw := range tab.ctrl {
		live += bits.OnesCount64(^cw & ctrlMSB)
	}
	t.rebuild((live + 1) * 2)
	return t.tab
}

// rebuild moves t's live slots to a new table of at least n slots and
// publishes it.
func (t *rtTuple) rebuild(n int) {
	tab := t.tab
	next := newRtTable(max(1, (n+7)/8))
	oldAux := *tab.aux.Load()
	var aux []rtAux
	for p := range tab.live() {
		s := *p
		_, x := t.keyOfSlot(tab, &s)
		if s.ref() != 0 {
			aux = append(aux, oldAux[s.ref()-1])
			s.aux = uint32(len(aux))
		}
		next.place(x, s)
	}
	next.aux.Store(&aux)
	t.tab = next
	t.owner.publish()
}

// Insert implements Classifier.
func (c *RankedTuple) Insert(r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	cr := compile(&r)
	c.mu.Lock()
	defer c.mu.Unlock()
	// Ask for the ID's index entry and the rule's table group at once:
	// at 100,000 rules both are cache misses, and waiting for them in
	// turn was most of an insert.
	c.locs.prefetch(r.ID)
	pdr := isPDR(&cr)
	top := c.top.Load()
	var s rslot
	var full *crule
	var k rtKey // the rule's level-0 tuple
	if !pdr {
		s, full = slotOf(&cr)
		k = c.keyOf(0, &s, full)
		top.prefetchIn(k, &s, full)
	}
	if c.locs.has(r.ID) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	if c.sess.locs.has(r.ID) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	if len(c.pdr.locs) > 0 {
		if _, dup := c.pdr.locs[r.ID]; dup {
			return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
		}
	}
	if pdr {
		c.insertPDR(cr)
		return nil
	}
	c.insertIn(top, s, full)
	top.unflag(k, s.rank)
	if full == nil {
		c.plain++
		c.mayRegrid()
	}
	return nil
}

// prefetchIn asks for the lines insertIn will read and write first: the
// control word and slots of the group where the rule's key starts, in
// the tuple the rule belongs to (if that exists yet).
func (sp *rtSpace) prefetchIn(k rtKey, s *rslot, full *crule) {
	t := sp.tuples[k]
	if t == nil {
		return
	}
	h := slotHeader(s, &rtAux{c: full})
	t.tab.prefetchGroup(rtMix(t.hkey(&h)))
}

// prefetchGroup asks for the control word and the slots of the group
// where x's probe starts.
func (tab *rtTable) prefetchGroup(x uint64) {
	g, _ := bits.Mul64(x, tab.ng)
	prefetch(unsafe.Pointer(&tab.ctrl[g]))
	sl := unsafe.Pointer(&tab.slots[g*8])
	for off := uintptr(0); off < 8*unsafe.Sizeof(rslot{}); off += 64 {
		prefetch(unsafe.Add(sl, off))
	}
}

// insertIn adds a rule (slot s, full form if any) to space sp.
func (c *RankedTuple) insertIn(sp *rtSpace, s rslot, full *crule) {
	k := c.keyOf(sp.level, &s, full)
	t := sp.tuples[k]
	if t == nil {
		t = newRtTuple(sp, k)
		sp.tuples[k] = t
	}
	tab := t.reserve()
	h := slotHeader(&s, &rtAux{c: full})
	x, key := rtMix(t.hkey(&h)), t.exactKey(&h)

	// Find the key's split, or its rules.
	same := make([]uint64, 0, rtSplitAt)
	var split *rtSpace
	tab.chain(x, func(j uint64) bool {
		o := &tab.slots[j]
		if ok, _ := t.keyOfSlot(tab, o); ok != key {
			return true
		}
		if a := tab.auxOf(o); a != nil && a.sub != nil {
			split = a.sub
			return false
		}
		same = append(same, j)
		return true
	})
	switch {
	case split != nil:
		c.insertIn(split, s, full)
		t.lower(split.best.Load())
		return
	case sp.level == 0 && len(same)+1 > rtSplitAt && c.splittable(t, same, &s, full):
		sub := newRtSpace(1, t, x)
		for _, j := range same {
			o := tab.slots[j]
			var of *crule
			if a := tab.auxOf(&o); a != nil {
				of = a.c
			}
			o.aux = 0
			c.insertIn(sub, o, of)
		}
		c.insertIn(sub, s, full)
		ss := rslot{sport: span16{0, 0xffff}, dport: span16{0, 0xffff}, ss: 32, sd: 32}
		a := rtAux{sub: sub}
		switch t.kind {
		case kindAddr4P:
			ss.dport = span16{s.dport.lo, 0} // the key's port: keyOfSlot and rebuild hash it
			fallthrough
		case kindAddr4:
			ss.src, ss.ss, ss.dst, ss.sd = s.src&t.ms, 32-k.l[0], s.dst&t.md, 32-k.l[1]
		default:
			a.c = t.keyRule(full)
		}
		ss.aux = tab.addAux(a)
		tab.place(x, ss)
		for _, j := range same {
			tab.kill(j)
		}
		t.count += 1 - len(same)
		t.lower(sub.best.Load())
		return
	}
	if full != nil {
		s.aux = tab.addAux(rtAux{c: full})
	}
	tab.place(x, s)
	t.count++
	c.locs.put(uint32(s.rank), rtLoc{t, x})
	t.lower(s.rank)
}

// splittable: a port split helps when at least a quarter of the key's
// rules (s and the slots same of t) have a port, protocol or QFI to hash
// on. In a kindAddr4P tuple the rules of a key share their destination
// port already, and a split helps only if they differ in another field
// it hashes (their level-1 keys are not all one); otherwise they stay a
// chain, as chooseGrid's model assumes.
func (c *RankedTuple) splittable(t *rtTuple, same []uint64, s *rslot, full *crule) bool {
	tab := t.tab
	n := 0
	k0, x0 := c.subKey(s, full)
	differ := false
	if k0.l != [4]uint8{} {
		n++
	}
	for _, j := range same {
		o := &tab.slots[j]
		var of *crule
		if a := tab.auxOf(o); a != nil {
			of = a.c
		}
		k, x := c.subKey(o, of)
		if k.l != [4]uint8{} {
			n++
		}
		differ = differ || k != k0 || x != x0
	}
	if t.kind == kindAddr4P && !differ {
		return false
	}
	return n*4 >= len(same)+1
}

// subKey is a rule's level-1 tuple and exact key there (writer only).
func (c *RankedTuple) subKey(s *rslot, full *crule) (rtKey, uint64) {
	k := c.keyOf(1, s, full)
	h := slotHeader(s, &rtAux{c: full})
	ms, md := portMasks(mask16(k.l[0]), mask16(k.l[1]), k.l[2], k.l[3])
	return k, portsKey(h.SrcPort, h.DstPort, h.Proto, h.QFI, ms, md)
}

// keyRule is a rule matching exactly the headers whose key (in a kindAddr
// tuple) is that of c.
func (t *rtTuple) keyRule(c *crule) *crule {
	k := &crule{src: c.src.masked(t.key.l[0]), srcLen: t.key.l[0], dst: c.dst.masked(t.key.l[1]), dstLen: t.key.l[1],
		sport: PortRange{0, 0xffff}, dport: PortRange{0, 0xffff}}
	return k
}

// lower takes a rule or split of rank r into t's bound, publishing the
// space's list (and its parents' bounds) when the bound improves.
func (t *rtTuple) lower(r uint64) {
	if r >= t.best {
		return
	}
	t.best = r
	t.owner.publish()
}

// publish sorts the space's tuples by bound and makes the list visible;
// a split's bound propagates to the tuple holding it.
func (s *rtSpace) publish() {
	list := make([]rtRef, 0, len(s.tuples))
	for _, t := range s.tuples {
		ms, md := t.ms, t.md
		if t.kind == kindPorts {
			ms, md = portMasks(t.sp, t.dp, t.pm, t.qm)
		}
		list = append(list, rtRef{best: t.best, ms: ms, md: md, kind: t.kind, fin: t.fin,
			ng: t.tab.ng, ctrl: t.tab.ctrl, slots: t.tab.slots, tab: t.tab, t: t})
	}
	slices.SortFunc(list, func(a, b rtRef) int {
		if a.best != b.best {
			return cmpU64(a.best, b.best)
		}
		for i := range a.t.key.l {
			if a.t.key.l[i] != b.t.key.l[i] {
				return int(a.t.key.l[i]) - int(b.t.key.l[i])
			}
		}
		return int(a.t.key.kind) - int(b.t.key.kind)
	})
	s.list.Store(&list)
	best := noRank
	if len(list) > 0 {
		best = list[0].best
	}
	s.best.Store(best)
	if s.parent != nil {
		s.parent.lower(best)
	}
}

// Delete implements Classifier.
func (c *RankedTuple) Delete(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.locs.get(id)
	if ok {
		// Ask for the rule's group before the index's own bookkeeping, so
		// that the two overlap (see Insert).
		l.t.tab.prefetchGroup(l.x)
		c.locs.del(id)
	} else {
		if err := c.deletePDR(id); err != nil {
			return fmt.Errorf("rankedtuple: %w", err)
		}
		return nil
	}
	t := l.t
	tab := t.tab
	var rank uint64
	var plain bool
	tab.chain(l.x, func(j uint64) bool {
		o := &tab.slots[j]
		if uint32(o.rank) != id {
			return true
		}
		if a := tab.auxOf(o); a != nil && a.sub != nil {
			return true
		}
		rank, plain = o.rank, o.ref() == 0
		tab.kill(j)
		return false
	})
	c.removed(t, rank)
	c.dels++
	if c.dels > 256+c.locs.len()/16 || len(c.stale) > 64 {
		c.refresh()
	}
	if plain {
		c.plain--
		c.mayRegrid()
	}
	return nil
}

// removed does the bookkeeping after a slot of rank r left t: an empty
// tuple leaves its space, an empty split leaves its parent, and bounds
// that may now be too good are queued for refresh.
func (c *RankedTuple) removed(t *rtTuple, r uint64) {
	t.count--
	sp := t.owner
	if t.count > 0 {
		if r <= t.best {
			c.markStale(t)
		}
		return
	}
	delete(sp.tuples, t.key)
	sp.publish()
	if sp.parent == nil {
		return
	}
	if len(sp.tuples) > 0 {
		c.markStale(sp.parent)
		return
	}
	// The split is empty: drop its slot from the parent.
	pt := sp.parent
	tab := pt.tab
	tab.chain(sp.px, func(j uint64) bool {
		if a := tab.auxOf(&tab.slots[j]); a != nil && a.sub == sp {
			tab.kill(j)
			return false
		}
		return true
	})
	c.removed(pt, 0)
}

// markStale queues t's bound (and a split's parent's) for refresh.
func (c *RankedTuple) markStale(t *rtTuple) {
	for ; t != nil && !t.stale; t = t.owner.parent {
		t.stale = true
		c.stale = append(c.stale, t)
	}
}

// refresh recomputes the bounds of stale tuples, splits first.
func (c *RankedTuple) refresh() {
	slices.SortFunc(c.stale, func(a, b *rtTuple) int { return int(b.owner.level) - int(a.owner.level) })
	for _, t := range c.stale {
		t.stale = false
		if t.count == 0 {
			continue
		}
		tab := t.tab
		b := noRank
		for s := range tab.live() {
			r := s.rank
			if a := tab.auxOf(s); a != nil && a.sub != nil {
				r = a.sub.best.Load()
			}
			b = min(b, r)
		}
		if b != t.best {
			t.best = b
			t.owner.publish()
		}
	}
	c.stale, c.dels = c.stale[:0], 0
}

// Len implements Classifier.
func (c *RankedTuple) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.locs.len() + c.sess.locs.len() + len(c.pdr.locs)
}

// MemoryBytes implements Classifier: control words, slots, full rules
// and splits, tuple lists, the ID indexes, and the PDR engines.
func (c *RankedTuple) MemoryBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.top.Load().memory() + c.locs.bytes() + c.sess.memory() + c.pdr.top.memory() + 24*len(c.pdr.locs)
}

func (s *rtSpace) memory() int {
	m := 96 + 16*len(*s.list.Load()) + 48*len(s.tuples)
	for _, t := range s.tuples {
		tab := t.tab
		m += 160 + 8*len(tab.ctrl) + 32*len(tab.slots)
		for _, a := range *tab.aux.Load() {
			m += 16
			if a.c != nil {
				m += 64
				if a.c.ext != nil {
					m += 64
				}
			}
			if a.sub != nil {
				m += a.sub.memory()
			}
		}
	}
	return m
}

// Name implements Classifier.
func (c *RankedTuple) Name() string { return string(KindRankedTuple) }

// Tuples reports the number of level-0 tuples of both engines (for
// diagnostics).
func (c *RankedTuple) Tuples() int {
	return len(*c.top.Load().list.Load()) + len(*c.pdr.top.list.Load())
}
