package amf

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/internal/shardmap"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sctp"
)

// maxAMFUENGAPID is the largest AMF UE NGAP ID (TS 38.413 §9.3.3.1: 0..2^40-1).
const maxAMFUENGAPID = 1<<40 - 1

// gnb is the NG-RAN node context of one SCTP association (TS 38.413 §8.7.1).
// One goroutine reads the association (serveGNB) and only decodes and
// dispatches; sends come from the UEs' executors and are serialised by
// sendMu.
type gnb struct {
	amf *AMF
	// assoc is the association (read it with conn); unset for a detached
	// gNB, the gNB of restored connections that has not connected to this
	// instance (record_restore.go), until ResumeConn gives it one while UE
	// executors may be sending: hence atomic.
	assoc atomic.Pointer[sctp.Conn]
	log   *slog.Logger
	// stamp is the front end's stamp (sctp.Message.Stamp) of the message
	// the reader is handling; a handler that hands the message to a UE's
	// step takes it (takeStamp), and that step acknowledges it. Only the
	// reader goroutine touches it.
	stamp uint64

	sendMu sync.Mutex
	// resumable: a detached gNB (record_restore.go) that a front end may
	// still resume; sends to it are kept in pending (under sendMu) until
	// ResumeConn attaches it, or dropped when ResumeDone gives it up.
	resumable atomic.Bool
	pending   []pendingN2

	// setupDone: NG Setup succeeded on this association. Written by its
	// reader; read by the reader of another association whose NG Setup
	// names the same node (a reconnect, TS 38.413 §8.7.1.2).
	setupDone atomic.Bool
	// node is the gNB as NG Setup described it: its global ID (the target
	// of a handover names it, TS 38.413 §9.3.1.25) and the TAs it serves
	// that we also serve; replaced as a whole by a repeated NG Setup while
	// UE executors read it.
	node atomic.Pointer[gnbNode]

	mu   sync.Mutex
	ues  map[int64]*ranUE // by RAN UE NGAP ID
	dead bool             // association gone: no new connections
	// resetAck receives the NG Reset Acknowledge of an AMF-initiated NG
	// Reset (TS 38.413 §8.7.4.2.2); nil when none is pending, closed when
	// the association goes.
	resetAck chan *ngap.NGResetAcknowledge
	// heldTimers are the restored contexts with a leg on this detached
	// gNB whose timers wait for it to be resumed (resume.go).
	heldTimers []*ue
}

// conn is the gNB's association; nil while detached (record_restore.go).
func (g *gnb) conn() sctp.Conn {
	if p := g.assoc.Load(); p != nil {
		return *p
	}
	return nil
}

// gnbNode is what NG Setup told us about a gNB.
type gnbNode struct {
	id   ngap.GlobalGNBID
	tais []identity.TAI
}

// tais returns the served TAs the gNB broadcasts (nil before NG Setup).
func (g *gnb) tais() []identity.TAI {
	if n := g.node.Load(); n != nil {
		return n.tais
	}
	return nil
}

// servesTAI reports whether the gNB broadcasts tai.
func (g *gnb) servesTAI(tai identity.TAI) bool {
	for _, t := range g.tais() {
		if t == tai {
			return true
		}
	}
	return false
}

// streamFor picks the SCTP stream of a UE-associated signalling connection:
// stream 0 is for non-UE-associated signalling (TS 38.412 §7).
func (g *gnb) streamFor(amfUEID int64) uint16 {
	c := g.conn()
	if c == nil {
		return 0 // detached (record_restore.go): nothing is sent
	}
	n := c.OutboundStreams()
	if n <= 1 {
		return 0
	}
	return 1 + uint16(amfUEID%int64(n-1))
}

// addUE registers r under its RAN UE NGAP ID. It returns the connection r
// displaces (the gNB reused an ID it evidently forgot) and false when the
// association is already gone.
func (g *gnb) addUE(r *ranUE) (old *ranUE, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		return nil, false
	}
	old = g.ues[r.ranID]
	g.ues[r.ranID] = r
	return old, true
}

