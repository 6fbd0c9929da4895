package amf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
)

// ErrBadRecord is Restore's answer for a record it refuses: a value out of
// its range, a state the AMF cannot be in, an identity two records hold.
// The error wraps it and says what and where.
var ErrBadRecord = errors.New("amf: bad UE record")

// errDetached is what a send to a detached gNB fails with.
var errDetached = errors.New("gNB not connected to this AMF instance (a restored connection)")

// SMFResolver is implemented by a Deps.SMFSelector that finds an SMF again
// by the NF instance ID a PDU session's record names (SessionRecord.SMF).
type SMFResolver interface {
	ResolveSMF(nfInstanceID string) (sbi.PDUSession, error)
}

// Restore builds UE contexts from records taken from another instance
// (Records, or the last record a RecordSink got of each UE): the way a
// standby takes over. Call it on a new AMF before it serves: before any
// association (Start, Serve, ServeConn; an AMF that serves one, or holds a
// UE context already, is refused) and before its SBI services are reached
// (a step that came first would run before the restored timers are
// armed). Tombstones (RM gone) are skipped. Every
// record is checked before anything is built: a bad one (ErrBadRecord)
// fails the call and leaves the AMF as it was.
//
// Tables and allocators are rebuilt so that nothing a restored context
// holds is handed out again: SUPIs, 5G-TMSIs, AMF UE NGAP IDs (the
// allocator goes on after the highest restored), context IDs and the
// numbers of smContextStatusUris. Timers are re-armed on each UE's
// executor from their deadlines; one already past fires at once; those of
// a context with a leg on a gNB not connected yet wait until ResumeConn
// resumes that gNB, or ResumeDone says it will not be. The RAN
// legs are detached: their gNB's association belongs to the old instance,
// so they keep their IDs, stream, TAI and cell on a gNB object that is not
// connected (a send fails, as on an association that went down, and the
// procedures react as they do to that). ResumeConn, called after Restore
// with the association an N2 front end hands over and the gNB's logged NG
// Setup Request (issue 36 §3), binds the legs of that gNB to it, NGAP IDs
// unchanged. A gNB that connects to this instance with NG Setup instead
// gets new connections only; a UE in CM-IDLE is served as usual.
//
// A session's SMF named in its record is found through Deps.SMFSelector
// when it implements SMFResolver; a record naming an SMF that cannot be
// found is refused.
func (a *AMF) Restore(recs []UERecord) error {
	if a.group.Closed() {
		return errClosed
	}
	a.mu.Lock()
	serving := len(a.listeners) > 0 || len(a.gnbs) > 0
	a.mu.Unlock()
	if serving || a.stats.contexts.Load() != 0 {
		return errors.New("amf restore: the AMF serves associations or holds UE contexts already")
	}
	smfs, err := a.checkRecords(recs)
	if err != nil {
		return err
	}
	type restored struct {
		u   *ue
		rec *UERecord
	}
	var built []restored
	var maxNGAP int64
	var maxID, maxStatus uint64
	for i := range recs {
		rec := &recs[i]
		if rmState(rec.State.RM) == rmGone {
			continue
		}
		u := a.restoreUE(rec, smfs)
		built = append(built, restored{u, rec})
		maxID = max(maxID, rec.ID)
		for _, l := range rec.legs() {
			maxNGAP = max(maxNGAP, l.AMFUENGAPID)
		}
		for _, s := range rec.Sessions {
			maxStatus = max(maxStatus, statusURISeq(s.StatusURI))
		}
		a.noteRestoredStamps(rec)
	}
	raise(&a.nextAMFUEID, maxNGAP)
	raise(&a.nextUEID, maxID)
	raise(&a.statusSeq, maxStatus)
	// The timers start on the executors, after every context is built: an
	// expiry (at once for a deadline past) runs there, as any step.
	for _, r := range built {
		u, rec := r.u, r.rec
		held := u.holdTimers(rec)
		u.exec.Post(func() {
			if !held {
				u.resumeTimers(rec)
			}
			if p := u.amf.sink.Load(); p != nil {
				// The restored record is the version the sink's next
				// delta follows.
				u.recLast, _ = wire.Append(nil, u.record())
			}
		})
		if rec.Superseded {
			u.post(u.superseded)
		}
	}
	return nil
}

