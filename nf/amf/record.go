package amf

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
)

// UE context records: the AMF's state that can move to another process
// (issue 36 §1; the replication that carries the records is a later step).
//
// # What is recorded
//
// One UERecord per UE context (TS 23.502 §5.2.2.2.2 "UE context in AMF")
// holds everything a fresh AMF instance needs to go on serving the UE
// without signalling to it:
//
//   - identities: SUPI, SUCI, PEI, the 5G-GUTI and the old one kept until
//     Registration Complete (TS 24.501 §5.5.1.2.4);
//   - the registration: its area (TAI list), the subscribed and allowed
//     NSSAI, the subscribed UE-AMBR;
//   - security: the current 5G NAS security context with its keys,
//     algorithms and both NAS COUNTs (TS 24.501 §4.4.3.1, TS 33.501 §6.4),
//     the one a Security Mode Command is establishing, KAMF and ngKSI, the
//     UE's security capabilities, and the AS key chain, NH and NCC (TS
//     33.501 §6.9.2.1.1);
//   - the PDU sessions (TS 23.502 §5.2.2.2.2: ID, SMF, S-NSSAI, DNN, the
//     SM context reference and notification URI, the user plane state);
//   - the RAN legs, each UE-associated logical NG-connection (TS 38.413
//     §3.1): the serving one, the target of an N2 handover, and those
//     released whose UE Context Release Complete is awaited; each by its
//     gNB's Global RAN Node ID, both NGAP IDs, SCTP stream, TAI and cell;
//   - the state of ue_state.go (RM, CM, procedure, reachability) and the
//     data of the running procedure: registration, the common procedure
//     it runs (identification, authentication with its challenge, security
//     mode control), service request, N2 handover, paging and the
//     mobile-terminated transfers waiting for the UE;
//   - every running timer as its absolute (wall-clock) deadline: the NAS
//     retransmission timer (T3550, T3560, T3570, T3513, T3522 of TS 24.501
//     §10.2) with its count of sends and the message it retransmits, the
//     mobile reachable / implicit deregistration timer (TS 24.501 §5.3.7)
//     and the N2 handover guard.
//
// What is not recorded, and why:
//
//   - plumbing: the executor, the logger (rebuilt from the SUPI), the
//     back pointer to the AMF, the mirror of the state published to other
//     goroutines (derived from the state);
//   - the gNB associations: they are not per-UE state, and they do not move
//     (see Restore for what becomes of a leg whose gNB is elsewhere);
//   - the AMF's counters (Stats): Restore counts the restored contexts in;
//   - what lives only within one step (the PDU sessions a UE Context
//     Release Complete lists, read in the step that ends the leg).
//
// The completeness test (record_test.go) walks the context's struct types
// and fails for a field that is neither mapped to the record nor excluded
// there with its reason: a field added to a context without its record
// fails it.
//
// # Encoding and versions
//
// Records are encoded with package sbi/wire (compact binary, no JSON): its
// layout hash versions UERecord, so a process built with another record
// type refuses a record with wire.ErrLayoutMismatch. The constants the
// record carries as numbers (RM, CM and procedure, leg state, timer, ...)
// are the ones of this package; TestRecordEnumValues pins them, since the
// layout hash does not see constant values. Records hold no maps (wire
// encodes a map in iteration order): two captures of one state encode to
// the same bytes.
//
// Seq is the record's version. With a RecordSink set (SetRecordSink),
// every step of the UE (a message, a timer expiry, an SBI answer: one
// function on its executor) that changed its record increments Seq and
// hands the new record to the sink: the delta of that step. Change is
// found by encoding the record after the step and comparing it with the
// last one handed over. Without a sink nothing is captured, encoded or
// counted, so Seq stays where it was: the cost of the AMF without
// replication is one atomic load per step. A context deleted in a step
// gives one last record, a tombstone: its ID and Seq with RM "gone".
//
// # Restore
//
// Restore (record_restore.go) builds the contexts of a fresh AMF from
// records: every table and allocator is rebuilt so that nothing a restored
// context holds can be handed out again (5G-TMSIs in the GUTI table, SUPIs,
// AMF UE NGAP IDs and the allocator after the highest, context IDs, the
// numbers that make smContextStatusUris unique), and the timers are re-armed
// on each UE's executor from their deadlines: one already past fires at
// once. A leg's gNB is an association of the old instance; in the new one
// the leg is kept detached, with all its identifying data, on a gNB that
// is not connected (messages to it fail to be sent); binding it to the
// gNB's association again is ResumeConn's (resume.go), when the N2 front
// end hands the association over.