// removeUE drops r from the gNB's table if it is still the entry for its ID.
func (g *gnb) removeUE(r *ranUE) {
	g.mu.Lock()
	if g.ues[r.ranID] == r {
		delete(g.ues, r.ranID)
	}
	g.mu.Unlock()
}

// legState is the state of one UE-associated logical NG-connection, as far
// as the AMF needs it. A serving connection goes forward through
// signalling, secured, context and releasing; the target of an N2 handover
// starts at handover-preparing.
type legState uint8

const (
	// legSignalling: set up by an Initial UE Message; no secure exchange of
	// NAS messages on it yet (TS 24.501 §4.4.4.3).
	legSignalling legState = iota
	// legSecured: NAS messages on this connection are integrity protected
	// and verified (security mode complete, or a message that verified with
	// the UE's current context).
	legSecured
	// legContext: the gNB holds the UE's AS context (Initial Context Setup
	// requested, TS 38.413 §8.3.1; or the connection came with one: Path
	// Switch, handover).
	legContext
	// legHandoverPreparing: Handover Request sent to the target gNB; its RAN
	// UE NGAP ID is not known yet (TS 38.413 §8.4.2).
	legHandoverPreparing
	// legHandoverPrepared: Handover Request Acknowledge received.
	legHandoverPrepared
	// legReleasing: UE Context Release Command sent (at most once, TS
	// 38.413 §8.3.3); the Complete frees the IDs.
	legReleasing
)

func (s legState) String() string {
	return [...]string{"signalling", "secured", "context", "handover-preparing", "handover-prepared", "releasing"}[s]
}

// ranUE is one UE-associated logical NG-connection (TS 38.413 §3.1): the
// pair of NGAP IDs on one gNB. It belongs to exactly one UE context. A UE
// has a serving one in CM-CONNECTED (ue.ran) and, during an N2 handover,
// a target one (ue.target), each with its own IDs.
type ranUE struct {
	gnb    *gnb
	ue     *ue
	amfID  int64
	ranID  int64 // 0 for a handover target before its Acknowledge
	stream uint16

	// Fields below are owned by ue's executor.
	state legState
	tai   identity.TAI
	loc   ngap.UserLocationNR // last User Location Information (TS 38.413 §9.3.1.16)
	// ambrSent: the gNB has the UE-AMBR (TS 38.413 §8.2.1.2).
	ambrSent bool
	// relSessions are the PDU sessions the gNB listed in UE Context
	// Release Complete (TS 38.413 §9.2.2.6).
	relSessions []uint8
	// handedOver: the source of an N2 handover whose Handover Notify came
	// (the UE is at the target; this leg is being released).
	handedOver bool
}

// secured reports whether NAS messages on r are integrity protected
// (TS 24.501 §4.4.4.3: secure exchange established). A connection being
// released carries no more NAS.
func (r *ranUE) secured() bool { return r.state >= legSecured && r.state != legReleasing }

