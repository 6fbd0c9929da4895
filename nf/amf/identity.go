package amf

import (
	"github.com/tern5g/tern/nas"
)

// startIdentification sends Identity Request for the SUCI (TS 24.501
// §5.4.3.2; tern only asks for the identity registration needs) and starts
// T3570.
func (u *ue) startIdentification() {
	plain, hdr, err := u.sendNASMessage(&nas.IdentityRequest{IdentityType: nas.IdentitySUCI})
	if plain == nil {
		u.log.Error("Identity Request not built", "err", err)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	u.common.step = commonIdentification
	u.startNASTimer(timerT3570, plain, hdr)
}

// onIdentityResponse continues registration with the SUCI (TS 24.501
// §5.4.3.4): authentication follows.
func (u *ue) onIdentityResponse(m *nas.IdentityResponse) {
	if u.common.step != commonIdentification {
		u.log.Debug("Identity Response outside identification, ignored")
		return
	}
	u.stopNASTimer()
	u.common.step = commonNone
	if m.MobileIdentity.Type != nas.IdentitySUCI || m.MobileIdentity.SUCI == "" {
		// TS 24.501 §5.5.1.2.5: #9 "UE identity cannot be derived by the network".
		u.log.Info("Identity Response without SUCI", "type", m.MobileIdentity.Type.String())
		u.rejectRegistration(nas.CauseUEIdentityCannotBeDerived)
		return
	}
	u.amf.stats.idents.Add(1)
	u.suci = m.MobileIdentity.SUCI
	// The SUCI came from the UE itself: a later authentication failure is
	// final (TS 24.501 §5.4.1.3.7 c)).
	u.auth.identified = true
	u.startAuthentication(nil)
}
