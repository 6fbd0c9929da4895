package classify

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// tssCore is the tuple-space engine behind TSS: immutable bucket lists
// behind atomic slot pointers, tables copied and published whole when they
// grow, the per-space tuple list copied on change. A lookup therefore
// never waits and never sees half an update.
type tssCore struct {
	mu    sync.Mutex
	top   *space
	locs  map[uint32]loc
	reg   []*tuple // tuples by ID, for locs
	free  []uint32
	stale int // deletes since the last refresh of best bounds
}

// loc is where a rule's bucket lives, for Delete: tuple ID and bucket
// fingerprint, packed into 12 bytes to keep the index small.
type loc struct{ ti, fpLo, fpHi uint32 }

// splitAt is the bucket size above which a level-0 bucket is split by
// ports; chosen by measurement on ClassBench (8-16 is flat, 4 costs memory).
const splitAt = 8

// space is one tuple space: the top level, or the split of one bucket.
type space struct {
	level  uint8
	list   atomic.Pointer[[]tupleRef]
	tuples map[tupleKey]*tuple // writer-only
	parent *tuple              // level 1: the tuple and bucket this splits
	pfp    uint64
}

type tupleRef struct {
	best uint64 // no rule in t ranks better (lower) than this
	t    *tuple
}

// tupleKey is a tuple's identity: the field lengths it hashes.
// Level 0: source, destination, UE IP prefix lengths, TEID (0 or 32),
// source interface (0 or 8).
// Level 1: source port, destination port prefix lengths, protocol, QFI.
// Level 2 (TSS, and the split of a level-1 bucket): all eight, unrelaxed.
type tupleKey [8]uint8

type tuple struct {
	level uint8
	ext   bool // level 0: hashes UE IP or TEID
	// masks, level 0
	sHi, sLo, dHi, dLo, uHi, uLo uint64
	teid                         uint32
	srcIf                        uint8
	// masks, level 1
	sp, dp      uint16
	proto, qfi  uint8
	tab         atomic.Pointer[table]
	owner       *space
	key         tupleKey
	id          uint32
	count, used int // writer-only: rules, and non-empty slots (tombstones included)
	best        uint64
	bestStale   bool
}

// table is one tuple's open-addressing hash table, with a one-hash
// presence filter (8 bits a slot) in front: most probes miss, and the
// filter answers them from cache instead of touching the slots. Filter
// bits are set before their bucket is published and cleared only by a
// rehash, so a clear bit always means "no bucket".
type table struct {
	mask   uint64
	fmask  uint64
	slots  []slot
	filter []uint64
}

func newTable(size int) *table {
	return &table{mask: uint64(size - 1), fmask: uint64(size*8 - 1), slots: make([]slot, size), filter: make([]uint64, size/8)}
}

// mayHave tests the filter; fingerprint bits 40-63 index it, the low bits
// the slots.
func (t *table) mayHave(fp uint64) bool {
	b := (fp >> 40) & t.fmask
	return atomic.LoadUint64(&t.filter[b>>6])&(1<<(b&63)) != 0
}

func (t *table) mark(fp uint64) {
	b := (fp >> 40) & t.fmask
	atomic.OrUint64(&t.filter[b>>6], 1<<(b&63))
}

type slot struct {
	n  atomic.Pointer[node]
	fp uint64 // written once, before n is first published
}

// node is one immutable bucket entry: a bucket is a rank-ordered linked
// list of rule nodes, or a single node holding a split (sub != nil, with
// r.rank the best rank below it). A tombstone has r.rank == noRank.
type node struct {
	r    crule
	next *node
	sub  *space
}

func newSpace(level uint8, parent *tuple, pfp uint64) *space {
	s := &space{level: level, tuples: make(map[tupleKey]*tuple), parent: parent, pfp: pfp}
	s.list.Store(&[]tupleRef{})
	return s
}

const (
	k1 = 0x9e3779b97f4a7c15
	k2 = 0xc2b2ae3d27d4eb4f
	k3 = 0x165667b19e3779f9
	k4 = 0xd6e8feb86659fd93
	k5 = 0xff51afd7ed558ccd
	k6 = 0xc4ceb9fe1a85ec53
	k7 = 0x27d4eb2f165667c5
)

