package upfc

// State records (issue 36, §1: state that can move).
//
// Everything another UPF-C instance needs to take over this one's PFCP
// sessions, so that neither the SMF nor the gNB notices, is kept as
// versioned records that package sbi/wire encodes (compact binary, no
// JSON; its layout hash versions the types, so an instance built from
// other record types refuses them with wire.ErrLayoutMismatch):
//
//   - one NodeRecord: this UPF's identity as its peers hold it (Node ID,
//     the N3 address of the F-TEIDs it allocated, the N4 address of its
//     F-SEIDs), its Recovery Time Stamp (TS 29.244 §19A: an SMF that saw
//     another would take the UPF for restarted, sessions lost) and where
//     its SEID and TEID allocators stand (firstIDs: each life counts on
//     from its stamp, so that nothing released lately is handed out again);
//   - one AssociationRecord per PFCP association (§6.2.6): the CP's Node
//     ID, Recovery Time Stamp, CP Function Features and, over UDP, its
//     PFCP address;
//   - one SessionRecord per PFCP session: the UP and CP F-SEIDs, the
//     association, the rules as received and updated (§7.5.2: Create PDR,
//     FAR, QER, URR and BAR, with the Network Instance a FAR got from the
//     UE address), each PDR's local F-TEID (allocated for CHOOSE, §5.5.3,
//     or the CP's), and each URR's reporting state (§5.2.2): UR-SEQN
//     (§8.2.77), the start of the current measurement, the usage counted
//     in it and not yet reported, whether its volume quota is spent, and
//     the deadline of its periodic report.
//
// Each record has a Seq, the object's version: +1 at the end of every step
// that changed the object (a PFCP message handled, a report built, a
// periodic deadline passed: beginStep/endStep). A delete is a record with
// Deleted set and the next Seq (a tombstone). With Config.Recorder set,
// every step hands the records of what it changed to the Recorder before
// its answer leaves (for the replication of later steps); Records gives
// them all at once (a checkpoint); Restore builds a fresh instance from
// them.
//
// Not recorded, and why:
//   - the data-path snapshots (rules.Session) and the parsed SDF filters:
//     compiled again from the rules on restore, exactly as from a message;
//   - the MBR token buckets' fill: a theoretical arrival time on the data
//     path's own monotonic clock, meaningless to another process, and
//     worth at most one burst (100 ms at the rate, bucket); a restored
//     bucket starts full, as after an MBR change. Recording it would make
//     every packet a step;
//   - the URR counters as such: only the usage counted since the last
//     report (URRRecord.Unreported), which is what charging is owed (the
//     next Usage Report, §5.2.2.1, carries it); a restored URR counts on
//     from there. It is read when a record is captured, not moved by a
//     step: a delta carries it as of its step and a checkpoint as of the
//     checkpoint (two captures of one version may differ there, and only
//     there), so a takeover loses only what was counted after the newer
//     of the two, plus what an offloaded fast path counted and had not
//     added in yet (the counters are not flushed for a record; upf adds
//     them in every sync interval);
//   - buffered downlink packets: data, not state; the data path holds them
//     (rules.Buffer) and they die with it. A restored buffering FAR
//     buffers anew, and its first packet notifies the SMF again (NOCP);
//   - reports queued for sending: a queued Downlink Data Report comes
//     again as just said; a usage report whose crossing the data path
//     raised and UPF-C had not built yet shows in the record as usage past
//     its threshold or quota, which Attach raises again (dueReports);
//     path reports come again from path supervision;
//   - the connection to each CP (pfcp.ControlPlane): a restored
//     association keeps the CP's Node ID and address (its identifying
//     data) and is detached until Attach binds it, its sessions' reports
//     held meanwhile (up to Config.ReportQueue) and its periodic reports
//     left due; doing that for the new instance is the N4 front end's
//     step, later;
//   - counters of what happened (Stats): per process.
//
// Restore rebuilds every index from the records: the session table by
// SEID, the TEID table and its places (Config.TEIDPlaces) from the PDRs'
// F-TEIDs, the allocators from NodeRecord, so nothing a restored session
// holds, nor anything allocated lately, is handed out again; and it
// re-arms each periodic report at its recorded deadline (an elapsed one
// fires at once, or at Attach while detached). Its checks are those of a
// PFCP message (a record is input like any other), so a corrupted record
// is refused with ErrBadRecord, never half applied.
//
// For a replay that must give the same records (a later step): what a
// step chooses is in the records it makes. The IDs it allocates follow
// from NodeRecord's NextSEID and NextTEID and the TEIDs held; the clock
// it reads lands in URRRecord.Start and PeriodicDue.

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// ErrBadRecord is wrapped by the errors of Restore and Attach about their
// input.
var ErrBadRecord = errors.New("upfc: bad record")

