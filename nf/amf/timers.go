package amf

import (
	"time"

	"github.com/tern5g/tern/nas"
)

// timerID names the AMF-side 5GMM timers of TS 24.501 §10.2 Table 10.2.2.
type timerID uint8

const (
	timerT3550 timerID = iota // REGISTRATION ACCEPT sent with a new 5G-GUTI
	timerT3560                // AUTHENTICATION REQUEST / SECURITY MODE COMMAND sent
	timerT3570                // IDENTITY REQUEST sent
	numTimers
)

func (t timerID) String() string {
	switch t {
	case timerT3550:
		return "T3550"
	case timerT3560:
		return "T3560"
	case timerT3570:
		return "T3570"
	}
	return "T?"
}

// nasTimer is one retransmission timer guarding a downlink NAS message. It
// keeps the plain message so that each retransmission is protected afresh
// with the next downlink NAS COUNT (TS 24.501 §4.4.3.1: every sent message
// takes a new count, so the UE's replay check accepts the resend).
//
// All fields are owned by the UE's executor. Expiry is delivered through the
// executor too, and gen discards expiries of a timer that was restarted or
// stopped in the meantime.
type nasTimer struct {
	t     *time.Timer
	gen   uint32
	sends int    // how many times the message was sent so far
	plain []byte // the plain 5GMM message to resend
	hdr   nas.SecurityHeaderType
}

func (a *AMF) timerDuration(id timerID) time.Duration {
	switch id {
	case timerT3550:
		return a.cfg.timers.T3550
	case timerT3560:
		return a.cfg.timers.T3560
	default:
		return a.cfg.timers.T3570
	}
}

// startTimer arms timer id after the first send of plain (already sent with
// header hdr). Runs on u's executor.
func (u *ue) startTimer(id timerID, plain []byte, hdr nas.SecurityHeaderType) {
	t := &u.timers[id]
	if t.t != nil {
		t.t.Stop()
	}
	t.gen++
	t.sends = 1
	t.plain = plain
	t.hdr = hdr
	u.armTimer(id)
}

func (u *ue) armTimer(id timerID) {
	t := &u.timers[id]
	gen := t.gen
	t.t = time.AfterFunc(u.amf.timerDuration(id), func() {
		u.post(func() { u.timerExpired(id, gen) })
	})
}

// stopTimer stops timer id; a pending expiry is ignored by its generation.
func (u *ue) stopTimer(id timerID) {
	t := &u.timers[id]
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
	t.gen++
	t.plain = nil
	t.sends = 0
}

func (u *ue) stopAllTimers() {
	for id := timerID(0); id < numTimers; id++ {
		u.stopTimer(id)
	}
}

// timerExpired implements the common retransmission rule of TS 24.501
// §5.4.1.3.7 c) (T3560), §5.4.2.7 b) (T3560), §5.4.3.6 b) (T3570) and
// §5.5.1.2.8 d) (T3550): resend on each of the first four expiries, abort the
// procedure on the fifth.
func (u *ue) timerExpired(id timerID, gen uint32) {
	t := &u.timers[id]
	if t.gen != gen || t.t == nil || u.removed {
		return
	}
	max := u.amf.cfg.timers.MaxRetransmissions
	if t.sends <= max {
		t.sends++
		u.amf.stats.retransmissions.Add(1)
		u.log.Debug("nas timer expired, retransmitting", "timer", id.String(), "send", t.sends)
		if err := u.sendNAS(t.plain, t.hdr); err != nil {
			u.log.Warn("retransmission failed", "timer", id.String(), "err", err)
		}
		u.armTimer(id)
		return
	}
	t.t = nil
	t.plain = nil
	u.log.Info("nas timer expired for the last time, aborting procedure", "timer", id.String(), "sends", t.sends)
	u.amf.stats.timeouts.Add(1)
	u.onTimerAbort(id)
}
