package upfc

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// session is UPF-C's view of one PFCP session. A session value is never
// changed once committed: a modification works on a clone and swaps it in
// (so a failed modification leaves the committed one untouched). The
// state objects (token buckets, counters) are shared by pointer between
// the clone and the original, and so between successive snapshots.
type session struct {
	seid, cpSEID uint64
	cpFSEID      pfcp.FSEID
	assoc        string // association key (CP Node ID)

	pdrs map[uint16]*pdrState
	fars map[uint32]*farState
	qers map[uint32]*qerState
	urrs map[uint32]*urrState
	bar  *pfcp.CreateBAR

	snapshot *rules.Session // what the data path executes

	// seq is the session's version (SessionRecord.Seq), +1 at the end of
	// every step that changed it (endStep). Unlike the rest of a committed
	// session it is written in place, under UPFC.mu; clone copies it.
	seq uint64
}

type pdrState struct {
	spec    pfcp.CreatePDR     // PDI.FTEID as the CP sent it
	teid    uint32             // local F-TEID resolved (allocated for CHOOSE); 0 = none
	filters []*FlowDescription // PDI.SDFFilters parsed
}

type farState struct {
	spec pfcp.CreateFAR
}

type qerState struct {
	spec         pfcp.CreateQER
	mbrUL, mbrDL *rules.TokenBucket
}

type urrState struct {
	spec     pfcp.CreateURR
	counters *rules.Counters
	track    *urrTrack
}

// urrTrack is a URR's reporting state, shared across snapshots. Guarded
// by UPFC.mu.
//
// The data path's Counters only ever grow. A measurement (what one Usage
// Report carries, TS 29.244 §5.2.2.1) is the growth since the last report:
// base is the counters' value then. Thresholds and quotas are compiled
// into the snapshot as absolute counter values (base + threshold), so the
// data path compares with one load and UPF-C recompiles the session when a
// report moves base (rebase).
type urrTrack struct {
	seqn  uint32      // UR-SEQN of the next report (§8.2.77)
	start time.Time   // start of the current measurement
	base  rules.Usage // the counters at the start of the current measurement
	// quotaSpent: the volume quota was used up (§5.2.2.2.1). It stays so,
	// and the PDRs' packets dropped, until an Update URR grants a new one.
	quotaSpent bool
	// period, due and timer: periodic reporting (PERIO, §5.2.2.2.1)
	// every period, the next report due at due; 0, zero and nil without
	// it. A track restored from its record has period and due and no
	// timer until armPeriodic arms one for what is left of the period.
	period time.Duration
	due    time.Time
	timer  *time.Timer
}

// cpKey names a session as its CP function does: by association and CP
// F-SEID (TS 29.244 §8.2.37: the CP function allocates the SEID, unique
// among its sessions with this UPF).
type cpKey struct {
	assoc string
	seid  uint64
}

func (s *session) cpKey() cpKey { return cpKey{s.assoc, s.cpSEID} }

func (s *session) clone() *session {
	n := *s
	n.pdrs = maps.Clone(s.pdrs)
	n.fars = maps.Clone(s.fars)
	n.qers = maps.Clone(s.qers)
	n.urrs = maps.Clone(s.urrs)
	n.snapshot = nil
	return &n
}

