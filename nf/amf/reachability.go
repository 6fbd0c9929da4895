package amf

import (
	"github.com/free5gc/openapi/models"
)

// UE reachability in CM-IDLE (TS 24.501 §5.3.7, TS 23.502 §4.2.2.2.1): a
// registered UE that goes idle must come back before its periodic
// registration (T3512) is due. The AMF runs the mobile reachable timer,
// T3512 plus a margin; when it expires the UE is no longer paged, and the
// implicit deregistration timer starts; when that expires too, the AMF
// deregisters the UE itself, releasing its PDU sessions at the SMF and its
// registration at the UDM. Any NAS signalling connection stops both.

// startMobileReachable starts the mobile reachable timer when a registered
// UE enters CM-IDLE.
func (u *ue) startMobileReachable() {
	u.setReachable(true)
	u.reachTimer.Start(&u.exec, u.amf.cfg.timers.MobileReachable, u.reachabilityExpired)
}

// stopReachability stops the timers: the UE has a NAS signalling
// connection again (TS 24.501 §5.3.7).
func (u *ue) stopReachability() {
	u.reachTimer.Stop()
	if !u.reachable {
		u.setReachable(true)
	}
}

// mobileReachableExpired: TS 24.501 §5.3.7: the network considers the UE
// unreachable (it is not paged) and starts the implicit deregistration
// timer.
func (u *ue) mobileReachableExpired() {
	if u.gone() || u.st.cm != cmIdle || u.st.rm != rmRegistered {
		return
	}
	u.log.Info("mobile reachable timer expired: UE not reachable")
	u.setReachable(false)
	if u.st.proc == procPaging {
		u.endProcedureData(procPaging)
		u.pagingFailed()
	}
	u.failPending(models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING)
	u.reachTimer.Start(&u.exec, u.amf.cfg.timers.ImplicitDeregistration, u.reachabilityExpired)
}

// reachabilityExpired is the expiry of reachTimer, one step of the UE: the
// mobile reachable timer while the UE is reachable, the implicit
// deregistration timer once it is not (the record keeps only the deadline;
// reachable says which of the two runs).
func (u *ue) reachabilityExpired() {
	u.beginStep()
	if u.reachable {
		u.mobileReachableExpired()
	} else {
		u.implicitDeregistration()
	}
	u.endStep()
}

// implicitDeregistration: TS 24.501 §5.3.7: the implicit deregistration
// timer expired; the AMF deregisters the UE locally (TS 23.502
// §4.2.2.3.3 without the NAS exchange): SM contexts, the UDM registration
// and the UE context go. Counted and logged: a timer never deletes a UE
// silently.
func (u *ue) implicitDeregistration() {
	if u.gone() || u.st.cm != cmIdle {
		return
	}
	u.log.Info("implicit deregistration")
	u.amf.stats.implicitDeregs.Add(1)
	u.deregisterAtUDM()
	u.releaseAndRemove(causeNASDeregister)
}
