package upfc

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// maxRulesPerPDR bounds the classifier rules one PDR expands into (QFIs x
// SDF filters x port ranges), so that a request cannot make the UPF build
// an enormous table.
const maxRulesPerPDR = 1024

// compile turns a session into the immutable form UPF-U executes
// (rules.Session). The state objects of the session (token buckets,
// counters) go into the snapshot by pointer. endMarkers are the FARs whose
// update asked for End Markers (SNDEM): set in this snapshot only.
func (c *UPFC) compile(s *session, endMarkers map[uint32]bool) (*rules.Session, *reject) {
	snap := &rules.Session{SEID: s.seid, CPSEID: s.cpSEID}

	ids := sortedKeys(s.pdrs)
	// TS 29.244 §5.2.1: PDRs in precedence order; equal precedences by
	// PDR ID so that the order (and the classifiers' tie-break) is fixed.
	slices.SortStableFunc(ids, func(a, b uint16) int {
		return cmp.Compare(s.pdrs[a].spec.Precedence, s.pdrs[b].spec.Precedence)
	})

	for _, id := range ids {
		if u := s.pdrs[id].spec.PDI.UEIP; u != nil {
			if snap.UEIPv4.IsValid() && snap.UEIPv4 != u.IPv4 {
				return nil, ruleFailure(pfcp.RuleTypePDR, uint32(id), "UE IP %v differs from the session's %v", u.IPv4, snap.UEIPv4)
			}
			snap.UEIPv4 = u.IPv4
		}
	}

	fars := make(map[uint32]*rules.FAR, len(s.fars))
	for id, f := range s.fars {
		fars[id] = compileFAR(&f.spec)
		fars[id].SendEndMarker = endMarkers[id]
		// TS 29.244 §5.2.4.1: a buffering FAR is controlled by the BAR it
		// names; the BAR's Suggested Buffering Packets Count bounds the
		// session's buffer (a session has one BAR, §7.5.2.6).
		if b := s.bar; b != nil && b.SuggestedBufferingPackets != 0 && f.spec.BARID != nil && *f.spec.BARID == b.ID {
			snap.BufferPackets = int(b.SuggestedBufferingPackets)
		}
	}
	qers := make(map[uint32]*rules.QER, len(s.qers))
	for id, q := range s.qers {
		qers[id] = &rules.QER{ID: id, QFI: q.spec.QFI, ULOpen: !q.spec.Gate.ULClosed, DLOpen: !q.spec.Gate.DLClosed,
			MBRUL: q.mbrUL, MBRDL: q.mbrDL}
	}
	urrs := make(map[uint32]*rules.URR, len(s.urrs))
	for id, u := range s.urrs {
		r := &rules.URR{ID: id, Counters: u.counters}
		base := u.track.base.Volume
		if t := u.spec.VolumeThreshold; t != nil && u.spec.Triggers&pfcp.TriggerVolumeThreshold != 0 {
			r.Threshold = absolute(base, t)
		}
		if q := u.spec.VolumeQuota; q != nil {
			r.Quota = absolute(base, q)
			r.QuotaSpent = u.track.quotaSpent
		}
		urrs[id] = r
	}

	var up, down tableBuilder
	teids := make(map[uint32]struct{})
	snap.PDRs = make([]*rules.PDR, 0, len(ids))
	for i, id := range ids {
		st := s.pdrs[id]
		p := &st.spec
		out := &rules.PDR{ID: id, Precedence: p.Precedence, Source: rules.Interface(p.PDI.SourceInterface),
			RemoveOuterHeader: p.OuterHeaderRemoval != nil, FAR: fars[p.FARID]}
		for _, q := range dedup(p.QERIDs) {
			out.QERs = append(out.QERs, qers[q])
		}
		for _, u := range dedup(p.URRIDs) {
			out.URRs = append(out.URRs, urrs[u])
		}
		snap.PDRs = append(snap.PDRs, out)
		if st.teid != 0 {
			teids[st.teid] = struct{}{}
		}

		rs := pdrRules(st, snap.UEIPv4)
		if len(rs) > maxRulesPerPDR {
			return nil, ruleFailure(pfcp.RuleTypePDR, uint32(id), "expands to %d classifier rules (limit %d)", len(rs), maxRulesPerPDR)
		}
		tb, list := &down, &snap.DownlinkRules
		if p.PDI.SourceInterface == pfcp.InterfaceAccess {
			tb, list = &up, &snap.UplinkRules
		}
		for _, r := range rs {
			r.ID = uint32(i)
			*list = append(*list, r)
		}
		tb.add(uint32(i), rs)
	}
	snap.TEIDs = sortedKeys(teids)

	if c.cfg.NoSessionTables {
		// The data path inserts the rules into its own table and cannot
		// refuse them: check them here, where a PFCP cause can.
		for _, list := range [][]classify.Rule{snap.UplinkRules, snap.DownlinkRules} {
			for i := range list {
				if err := list[i].Validate(); err != nil {
					return nil, &reject{cause: pfcp.CauseRuleCreationModificationFailure, detail: err.Error()}
				}
			}
		}
		return snap, nil
	}
	var err error
	if snap.Uplink, err = up.build(c.cfg.Classifier); err != nil {
		return nil, &reject{cause: pfcp.CauseRuleCreationModificationFailure, detail: fmt.Sprintf("uplink classifier: %v", err)}
	}
	if snap.Downlink, err = down.build(c.cfg.Classifier); err != nil {
		return nil, &reject{cause: pfcp.CauseRuleCreationModificationFailure, detail: fmt.Sprintf("downlink classifier: %v", err)}
	}
	return snap, nil
}

