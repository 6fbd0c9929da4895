package ue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// Idle mode (TS 24.501 §5.3.7, §5.5.2.3, §5.6.1; TS 23.502 §4.2.3): the
// service request (UE-triggered, or in answer to paging), the network's
// deregistration, periodic registration (T3512), the inactivity release and
// the uplink buffered while the user plane comes back.
//
// The procedures the UE starts itself (paging, uplink data, T3512, the
// inactivity timer, a re-registration the network asked for) send their
// first message in place, from whoever triggered them (the gNB's reader,
// SendData's caller, a timer's goroutine), and end like the others in a
// downlink handler; nobody waits for them (startAsyncLocked).

// DefaultT3512 is the periodic registration timer a UE uses when the
// Registration Accept has none (TS 24.501 §10.2).
const DefaultT3512 = 54 * time.Minute

// ServiceRejectError is a Service Reject ending a service request.
type ServiceRejectError struct{ Cause nas.Cause5GMM }

func (e *ServiceRejectError) Error() string {
	return fmt.Sprintf("ue: service request rejected, 5GMM cause %s", e.Cause)
}

// Errors of the idle-mode procedures.
var (
	ErrConnected = errors.New("ue: service request needs a UE in CM-IDLE (it has a signalling connection)")
	// ErrNotConnected: Release found no signalling connection, which the
	// network may have released meanwhile (its inactivity timer). Not a
	// failed procedure: the UE is where the caller wanted it.
	ErrNotConnected        = errors.New("ue: no signalling connection to release")
	ErrNetworkDeregistered = errors.New("ue: deregistered by the network")
	ErrUplinkBufferFull    = errors.New("ue: uplink buffer full while the user plane comes back")
)

// ServiceRequest runs a UE-triggered service request from CM-IDLE (TS
// 24.501 §5.6.1.2.1) with serviceType nas.ServiceSignalling or
// nas.ServiceData: the UE gets its signalling connection back and, for
// data, the user plane of every PDU session it holds (Uplink data status);
// packets SendData buffered meanwhile are flagged too. The Service Request
// goes integrity protected with the stored context and carries the PDU
// session status; without a context the network authenticates first and
// gets the complete request in the Security Mode Complete. The window runs
// from sending the InitialUEMessage to the gNB sending the Initial Context
// Setup Response. A Service Reject ends it with *ServiceRejectError once
// the network released the connection; with #9 or #10 the UE then
// registers again by itself (TS 24.501 §5.6.1.5).
func (u *UE) ServiceRequest(ctx context.Context, serviceType uint8) error {
	switch serviceType {
	case nas.ServiceSignalling, nas.ServiceData:
	default:
		return fmt.Errorf("ue: service type %d: want signalling (0) or data (1)", serviceType)
	}
	return u.runArgs(ctx, procServiceRequest, procArgs{serviceType: serviceType, allUplink: serviceType == nas.ServiceData})
}

// startServiceLocked sends the Service Request of k in an InitialUEMessage.
func (u *UE) startServiceLocked(k procKind, a procArgs) error {
	if u.mm != mmRegistered || u.guti == nil {
		return fmt.Errorf("ue: service request needs a registered UE with a 5G-GUTI (state %s)", u.mm)
	}
	if u.connected {
		return ErrConnected
	}
	uplink := u.uplinkStatusLocked(a.allUplink)
	pdu, err := u.serviceRequestLocked(a.serviceType, uplink)
	if err != nil {
		return err
	}
	u.beginLocked(k)
	u.mm = mmServiceRequestInitiated
	// TS 24.501 §4.5.6, Table 4.5.6.1: mt-Access for the answer to
	// paging, mo-Data with uplink user data, mo-Signalling otherwise.
	cause := ngap.RRCMOSignalling
	switch {
	case k == procPagingResponse:
		cause = ngap.RRCMTAccess
	case a.serviceType == nas.ServiceData || uplink != 0:
		cause = ngap.RRCMOData
	}
	t, err := u.link.SendInitial(pdu, cause, u.stmsiLocked())
	if err != nil {
		u.abortLocked()
		return fmt.Errorf("send service request: %w", err)
	}
	u.connectedLocked()
	u.procStart = t
	if k == procPagingResponse {
		u.procStart = a.pagedAt
	}
	return nil
}

