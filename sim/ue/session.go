package ue

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
)

// 5GSM: the UE side of PDU session management (TS 24.501 §6). Each PDU
// session has its own state machine (§6.1.3.2.1: INACTIVE, ACTIVE PENDING,
// ACTIVE, INACTIVE PENDING) and at most one UE-requested procedure
// transaction (a PTI, §6.1.3.2.2) with its retransmission timer: T3580 for
// establishment, T3582 for release (§10.3, 16 s, four retransmissions).
// Procedures on different sessions run independently of each other and of
// the 5GMM procedure; they need a registered UE with an open, secured
// signalling connection, which a UE in CM-IDLE first gets back with a
// service request (service type signalling).

// Procedure names used with the Observer for 5GSM.
const (
	// ProcPDUSession runs from sending the PDU Session Establishment
	// Request to the gNB sending PDU Session Resource Setup Response
	// (benchmarks.md).
	ProcPDUSession = "pdu-session"
	// ProcPDURelease runs from sending the PDU Session Release Request to
	// the later of sending PDU Session Release Complete and the gNB sending
	// PDU Session Resource Release Response.
	ProcPDURelease = "pdu-release"
)

// Timer defaults (TS 24.501 §10.3, Table 10.3.2).
const (
	DefaultT3580 = 16 * time.Second
	DefaultT3582 = 16 * time.Second
	// smMaxRetransmissions: the fifth expiry aborts (§6.4.1.6, §6.4.3.5).
	smMaxRetransmissions = 4
)

// SessionRequest names the PDU session to establish.
type SessionRequest struct {
	DNN    string           // "" = let the network pick its default DNN
	SNSSAI *identity.SNSSAI // nil = let the network pick
	// ID is the PDU session identity (1..15); 0 = the lowest free one.
	ID uint8
}

// Session is a snapshot of one PDU session.
type Session struct {
	ID       uint8
	State    string // the §6.1.3.2.1 state name
	DNN      string
	SNSSAI   identity.SNSSAI
	Type     uint8 // nas.PDUSessionType*
	SSCMode  uint8
	Address  netip.Addr
	QFI      uint8 // of the default QoS rule
	AMBR     nas.SessionAMBR
	QoSRules []nas.QoSRule
	QoSFlows []nas.QoSFlowDescription
	// UserPlane: the gNB holds AN resources (a tunnel) for the session.
	UserPlane bool
}

// SessionRejectError is a PDU Session Establishment Reject, Release
// Reject or a 5GSM STATUS ending a procedure.
type SessionRejectError struct {
	Message string // "establishment", "release"
	Cause   nas.Cause5GSM
	Backoff *nas.GPRSTimer3
}

func (e *SessionRejectError) Error() string {
	return fmt.Sprintf("ue: PDU session %s rejected, 5GSM cause %s", e.Message, e.Cause)
}

// NotForwardedError is a DL NAS Transport returning a 5GSM message the
// AMF could not forward (TS 24.501 §5.4.5.3.3, e.g. #90, #91).
type NotForwardedError struct{ Cause nas.Cause5GMM }

func (e *NotForwardedError) Error() string {
	return fmt.Sprintf("ue: 5GSM message not forwarded by the AMF, 5GMM cause %s", e.Cause)
}

// Errors of 5GSM procedures.
var (
	ErrNotRegistered   = errors.New("ue: not registered with an open, secured signalling connection")
	ErrNoSessionID     = errors.New("ue: no free PDU session identity")
	ErrSessionBusy     = errors.New("ue: a procedure is already running on this PDU session")
	ErrNoSession       = errors.New("ue: no such active PDU session")
	ErrNoUserPlane     = errors.New("ue: PDU session has no user plane")
	ErrRetransmissions = errors.New("ue: no answer after the maximum number of retransmissions")
	ErrSessionReleased = errors.New("ue: PDU session released by the network")
)

type smState uint8

// PDU session states in the UE (TS 24.501 §6.1.3.2.1).
const (
	smInactive smState = iota
	smActivePending
	smActive
	smInactivePending
)

func (s smState) String() string {
	switch s {
	case smInactive:
		return "PDU SESSION INACTIVE"
	case smActivePending:
		return "PDU SESSION ACTIVE PENDING"
	case smActive:
		return "PDU SESSION ACTIVE"
	case smInactivePending:
		return "PDU SESSION INACTIVE PENDING"
	}
	return "?"
}

type smProcKind uint8

const (
	smProcNone smProcKind = iota
	smProcEstablish
	smProcRelease
)

func (k smProcKind) name() string {
	if k == smProcRelease {
		return ProcPDURelease
	}
	return ProcPDUSession
}