// hash fingerprints the header fields the tuple keys on, masked by its
// lengths. Inserting rules hash a header built from the rule's values.
func (t *tuple) hash(h *Header) uint64 {
	var x uint64
	if t.level == 0 {
		// Halves are folded before multiplying: collisions only cost a
		// verification, and two multiplies are cheaper than four.
		x = (h.SrcIP.Hi&t.sHi^bits.RotateLeft64(h.SrcIP.Lo&t.sLo, 23))*k1 +
			(h.DstIP.Hi&t.dHi^bits.RotateLeft64(h.DstIP.Lo&t.dLo, 41))*k2
		if t.ext {
			x ^= (h.UEIP.Hi&t.uHi^bits.RotateLeft64(h.UEIP.Lo&t.uLo, 7))*k6 ^
				(uint64(h.TEID&t.teid)|uint64(h.SourceInterface&t.srcIf)<<32)*k7
		}
	} else {
		x = (uint64(h.SrcPort&t.sp)<<32 | uint64(h.DstPort&t.dp)<<16 | uint64(h.Proto&t.proto)<<8 | uint64(h.QFI&t.qfi)) * k1
		if t.level == 2 {
			x ^= (h.SrcIP.Hi&t.sHi)*k2 ^ (h.SrcIP.Lo&t.sLo)*k3 ^ (h.DstIP.Hi&t.dHi)*k4 ^ (h.DstIP.Lo&t.dLo)*k5 ^
				(h.UEIP.Hi&t.uHi)*k6 ^ (h.UEIP.Lo&t.uLo)*k7 ^ uint64(h.TEID&t.teid)*k3*k5
		}
	}
	x ^= x >> 32
	x *= k5
	x ^= x >> 29
	return x
}

// keyOf returns the tuple a compiled rule belongs to at a level: its own
// lengths relaxed to the grid.
func keyOf(level uint8, c *crule) tupleKey {
	if level == 0 {
		// A PDR that names its session (TEID or UE IP) is keyed by that
		// alone: sessions then share a handful of tuples and a bucket is
		// one session's PDRs, split by ports and QFI when large. The
		// source interface joins the key so that an uplink packet never
		// probes the session's downlink PDRs (and the reverse). Other
		// rules key on their SDF addresses.
		if c.ext != nil && (c.ext.teidMask != 0 || c.ext.ueLen != 0) {
			k := tupleKey{0, 0, relaxIP(c.ext.ueLen), 0}
			if c.ext.teidMask != 0 {
				k[3] = 32
			}
			if c.ext.srcIfMask != 0 {
				k[4] = 8
			}
			return k
		}
		return tupleKey{relaxIP(c.srcLen), relaxIP(c.dstLen), 0, 0}
	}
	if level == 1 {
		return tupleKey{relaxPort(c.sport), relaxPort(c.dport), c.protoMask, c.qfiMask}
	}
	k := tupleKey{c.srcLen, c.dstLen, 0, 0, portLen(c.sport), portLen(c.dport), c.protoMask, c.qfiMask}
	if c.ext != nil {
		k[2] = c.ext.ueLen
		if c.ext.teidMask != 0 {
			k[3] = 32
		}
	}
	return k
}

// relaxIP rounds a prefix length down to the grid: multiples of 8 inside
// the IPv4-mapped range (/96 + v4 length), multiples of 16 below it.
func relaxIP(l uint8) uint8 {
	if l > 96 {
		return 96 + (l-96)&^15
	}
	return l &^ 15
}

// relaxPort is the prefix length all ports of the range share with its
// low end, rounded down to 0, 8 or 16.
func relaxPort(p PortRange) uint8 { return portLen(p) &^ 7 }

// portLen is the prefix length all ports of the range share with its low end.
func portLen(p PortRange) uint8 { return uint8(16 - bits.Len16(p.Lo^p.Hi)) }

func newTuple(owner *space, k tupleKey) *tuple {
	t := &tuple{level: owner.level, owner: owner, key: k, best: noRank}
	ports := k[:4]
	if owner.level != 1 {
		t.sHi, t.sLo = mask128(k[0])
		t.dHi, t.dLo = mask128(k[1])
		t.uHi, t.uLo = mask128(k[2])
		if k[3] != 0 {
			t.teid = ^uint32(0)
		}
		t.ext = k[2] != 0 || k[3] != 0
		ports = k[4:]
		if owner.level == 0 && k[4] != 0 {
			t.srcIf = 0xff
		}
	}
	if owner.level != 0 {
		t.sp = ^uint16(0) << (16 - uint(ports[0]))
		t.dp = ^uint16(0) << (16 - uint(ports[1]))
		t.proto, t.qfi = ports[2], ports[3]
	}
	t.tab.Store(newTable(8))
	return t
}

// ruleHeader is a header carrying a rule's values: hashing it with any
// tuple the rule belongs to gives the fingerprint of every header it matches.
func ruleHeader(c *crule) Header {
	h := Header{SrcIP: c.src, DstIP: c.dst, SrcPort: c.sport.Lo, DstPort: c.dport.Lo, Proto: c.proto, QFI: c.qfi}
	if c.ext != nil {
		h.UEIP, h.TEID, h.SourceInterface = c.ext.ue, c.ext.teid, c.ext.srcIf
	}
	return h
}