// serviceRequestLocked builds the Service Request (TS 24.501 §8.2.16) and
// keeps the complete plain message for a Security Mode Complete (§4.4.6).
// With a context the message goes integrity protected, not ciphered, with
// the cleartext IEs, and the complete message (with the Uplink data status
// and PDU session status) ciphered in its NAS message container (§4.4.6;
// Config.OuterServiceRequestIEs puts them outside instead). Without a
// context only the cleartext IEs go.
func (u *UE) serviceRequestLocked(serviceType uint8, uplink uint16) ([]byte, error) {
	status := u.sessionStatusLocked()
	full := nas.ServiceRequest{
		ServiceType:      serviceType,
		NgKSI:            nas.NgKSI{KSI: nas.KSINoKey},
		STMSI:            u.guti.STMSI(),
		PDUSessionStatus: &status,
	}
	if u.sec != nil {
		full.NgKSI.KSI = u.ksi
	}
	if uplink != 0 {
		full.UplinkDataStatus = &uplink
	}
	plain, err := nas.Encode(&full)
	if err != nil {
		return nil, fmt.Errorf("encode service request: %w", err)
	}
	u.initialPlain = plain
	if u.sec == nil {
		clear, err := nas.Encode(&nas.ServiceRequest{ServiceType: serviceType, NgKSI: full.NgKSI, STMSI: full.STMSI})
		if err != nil {
			return nil, fmt.Errorf("encode service request: %w", err)
		}
		u.initialProt = false
		return clear, nil
	}
	outer := plain
	if !u.cfg.OuterServiceRequestIEs {
		// The complete message, ciphered with the uplink NAS COUNT that
		// protects the outer one (a copy of the context ciphers it without
		// advancing the COUNT), goes in the container; the outer message
		// has the cleartext IEs.
		enc, err := u.sec.Clone().Protect(plain, nas.IntegrityProtectedAndCiphered, nas.Uplink)
		if err != nil {
			return nil, fmt.Errorf("cipher service request: %w", err)
		}
		outer, err = nas.Encode(&nas.ServiceRequest{ServiceType: serviceType, NgKSI: full.NgKSI, STMSI: full.STMSI,
			NASMessageContainer: enc[secHdrLen:]})
		if err != nil {
			return nil, fmt.Errorf("encode service request: %w", err)
		}
	}
	pdu, err := u.sec.Protect(outer, nas.IntegrityProtected, nas.Uplink)
	if err != nil {
		return nil, fmt.Errorf("protect service request: %w", err)
	}
	u.initialProt = true
	return pdu, nil
}

// sessionStatusLocked is the PDU session status IE (TS 24.501 §9.11.3.44):
// bit i set for each PDU session i not in PDU SESSION INACTIVE.
func (u *UE) sessionStatusLocked() uint16 {
	var st uint16
	for _, s := range u.sessions {
		if s != nil {
			st |= 1 << s.id
		}
	}
	return st
}

// uplinkStatusLocked is the Uplink data status IE (§9.11.3.57): the
// sessions with buffered uplink packets, and with all every active one.
func (u *UE) uplinkStatusLocked(all bool) uint16 {
	var st uint16
	for _, q := range u.ulQueue {
		st |= 1 << q.psi
	}
	if all {
		for _, s := range u.sessions {
			if s != nil && s.state == smActive && s.data != nil {
				st |= 1 << s.id
			}
		}
	}
	return st
}

