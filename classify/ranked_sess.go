package classify

import (
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"
)

// On a UPF-wide table nearly every PDR names its session exactly: an
// uplink PDR by its local TEID, a downlink PDR by its UE IP address (/32
// or /128), each with its source interface. sessEngine keys those PDRs on
// that session key in one Swiss-style table (control bytes as in
// rtTable) whose slot is the session's bucket: its best rule packed
// inline, the others in one array behind it, in rank order. A lookup
// reads a control word (the control bytes mostly stay in cache) and a
// slot, and the array only if the first rule fails; tssCore chased
// tuple, table, filter, slot, node and ext one after another, each a
// likely cache miss on a large table. Every packed rule tests all of its
// fields, so a probe needs no key compare: a foreign bucket met by a hash
// collision only fails its rules. Rules that name no session exactly stay
// in tssCore, and so do sessions that outgrow sessMax rules (tssCore
// splits those by ports); all engines are searched and the better rank
// wins.
type sessEngine struct {
	rules atomic.Int64 // lookups skip the engine while it is empty
	tab   atomic.Pointer[sessTable]
	// present[i], bit kind: some rule of that key kind has source
	// interface i (i = 256: no source interface), so a lookup probes only
	// the kinds that can match.
	present [257]atomic.Uint32
	count   [2][257]int     // writer: rules by kind and present index
	locs    idIndex[uint64] // writer: rule ID -> its bucket's hash
	spilled map[sessKey]int // writer: sessions moved to tssCore, and their rules there
}

// sessMax is the most rules a bucket holds; a longer session moves to
// tssCore, which splits it by ports (splitAt there, for the same reason).
const sessMax = splitAt

// Key kinds: bit 0 says what names the session, bit 1 that the rules
// leave the source interface open.
const (
	sessTEID  uint8 = 0
	sessUE    uint8 = 1
	sessAnyIf uint8 = 2
)

// sessKey is a session key: the UE address, or 0 and the TEID.
type sessKey struct {
	hi, lo uint64
	kind   uint8
	srcIf  uint8
}

func (k sessKey) hash() uint64 {
	return rtMix(k.lo ^ rtMix(k.hi^uint64(k.kind)<<8^uint64(k.srcIf)))
}

// at is the key's present index.
func (k sessKey) at() int {
	if k.kind&sessAnyIf != 0 {
		return 256
	}
	return int(k.srcIf)
}

// sessKeyOf is a PDR's session key; ok is false if it names no session
// exactly (no TEID, and a UE prefix shorter than an address).
func sessKeyOf(c *crule) (k sessKey, ok bool) {
	e := c.ext
	switch {
	case e.teidMask != 0:
		k.lo = uint64(e.teid)
	case e.ueLen == 128:
		k.hi, k.lo, k.kind = e.ue.Hi, e.ue.Lo, sessUE
	default:
		return k, false
	}
	if e.srcIfMask == 0 {
		k.kind |= sessAnyIf
	} else {
		k.srcIf = e.srcIf
	}
	return k, true
}

// headerKey is the key a header has for a kind.
func headerKey(h *Header, kind uint8) sessKey {
	k := sessKey{kind: kind}
	if kind&sessAnyIf == 0 {
		k.srcIf = h.SourceInterface
	}
	if kind&sessUE == 0 {
		k.lo = uint64(h.TEID)
	} else {
		k.hi, k.lo = h.UEIP.Hi, h.UEIP.Lo
	}
	return k
}

// prule is a PDR packed for a bucket scan: exact-match fields in one
// masked word (packWord's layout), prefixes as masked values and lengths,
// ports as low end and width.
type prule struct {
	rank         uint64
	w, wm        uint64
	sport, dport pspan
	sl, dl, ul   uint8
	n            uint8     // length of a sessSlot.more array, in its first rule
	ext          *extMatch // network instance, application, SPI, flow label; nil if none
	src, dst, ue Addr
}