// UERecord is the record of one UE context. See the comment above for what
// it holds; numbers that name states are the constants of this package.
type UERecord struct {
	// Seq is the record's version, +1 at every step of the UE that changed
	// it while a RecordSink is set.
	Seq uint64
	// ID names the context within its AMF (and the AMF restored from it);
	// not a 3GPP identity.
	ID uint64

	SUPI string
	SUCI string // while the SUPI is not known yet, or as the UE gave it
	PEI  string // IMEISV from Security Mode Complete (TS 24.501 §5.4.2.4)
	// GUTI is the 5G-GUTI assigned (TS 23.003 §2.10); OldGUTI the previous
	// one, valid until Registration Complete (TS 24.501 §5.5.1.2.4).
	GUTI, OldGUTI *identity.GUTI
	// TMSIDraws is how many 5G-TMSIs were drawn for the context: the input
	// of the next draw (guti.go), so that a replay draws the same.
	TMSIDraws uint32
	// Superseded: another context took the SUPI (a new registration of
	// the same subscriber, TS 23.502 §4.2.2.2.2 step 5); this one is being
	// deleted, and a restored one is deleted in its first step.
	Superseded bool

	// RegistrationArea is the TAI list of the last Registration Accept.
	RegistrationArea []identity.TAI
	// SubscribedNSSAI is from Nudm_SDM am-data; nil until fetched.
	SubscribedNSSAI []sbi.SubscribedSNSSAI
	AllowedNSSAI    []identity.SNSSAI
	// UEAMBR is the subscribed UE-AMBR (TS 23.501 §5.7.2.6); nil = none.
	UEAMBR *ngap.AMBR

	State StateRecord
	// Serving is the serving RAN leg, nil exactly in CM-IDLE; Target the
	// target of an N2 handover; Released the legs whose UE Context Release
	// Complete is awaited (TS 38.413 §8.3.3).
	Serving, Target *LegRecord
	Released        []LegRecord

	Security SecurityRecord
	// Sessions are the PDU sessions by ID, ascending; nil when the UE never
	// had one.
	Sessions []SessionRecord

	// The data of the running procedure (State.Procedure) and of the
	// common procedure it runs (Common).
	Registration   RegistrationRecord
	Common         uint8 // commonStep: none, identification, authentication, security mode
	Authentication AuthenticationRecord
	ServiceRequest ServiceRequestRecord
	Handover       HandoverRecord
	Paging         PagingRecord

	// NASTimer is the NAS retransmission timer; ReachabilityDeadline the
	// mobile reachable timer's while State.Reachable, else the implicit
	// deregistration timer's (TS 24.501 §5.3.7); HandoverDeadline the N2
	// handover guard's. A zero deadline: not running.
	NASTimer             NASTimerRecord
	ReachabilityDeadline time.Time
	HandoverDeadline     time.Time

	// LastActivity is when the last 5GMM message from the UE was accepted;
	// ProcedureStart when the running procedure started; Outcome how the
	// step that ends it names its end (observe.go; "" between steps).
	LastActivity   time.Time
	ProcedureStart time.Time
	Outcome        string

	// Applied is, per gNB, the stamp of the last N2 message a step of the
	// context handled (an N2 front end's stamps, dedup.go): a replayed
	// message at or below it is not run again. Nil without a front end.
	Applied []StampRecord
	// Outputs are the NGAP messages of the context's last step when that
	// step handled a stamped N2 message (OutputsStamp): a unit killed
	// after the step's record may not have sent them, and a replay of
	// that message sends them again instead of running the step again
	// (dedup.go). Nil otherwise.
	Outputs      []OutputRecord
	OutputsStamp uint64
}

