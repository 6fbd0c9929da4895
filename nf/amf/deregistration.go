package amf

import (
	"context"
	"net/http"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

// UE-originating deregistration has no waiting state on the network side:
// the AMF answers at once and the UE context ends with the N2 release, so
// unlike the other procedures it needs no state machine of its own.

// onDeregistrationRequest runs TS 24.501 §5.5.2.2.2 (and TS 23.502
// §4.2.2.3.2): Nudm_UECM_Deregistration, Deregistration Accept unless the UE
// switched off, then release of the N2 UE context with cause "deregister".
func (u *ue) onDeregistrationRequest(m *nas.DeregistrationRequestUEOriginating, integrity bool) {
	if !integrity && u.st.rm == rmRegistered {
		// TS 24.501 §4.4.4.3 lets an unprotected request through only while
		// no secure exchange exists; for a registered UE it must verify,
		// otherwise anyone could deregister it.
		u.log.Info("unverified Deregistration Request for a registered UE, discarded")
		u.amf.stats.nasDiscarded.Add(1)
		return
	}
	a := u.amf
	// UE-initiated deregistration runs within this one event, so it is
	// timed here rather than by the state machine (observe.go).
	start := time.Now()
	u.logStarted(ProcDeregistration)
	wasRegistered := u.st.rm == rmRegistered
	u.endProcedureData(u.st.proc)
	// TS 23.502 §4.2.2.3.2 step 2: Nsmf_PDUSession_ReleaseSMContext for
	// every PDU session of the UE.
	u.releaseSessions("")
	u.fire(evDeregistered)
	if wasRegistered {
		u.deregisterAtUDM()
	}
	if !m.SwitchOff {
		u.sendNASMessage(&nas.DeregistrationAcceptUEOriginating{})
	}
	a.stats.deregs.Add(1)
	u.log.Debug("UE deregistered", "switch_off", m.SwitchOff)
	u.procedureEnded(ProcDeregistration, procedures.Success, start)
	u.releaseAndRemove(causeNASDeregister)
}

// deregisterAtUDM ends the AMF's registration for the UE at the UDM
// (Nudm_UECM_Deregistration, TS 23.502 §4.2.2.3.2 step 4). The UE goes
// regardless of the outcome (a failure there does not block
// deregistration).
func (u *ue) deregisterAtUDM() {
	if u.supi == "" {
		return
	}
	ctx, cancel := u.amf.callCtx()
	err := u.amf.deps.UECM.UpdateAMF3GPPAccess(ctx, u.supi, &models.Udm_UECM_Amf3GppAccessRegistrationModification{
		Guami: guamiModel(u.amf.cfg.guamis[0]), PurgeFlag: true})
	cancel()
	if err != nil && sbi.CauseOf(err) != sbi.CauseContextNotFound {
		u.log.Warn("Nudm_UECM_Deregistration failed", "err", err)
	}
}

// Network-initiated deregistration (TS 24.501 §5.5.2.3, TS 23.502
// §4.2.2.3.3).

// Deregister deregisters the UE of supi on the network's initiative (an
// operator command, or the subscription withdrawn at the UDM). A UE in
// CM-CONNECTED gets a Deregistration Request (T3522 guards the answer);
// with reRegister it is told to register again (TS 24.501 §5.5.2.3.1). A
// UE in CM-IDLE is deregistered locally (TS 23.502 §4.2.2.3.3: the AMF
// need not page it), and finds out at its next contact (Service Reject
// #9, Registration with identification). It returns once the procedure has
// started.
func (a *AMF) Deregister(ctx context.Context, supi string, cause nas.Cause5GMM, reRegister bool) error {
	u := a.supis.Get(supi)
	if u == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no UE context for %s", supi)
	}
	u.post(func() { u.startNetworkDeregistration(cause, reRegister) })
	return nil
}

func (u *ue) startNetworkDeregistration(cause nas.Cause5GMM, reRegister bool) {
	if u.st.proc == procRegistration {
		if u.reg.step == regAccepting {
			// The accept is out (the UE may have completed already): the
			// new registration stands (TS 24.501 §5.5.1.2.8 d)) and is
			// the one deregistered.
			u.registrationAccepted()
		} else if u.st.rm != rmRegistered {
			u.log.Info("network deregistration during a first registration: local")
			u.amf.stats.networkDeregs.Add(1)
			u.releaseAndRemove(causeNASDeregister)
			return
		}
	}
	if u.gone() || u.st.rm != rmRegistered {
		u.log.Info("network deregistration of a UE that is not registered ignored")
		return
	}
	if u.st.cm == cmIdle {
		u.log.Info("network deregistration of an idle UE: local")
		u.networkDeregistrationDone()
		return
	}
	// A procedure in progress ends first (TS 24.501 §5.5.2.3.6 e.g.:
	// deregistration takes precedence).
	switch u.st.proc {
	case procRegistration:
		u.endRegistration()
	case procServiceRequest:
		u.endServiceRequest()
	case procHandoverPreparation, procHandoverExecution:
		u.cancelHandover(causeNASDeregister)
	}
	if !u.fire(evDeregistrationStart) {
		u.networkDeregistrationDone()
		return
	}
	msg := &nas.DeregistrationRequestUETerminated{ReRegistrationRequired: reRegister, AccessType: nas.Access3GPP, Cause: cause}
	plain, hdr, err := u.sendNASMessage(msg)
	if plain == nil {
		u.log.Warn("Deregistration Request not built", "err", err)
		u.networkDeregistrationDone()
		return
	}
	attrs := []any{"reregister", reRegister}
	if cause != 0 {
		attrs = append(attrs, "cause", cause.String())
	}
	u.log.Info("network deregistration: Deregistration Request sent", attrs...)
	// TS 23.502 §4.2.2.3.3 step 2: the SM contexts are released while the
	// UE is told.
	u.releaseSessions(models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON)
	u.startNASTimer(timerT3522, plain, hdr)
}

// onNetworkDeregistrationAccept: TS 24.501 §5.5.2.3.3: T3522 stops and the
// UE is deregistered; the N2 connection is released (TS 23.502
// §4.2.2.3.3 step 6).
func (u *ue) onNetworkDeregistrationAccept() {
	if u.st.proc != procNetworkDeregistration {
		u.log.Debug("Deregistration Accept outside deregistration, ignored")
		return
	}
	u.networkDeregistrationDone()
}

// networkDeregistrationTimedOut: TS 24.501 §5.5.2.3.5 b): on the fifth
// expiry of T3522 the procedure is aborted and the UE considered
// deregistered.
func (u *ue) networkDeregistrationTimedOut() {
	u.log.Info("T3522 expired the last time: UE deregistered locally")
	u.networkDeregistrationDone()
}

// networkDeregistrationDone ends the registration on the network side:
// the UDM registration goes and the UE context with its connection.
func (u *ue) networkDeregistrationDone() {
	if u.gone() {
		return
	}
	u.amf.stats.networkDeregs.Add(1)
	u.deregisterAtUDM()
	u.releaseAndRemove(causeNASDeregister)
}
