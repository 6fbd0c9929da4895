package classify

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// PartitionSort is the classifier L25GC chose (PDR-PS; Yingchareonthawornchai
// et al., "A Sorted-Partitioning Approach to Fast and Scalable Dynamic
// Packet Classification", IEEE/ACM ToN 2018). Rules are partitioned online
// into sortable rulesets: within a partition, at every field (in a fixed
// order) two rules' intervals are identical or disjoint, so the partition
// is a multi-dimensional interval tree and a lookup is one binary search
// per field, with at most one candidate leaf. Partitions are searched best
// rank first, stopping when none can beat the match in hand.
//
// Each level is an immutable sorted array published through an atomic
// pointer, so lookups are lock-free; an update copies the one array it
// changes (O(level size)), where the authors' C++ uses mutable red-black
// trees and no concurrent readers.
type PartitionSort struct {
	mu    sync.Mutex
	parts atomic.Pointer[[]psRef]
	all   []*psPart // writer-only
	locs  map[uint32]psLoc
	stale int
}

// psDims fields, in tree order: the 5G keys first, then the SDF 5-tuple.
const psDims = 8

type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

type psInterval struct{ lo, hi u128 }

type psRef struct {
	best uint64
	p    *psPart
}

type psPart struct {
	root  psNode
	best  uint64
	count int
}

// psNode owns the next level below an interval (or the leaf rules at the
// last field), so that changing a subtree copies only that subtree's array.
type psNode struct {
	lvl  atomic.Pointer[psLevel]
	leaf atomic.Pointer[[]crule]
}

type psEnt struct {
	iv   psInterval
	node *psNode
}

type psLoc struct {
	p    *psPart
	prec uint32
	iv   [psDims]psInterval
}

// NewPartitionSort builds a PartitionSort classifier.
func NewPartitionSort(rules []Rule) (*PartitionSort, error) {
	sorted, err := checkRules(rules)
	if err != nil {
		return nil, fmt.Errorf("partitionsort: %w", err)
	}
	c := &PartitionSort{locs: make(map[uint32]psLoc, len(sorted))}
	c.parts.Store(&[]psRef{})
	for i := range sorted {
		c.insert(compile(&sorted[i]))
	}
	return c, nil
}

func point(h *Header) [psDims]u128 {
	return [psDims]u128{
		{0, uint64(h.TEID)},
		{h.UEIP.Hi, h.UEIP.Lo},
		{h.SrcIP.Hi, h.SrcIP.Lo},
		{h.DstIP.Hi, h.DstIP.Lo},
		{0, uint64(h.DstPort)},
		{0, uint64(h.SrcPort)},
		{0, uint64(h.Proto)},
		{0, uint64(h.QFI)},
	}
}

func prefixInterval(a Addr, l uint8) psInterval {
	mh, ml := mask128(l)
	return psInterval{u128{a.Hi, a.Lo}, u128{a.Hi | ^mh, a.Lo | ^ml}}
}

func maskedInterval(v, mask, max uint64) psInterval {
	if mask == 0 {
		return psInterval{u128{}, u128{0, max}}
	}
	return psInterval{u128{0, v}, u128{0, v}}
}

func intervals(c *crule) [psDims]psInterval {
	var iv [psDims]psInterval
	iv[0] = psInterval{u128{}, u128{0, 0xffffffff}}
	iv[1] = prefixInterval(Addr{}, 0)
	if c.ext != nil {
		iv[0] = maskedInterval(uint64(c.ext.teid), uint64(c.ext.teidMask), 0xffffffff)
		iv[1] = prefixInterval(c.ext.ue, c.ext.ueLen)
	}
	iv[2] = prefixInterval(c.src, c.srcLen)
	iv[3] = prefixInterval(c.dst, c.dstLen)
	iv[4] = psInterval{u128{0, uint64(c.dport.Lo)}, u128{0, uint64(c.dport.Hi)}}
	iv[5] = psInterval{u128{0, uint64(c.sport.Lo)}, u128{0, uint64(c.sport.Hi)}}
	iv[6] = maskedInterval(uint64(c.proto), uint64(c.protoMask), 0xff)
	iv[7] = maskedInterval(uint64(c.qfi), uint64(c.qfiMask), 0xff)
	return iv
}

// psLevel is an immutable sorted sequence of disjoint intervals, kept as
// chunks of at most psChunk entries under an index of each chunk's last
// end: an update copies one chunk and the index, not the whole level.
type psLevel struct {
	his    []u128
	chunks [][]psEnt
}

const psChunk = 64

var emptyLevel = &psLevel{}