func packPDR(c *crule) prule {
	e := c.ext
	p := prule{rank: c.rank, src: c.src, dst: c.dst, ue: e.ue, sl: c.srcLen, dl: c.dstLen, ul: e.ueLen,
		sport: pspan{c.sport.Lo, c.sport.Hi - c.sport.Lo}, dport: pspan{c.dport.Lo, c.dport.Hi - c.dport.Lo},
		w:  uint64(e.teid) | uint64(c.qfi)<<32 | uint64(e.srcIf)<<40 | uint64(c.proto)<<48 | uint64(c.tos)<<56,
		wm: uint64(e.teidMask) | uint64(c.qfiMask)<<32 | uint64(e.srcIfMask)<<40 | uint64(c.protoMask)<<48 | uint64(c.tosMask)<<56}
	if e.netInstMask|e.appMask|e.spiMask|e.flowLblMask != 0 {
		p.ext = &extMatch{netInst: e.netInst, netInstMask: e.netInstMask, app: e.app, appMask: e.appMask,
			spi: e.spi, spiMask: e.spiMask, flowLabel: e.flowLabel, flowLblMask: e.flowLblMask}
	}
	return p
}

// crule unpacks p, for tssCore.
func (p *prule) crule() crule {
	c := crule{rank: p.rank, src: p.src, dst: p.dst, srcLen: p.sl, dstLen: p.dl,
		sport: PortRange{p.sport.lo, p.sport.lo + p.sport.n}, dport: PortRange{p.dport.lo, p.dport.lo + p.dport.n},
		qfi: uint8(p.w >> 32), qfiMask: uint8(p.wm >> 32), proto: uint8(p.w >> 48), protoMask: uint8(p.wm >> 48),
		tos: uint8(p.w >> 56), tosMask: uint8(p.wm >> 56)}
	e := extMatch{}
	if p.ext != nil {
		e = *p.ext
	}
	e.ue, e.ueLen = p.ue, p.ul
	e.teid, e.teidMask = uint32(p.w), uint32(p.wm)
	e.srcIf, e.srcIfMask = uint8(p.w>>40), uint8(p.wm>>40)
	c.ext = &e
	return c
}

// key is the session key of p's bucket.
func (p *prule) key() sessKey {
	k := sessKey{lo: uint64(uint32(p.w))}
	if uint32(p.wm) == 0 {
		k = sessKey{hi: p.ue.Hi, lo: p.ue.Lo, kind: sessUE}
	}
	if p.wm>>40&0xff == 0 {
		k.kind |= sessAnyIf
	} else {
		k.srcIf = uint8(p.w >> 40)
	}
	return k
}

// matches tests every field of p; hw is the header's packWord.
func (p *prule) matches(h *Header, hw uint64) bool {
	if (hw^p.w)&p.wm != 0 ||
		(uint32(p.sport.n)-uint32(h.SrcPort-p.sport.lo))|(uint32(p.dport.n)-uint32(h.DstPort-p.dport.lo)) > 0xffff {
		return false
	}
	if !prefixMatch(h.UEIP, p.ue, p.ul) || !prefixMatch(h.SrcIP, p.src, p.sl) || !prefixMatch(h.DstIP, p.dst, p.dl) {
		return false
	}
	return p.ext == nil || p.ext.match(h)
}

// sessSlot is one session's bucket (104 bytes): its best rule inline, so
// that a lookup that matches it reads nothing past the slot, and the
// others behind more. first is written once, before the slot is
// published; an update that keeps it replaces more whole.
type sessSlot struct {
	first prule
	more  atomic.Pointer[prule] // the other rules, rank order; more.n of them
}

// rest is the bucket's rules after the first.
func (s *sessSlot) rest() []prule {
	m := s.more.Load()
	if m == nil {
		return nil
	}
	return unsafe.Slice(m, m.n)
}