// noteRestoredStamps enters the stamps rec applied in the tables of the
// replay that follows a takeover (dedup.go): rec's connections by gNB and
// RAN UE NGAP ID, and each gNB's highest stamp.
func (a *AMF) noteRestoredStamps(rec *UERecord) {
	if len(rec.Applied) == 0 {
		return
	}
	if a.replayHorizon == nil {
		a.replayHorizon = make(map[ngap.GlobalGNBID]uint64)
		a.restoredConns = make(map[legKey]uint64)
	}
	for _, s := range rec.Applied {
		a.replayHorizon[s.GNB] = max(a.replayHorizon[s.GNB], s.Stamp)
	}
	for _, l := range rec.legs() {
		if l.RANUENGAPID == 0 {
			continue
		}
		for _, s := range rec.Applied {
			if s.GNB == l.GNB {
				k := legKey{l.GNB, l.RANUENGAPID}
				a.restoredConns[k] = max(a.restoredConns[k], s.Stamp)
			}
		}
	}
}

// restoreUE builds the context of rec (checked) and enters it in the
// tables.
func (a *AMF) restoreUE(rec *UERecord, smfs map[string]sbi.PDUSession) *ue {
	a.stats.contexts.Add(1)
	u := &ue{amf: a, log: a.log, id: rec.ID, seq: rec.Seq}
	u.exec.Init(a.group)
	u.setState(ueState{rm: rmState(rec.State.RM), cm: cmState(rec.State.CM), proc: procedure(rec.State.Procedure)})
	u.setReachable(rec.State.Reachable)

	u.supi, u.suci, u.pei = rec.SUPI, rec.SUCI, rec.PEI
	if u.supi != "" {
		u.log = a.log.With("supi", u.supi)
		if !rec.Superseded {
			a.supis.Put(u.supi, u)
		}
	}
	u.guti, u.oldGUTI, u.tmsiDraws = rec.GUTI, rec.OldGUTI, rec.TMSIDraws
	if u.guti != nil {
		a.gutis.Put(u.guti.TMSI, u)
	}
	if u.oldGUTI != nil {
		a.gutis.Put(u.oldGUTI.TMSI, u)
	}
	u.taiList = rec.RegistrationArea
	u.subscribed = rec.SubscribedNSSAI
	u.allowedNSSAI = rec.AllowedNSSAI
	u.ueAMBR = rec.UEAMBR

	u.ran = a.restoreLeg(u, rec.Serving)
	u.target = a.restoreLeg(u, rec.Target)
	for i := range rec.Released {
		u.released = append(u.released, a.restoreLeg(u, &rec.Released[i]))
	}

	sec := &rec.Security
	u.sec = restoreSecurity(sec.Current)
	u.smc.pending = restoreSecurity(sec.Pending)
	u.kamf, u.ngKSI = sec.KAMF, sec.NgKSI
	u.ueSecCap, u.hasSecCap = sec.UESecurityCapability, sec.HasUESecurityCapability
	u.nh, u.ncc = sec.NH, sec.NCC

	if rec.Sessions != nil {
		u.sessions = make(map[uint8]*pduSession, len(rec.Sessions))
		for _, s := range rec.Sessions {
			u.sessions[s.ID] = &pduSession{id: s.ID, ref: s.SMContextRef, smf: smfs[s.SMF], statusURI: s.StatusURI,
				snssai: s.SNSSAI, dnn: s.DNN, up: upState(s.UserPlane)}
		}
		a.stats.pduSessions.Add(int64(len(rec.Sessions)))
	}

	reg := &rec.Registration
	u.reg = registrationProc{step: regStep(reg.Step), req: reg.Request, initialIntegrity: reg.InitialIntegrity,
		byGUTI: reg.ByGUTI, fromIdle: reg.FromIdle}
	u.common = commonProc{step: commonStep(rec.Common)}
	au := &rec.Authentication
	u.auth = authProc{ctxID: au.ContextID, rand: au.RAND, hxresStar: au.HXRESStar, ngKSI: au.NgKSI,
		resynced: au.Resynced, identified: au.Identified}
	u.svc = serviceRequestProc{req: rec.ServiceRequest.Request, afterAuth: rec.ServiceRequest.AfterAuth}
	ho := &rec.Handover
	u.ho = handoverProc{hoType: ho.Type, cause: ho.Cause, toTarget: ho.SourceToTarget, completed: ho.Completed}
	for _, s := range ho.Sessions {
		u.ho.sessions = append(u.ho.sessions, hoSession{id: s.ID, snssai: s.SNSSAI, setup: s.Setup, command: s.Command})
	}
	u.page.priority = rec.Paging.Priority
	for _, t := range rec.Paging.Pending {
		u.page.pending = append(u.page.pending, mtTransfer{failureURI: t.FailureURI,
			d: smDelivery{id: t.PDUSessionID, n1: t.N1, n2: t.N2, kind: n2Kind(t.N2Kind), snssai: t.SNSSAI}})
	}
	a.stats.pendingTransfers.Add(int64(len(rec.Paging.Pending)))

	u.applied = rec.Applied
	u.outputs, u.outputsStamp = rec.Outputs, rec.OutputsStamp
	u.lastActivity = rec.LastActivity
	u.procStart = rec.ProcedureStart
	u.outcome = rec.Outcome
	return u
}

