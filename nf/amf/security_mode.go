package amf

import (
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/security/kdf"
)

// securityModeProc is the data of the NAS security mode control procedure
// on the network side (TS 24.501 §5.4.2, TS 33.501 §6.7.2); ue.common says
// whether it runs.
type securityModeProc struct {
	// pending is the new 5G NAS security context the command establishes;
	// it becomes the current one when Security Mode Complete verifies.
	pending *nas.SecurityContext
}

// selectAlgorithms picks the first configured algorithms the UE supports
// (TS 33.501 §6.7.2). ok is false when there is no common integrity or
// ciphering algorithm.
func (a *AMF) selectAlgorithms(cap nas.UESecurityCapability) (enc, integ uint8, ok bool) {
	foundI, foundE := false, false
	for _, id := range a.cfg.intPrio {
		if cap.SupportsIA(id) {
			integ, foundI = id, true
			break
		}
	}
	for _, id := range a.cfg.encPrio {
		if cap.SupportsEA(id) {
			enc, foundE = id, true
			break
		}
	}
	return enc, integ, foundI && foundE
}

// startSecurityMode derives the NAS keys (TS 33.501 §A.8) and sends Security
// Mode Command integrity protected with the new context (TS 24.501
// §5.4.2.2).
func (u *ue) startSecurityMode() {
	if !u.hasSecCap {
		// TS 24.501 §8.2.6.5: mandatory in an initial registration.
		u.rejectCommon(nas.CauseConditionalIEError)
		return
	}
	enc, integ, ok := u.amf.selectAlgorithms(u.ueSecCap)
	if !ok {
		u.rejectCommon(nas.CauseUESecurityCapabilitiesMismatch)
		return
	}
	kEnc, kInt := kdf.NASKeys(u.kamf, enc, integ)
	u.smc.pending = nas.NewSecurityContext(kEnc, kInt, enc, integ, u.ngKSI)
	cmd := &nas.SecurityModeCommand{
		CipheringAlg:                 enc,
		IntegrityAlg:                 integ,
		NgKSI:                        nas.NgKSI{KSI: u.ngKSI},
		ReplayedUESecurityCapability: u.ueSecCap,
		IMEISVRequest:                true,
		// TS 24.501 §5.4.2.2: ask for the complete initial message when the
		// one received was not integrity checked.
		RetransmitInitialNAS: u.st.proc == procServiceRequest || !u.reg.initialIntegrity,
	}
	plain, err := nas.Encode(cmd)
	if err != nil {
		u.log.Error("encode Security Mode Command", "err", err)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	hdr := nas.IntegrityProtectedNewContext
	if err := u.sendNAS(plain, hdr); err != nil {
		u.log.Warn("Security Mode Command not sent", "err", err)
	}
	u.common.step = commonSecurityMode
	u.startNASTimer(timerT3560, plain, hdr)
}

// onSecurityModeComplete takes the new context into use (TS 24.501
// §5.4.2.4) and resumes registration with the complete Registration Request
// if the UE sent one.
func (u *ue) onSecurityModeComplete(m *nas.SecurityModeComplete) {
	if u.common.step != commonSecurityMode {
		u.log.Debug("Security Mode Complete outside security mode control, ignored")
		return
	}
	u.stopNASTimer()
	u.common.step = commonNone
	u.sec = u.smc.pending
	u.smc = securityModeProc{}
	if u.ran.state < legSecured {
		u.ran.state = legSecured
	}
	if m.IMEISV != "" {
		u.pei = "imeisv-" + m.IMEISV
	}
	var complete nas.Message
	if len(m.NASMessageContainer) > 0 {
		// TS 24.501 §4.4.6: the container holds the complete initial message.
		var err error
		if complete, err = nas.Decode(m.NASMessageContainer); err != nil {
			u.log.Info("NAS message container of Security Mode Complete undecodable", "err", err)
		}
	}
	u.amf.stats.smcs.Add(1)
	switch u.st.proc {
	case procServiceRequest:
		if sr, ok := complete.(*nas.ServiceRequest); ok {
			u.svc.req = sr
		}
		u.acceptService()
	default:
		if rr, ok := complete.(*nas.RegistrationRequest); ok {
			u.reg.req = rr
			if rr.UESecurityCapability != nil && *rr.UESecurityCapability != u.ueSecCap {
				u.log.Info("UE security capability in the complete message differs; keeping the replayed one")
			}
		}
		u.completeRegistration()
	}
}

// onSecurityModeReject aborts the procedure that needed security (TS 24.501
// §5.4.2.5): the registration fails and the UE is released.
func (u *ue) onSecurityModeReject(m *nas.SecurityModeReject) {
	if u.common.step != commonSecurityMode {
		return
	}
	u.stopNASTimer()
	u.common.step = commonNone
	u.smc = securityModeProc{}
	u.log.Info("Security Mode Reject", "cause", m.Cause.String())
	u.abortProcedure(causeNASUnspecified)
}