func compileFAR(f *pfcp.CreateFAR) *rules.FAR {
	out := &rules.FAR{ID: f.ID, Action: rules.Action(f.ApplyAction)}
	if f.BARID != nil {
		out.BARID = *f.BARID
	}
	if fw := f.Forwarding; fw != nil {
		out.Dest = rules.Interface(fw.Destination)
		out.NetworkInstance = fw.NetworkInstance
		// checkFAR lets a FAR that does not forward keep an Outer Header
		// Creation it could not use; UPF-U must not take that one for a
		// tunnel (End Markers go to a FAR's previous tunnel, §8.2.31).
		if o := fw.OuterHeaderCreation; o != nil && gtpuTunnel(o) {
			out.Encap = &rules.Encap{TEID: o.TEID, Peer: netip.AddrPortFrom(o.IPv4, gtpuPort)}
		}
	}
	return out
}

// pdrRules expands a PDR's PDI into classifier rules (IDs left 0): one
// per QFI, SDF filter and port range combination (L25GC §4: the PDI fields
// are the classification tuple).
func pdrRules(st *pdrState, ueIP netip.Addr) []classify.Rule {
	p := &st.spec
	base := classify.Rule{Precedence: p.Precedence, Has: classify.FieldSourceInterface,
		SourceInterface: uint8(p.PDI.SourceInterface)}
	if st.teid != 0 {
		base.Has |= classify.FieldTEID
		base.TEID = st.teid
	}
	if u := p.PDI.UEIP; u != nil {
		base.UEIP = classify.PrefixFromNetip(netip.PrefixFrom(u.IPv4, 32))
	}
	bases := []classify.Rule{base}
	if len(p.PDI.QFIs) > 0 {
		bases = bases[:0]
		for _, q := range dedup(p.PDI.QFIs) {
			r := base
			r.Has |= classify.FieldQFI
			r.QFI = q
			bases = append(bases, r)
		}
	}
	if len(st.filters) == 0 {
		return bases
	}
	uplink := p.PDI.SourceInterface == pfcp.InterfaceAccess
	var out []classify.Rule
	for _, b := range bases {
		for _, fd := range st.filters {
			out = append(out, fd.Rules(b, uplink, ueIP)...)
		}
	}
	return out
}