// OutputRecord is one NGAP message a step sent: its gNB, stream and
// encoding.
type OutputRecord struct {
	GNB     ngap.GlobalGNBID
	Stream  uint16
	Message []byte
}

// StateRecord is the state of ue_state.go.
type StateRecord struct {
	RM        uint8 // rmState: RM-DEREGISTERED, RM-REGISTERED, gone (a tombstone)
	CM        uint8 // cmState: CM-IDLE, CM-CONNECTED
	Procedure uint8 // procedure
	// Reachable is false once the mobile reachable timer expired (TS
	// 24.501 §5.3.7): the UE is not paged.
	Reachable bool
}

// LegRecord is one UE-associated logical NG-connection (TS 38.413 §3.1).
type LegRecord struct {
	// GNB is the Global RAN Node ID of the leg's gNB (from its NG Setup).
	GNB ngap.GlobalGNBID
	// AMFUENGAPID and RANUENGAPID identify the connection (TS 38.413
	// §9.3.3.1, §9.3.3.2); RANUENGAPID is 0 for a handover target before
	// its Handover Request Acknowledge.
	AMFUENGAPID, RANUENGAPID int64
	Stream                   uint16 // SCTP stream of the connection (TS 38.412 §7)
	State                    uint8  // legState
	TAI                      identity.TAI
	// Location is the last User Location Information (TS 38.413 §9.3.1.16).
	Location ngap.UserLocationNR
	// AMBRSent: the gNB has the UE-AMBR (TS 38.413 §8.2.1.2).
	AMBRSent bool
	// HandedOver: the source of an N2 handover whose Handover Notify came.
	HandedOver bool
}

// SecurityRecord is the UE's security state (TS 33.501 §6.2, §6.7, §6.9).
type SecurityRecord struct {
	// Current is the 5G NAS security context in use, nil before the first
	// security mode control; Pending the one a Security Mode Command sent
	// establishes (it becomes current with Security Mode Complete).
	Current, Pending *NASSecurityRecord
	KAMF             []byte
	NgKSI            uint8 // ngKSI of KAMF (TS 24.501 §9.11.3.32)
	// UESecurityCapability is the UE's (TS 24.501 §9.11.3.54), valid when
	// HasUESecurityCapability.
	UESecurityCapability    nas.UESecurityCapability
	HasUESecurityCapability bool
	// NH and NCC are the AS key chain (TS 33.501 §6.9.2.1.1): the KgNB of
	// the last Initial Context Setup, then the last NH given to a gNB.
	NH  []byte
	NCC uint8
}

// NASSecurityRecord is a 5G NAS security context (TS 24.501 §4.4.2).
type NASSecurityRecord struct {
	NgKSI, CipheringAlg, IntegrityAlg, Bearer uint8
	KNASenc, KNASint                          [16]byte
	// Uplink and Downlink are the NAS COUNTs (TS 24.501 §4.4.3.1).
	Uplink, Downlink NASCountRecord
}

// NASCountRecord is the NAS COUNT of one direction: that of the last PDU
// sent or accepted, valid when Used (none yet otherwise).
type NASCountRecord struct {
	Last uint32
	Used bool
}

// SessionRecord is one PDU session, the AMF's PDU session routing context
// (TS 24.501 §5.4.5.2.5; TS 23.502 §5.2.2.2.2).
type SessionRecord struct {
	ID           uint8
	SMContextRef string // smContextRef at the SMF (TS 29.502)
	// SMF is the NF instance ID of the SMF that Deps.SMFSelector picked for
	// the session, when that SMF names itself (NamedSMF); "" for the AMF's
	// own SMF (Deps.SMF), to which a restored session goes.
	SMF string
	// StatusURI is the smContextStatusUri given at creation.
	StatusURI string
	SNSSAI    identity.SNSSAI
	DNN       string
	UserPlane uint8 // upState: none, activating, active, deactivated
}

