package classify

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// smallIndex is an immutable snapshot of a per-session table: its rules
// packed in rank order and a shallow tree that narrows a lookup to a
// short list of them. Inner nodes hash one key of the header (a masked
// packed word, a port, or an address masked to a prefix length); a child
// lists, in rank order, the rules whose key equals the header's and the
// rules that leave some key bits open but agree on the rest (copied into
// every child they may match). A key not in a node's table goes to its
// default child, which holds only the latter, so the scan of the leaf
// reached, with early exit on the first match, returns the best rule.
// Tiny tables are a single leaf: the plain scan.
type smallIndex struct {
	flat  bool     // one leaf holding every rule: scan rules
	rules []srule  // rank order
	nodes []snode  // nodes[0] is the root
	lists []uint16 // leaves' rule indexes, rank order per leaf
	parts []spart  // union nodes' subtrees
	work  int      // build steps spent (see buildWork)
}

// spart is one subtree of a union node and the best rank it holds.
type spart struct {
	min  uint64
	node uint32
}

// srule is a rule packed for scanning: the exact-match fields in one
// masked word, prefixes as masked halves, ports as low end and width.
type srule struct {
	w, wm uint64 // TEID | QFI<<32 | source interface<<40 | protocol<<48 | ToS<<56
	ue    pmask
	rank  uint64
	// rest: the rule tests more than the word and the UE address. Most
	// PDRs of a session (its defaults: TEID or UE address and source
	// interface) do not, and a scan passes them on those two tests,
	// loaded from the rule's first cache line.
	rest         bool
	n            uint16 // the first rule of an Auto.scan list: the list's length
	src, dst     pmask
	sport, dport pspan
	ext          *extMatch // network instance, application, SPI, flow label; nil if none
}

type pmask struct{ hi, lo, mhi, mlo uint64 }

// pspan is a port range as its low end and width: p is inside when
// p-lo <= n in 16-bit arithmetic.
type pspan struct{ lo, n uint16 }

// Node kinds: what an inner node hashes.
const (
	keyLeaf  uint8 = iota
	keyUnion       // parts[from:to]: disjoint subtrees, all searched
	keyWord
	keySrcPort
	keyDstPort
	keySrc
	keyDst
	keyUE
)

type snode struct {
	kind     uint8
	shift    uint8  // 64 - log2(len(slots))
	mhi, mlo uint64 // key mask: addresses, or the word (mlo)
	slots    []sslot
	def      uint32 // default child
	from, to uint32 // leaf: lists[from:to]; union: parts[from:to]
}

// sslot is one hash slot; child 0 (the root, never a child) marks it free.
type sslot struct {
	hi, lo uint64
	child  uint32
}

// Build limits. A node is split only while it holds more than leafMax
// rules and a split shortens the lists a lookup scans by a quarter; the
// copies of rules a split makes are bounded so that a table's lists stay
// within a few times its size.
const (
	leafMax     = 6
	maxDepth    = 8
	splitGrowth = 3 // a split's lists hold at most this many times its rules (plus slack)
	// buildWork bounds the steps (rule-key comparisons) one build may
	// spend looking for splits; past it, the nodes still to build become
	// leaves: lookups stay correct, only longer. Every update rebuilds the
	// table, so this is what an update can cost at most whatever rules an
	// SMF sends: a few milliseconds here, where unbounded adversarial
	// 100-rule tables took over 100 ms. Real PDR tables finish far below.
	buildWork = 1 << 17
)

func pmaskOf(p Prefix) pmask {
	mhi, mlo := mask128(p.Len)
	return pmask{p.Addr.Hi & mhi, p.Addr.Lo & mlo, mhi, mlo}
}

// packWord is the header's TEID, QFI, source interface, protocol and ToS
// as one word: a single load, as Header keeps them together in this
// order (a build with another layout fails on headerWordLayout).
func packWord(h *Header) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Pointer(&h.TEID))[:])
}