// createdPDRs are the Created PDRs of an establishment's answer for s
// (§7.5.3.2): the F-TEIDs s's PDRs had the UPF choose, by PDR ID.
func (s *session) createdPDRs(n3 netip.Addr) []pfcp.CreatedPDR {
	var out []pfcp.CreatedPDR
	for id, p := range s.pdrs {
		if f := p.spec.PDI.FTEID; f != nil && f.Choose && p.teid != 0 {
			out = append(out, pfcp.CreatedPDR{ID: id, LocalFTEID: &pfcp.FTEID{TEID: p.teid, IPv4: n3}})
		}
	}
	slices.SortFunc(out, func(a, b pfcp.CreatedPDR) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// teidSet is the set of local TEIDs the session's PDRs use.
func (s *session) teidSet() map[uint32]struct{} {
	set := make(map[uint32]struct{}, len(s.pdrs))
	for _, p := range s.pdrs {
		if p.teid != 0 {
			set[p.teid] = struct{}{}
		}
	}
	return set
}

// reject is a validation failure turned into a response cause.
type reject struct {
	cause       pfcp.Cause
	offendingIE uint16
	failed      *pfcp.RuleID
	detail      string
}

func (r *reject) Error() string {
	s := r.cause.String()
	if r.failed != nil {
		s += fmt.Sprintf(" (rule type %d id %d)", r.failed.Type, r.failed.ID)
	}
	if r.offendingIE != 0 {
		s += fmt.Sprintf(" (IE %d)", r.offendingIE)
	}
	return s + ": " + r.detail
}

func missingIE(cause pfcp.Cause, ie uint16, format string, args ...any) *reject {
	return &reject{cause: cause, offendingIE: ie, detail: fmt.Sprintf(format, args...)}
}

func ruleFailure(typ uint8, id uint32, format string, args ...any) *reject {
	return &reject{cause: pfcp.CauseRuleCreationModificationFailure, failed: &pfcp.RuleID{Type: typ, ID: id},
		detail: fmt.Sprintf(format, args...)}
}

// HandleSessionEstablishment implements pfcp.UPHandler (TS 29.244 §6.3.2,
// §7.5.2, §7.5.3).
func (c *UPFC) HandleSessionEstablishment(_ context.Context, req *pfcp.SessionEstablishmentRequest) *pfcp.SessionEstablishmentResponse {
	resp := &pfcp.SessionEstablishmentResponse{NodeID: c.cfg.NodeID}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beginStep()
	defer c.endStep()
	s, created, rej := c.establish(req)
	if rej != nil {
		c.log.Info("PFCP session establishment rejected", "err", rej)
		resp.Cause, resp.OffendingIE, resp.FailedRuleID = rej.cause, rej.offendingIE, rej.failed
		return resp
	}
	resp.Cause = pfcp.CauseRequestAccepted
	resp.UPFSEID = &pfcp.FSEID{SEID: s.seid, IPv4: c.cfg.N4Addr}
	resp.CreatedPDRs = created
	c.log.Debug("PFCP session established", "seid", s.seid, "cp_seid", s.cpSEID, "pdrs", len(s.pdrs))
	return resp
}

func (c *UPFC) establish(req *pfcp.SessionEstablishmentRequest) (*session, []pfcp.CreatedPDR, *reject) {
	if req == nil {
		return nil, nil, missingIE(pfcp.CauseMandatoryIEMissing, pfcp.IENodeID, "no request")
	}
	// §7.5.2: Node ID, CP F-SEID, Create PDR and Create FAR are mandatory.
	if !req.NodeID.IP.IsValid() && req.NodeID.FQDN == "" {
		return nil, nil, missingIE(pfcp.CauseMandatoryIEMissing, pfcp.IENodeID, "Node ID missing")
	}
	key := req.NodeID.String()
	if c.assocs[key] == nil {
		// §6.3.2.2 (and §6.2.6.1): session messages need an association.
		return nil, nil, &reject{cause: pfcp.CauseNoEstablishedPFCPAssociation, detail: "no association with " + key}
	}
	if req.CPFSEID.SEID == 0 && !req.CPFSEID.IPv4.IsValid() {
		return nil, nil, missingIE(pfcp.CauseMandatoryIEMissing, pfcp.IEFSEID, "CP F-SEID missing")
	}
	if len(req.CreatePDRs) == 0 {
		return nil, nil, missingIE(pfcp.CauseMandatoryIEMissing, pfcp.IECreatePDR, "no Create PDR")
	}
	if len(req.CreateFARs) == 0 {
		return nil, nil, missingIE(pfcp.CauseMandatoryIEMissing, pfcp.IECreateFAR, "no Create FAR")
	}
	if seid, ok := c.byCP[cpKey{key, req.CPFSEID.SEID}]; ok {
		// The CP function asks again for a session it has here: it
		// cannot be another, the CP F-SEID names one session of the CP
		// function (§8.2.37), so it is this one asked for again by a CP
		// function that did not get, or did not keep, the answer (one
		// that took over from a failed one, issue 36). It is answered
		// as a retransmitted request is (§6.4: the same response),
		// with the session's F-SEID and the F-TEIDs it chose, and left
		// as it is: a second session would be an orphan whose TEIDs and
		// reports nobody owns. Departure: TS 29.244 does not say what a
		// UP function does with a new request (new sequence number)
		// for an existing CP F-SEID; creating a second session is what
		// it must not do.
		s := c.sessions[seid]
		c.repeated++
		return s, s.createdPDRs(c.cfg.N3Addr), nil
	}
	seid, ok := c.allocSEID()
	if !ok {
		return nil, nil, &reject{cause: pfcp.CauseNoResourcesAvailable, detail: "no free SEID"}
	}
	s := &session{
		seid: seid, cpSEID: req.CPFSEID.SEID, cpFSEID: req.CPFSEID, assoc: key,
		pdrs: make(map[uint16]*pdrState, len(req.CreatePDRs)),
		fars: make(map[uint32]*farState, len(req.CreateFARs)),
		qers: make(map[uint32]*qerState, len(req.CreateQERs)),
		urrs: make(map[uint32]*urrState, len(req.CreateURRs)),
	}
	tx := c.newTxn(s)
	if rej := tx.createAll(req.CreateFARs, req.CreateQERs, req.CreateURRs, req.CreateBAR, req.CreatePDRs); rej != nil {
		return nil, nil, rej
	}
	if rej := tx.finish(); rej != nil {
		return nil, nil, rej
	}
	c.commit(nil, s)
	if req.RESTI {
		c.restoredTEIDs(s)
	}
	return s, tx.created, nil
}

// restoredTEIDs takes note of a session an SMF established again with
// RESTI after this UPF restarted (TS 23.527 §4.3.2, TS 29.244 §5.5.1):
// its Local F-TEIDs are ones this UPF handed out in its previous life,
// now held by the session like any other TEID, so CHOOSE never hands them
// out twice. The other TEIDs of that life are kept from new sessions by
// where this life's count starts (firstIDs), not here. c.mu held.
func (c *UPFC) restoredTEIDs(s *session) {
	c.restored++
	c.log.Debug("PFCP session restored (RESTI)", "seid", s.seid, "cp_seid", s.cpSEID, "teids", len(s.teidSet()))
}

// HandleSessionModification implements pfcp.UPHandler (TS 29.244 §6.3.3,
// §7.5.4, §7.5.5). The request is applied to a copy of the session, which
// replaces the session only if every change is valid.
func (c *UPFC) HandleSessionModification(_ context.Context, seid uint64, req *pfcp.SessionModificationRequest) *pfcp.SessionModificationResponse {
	resp := &pfcp.SessionModificationResponse{}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beginStep()
	defer c.endStep()
	created, reports, rej := c.modify(seid, req)
	if rej != nil {
		c.log.Info("PFCP session modification rejected", "seid", seid, "err", rej)
		resp.Cause, resp.OffendingIE, resp.FailedRuleID = rej.cause, rej.offendingIE, rej.failed
		return resp
	}
	resp.Cause = pfcp.CauseRequestAccepted
	resp.CreatedPDRs, resp.UsageReports = created, reports
	return resp
}

func (c *UPFC) modify(seid uint64, req *pfcp.SessionModificationRequest) ([]pfcp.CreatedPDR, []pfcp.UsageReport, *reject) {
	old := c.sessions[seid]
	if old == nil {
		return nil, nil, &reject{cause: pfcp.CauseSessionContextNotFound, detail: fmt.Sprintf("SEID %#x", seid)}
	}
	if c.assocs[old.assoc] == nil {
		return nil, nil, &reject{cause: pfcp.CauseNoEstablishedPFCPAssociation, detail: "association gone"}
	}
	if req == nil {
		req = &pfcp.SessionModificationRequest{}
	}
	s := old.clone()
	if req.CPFSEID != nil {
		// §7.5.4: present when the CP function changes its F-SEID.
		s.cpFSEID, s.cpSEID = *req.CPFSEID, req.CPFSEID.SEID
	}
	tx := c.newTxn(s)
	// Removals first so that a message may remove and re-create an ID.
	var removedURRs []*urrState
	for _, id := range req.RemovePDRs {
		if s.pdrs[id] == nil {
			return nil, nil, ruleFailure(pfcp.RuleTypePDR, uint32(id), "remove unknown PDR")
		}
		delete(s.pdrs, id)
	}
	for _, id := range req.RemoveFARs {
		if s.fars[id] == nil {
			return nil, nil, ruleFailure(pfcp.RuleTypeFAR, id, "remove unknown FAR")
		}
		delete(s.fars, id)
	}
	for _, id := range req.RemoveQERs {
		if s.qers[id] == nil {
			return nil, nil, ruleFailure(pfcp.RuleTypeQER, id, "remove unknown QER")
		}
		delete(s.qers, id)
	}
	for _, id := range req.RemoveURRs {
		u := s.urrs[id]
		if u == nil {
			return nil, nil, ruleFailure(pfcp.RuleTypeURR, id, "remove unknown URR")
		}
		removedURRs = append(removedURRs, u)
		delete(s.urrs, id)
	}
	if req.RemoveBAR != nil {
		if s.bar == nil || s.bar.ID != *req.RemoveBAR {
			return nil, nil, ruleFailure(pfcp.RuleTypeBAR, uint32(*req.RemoveBAR), "remove unknown BAR")
		}
		s.bar = nil
	}
	if rej := tx.createAll(req.CreateFARs, req.CreateQERs, req.CreateURRs, req.CreateBAR, req.CreatePDRs); rej != nil {
		return nil, nil, rej
	}
	for i := range req.UpdateFARs {
		if rej := tx.updateFAR(&req.UpdateFARs[i]); rej != nil {
			return nil, nil, rej
		}
	}
	for i := range req.UpdateQERs {
		if rej := tx.updateQER(&req.UpdateQERs[i]); rej != nil {
			return nil, nil, rej
		}
	}
	for i := range req.UpdateURRs {
		if rej := tx.updateURR(&req.UpdateURRs[i]); rej != nil {
			return nil, nil, rej
		}
	}
	if req.UpdateBAR != nil {
		if s.bar == nil || s.bar.ID != req.UpdateBAR.ID {
			return nil, nil, ruleFailure(pfcp.RuleTypeBAR, uint32(req.UpdateBAR.ID), "update unknown BAR")
		}
		if req.UpdateBAR.SuggestedBufferingPackets != nil {
			b := *s.bar
			b.SuggestedBufferingPackets = *req.UpdateBAR.SuggestedBufferingPackets
			s.bar = &b
		}
	}
	for i := range req.UpdatePDRs {
		if rej := tx.updatePDR(&req.UpdatePDRs[i]); rej != nil {
			return nil, nil, rej
		}
	}
	var queried []*urrState
	for _, id := range req.QueryURRs {
		u := s.urrs[id]
		if u == nil {
			return nil, nil, ruleFailure(pfcp.RuleTypeURR, id, "query unknown URR")
		}
		queried = append(queried, u)
	}
	if rej := tx.finish(); rej != nil {
		return nil, nil, rej
	}
	// Everything is valid: from here on the change takes effect.
	if len(removedURRs) > 0 || len(queried) > 0 {
		c.flushUsage(seid)
	}
	now := time.Now()
	var reports []pfcp.UsageReport
	for _, u := range removedURRs {
		// §7.5.5.2: a Usage Report for each removed URR, with its final count.
		reports = append(reports, u.report(u.counters.Load(), pfcp.UsageTriggerTermination, now))
	}
	for _, u := range queried {
		// §6.3.3.2 Query URR: an immediate report; the measurement restarts.
		reports = append(reports, u.report(u.counters.Load(), pfcp.UsageTriggerImmediate, now))
	}
	c.commit(old, s)
	for _, f := range tx.onCommit {
		f()
	}
	if len(queried) > 0 || len(tx.onCommit) > 0 {
		// Measurements restarted (queried URRs, new quotas) after the
		// snapshot was compiled: thresholds and quotas count from the
		// new start.
		c.rebase(s)
	}
	return tx.created, reports, nil
}

// HandleSessionDeletion implements pfcp.UPHandler (TS 29.244 §6.3.4,
// §7.5.7): the final usage of every URR is reported.
func (c *UPFC) HandleSessionDeletion(_ context.Context, seid uint64) *pfcp.SessionDeletionResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beginStep()
	defer c.endStep()
	s := c.sessions[seid]
	if s == nil {
		return &pfcp.SessionDeletionResponse{Cause: pfcp.CauseSessionContextNotFound}
	}
	resp := &pfcp.SessionDeletionResponse{Cause: pfcp.CauseRequestAccepted}
	// Withdrawn from the data path first: its last packets are counted
	// (an offload adds its counts in on Remove, UsageFlusher).
	c.dropSession(seid, s)
	now := time.Now()
	for _, id := range sortedKeys(s.urrs) {
		u := s.urrs[id]
		resp.UsageReports = append(resp.UsageReports, u.report(u.counters.Load(), pfcp.UsageTriggerTermination, now))
	}
	c.log.Debug("PFCP session deleted", "seid", seid)
	return resp
}

// report builds a Usage Report of the usage from the start of the current
// measurement to cur (the counters' value at the report's moment) and
// starts the next measurement. UPFC.mu held.
func (u *urrState) report(cur rules.Usage, trigger uint32, now time.Time) pfcp.UsageReport {
	use := since(cur, u.track.base)
	u.track.base = maxUsage(cur, u.track.base)
	r := pfcp.UsageReport{
		URRID: u.spec.ID, URSEQN: u.track.seqn, Trigger: trigger,
		Volume: pfcp.Volume{Total: use.Volume.Total, UL: use.Volume.UL, DL: use.Volume.DL,
			HasTotal: true, HasUL: true, HasDL: true},
		Start: u.track.start, End: now,
	}
	u.track.seqn++
	u.track.start = now
	return r
}

// allocSEID returns a local SEID not in use. SEIDs count up from where
// this life starts (firstIDs) and wrap, so a released SEID is not reused
// soon, nor one of the previous life. c.mu held.
func (c *UPFC) allocSEID() (uint64, bool) {
	for range len(c.sessions) + 2 {
		seid := c.nextSEID
		c.nextSEID++
		if seid == 0 {
			continue
		}
		if c.sessions[seid] == nil {
			return seid, true
		}
	}
	return 0, false
}

// commit makes s the session's state: TEIDs change owner, the snapshot
// goes to the data path. old is the state it replaces (nil: new). c.mu held.
func (c *UPFC) commit(old, s *session) {
	next := s.teidSet()
	if old != nil {
		for teid := range old.teidSet() {
			if _, keep := next[teid]; !keep && c.teids[teid] == s.seid {
				c.releaseTEID(teid)
			}
		}
	}
	for teid := range next {
		c.holdTEID(teid, s.seid)
	}
	if old != nil && old.cpKey() != s.cpKey() && c.byCP[old.cpKey()] == s.seid {
		delete(c.byCP, old.cpKey()) // §7.5.4: the CP function changed its F-SEID
	}
	c.sessions[s.seid] = s
	c.byCP[s.cpKey()] = s.seid
	c.touched(s.seid)
	c.armPeriodic(old, s)
	c.dp.Install(s.snapshot)
}

// since is the usage from base to cur, field by field (0 where a later
// report already moved base past cur).
func since(cur, base rules.Usage) rules.Usage {
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return rules.Usage{
		Volume: rules.Volume{Total: sub(cur.Volume.Total, base.Volume.Total),
			UL: sub(cur.Volume.UL, base.Volume.UL), DL: sub(cur.Volume.DL, base.Volume.DL)},
		ULPackets: sub(cur.ULPackets, base.ULPackets), DLPackets: sub(cur.DLPackets, base.DLPackets),
	}
}

func maxUsage(a, b rules.Usage) rules.Usage {
	return rules.Usage{
		Volume:    rules.Volume{Total: max(a.Volume.Total, b.Volume.Total), UL: max(a.Volume.UL, b.Volume.UL), DL: max(a.Volume.DL, b.Volume.DL)},
		ULPackets: max(a.ULPackets, b.ULPackets), DLPackets: max(a.DLPackets, b.DLPackets),
	}
}