// RegistrationRecord is the data of a running registration (TS 24.501
// §5.5.1).
type RegistrationRecord struct {
	Step             uint8 // regStep: common procedures / accept sent
	Request          *nas.RegistrationRequest
	InitialIntegrity bool // the request verified with the current context
	ByGUTI           bool // the UE identified itself with a 5G-GUTI
	FromIdle         bool // the request opened the N2 connection
}

// AuthenticationRecord is the data of 5G-AKA as SEAF (TS 33.501
// §6.1.3.2).
type AuthenticationRecord struct {
	ContextID  string // AUSF 5G-AKA context to confirm
	RAND       []byte
	HXRESStar  []byte
	NgKSI      uint8
	Resynced   bool // one AUTS re-synchronisation done
	Identified bool // an Identity Request followed a failure already
}

// ServiceRequestRecord is the data of a running service request (TS 24.501
// §5.6.1).
type ServiceRequestRecord struct {
	Request   *nas.ServiceRequest
	AfterAuth bool // the request did not verify: the UE is authenticated again
}

// HandoverRecord is the data of a running N2 handover (TS 23.502
// §4.9.1.3).
type HandoverRecord struct {
	Type           ngap.HandoverType
	Cause          ngap.Cause
	Sessions       []HandoverSessionRecord
	SourceToTarget []byte // Source to Target Transparent Container
	Completed      bool
}

// HandoverSessionRecord is one PDU session of an N2 handover.
type HandoverSessionRecord struct {
	ID      uint8
	SNSSAI  identity.SNSSAI
	Setup   []byte // the target's setup request transfer, from the SMF
	Command []byte // the Handover Command transfer, from the SMF
}

// PagingRecord is the paging procedure's data and the mobile-terminated
// transfers waiting for the UE (TS 23.502 §4.2.3.3).
type PagingRecord struct {
	Pending []TransferRecord
	// Priority is the Paging Priority (TS 38.413 §9.3.1.78; 0 = none).
	Priority uint8
}

// TransferRecord is one Namf_Communication_N1N2MessageTransfer waiting for
// the UE.
type TransferRecord struct {
	PDUSessionID uint8
	N1           []byte // 5GSM message; nil = none
	N2           []byte // NGAP SM transfer; nil = none
	N2Kind       uint8  // n2Kind: the NGAP procedure that carries N2
	SNSSAI       *identity.SNSSAI
	FailureURI   string // n1n2FailureTxfNotifURI; "" = none
}

// NASTimerRecord is the NAS retransmission timer (TS 24.501 §10.2).
type NASTimerRecord struct {
	Timer    uint8 // timerID; 0: none running
	Deadline time.Time
	// Sends is how many times the guarded message has been sent.
	Sends int
	// Message is the plain 5GMM message retransmitted, protected afresh
	// with Header each time; nil for T3513 (paging).
	Message []byte
	Header  uint8 // nas.SecurityHeaderType
}

// RecordSink takes the AMF's UE records as they change: the new record of
// a UE after each of its steps that changed it (the delta of that step),
// in Seq order, on the UE's executor. It must not block: the UE's next
// step waits for it. enc is rec's encoding (package sbi/wire, Seq
// included), made once for change detection and handed over so that the
// sink need not encode it again; it is the AMF's buffer, valid during the
// call only, as rec is. The AMF keeps no reference to rec.
type RecordSink interface {
	UERecord(rec *UERecord, enc []byte)
}

// SetRecordSink sets the sink of UE records (nil: none, the default, which
// costs nothing). Contexts that exist already give their first record at
// their next step.
func (a *AMF) SetRecordSink(s RecordSink) {
	if s == nil {
		a.sink.Store(nil)
		return
	}
	a.sink.Store(&s)
}

