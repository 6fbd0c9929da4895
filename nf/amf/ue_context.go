package amf

import (
	"slices"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/ngap"
)

// This file holds the UE's N2 connections (its RAN legs) and the
// UE-associated N2 context management of TS 38.413 §8.3 (Initial Context
// Setup, UE Context Release), and the removal of UE contexts. Everything
// runs on the UE's executor.

// connect makes r the UE's serving N2 connection (TS 23.501 §5.3.3.2.2:
// CM-IDLE to CM-CONNECTED, or a new connection replacing the old one). The
// old connection, if any, is released (TS 23.502 §4.2.2.2.2 step 1, TS
// 38.413 §8.3.3).
func (u *ue) connect(r *ranUE) bool {
	if !u.fire(evConnect) {
		return false
	}
	old := u.ran
	u.ran = r
	u.stopReachability()
	if old != nil && old != r {
		// After a gNB-initiated release (TS 23.502 §4.2.6) the command is
		// already out and its Complete may still be in flight (messages of
		// different SCTP streams are not ordered): sendContextRelease then
		// sends nothing.
		u.released = append(u.released, old)
		if err := old.sendContextRelease(cause5GCGeneratedReason); err != nil {
			u.log.Debug("release of old connection not sent", "err", err)
			u.forgetConnection(old)
		}
	}
	return true
}

// onInitialContextSetupResponse: the gNB holds the UE's AS context (TS
// 38.413 §8.3.1.2). When the request set up PDU sessions (a service
// request), their outcomes go to their SMFs.
func (u *ue) onInitialContextSetupResponse(r *ranUE, m *ngap.InitialContextSetupResponse) {
	if r != u.ran || u.gone() {
		return
	}
	for _, it := range m.PDUSessionResourceSetupItems {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP, upActive)
	}
	for _, it := range m.PDUSessionResourceFailedItems {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_FAIL, upDeactivated)
	}
	if u.st.proc == procServiceRequest {
		u.serviceRequestDone()
	}
}

// onInitialContextSetupFailure: the gNB could not set the UE up (TS 38.413
// §8.3.1.3); the NAS message it carried never reached the UE.
func (u *ue) onInitialContextSetupFailure(r *ranUE, m *ngap.InitialContextSetupFailure) {
	u.log.Info("Initial Context Setup failed", "cause", m.Cause.String())
	if r != u.ran || u.gone() {
		return
	}
	switch u.st.proc {
	case procRegistration:
		if u.st.rm == rmRegistered {
			// A re-registration's accept was lost: the UE stays registered
			// with its old state and goes idle.
			u.endRegistration()
			u.releaseConnection(causeNASUnspecified)
			return
		}
		u.releaseAndRemove(causeNASUnspecified)
	case procServiceRequest:
		// TS 23.502 §4.2.3.2 step 11: the user plane could not be set up;
		// the UE stays registered and goes back to CM-IDLE.
		u.endServiceRequest()
		u.releaseConnection(causeNASUnspecified)
	default:
		u.releaseConnection(causeNASUnspecified)
	}
}

// onContextReleaseRequest answers a gNB-initiated release (TS 38.413
// §8.3.2) with UE Context Release Command carrying the gNB's cause. A UE
// that was not yet registered loses its context (TS 24.501 §5.5.1.2.8 a):
// lower layer failure before Registration Complete); a registered one goes
// to CM-IDLE when the release completes.
func (u *ue) onContextReleaseRequest(r *ranUE, cause ngap.Cause) {
	if r != u.ran || u.gone() {
		if err := r.sendContextRelease(cause); err != nil {
			u.log.Debug("UE Context Release Command not sent", "err", err)
		}
		return
	}
	if u.st.rm != rmRegistered {
		u.releaseAndRemove(cause)
		return
	}
	// TS 23.502 §4.9.1.3: an AN release during a handover ends it; the UE
	// goes idle from the source.
	u.cancelHandover(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverCancelled})
	u.releaseConnection(cause)
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

// forgetConnection frees r's IDs and, if r was the UE's serving or target
// connection, ends what depended on it.
func (u *ue) forgetConnection(r *ranUE) {
	a := u.amf
	a.ranUEs.delete(r)
	r.gnb.removeUE(r)
	if i := slices.Index(u.released, r); i >= 0 {
		u.released = slices.Delete(u.released, i, i+1)
	}
	switch r {
	case u.target:
		u.targetLost(r)
	case u.ran:
		u.servingLost(r)
	}
}

