package smf

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// smState is the state of one PDU session's SM context: one explicit state
// machine covering establishment (TS 23.502 §4.3.2.2.1), modification
// (§4.3.3.2) and release (§4.3.4.2).
type smState uint8

const (
	// stEstablishing: context created (step 5); N4 establishment and the
	// N1N2MessageTransfer with the Accept are pending (steps 10-11).
	stEstablishing smState = iota
	// stWaitN2Setup: Accept sent; the PDU Session Resource Setup Response
	// Transfer is awaited (steps 12-15).
	stWaitN2Setup
	// stActive: established, no 5GSM procedure running.
	stActive
	// stModifying: PDU SESSION MODIFICATION COMMAND sent, T3591 running
	// (TS 24.501 §6.3.2.2); waits for the N1 Complete and the N2 response.
	stModifying
	// stReleasing: PDU SESSION RELEASE COMMAND sent, T3592 running
	// (TS 24.501 §6.3.3.2); N4 session and policy already gone.
	stReleasing
	// stReleased: the context is gone; late references see this.
	stReleased
)

func (s smState) String() string {
	switch s {
	case stEstablishing:
		return "establishing"
	case stWaitN2Setup:
		return "wait-n2-setup"
	case stActive:
		return "active"
	case stModifying:
		return "modifying"
	case stReleasing:
		return "releasing"
	case stReleased:
		return "released"
	}
	return "state?"
}

// dlState is what happens to a session's downlink data while its user
// plane is deactivated (CM-IDLE UE).
type dlState uint8

const (
	// dlBuffering: the UPF buffers and reports the first packet (FAR
	// BUFF|NOCP), or the user plane is active.
	dlBuffering dlState = iota
	// dlNotified: a Downlink Data Report came; the AMF was asked to reach
	// the UE (N1N2MessageTransfer) and the UPF keeps buffering.
	dlNotified
	// dlDiscarding: the UE did not answer the paging; the UPF drops the
	// downlink until the paging backoff ends.
	dlDiscarding
)

// qos is the authorized QoS of the session (from the PCF's session rule).
type qos struct {
	ambr   nas.SessionAMBR // bit/s
	fiveQI uint8
	arp    models.Arp
}

// The default QoS flow and its rule (TS 23.501 §5.7.1.5); tern sessions
// have exactly one QoS flow.
const (
	defaultQFI        = 1
	defaultQoSRuleID  = 1
	defaultFilterID   = 1
	defaultPrecedence = 255 // lowest: the match-all rule is evaluated last
)

// N4 rule IDs of a session (TS 29.244 §5.2.1: unique within the session).
const (
	pdrUplink   = 1
	pdrDownlink = 2
	farUplink   = 1
	farDownlink = 2
	qerSession  = 1
	urrSession  = 1
	barSession  = 1
)