// NamedSMF is an SMF that Deps.SMFSelector picked and that can name its NF
// instance, so that the record of a PDU session names its SMF and a
// restored session goes back to it (SMFResolver).
type NamedSMF interface {
	sbi.PDUSession
	NFInstanceID() string
}

// Records returns the record of every UE context, by ID, each taken on the
// UE's executor between two steps. A UE whose executor does not get to it
// before ctx ends fails the whole call: a partial set of records would
// lose contexts silently.
func (a *AMF) Records(ctx context.Context) ([]UERecord, error) {
	recs, busy, err := onEveryUE(ctx, a, func(u *ue) (UERecord, bool) {
		if u.gone() {
			return UERecord{}, false
		}
		return *u.record(), true
	})
	if err != nil {
		return nil, err
	}
	if busy > 0 {
		return nil, fmt.Errorf("amf records: %d UE executors busy past the deadline: %w", busy, ctx.Err())
	}
	slices.SortFunc(recs, func(x, y UERecord) int { return cmp.Compare(x.ID, y.ID) })
	return recs, nil
}

// stepDone ends one step of the UE: with a sink set, the UE's record goes
// to it if the step changed it. It runs on u's executor, last in the step.
// The record is encoded once, with the Seq it gets if it changed; the
// comparison with the last one handed over leaves the Seq out (sameButSeq).
func (u *ue) stepDone() {
	p := u.amf.sink.Load()
	if p == nil {
		return
	}
	rec := u.record()
	rec.Seq = u.seq + 1
	b, err := wire.Append(u.recNext[:0], rec)
	if err != nil {
		u.log.Error("UE record not encoded", "err", err)
		return
	}
	if sameButSeq(b, u.recLast) {
		u.recNext = b
		return
	}
	u.recNext, u.recLast = u.recLast, b
	u.seq++
	(*p).UERecord(rec, b)
}

// sameButSeq says whether x and y, encoded UERecords, hold the same
// record but for their Seq. It reads sbi/wire's documented layout: an
// 11-byte header, the struct's presence bitmap (bit 0 of its first byte
// for Seq, the first field, present unless 0), then the present fields in
// order, Seq a uvarint. TestRecordSinkEncoding pins it.
func sameButSeq(x, y []byte) bool {
	ex, ok := afterSeq(x)
	if !ok {
		return false
	}
	ey, ok := afterSeq(y)
	if !ok {
		return false
	}
	const h = recordHeader
	return bytes.Equal(x[:h], y[:h]) && x[h]&^1 == y[h]&^1 &&
		bytes.Equal(x[h+1:h+recordBitmap], y[h+1:h+recordBitmap]) && bytes.Equal(x[ex:], y[ey:])
}

// recordHeader is the wire header's length: 't' 'w', format version,
// layout hash.
const recordHeader = 11

// recordBitmap is the length of UERecord's presence bitmap: a bit per
// exported field.
var recordBitmap = func() int {
	n := 0
	for f := range reflect.TypeFor[UERecord]().Fields() {
		if f.IsExported() {
			n++
		}
	}
	return (n + 7) / 8
}()

// afterSeq is where the fields after Seq begin in b, an encoded UERecord;
// false for a record too short to hold its header, bitmap and Seq.
func afterSeq(b []byte) (int, bool) {
	n := recordHeader + recordBitmap
	if len(b) < n {
		return 0, false
	}
	if b[recordHeader]&1 == 0 {
		return n, true // Seq 0: absent
	}
	_, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return 0, false
	}
	return n + m, true
}