// appendRules appends the bucket's rules to dst, in rank order.
func (s *sessSlot) appendRules(dst []prule) []prule {
	return append(append(dst, s.first), s.rest()...)
}

// restOf packs rules into a more array; nil if none.
func restOf(rules []prule) *prule {
	if len(rules) == 0 {
		return nil
	}
	m := make([]prule, len(rules))
	copy(m, rules)
	for i := range m {
		m[i].n = 0
	}
	m[0].n = uint8(len(m))
	return &m[0]
}

// sessTable is the session table. A slot's first rule is written once,
// before its control byte is published, and never rewritten in that
// table; only its more pointer changes, by atomic stores of whole new
// arrays. An update that changes the first rule places a new slot and
// then marks the old one deleted (a lookup in between sees both, which
// only repeats rules), and a table that fills up is rebuilt and
// published whole.
type sessTable struct {
	ctrl  []uint64 // atomic; byte i: slot i of the group
	slots []sessSlot
	ng    uint64
	used  int // writer: full and deleted slots
	live  int // writer: full slots
}

func newSessTable(groups int) *sessTable {
	t := &sessTable{ctrl: make([]uint64, groups), slots: make([]sessSlot, groups*8), ng: uint64(groups)}
	for i := range t.ctrl {
		t.ctrl[i] = ctrlEmpty * ctrlLSB
	}
	return t
}

func (e *sessEngine) init() {
	e.locs, e.spilled = newIDIndex[uint64](0), map[sessKey]int{}
	e.tab.Store(newSessTable(1))
}

// lookup returns the best rank below best among the session rules that
// match h, or best.
func (e *sessEngine) lookup(h *Header, best uint64) uint64 {
	kinds := e.present[h.SourceInterface].Load() | e.present[256].Load()
	if kinds == 0 {
		return best
	}
	tab, hw := e.tab.Load(), packWord(h)
	for ; kinds != 0; kinds &= kinds - 1 {
		best = tab.probe(headerKey(h, uint8(bits.TrailingZeros32(kinds))).hash(), h, hw, best)
	}
	return best
}

// probe scans every bucket of x's chain whose control byte may hold x's
// hash bits.
func (t *sessTable) probe(x uint64, h *Header, hw, best uint64) uint64 {
	g, _ := bits.Mul64(x, t.ng)
	pat := rtH2(x) * ctrlLSB
	for {
		cw := atomic.LoadUint64(&t.ctrl[g])
		v := cw ^ pat
		for m := (v - ctrlLSB) &^ v &^ cw & ctrlMSB; m != 0; m &= m - 1 {
			best = t.slots[g*8+uint64(bits.TrailingZeros64(m)>>3)].scan(h, hw, best)
		}
		if cw&^(cw<<6)&ctrlMSB != 0 {
			return best
		}
		if g++; g == t.ng {
			g = 0
		}
	}
}

// scan returns the rank of the bucket's first rule that matches, if it
// beats best: the bucket is in rank order (TS 29.244 §5.2.1: the
// highest precedence, lowest value, wins).
func (s *sessSlot) scan(h *Header, hw, best uint64) uint64 {
	if s.first.rank >= best {
		return best
	}
	if s.first.matches(h, hw) {
		return s.first.rank
	}
	rs := s.rest()
	for i := range rs {
		r := &rs[i]
		if r.rank >= best {
			break
		}
		if r.matches(h, hw) {
			return r.rank
		}
	}
	return best
}

// chain calls fn for every full slot of x's chain whose control byte
// holds x's hash bits (writer only), until fn returns false.
func (t *sessTable) chain(x uint64, fn func(j uint64) bool) { ctrlChain(t.ctrl, t.ng, x, fn) }

// find returns k's slot (x: k's hash), or ok false (writer only).
func (t *sessTable) find(k sessKey, x uint64) (j uint64, ok bool) {
	t.chain(x, func(i uint64) bool {
		if t.slots[i].first.key() == k {
			j, ok = i, true
		}
		return !ok
	})
	return j, ok
}

