package classify

import (
	"slices"
	"sync"
)

// Building a small index. Every update of a small table rebuilds its
// index (fortable.go), so the build keeps its working state in a
// smallBuilder that builds reuse: per-level buffers for the plans it
// compares and open-addressed counters for the keys it tries. With a map
// and fresh lists per evaluated key, maps and allocation were most of an
// update's 120 µs on a 100-PDR session table. The builders are pooled,
// not kept per table: a UPF holds a table per session, and a builder's
// buffers outweigh a small table.
var builders = sync.Pool{New: func() any { return &smallBuilder{} }}

// smallBuilder is the scratch of small index builds, reused from one
// build to the next by one writer.
type smallBuilder struct {
	x      *smallIndex // the index being built
	all    []uint16
	vals   keyCounter[keyVal]   // one candidate key's values
	masks  keyCounter[splitKey] // candidates: the keys rules use
	keyIdx []int32              // evaluate: rule i's index in keys, or -1 (partial)
	levels [maxDepth + 1]buildLevel
}

// buildLevel is what a node's build at one depth keeps while its
// children build at the next: its candidates, the best plan so far and
// the plan being evaluated, and a union's two parts.
type buildLevel struct {
	cands       []splitKey
	best, cur   plan
	fixed, rest []uint16
}

// plan is an evaluated split: keys in first-seen order, each key's list,
// the default list (the partial rules) and how many rules fix each key.
type plan struct {
	key   splitKey
	keys  []keyVal
	lists [][]uint16
	def   []uint16
	full  []int
	cost  float64
}

// reset empties p for key k, keeping its buffers.
func (p *plan) reset(k splitKey) {
	p.key, p.keys, p.def, p.full, p.cost = k, p.keys[:0], p.def[:0], p.full[:0], 0
}

// index packs rules (valid, unique IDs, rank order) and builds the tree
// over them.
func (b *smallBuilder) index(rules []Rule) *smallIndex {
	x := &smallIndex{rules: make([]srule, len(rules))}
	for i := range rules {
		x.rules[i] = packRule(&rules[i])
	}
	b.x = x
	defer func() { b.x = nil }()
	if cap(b.keyIdx) < len(rules) {
		b.keyIdx = make([]int32, len(rules))
	}
	b.keyIdx = b.keyIdx[:len(rules)]
	b.all = b.all[:0]
	for i := range rules {
		b.all = append(b.all, uint16(i))
	}
	x.nodes = append(x.nodes, snode{})
	b.build(0, b.all, 0)
	x.flat = x.nodes[0].kind == keyLeaf
	return x
}

// build makes node ni hold ids (rank order): a leaf, the best split, or,
// where every split copies too many rules, a union of the rules one key
// separates well and the rest.
func (b *smallBuilder) build(ni int, ids []uint16, depth int) {
	x := b.x
	if len(ids) > leafMax && depth < maxDepth && x.work < buildWork {
		lv := &b.levels[depth]
		budget := splitGrowth*len(ids) + 16
		found := false
		lv.cands = b.candidates(ids, lv.cands[:0])
		for _, k := range lv.cands {
			if x.work >= buildWork {
				break
			}
			ok := b.evaluate(ids, k, budget, &lv.cur)
			if ok && (!found || lv.cur.cost < lv.best.cost) {
				lv.best, lv.cur = lv.cur, lv.best
				found = true
			}
		}
		if found && lv.best.cost <= 0.75*float64(len(ids)) {
			b.split(ni, &lv.best, depth)
			return
		}
		if b.buildUnion(ni, ids, lv, depth) {
			return
		}
	}
	x.nodes[ni] = snode{kind: keyLeaf, from: uint32(len(x.lists)), to: uint32(len(x.lists) + len(ids))}
	x.lists = append(x.lists, ids...)
}

// candidates appends to out the keys worth trying for rules: the word
// fields, the ports, and the word combinations and address prefix
// lengths that at least an eighth of the rules use (bounding the
// build's work).
func (b *smallBuilder) candidates(ids []uint16, out []splitKey) []splitKey {
	out = append(out,
		splitKey{kind: keyWord, mlo: 0xffffffff}, splitKey{kind: keyWord, mlo: 0xff << 32},
		splitKey{kind: keyWord, mlo: 0xff << 40}, splitKey{kind: keyWord, mlo: 0xff << 48},
		splitKey{kind: keySrcPort, mlo: 0xffff}, splitKey{kind: keyDstPort, mlo: 0xffff},
	)
	fixed := len(out)
	b.masks.reset(5 * len(ids))
	add := func(k splitKey) {
		if k.mhi|k.mlo != 0 {
			b.masks.add(k, keyHash(k.mhi^uint64(k.kind)<<56, k.mlo))
		}
	}
	for _, i := range ids {
		r := &b.x.rules[i]
		add(splitKey{kind: keyWord, mlo: r.wm})
		add(splitKey{kind: keyWord, mlo: r.wm & (0xff << 56)})
		add(splitKey{kind: keySrc, mhi: r.src.mhi, mlo: r.src.mlo})
		add(splitKey{kind: keyDst, mhi: r.dst.mhi, mlo: r.dst.mlo})
		add(splitKey{kind: keyUE, mhi: r.ue.mhi, mlo: r.ue.mlo})
	}
	for i, k := range b.masks.keys {
		if b.masks.counts[i] >= max(2, len(ids)/8) && !slices.Contains(out[:fixed], k) {
			out = append(out, k)
		}
	}
	return out
}

