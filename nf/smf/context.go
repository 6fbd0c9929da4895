package smf

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
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

// smContext is one PDU session. All fields after ue are guarded by ue.mu.
type smContext struct {
	ref    string
	supi   string
	psi    uint8
	ue     *ueState
	dnn    *dnnConf
	slice  identity.SNSSAI
	cpSEID uint64

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

	// Procedure progress of stModifying / stReleasing.
	n1Done, n2Done bool
	timer          procTimer
}

// procTimer is the 5GSM network timer of the running procedure (T3591 or
// T3592). gen discards expiries of a timer stopped or restarted meanwhile.
type procTimer struct {
	t     *time.Timer
	gen   uint32
	sends int
	n1    []byte // the command to retransmit (TS 24.501 §6.3.2.5, §6.3.3.5)
}

// ueState is everything of one UE (SUPI) at this SMF.
type ueState struct {
	supi     string
	mu       sync.Mutex
	sessions map[uint8]*smContext // by PDU session ID
	dead     bool                 // removed from the table; re-look it up

	// Sender: tasks run one at a time, in order, without mu held.
	qmu     sync.Mutex
	queue   []func()
	running bool
	pending int
}

// lockUE returns supi's state, created if needed, with its mutex held.
func (s *SMF) lockUE(supi string) *ueState {
	for {
		u := s.ues.GetOrCreate(supi, func() *ueState {
			return &ueState{supi: supi, sessions: make(map[uint8]*smContext, 2)}
		})
		u.mu.Lock()
		if !u.dead {
			return u
		}
		u.mu.Unlock()
	}
}

// unlockUE drops u from the table when it has no session and no task left,
// then unlocks it.
func (s *SMF) unlockUE(u *ueState) {
	if len(u.sessions) == 0 && !u.dead {
		u.qmu.Lock()
		idle := u.pending == 0
		u.qmu.Unlock()
		if idle {
			u.dead = true
			s.ues.DeleteIf(u.supi, func(v *ueState) bool { return v == u })
		}
	}
	u.mu.Unlock()
}

// lockContext finds a live context by ref and locks its UE.
func (s *SMF) lockContext(ref string) (*smContext, error) {
	c := s.contexts.Get(ref)
	if c == nil {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm context %q", ref)
	}
	c.ue.mu.Lock()
	if c.state == stReleased {
		s.unlockUE(c.ue)
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm context %q", ref)
	}
	return c, nil
}

// post queues task on u's sender. Tasks run in order on one goroutine that
// exists while there is work; they take u.mu themselves when needed and
// never hold it while calling the AMF.
func (s *SMF) post(u *ueState, task func()) {
	u.qmu.Lock()
	u.queue = append(u.queue, task)
	u.pending++
	if u.running {
		u.qmu.Unlock()
		return
	}
	if !s.acquireWorker() {
		u.queue, u.pending = nil, 0
		u.qmu.Unlock()
		return
	}
	u.running = true
	u.qmu.Unlock()
	go s.drain(u)
}

func (s *SMF) drain(u *ueState) {
	defer s.releaseWorker()
	for {
		u.qmu.Lock()
		if len(u.queue) == 0 {
			u.running = false
			u.qmu.Unlock()
			break
		}
		t := u.queue[0]
		u.queue[0] = nil
		u.queue = u.queue[1:]
		u.qmu.Unlock()
		t()
		u.qmu.Lock()
		u.pending--
		u.qmu.Unlock()
	}
	u.mu.Lock()
	s.unlockUE(u)
}

// newContext registers a context for (u, psi). Runs with u.mu held.
func (s *SMF) newContext(u *ueState, psi uint8, d *dnnConf, slice identity.SNSSAI) *smContext {
	c := &smContext{
		ref:    strconv.FormatUint(s.nextRef.Add(1), 10),
		supi:   u.supi,
		psi:    psi,
		ue:     u,
		dnn:    d,
		slice:  slice,
		cpSEID: s.nextSEID.Add(1),
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
// with c.ue.mu held.
func (s *SMF) forget(c *smContext) {
	if c.state == stReleased {
		return
	}
	c.state = stReleased
	s.stopTimer(c)
	if c.ue.sessions[c.psi] == c {
		delete(c.ue.sessions, c.psi)
	}
	s.contexts.Delete(c.ref)
	s.seids.Delete(c.cpSEID)
	s.stats.contexts.Add(-1)
	s.stats.released.Add(1)
}