// smContext is one PDU session. All fields after ue are owned by the UE's
// executor (ue.exec).
type smContext struct {
	ref string
	// statusURI is the AMF's smContextStatusUri for this context, where
	// its release is notified (TS 29.502 §5.2.2.10); "" for none.
	statusURI string
	supi      string
	psi       uint8
	ue        *ueState
	dnn       *dnnConf
	slice     identity.SNSSAI
	cpSEID    uint64

	// establishing is when CreateSMContext was asked for the session, until
	// the establishment's outcome is reported (then zero; observe.go).
	establishing time.Time

	state     smState
	upCnx     models.Smf_PDUSess_UpCnxState
	pti       uint8 // PTI of the UE-requested procedure being answered (0: none)
	ueIP      netip.Addr
	typeCause nas.Cause5GSM // #50 in the Accept when IPv4v6 was asked for
	pco       []byte        // extended PCO for the Accept
	policyID  string        // "" once deleted
	qos       qos
	pending   *qos // policy change that arrived during another procedure

	upf      *upfNode
	upSEID   uint64 // 0 once deleted
	ulTunnel ngap.GTPTunnel
	dlTunnel ngap.GTPTunnel // gNB side; valid Addr once known
	// upLife is the life of the UPF in which the PFCP session was
	// established (life.go): its N4 requests end with it. n4Lost: the
	// PFCP session went with the UPF's life and a restoration found the
	// UPF gone again; the UPF's next association restores it
	// (restoration.go).
	upLife *n4Life
	n4Lost bool
	// asked is the life of upf in which a PFCP Session Establishment
	// Request for the session left and no answer was recorded: with a
	// Recorder, set and recorded before the request leaves (intent
	// before the request), cleared once its outcome is. Only an SMF
	// restored from such a record finds it set when the establishment
	// runs: the UPF may hold the session, so it is asked again there
	// (completeEstablishment).
	asked *n4Life
	// n4Deletion is the session's PFCP deletion once sent (n4.go).
	n4Deletion *n4Deletion
	// ulMoved: a restoration gave the session another uplink F-TEID
	// than the 5G-AN has; it is told once its user plane is up.
	// ulMoving: the PDU Session Resource Modify Request that tells it is
	// out, and the next modify answer from the 5G-AN is its
	// (restoration.go, settleUplink).
	ulMoved, ulMoving bool

	// A PDU session establishment waiting for a UPF (wait.go,
	// holdEstablishment): held while in the SMF's wait list or about to
	// be retried, holdTimer ending the wait at Timers.UPFWait. avoid are
	// the UPFs that failed it for want of an association or an answer,
	// passed over until they associate again; waited: it has waited, so
	// its N4 attempts end with its wait.
	held      bool
	holdTimer serial.Timer
	holdWhy   string // why it waits, for the failure when the wait ends
	avoid     []avoidedUPF
	waited    bool

	// dl is where the session's downlink stands while its user plane is
	// deactivated (network-triggered service request, TS 23.502 §4.2.3.3);
	// backoff runs in dlDiscarding.
	dl      dlState
	backoff serial.Timer

	// N2 handover (handover.go): where the session stands, the target's
	// DL tunnel once prepared, and whether indirect forwarding rules are
	// installed at the UPF (fwdTimer removes them after the handover).
	ho       hoState
	hoTarget ngap.GTPTunnel
	fwd      bool
	fwdTimer serial.Timer

	// Procedure progress of stModifying / stReleasing.
	n1Done, n2Done bool
	// timer is the 5GSM network timer of the running procedure (T3591 or
	// T3592) and cmd the command it retransmits (TS 24.501 §6.3.2.5,
	// §6.3.3.5).
	timer serial.Retransmission
	cmd   []byte
}

// ueState is everything of one UE (SUPI) at this SMF. Its executor runs
// every request and timer expiry of the UE, one at a time and in order
// (package internal/serial), so its sessions need no lock; different UEs
// run in parallel. Messages to the AMF go out in order on a second queue,
// out, so that the AMF may call the SMF back while it handles one.
type ueState struct {
	supi     string
	exec     serial.Queue
	out      serial.Queue
	sessions map[uint8]*smContext // by PDU session ID
	dead     bool                 // removed from the table; work goes to a new state
	// seq is the version of u's state: +1 at the end of each step of its
	// executor (endStep), what its record's Seq is (record.go).
	seq uint64
	// held are the messages to the AMF that the running step queued while
	// a Recorder is set: they go on out after the step's record (output
	// commit, endStep). Executor only.
	held []func()
}

// post queues f on u's executor as a step of its own (endStep).
func (s *SMF) post(u *ueState, f func()) {
	u.exec.Post(func() {
		f()
		s.endStep(u)
	})
}

// onUE runs f on the executor of supi's state, created if needed, as a
// step (endStep after it).
func (s *SMF) onUE(supi string, f func(u *ueState)) bool { return s.runOnUE(supi, f, true) }

// runOnUE is onUE; without end, f ends the step itself (callUE, which
// answers after endStep).
func (s *SMF) runOnUE(supi string, f func(u *ueState), end bool) bool {
	u := s.ues.GetOrCreate(supi, func() *ueState {
		u := &ueState{supi: supi, sessions: make(map[uint8]*smContext, 2)}
		u.exec.Init(s.group)
		u.out.Init(s.group)
		return u
	})
	return u.exec.Post(func() {
		if u.dead {
			// u left the table after this was posted: the UE's work goes
			// to its new state.
			s.runOnUE(supi, f, end)
			return
		}
		f(u)
		if end {
			s.endStep(u)
		}
	})
}