func dedup[T comparable](xs []T) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// tableBuilder collects one direction's classifier rules. rules.Session
// wants a classifier whose rule IDs are PDR indexes; a PDR that expands to
// several rules needs distinct IDs, so then rules are numbered
// index<<16|n and the table is wrapped to map results back.
type tableBuilder struct {
	rules []classify.Rule
	multi bool
}

func (t *tableBuilder) add(index uint32, rs []classify.Rule) {
	if len(rs) > 1 {
		t.multi = true
	}
	for n := range rs {
		rs[n].ID = index<<16 | uint32(n)
	}
	t.rules = append(t.rules, rs...)
}

func (t *tableBuilder) build(kind classify.Kind) (classify.Classifier, error) {
	if len(t.rules) == 0 {
		return nil, nil // a nil classifier matches nothing
	}
	if !t.multi {
		for i := range t.rules {
			t.rules[i].ID >>= 16
		}
	}
	var cl classify.Classifier
	var err error
	if kind == "" {
		cl, err = classify.ForTable(t.rules, classify.Hints{})
	} else {
		cl, err = classify.Build(kind, t.rules)
	}
	if err != nil {
		return nil, err
	}
	if !t.multi {
		return cl, nil
	}
	pc := &pdrClassifier{inner: cl, next: make(map[uint32]uint32)}
	for _, r := range t.rules {
		idx := r.ID >> 16
		pc.next[idx] = max(pc.next[idx], r.ID&0xffff+1)
	}
	return pc, nil
}

// pdrClassifier presents a classifier whose rules are numbered
// index<<16|n as one whose rule IDs are PDR indexes: Lookup returns the
// index, Insert adds one more rule for an index, Delete removes all of an
// index's rules.
type pdrClassifier struct {
	inner classify.Classifier
	mu    sync.Mutex
	next  map[uint32]uint32 // PDR index -> next free n
}

// Lookup implements classify.Classifier.
func (p *pdrClassifier) Lookup(h *classify.Header) (uint32, bool) {
	id, ok := p.inner.Lookup(h)
	return id >> 16, ok
}

// Insert implements classify.Classifier.
func (p *pdrClassifier) Insert(r classify.Rule) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.ID > 0xffff || p.next[r.ID] > 0xfffe {
		return fmt.Errorf("%w: PDR index %d", classify.ErrBadRule, r.ID)
	}
	idx := r.ID
	r.ID = idx<<16 | p.next[idx]
	if err := p.inner.Insert(r); err != nil {
		return err
	}
	p.next[idx]++
	return nil
}

// Delete implements classify.Classifier.
func (p *pdrClassifier) Delete(index uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.next[index]
	if !ok || index > 0xffff {
		return fmt.Errorf("%w: PDR index %d", classify.ErrNotFound, index)
	}
	for i := range n {
		// Gaps are fine: every rule of the index goes.
		_ = p.inner.Delete(index<<16 | i)
	}
	delete(p.next, index)
	return nil
}

// Len implements classify.Classifier (rules, not PDRs).
func (p *pdrClassifier) Len() int { return p.inner.Len() }

// MemoryBytes implements classify.Classifier.
func (p *pdrClassifier) MemoryBytes() int { return p.inner.MemoryBytes() }

// Name implements classify.Classifier.
func (p *pdrClassifier) Name() string { return "pdr(" + p.inner.Name() + ")" }

// absolute turns a volume threshold or quota, counted from the start of
// the current measurement (base), into the counter values at which it is
// reached (see urrTrack). Absent fields stay 0.
func absolute(base rules.Volume, v *pfcp.Volume) rules.Volume {
	var out rules.Volume
	if v.HasTotal {
		out.Total = base.Total + max(v.Total, 1)
	}
	if v.HasUL {
		out.UL = base.UL + max(v.UL, 1)
	}
	if v.HasDL {
		out.DL = base.DL + max(v.DL, 1)
	}
	return out
}
