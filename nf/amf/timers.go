package amf

import (
	"time"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
)

// timerID names the AMF-side 5GMM timers of TS 24.501 §10.2 Table 10.2.2
// that guard a message the AMF waits to have answered.
type timerID uint8

const (
	timerNone  timerID = iota
	timerT3550         // REGISTRATION ACCEPT sent with a new 5G-GUTI
	timerT3560         // AUTHENTICATION REQUEST / SECURITY MODE COMMAND sent
	timerT3570         // IDENTITY REQUEST sent
	timerT3513         // Paging sent (TS 24.501 §5.6.2.2.1)
	timerT3522         // network-initiated DEREGISTRATION REQUEST sent
)

func (t timerID) String() string {
	return [...]string{"none", "T3550", "T3560", "T3570", "T3513", "T3522"}[t]
}

func (a *AMF) timerDuration(id timerID) time.Duration {
	t := &a.cfg.timers
	switch id {
	case timerT3550:
		return t.T3550
	case timerT3560:
		return t.T3560
	case timerT3570:
		return t.T3570
	case timerT3513:
		return t.T3513
	default:
		return t.T3522
	}
}

// startNASTimer arms timer id after the first send of plain (already sent
// with header hdr): each retransmission protects the plain message afresh
// with the next downlink NAS COUNT (TS 24.501 §4.4.3.1: every sent message
// takes a new count, so the UE's replay check accepts the resend).
func (u *ue) startNASTimer(id timerID, plain []byte, hdr nas.SecurityHeaderType) {
	u.startRetransmission(id, u.resendNAS(id, plain, hdr))
	u.nasTimerMsg, u.nasTimerHdr = plain, hdr
}

// resendNAS is the retransmission of plain under timer id.
func (u *ue) resendNAS(id timerID, plain []byte, hdr nas.SecurityHeaderType) func() {
	return func() {
		if err := u.sendNAS(plain, hdr); err != nil {
			u.log.Warn("retransmission failed", "timer", id.String(), "err", err)
		}
	}
}

// startRetransmission implements the common rule of TS 24.501 §5.4.1.3.7
// c) (T3560), §5.4.2.7 b) (T3560), §5.4.3.6 b) (T3570), §5.5.1.2.8 d)
// (T3550), §5.5.2.3.5 (T3522) and §5.6.2.2.1 (T3513, paging): resend on
// each of the first expiries, abort the procedure on the last.
func (u *ue) startRetransmission(id timerID, resend func()) {
	u.armRetransmission(id, resend, time.Time{}, 0)
}

// armRetransmission starts the rule of timer id, or, with a deadline, goes
// on with it from sends messages sent (a timer restored from a record).
// Each expiry is a step of the UE (beginStep, endStep).
func (u *ue) armRetransmission(id timerID, resend func(), deadline time.Time, sends int) {
	u.dropHeldNASTimer()
	u.nasTimerID = id
	u.nasTimerMsg, u.nasTimerHdr = nil, 0
	max := u.amf.cfg.timers.MaxRetransmissions
	if id == timerT3513 {
		max = u.amf.cfg.timers.PagingRetransmissions
	}
	onResend := func(n int) {
		u.beginStep()
		u.amf.stats.retransmissions.Add(1)
		u.log.Debug("timer expired, retransmitting", "timer", id.String(), "send", n+1)
		resend()
		u.endStep()
	}
	onAbort := func() {
		u.beginStep()
		u.nasTimerID = timerNone
		u.nasTimerMsg, u.nasTimerHdr = nil, 0
		u.log.Info("timer expired for the last time, aborting procedure", "timer", id.String())
		u.amf.stats.timeouts.Add(1)
		u.outcome = procedures.Timeout
		u.onTimerAbort(id)
		u.outcome = "" // when the abort fired no event
		u.endStep()
	}
	d := u.amf.timerDuration(id)
	if deadline.IsZero() {
		u.nasTimer.Start(&u.exec, d, max, onResend, onAbort)
		return
	}
	u.nasTimer.ResumeAt(&u.exec, deadline, sends, d, max, onResend, onAbort)
}

// stopNASTimer stops the NAS retransmission timer, whichever runs.
func (u *ue) stopNASTimer() {
	u.dropHeldNASTimer()
	u.nasTimer.Stop()
	u.nasTimerID = timerNone
	u.nasTimerMsg, u.nasTimerHdr = nil, 0
}

// stopAllTimers stops every timer of the UE (context deleted, AMF closing).
func (u *ue) stopAllTimers() {
	u.stopNASTimer()
	u.reachTimer.Stop()
	u.handoverTime.Stop()
	u.heldTimers = nil
}

// onTimerAbort runs after the last expiry of a retransmission timer.
func (u *ue) onTimerAbort(id timerID) {
	switch id {
	case timerT3550:
		// TS 24.501 §5.5.1.2.8 d): abort the procedure; the new 5G-GUTI
		// stays valid (and the old one), the UE counts as registered.
		// The UE is unreachable, so tern also releases the connection.
		u.registrationAccepted()
		u.releaseConnection(causeNASNormalRelease)
	case timerT3513:
		u.pagingFailed()
	case timerT3522:
		u.networkDeregistrationTimedOut()
	default:
		// T3560 (TS 24.501 §5.4.1.3.7 b), §5.4.2.7 b)) and T3570
		// (§5.4.3.7 b)): abort the procedure and release the N1 connection.
		u.abortProcedure(causeNASUnspecified)
	}
}