// find returns the slot index and bucket with fingerprint fp, or -1.
func (t *tuple) find(fp uint64) (int, *node) {
	tab := t.tab.Load()
	for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
		n := tab.slots[j].n.Load()
		if n == nil {
			return -1, nil
		}
		if tab.slots[j].fp == fp {
			return int(j), n
		}
	}
}

// put publishes n as the bucket for fp, growing the table first if needed.
func (t *tuple) put(fp uint64, n *node) {
	if i, _ := t.find(fp); i >= 0 {
		t.tab.Load().slots[i].n.Store(n)
		return
	}
	tab := t.tab.Load()
	if (t.used+1)*4 > len(tab.slots)*3 { // load factor 0.75
		tab = t.rehash()
	}
	tab.mark(fp)
	for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
		if tab.slots[j].n.Load() == nil {
			tab.slots[j].fp = fp
			tab.slots[j].n.Store(n)
			t.used++
			return
		}
	}
}

// rehash copies the live buckets into a fresh table sized for them,
// dropping tombstones, and publishes it.
func (t *tuple) rehash() *table {
	old := t.tab.Load()
	live := 0
	for i := range old.slots {
		if n := old.slots[i].n.Load(); n != nil && n.r.rank != noRank {
			live++
		}
	}
	size := 8
	for size < (live+1)*2 { // load at most 0.5 after a rehash
		size *= 2
	}
	tab := newTable(size)
	for i := range old.slots {
		n := old.slots[i].n.Load()
		if n == nil || n.r.rank == noRank {
			continue
		}
		fp := old.slots[i].fp
		tab.mark(fp)
		for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
			if tab.slots[j].n.Load() == nil {
				tab.slots[j].fp = fp
				tab.slots[j].n.Store(n)
				break
			}
		}
	}
	t.used = live
	t.tab.Store(tab)
	return tab
}

func (c *tssCore) insertIn(s *space, cr crule) {
	k := keyOf(s.level, &cr)
	t := s.tuples[k]
	if t == nil {
		t = newTuple(s, k)
		s.tuples[k] = t
		c.register(t)
	}
	h := ruleHeader(&cr)
	fp := t.hash(&h)
	_, n := t.find(fp)
	switch {
	case n == nil || n.r.rank == noRank && n.sub == nil:
		t.put(fp, newNode(cr, nil))
		c.locs[uint32(cr.rank)] = packLoc(t.id, fp)
	case n.sub != nil:
		c.insertIn(n.sub, cr)
		if cr.rank < n.r.rank {
			t.put(fp, &node{r: crule{rank: cr.rank}, sub: n.sub})
		}
	default:
		head := withRule(n, cr)
		if s.level < 2 && length(head) > splitAt && splittable(s.level+1, head) {
			sub := newSpace(s.level+1, t, fp)
			for m := head; m != nil; m = m.next {
				c.insertIn(sub, m.r)
			}
			t.put(fp, &node{r: crule{rank: head.r.rank}, sub: sub})
		} else {
			t.put(fp, head)
			c.locs[uint32(cr.rank)] = packLoc(t.id, fp)
		}
	}
	t.count++
	if cr.rank < t.best {
		t.best = cr.rank
		s.publish()
	}
}

// newNode makes a bucket node holding rule r. A rule's PDI fields (ext)
// are copied into the node's allocation: a PDR probe reads slot, node and
// fields one after another, and fields beside the node often arrive with
// it (on the 100,000-session table, a third of lookup time went to
// waiting for fields allocated elsewhere).
func newNode(r crule, next *node) *node {
	if r.ext == nil {
		return &node{r: r, next: next}
	}
	x := &struct {
		node
		ext extMatch
	}{node: node{r: r, next: next}, ext: *r.ext}
	x.r.ext = &x.ext
	return &x.node
}

// withRule returns a bucket list with cr inserted in rank order, copying
// only the nodes before it and sharing the rest.
func withRule(head *node, cr crule) *node {
	if head == nil || cr.rank < head.r.rank {
		return newNode(cr, head)
	}
	return newNode(head.r, withRule(head.next, cr))
}

// withoutRule returns a bucket list without the rule with this ID (nil
// if it empties), sharing the nodes after it, and the rule removed (rank
// noRank if none).
func withoutRule(head *node, id uint32) (*node, crule) {
	if head == nil {
		return nil, crule{rank: noRank}
	}
	if uint32(head.r.rank) == id {
		return head.next, head.r
	}
	rest, r := withoutRule(head.next, id)
	return newNode(head.r, rest), r
}

func length(n *node) int {
	k := 0
	for ; n != nil; n = n.next {
		k++
	}
	return k
}