// pduSession is one PDU session; guarded by UE.mu except data.
type pduSession struct {
	id    uint8
	state smState
	info  Session // the negotiated parameters

	// the UE-requested procedure transaction (§6.1.3.2.2)
	proc     smProcKind
	pti      uint8
	start    time.Time
	msg      []byte // plain 5GSM message, resent on timer expiry
	ulReq    nas.ULNASTransport
	timer    *time.Timer
	expiries int
	done     chan outcome // capacity 1
	nasDone  bool         // the network's answer was handled (and any reply sent)
	nasAt    time.Time
	anDone   bool // the gNB finished its part (setup or release of AN resources)
	anAt     time.Time
	anErr    error

	userPlane bool // the gNB holds AN resources for it
	data      *dataPath
}

// dataPath is a session's user-plane attachment, read without the UE lock
// on the gNB's receive goroutine.
type dataPath struct {
	id    uint8
	addr  netip.Addr
	link  Link                        // fixed: a handover moves the connection within the link
	up    atomic.Bool                 // the gNB holds AN resources
	probe atomic.Pointer[receiverBox] // gets downlink first (ping, transfer)
	sink  atomic.Pointer[receiverBox] // then this (a TUN)

	uplink, downlink, unclaimed atomic.Int64
}

type receiverBox struct{ r Receiver }

// Receiver takes a session's downlink packets: Receive reports whether it
// consumed pkt. Called on the gNB's receive goroutine; must not block and
// must not keep pkt.
type Receiver interface {
	Receive(pkt []byte) bool
}

// DataStats counts a session's user-plane packets at the UE.
type DataStats struct {
	Uplink, Downlink int64
	// Unclaimed: downlink packets no receiver took (no TUN, no matching probe).
	Unclaimed int64
}

// EstablishSession runs UE-requested PDU session establishment (TS 24.501
// §6.4.1) and returns the session once the network accepted it and the
// gNB set up its resources.
func (u *UE) EstablishSession(ctx context.Context, req SessionRequest) (Session, error) {
	s, err := u.runSM(ctx, smProcEstablish, req)
	if err != nil {
		return Session{}, err
	}
	return s, nil
}

// ReleaseSession runs UE-requested PDU session release (TS 24.501 §6.4.3).
func (u *UE) ReleaseSession(ctx context.Context, id uint8) error {
	_, err := u.runSM(ctx, smProcRelease, SessionRequest{ID: id})
	return err
}

func (u *UE) runSM(ctx context.Context, k smProcKind, req SessionRequest) (Session, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	if err := u.connectForSM(ctx); err != nil {
		u.failSM(k)
		return Session{}, fmt.Errorf("%s %s: %w", k.name(), u.SUPI(), err)
	}
	u.mu.Lock()
	s, err := u.startSMLocked(k, req)
	u.mu.Unlock()
	if err != nil {
		u.failSM(k)
		return Session{}, fmt.Errorf("%s %s: %w", k.name(), u.SUPI(), err)
	}
	var out outcome
	select {
	case out = <-s.done:
	case <-ctx.Done():
		u.mu.Lock()
		if s.proc == k {
			state := s.state
			u.abortSMLocked(s)
			u.mu.Unlock()
			u.failSM(k)
			return Session{}, fmt.Errorf("%s %s: session %d: %w (state %s)", k.name(), u.SUPI(), s.id, ctx.Err(), state)
		}
		u.mu.Unlock()
		out = <-s.done
	}
	if out.err != nil {
		u.failSM(k)
		return Session{}, fmt.Errorf("%s %s: session %d: %w", k.name(), u.SUPI(), s.id, out.err)
	}
	if u.cfg.Observer != nil {
		u.cfg.Observer.Observe(k.name(), out.window)
	}
	u.mu.Lock()
	snap := s.snapshotLocked()
	u.mu.Unlock()
	return snap, nil
}

// connectForSM gives a registered UE in CM-IDLE its signalling connection
// back for a 5GSM procedure: a service request with service type signalling
// (TS 24.501 §5.6.1.1), observed as ProcServiceRequest. A procedure the UE
// started itself is waited for first.
func (u *UE) connectForSM(ctx context.Context) error {
	u.mu.Lock()
	err := u.waitAsyncLocked(ctx)
	idle := u.mm == mmRegistered && !u.connected && u.proc == procNone && u.guti != nil
	u.mu.Unlock()
	if err != nil || !idle {
		return err
	}
	return u.runArgs(ctx, procServiceRequest, procArgs{serviceType: nas.ServiceSignalling})
}