// headerWordLayout fails to compile unless Header holds packWord's fields
// contiguously, in its order.
var _ = [1]struct{}{}[unsafe.Offsetof(Header{}.QFI)-unsafe.Offsetof(Header{}.TEID)-4+
	unsafe.Offsetof(Header{}.SourceInterface)-unsafe.Offsetof(Header{}.TEID)-5+
	unsafe.Offsetof(Header{}.Proto)-unsafe.Offsetof(Header{}.TEID)-6+
	unsafe.Offsetof(Header{}.ToS)-unsafe.Offsetof(Header{}.TEID)-7]

func packRule(r *Rule) srule {
	s := srule{src: pmaskOf(r.SrcIP), dst: pmaskOf(r.DstIP), ue: pmaskOf(r.UEIP),
		sport: pspan{0, 0xffff}, dport: pspan{0, 0xffff}, rank: r.rank()}
	has := r.Has
	if has&FieldTEID != 0 {
		s.w, s.wm = uint64(r.TEID), 0xffffffff
	}
	if has&FieldQFI != 0 {
		s.w, s.wm = s.w|uint64(r.QFI)<<32, s.wm|0xff<<32
	}
	if has&FieldSourceInterface != 0 {
		s.w, s.wm = s.w|uint64(r.SourceInterface)<<40, s.wm|0xff<<40
	}
	if has&FieldProto != 0 {
		s.w, s.wm = s.w|uint64(r.Proto)<<48, s.wm|0xff<<48
	}
	if has&FieldToS != 0 {
		s.w, s.wm = s.w|uint64(r.ToS&r.ToSMask)<<56, s.wm|uint64(r.ToSMask)<<56
	}
	if has&FieldSrcPort != 0 {
		s.sport = pspan{r.SrcPort.Lo, r.SrcPort.Hi - r.SrcPort.Lo}
	}
	if has&FieldDstPort != 0 {
		s.dport = pspan{r.DstPort.Lo, r.DstPort.Hi - r.DstPort.Lo}
	}
	if has&otherFields != 0 {
		e := &extMatch{}
		e.setOther(r)
		s.ext = e
	}
	s.rest = s.src.mhi|s.src.mlo|s.dst.mhi|s.dst.mlo != 0 ||
		s.sport != (pspan{0, 0xffff}) || s.dport != (pspan{0, 0xffff}) || s.ext != nil
	return s
}

// matches tests every field but the packed word, which the caller has.
func (r *srule) matches(h *Header) bool {
	ue := (h.UEIP.Lo^r.ue.lo)&r.ue.mlo | (h.UEIP.Hi^r.ue.hi)&r.ue.mhi
	if !r.rest {
		return ue == 0
	}
	if ue|(h.SrcIP.Lo^r.src.lo)&r.src.mlo|(h.SrcIP.Hi^r.src.hi)&r.src.mhi|
		(h.DstIP.Lo^r.dst.lo)&r.dst.mlo|(h.DstIP.Hi^r.dst.hi)&r.dst.mhi != 0 {
		return false
	}
	if (uint32(r.sport.n)-uint32(h.SrcPort-r.sport.lo))|(uint32(r.dport.n)-uint32(h.DstPort-r.dport.lo)) > 0xffff {
		return false
	}
	return r.ext == nil || r.ext.match(h)
}

// newSmallIndex packs rules (valid, unique IDs, rank order) and builds
// the tree over them.
func newSmallIndex(rules []Rule) *smallIndex {
	x := &smallIndex{rules: make([]srule, len(rules))}
	for i := range rules {
		x.rules[i] = packRule(&rules[i])
	}
	all := make([]uint16, len(rules))
	for i := range all {
		all[i] = uint16(i)
	}
	x.nodes = append(x.nodes, snode{})
	x.build(0, all, 0)
	x.flat = x.nodes[0].kind == keyLeaf
	return x
}