// servingLost: the UE's serving connection is gone. TS 23.502 §4.2.6: the
// UE is CM-IDLE and the user plane of its PDU sessions is deactivated; a
// UE that had not completed its registration loses its context (TS 24.501
// §5.5.1.2.8 a)).
func (u *ue) servingLost(r *ranUE) {
	u.ran = nil
	proc := u.st.proc
	u.endProcedureData(proc)
	u.fire(evDisconnect)
	if u.gone() {
		return
	}
	if proc == procHandoverPreparation || proc == procHandoverExecution {
		u.handoverAbandoned()
	}
	if proc == procNetworkDeregistration {
		// TS 24.501 §5.5.2.3.5 a): lower layer failure before the accept:
		// the deregistration completes locally.
		u.networkDeregistrationDone()
		return
	}
	if u.st.rm != rmRegistered {
		u.removeContext()
		return
	}
	u.deactivateSessions(r.relSessions)
	u.startMobileReachable()
	if len(u.page.pending) > 0 && u.st.proc == procNone {
		// Transfers that waited for a service request that did not
		// complete: page again.
		u.startPaging()
	}
}

// releaseConnection sends UE Context Release Command for the serving
// connection and keeps the UE context (CM-IDLE once complete).
func (u *ue) releaseConnection(cause ngap.Cause) {
	r := u.ran
	if r == nil || r.state == legReleasing {
		return // TS 38.413 §8.3.3: one command per connection
	}
	if err := r.sendContextRelease(cause); err != nil {
		u.log.Debug("UE Context Release Command not sent", "err", err)
		u.forgetConnection(r)
	}
}

// releaseAndRemove deletes the UE context (timers, 5G-GUTIs, SUPI entry,
// SM contexts) and releases its connection; the connection's NGAP IDs stay
// until UE Context Release Complete.
func (u *ue) releaseAndRemove(cause ngap.Cause) {
	u.removeContext()
	if r := u.ran; r != nil && r.state != legReleasing {
		if err := r.sendContextRelease(cause); err != nil {
			u.log.Debug("UE Context Release Command not sent", "err", err)
			u.forgetConnection(r)
		}
	}
	if t := u.target; t != nil {
		u.releaseTarget(t, cause5GCGeneratedReason)
	}
}

// abortProcedure ends the running procedure after a failure that leaves
// nothing to continue with: a registered UE keeps its registration and is
// released to CM-IDLE, any other context is deleted.
func (u *ue) abortProcedure(cause ngap.Cause) {
	switch u.st.proc {
	case procRegistration:
		u.endRegistration()
	case procServiceRequest:
		u.endServiceRequest()
	}
	if u.st.rm == rmRegistered {
		u.releaseConnection(cause)
		return
	}
	u.releaseAndRemove(cause)
}

// removeContext deletes the UE context from every table. A registration
// still held ends first (its SM contexts go before the UE context: TS
// 23.502 §4.2.2.3.2 step 2, and §4.2.2.2.2 for a superseded context).
func (u *ue) removeContext() {
	if u.gone() {
		return
	}
	a := u.amf
	u.endProcedureData(u.st.proc)
	u.failPending(models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING)
	u.releaseSessions(models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON)
	u.fire(evDeregistered)
	u.fire(evRemove)
	u.stopAllTimers()
	if u.guti != nil {
		a.gutis.release(u.guti.TMSI, u)
		u.guti = nil
	}
	if u.oldGUTI != nil {
		a.gutis.release(u.oldGUTI.TMSI, u)
		u.oldGUTI = nil
	}
	if u.supi != "" {
		a.supis.CompareAndDelete(u.supi, u)
	}
	u.sec = nil
	u.kamf = nil
	a.stats.contexts.Add(-1)
}

// endProcedureData clears the data of procedure p and its timers (the
// state machine is moved by the caller).
func (u *ue) endProcedureData(p procedure) {
	switch p {
	case procRegistration:
		u.stopNASTimer()
		u.reg = registrationProc{}
		u.resetCommon()
	case procServiceRequest:
		u.stopNASTimer()
		u.svc = serviceRequestProc{}
		u.resetCommon()
	case procPaging, procNetworkDeregistration:
		u.stopNASTimer()
	case procHandoverPreparation, procHandoverExecution:
		u.handoverTime.Stop()
	}
}