// search returns the index of the first entry whose interval ends at or
// after x.
func search(ents []psEnt, x u128) int {
	lo, hi := 0, len(ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ents[m].iv.hi.less(x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// find returns the chunk and position of the first entry ending at or
// after x; c == len(chunks) when there is none.
func (l *psLevel) find(x u128) (c, i int) {
	lo, hi := 0, len(l.his)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.his[m].less(x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(l.his) {
		return lo, 0
	}
	return lo, search(l.chunks[lo], x)
}

// at returns the entry found by find, or nil.
func (l *psLevel) at(c, i int) *psEnt {
	if c == len(l.chunks) {
		return nil
	}
	return &l.chunks[c][i]
}

// with returns a copy of l with e inserted before position (c, i).
func (l *psLevel) with(c, i int, e psEnt) *psLevel {
	if len(l.chunks) == 0 {
		return &psLevel{his: []u128{e.iv.hi}, chunks: [][]psEnt{{e}}}
	}
	if c == len(l.chunks) { // after the last entry: append to the last chunk
		c = len(l.chunks) - 1
		i = len(l.chunks[c])
	}
	old := l.chunks[c]
	ch := make([]psEnt, 0, len(old)+1)
	ch = append(append(append(ch, old[:i]...), e), old[i:]...)
	var pieces [][]psEnt
	if len(ch) > psChunk {
		pieces = [][]psEnt{ch[: len(ch)/2 : len(ch)/2], ch[len(ch)/2:]}
	} else {
		pieces = [][]psEnt{ch}
	}
	return l.replace(c, pieces)
}

// without returns a copy of l with entry (c, i) removed.
func (l *psLevel) without(c, i int) *psLevel {
	old := l.chunks[c]
	if len(old) == 1 {
		return l.replace(c, nil)
	}
	ch := make([]psEnt, 0, len(old)-1)
	ch = append(append(ch, old[:i]...), old[i+1:]...)
	return l.replace(c, [][]psEnt{ch})
}

func (l *psLevel) replace(c int, pieces [][]psEnt) *psLevel {
	n := &psLevel{
		his:    make([]u128, 0, len(l.his)+len(pieces)-1),
		chunks: make([][]psEnt, 0, len(l.chunks)+len(pieces)-1),
	}
	n.his = append(n.his, l.his[:c]...)
	n.chunks = append(n.chunks, l.chunks[:c]...)
	for _, p := range pieces {
		n.his = append(n.his, p[len(p)-1].iv.hi)
		n.chunks = append(n.chunks, p)
	}
	n.his = append(n.his, l.his[c+1:]...)
	n.chunks = append(n.chunks, l.chunks[c+1:]...)
	return n
}

// Lookup implements Classifier.
func (c *PartitionSort) Lookup(h *Header) (uint32, bool) {
	pv := point(h)
	best := noRank
	parts := *c.parts.Load()
	for i := range parts {
		if parts[i].best >= best {
			break
		}
		n := &parts[i].p.root
		for d := 0; d < psDims; d++ {
			lv := n.lvl.Load()
			e := lv.at(lv.find(pv[d]))
			if e == nil || pv[d].less(e.iv.lo) {
				n = nil
				break
			}
			n = e.node
		}
		if n == nil {
			continue
		}
		rules := *n.leaf.Load()
		for k := range rules {
			r := &rules[k]
			if r.rank >= best {
				break
			}
			if r.match(h) {
				best = r.rank
				break
			}
		}
	}
	if best == noRank {
		return 0, false
	}
	return uint32(best), true
}

// Insert implements Classifier.
func (c *PartitionSort) Insert(r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.locs[r.ID]; dup {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	c.insert(compile(&r))
	return nil
}

// fits reports whether iv keeps partition p sortable.
func fits(p *psPart, iv *[psDims]psInterval) bool {
	n := &p.root
	for d := 0; d < psDims; d++ {
		lv := n.lvl.Load()
		e := lv.at(lv.find(iv[d].lo))
		if e == nil || iv[d].hi.less(e.iv.lo) {
			return true // disjoint from every interval: a new branch
		}
		if e.iv != iv[d] {
			return false // overlaps without being identical
		}
		n = e.node
	}
	return true
}

func newPSNode() *psNode {
	n := &psNode{}
	n.lvl.Store(emptyLevel)
	n.leaf.Store(&[]crule{})
	return n
}

func (c *PartitionSort) insert(cr crule) {
	iv := intervals(&cr)
	var p *psPart
	for _, q := range c.all { // first fit
		if fits(q, &iv) {
			p = q
			break
		}
	}
	if p == nil {
		p = &psPart{best: noRank}
		p.root.lvl.Store(emptyLevel)
		p.root.leaf.Store(&[]crule{})
		c.all = append(c.all, p)
	}
	n := &p.root
	for d := 0; d < psDims; d++ {
		lv := n.lvl.Load()
		ci, i := lv.find(iv[d].lo)
		if e := lv.at(ci, i); e != nil && e.iv == iv[d] {
			n = e.node
			continue
		}
		// New branch: build the chain below, then publish it with one
		// copy of this level.
		child := newPSNode()
		tail := child
		for e := d + 1; e < psDims; e++ {
			next := newPSNode()
			tail.lvl.Store(emptyLevel.with(0, 0, psEnt{iv: iv[e], node: next}))
			tail = next
		}
		tail.leaf.Store(&[]crule{cr})
		n.lvl.Store(lv.with(ci, i, psEnt{iv: iv[d], node: child}))
		n = nil
		break
	}
	if n != nil { // identical intervals in every field: share the leaf
		old := *n.leaf.Load()
		at := 0
		for at < len(old) && old[at].rank < cr.rank {
			at++
		}
		rules := make([]crule, 0, len(old)+1)
		rules = append(append(append(rules, old[:at]...), cr), old[at:]...)
		n.leaf.Store(&rules)
	}
	p.count++
	c.locs[uint32(cr.rank)] = psLoc{p: p, prec: uint32(cr.rank >> 32), iv: iv}
	if cr.rank < p.best {
		p.best = cr.rank
		c.publish()
	}
}

func (c *PartitionSort) publish() {
	// Insertion sort by best rank (stable): partitions are few.
	for i := 1; i < len(c.all); i++ {
		for j := i; j > 0 && c.all[j].best < c.all[j-1].best; j-- {
			c.all[j], c.all[j-1] = c.all[j-1], c.all[j]
		}
	}
	list := make([]psRef, len(c.all))
	for i, p := range c.all {
		list[i] = psRef{best: p.best, p: p}
	}
	c.parts.Store(&list)
}

// Delete implements Classifier.
func (c *PartitionSort) Delete(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.locs[id]
	if !ok {
		return fmt.Errorf("partitionsort: %w: %d", ErrNotFound, id)
	}
	delete(c.locs, id)
	p := l.p
	var path [psDims + 1]*psNode
	path[0] = &p.root
	for d := 0; d < psDims; d++ {
		lv := path[d].lvl.Load()
		path[d+1] = lv.at(lv.find(l.iv[d].lo)).node
	}
	leafNode := path[psDims]
	old := *leafNode.leaf.Load()
	rules := make([]crule, 0, len(old))
	var rank uint64
	for i := range old {
		if uint32(old[i].rank) == id {
			rank = old[i].rank
			continue
		}
		rules = append(rules, old[i])
	}
	leafNode.leaf.Store(&rules)
	// Unlink emptied branches bottom-up, one level copy each.
	empty := len(rules) == 0
	for d := psDims - 1; d >= 0 && empty; d-- {
		lv := path[d].lvl.Load()
		shrunk := lv.without(lv.find(l.iv[d].lo))
		path[d].lvl.Store(shrunk)
		empty = len(shrunk.chunks) == 0
	}
	p.count--
	if p.count == 0 {
		for i, q := range c.all {
			if q == p {
				c.all = append(c.all[:i:i], c.all[i+1:]...)
				break
			}
		}
		c.publish()
		return nil
	}
	if rank == p.best {
		c.stale++
		if c.stale > 64+len(c.locs)/64 {
			c.refresh()
		}
	}
	return nil
}

// refresh recomputes partition bounds that deletes left stale (too good,
// which is safe but slows lookups).
func (c *PartitionSort) refresh() {
	best := make(map[*psPart]uint64, len(c.all))
	for _, p := range c.all {
		best[p] = noRank
	}
	for id, l := range c.locs {
		if rank := uint64(l.prec)<<32 | uint64(id); rank < best[l.p] {
			best[l.p] = rank
		}
	}
	for _, p := range c.all {
		p.best = best[p]
	}
	c.stale = 0
	c.publish()
}

// Len implements Classifier.
func (c *PartitionSort) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.locs)
}

// MemoryBytes implements Classifier: arrays, nodes, leaves and the ID
// index (map entry with the rule's intervals, about 300 bytes).
func (c *PartitionSort) MemoryBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 300 * len(c.locs)
	var walk func(n *psNode, d int)
	walk = func(n *psNode, d int) {
		m += 48
		if d == psDims {
			for _, r := range *n.leaf.Load() {
				m += ruleBytes(&r)
			}
			return
		}
		lv := n.lvl.Load()
		m += 48 + 40*len(lv.chunks)
		for _, ch := range lv.chunks {
			m += 40 * cap(ch)
			for i := range ch {
				walk(ch[i].node, d+1)
			}
		}
	}
	for _, p := range c.all {
		walk(&p.root, 0)
	}
	return m
}

// Name implements Classifier.
func (c *PartitionSort) Name() string { return string(KindPartitionSort) }

// Partitions reports the number of partitions (for diagnostics).
func (c *PartitionSort) Partitions() int { return len(*c.parts.Load()) }