// descend walks hashing nodes from node ni to the leaf or union node for
// h, passing at most steps of them.
func (x *smallIndex) descend(ni uint32, h *Header, hw uint64, steps int) *snode {
	n := &x.nodes[ni]
	for ; n.kind > keyUnion && steps > 0; steps-- {
		var hi, lo uint64
		switch n.kind {
		case keyWord:
			lo = hw & n.mlo
		case keySrcPort:
			lo = uint64(h.SrcPort)
		case keyDstPort:
			lo = uint64(h.DstPort)
		case keySrc:
			hi, lo = h.SrcIP.Hi&n.mhi, h.SrcIP.Lo&n.mlo
		case keyDst:
			hi, lo = h.DstIP.Hi&n.mhi, h.DstIP.Lo&n.mlo
		default:
			hi, lo = h.UEIP.Hi&n.mhi, h.UEIP.Lo&n.mlo
		}
		next := n.def
		m := uint64(len(n.slots) - 1)
		for i := keyHash(hi, lo) >> n.shift; ; i = (i + 1) & m {
			s := &n.slots[i]
			if s.child == 0 {
				break
			}
			if s.hi == hi && s.lo == lo {
				next = s.child
				break
			}
		}
		n = &x.nodes[next]
	}
	return n
}

func keyHash(hi, lo uint64) uint64 {
	return (lo ^ (hi * 0xff51afd7ed558ccd)) * 0x9e3779b97f4a7c15
}

// lookup finds the best rule of an indexed table.
func (x *smallIndex) lookup(h *Header) (uint32, bool) {
	hw := packWord(h)
	n := x.descend(0, h, hw, maxDepth)
	if n.kind == keyUnion {
		if best := x.union(n, h, hw, noRank); best != noRank {
			return uint32(best), true
		}
		return 0, false
	}
	rs := x.rules
	for _, i := range x.lists[n.from:n.to] {
		r := &rs[i]
		if (hw^r.w)&r.wm != 0 || !r.matches(h) {
			continue
		}
		return uint32(r.rank), true
	}
	return 0, false
}

// union searches the parts of union node n, best first, for a rank
// better than bound, and returns the best found (or bound).
func (x *smallIndex) union(n *snode, h *Header, hw uint64, bound uint64) uint64 {
	for _, p := range x.parts[n.from:n.to] {
		if p.min >= bound {
			break
		}
		bound = x.search(p.node, h, hw, bound)
	}
	return bound
}

// search returns the best rank below bound in the subtree at ni, or
// bound.
func (x *smallIndex) search(ni uint32, h *Header, hw uint64, bound uint64) uint64 {
	n := x.descend(ni, h, hw, maxDepth)
	if n.kind == keyUnion {
		return x.union(n, h, hw, bound)
	}
	rs := x.rules
	for _, i := range x.lists[n.from:n.to] {
		r := &rs[i]
		if r.rank >= bound {
			break
		}
		if (hw^r.w)&r.wm == 0 && r.matches(h) {
			return r.rank
		}
	}
	return bound
}

// A split candidate: for each rule, whether it fixes the node's key
// (full, with its key value) or leaves bits of it open (partial).
type splitKey struct {
	kind     uint8
	mhi, mlo uint64
}

type keyVal struct{ hi, lo uint64 }

// keyOf returns r's key value under k and whether r fixes all of it.
func (k splitKey) keyOf(r *srule) (keyVal, bool) {
	switch k.kind {
	case keyWord:
		return keyVal{0, r.w & k.mlo}, r.wm&k.mlo == k.mlo
	case keySrcPort:
		return keyVal{0, uint64(r.sport.lo)}, r.sport.n == 0
	case keyDstPort:
		return keyVal{0, uint64(r.dport.lo)}, r.dport.n == 0
	}
	p := k.prefix(r)
	return keyVal{p.hi & k.mhi, p.lo & k.mlo}, p.mhi&k.mhi == k.mhi && p.mlo&k.mlo == k.mlo
}

func (k splitKey) prefix(r *srule) *pmask {
	switch k.kind {
	case keySrc:
		return &r.src
	case keyDst:
		return &r.dst
	}
	return &r.ue
}

// agrees reports whether partial rule r may match a header whose key is v.
func (k splitKey) agrees(r *srule, v keyVal) bool {
	switch k.kind {
	case keyWord:
		return (v.lo^r.w)&r.wm&k.mlo == 0
	case keySrcPort:
		return uint16(v.lo)-r.sport.lo <= r.sport.n
	case keyDstPort:
		return uint16(v.lo)-r.dport.lo <= r.dport.n
	}
	p := k.prefix(r)
	return (v.hi^p.hi)&p.mhi|(v.lo^p.lo)&p.mlo == 0
}

