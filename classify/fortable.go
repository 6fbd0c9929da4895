package classify

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Hints describe a table to ForTable.
type Hints struct {
	// Global marks one table shared by many sessions (the UPF-wide table
	// of upfu.Config.GlobalPDRTable); it starts indexed whatever its
	// initial size.
	Global bool
}

// smallTable is the size up to which ForTable keeps its own small index
// (small.go: a plain scan up to leafMax rules, hashed splits above)
// instead of RankedTuple. Measured on the 5G per-session workloads
// (BenchmarkSession, `taskset -c 1`, shared cores, a quiet hour):
// 2/4/16/32/64/100 PDRs 5.5-6.1/7.9-10.1/21-24/22-23/21-24/21-27 ns. The
// index also beats
// RankedTuple 2-3x on home-gateway tables of 128-1000 rules
// (BenchmarkHomeGateway), but it is rebuilt on every update, which costs
// milliseconds for a few hundred adversarial rules, so larger tables
// still go to RankedTuple, whose updates are incremental.
const smallTable = 128

// ForTable returns the classifier the UPF should use for a table: a scan
// of packed rules while the table is small, switching once (for good) to
// RankedTuple when it grows past smallTable rules or when hints.Global is
// set. The result is safe for concurrent lookups during updates.
func ForTable(rules []Rule, hints Hints) (Classifier, error) {
	a := &Auto{}
	if hints.Global || len(rules) > smallTable {
		idx, err := NewRankedTuple(rules)
		if err != nil {
			return nil, fmt.Errorf("classify: table: %w", err)
		}
		a.idx.Store(idx)
		return a, nil
	}
	sorted, err := checkRules(rules)
	if err != nil {
		return nil, fmt.Errorf("classify: table: %w", err)
	}
	a.rules = sorted
	a.publish()
	return a, nil
}

// Auto is the classifier ForTable returns. While small, lookups scan
// its packed rules directly (no second dispatch); once indexed, they go
// to the RankedTuple.
type Auto struct {
	mu sync.Mutex
	// scan[i] is a tiny table's packed rules that a header from source
	// interface i can match (the first of scan[i].n; rules that name no
	// interface are in every list), read straight from here: a session's
	// uplink and downlink PDRs never both need testing, and in a UPF
	// holding many sessions a session's table is usually cold, so each
	// pointer on the way to its rules is one more cache miss. Nil when
	// the table is not one leaf.
	scan      [scanIfs]atomic.Pointer[srule]
	small     atomic.Pointer[smallIndex] // nil once indexed
	idx       atomic.Pointer[RankedTuple]
	rules     []Rule // writer: the small table's rules in rank order
	scanBytes int    // writer: the scan lists' size
}

// scanIfs is the number of source interfaces with scan lists: access,
// core, SGi-LAN and CP-function (TS 29.244 §8.2.2); headers from others
// take the small index.
const scanIfs = 4

// noRules is the scan list of an interface no rule can match.
var noRules srule