// ue is the AMF UE context (TS 23.502 §5.2.2.2 "UE context in AMF"). All
// fields except exec and published are owned by the executor: every
// message, timer expiry and SBI result for this UE runs there, one at a
// time, so the procedures need no locks and different UEs run in parallel.
type ue struct {
	amf *AMF
	log *slog.Logger

	exec serial.Queue

	// id names the context in this AMF's records (record.go); never reused.
	id uint64
	// seq is the version of the context's record: +1 at every step that
	// changed the record while a RecordSink is set (record.go).
	seq uint64
	// recLast is the encoding of the record last given to the
	// RecordSink, recNext the buffer the next one is encoded into: change
	// detection for the deltas (their Seq left out); nil while no sink is
	// set.
	recLast, recNext []byte
	// holding: the running step holds its NGAP messages in held until its
	// record is committed (commit.go); false without a RecordSink.
	holding bool
	held    []heldN2
	// stamp is the front end's stamp of the message the running step
	// handles; 0 for a step that has none (replay.go).
	stamp uint64
	// applied is, per gNB, the stamp of the last message a step of this
	// context handled (dedup.go); nil without a front end's stamps.
	applied []StampRecord
	// outputs are the NGAP messages of the last step when it handled the
	// stamped message outputsStamp (dedup.go); nil, 0 otherwise.
	outputs      []OutputRecord
	outputsStamp uint64
	// duplicate: the running step is the replay of a message a step
	// handled already (dedup.go); it leaves outputs as they are.
	duplicate bool
	// heldTimers are the restored timers of a context whose legs' gNBs
	// are not resumed yet (resume.go), and heldFor how many of those gNBs
	// are still detached; nil, 0 otherwise. Records show them.
	heldTimers *heldTimers
	heldFor    int

	st ueState // see ue_state.go: the only record of where the UE is
	// published mirrors st (and reachable) for other goroutines
	// (N1N2MessageTransfer answers from the SMF's goroutine); written only
	// by setState and setReachable.
	published atomic.Uint32

	ran    *ranUE // serving N2 connection; nil exactly in CM-IDLE
	target *ranUE // N2 handover target connection; nil outside a handover
	// released are the UE's other connections: no longer serving or
	// target, UE Context Release Command sent, the Complete awaited (TS
	// 38.413 §8.3.3); their NGAP IDs stay taken until then.
	released []*ranUE

	supi    string
	suci    string
	pei     string // IMEISV from Security Mode Complete
	guti    *identity.GUTI
	oldGUTI *identity.GUTI // kept valid until Registration Complete (TS 24.501 §5.5.1.2.4)
	// tmsiDraws counts the 5G-TMSIs drawn for the context (guti.go): the
	// next draw's input, so that a replay draws the same ones.
	tmsiDraws uint32
	taiList   []identity.TAI // registration area of the last Registration Accept

	// Access stratum key chain (TS 33.501 §6.9.2.1.1): the KgNB of the
	// last Initial Context Setup, then the last NH given to a gNB, and its
	// NCC.
	nh  []byte
	ncc uint8

	// NAS security (TS 33.501 §6.2, §6.7).
	sec       *nas.SecurityContext // current context, nil before SMC
	kamf      []byte
	ngKSI     uint8
	ueSecCap  nas.UESecurityCapability
	hasSecCap bool

	subscribed   []sbi.SubscribedSNSSAI // from Nudm_SDM am-data; nil until fetched
	allowedNSSAI []identity.SNSSAI
	ueAMBR       *ngap.AMBR // subscribed UE-AMBR from am-data (TS 23.501 §5.7.2.6); nil = none

	// sessions are the UE's PDU sessions by PDU session ID (TS 23.502
	// §5.2.2.2.2: PDU session ID, SMF, S-NSSAI, DNN).
	sessions map[uint8]*pduSession

	// The running procedure's data (st.proc says which one runs).
	reg    registrationProc
	common commonProc
	auth   authProc
	smc    securityModeProc
	svc    serviceRequestProc
	ho     handoverProc
	page   pagingProc // transfers waiting for the UE outlive the paging

	// nasTimer guards the downlink message the current step waits on (one
	// at a time: T3550, T3560, T3570, T3522, or T3513 for paging).
	nasTimer   serial.Retransmission
	nasTimerID timerID
	// nasTimerMsg is the plain message nasTimer retransmits (protected
	// afresh each time with nasTimerHdr); nil for T3513, which pages.
	nasTimerMsg []byte
	nasTimerHdr nas.SecurityHeaderType
	// reachTimer is the mobile reachable timer, then the implicit
	// deregistration timer (TS 24.501 §5.3.7), while the UE is CM-IDLE.
	reachTimer serial.Timer
	// reachable is false once the mobile reachable timer has expired: the
	// UE is not paged (TS 24.501 §5.3.7). The mirror published for other
	// goroutines is the reachable bit of published.
	reachable bool
	// handoverTime guards an N2 handover's preparation and execution.
	handoverTime serial.Timer

	// lastActivity is when the last 5GMM message from the UE was accepted
	// (dispatch), for operators (snapshot.go).
	lastActivity time.Time

	// procStart is when the running procedure (st.proc) started; outcome,
	// when set, is how the handler ending it names its end (observe.go).
	procStart time.Time
	outcome   string
}