// startSMLocked checks the preconditions, allocates the PTI and sends the
// first message of a UE-requested 5GSM procedure.
func (u *UE) startSMLocked(k smProcKind, req SessionRequest) (*pduSession, error) {
	if u.link == nil {
		return nil, ErrNoLink
	}
	if u.mm != mmRegistered || !u.connected || !u.secured {
		return nil, ErrNotRegistered
	}
	var s *pduSession
	var sm nas.SMMessage
	ul := nas.ULNASTransport{PayloadContainerType: nas.PayloadN1SMInformation}
	switch k {
	case smProcEstablish:
		id := req.ID
		if id == 0 {
			for i := uint8(1); i <= 15; i++ {
				if u.sessions[i] == nil {
					id = i
					break
				}
			}
			if id == 0 {
				return nil, ErrNoSessionID
			}
		}
		if id > 15 {
			return nil, fmt.Errorf("ue: PDU session identity %d: want 1..15", id)
		}
		if u.sessions[id] != nil {
			return nil, fmt.Errorf("ue: PDU session %d exists (%s)", id, u.sessions[id].state)
		}
		s = &pduSession{id: id, done: make(chan outcome, 1)}
		s.info.DNN = req.DNN
		if req.SNSSAI != nil {
			s.info.SNSSAI = *req.SNSSAI
		}
		// TS 24.501 §6.4.1.2: IPv4, SSC mode 1, full-rate integrity
		// protection (UP integrity is not used).
		sm = &nas.PDUSessionEstablishmentRequest{
			SMHeader:             nas.SMHeader{SessionID: id},
			IntegrityMaxDataRate: [2]byte{nas.IntegrityMaxRateFull, nas.IntegrityMaxRateFull},
			PDUSessionType:       nas.PDUSessionTypeIPv4,
			SSCMode:              nas.SSCMode1,
		}
		// §5.4.5.2.2: request type "initial request" with S-NSSAI and DNN.
		ul.RequestType = nas.RequestInitial
		ul.SNSSAI = req.SNSSAI
		ul.DNN = req.DNN
	case smProcRelease:
		s = u.sessions[req.ID]
		if req.ID == 0 || req.ID > 15 || s == nil || s.state != smActive {
			return nil, ErrNoSession
		}
		if s.proc != smProcNone {
			return nil, ErrSessionBusy
		}
		sm = &nas.PDUSessionReleaseRequest{
			SMHeader: nas.SMHeader{SessionID: s.id},
			Cause:    nas.CauseRegularDeactivation,
		}
	default:
		return nil, fmt.Errorf("ue: unknown 5GSM procedure %d", k)
	}
	pti := u.allocPTILocked()
	switch m := sm.(type) {
	case *nas.PDUSessionEstablishmentRequest:
		m.TransactionID = pti
	case *nas.PDUSessionReleaseRequest:
		m.TransactionID = pti
	}
	plain, err := nas.Encode(sm)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", sm.MessageType(), err)
	}
	ul.PDUSessionID = s.id
	ul.Payload = plain
	s.proc, s.pti, s.msg, s.ulReq = k, pti, plain, ul
	s.expiries, s.nasDone, s.anDone, s.anErr = 0, false, false, nil
	select { // a late outcome of an aborted procedure must not end this one
	case <-s.done:
	default:
	}
	prev := s.state
	if k == smProcEstablish {
		s.state = smActivePending
		u.sessions[s.id] = s
	} else {
		s.state = smInactivePending
	}
	t, err := u.sendLocked(&s.ulReq)
	if err != nil {
		s.proc, s.pti, s.msg = smProcNone, 0, nil
		s.state = prev
		if k == smProcEstablish {
			u.sessions[s.id] = nil
		}
		return nil, fmt.Errorf("send %s: %w", sm.MessageType(), err)
	}
	s.start = t
	u.armSMTimerLocked(s)
	return s, nil
}

// allocPTILocked returns a UE-assigned PTI (1..127, TS 24.007 §11.2.3.1a)
// that no session is using.
func (u *UE) allocPTILocked() uint8 {
	for {
		u.nextPTI++
		if u.nextPTI == 0 || u.nextPTI > 127 {
			u.nextPTI = 1
		}
		inUse := false
		for _, s := range u.sessions {
			if s != nil && s.proc != smProcNone && s.pti == u.nextPTI {
				inUse = true
			}
		}
		if !inUse {
			return u.nextPTI
		}
	}
}

func (u *UE) smTimer(k smProcKind) time.Duration {
	if k == smProcRelease {
		return u.cfg.T3582
	}
	return u.cfg.T3580
}

// armSMTimerLocked (re)starts T3580/T3582 for s's procedure.
func (u *UE) armSMTimerLocked(s *pduSession) {
	if s.timer != nil {
		s.timer.Stop()
	}
	k, pti := s.proc, s.pti
	s.timer = time.AfterFunc(u.smTimer(k), func() { u.onSMTimer(s, k, pti) })
}