// resumeTimers re-arms the timers of rec. It runs on u's executor.
func (u *ue) resumeTimers(rec *UERecord) {
	if t := &rec.NASTimer; t.Timer != uint8(timerNone) {
		id, hdr := timerID(t.Timer), nas.SecurityHeaderType(t.Header)
		resend := u.sendPaging
		if id != timerT3513 {
			resend = u.resendNAS(id, t.Message, hdr)
		}
		u.armRetransmission(id, resend, t.Deadline, t.Sends)
		if id != timerT3513 {
			u.nasTimerMsg, u.nasTimerHdr = t.Message, hdr
		}
	}
	if d := rec.ReachabilityDeadline; !d.IsZero() {
		u.reachTimer.StartAt(&u.exec, d, u.reachabilityExpired)
	}
	if d := rec.HandoverDeadline; !d.IsZero() {
		u.handoverTime.StartAt(&u.exec, d, u.handoverExpired)
	}
}

// restoreLeg builds a detached leg of u (nil: nil) and enters it in the
// NGAP ID tables, so that its IDs stay taken.
func (a *AMF) restoreLeg(u *ue, l *LegRecord) *ranUE {
	if l == nil {
		return nil
	}
	g := a.detachedGNB(l.GNB)
	r := &ranUE{gnb: g, ue: u, amfID: l.AMFUENGAPID, ranID: l.RANUENGAPID, stream: l.Stream,
		state: legState(l.State), tai: l.TAI, loc: l.Location, ambrSent: l.AMBRSent, handedOver: l.HandedOver}
	a.ranUEs.put(r)
	if r.ranID != 0 {
		g.mu.Lock()
		// Two records may name one RAN UE NGAP ID of a gNB when they were
		// taken while the gNB reused it (TS 38.413 §8.6.1.2: the old one
		// is being lost): the newer connection, allocated later, keeps it.
		if old := g.ues[r.ranID]; old == nil || old.amfID < r.amfID {
			g.ues[r.ranID] = r
		}
		g.mu.Unlock()
	}
	return r
}

// detachedGNB is the stand-in for the gNB with Global RAN Node ID id,
// which has not connected to this instance: it holds the restored legs
// (and their RAN UE NGAP IDs) of that gNB, takes no new connection, and
// sends nothing.
func (a *AMF) detachedGNB(id ngap.GlobalGNBID) *gnb {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.detached[id]; g != nil {
		return g
	}
	g := &gnb{amf: a, ues: make(map[int64]*ranUE), dead: true,
		log: a.log.With("gnb", "detached", "gnb_id", id.GNBID)}
	g.node.Store(&gnbNode{id: id})
	g.resumable.Store(true)
	if a.detached == nil {
		a.detached = make(map[ngap.GlobalGNBID]*gnb)
	}
	a.detached[id] = g
	return g
}

// restoreSecurity rebuilds a NAS security context (nil: nil) with its NAS
// COUNTs (TS 24.501 §4.4.3.1).
func restoreSecurity(r *NASSecurityRecord) *nas.SecurityContext {
	if r == nil {
		return nil
	}
	c := nas.NewSecurityContext(r.KNASenc[:], r.KNASint[:], r.CipheringAlg, r.IntegrityAlg, r.NgKSI)
	c.SetBearer(r.Bearer)
	for _, x := range []struct {
		dir nas.Direction
		n   NASCountRecord
	}{{nas.Uplink, r.Uplink}, {nas.Downlink, r.Downlink}} {
		next := uint32(0)
		if x.n.Used {
			next = x.n.Last + 1
		}
		c.SetNextCount(x.dir, next)
	}
	return c
}