// evaluate splits ids on k into p. The cost is the mean length of the
// list that a header drawn from each rule would scan (a partial rule's
// header is counted at the default list); it reports false if k does not
// split ids or the copies exceed budget entries.
func (b *smallBuilder) evaluate(ids []uint16, k splitKey, budget int, p *plan) bool {
	x := b.x
	p.reset(k)
	x.work += 2 * len(ids)
	b.vals.reset(len(ids))
	for _, i := range ids {
		v, ok := k.keyOf(&x.rules[i])
		if !ok {
			p.def = append(p.def, i)
			b.keyIdx[i] = -1
			continue
		}
		b.keyIdx[i] = b.vals.add(v, keyHash(v.hi, v.lo))
	}
	p.keys, p.full = append(p.keys, b.vals.keys...), append(p.full, b.vals.counts...)
	if len(p.keys) == 0 || len(p.keys) == 1 && len(p.def) == 0 {
		return false
	}
	for len(p.lists) < len(p.keys) {
		p.lists = append(p.lists, nil)
	}
	p.lists = p.lists[:len(p.keys)]
	for j := range p.lists {
		p.lists[j] = p.lists[j][:0]
	}
	total := len(p.def)
	for _, i := range ids {
		if j := b.keyIdx[i]; j >= 0 {
			p.lists[j] = append(p.lists[j], i)
			continue
		}
		r := &x.rules[i]
		x.work += len(p.keys)
		for j, v := range p.keys {
			if k.agrees(r, v) {
				p.lists[j] = append(p.lists[j], i)
				total++
			}
		}
		if total > budget {
			return false
		}
	}
	total += len(ids) - len(p.def)
	if total > budget {
		return false
	}
	sum := float64(len(p.def) * len(p.def))
	for j, l := range p.lists {
		// The full rules of list j are those whose key is keys[j].
		sum += float64(p.full[j] * len(l))
	}
	p.cost = sum / float64(len(ids))
	return true
}

// buildUnion splits ids into the rules that fix the key separating most
// of them and the rest, built as two subtrees; it reports false if no key
// separates enough rules to pay for searching two subtrees.
func (b *smallBuilder) buildUnion(ni int, ids []uint16, lv *buildLevel, depth int) bool {
	x := b.x
	var bestKey splitKey
	bestScore := len(ids) / 4
	for _, k := range lv.cands {
		if x.work >= buildWork {
			return false
		}
		x.work += len(ids)
		b.vals.reset(len(ids))
		full, top := 0, 0
		for _, i := range ids {
			if v, ok := k.keyOf(&x.rules[i]); ok {
				full++
				top = max(top, b.vals.counts[b.vals.add(v, keyHash(v.hi, v.lo))])
			}
		}
		if full == len(ids) {
			continue // a plain split, already rejected
		}
		if score := full - top; score > bestScore {
			bestKey, bestScore = k, score
		}
	}
	if bestScore == len(ids)/4 {
		return false
	}
	lv.fixed, lv.rest = lv.fixed[:0], lv.rest[:0]
	for _, i := range ids {
		if _, ok := bestKey.keyOf(&x.rules[i]); ok {
			lv.fixed = append(lv.fixed, i)
		} else {
			lv.rest = append(lv.rest, i)
		}
	}
	from := uint32(len(x.parts))
	for _, part := range [2][]uint16{lv.fixed, lv.rest} {
		c := uint32(len(x.nodes))
		x.nodes = append(x.nodes, snode{})
		x.parts = append(x.parts, spart{min: x.rules[part[0]].rank, node: c})
		b.build(int(c), part, depth+1)
	}
	ps := x.parts[from:]
	if ps[1].min < ps[0].min {
		ps[0], ps[1] = ps[1], ps[0]
	}
	x.nodes[ni] = snode{kind: keyUnion, from: from, to: uint32(len(x.parts))}
	return true
}

// split makes node ni the hashing node of plan p and builds its
// children, one level down.
func (b *smallBuilder) split(ni int, p *plan, depth int) {
	x := b.x
	size := 2
	for size < 2*len(p.keys) {
		size *= 2
	}
	n := snode{kind: p.key.kind, mhi: p.key.mhi, mlo: p.key.mlo, slots: make([]sslot, size)}
	n.shift = uint8(64 - bitsOf(size))
	first := uint32(len(x.nodes))
	for range p.keys {
		x.nodes = append(x.nodes, snode{})
	}
	n.def = uint32(len(x.nodes))
	x.nodes = append(x.nodes, snode{})
	m := uint64(size - 1)
	for j, v := range p.keys {
		i := keyHash(v.hi, v.lo) >> n.shift
		for n.slots[i].child != 0 {
			i = (i + 1) & m
		}
		n.slots[i] = sslot{hi: v.hi, lo: v.lo, child: first + uint32(j)}
	}
	x.nodes[ni] = n
	for j := range p.keys {
		b.build(int(first)+j, p.lists[j], depth+1)
	}
	b.build(int(n.def), p.def, depth+1)
}