// onSMTimer handles the expiry of T3580 (§6.4.1.6 a) or T3582 (§6.4.3.5 a):
// retransmit the request in a new UL NAS Transport, and abort on the fifth
// expiry.
func (u *UE) onSMTimer(s *pduSession, k smProcKind, pti uint8) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s.proc != k || s.pti != pti || s.nasDone {
		return
	}
	s.expiries++
	if s.expiries > smMaxRetransmissions {
		u.stats.SMTimeouts++
		u.endSMLocked(s, time.Now(), ErrRetransmissions)
		// §6.4.1.6: the establishment is aborted; §6.4.3.5: the session
		// is released locally.
		u.removeSessionLocked(s)
		return
	}
	u.stats.SMRetransmissions++
	if _, err := u.sendLocked(&s.ulReq); err != nil {
		u.endSMLocked(s, time.Now(), err)
		return
	}
	u.armSMTimerLocked(s)
}

// endSMLocked ends s's procedure transaction with an outcome.
func (u *UE) endSMLocked(s *pduSession, end time.Time, err error) {
	if s.proc == smProcNone {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	out := outcome{err: err}
	if err == nil {
		out.window = end.Sub(s.start)
	}
	s.proc, s.pti, s.msg = smProcNone, 0, nil
	select {
	case s.done <- out:
	default:
	}
}

// abortSMLocked gives up a procedure whose caller stopped waiting.
func (u *UE) abortSMLocked(s *pduSession) {
	k := s.proc
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.proc, s.pti, s.msg = smProcNone, 0, nil
	switch {
	case k == smProcEstablish && s.state == smActivePending:
		u.removeSessionLocked(s)
	case k == smProcRelease && s.state == smInactivePending:
		s.state = smActive
	}
}

// finishIfCompleteLocked ends the procedure once both the NAS exchange and
// the gNB's part are over; the window closes at the later of the two.
func (u *UE) finishIfCompleteLocked(s *pduSession) {
	if s.proc == smProcNone || !s.nasDone {
		return
	}
	switch s.proc {
	case smProcEstablish:
		if !s.anDone {
			return
		}
		if s.anErr != nil {
			u.endSMLocked(s, s.anAt, s.anErr)
			return
		}
		u.endSMLocked(s, s.anAt, nil)
	case smProcRelease:
		if !s.anDone && s.userPlane {
			return // the gNB still holds the tunnel
		}
		end := s.nasAt
		if s.anDone && s.anAt.After(end) {
			end = s.anAt
		}
		u.endSMLocked(s, end, nil)
		u.removeSessionLocked(s)
	}
}

// removeSessionLocked makes s INACTIVE and forgets it (and its buffered
// uplink).
func (u *UE) removeSessionLocked(s *pduSession) {
	s.state = smInactive
	u.setUserPlaneLocked(s, false)
	if u.sessions[s.id] == s {
		u.sessions[s.id] = nil
		u.data[s.id].Store(nil)
		u.dropUplinkLocked(s.id)
	}
}

// handleSMLocked processes a 5GSM message from a DL NAS Transport.
func (u *UE) handleSMLocked(dl *nas.DLNASTransport) {
	if dl.Cause != 0 {
		// TS 24.501 §5.4.5.3.3: the AMF returns a 5GSM message it could
		// not forward, with the 5GMM cause.
		if s := u.sessionLocked(dl.PDUSessionID); s != nil && s.proc != smProcNone {
			u.stats.SMRejects++
			k := s.proc
			u.endSMLocked(s, time.Now(), &NotForwardedError{Cause: dl.Cause})
			if k == smProcEstablish {
				u.removeSessionLocked(s)
			} else if s.state == smInactivePending {
				s.state = smActive
			}
			return
		}
		u.discardLocked(fmt.Sprintf("DL NAS transport with 5GMM cause %s for no procedure", dl.Cause), nil)
		return
	}
	sm, err := nas.DecodeSM(dl.Payload)
	if err != nil {
		u.discardLocked("5GSM decode", err)
		return
	}
	if u.debug {
		u.log.Debug("downlink 5GSM", "msg", sm.MessageType().String(), "psi", sm.PDUSessionID(), "pti", sm.PTI())
	}
	s := u.sessionLocked(sm.PDUSessionID())
	switch m := sm.(type) {
	case *nas.PDUSessionEstablishmentAccept:
		u.onEstablishmentAcceptLocked(s, m)
	case *nas.PDUSessionEstablishmentReject:
		if s == nil || s.proc != smProcEstablish || s.pti != m.PTI() {
			u.smStatusLocked(sm, nas.CauseInvalidPTIValue)
			return
		}
		// §6.4.1.4: stop T3580, release the PTI, enter PDU SESSION INACTIVE.
		u.stats.SMRejects++
		u.endSMLocked(s, time.Now(), &SessionRejectError{Message: "establishment", Cause: m.Cause, Backoff: m.BackoffTimer})
		u.removeSessionLocked(s)
	case *nas.PDUSessionModificationCommand:
		u.onModificationCommandLocked(s, m)
	case *nas.PDUSessionReleaseCommand:
		u.onReleaseCommandLocked(s, m)
	case *nas.PDUSessionReleaseReject:
		if s == nil || s.proc != smProcRelease || s.pti != m.PTI() {
			u.smStatusLocked(sm, nas.CauseInvalidPTIValue)
			return
		}
		// §6.4.3.4: stop T3582, back to PDU SESSION ACTIVE.
		u.stats.SMRejects++
		s.state = smActive
		u.endSMLocked(s, time.Now(), &SessionRejectError{Message: "release", Cause: m.Cause})
	case *nas.Status5GSM:
		u.log.Info("5GSM STATUS from network", "psi", m.PDUSessionID(), "cause", m.Cause.String())
		// §6.5.2 (UE side of 5GSM status): a STATUS naming the PTI of a
		// running procedure ends it.
		if s != nil && s.proc != smProcNone && s.pti == m.PTI() && m.PTI() != 0 {
			k := s.proc
			u.endSMLocked(s, time.Now(), &SessionRejectError{Message: "status", Cause: m.Cause})
			if k == smProcEstablish {
				u.removeSessionLocked(s)
			} else if s.state == smInactivePending {
				s.state = smActive
			}
		}
	default:
		u.smStatusLocked(sm, nas.CauseMessageTypeNotCompatible5GSM)
	}
}

func (u *UE) sessionLocked(id uint8) *pduSession {
	if id == 0 || id > 15 {
		return nil
	}
	return u.sessions[id]
}

// onEstablishmentAcceptLocked handles TS 24.501 §6.4.1.3.
func (u *UE) onEstablishmentAcceptLocked(s *pduSession, m *nas.PDUSessionEstablishmentAccept) {
	if s == nil || s.proc != smProcEstablish || s.pti != m.PTI() {
		if s != nil && s.state == smActive && s.pti == 0 {
			u.stats.RepeatedResponses++ // a duplicate accept for a session already up
			return
		}
		u.smStatusLocked(m, nas.CauseInvalidPTIValue)
		return
	}
	if s.nasDone {
		u.stats.RepeatedResponses++
		return
	}
	if m.PDUAddress == nil || !m.PDUAddress.IPv4.Is4() {
		// We asked for IPv4: an accept without an IPv4 address leaves us
		// nothing to send from. Release it (§6.4.1.3: a UE may release a
		// session it cannot use).
		u.stats.SMRejects++
		s.nasDone = true
		u.endSMLocked(s, time.Now(), errors.New("ue: PDU session accepted without an IPv4 address"))
		u.releaseUnusableLocked(s)
		return
	}
	s.info.Type, s.info.SSCMode = m.PDUSessionType, m.SSCMode
	s.info.Address = m.PDUAddress.IPv4
	s.info.AMBR = m.SessionAMBR
	s.info.QoSRules = applyQoSRules(nil, m.QoSRules)
	s.info.QoSFlows = applyQoSFlows(nil, m.QoSFlowDescriptions)
	s.info.QFI = defaultQFI(s.info.QoSRules)
	if m.SNSSAI != nil {
		s.info.SNSSAI = *m.SNSSAI
	}
	if m.DNN != "" {
		s.info.DNN = m.DNN
	}
	if m.Cause != 0 {
		u.log.Info("PDU session accepted with cause", "psi", s.id, "cause", m.Cause.String())
	}
	s.state = smActive
	s.nasDone, s.nasAt = true, time.Now()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	dp := &dataPath{id: s.id, addr: s.info.Address, link: u.link}
	dp.up.Store(s.userPlane)
	s.data = dp
	u.data[s.id].Store(dp)
	u.finishIfCompleteLocked(s)
}

// releaseUnusableLocked asks the network to release a session the UE
// cannot use (no IPv4 address), without waiting for the outcome.
func (u *UE) releaseUnusableLocked(s *pduSession) {
	req := &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: s.id}, Cause: nas.CauseRequestRejectedUnspecified}
	plain, err := nas.Encode(req)
	if err == nil {
		u.sendLocked(&nas.ULNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, PDUSessionID: s.id, Payload: plain})
	}
	u.removeSessionLocked(s)
}