// place writes a bucket (its first rule and more array) into the first
// never-used slot of x's chain and publishes it. The caller has reserved
// room.
func (t *sessTable) place(x uint64, first prule, more *prule) {
	first.n = 0
	g, _ := bits.Mul64(x, t.ng)
	for {
		cw := t.ctrl[g]
		if m := cw &^ (cw << 6) & ctrlMSB; m != 0 {
			i := uint64(bits.TrailingZeros64(m) >> 3)
			s := &t.slots[g*8+i]
			s.first = first
			s.more.Store(more)
			atomic.StoreUint64(&t.ctrl[g], cw&^(0xff<<(8*i))|rtH2(x)<<(8*i))
			t.used++
			t.live++
			return
		}
		if g++; g == t.ng {
			g = 0
		}
	}
}

// kill marks slot j deleted.
func (t *sessTable) kill(j uint64) {
	g, i := j/8, j%8
	atomic.StoreUint64(&t.ctrl[g], t.ctrl[g]&^(0xff<<(8*i))|ctrlDeleted<<(8*i))
	t.live--
}

// reserve makes room for one more slot: a table seven eighths used is
// rebuilt.
func (e *sessEngine) reserve() *sessTable {
	if t := e.tab.Load(); (t.used+1)*8 <= int(t.ng)*8*7 {
		return t
	}
	return e.rebuild()
}

// reserveFor sizes an empty table for a bulk build of n rules, so that
// it does not grow on the way.
func (e *sessEngine) reserveFor(n int) {
	e.tab.Store(newSessTable(max(1, (n*8/7+7)/8)))
}

// rebuild moves the live slots to a table two thirds full and publishes
// it. (Half full, as rtTable, measured no faster here and costs a third
// more memory: slots are 104 bytes.)
func (e *sessEngine) rebuild() *sessTable {
	t := e.tab.Load()
	next := newSessTable(max(1, ((t.live+1)*3/2+7)/8))
	for g, cw := range t.ctrl {
		for m := ^cw & ctrlMSB; m != 0; m &= m - 1 {
			s := &t.slots[g*8+bits.TrailingZeros64(m)>>3]
			next.place(s.first.key().hash(), s.first, s.more.Load())
		}
	}
	e.tab.Store(next)
	return next
}

// insert adds p to k's bucket, unless the bucket would outgrow sessMax:
// then it returns the bucket's rules with p, for tssCore, and leaves the
// bucket be until evict (so that its rules never go missing).
func (e *sessEngine) insert(k sessKey, p prule) []prule {
	x := k.hash()
	t := e.reserve()
	j, ok := t.find(k, x)
	var buf [sessMax + 1]prule
	rs := buf[:0]
	if ok {
		rs = t.slots[j].appendRules(rs)
	}
	i := 0
	for i < len(rs) && rs[i].rank < p.rank {
		i++
	}
	rs = slices.Insert(rs, i, p)
	if len(rs) > sessMax {
		return slices.Clone(rs)
	}
	e.counted(k, 1)
	e.locs.put(uint32(p.rank), x)
	if ok && i > 0 {
		t.slots[j].more.Store(restOf(rs[1:]))
		return nil
	}
	t.place(x, rs[0], restOf(rs[1:]))
	if ok {
		t.kill(j)
	}
	return nil
}

// evict removes k's bucket and its rules.
func (e *sessEngine) evict(k sessKey) {
	t := e.tab.Load()
	j, ok := t.find(k, k.hash())
	if !ok {
		return
	}
	t.kill(j)
	s := &t.slots[j]
	e.locs.del(uint32(s.first.rank))
	e.counted(k, -1)
	for _, r := range s.rest() {
		e.locs.del(uint32(r.rank))
		e.counted(k, -1)
	}
}