// Record is one object's record: exactly one of its fields is set.
type Record struct {
	Node        *NodeRecord
	Association *AssociationRecord
	Session     *SessionRecord
}

// NodeRecord is the UPF-C-wide state.
type NodeRecord struct {
	Seq uint64
	// NodeID, N3Addr and N4Addr are the identity the peers hold:
	// Restore refuses records of another UPF.
	NodeID         pfcp.NodeID
	N3Addr, N4Addr netip.Addr
	// Recovery is the Recovery Time Stamp the peers know (§19A).
	Recovery time.Time
	// NextSEID and NextTEID are where the allocators go on from.
	NextSEID uint64
	NextTEID uint32
}

// AssociationRecord is one PFCP association with a CP function (§6.2.6).
type AssociationRecord struct {
	Seq     uint64
	Deleted bool // released: a tombstone, only NodeID is set
	NodeID  pfcp.NodeID
	// Peer is the CP's PFCP address where the binding has one (UDP);
	// invalid for the in-process binding.
	Peer     netip.AddrPort
	Recovery time.Time // the CP's Recovery Time Stamp
	Features uint64    // CP Function Features (§8.2.58)
}

// SessionRecord is one PFCP session (§6.3).
type SessionRecord struct {
	Seq     uint64
	Deleted bool   // deleted: a tombstone, only SEID is set
	SEID    uint64 // the UP F-SEID's SEID (its address is N4Addr)
	CPFSEID pfcp.FSEID
	// Association is the CP's Node ID (pfcp.NodeID.String).
	Association string
	// The rules, each list in ID order. A FAR to the core that named no
	// Network Instance has the one its UE address chose.
	PDRs []PDRRecord
	FARs []pfcp.CreateFAR
	QERs []pfcp.CreateQER
	URRs []URRRecord
	BAR  *pfcp.CreateBAR
}

// PDRRecord is a PDR with its local F-TEID.
type PDRRecord struct {
	// Rule is the PDR as received, its PDI's F-TEID as the CP sent it
	// (CHOOSE stays CHOOSE).
	Rule pfcp.CreatePDR
	// TEID is the local F-TEID's TEID on N3Addr, allocated for CHOOSE or
	// the CP's; 0 without one.
	TEID uint32
}

// URRRecord is a URR with its reporting state.
type URRRecord struct {
	Rule pfcp.CreateURR
	SEQN uint32 // UR-SEQN of the next Usage Report (§8.2.77)
	// Start is when the current measurement began (the Start Time of the
	// next report).
	Start time.Time
	// Unreported is the usage counted since Start, owed to the next
	// report (see the top of this file for when it is read).
	Unreported rules.Usage
	// QuotaSpent: the volume quota was used up and reported; the PDRs'
	// packets are dropped until a new quota comes (§5.2.2.2.1).
	QuotaSpent bool
	// PeriodicDue is when the next periodic report is due (PERIO); zero
	// without periodic reporting.
	PeriodicDue time.Time
}

// Recorder gets the deltas: after each step, the record of every object
// the step changed (a tombstone for one it deleted), in the step's order
// (the node, associations set up, sessions deleted, sessions changed,
// associations released). It is called with UPF-C's lock held, before the
// step's answer or report leaves: it must not call UPF-C, and the records
// are its own.
type Recorder interface {
	Record(r Record)
}

// stepLog collects what the running step changes. c.mu held.
type stepLog struct {
	sessions []uint64       // SEIDs changed or created
	gone     []removed      // sessions deleted
	assocs   []string       // associations set up (keys)
	released []*association // associations released
	// nextSEID and nextTEID are the allocators' positions at the start.
	nextSEID uint64
	nextTEID uint32
}

type removed struct{ seid, seq uint64 }

// beginStep starts a step. c.mu held.
func (c *UPFC) beginStep() {
	c.step.nextSEID, c.step.nextTEID = c.nextSEID, c.nextTEID
}

// touched notes that the step changed (or created) session seid. c.mu
// held.
func (c *UPFC) touched(seid uint64) {
	for _, s := range c.step.sessions {
		if s == seid {
			return
		}
	}
	c.step.sessions = append(c.step.sessions, seid)
}

