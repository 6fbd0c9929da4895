package amf

import (
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
)

// authState is the state of the 5G AKA based primary authentication and key
// agreement procedure on the network side (TS 24.501 §5.4.1.3, TS 33.501
// §6.1.3.2; the AMF acts as SEAF).
type authState uint8

const (
	authIdle         authState = iota
	authWaitResponse           // Authentication Request sent, T3560 running
)

// abba is the ABBA parameter of this release (TS 33.501 §A.7.1: 0x0000).
var abba = []byte{0x00, 0x00}

// authProc is the data of the authentication and key agreement procedure
// on the network side (TS 24.501 §5.4.1.3, TS 33.501 §6.1.3.2; the AMF acts
// as SEAF); ue.common says whether it runs.
type authProc struct {
	ctxID     string // AUSF 5G-AKA context to confirm
	rand      []byte
	hxresStar []byte
	ngKSI     uint8
	// resynced: one AUTS re-synchronisation was already done for this
	// registration (TS 33.501 §6.1.3.2.1: at most once before rejecting).
	resynced bool
	// identified: the UE already answered an Identity Request after an
	// authentication failure, so the next failure is final.
	identified bool
}

// startAuthentication runs Nausf_UEAuthentication_Authenticate and sends
// Authentication Request (TS 33.501 §6.1.3.2 steps 1-6, TS 24.501
// §5.4.1.3.2). resync carries RAND and AUTS after a synch failure.
func (u *ue) startAuthentication(resync *models.Udm_UEAU_ResynchronizationInfo) {
	a := u.amf
	id := u.suci
	if id == "" {
		id = u.supi
	}
	if id == "" {
		u.startIdentification()
		return
	}
	snn := kdf.ServingNetworkName(u.servingPLMN())
	ctx, cancel := a.callCtx()
	defer cancel()
	ctxID, res, err := a.deps.AUSF.Authenticate(ctx, &models.Ausf_UEAU_AuthenticationInfo{
		SupiOrSuci:            id,
		ServingNetworkName:    snn,
		ResynchronizationInfo: resync,
	})
	if err != nil {
		u.log.Info("Nausf_UEAuthentication_Authenticate failed", "err", err)
		if sbi.CauseOf(err) == sbi.CauseAuthenticationRejected && resync != nil {
			// The AUTS did not verify at the UDM (TS 33.102 §6.3.5).
			u.rejectAuthentication()
			return
		}
		u.rejectCommon(causeForSBIError(err))
		return
	}
	av, err := sbi.Av5gAkaOf(res)
	if err == nil {
		u.auth.rand, u.auth.hxresStar, err = decodeChallenge(av)
	}
	if err != nil {
		u.log.Warn("unusable 5G AKA challenge from AUSF", "err", err)
		u.rejectCommon(nas.CauseProtocolErrorUnspecified)
		return
	}
	autn, _ := hex.DecodeString(av.Autn) // length checked by decodeChallenge
	u.auth.ctxID = ctxID
	u.auth.ngKSI = u.nextNgKSI()
	msg := &nas.AuthenticationRequest{
		NgKSI: nas.NgKSI{KSI: u.auth.ngKSI},
		ABBA:  abba,
		RAND:  u.auth.rand,
		AUTN:  autn,
	}
	plain, hdr, err := u.sendNASMessage(msg)
	if plain == nil {
		u.log.Error("Authentication Request not built", "err", err)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	u.common.step = commonAuthentication
	u.startNASTimer(timerT3560, plain, hdr)
}

// nextNgKSI picks a key set identifier different from the one in use
// (TS 24.501 §5.4.1.3.2: values 0..6).
func (u *ue) nextNgKSI() uint8 {
	if u.sec == nil {
		return 0
	}
	return (u.sec.NgKSI() + 1) % 7
}

func decodeChallenge(av models.Ausf_UEAU_Av5gAka) (rnd, hxres []byte, err error) {
	rnd, err = hex.DecodeString(av.Rand)
	if err != nil || len(rnd) != 16 {
		return nil, nil, fmt.Errorf("rand %q: want 16 octets in hex", av.Rand)
	}
	autn, err := hex.DecodeString(av.Autn)
	if err != nil || len(autn) != 16 {
		return nil, nil, fmt.Errorf("autn %q: want 16 octets in hex", av.Autn)
	}
	hxres, err = hex.DecodeString(av.HxresStar)
	if err != nil || len(hxres) != 16 {
		return nil, nil, fmt.Errorf("hxresStar %q: want 16 octets in hex", av.HxresStar)
	}
	return rnd, hxres, nil
}

// onAuthenticationResponse checks RES* (TS 33.501 §6.1.3.2 steps 8-12).
func (u *ue) onAuthenticationResponse(m *nas.AuthenticationResponse) {
	if u.common.step != commonAuthentication {
		u.log.Debug("Authentication Response outside authentication, ignored")
		return
	}
	u.stopNASTimer()
	u.common.step = commonNone
	a := u.amf
	// Step 10: the SEAF computes HRES* and compares it with HXRES*.
	if len(m.RESStar) != 16 ||
		subtle.ConstantTimeCompare(kdf.HXRESStar(u.auth.rand, m.RESStar), u.auth.hxresStar) != 1 {
		u.log.Info("HRES* does not match HXRES*")
		u.authenticationFailed()
		return
	}
	resStar := hex.EncodeToString(m.RESStar)
	ctx, cancel := a.callCtx()
	defer cancel()
	res, err := a.deps.AUSF.Confirm5gAka(ctx, u.auth.ctxID, &models.Ausf_UEAU_ConfirmationData{ResStar: &resStar})
	if err != nil {
		u.log.Info("Nausf 5g-aka-confirmation failed", "err", err)
		u.rejectCommon(causeForSBIError(err))
		return
	}
	if res.AuthResult != models.Ausf_UEAU_AuthResult_SUCCESS {
		u.log.Info("AUSF reports authentication failure", "result", string(res.AuthResult))
		u.authenticationFailed()
		return
	}
	kseaf, err := hex.DecodeString(res.Kseaf)
	if err != nil || len(kseaf) != 32 || res.Supi == "" {
		u.log.Warn("AUSF confirmation lacks SUPI or a 256-bit KSEAF")
		u.rejectCommon(nas.CauseProtocolErrorUnspecified)
		return
	}
	// TS 33.501 §6.2.2.1, §A.7: KAMF from KSEAF, SUPI and ABBA.
	u.kamf = kdf.KAMF(kseaf, res.Supi, abba)
	u.ngKSI = u.auth.ngKSI
	u.setSUPI(res.Supi)
	u.auth.ctxID = ""
	a.stats.auths.Add(1)
	u.startSecurityMode()
}

// onAuthenticationFailure handles the UE's rejection of the challenge
// (TS 24.501 §5.4.1.3.7 c)-f), TS 33.501 §6.1.3.2.2).
func (u *ue) onAuthenticationFailure(m *nas.AuthenticationFailure) {
	if u.common.step != commonAuthentication {
		u.log.Debug("Authentication Failure outside authentication, ignored")
		return
	}
	u.stopNASTimer()
	u.common.step = commonNone
	switch m.Cause {
	case nas.CauseSynchFailure:
		// #21: re-synchronise once with RAND and AUTS (TS 33.102 §6.3.5).
		if u.auth.resynced || len(m.AUTS) != 14 {
			u.log.Info("second synch failure or bad AUTS, rejecting")
			u.rejectAuthentication()
			return
		}
		u.auth.resynced = true
		u.amf.stats.resyncs.Add(1)
		u.startAuthentication(&models.Udm_UEAU_ResynchronizationInfo{
			Rand: hex.EncodeToString(u.auth.rand),
			Auts: hex.EncodeToString(m.AUTS),
		})
	case nas.CauseMACFailure, nas.CauseNon5GAuthenticationUnacceptable:
		// #20/#26: the network may be using the wrong identity mapping.
		u.log.Info("authentication failure from UE", "cause", m.Cause.String())
		u.authenticationFailed()
	default:
		u.log.Info("authentication failure from UE", "cause", m.Cause.String())
		u.rejectAuthentication()
	}
}

// authenticationFailed applies TS 24.501 §5.4.1.3.7 / TS 33.501 §6.1.3.2.2:
// if the UE was identified by 5G-GUTI, ask for its SUCI and authenticate
// again once; otherwise send Authentication Reject.
func (u *ue) authenticationFailed() {
	if u.reg.byGUTI && !u.auth.identified {
		u.auth.identified = true
		u.suci = ""
		u.startIdentification()
		return
	}
	u.rejectAuthentication()
}

// rejectAuthentication sends Authentication Reject (TS 24.501 §5.4.1.3.5)
// and releases the UE; the registration fails.
func (u *ue) rejectAuthentication() {
	u.log.Info("authentication rejected", "suci", u.suci)
	u.sendNASMessage(&nas.AuthenticationReject{})
	u.amf.stats.authFails.Add(1)
	// The procedure that authenticated (registration, service request)
	// ends with the release: rejected.
	u.outcome = procedures.Rejected
	// TS 24.501 §5.4.1.3.5: the UE deletes its registration; so does the
	// network.
	u.releaseAndRemove(causeNASAuthFailure)
}

// setSUPI binds the UE context to its SUPI; an older context of the same
// subscriber is superseded (TS 23.502 §4.2.2.2.2 step 5).
func (u *ue) setSUPI(supi string) {
	if u.supi == supi {
		return
	}
	if u.supi != "" {
		u.amf.supis.CompareAndDelete(u.supi, u)
	}
	u.supi = supi
	u.log = u.amf.log.With("supi", supi)
	if old := u.amf.supis.Swap(supi, u); old != nil && old != u {
		old.post(old.superseded)
	}
}

// superseded drops a context replaced by a newer one of the same SUPI.
func (u *ue) superseded() {
	if u.gone() {
		return
	}
	u.log.Debug("UE context superseded by a new registration")
	u.supi = "" // the SUPI entry belongs to the new context now
	u.releaseAndRemove(cause5GCGeneratedReason)
}