// legs are the legs rec names.
func (rec *UERecord) legs() []*LegRecord {
	var ls []*LegRecord
	for _, l := range []*LegRecord{rec.Serving, rec.Target} {
		if l != nil {
			ls = append(ls, l)
		}
	}
	for i := range rec.Released {
		ls = append(ls, &rec.Released[i])
	}
	return ls
}

// checkRecords refuses records Restore could not build a consistent AMF
// from, and resolves the SMFs they name.
func (a *AMF) checkRecords(recs []UERecord) (map[string]sbi.PDUSession, error) {
	states := reachableStates()
	ids := map[uint64]bool{}
	supis := map[string]bool{}
	tmsis := map[uint32]bool{}
	ngapIDs := map[int64]bool{}
	smfs := map[string]sbi.PDUSession{"": nil}
	for i := range recs {
		rec := &recs[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: record %d (ID %d, SUPI %q): %s", ErrBadRecord, i, rec.ID, rec.SUPI, fmt.Sprintf(format, args...))
		}
		if rmState(rec.State.RM) == rmGone {
			continue
		}
		if err := checkRecord(rec); err != "" {
			return nil, bad("%s", err)
		}
		if st := rec.State; !states[ueState{rmState(st.RM), cmState(st.CM), procedure(st.Procedure)}] {
			return nil, bad("state %d/%d/%d: the state machine never reaches it", st.RM, st.CM, st.Procedure)
		}
		if ids[rec.ID] {
			return nil, bad("context ID held by another record")
		}
		ids[rec.ID] = true
		if rec.SUPI != "" && !rec.Superseded {
			if supis[rec.SUPI] {
				return nil, bad("SUPI held by another record")
			}
			supis[rec.SUPI] = true
		}
		for _, g := range []*identity.GUTI{rec.GUTI, rec.OldGUTI} {
			if g == nil {
				continue
			}
			if tmsis[g.TMSI] {
				return nil, bad("5G-TMSI %08x held by another record", g.TMSI)
			}
			tmsis[g.TMSI] = true
		}
		if rec.GUTI != nil && !a.cfg.isOurGUAMI(rec.GUTI.GUAMI) || rec.OldGUTI != nil && !a.cfg.isOurGUAMI(rec.OldGUTI.GUAMI) {
			return nil, bad("5G-GUTI of a GUAMI this AMF does not serve")
		}
		for _, l := range rec.legs() {
			if ngapIDs[l.AMFUENGAPID] {
				return nil, bad("AMF UE NGAP ID %d held by another leg", l.AMFUENGAPID)
			}
			ngapIDs[l.AMFUENGAPID] = true
		}
		for _, s := range rec.Sessions {
			if _, ok := smfs[s.SMF]; ok {
				continue
			}
			res, ok := a.deps.SMFSelector.(SMFResolver)
			if !ok {
				return nil, bad("PDU session %d names SMF %q, and Deps.SMFSelector cannot resolve SMFs", s.ID, s.SMF)
			}
			smf, err := res.ResolveSMF(s.SMF)
			if err != nil || smf == nil {
				return nil, bad("PDU session %d names SMF %q, not found: %v", s.ID, s.SMF, err)
			}
			smfs[s.SMF] = smf
		}
	}
	return smfs, nil
}