// endStep moves the version of everything the step changed on and hands
// their records to the Recorder. c.mu held.
func (c *UPFC) endStep() {
	st := &c.step
	rec := c.cfg.Recorder
	if c.nextSEID != st.nextSEID || c.nextTEID != st.nextTEID {
		c.seq++
		if rec != nil {
			n := c.nodeRecord()
			rec.Record(Record{Node: &n})
		}
	}
	for _, key := range st.assocs {
		if a := c.assocs[key]; a != nil {
			a.seq++
			if rec != nil {
				r := associationRecord(a)
				rec.Record(Record{Association: &r})
			}
		}
	}
	if rec != nil {
		for _, g := range st.gone {
			rec.Record(Record{Session: &SessionRecord{Seq: g.seq + 1, Deleted: true, SEID: g.seid}})
		}
	}
	for _, seid := range st.sessions {
		if s := c.sessions[seid]; s != nil {
			s.seq++
			if rec != nil {
				r := sessionRecord(s)
				rec.Record(Record{Session: &r})
			}
		}
	}
	if rec != nil {
		for _, a := range st.released {
			rec.Record(Record{Association: &AssociationRecord{Seq: a.seq + 1, Deleted: true, NodeID: a.nodeID}})
		}
	}
	st.sessions, st.assocs = st.sessions[:0], st.assocs[:0]
	clear(st.gone)
	clear(st.released)
	st.gone, st.released = st.gone[:0], st.released[:0]
}

// Records returns the records of everything UPF-C holds: the node, the
// associations by Node ID, the sessions by SEID.
func (c *UPFC) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Record, 0, 1+len(c.assocs)+len(c.sessions))
	n := c.nodeRecord()
	out = append(out, Record{Node: &n})
	for _, key := range sortedStrings(c.assocs) {
		a := associationRecord(c.assocs[key])
		out = append(out, Record{Association: &a})
	}
	for _, seid := range sortedKeys(c.sessions) {
		s := sessionRecord(c.sessions[seid])
		out = append(out, Record{Session: &s})
	}
	return out
}

// nodeRecord captures the node's record. c.mu held.
func (c *UPFC) nodeRecord() NodeRecord {
	return NodeRecord{Seq: c.seq, NodeID: c.cfg.NodeID, N3Addr: c.cfg.N3Addr, N4Addr: c.cfg.N4Addr,
		Recovery: c.recovery.UTC(), NextSEID: c.nextSEID, NextTEID: c.nextTEID}
}

// associationRecord captures a's record. c.mu held.
func associationRecord(a *association) AssociationRecord {
	return AssociationRecord{Seq: a.seq, NodeID: a.nodeID, Peer: a.peer, Recovery: a.recovery.UTC(), Features: a.features}
}

// sessionRecord captures s's record, in memory of its own. c.mu held
// (the URRs' tracks are shared with the data path's reports).
func sessionRecord(s *session) SessionRecord {
	r := SessionRecord{Seq: s.seq, SEID: s.seid, CPFSEID: s.cpFSEID, Association: s.assoc, BAR: clonePtr(s.bar)}
	for _, id := range sortedKeys(s.pdrs) {
		p := s.pdrs[id]
		r.PDRs = append(r.PDRs, PDRRecord{Rule: clonePDR(&p.spec), TEID: p.teid})
	}
	for _, id := range sortedKeys(s.fars) {
		r.FARs = append(r.FARs, cloneFAR(&s.fars[id].spec))
	}
	for _, id := range sortedKeys(s.qers) {
		r.QERs = append(r.QERs, cloneQER(&s.qers[id].spec))
	}
	for _, id := range sortedKeys(s.urrs) {
		u := s.urrs[id]
		t := u.track
		r.URRs = append(r.URRs, URRRecord{Rule: cloneURR(&u.spec), SEQN: t.seqn, Start: t.start.UTC(),
			Unreported: since(u.counters.Load(), t.base), QuotaSpent: t.quotaSpent, PeriodicDue: t.due.UTC()})
	}
	return r
}

// peerOf is the PFCP address of the CP behind cp, where the binding has
// one (pfcp's UDP binding does).
func peerOf(cp pfcp.ControlPlane) netip.AddrPort {
	if p, ok := cp.(interface{ Peer() netip.AddrPort }); ok {
		return p.Peer()
	}
	return netip.AddrPort{}
}