// onModificationCommandLocked handles network-requested modification
// (TS 24.501 §6.3.2.3): apply the new AMBR, QoS rules and flows and answer
// Modification Complete.
func (u *UE) onModificationCommandLocked(s *pduSession, m *nas.PDUSessionModificationCommand) {
	if s == nil || (s.state != smActive && s.state != smInactivePending) {
		// §6.3.2.3 / §7.3.2: a command for a session that does not exist.
		u.smStatusLocked(m, nas.CauseInvalidPDUSessionIdentity)
		return
	}
	if m.SessionAMBR != nil {
		s.info.AMBR = *m.SessionAMBR
	}
	if len(m.QoSRules) > 0 {
		s.info.QoSRules = applyQoSRules(s.info.QoSRules, m.QoSRules)
		s.info.QFI = defaultQFI(s.info.QoSRules)
	}
	if len(m.QoSFlowDescriptions) > 0 {
		s.info.QoSFlows = applyQoSFlows(s.info.QoSFlows, m.QoSFlowDescriptions)
	}
	u.stats.Modifications++
	u.sendSMLocked(&nas.PDUSessionModificationComplete{SMHeader: nas.SMHeader{SessionID: s.id, TransactionID: m.PTI()}})
}

// onReleaseCommandLocked handles the Release Command: the answer to our
// Release Request (§6.4.3.3) or a network-requested release (§6.3.3.3).
// Either way the UE answers Release Complete and the session goes INACTIVE.
func (u *UE) onReleaseCommandLocked(s *pduSession, m *nas.PDUSessionReleaseCommand) {
	if s == nil {
		// §6.3.3.3: the UE answers Release Complete even for a session it
		// no longer has, so that the network can finish.
		u.sendSMLocked(&nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: m.PDUSessionID(), TransactionID: m.PTI()}})
		return
	}
	t, err := u.sendSMLocked(&nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: s.id, TransactionID: m.PTI()}})
	if err != nil {
		t = time.Now()
	}
	switch {
	case s.proc == smProcRelease && m.PTI() == s.pti:
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		s.state = smInactive
		s.nasDone, s.nasAt = true, t
		u.finishIfCompleteLocked(s)
	case s.proc == smProcEstablish:
		// §6.4.1.3 abnormal: the network releases instead of accepting.
		u.stats.NetworkReleases++
		u.endSMLocked(s, t, &SessionRejectError{Message: "establishment", Cause: m.Cause})
		u.removeSessionLocked(s)
	default:
		u.stats.NetworkReleases++
		u.log.Info("PDU session released by the network", "psi", s.id, "cause", m.Cause.String())
		if s.proc != smProcNone {
			u.endSMLocked(s, t, ErrSessionReleased)
		}
		u.removeSessionLocked(s)
	}
}