// HandleContextSetup is the gNB reporting that it answered an Initial
// Context Setup Request (the Response went out at sentAt): the end of the
// service request and paging windows.
func (u *UE) HandleContextSetup(sentAt time.Time) {
	u.mu.Lock()
	u.icsAt = sentAt
	u.mu.Unlock()
}

// HandlePaging is the gNB handing over a Paging for the UE's 5G-S-TMSI,
// received at receivedAt. A registered UE in CM-IDLE answers with a
// Service Request (service type mobile terminated, TS 24.501 §5.6.2.2.1),
// sent from here; its outcome is observed as ProcPaging, from receivedAt
// to the gNB's Initial Context Setup Response. A UE that is not idle, or
// busy with a procedure of its own, does not answer.
func (u *UE) HandlePaging(receivedAt time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.Pagings++
	if u.mm != mmRegistered || u.connected || u.proc != procNone || u.guti == nil || u.link == nil {
		u.stats.PagingsIgnored++
		u.log.Debug("paging not answered", "state", u.mm.String(), "connected", u.connected, "proc", u.proc.name())
		return
	}
	err := u.startAsyncLocked(procPagingResponse, procArgs{serviceType: nas.ServiceMobileTerminated, pagedAt: receivedAt})
	if err != nil {
		u.stats.PagingsIgnored++
		u.log.Warn("paging: service request not sent", "err", err)
		u.fail(procPagingResponse)
	}
}

// onServiceAcceptLocked handles TS 24.501 §5.6.1.4.1: the sessions the
// network no longer has are released locally, those whose user plane it
// could not re-establish stay without one (their buffered uplink is
// dropped), and the procedure ends at the gNB's Initial Context Setup
// Response (or now, for an accept that did not come in one).
func (u *UE) onServiceAcceptLocked(m *nas.ServiceAccept) {
	if !u.proc.service() {
		u.discardLocked("service accept outside a service request", nil)
		return
	}
	u.mm = mmRegistered
	if m.PDUSessionStatus != nil {
		u.syncSessionsLocked(*m.PDUSessionStatus)
	}
	var failed uint16
	if m.PDUSessionReactivationResult != nil {
		failed = *m.PDUSessionReactivationResult
	}
	for _, c := range m.PDUSessionReactivationResultErrorCause {
		failed |= 1 << (c.PSI & 15)
		u.log.Info("user plane not re-established", "psi", c.PSI, "cause", c.Cause.String())
	}
	for id := uint8(1); id <= 15; id++ {
		if failed&(1<<id) != 0 && u.sessions[id] != nil {
			u.stats.ReactivationFailures++
		}
	}
	end := u.icsAt
	if end.IsZero() {
		end = time.Now()
	}
	u.finishLocked(end, nil)
	// What is still buffered belongs to sessions without user plane: the
	// sessions set up with the accept sent theirs on the way
	// (HandleSessionSetup).
	u.dropUplinkLocked(0)
}

// onServiceRejectLocked handles TS 24.501 §5.6.1.5. The procedure ends
// when the network releases the connection (HandleRelease), and with #9
// or #10 the UE then registers again.
func (u *UE) onServiceRejectLocked(m *nas.ServiceReject) {
	if !u.proc.service() {
		u.discardLocked("service reject outside a service request", nil)
		return
	}
	u.stats.ServiceRejects++
	u.svcReject = m.Cause
	rej := &ServiceRejectError{Cause: m.Cause}
	u.log.Info("service request rejected", "cause", m.Cause.String())
	switch m.Cause {
	case nas.CauseUEIdentityCannotBeDerived:
		// #9: delete the 5G-GUTI, TAI list and ngKSI, 5GMM-DEREGISTERED,
		// then an initial registration.
		u.forgetIdentityLocked()
		u.mm = mmDeregistered
		u.releaseAllSessionsLocked(rej)
		u.reregister = true
	case nas.CauseImplicitlyDeregistered:
		// #10: 5GMM-DEREGISTERED, then an initial registration (with the
		// 5G-GUTI the UE still holds).
		u.mm = mmDeregistered
		u.releaseAllSessionsLocked(rej)
		u.reregister = true
	case nas.CauseIllegalUE, nas.CauseIllegalME, nas.Cause5GSServicesNotAllowed:
		// #3, #6, #7: the USIM is invalid for 5GS services; no new
		// registration.
		u.forgetIdentityLocked()
		u.mm = mmDeregistered
		u.releaseAllSessionsLocked(rej)
	default:
		// Congestion, restricted area, ...: still registered, in CM-IDLE.
		u.mm = mmRegistered
		if m.PDUSessionStatus != nil {
			u.syncSessionsLocked(*m.PDUSessionStatus)
		}
	}
	u.dropUplinkLocked(0)
}