// Restore builds this instance's state from records (Records' output, or
// a set kept up to date with Recorder's deltas, tombstones applied): the
// node's, and those of every association and session. The instance must
// be new: created by New with the Node ID and N3 and N4 addresses of the
// records, not yet serving (Restore sets the Recovery Time Stamp it
// advertises) and holding nothing. Sessions go to the data path as
// established ones do. Associations come back detached: see Attach. On
// error nothing is restored.
func (c *UPFC) Restore(recs []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.assocs) != 0 || len(c.sessions) != 0 {
		return errors.New("upfc: restore into an instance that holds associations or sessions")
	}
	var node *NodeRecord
	assocs := make(map[string]*association)
	var sessions []*SessionRecord
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Node != nil && r.Association == nil && r.Session == nil:
			if node != nil {
				return fmt.Errorf("%w: two node records", ErrBadRecord)
			}
			node = r.Node
		case r.Association != nil && r.Node == nil && r.Session == nil:
			a := r.Association
			key := a.NodeID.String()
			switch {
			case a.Deleted:
				return fmt.Errorf("%w: association %s: a tombstone", ErrBadRecord, key)
			case key == "" || a.Recovery.IsZero():
				return fmt.Errorf("%w: association without Node ID or Recovery Time Stamp", ErrBadRecord)
			case assocs[key] != nil:
				return fmt.Errorf("%w: association %s twice", ErrBadRecord, key)
			}
			assocs[key] = &association{nodeID: a.NodeID, peer: a.Peer, recovery: a.Recovery, features: a.Features, seq: a.Seq}
		case r.Session != nil && r.Node == nil && r.Association == nil:
			sessions = append(sessions, r.Session)
		default:
			return fmt.Errorf("%w: record %d holds no object or several", ErrBadRecord, i)
		}
	}
	if node == nil {
		return fmt.Errorf("%w: no node record", ErrBadRecord)
	}
	if node.NodeID != c.cfg.NodeID || node.N3Addr != c.cfg.N3Addr || node.N4Addr != c.cfg.N4Addr {
		// Another identity would change the F-TEIDs the gNBs send to or
		// the F-SEIDs and Node ID the SMFs know.
		return fmt.Errorf("%w: records of UPF %v (N3 %v, N4 %v), this is %v (N3 %v, N4 %v)", ErrBadRecord,
			node.NodeID, node.N3Addr, node.N4Addr, c.cfg.NodeID, c.cfg.N3Addr, c.cfg.N4Addr)
	}
	if node.Recovery.IsZero() {
		return fmt.Errorf("%w: node record without Recovery Time Stamp", ErrBadRecord)
	}

	built := make([]*session, 0, len(sessions))
	seids := make(map[uint64]bool, len(sessions))
	teids := make(map[uint32]uint64)
	for _, r := range sessions {
		s, err := c.restoredSession(r, assocs)
		if err != nil {
			return err
		}
		if seids[s.seid] {
			return fmt.Errorf("%w: session %#x twice", ErrBadRecord, s.seid)
		}
		seids[s.seid] = true
		for teid := range s.teidSet() {
			if owner, held := teids[teid]; held {
				return fmt.Errorf("%w: TEID %#x in sessions %#x and %#x", ErrBadRecord, teid, owner, s.seid)
			}
			teids[teid] = s.seid
		}
		built = append(built, s)
	}

	// Everything is valid: from here on it takes effect.
	c.recovery = node.Recovery
	c.nextSEID, c.nextTEID, c.seq = node.NextSEID, node.NextTEID, node.Seq
	c.assocs = assocs
	for _, s := range built {
		c.commit(nil, s)
	}
	// Restoring is no step of this instance's: the records it made are
	// the ones it was given.
	c.step.sessions = c.step.sessions[:0]
	c.log.Info("UPF-C restored from records", "associations", len(assocs), "sessions", len(built))
	return nil
}