// post queues f on u's executor after everything posted before it. Work
// posted after the AMF closed is dropped. f is one step of the UE: with a
// RecordSink set, the UE's record goes to it after f if f changed it, and
// the NGAP messages f sends leave after that (commit.go).
func (u *ue) post(f func()) {
	if u.amf.sink.Load() == nil && u.amf.delivered.Load() == 0 {
		u.exec.Post(f)
		return
	}
	u.exec.Post(func() {
		u.beginStep()
		f()
		u.endStep()
	})
}

// fire moves u through the state machine (ue_state.go). It returns false,
// and leaves the state alone, when the table does not allow ev now; the
// caller then answers as for a message not compatible with the state.
func (u *ue) fire(ev event) bool {
	n, ok := next(u.st, ev)
	if !ok {
		u.log.Info("event not allowed in this state", "event", ev.String(), "state", u.st.String())
		u.amf.stats.refused.Add(1)
		return false
	}
	prev := u.st.proc
	u.setState(n)
	u.trackProcedure(prev, ev)
	u.outcome = ""
	return true
}

func (u *ue) setState(n ueState) {
	a := u.amf
	if u.st.rm == rmRegistered && n.rm != rmRegistered {
		a.stats.registered.Add(-1)
	} else if u.st.rm != rmRegistered && n.rm == rmRegistered {
		a.stats.registered.Add(1)
	}
	if u.st.cm == cmIdle && n.cm == cmConnected {
		a.stats.connected.Add(1)
	} else if u.st.cm == cmConnected && n.cm == cmIdle {
		a.stats.connected.Add(-1)
	}
	// Registered and CM-IDLE: neither of the two counts above tells it
	// (connected UEs include those still registering).
	wasIdle, isIdle := u.st.rm == rmRegistered && u.st.cm == cmIdle, n.rm == rmRegistered && n.cm == cmIdle
	if wasIdle != isIdle {
		if isIdle {
			a.stats.idle.Add(1)
		} else {
			a.stats.idle.Add(-1)
		}
	}
	u.st = n
	u.publish()
}

// setReachable records whether the UE may be paged (TS 24.501 §5.3.7).
func (u *ue) setReachable(ok bool) {
	u.reachable = ok
	u.publish()
}

func (u *ue) publish() {
	var r uint32
	if u.reachable {
		r = 1 << 24
	}
	u.published.Store(uint32(u.st.rm) | uint32(u.st.cm)<<8 | uint32(u.st.proc)<<16 | r)
}

// publishedState is u's state as last set, for goroutines other than its
// executor, and whether it may be paged.
func (u *ue) publishedState() (ueState, bool) {
	v := u.published.Load()
	return ueState{rm: rmState(v), cm: cmState(v >> 8), proc: procedure(v >> 16)}, v&(1<<24) != 0
}

func (u *ue) gone() bool { return u.st.rm == rmGone }

// ranUETable maps AMF UE NGAP IDs to N2 connections.
type ranUETable struct{ shardmap.Map[int64, *ranUE] }

func newRANUETable() *ranUETable {
	t := &ranUETable{}
	t.Init(func(id int64) uint32 { return uint32(id) })
	return t
}

func (t *ranUETable) put(r *ranUE)    { t.Put(r.amfID, r) }
func (t *ranUETable) delete(r *ranUE) { t.CompareAndDelete(r.amfID, r) }

// supiTable maps SUPIs to UE contexts, so that a second registration of the
// same subscriber replaces the first context (TS 23.502 §4.2.2.2.2 step 5).
type supiTable struct{ shardmap.Map[string, *ue] }

func newSUPITable() *supiTable {
	t := &supiTable{}
	t.Init(supiHash)
	return t
}

// supiHash is FNV-1a over the last digits: enough spread, no allocation.
func supiHash(s string) uint32 {
	h := uint32(2166136261)
	for i := max(0, len(s)-8); i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