// forgetIdentityLocked deletes the 5G-GUTI, the TAI list and the NAS
// security context (ngKSI).
func (u *UE) forgetIdentityLocked() {
	u.setGUTILocked(nil)
	u.taiList = nil
	u.sec, u.kamf, u.ksi = nil, nil, nas.KSINoKey
}

// syncSessionsLocked releases locally the sessions the network's PDU
// session status says it does not hold (TS 24.501 §5.6.1.4.1,
// §5.5.1.3.4); a session still being established is left alone.
func (u *UE) syncSessionsLocked(network uint16) {
	for id := uint8(1); id <= 15; id++ {
		s := u.sessions[id]
		if s == nil || network&(1<<id) != 0 || s.state == smActivePending {
			continue
		}
		u.log.Info("PDU session the network no longer has released locally", "psi", id)
		u.stats.LocalReleases++
		if s.proc != smProcNone {
			u.endSMLocked(s, time.Now(), ErrSessionReleased)
		}
		u.removeSessionLocked(s)
	}
}

// onNetworkDeregistrationLocked answers a network-initiated deregistration
// (TS 24.501 §5.5.2.3.2): Deregistration Accept, the PDU sessions released
// locally, 5GMM-DEREGISTERED; with "re-registration required" the UE
// registers again once the connection is released. A 5GMM procedure in
// progress ends (a UE-originating deregistration completes with the
// release, §5.5.2.2.6).
func (u *UE) onNetworkDeregistrationLocked(m *nas.DeregistrationRequestUETerminated) {
	if m.AccessType == nas.AccessNon3GPP {
		// Not about this access: the registration over 3GPP stands.
		u.sendLocked(&nas.DeregistrationAcceptUETerminated{})
		return
	}
	if u.mm == mmDeregistered && u.proc == procNone {
		// T3522 retransmission: the accept again.
		u.stats.RepeatedResponses++
		u.sendLocked(&nas.DeregistrationAcceptUETerminated{})
		return
	}
	u.stats.NetworkDeregistrations++
	switch {
	case u.proc == procDeregister || u.proc == procSwitchOff:
		u.deregAck = true
	case u.proc == procRelease, u.proc == procNone:
	default:
		u.finishLocked(time.Now(), ErrNetworkDeregistered)
	}
	u.sendLocked(&nas.DeregistrationAcceptUETerminated{})
	reregister := m.ReRegistrationRequired
	switch m.Cause {
	case nas.CauseIllegalUE, nas.CauseIllegalME, nas.Cause5GSServicesNotAllowed:
		u.forgetIdentityLocked()
		reregister = false
	}
	u.log.Info("deregistered by the network", "cause", m.Cause.String(), "reregister", reregister)
	if f := u.cfg.OnNetworkDeregistration; f != nil {
		f(m.Cause, reregister)
	}
	u.mm = mmDeregistered
	u.releaseAllSessionsLocked(ErrNetworkDeregistered)
	u.dropUplinkLocked(0)
	u.reregister = reregister
}