// restoredSession builds a session from its record with the checks a
// PFCP message gets. c.mu held.
func (c *UPFC) restoredSession(r *SessionRecord, assocs map[string]*association) (*session, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: session %#x: %s", ErrBadRecord, r.SEID, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Deleted:
		return nil, bad("a tombstone")
	case r.SEID == 0:
		return nil, bad("SEID 0")
	case r.CPFSEID.SEID == 0 && !r.CPFSEID.IPv4.IsValid():
		return nil, bad("no CP F-SEID")
	case assocs[r.Association] == nil:
		return nil, bad("association %q not restored", r.Association)
	case len(r.PDRs) == 0 || len(r.FARs) == 0:
		return nil, bad("no PDR or no FAR")
	}
	s := &session{
		seid: r.SEID, cpSEID: r.CPFSEID.SEID, cpFSEID: r.CPFSEID, assoc: r.Association, seq: r.Seq,
		pdrs: make(map[uint16]*pdrState, len(r.PDRs)),
		fars: make(map[uint32]*farState, len(r.FARs)),
		qers: make(map[uint32]*qerState, len(r.QERs)),
		urrs: make(map[uint32]*urrState, len(r.URRs)),
		bar:  clonePtr(r.BAR),
	}
	tx := c.newTxn(s)
	for i := range r.FARs {
		spec := cloneFAR(&r.FARs[i])
		if s.fars[spec.ID] != nil {
			return nil, bad("FAR %d twice", spec.ID)
		}
		if rej := tx.checkFAR(&spec, pfcp.IEForwardingParameters); rej != nil {
			return nil, bad("%v", rej)
		}
		if tx.needsNetwork(&spec) {
			return nil, bad("FAR %d forwards to the core without a network instance", spec.ID)
		}
		s.fars[spec.ID] = &farState{spec: spec}
	}
	for i := range r.QERs {
		st := &qerState{spec: cloneQER(&r.QERs[i])}
		if s.qers[st.spec.ID] != nil {
			return nil, bad("QER %d twice", st.spec.ID)
		}
		if st.spec.QFI > 63 {
			return nil, bad("QER %d: QFI %d", st.spec.ID, st.spec.QFI)
		}
		st.mbrUL, st.mbrDL = tx.buckets(st.spec.MBR, nil, nil)
		s.qers[st.spec.ID] = st
	}
	for i := range r.URRs {
		u := &r.URRs[i]
		spec := cloneURR(&u.Rule)
		if s.urrs[spec.ID] != nil {
			return nil, bad("URR %d twice", spec.ID)
		}
		if rej := tx.checkURR(&spec); rej != nil {
			return nil, bad("%v", rej)
		}
		t := &urrTrack{seqn: u.SEQN, start: u.Start, quotaSpent: u.QuotaSpent}
		if spec.Triggers&pfcp.TriggerPeriodic != 0 {
			if u.PeriodicDue.IsZero() {
				return nil, bad("URR %d: periodic reporting without its deadline", spec.ID)
			}
			// armPeriodic (commit) arms the timer for what is left.
			t.period, t.due = spec.MeasurementPeriod, u.PeriodicDue
		} else if !u.PeriodicDue.IsZero() {
			return nil, bad("URR %d: a periodic deadline without periodic reporting", spec.ID)
		}
		// The counters start at the usage not reported yet, the
		// measurement at 0: thresholds and quotas count from the same
		// point as in the instance recorded.
		s.urrs[spec.ID] = &urrState{spec: spec, counters: rules.CountersFrom(u.Unreported), track: t}
	}
	for i := range r.PDRs {
		p := &r.PDRs[i]
		st := &pdrState{spec: clonePDR(&p.Rule), teid: p.TEID}
		id := st.spec.ID
		if s.pdrs[id] != nil {
			return nil, bad("PDR %d twice", id)
		}
		if st.spec.NoFARID {
			return nil, bad("PDR %d has no FAR ID", id)
		}
		if rej := checkPDI(st, &st.spec.PDI); rej != nil {
			return nil, bad("%v", rej)
		}
		if rej := checkOuterHeaderRemoval(id, st.spec.OuterHeaderRemoval); rej != nil {
			return nil, bad("%v", rej)
		}
		if err := c.checkRecordedTEID(st); err != nil {
			return nil, bad("PDR %d: %v", id, err)
		}
		s.pdrs[id] = st
	}
	if rej := checkRefs(s); rej != nil {
		return nil, bad("%v", rej)
	}
	snap, rej := c.compile(s, nil)
	if rej != nil {
		return nil, bad("%v", rej)
	}
	s.snapshot = snap
	return s, nil
}

// checkRecordedTEID checks a restored PDR's local F-TEID against its PDI,
// as localTEID resolved it.
func (c *UPFC) checkRecordedTEID(st *pdrState) error {
	f := st.spec.PDI.FTEID
	switch {
	case f == nil && st.teid != 0:
		return fmt.Errorf("TEID %#x without an F-TEID", st.teid)
	case f == nil:
		return nil
	case st.teid == 0:
		return errors.New("F-TEID without its TEID")
	case f.Choose:
		if !c.cfg.N3Addr.Is4() {
			return errors.New("CHOOSE without an N3 address")
		}
		return nil
	case f.TEID != st.teid:
		return fmt.Errorf("TEID %#x, the CP's F-TEID says %#x", st.teid, f.TEID)
	case !f.IPv4.Is4() || (c.cfg.N3Addr.IsValid() && f.IPv4 != c.cfg.N3Addr):
		return fmt.Errorf("F-TEID address %v is not N3 %v", f.IPv4, c.cfg.N3Addr)
	}
	return nil
}