// record captures u; a deleted context gives its tombstone. It runs on
// u's executor; the record shares no memory with the context.
func (u *ue) record() *UERecord {
	if u.gone() {
		return &UERecord{Seq: u.seq, ID: u.id, State: StateRecord{RM: uint8(rmGone)}}
	}
	r := &UERecord{
		Seq:              u.seq,
		ID:               u.id,
		SUPI:             u.supi,
		SUCI:             u.suci,
		PEI:              u.pei,
		GUTI:             clonePtr(u.guti),
		OldGUTI:          clonePtr(u.oldGUTI),
		TMSIDraws:        u.tmsiDraws,
		Superseded:       u.supi != "" && u.amf.supis.Get(u.supi) != u,
		RegistrationArea: slices.Clone(u.taiList),
		SubscribedNSSAI:  slices.Clone(u.subscribed),
		AllowedNSSAI:     slices.Clone(u.allowedNSSAI),
		UEAMBR:           clonePtr(u.ueAMBR),
		State: StateRecord{RM: uint8(u.st.rm), CM: uint8(u.st.cm), Procedure: uint8(u.st.proc),
			Reachable: u.reachable},
		Serving: u.ran.record(),
		Target:  u.target.record(),
		Security: SecurityRecord{
			Current:                 securityRecord(u.sec),
			Pending:                 securityRecord(u.smc.pending),
			KAMF:                    bytes.Clone(u.kamf),
			NgKSI:                   u.ngKSI,
			UESecurityCapability:    u.ueSecCap,
			HasUESecurityCapability: u.hasSecCap,
			NH:                      bytes.Clone(u.nh),
			NCC:                     u.ncc,
		},
		Registration: RegistrationRecord{Step: uint8(u.reg.step), Request: cloneRegistrationRequest(u.reg.req),
			InitialIntegrity: u.reg.initialIntegrity, ByGUTI: u.reg.byGUTI, FromIdle: u.reg.fromIdle},
		Common: uint8(u.common.step),
		Authentication: AuthenticationRecord{ContextID: u.auth.ctxID, RAND: bytes.Clone(u.auth.rand),
			HXRESStar: bytes.Clone(u.auth.hxresStar), NgKSI: u.auth.ngKSI, Resynced: u.auth.resynced,
			Identified: u.auth.identified},
		ServiceRequest: ServiceRequestRecord{Request: cloneServiceRequest(u.svc.req), AfterAuth: u.svc.afterAuth},
		Handover: HandoverRecord{Type: u.ho.hoType, Cause: u.ho.cause, SourceToTarget: bytes.Clone(u.ho.toTarget),
			Completed: u.ho.completed},
		Paging: PagingRecord{Priority: u.page.priority},
		NASTimer: NASTimerRecord{Timer: uint8(u.nasTimerID), Deadline: utc(u.nasTimer.Deadline()),
			Sends: u.nasTimer.Sends(), Message: bytes.Clone(u.nasTimerMsg), Header: uint8(u.nasTimerHdr)},
		ReachabilityDeadline: utc(u.reachTimer.Deadline()),
		HandoverDeadline:     utc(u.handoverTime.Deadline()),
		LastActivity:         utc(u.lastActivity),
		ProcedureStart:       utc(u.procStart),
		Outcome:              u.outcome,
		Applied:              slices.Clone(u.applied),
		OutputsStamp:         u.outputsStamp,
	}
	if len(u.outputs) > 0 {
		r.Outputs = make([]OutputRecord, len(u.outputs))
		for i, o := range u.outputs {
			r.Outputs[i] = OutputRecord{GNB: o.GNB, Stream: o.Stream, Message: bytes.Clone(o.Message)}
		}
	}
	if h := u.heldTimers; h != nil {
		// Restored timers waiting for a detached gNB (resume.go).
		if u.nasTimerID == timerNone && h.nas.Timer != uint8(timerNone) {
			r.NASTimer = h.nas
			r.NASTimer.Message = bytes.Clone(h.nas.Message)
		}
		if r.ReachabilityDeadline.IsZero() {
			r.ReachabilityDeadline = h.reachability
		}
		if r.HandoverDeadline.IsZero() {
			r.HandoverDeadline = h.hand
		}
	}
	if len(u.released) > 0 {
		r.Released = make([]LegRecord, len(u.released))
		for i, l := range u.released {
			r.Released[i] = *l.record()
		}
	}
	if u.sessions != nil {
		r.Sessions = make([]SessionRecord, 0, len(u.sessions))
		for _, id := range u.sessionIDs() {
			s := u.sessions[id]
			sr := SessionRecord{ID: s.id, SMContextRef: s.ref, StatusURI: s.statusURI, SNSSAI: s.snssai,
				DNN: s.dnn, UserPlane: uint8(s.up)}
			if n, ok := s.smf.(NamedSMF); ok {
				sr.SMF = n.NFInstanceID()
			}
			r.Sessions = append(r.Sessions, sr)
		}
	}
	if len(u.ho.sessions) > 0 {
		r.Handover.Sessions = make([]HandoverSessionRecord, len(u.ho.sessions))
		for i, s := range u.ho.sessions {
			r.Handover.Sessions[i] = HandoverSessionRecord{ID: s.id, SNSSAI: s.snssai,
				Setup: bytes.Clone(s.setup), Command: bytes.Clone(s.command)}
		}
	}
	if len(u.page.pending) > 0 {
		r.Paging.Pending = make([]TransferRecord, len(u.page.pending))
		for i, t := range u.page.pending {
			r.Paging.Pending[i] = TransferRecord{PDUSessionID: t.d.id, N1: bytes.Clone(t.d.n1),
				N2: bytes.Clone(t.d.n2), N2Kind: uint8(t.d.kind), SNSSAI: clonePtr(t.d.snssai), FailureURI: t.failureURI}
		}
	}
	return r
}