// splittable: a split to level helps when at least a quarter of the
// bucket has a field to hash on that the level above did not: a port,
// protocol or QFI for level 1; an address prefix for level 2, which
// splits a port bucket that many rules share (a home gateway's rules
// blocking hosts and networks for one protocol) by exact field lengths.
func splittable(level uint8, head *node) bool {
	n, all := 0, 0
	for m := head; m != nil; m = m.next {
		all++
		if level == 1 && keyOf(1, &m.r) != (tupleKey{}) || level == 2 && m.r.srcLen|m.r.dstLen != 0 {
			n++
		}
	}
	return n*4 >= all
}

// register gives t an ID for the compact delete index.
func (c *tssCore) register(t *tuple) {
	if k := len(c.free); k > 0 {
		t.id = c.free[k-1]
		c.free = c.free[:k-1]
		c.reg[t.id] = t
		return
	}
	t.id = uint32(len(c.reg))
	c.reg = append(c.reg, t)
}

func (c *tssCore) unregister(t *tuple) {
	c.reg[t.id] = nil
	c.free = append(c.free, t.id)
}

func packLoc(ti uint32, fp uint64) loc { return loc{ti, uint32(fp), uint32(fp >> 32)} }

func (c *tssCore) unpack(l loc) (*tuple, uint64) {
	return c.reg[l.ti], uint64(l.fpHi)<<32 | uint64(l.fpLo)
}

// publish sorts the tuples by best rank and makes the list visible.
func (s *space) publish() {
	list := make([]tupleRef, 0, len(s.tuples))
	for _, t := range s.tuples {
		list = append(list, tupleRef{best: t.best, t: t})
	}
	// Insertion sort: lists are short, and a stable order by (best, key)
	// keeps runs reproducible.
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && less(list[j], list[j-1]); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	s.list.Store(&list)
}

func less(a, b tupleRef) bool {
	if a.best != b.best {
		return a.best < b.best
	}
	for i := range a.t.key {
		if a.t.key[i] != b.t.key[i] {
			return a.t.key[i] < b.t.key[i]
		}
	}
	return false
}

// deleteLocked removes rule id and returns it.
func (c *tssCore) deleteLocked(id uint32) (crule, error) {
	l, ok := c.locs[id]
	if !ok {
		return crule{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	delete(c.locs, id)
	t, fp := c.unpack(l)
	_, n := t.find(fp)
	head, r := withoutRule(n, id)
	if head == nil {
		head = &node{r: crule{rank: noRank}} // tombstone
	}
	t.put(fp, head)
	c.removed(t, r.rank)
	return r, nil
}

// removed does the bookkeeping after a rule left tuple t: empty tuples
// leave their space; a deleted best rank leaves a stale (too good) bound,
// refreshed once enough deletes have accumulated.
func (c *tssCore) removed(t *tuple, rank uint64) {
	t.count--
	s := t.owner
	if t.count == 0 {
		delete(s.tuples, t.key)
		c.unregister(t)
		s.publish()
		if s.parent != nil {
			c.removed(s.parent, noRank)
		}
		return
	}
	if rank == t.best {
		t.bestStale = true
	}
	if s.parent != nil {
		c.removed(s.parent, noRank)
	}
	c.stale++
	if c.stale > 256+len(c.locs)/16 {
		c.refresh(c.top)
		c.stale = 0
	}
}

// refresh recomputes stale best-rank bounds of a space and its splits.
func (c *tssCore) refresh(s *space) uint64 {
	changed := false
	best := noRank
	for _, t := range s.tuples {
		tb := noRank
		tab := t.tab.Load()
		for i := range tab.slots {
			n := tab.slots[i].n.Load()
			if n == nil {
				continue
			}
			if n.sub != nil {
				nb := c.refresh(n.sub)
				if nb != n.r.rank {
					n = &node{r: crule{rank: nb}, sub: n.sub}
					tab.slots[i].n.Store(n)
				}
			}
			tb = min(tb, n.r.rank)
		}
		if tb != t.best {
			t.best, changed = tb, true
		}
		t.bestStale = false
		best = min(best, tb)
	}
	if changed {
		s.publish()
	}
	return best
}

func (s *space) memory() int {
	m := 64 + 16*len(*s.list.Load()) + 48*len(s.tuples)
	for _, t := range s.tuples {
		m += 192
		tab := t.tab.Load()
		m += 16*len(tab.slots) + 8*len(tab.filter)
		for i := range tab.slots {
			for n := tab.slots[i].n.Load(); n != nil; n = n.next {
				m += 80 // node: rule, next, sub
				if n.sub != nil {
					m += n.sub.memory()
				}
				if n.r.ext != nil {
					m += 64
				}
			}
		}
	}
	return m
}
