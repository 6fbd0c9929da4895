package amf

import (
	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/ngap"
)

// This file holds the UE-associated N2 context management of TS 38.413
// §8.3 (Initial Context Setup, UE Context Release) and the removal of UE
// contexts. Everything runs on the UE's executor.

// onInitialContextSetupResponse records that the gNB holds the UE's AS
// context (TS 38.413 §8.3.1.2).
func (u *ue) onInitialContextSetupResponse(r *ranUE) {
	r.ctxSetup = true
}

// onInitialContextSetupFailure: the gNB could not set the UE up (TS 38.413
// §8.3.1.3); the Registration Accept it carried never reached the UE, so
// the registration is abandoned.
func (u *ue) onInitialContextSetupFailure(r *ranUE, cause ngap.Cause) {
	u.log.Info("Initial Context Setup failed", "cause", cause.String(), "supi", u.supi)
	if r != u.ran {
		return
	}
	if u.state == gmmRegistered {
		u.stopAllTimers()
		u.reg = registrationProc{}
		u.releaseConnection(causeNASUnspecified)
		return
	}
	u.releaseAndRemove(causeNASUnspecified)
}

// onContextReleaseRequest answers a gNB-initiated release (TS 38.413
// §8.3.2) with UE Context Release Command carrying the gNB's cause. A UE
// that was not yet registered loses its context (TS 24.501 §5.5.1.2.8 a):
// lower layer failure before Registration Complete).
func (u *ue) onContextReleaseRequest(r *ranUE, cause ngap.Cause) {
	if r != u.ran {
		if err := r.sendContextRelease(cause); err != nil {
			u.log.Debug("UE Context Release Command not sent", "err", err)
		}
		return
	}
	if u.state == gmmRegistered && u.reg.state == regIdle {
		u.releaseConnection(cause)
		return
	}
	u.releaseAndRemove(cause)
}

// setConnection makes r (nil: none) the UE's current N2 connection.
func (u *ue) setConnection(r *ranUE) {
	u.ran = r
	u.connected.Store(r != nil && !u.removed)
}

// onContextReleaseComplete ends a UE-associated logical NG-connection
// (TS 38.413 §8.3.3.2): its IDs are freed.
func (u *ue) onContextReleaseComplete(r *ranUE, sessions []uint8) {
	u.amf.stats.releases.Add(1)
	r.relSessions = sessions
	u.forgetConnection(r)
}

// connectionLost handles the loss of a connection without a release
// exchange (association down, RAN UE NGAP ID reused).
func (u *ue) connectionLost(r *ranUE) {
	u.forgetConnection(r)
}

func (u *ue) forgetConnection(r *ranUE) {
	a := u.amf
	a.ranUEs.delete(r)
	r.gnb.removeUE(r)
	if u.ran != r {
		return
	}
	u.setConnection(nil)
	if u.removed {
		return
	}
	// 5GMM-CONNECTED -> IDLE: procedures needing the connection stop.
	u.stopAllTimers()
	if u.state != gmmRegistered || u.reg.state != regIdle {
		// TS 24.501 §5.5.1.2.8 a): lower layer failure before the
		// registration completed; the context is not kept.
		u.removeContext()
		return
	}
	// TS 23.502 §4.2.6 step 5: the UE is CM-IDLE; the user plane of its
	// PDU sessions is deactivated.
	u.deactivateSessions(r.relSessions)
}

// releaseConnection sends UE Context Release Command for the current
// connection and keeps the UE context (CM-IDLE once complete).
func (u *ue) releaseConnection(cause ngap.Cause) {
	r := u.ran
	if r == nil || r.releasing {
		return // TS 38.413 §8.3.3: one command per connection
	}
	if err := r.sendContextRelease(cause); err != nil {
		u.log.Debug("UE Context Release Command not sent", "err", err)
		u.forgetConnection(r)
	}
}

// releaseAndRemove releases the current connection (if any) and deletes the
// UE context: timers, 5G-GUTIs and the SUPI entry. The connection's NGAP IDs
// stay until UE Context Release Complete.
func (u *ue) releaseAndRemove(cause ngap.Cause) {
	u.removeContext()
	if r := u.ran; r != nil && !r.releasing {
		if err := r.sendContextRelease(cause); err != nil {
			u.log.Debug("UE Context Release Command not sent", "err", err)
			u.forgetConnection(r)
		}
	}
}

// removeContext deletes the UE context from every table.
func (u *ue) removeContext() {
	if u.removed {
		return
	}
	a := u.amf
	u.abortProcedures()
	// TS 23.502 §4.2.2.3.2 step 2 (and §4.2.2.2.2 for a superseded
	// context): the SM contexts go before the UE context.
	u.releaseSessions(models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON)
	u.setState(gmmDeregistered)
	u.removed = true
	u.connected.Store(false)
	if u.hasGUTI {
		a.gutis.release(u.guti.TMSI, u)
		u.hasGUTI = false
	}
	if u.hasOldGUTI {
		a.gutis.release(u.oldGUTI.TMSI, u)
		u.hasOldGUTI = false
	}
	if u.supi != "" {
		a.supis.CompareAndDelete(u.supi, u)
	}
	u.sec = nil
	u.kamf = nil
	a.stats.contexts.Add(-1)
}

// onTimerAbort runs after the last expiry of a NAS timer.
func (u *ue) onTimerAbort(id timerID) {
	switch id {
	case timerT3550:
		// TS 24.501 §5.5.1.2.8 d): abort the procedure; the new 5G-GUTI
		// stays valid (and the old one), the UE counts as registered.
		// The UE is unreachable, so tern also releases the connection.
		u.reg = registrationProc{}
		u.setState(gmmRegistered)
		u.releaseConnection(causeNASNormalRelease)
	default:
		// T3560 (TS 24.501 §5.4.1.3.7 b), §5.4.2.7 b)) and T3570
		// (§5.4.3.7 b)): abort the procedure and release the N1 connection.
		u.releaseAndRemove(causeNASUnspecified)
	}
}