// record captures the leg (nil: nil). It runs on the executor of r's UE.
func (r *ranUE) record() *LegRecord {
	if r == nil {
		return nil
	}
	l := &LegRecord{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, Stream: r.stream, State: uint8(r.state),
		TAI: r.tai, Location: r.loc, AMBRSent: r.ambrSent, HandedOver: r.handedOver}
	if n := r.gnb.node.Load(); n != nil {
		l.GNB = n.id
	}
	return l
}

// securityRecord captures a NAS security context (nil: nil).
func securityRecord(c *nas.SecurityContext) *NASSecurityRecord {
	if c == nil {
		return nil
	}
	r := &NASSecurityRecord{NgKSI: c.NgKSI(), CipheringAlg: c.CipheringAlg(), IntegrityAlg: c.IntegrityAlg(),
		Bearer: c.Bearer()}
	r.KNASenc, r.KNASint = c.Keys()
	r.Uplink.Last, r.Uplink.Used = c.Count(nas.Uplink)
	r.Downlink.Last, r.Downlink.Used = c.Count(nas.Downlink)
	return r
}

// utc is t without its monotonic reading and zone: what a record keeps of
// a time, so that two captures of one time encode alike.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneRegistrationRequest(m *nas.RegistrationRequest) *nas.RegistrationRequest {
	if m == nil {
		return nil
	}
	c := *m
	c.UESecurityCapability = clonePtr(m.UESecurityCapability)
	c.RequestedNSSAI = slices.Clone(m.RequestedNSSAI)
	c.LastVisitedTAI = clonePtr(m.LastVisitedTAI)
	c.UplinkDataStatus = clonePtr(m.UplinkDataStatus)
	c.PDUSessionStatus = clonePtr(m.PDUSessionStatus)
	c.NASMessageContainer = bytes.Clone(m.NASMessageContainer)
	return &c
}

func cloneServiceRequest(m *nas.ServiceRequest) *nas.ServiceRequest {
	if m == nil {
		return nil
	}
	c := *m
	c.UplinkDataStatus = clonePtr(m.UplinkDataStatus)
	c.PDUSessionStatus = clonePtr(m.PDUSessionStatus)
	c.AllowedPDUSessionStatus = clonePtr(m.AllowedPDUSessionStatus)
	c.NASMessageContainer = bytes.Clone(m.NASMessageContainer)
	return &c
}

// Gone reports whether r is a tombstone: the last record of a context that
// was deleted.
func (r *UERecord) Gone() bool { return rmState(r.State.RM) == rmGone }
