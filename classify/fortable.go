package classify

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Hints describe a table to ForTable.
type Hints struct {
	// Global marks one table shared by many sessions (UPF-wide lookup by
	// TEID or UE IP first); it starts indexed whatever its initial size.
	Global bool
}

// smallTable is the size up to which ForTable scans packed rules instead
// of indexing. Measured on the 5G per-session workloads
// (BenchmarkSession, `taskset -c 1`, see the issue 4 report): the scan
// wins at every session size measured, 2-100 PDRs; RankedTuple's
// session-keyed splits cost more than the scan until tables are several
// hundred rules. ClassBench tables that size index better; those reach
// ForTable only as Global tables.
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
	mu    sync.Mutex
	small atomic.Pointer[[]srule] // nil once indexed
	idx   atomic.Pointer[RankedTuple]
	rules []Rule // writer: the small table's rules in rank order
}

// srule is a rule packed for scanning: the exact-match fields in one
// masked word, prefixes as masked halves, ports as low end and width.
type srule struct {
	w, wm        uint64 // TEID | QFI<<32 | source interface<<40 | protocol<<48 | ToS<<56
	src, dst, ue pmask
	sport, dport span16
	rank         uint64
	ext          *extMatch // network instance, application, SPI, flow label; nil if none
}

type pmask struct{ hi, lo, mhi, mlo uint64 }

func pmaskOf(p Prefix) pmask {
	mhi, mlo := mask128(p.Len)
	return pmask{p.Addr.Hi & mhi, p.Addr.Lo & mlo, mhi, mlo}
}

func packWord(h *Header) uint64 {
	return uint64(h.TEID) | uint64(h.QFI)<<32 | uint64(h.SourceInterface)<<40 | uint64(h.Proto)<<48 | uint64(h.ToS)<<56
}

func packRule(r *Rule) srule {
	s := srule{src: pmaskOf(r.SrcIP), dst: pmaskOf(r.DstIP), ue: pmaskOf(r.UEIP),
		sport: span16{0, 0xffff}, dport: span16{0, 0xffff}, rank: r.rank()}
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
		s.sport = spanOf(r.SrcPort)
	}
	if has&FieldDstPort != 0 {
		s.dport = spanOf(r.DstPort)
	}
	if has&(FieldNetworkInstance|FieldAppID|FieldSPI|FieldFlowLabel) != 0 {
		e := &extMatch{}
		if has&FieldNetworkInstance != 0 {
			e.netInst, e.netInstMask = r.NetworkInstance, ^uint32(0)
		}
		if has&FieldAppID != 0 {
			e.app, e.appMask = r.AppID, ^uint32(0)
		}
		if has&FieldSPI != 0 {
			e.spi, e.spiMask = r.SPI, ^uint32(0)
		}
		if has&FieldFlowLabel != 0 {
			e.flowLabel, e.flowLblMask = r.FlowLabel, ^uint32(0)
		}
		s.ext = e
	}
	return s
}

// Lookup implements Classifier.
func (a *Auto) Lookup(h *Header) (uint32, bool) {
	rs := a.small.Load()
	if rs == nil {
		return a.idx.Load().Lookup(h)
	}
	hw := packWord(h)
	for i := range *rs {
		r := &(*rs)[i]
		if (hw^r.w)&r.wm != 0 {
			continue
		}
		if (h.UEIP.Lo^r.ue.lo)&r.ue.mlo|(h.UEIP.Hi^r.ue.hi)&r.ue.mhi|
			(h.SrcIP.Lo^r.src.lo)&r.src.mlo|(h.SrcIP.Hi^r.src.hi)&r.src.mhi|
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

// publish packs a.rules and makes them the small table (writer).
func (a *Auto) publish() {
	rs := make([]srule, len(a.rules))
	for i := range a.rules {
		rs[i] = packRule(&a.rules[i])
	}
	a.small.Store(&rs)
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
	n := 0
	for _, r := range *a.small.Load() {
		n += 136
		if r.ext != nil {
			n += 64
		}
	}
	return n
}

// Name implements Classifier.
func (a *Auto) Name() string {
	if a.idx.Load() != nil {
		return "auto(" + string(KindRankedTuple) + ")"
	}
	return "auto(scan)"
}
