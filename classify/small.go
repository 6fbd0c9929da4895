package classify

import (
	"encoding/binary"
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
// the tree over them, with a pooled builder.
func newSmallIndex(rules []Rule) *smallIndex {
	b := builders.Get().(*smallBuilder)
	defer builders.Put(b)
	return b.index(rules)
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