// candidates lists the keys worth trying for rules: the word fields, the
// ports, and the word combinations and address prefix lengths that at
// least an eighth of the rules use (bounding the build's work).
func (x *smallIndex) candidates(ids []uint16) []splitKey {
	out := []splitKey{
		{kind: keyWord, mlo: 0xffffffff}, {kind: keyWord, mlo: 0xff << 32},
		{kind: keyWord, mlo: 0xff << 40}, {kind: keyWord, mlo: 0xff << 48},
		{kind: keySrcPort, mlo: 0xffff}, {kind: keyDstPort, mlo: 0xffff},
	}
	uses := map[splitKey]int{}
	var order []splitKey
	add := func(k splitKey) {
		if k.mhi|k.mlo == 0 {
			return
		}
		if uses[k] == 0 {
			order = append(order, k)
		}
		uses[k]++
	}
	for _, i := range ids {
		r := &x.rules[i]
		add(splitKey{kind: keyWord, mlo: r.wm})
		add(splitKey{kind: keyWord, mlo: r.wm & (0xff << 56)})
		add(splitKey{kind: keySrc, mhi: r.src.mhi, mlo: r.src.mlo})
		add(splitKey{kind: keyDst, mhi: r.dst.mhi, mlo: r.dst.mlo})
		add(splitKey{kind: keyUE, mhi: r.ue.mhi, mlo: r.ue.mlo})
	}
	for _, k := range order {
		if uses[k] >= max(2, len(ids)/8) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// plan is an evaluated split: keys in first-seen order, each key's list,
// and the default list (the partial rules).
type plan struct {
	key   splitKey
	keys  []keyVal
	lists [][]uint16
	def   []uint16
	cost  float64
}

// evaluate splits ids on k. The cost is the mean length of the list that
// a header drawn from each rule would scan (a partial rule's header is
// counted at the default list); ok is false if k does not split ids or
// the copies exceed budget entries.
func (x *smallIndex) evaluate(ids []uint16, k splitKey, budget int) (plan, bool) {
	p := plan{key: k}
	at := map[keyVal]int{}
	full := 0
	x.work += 2 * len(ids)
	for _, i := range ids {
		v, ok := k.keyOf(&x.rules[i])
		if !ok {
			p.def = append(p.def, i)
			continue
		}
		full++
		if _, seen := at[v]; !seen {
			at[v] = len(p.keys)
			p.keys = append(p.keys, v)
		}
	}
	if len(p.keys) == 0 || len(p.keys) == 1 && len(p.def) == 0 {
		return p, false
	}
	p.lists = make([][]uint16, len(p.keys))
	total := len(p.def)
	for _, i := range ids {
		r := &x.rules[i]
		if v, ok := k.keyOf(r); ok {
			j := at[v]
			p.lists[j] = append(p.lists[j], i)
			continue
		}
		x.work += len(p.keys)
		for j, v := range p.keys {
			if k.agrees(r, v) {
				p.lists[j] = append(p.lists[j], i)
				total++
			}
		}
		if total > budget {
			return p, false
		}
	}
	total += full
	if total > budget {
		return p, false
	}
	sum := float64(len(p.def) * len(p.def))
	for j, l := range p.lists {
		// The full rules of list j are those whose key is keys[j].
		nfull := 0
		for _, i := range l {
			if v, ok := k.keyOf(&x.rules[i]); ok && v == p.keys[j] {
				nfull++
			}
		}
		sum += float64(nfull * len(l))
	}
	p.cost = sum / float64(len(ids))
	return p, true
}

// build makes node ni hold ids (rank order): a leaf, the best split, or,
// where every split copies too many rules, a union of the rules one key
// separates well and the rest.
func (x *smallIndex) build(ni int, ids []uint16, depth int) {
	if len(ids) > leafMax && depth < maxDepth && x.work < buildWork {
		budget := splitGrowth*len(ids) + 16
		var best plan
		found := false
		cands := x.candidates(ids)
		for _, k := range cands {
			if x.work >= buildWork {
				break
			}
			p, ok := x.evaluate(ids, k, budget)
			if ok && (!found || p.cost < best.cost) {
				best, found = p, true
			}
		}
		if found && best.cost <= 0.75*float64(len(ids)) {
			x.split(ni, best, depth)
			return
		}
		if x.buildUnion(ni, ids, cands, depth) {
			return
		}
	}
	x.nodes[ni] = snode{kind: keyLeaf, from: uint32(len(x.lists)), to: uint32(len(x.lists) + len(ids))}
	x.lists = append(x.lists, ids...)
}

// buildUnion splits ids into the rules that fix the key separating most
// of them and the rest, built as two subtrees; it reports false if no key
// separates enough rules to pay for searching two subtrees.
func (x *smallIndex) buildUnion(ni int, ids []uint16, cands []splitKey, depth int) bool {
	var bestKey splitKey
	bestScore := len(ids) / 4
	for _, k := range cands {
		if x.work >= buildWork {
			return false
		}
		x.work += len(ids)
		count := map[keyVal]int{}
		full, top := 0, 0
		for _, i := range ids {
			if v, ok := k.keyOf(&x.rules[i]); ok {
				full++
				count[v]++
				top = max(top, count[v])
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
	var fixed, rest []uint16
	for _, i := range ids {
		if _, ok := bestKey.keyOf(&x.rules[i]); ok {
			fixed = append(fixed, i)
		} else {
			rest = append(rest, i)
		}
	}
	from := uint32(len(x.parts))
	for _, part := range [][]uint16{fixed, rest} {
		c := uint32(len(x.nodes))
		x.nodes = append(x.nodes, snode{})
		x.parts = append(x.parts, spart{min: x.rules[part[0]].rank, node: c})
		x.build(int(c), part, depth+1)
	}
	ps := x.parts[from:]
	if ps[1].min < ps[0].min {
		ps[0], ps[1] = ps[1], ps[0]
	}
	x.nodes[ni] = snode{kind: keyUnion, from: from, to: uint32(len(x.parts))}
	return true
}

func (x *smallIndex) split(ni int, p plan, depth int) {
	size := 2
	for size < 2*len(p.keys) {
		size *= 2
	}
	n := snode{kind: p.key.kind, mhi: p.key.mhi, mlo: p.key.mlo, slots: make([]sslot, size)}
	n.shift = uint8(64 - bitsOf(size))
	children := make([]uint32, len(p.keys))
	for j := range p.keys {
		children[j] = uint32(len(x.nodes))
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
		n.slots[i] = sslot{hi: v.hi, lo: v.lo, child: children[j]}
	}
	x.nodes[ni] = n
	for j := range p.keys {
		x.build(int(children[j]), p.lists[j], depth+1)
	}
	x.build(int(n.def), p.def, depth+1)
}

func bitsOf(size int) int {
	b := 0
	for 1<<b < size {
		b++
	}
	return b
}

// memoryBytes estimates the snapshot's size.
func (x *smallIndex) memoryBytes() int {
	n := len(x.rules)*136 + len(x.lists)*2 + len(x.nodes)*72 + len(x.parts)*16
	for i := range x.rules {
		if x.rules[i].ext != nil {
			n += 64
		}
	}
	for i := range x.nodes {
		n += len(x.nodes[i].slots) * 24
	}
	return n
}

// depth is the number of inner nodes on the longest path (tests).
func (x *smallIndex) depth() int {
	var walk func(i uint32) int
	walk = func(i uint32) int {
		n := &x.nodes[i]
		if n.kind == keyLeaf {
			return 0
		}
		if n.kind == keyUnion {
			d := 0
			for _, p := range x.parts[n.from:n.to] {
				d = max(d, walk(p.node))
			}
			return d + 1
		}
		d := walk(n.def)
		for _, s := range n.slots {
			if s.child != 0 {
				d = max(d, walk(s.child))
			}
		}
		return d + 1
	}
	return walk(0)
}