// Attach gives a restored association, detached until now, the
// ControlPlane its Session and Node Report Requests go to: for the UDP
// binding, one to its record's Peer. It then raises the usage reports the
// records show due (dueReports). Binding the new instance's associations
// is the N4 front end's job (issue 36 §3, a later step).
func (c *UPFC) Attach(nodeID pfcp.NodeID, cp pfcp.ControlPlane) error {
	if cp == nil {
		return errors.New("upfc: attach without a ControlPlane")
	}
	key := nodeID.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assocs[key]
	switch {
	case a == nil:
		return fmt.Errorf("upfc: attach: no association with %s", key)
	case a.cp != nil:
		return fmt.Errorf("upfc: attach: association with %s is not detached", key)
	}
	a.cp = cp
	c.beginStep()
	defer c.endStep()
	// First the reports raised while it was detached, in their order
	// (those of sessions deleted since go too, to be dropped as stale).
	raised := make(map[[2]uint64]bool)
	kept := c.held[:0]
	for _, it := range c.held {
		if s := c.sessions[it.seid]; s != nil && s.assoc != key {
			kept = append(kept, it)
			continue
		}
		c.enqueue(it)
		if it.periodic == nil && it.r.Kind == rules.ReportUsage {
			raised[[2]uint64{it.seid, uint64(it.r.URRID)}] = true
		}
	}
	clear(c.held[len(kept):])
	c.held = kept
	for _, seid := range sortedKeys(c.sessions) {
		if s := c.sessions[seid]; s.assoc == key {
			c.dueReports(s, raised)
		}
	}
	return nil
}

// detached reports whether session seid belongs to a restored association
// that Attach has not bound yet. c.mu held.
func (c *UPFC) detached(seid uint64) bool {
	s := c.sessions[seid]
	if s == nil {
		return false
	}
	a := c.assocs[s.assoc]
	return a != nil && a.cp == nil
}

// dueReports raises the usage reports of s that are due but were never
// built: a periodic report whose deadline passed while the association
// was detached (periodicDue leaves it due), and usage past a volume
// threshold, or a volume quota reached and not marked spent, with the
// measurement not moved on and no report raised since (raised: by session
// and URR): the report the data path raised when the count crossed them
// (rules.URR.Crossings) was lost with the instance that recorded this
// state, and a crossing comes only once. c.mu held, in a step.
func (c *UPFC) dueReports(s *session, raised map[[2]uint64]bool) {
	now := time.Now()
	for _, id := range sortedKeys(s.urrs) {
		u := s.urrs[id]
		cur := u.counters.Load()
		use := since(cur, u.track.base).Volume
		var why rules.UsageTrigger
		if th := u.spec.VolumeThreshold; th != nil && u.spec.Triggers&pfcp.TriggerVolumeThreshold != 0 && reached(use, th) {
			why |= rules.UsageVolumeThreshold
		}
		if q := u.spec.VolumeQuota; q != nil && !u.track.quotaSpent && reached(use, q) {
			why |= rules.UsageVolumeQuota
		}
		if why != 0 && !raised[[2]uint64{s.seid, uint64(id)}] {
			c.enqueue(queuedReport{seid: s.seid, at: now, r: rules.Report{Kind: rules.ReportUsage, Usage: why,
				URRID: id, Volume: cur.Volume, ULPackets: cur.ULPackets, DLPackets: cur.DLPackets}})
		}
		if t := u.track; t.period > 0 && t.timer != nil && !now.Before(t.due) {
			c.nextPeriod(s.seid, t, now)
			c.enqueue(queuedReport{seid: s.seid, periodic: t, at: now})
		}
	}
}

// reached reports whether the usage use reached the threshold or quota
// v, as the data path compares them (absolute).
func reached(use rules.Volume, v *pfcp.Volume) bool {
	return (v.HasTotal && use.Total >= max(v.Total, 1)) || (v.HasUL && use.UL >= max(v.UL, 1)) ||
		(v.HasDL && use.DL >= max(v.DL, 1))
}

func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