// sendSMLocked sends a 5GSM message in a UL NAS Transport (§5.4.5.2).
func (u *UE) sendSMLocked(sm nas.SMMessage) (time.Time, error) {
	plain, err := nas.Encode(sm)
	if err != nil {
		u.log.Error("encode 5GSM", "msg", sm.MessageType(), "err", err)
		return time.Time{}, err
	}
	return u.sendLocked(&nas.ULNASTransport{
		PayloadContainerType: nas.PayloadN1SMInformation,
		PDUSessionID:         sm.PDUSessionID(),
		Payload:              plain,
	})
}

// smStatusLocked answers a 5GSM message the UE cannot take with 5GSM
// STATUS (TS 24.501 §7.3, §8.3.16).
func (u *UE) smStatusLocked(sm nas.SMMessage, cause nas.Cause5GSM) {
	u.discardLocked(fmt.Sprintf("5GSM %s for session %d, PTI %d: %s", sm.MessageType(), sm.PDUSessionID(), sm.PTI(), cause), nil)
	u.sendSMLocked(&nas.Status5GSM{SMHeader: nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI()}, Cause: cause})
}

// applyQoSRules applies the operations of ops to rules (TS 24.501
// §9.11.4.13) and returns the new set, sorted by rule ID.
func applyQoSRules(rules, ops []nas.QoSRule) []nas.QoSRule {
	out := slices.Clone(rules)
	find := func(id uint8) int {
		return slices.IndexFunc(out, func(r nas.QoSRule) bool { return r.ID == id })
	}
	for _, op := range ops {
		i := find(op.ID)
		switch op.Operation {
		case nas.QoSRuleCreate:
			r := op
			r.Filters = slices.Clone(op.Filters)
			if i >= 0 {
				out[i] = r
			} else {
				out = append(out, r)
			}
		case nas.QoSRuleDelete:
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		case nas.QoSRuleModifyAddFilters, nas.QoSRuleModifyReplaceFilters, nas.QoSRuleModifyDeleteFilters, nas.QoSRuleModifyWithoutFilters:
			if i < 0 {
				continue
			}
			r := &out[i]
			r.Precedence, r.Segregation, r.QFI = op.Precedence, op.Segregation, op.QFI
			switch op.Operation {
			case nas.QoSRuleModifyAddFilters:
				for _, f := range op.Filters {
					r.Filters = slices.DeleteFunc(r.Filters, func(g nas.PacketFilter) bool { return g.ID == f.ID })
					r.Filters = append(r.Filters, f)
				}
			case nas.QoSRuleModifyReplaceFilters:
				r.Filters = slices.Clone(op.Filters)
			case nas.QoSRuleModifyDeleteFilters:
				for _, f := range op.Filters {
					r.Filters = slices.DeleteFunc(r.Filters, func(g nas.PacketFilter) bool { return g.ID == f.ID })
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b nas.QoSRule) int { return int(a.ID) - int(b.ID) })
	return out
}

// applyQoSFlows applies QoS flow description operations (§9.11.4.12).
func applyQoSFlows(flows, ops []nas.QoSFlowDescription) []nas.QoSFlowDescription {
	out := slices.Clone(flows)
	for _, op := range ops {
		i := slices.IndexFunc(out, func(f nas.QoSFlowDescription) bool { return f.QFI == op.QFI })
		switch op.Operation {
		case nas.QoSFlowCreate, nas.QoSFlowModify:
			if i >= 0 {
				out[i] = op
			} else {
				out = append(out, op)
			}
		case nas.QoSFlowDelete:
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		}
	}
	return out
}

// defaultQFI is the QFI of the default QoS rule (DQR set), else of the
// first rule, else 0.
func defaultQFI(rules []nas.QoSRule) uint8 {
	for _, r := range rules {
		if r.Default {
			return r.QFI
		}
	}
	if len(rules) > 0 {
		return rules[0].QFI
	}
	return 0
}

func (s *pduSession) snapshotLocked() Session {
	out := s.info
	out.ID = s.id
	out.State = s.state.String()
	out.UserPlane = s.userPlane
	out.QoSRules = slices.Clone(s.info.QoSRules)
	out.QoSFlows = slices.Clone(s.info.QoSFlows)
	return out
}

// Sessions returns the UE's PDU sessions (any state but INACTIVE), by ID.
func (u *UE) Sessions() []Session {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []Session
	for _, s := range u.sessions {
		if s != nil {
			out = append(out, s.snapshotLocked())
		}
	}
	return out
}

// Session returns PDU session id.
func (u *UE) Session(id uint8) (Session, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sessionLocked(id)
	if s == nil {
		return Session{}, false
	}
	return s.snapshotLocked(), true
}

// HandleSessionSetup is the gNB reporting PDU Session Resource Setup for
// session id: sentAt is when its Response went out, err non-nil when it
// listed the session as failed.
func (u *UE) HandleSessionSetup(id uint8, sentAt time.Time, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sessionLocked(id)
	if s == nil {
		return
	}
	u.setUserPlaneLocked(s, err == nil)
	if s.proc != smProcEstablish {
		return // e.g. resources re-established for an existing session
	}
	s.anDone, s.anAt, s.anErr = true, sentAt, err
	if err != nil && !s.nasDone {
		// The NAS answer may still come; the failure decides the outcome.
		s.nasDone = true
		u.endSMLocked(s, sentAt, err)
		u.removeSessionLocked(s)
		return
	}
	u.finishIfCompleteLocked(s)
}

// HandleSessionReleased is the gNB reporting that it released session id's
// AN resources (PDU Session Resource Release Response sent at sentAt).
func (u *UE) HandleSessionReleased(id uint8, sentAt time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sessionLocked(id)
	if s == nil {
		return
	}
	u.setUserPlaneLocked(s, false)
	if s.proc == smProcRelease {
		s.anDone, s.anAt = true, sentAt
		u.finishIfCompleteLocked(s)
	}
}

// releaseAllSessionsLocked releases every session locally: deregistration
// (TS 24.501 §5.5.2.2.2, §5.5.2.3.2) ends them without 5GSM signalling.
func (u *UE) releaseAllSessionsLocked(why error) {
	for _, s := range u.sessions {
		if s == nil {
			continue
		}
		if s.proc != smProcNone {
			u.endSMLocked(s, time.Now(), why)
		}
		u.removeSessionLocked(s)
	}
}

// userPlaneLostLocked marks every session without AN resources: the
// signalling connection was released (CM-IDLE), the sessions stay.
func (u *UE) userPlaneLostLocked() {
	for _, s := range u.sessions {
		if s != nil {
			u.setUserPlaneLocked(s, false)
		}
	}
}

func (u *UE) setUserPlaneLocked(s *pduSession, up bool) {
	if up {
		// The buffered uplink goes first, before SendData's fast path
		// sees the user plane.
		u.flushUplinkLocked(s)
	}
	s.userPlane = up
	if s.data != nil {
		s.data.up.Store(up)
	}
}

func (u *UE) failSM(k smProcKind) {
	if u.cfg.Observer != nil {
		u.cfg.Observer.Fail(k.name())
	}
}

// SendData sends one uplink IP packet on session id's user plane. In
// CM-IDLE (and while a service request or an AN release runs) the packet is
// buffered (Config.UplinkBuffer; ErrUplinkBufferFull beyond) and an idle UE
// starts a service request with the session in its Uplink data status; the
// buffered packets go out in order once the user plane is back, or are
// dropped (Stats.DroppedUplink) if it does not come back. A connected UE
// whose session has no user plane gets ErrNoUserPlane.
func (u *UE) SendData(id uint8, pkt []byte) error {
	if id == 0 || id > 15 {
		return ErrNoSession
	}
	dp := u.data[id].Load()
	if dp == nil {
		return ErrNoSession
	}
	if !dp.up.Load() || dp.link == nil {
		return u.sendDataIdle(id, dp, pkt)
	}
	return sendOn(dp, id, pkt)
}

func sendOn(dp *dataPath, id uint8, pkt []byte) error {
	if err := dp.link.SendData(id, pkt); err != nil {
		return err
	}
	dp.uplink.Add(1)
	return nil
}

// sendDataIdle is SendData's path for a session without user plane.
func (u *UE) sendDataIdle(id uint8, dp *dataPath, pkt []byte) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sessions[id]
	if s == nil || s.data != dp || dp.link == nil {
		return ErrNoSession
	}
	if dp.up.Load() {
		return sendOn(dp, id, pkt) // it came back meanwhile, the buffer flushed
	}
	switch {
	case u.proc.service(), u.proc == procRelease:
		// The user plane is on its way back, or a service request follows
		// the release (HandleRelease).
		return u.queueUplinkLocked(id, pkt)
	case u.proc == procNone && !u.connected && u.mm == mmRegistered && s.state == smActive:
		if err := u.queueUplinkLocked(id, pkt); err != nil {
			return err
		}
		if err := u.startAsyncLocked(procServiceRequest, procArgs{serviceType: nas.ServiceData}); err != nil {
			u.fail(procServiceRequest)
			u.dropUplinkLocked(0)
			return err
		}
		return nil
	}
	return ErrNoUserPlane
}

// HandleData is the gNB delivering a downlink packet of session id. The
// probe (if any) sees it first, then the sink.
func (u *UE) HandleData(id uint8, pkt []byte) {
	if id == 0 || id > 15 {
		u.droppedDownlink.Add(1)
		return
	}
	dp := u.data[id].Load()
	if dp == nil {
		u.droppedDownlink.Add(1)
		return
	}
	dp.downlink.Add(1)
	if b := dp.probe.Load(); b != nil && b.r.Receive(pkt) {
		return
	}
	if b := dp.sink.Load(); b != nil && b.r.Receive(pkt) {
		return
	}
	dp.unclaimed.Add(1)
}

// SetProbe attaches r as the first taker of session id's downlink (a ping
// or transfer run); nil detaches.
func (u *UE) SetProbe(id uint8, r Receiver) error {
	return u.setReceiver(id, r, true)
}

// SetSink attaches r (a TUN) as the taker of the downlink no probe
// claimed; nil detaches.
func (u *UE) SetSink(id uint8, r Receiver) error {
	return u.setReceiver(id, r, false)
}

func (u *UE) setReceiver(id uint8, r Receiver, probe bool) error {
	if id == 0 || id > 15 {
		return ErrNoSession
	}
	dp := u.data[id].Load()
	if dp == nil {
		return ErrNoSession
	}
	var box *receiverBox
	if r != nil {
		box = &receiverBox{r: r}
	}
	if probe {
		dp.probe.Store(box)
	} else {
		dp.sink.Store(box)
	}
	return nil
}

// DataStats returns session id's user-plane counters.
func (u *UE) DataStats(id uint8) (DataStats, bool) {
	if id == 0 || id > 15 {
		return DataStats{}, false
	}
	dp := u.data[id].Load()
	if dp == nil {
		return DataStats{}, false
	}
	return DataStats{Uplink: dp.uplink.Load(), Downlink: dp.downlink.Load(), Unclaimed: dp.unclaimed.Load()}, true
}