// endStep ends a step of u's state machine: a request, an answer, a
// report or a timer expiry that its executor handled (every function that
// runs there as an event ends with it; the snapshots, which only read,
// do not). u's version moves on, the Recorder, if any, gets u's record
// (record.go), and u leaves the table when it has no session left: its
// last record, without sessions, says so. Then the messages to the AMF
// the step queued (held, with a Recorder) go out: output commit (issue 36,
// L25GC §3.5), no answer leaves before the record of the state that made
// it. Runs on u's executor.
func (s *SMF) endStep(u *ueState) {
	if !u.dead {
		u.seq++
		if s.recorder != nil {
			s.recorder.RecordedUE(u.record())
		}
		if len(u.sessions) == 0 {
			u.dead = true
			s.ues.DeleteIf(u.supi, func(v *ueState) bool { return v == u })
		}
	}
	for i, f := range u.held {
		u.out.Post(f)
		u.held[i] = nil
	}
	u.held = u.held[:0]
}

// recordIntent records u's state in the middle of a step, before a
// request that the step awaits leaves (the step's record comes after the
// answer): a restored SMF then knows the request may have reached its
// peer. A version of its own. Runs on u's executor.
func (s *SMF) recordIntent(u *ueState) {
	if s.recorder == nil || u.dead {
		return
	}
	u.seq++
	s.recorder.RecordedUE(u.record())
}

// toAMF queues f, a message to the AMF that a step of u makes, on u's
// outbound queue: at once without a Recorder, else after the step's record
// (endStep). Runs on u's executor.
func (s *SMF) toAMF(u *ueState, f func()) {
	if s.recorder == nil {
		u.out.Post(f)
		return
	}
	u.held = append(u.held, f)
}

// errClosed answers requests that arrive while the SMF closes.
var errClosed = sbi.NewProblem(http.StatusServiceUnavailable, sbi.CauseSystemFailure, "smf closing")

// callUE runs f on supi's executor as a step and waits for its answer or
// for ctx. The answer is given after the step's end (endStep): with a
// Recorder, after the step's record (output commit). When ctx ends first,
// f still runs (as a request that timed out in flight does at a server);
// its answer is dropped.
func callUE[T any](ctx context.Context, s *SMF, supi string, f func(u *ueState) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !s.runOnUE(supi, func(u *ueState) {
		v, err := f(u)
		s.endStep(u)
		ch <- result{v, err}
	}, false) {
		var zero T
		return zero, errClosed
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseSystemFailure, "smf: %v", ctx.Err())
	}
}

// callContext runs f on the executor of the live context ref and waits for
// its answer (see callUE).
func callContext[T any](ctx context.Context, s *SMF, ref string, f func(c *smContext) (T, error)) (T, error) {
	c := s.contexts.Get(ref)
	if c == nil {
		var zero T
		return zero, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm context %q", ref)
	}
	return callUE(ctx, s, c.supi, func(u *ueState) (T, error) {
		if c.state == stReleased || c.ue != u {
			var zero T
			return zero, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm context %q", ref)
		}
		return f(c)
	})
}

// newRef allocates an SM context reference. It is known before the
// context exists, for the URIs handed out while it is set up.
func (s *SMF) newRef() string { return strconv.FormatUint(s.nextRef.Add(1), 10) }

// newSEID allocates a CP F-SEID (TS 29.244 §8.2.37).
func (s *SMF) newSEID() uint64 { return s.nextSEID.Add(1) }

// newContext registers a context for (u, psi) with CP F-SEID seid. Runs
// on u's executor.
func (s *SMF) newContext(u *ueState, ref string, seid uint64, psi uint8, d *dnnConf, slice identity.SNSSAI) *smContext {
	c := &smContext{
		ref:    ref,
		supi:   u.supi,
		psi:    psi,
		ue:     u,
		dnn:    d,
		slice:  slice,
		cpSEID: seid,
		state:  stEstablishing,
		upCnx:  models.Smf_PDUSess_UpCnxState_DEACTIVATED,
	}
	u.sessions[psi] = c
	s.contexts.Put(c.ref, c)
	s.seids.Put(c.cpSEID, c)
	s.stats.contexts.Add(1)
	return c
}

// forget removes c everywhere. Its resources must be gone already. Runs
// on c's executor.
func (s *SMF) forget(c *smContext) {
	if c.state == stReleased {
		return
	}
	s.establishmentEnded(c, procedures.Aborted) // when still establishing: released meanwhile
	c.state = stReleased
	s.stopTimer(c)
	c.backoff.Stop()
	c.fwdTimer.Stop()
	s.unhold(c)
	if c.ue.sessions[c.psi] == c {
		delete(c.ue.sessions, c.psi)
	}
	s.contexts.Delete(c.ref)
	s.seids.Delete(c.cpSEID)
	s.stats.contexts.Add(-1)
	s.stats.released.Add(1)
}
