package amf

import (
	"github.com/tern5g/tern/nas"
)

// identState is the state of the identification procedure on the network
// side (TS 24.501 §5.4.3).
type identState uint8

const (
	identIdle         identState = iota
	identWaitResponse            // Identity Request sent, T3570 running
)

// identificationProc is the per-UE identification state machine. tern only
// asks for the SUCI (the identity registration needs).
type identificationProc struct {
	state identState
}

// startIdentification sends Identity Request for the SUCI (TS 24.501
// §5.4.3.2) and starts T3570.
func (u *ue) startIdentification() {
	plain, hdr, err := u.sendNASMessage(&nas.IdentityRequest{IdentityType: nas.IdentitySUCI})
	if plain == nil {
		u.log.Error("Identity Request not built", "err", err)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	u.ident.state = identWaitResponse
	u.reg.state = regIdentifying
	if u.state != gmmRegistered {
		u.setState(gmmCommonProcedureInitiated)
	}
	u.startTimer(timerT3570, plain, hdr)
}

// onIdentityResponse continues registration with the SUCI (TS 24.501
// §5.4.3.4): authentication follows.
func (u *ue) onIdentityResponse(m *nas.IdentityResponse) {
	if u.ident.state != identWaitResponse {
		u.log.Debug("Identity Response outside identification, ignored")
		return
	}
	u.stopTimer(timerT3570)
	u.ident.state = identIdle
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