// checkRecord checks one record on its own; "" when it is fine.
func checkRecord(rec *UERecord) string {
	st := rec.State
	switch {
	case rec.ID == 0:
		return "no context ID"
	case st.RM >= uint8(numRMStates), st.CM >= uint8(numCMStates), st.Procedure >= uint8(numProcedures):
		return fmt.Sprintf("state %d/%d/%d out of range", st.RM, st.CM, st.Procedure)
	case (cmState(st.CM) == cmConnected) != (rec.Serving != nil):
		return "CM state and serving leg disagree (a leg exactly in CM-CONNECTED)"
	case rec.Target != nil && procedure(st.Procedure) != procHandoverPreparation && procedure(st.Procedure) != procHandoverExecution:
		return "a handover target leg outside a handover"
	case rec.SUPI == "" && rec.Serving == nil:
		return "neither SUPI nor serving leg: nothing could reach the context"
	case rec.Common > uint8(commonSecurityMode):
		return fmt.Sprintf("common procedure step %d out of range", rec.Common)
	case rec.Registration.Step > uint8(regAccepting):
		return fmt.Sprintf("registration step %d out of range", rec.Registration.Step)
	case len(rec.Security.KAMF) != 0 && len(rec.Security.KAMF) != 32:
		return fmt.Sprintf("KAMF of %d octets, want 32", len(rec.Security.KAMF))
	case len(rec.Security.NH) != 0 && len(rec.Security.NH) != 32:
		return fmt.Sprintf("NH of %d octets, want 32", len(rec.Security.NH))
	case rec.Security.NgKSI > 7 || rec.Authentication.NgKSI > 7:
		return "ngKSI out of range"
	}
	for _, g := range []*identity.GUTI{rec.GUTI, rec.OldGUTI} {
		if g != nil && g.TMSI == 0xFFFFFFFF {
			return "5G-TMSI 0xFFFFFFFF (invalid, TS 23.003 §2.4)"
		}
	}
	for _, c := range []*NASSecurityRecord{rec.Security.Current, rec.Security.Pending} {
		if c == nil {
			continue
		}
		if c.NgKSI > 7 || c.CipheringAlg > 7 || c.IntegrityAlg > 7 || c.Bearer > 0x1F {
			return "NAS security context: ngKSI, algorithm or bearer out of range"
		}
		if c.Uplink.Last > nas.MaxCount || c.Downlink.Last > nas.MaxCount {
			return "NAS COUNT past 24 bits"
		}
	}
	for _, l := range rec.legs() {
		switch {
		case l.AMFUENGAPID < 0 || l.AMFUENGAPID > maxAMFUENGAPID:
			return fmt.Sprintf("AMF UE NGAP ID %d out of range", l.AMFUENGAPID)
		case l.RANUENGAPID < 0 || l.RANUENGAPID > 1<<32-1:
			return fmt.Sprintf("RAN UE NGAP ID %d out of range", l.RANUENGAPID)
		case l.State > uint8(legReleasing):
			return fmt.Sprintf("leg state %d out of range", l.State)
		}
	}
	seen := uint16(0)
	for _, s := range rec.Sessions {
		switch {
		case s.ID < 1 || s.ID > 15:
			return fmt.Sprintf("PDU session ID %d out of range", s.ID)
		case seen&(1<<s.ID) != 0:
			return fmt.Sprintf("PDU session %d twice", s.ID)
		case s.UserPlane > uint8(upDeactivated):
			return fmt.Sprintf("PDU session %d: user plane state %d out of range", s.ID, s.UserPlane)
		}
		seen |= 1 << s.ID
	}
	for _, t := range rec.Paging.Pending {
		if t.PDUSessionID < 1 || t.PDUSessionID > 15 || t.N2Kind > uint8(n2Release) {
			return "waiting transfer: PDU session ID or N2 kind out of range"
		}
	}
	t := &rec.NASTimer
	switch {
	case t.Timer > uint8(timerT3522):
		return fmt.Sprintf("NAS timer %d out of range", t.Timer)
	case t.Timer == uint8(timerNone) && (!t.Deadline.IsZero() || t.Sends != 0 || t.Message != nil):
		return "NAS timer data without a timer"
	case t.Timer != uint8(timerNone) && (t.Deadline.IsZero() || t.Sends < 1):
		return "NAS timer without deadline or send"
	case t.Timer != uint8(timerNone) && t.Timer != uint8(timerT3513) &&
		(len(t.Message) == 0 || t.Header > uint8(nas.IntegrityProtectedAndCipheredNewContext)):
		return "NAS timer without the message it retransmits"
	}
	return ""
}

// reachableStates are the states the state machine of ue_state.go reaches
// from a new context's.
func reachableStates() map[ueState]bool {
	seen := map[ueState]bool{{}: true}
	todo := []ueState{{}}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for ev := range numEvents {
			if n, ok := next(s, ev); ok && !seen[n] {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	return seen
}

// statusURISeq is the creation number that ends an smContextStatusUri
// (smContextStatusURI); 0 when there is none.
func statusURISeq(uri string) uint64 {
	i := strings.LastIndexByte(uri, '/')
	n, err := strconv.ParseUint(uri[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// raise makes an allocator that hands out its value+1 next go on after
// v.
func raise[T int64 | uint64](n interface {
	Load() T
	CompareAndSwap(old, new T) bool
}, v T) {
	for {
		cur := n.Load()
		if cur >= v || n.CompareAndSwap(cur, v) {
			return
		}
	}
}