// delete removes rule id, if the engine holds it.
func (e *sessEngine) delete(id uint32) bool {
	x, ok := e.locs.del(id)
	if !ok {
		return false
	}
	t := e.reserve()
	var buf [sessMax]prule
	t.chain(x, func(j uint64) bool {
		rs := t.slots[j].appendRules(buf[:0])
		i := slices.IndexFunc(rs, func(r prule) bool { return uint32(r.rank) == id })
		if i < 0 {
			return true
		}
		k := rs[0].key()
		switch rs = slices.Delete(rs, i, i+1); {
		case i > 0:
			t.slots[j].more.Store(restOf(rs[1:]))
		case len(rs) > 0:
			t.place(x, rs[0], restOf(rs[1:]))
			t.kill(j)
		default:
			t.kill(j)
		}
		e.counted(k, -1)
		return false
	})
	return true
}

// counted adds d rules of key k's kind, setting its present bit (and
// counting rules) before the first is published and clearing it after
// the last has left.
func (e *sessEngine) counted(k sessKey, d int) {
	kind, at := k.kind&sessUE, k.at()
	c := &e.count[kind][at]
	*c += d
	e.rules.Add(int64(d))
	bit := uint32(1) << k.kind
	switch {
	case *c == d && d > 0:
		e.present[at].Or(bit)
	case *c == 0:
		e.present[at].And(^bit)
	}
}

// memory is the engine's size: table, buckets and indexes (the spill map
// estimated at 48 bytes an entry, as Go maps of small entries run).
func (e *sessEngine) memory() int {
	t := e.tab.Load()
	m := int(unsafe.Sizeof(*e)+unsafe.Sizeof(*t)) + 8*len(t.ctrl) + int(unsafe.Sizeof(sessSlot{}))*len(t.slots) +
		e.locs.bytes() + 48*len(e.spilled)
	ext := func(p *prule) int {
		if p.ext == nil {
			return 0
		}
		return int(unsafe.Sizeof(extMatch{}))
	}
	for g, cw := range t.ctrl {
		for b := ^cw & ctrlMSB; b != 0; b &= b - 1 {
			s := &t.slots[g*8+bits.TrailingZeros64(b)>>3]
			m += ext(&s.first)
			rs := s.rest()
			for i := range rs {
				m += int(unsafe.Sizeof(prule{})) + ext(&rs[i])
			}
		}
	}
	return m
}

// isSpilled reports whether k's session has moved to tssCore (the map
// is usually empty, and then not hashed).
func (e *sessEngine) isSpilled(k sessKey) bool {
	return len(e.spilled) > 0 && e.spilled[k] > 0
}

// insertPDR adds a rule with PDI fields to the session engine, or to
// tssCore if it names no session exactly or its session has moved there.
func (c *RankedTuple) insertPDR(cr crule) {
	k, ok := sessKeyOf(&cr)
	if !ok {
		c.pdr.insertIn(c.pdr.top, cr)
		return
	}
	if c.sess.isSpilled(k) {
		c.sess.spilled[k]++
		c.pdr.insertIn(c.pdr.top, cr)
		return
	}
	spill := c.sess.insert(k, packPDR(&cr))
	if spill == nil {
		return
	}
	for i := range spill {
		c.pdr.insertIn(c.pdr.top, spill[i].crule())
	}
	c.sess.evict(k)
	c.sess.spilled[k] = len(spill)
}

// deletePDR removes a rule with PDI fields from whichever engine holds
// it.
func (c *RankedTuple) deletePDR(id uint32) error {
	if c.sess.delete(id) {
		return nil
	}
	r, err := c.pdr.deleteLocked(id)
	if err != nil {
		return err
	}
	if k, ok := sessKeyOf(&r); ok {
		if n := c.sess.spilled[k]; n > 1 {
			c.sess.spilled[k] = n - 1
		} else {
			delete(c.sess.spilled, k)
		}
	}
	return nil
}
