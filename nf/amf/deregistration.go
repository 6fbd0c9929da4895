package amf

import (
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
	wasRegistered := u.st.rm == rmRegistered
	u.endProcedureData(u.st.proc)
	// TS 23.502 §4.2.2.3.2 step 2: Nsmf_PDUSession_ReleaseSMContext for
	// every PDU session of the UE.
	u.releaseSessions("")
	u.fire(evDeregistered)
	if wasRegistered && u.supi != "" {
		ctx, cancel := a.callCtx()
		err := a.deps.UECM.DeregisterAMF3GPPAccess(ctx, u.supi)
		cancel()
		if err != nil &&
			sbi.CauseOf(err) != sbi.CauseContextNotFound {
			// The UE goes regardless (TS 23.502 §4.2.2.3.2 step 4 failure
			// does not block deregistration).
			u.log.Warn("Nudm_UECM_Deregistration failed", "err", err)
		}
	}
	if !m.SwitchOff {
		u.sendNASMessage(&nas.DeregistrationAcceptUEOriginating{})
	}
	a.stats.deregs.Add(1)
	u.log.Debug("UE deregistered", "switch_off", m.SwitchOff)
	u.releaseAndRemove(causeNASDeregister)
}