// connectedLocked notes a new signalling connection: T3512 stops (it runs
// in CM-IDLE only) and the inactivity timer starts.
func (u *UE) connectedLocked() {
	u.connected = true
	if u.t3512Timer != nil {
		u.t3512Timer.Stop()
	}
	u.armInactivityLocked()
}

// idleLocked runs when the signalling connection is gone and no procedure
// waits for the release any more: a re-registration the network asked
// for, a service request for buffered uplink, or T3512.
func (u *UE) idleLocked() {
	if u.proc != procNone || u.connected {
		return
	}
	switch {
	case u.reregister && u.mm == mmDeregistered:
		u.reregister = false
		k := procRegister
		if u.guti != nil {
			k = procReregister // an initial registration with the 5G-GUTI
		}
		u.stats.Reregistrations++
		if err := u.startAsyncLocked(k, procArgs{}); err != nil {
			u.log.Warn("registration not started", "err", err)
			u.fail(k)
		}
	case u.mm == mmRegistered && len(u.ulQueue) > 0:
		if err := u.startAsyncLocked(procServiceRequest, procArgs{serviceType: nas.ServiceData}); err != nil {
			u.log.Warn("service request for buffered uplink not started", "err", err)
			u.fail(procServiceRequest)
			u.dropUplinkLocked(0)
			u.armPeriodicLocked()
		}
	case u.mm == mmRegistered:
		u.armPeriodicLocked()
	default:
		u.reregister = false
	}
}

// startAsyncLocked starts procedure k on the UE's own initiative: its first
// message goes now; its outcome goes to the Observer, and Config.Timeout
// bounds it.
func (u *UE) startAsyncLocked(k procKind, a procArgs) error {
	if u.proc != procNone {
		return ErrBusy
	}
	if err := u.startLocked(k, a); err != nil {
		return err
	}
	u.async = true
	u.asyncSeq++
	seq := u.asyncSeq
	u.asyncDone = make(chan struct{})
	u.asyncTimer = time.AfterFunc(u.cfg.Timeout, func() { u.onAsyncTimeout(seq) })
	return nil
}

// endAsyncLocked marks the end of a procedure the UE started itself.
func (u *UE) endAsyncLocked() {
	if !u.async {
		return
	}
	u.async = false
	if u.asyncTimer != nil {
		u.asyncTimer.Stop()
		u.asyncTimer = nil
	}
	close(u.asyncDone)
	u.asyncDone = nil
}

func (u *UE) onAsyncTimeout(seq uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.async || u.asyncSeq != seq || u.proc == procNone {
		return
	}
	k, state := u.proc, u.mm
	u.log.Info("procedure timed out", "proc", k.name(), "state", state.String())
	u.abortLocked()
	u.fail(k)
}

// waitAsyncLocked waits (unlocking meanwhile) until no procedure the UE
// started itself is running.
func (u *UE) waitAsyncLocked(ctx context.Context) error {
	for u.async {
		ch := u.asyncDone
		u.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			u.mu.Lock()
			return fmt.Errorf("waiting for the UE's own %s: %w", u.proc.name(), ctx.Err())
		}
		u.mu.Lock()
	}
	return nil
}

// Periodic registration (TS 24.501 §5.3.7): T3512 runs in 5GMM-IDLE.

func (u *UE) armPeriodicLocked() {
	if !u.cfg.PeriodicRegistration || u.t3512 <= 0 || u.mm != mmRegistered || u.connected {
		return
	}
	u.t3512Due = time.Now().Add(u.t3512)
	if u.t3512Timer == nil {
		u.t3512Timer = time.AfterFunc(u.t3512, u.onT3512)
	} else {
		u.t3512Timer.Reset(u.t3512)
	}
}