// Lookup implements Classifier.
func (a *Auto) Lookup(h *Header) (uint32, bool) {
	var p *srule
	if h.SourceInterface < scanIfs {
		p = a.scan[h.SourceInterface].Load()
	}
	if p == nil {
		if x := a.small.Load(); x != nil {
			return x.lookup(h)
		}
		return a.idx.Load().Lookup(h)
	}
	// A tiny table is one leaf holding every rule: scan it here, saving a
	// call.
	// Sliced from an array type longer than any uint16 count: no length
	// checks, which unsafe.Slice would make on every lookup.
	rules := (*[1 << 16]srule)(unsafe.Pointer(p))[:p.n:p.n]
	hw := packWord(h)
	for i := range rules {
		r := &rules[i]
		if (hw^r.w)&r.wm != 0 {
			continue
		}
		ue := (h.UEIP.Lo^r.ue.lo)&r.ue.mlo | (h.UEIP.Hi^r.ue.hi)&r.ue.mhi
		if !r.rest {
			if ue == 0 {
				return uint32(r.rank), true
			}
			continue
		}
		// srule.matches, written out: the call is not inlined.
		if ue|(h.SrcIP.Lo^r.src.lo)&r.src.mlo|(h.SrcIP.Hi^r.src.hi)&r.src.mhi|
			(h.DstIP.Lo^r.dst.lo)&r.dst.mlo|(h.DstIP.Hi^r.dst.hi)&r.dst.mhi != 0 {
			continue
		}
		if (uint32(r.sport.n)-uint32(h.SrcPort-r.sport.lo))|(uint32(r.dport.n)-uint32(h.DstPort-r.dport.lo)) > 0xffff {
			continue
		}
		if r.ext != nil && !r.ext.match(h) {
			continue
		}
		return uint32(r.rank), true
	}
	return 0, false
}

// publish indexes a.rules and makes them the small table (writer).
func (a *Auto) publish() {
	x := newSmallIndex(a.rules)
	a.small.Store(x)
	a.scanBytes = 0
	for i := range a.scan {
		var p *srule
		if x.flat {
			list := scanList(x.rules, uint8(i))
			a.scanBytes += len(list) * int(unsafe.Sizeof(srule{}))
			p = &noRules
			if len(list) > 0 {
				p = &list[0]
			}
		}
		a.scan[i].Store(p)
	}
}

// scanList copies, in rank order, the rules a header from source
// interface srcIf can match; its first rule holds the count.
func scanList(rules []srule, srcIf uint8) []srule {
	var out []srule
	for _, r := range rules {
		if r.wm>>40&0xff == 0 || uint8(r.w>>40) == srcIf {
			out = append(out, r)
		}
	}
	if len(out) > 0 {
		out[0].n = uint16(len(out))
	}
	return out
}

// Insert implements Classifier.
func (a *Auto) Insert(r Rule) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if idx := a.idx.Load(); idx != nil {
		return idx.Insert(r)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if slices.ContainsFunc(a.rules, func(x Rule) bool { return x.ID == r.ID }) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	at, _ := slices.BinarySearchFunc(a.rules, r.rank(), func(x Rule, k uint64) int { return cmpU64(x.rank(), k) })
	a.rules = slices.Insert(slices.Clone(a.rules), at, r)
	if len(a.rules) <= smallTable {
		a.publish()
		return nil
	}
	// The index is complete before it is published, and the small table
	// is withdrawn only after, so lookups always see every rule.
	idx, err := NewRankedTuple(a.rules)
	if err != nil {
		a.rules = slices.Delete(a.rules, at, at+1)
		return fmt.Errorf("classify: index table: %w", err)
	}
	a.idx.Store(idx)
	for i := range a.scan {
		a.scan[i].Store(nil)
	}
	a.small.Store(nil)
	a.rules = nil
	return nil
}

// Delete implements Classifier.
func (a *Auto) Delete(id uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if idx := a.idx.Load(); idx != nil {
		return idx.Delete(id)
	}
	i := slices.IndexFunc(a.rules, func(x Rule) bool { return x.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	a.rules = slices.Delete(slices.Clone(a.rules), i, i+1)
	a.publish()
	return nil
}

// Len implements Classifier.
func (a *Auto) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if idx := a.idx.Load(); idx != nil {
		return idx.Len()
	}
	return len(a.rules)
}

// MemoryBytes implements Classifier.
func (a *Auto) MemoryBytes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if idx := a.idx.Load(); idx != nil {
		return idx.MemoryBytes()
	}
	return a.small.Load().memoryBytes() + a.scanBytes
}

// Name implements Classifier.
func (a *Auto) Name() string {
	if a.idx.Load() != nil {
		return "auto(" + string(KindRankedTuple) + ")"
	}
	return "auto(scan)"
}