func (u *UE) onT3512() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mm != mmRegistered || u.connected || u.proc != procNone {
		return // connected, or a procedure from CM-IDLE decides what follows
	}
	if d := time.Until(u.t3512Due); d > 0 {
		u.t3512Timer.Reset(d) // a firing from before the timer was re-armed
		return
	}
	u.stats.PeriodicRegistrations++
	if err := u.startAsyncLocked(procPeriodic, procArgs{}); err != nil {
		u.log.Warn("periodic registration not started", "err", err)
		u.fail(procPeriodic)
		u.armPeriodicLocked()
	}
}

// The inactivity release: the gNB releases a connected UE without
// user-plane traffic for Config.InactivityTimeout.

func (u *UE) armInactivityLocked() {
	d := u.cfg.InactivityTimeout
	if d <= 0 || !u.connected {
		return
	}
	u.inactMark = u.activityLocked()
	u.inactDue = time.Now().Add(d)
	if u.inactTimer == nil {
		u.inactTimer = time.AfterFunc(d, u.onInactivity)
	} else {
		u.inactTimer.Reset(d)
	}
}

func (u *UE) onInactivity() {
	u.mu.Lock()
	defer u.mu.Unlock()
	d := u.cfg.InactivityTimeout
	if !u.connected {
		return // armed again with the next connection
	}
	if left := time.Until(u.inactDue); left > 0 {
		u.inactTimer.Reset(left)
		return
	}
	act := u.activityLocked()
	if u.proc != procNone || u.mm != mmRegistered || u.smBusyLocked() || act != u.inactMark {
		u.inactMark = act
		u.inactDue = time.Now().Add(d)
		u.inactTimer.Reset(d)
		return
	}
	u.stats.InactivityReleases++
	if err := u.startAsyncLocked(procRelease, procArgs{}); err != nil {
		u.log.Warn("inactivity release not started", "err", err)
		u.fail(procRelease)
	}
}

// activityLocked counts the user-plane packets of the UE's sessions.
func (u *UE) activityLocked() int64 {
	var n int64
	for _, s := range u.sessions {
		if s != nil && s.data != nil {
			n += s.data.uplink.Load() + s.data.downlink.Load()
		}
	}
	return n
}

func (u *UE) smBusyLocked() bool {
	for _, s := range u.sessions {
		if s != nil && s.proc != smProcNone {
			return true
		}
	}
	return false
}

// The uplink held while the user plane comes back.

type queuedPacket struct {
	psi uint8
	pkt []byte
}

func (u *UE) queueUplinkLocked(psi uint8, pkt []byte) error {
	if len(u.ulQueue) >= u.cfg.UplinkBuffer {
		u.stats.DroppedUplink++
		return ErrUplinkBufferFull
	}
	u.ulQueue = append(u.ulQueue, queuedPacket{psi: psi, pkt: bytes.Clone(pkt)})
	u.stats.QueuedUplink++
	return nil
}

// flushUplinkLocked sends s's buffered packets in order; it runs before
// s's user plane opens to SendData, so that nothing overtakes them.
func (u *UE) flushUplinkLocked(s *pduSession) {
	if len(u.ulQueue) == 0 || s.data == nil || s.data.link == nil {
		return
	}
	rest := u.ulQueue[:0]
	for _, q := range u.ulQueue {
		if q.psi != s.id {
			rest = append(rest, q)
			continue
		}
		if err := s.data.link.SendData(q.psi, q.pkt); err != nil {
			u.stats.DroppedUplink++
			continue
		}
		s.data.uplink.Add(1)
	}
	clear(u.ulQueue[len(rest):])
	u.ulQueue = rest
}

// dropUplinkLocked drops the buffered packets of session psi (0: all).
func (u *UE) dropUplinkLocked(psi uint8) {
	if len(u.ulQueue) == 0 {
		return
	}
	rest := u.ulQueue[:0]
	for _, q := range u.ulQueue {
		if psi != 0 && q.psi != psi {
			rest = append(rest, q)
			continue
		}
		u.stats.DroppedUplink++
	}
	clear(u.ulQueue[len(rest):])
	u.ulQueue = rest
}
