package ue

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/sim/usim"
)

// secHdrLen is EPD, security header type, MAC (4) and SQN of a protected PDU.
const secHdrLen = 7

// HandleNAS processes one downlink NAS PDU and sends whatever answer it
// calls for before returning. The UE keeps no reference to pdu.
func (u *UE) HandleNAS(pdu []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.Downlink++

	hdr, err := nas.SecurityHeader(pdu)
	if err != nil {
		u.discardLocked("bad security header", err)
		return
	}
	var plain []byte
	switch hdr {
	case nas.Plain:
		plain = pdu
	case nas.IntegrityProtectedNewContext:
		u.handleSecurityModeCommandLocked(pdu)
		return
	default:
		if u.sec == nil {
			u.discardLocked("protected PDU without a security context", nil)
			return
		}
		plain, _, err = u.sec.Unprotect(pdu, nas.Downlink)
		if err != nil {
			// TS 24.501 §4.4.4.2: a message failing the integrity check is discarded.
			if errors.Is(err, nas.ErrMAC) || errors.Is(err, nas.ErrReplay) {
				u.stats.DiscardedMAC++
				u.log.Debug("downlink NAS discarded", "err", err)
				return
			}
			u.discardLocked("unprotect", err)
			return
		}
		// The network holds our context: secure exchange is established.
		u.secured = true
	}
	msg, err := nas.Decode(plain)
	if err != nil {
		u.discardLocked("decode", err)
		return
	}
	if u.debug {
		u.log.Debug("downlink NAS", "msg", msg.MessageType().String(), "header", hdr.String(), "state", u.mm.String())
	}
	if hdr == nas.Plain && !plainAllowed(msg) {
		u.discardLocked("unprotected "+msg.MessageType().String(), nil)
		return
	}
	switch m := msg.(type) {
	case *nas.AuthenticationRequest:
		u.onAuthenticationRequestLocked(m)
	case *nas.AuthenticationReject:
		u.onAuthenticationRejectLocked()
	case *nas.IdentityRequest:
		u.onIdentityRequestLocked(m)
	case *nas.RegistrationAccept:
		u.onRegistrationAcceptLocked(m)
	case *nas.RegistrationReject:
		u.onRegistrationRejectLocked(m)
	case *nas.DeregistrationAcceptUEOriginating:
		u.onDeregistrationAcceptLocked()
	case *nas.DeregistrationRequestUETerminated:
		u.onNetworkDeregistrationLocked(m)
	case *nas.ServiceAccept:
		u.onServiceAcceptLocked(m)
	case *nas.ServiceReject:
		u.onServiceRejectLocked(m)
	case *nas.SecurityModeCommand:
		// An SMC must come with header type 3 (TS 24.501 §4.4.5).
		u.discardLocked("security mode command with header "+hdr.String(), nil)
	case *nas.Status5GMM:
		u.log.Info("5GMM STATUS from network", "cause", m.Cause.String())
	case *nas.DLNASTransport:
		if m.PayloadContainerType == nas.PayloadN1SMInformation {
			u.handleSMLocked(m)
		} else {
			u.discardLocked(fmt.Sprintf("DL NAS transport with payload container type %d", m.PayloadContainerType), nil)
		}
	default:
		u.discardLocked("unexpected "+msg.MessageType().String(), nil)
	}
}

// plainAllowed lists the messages a UE processes without integrity
// protection (TS 24.501 §4.4.4.2).
func plainAllowed(m nas.Message) bool {
	switch m := m.(type) {
	case *nas.IdentityRequest:
		return m.IdentityType == nas.IdentitySUCI
	case *nas.AuthenticationRequest, *nas.AuthenticationReject,
		*nas.DeregistrationAcceptUEOriginating, *nas.Status5GMM:
		return true
	case *nas.RegistrationReject:
		return m.Cause != causeNotAuthorizedForCAG && m.Cause != causeWirelessAccessBarred
	case *nas.ServiceReject:
		return m.Cause != causeNotAuthorizedForCAG && m.Cause != causeWirelessAccessBarred
	}
	return false
}

// 5GMM causes whose rejects must come integrity protected (TS 24.501
// §4.4.4.2).
const (
	causeNotAuthorizedForCAG  nas.Cause5GMM = 76
	causeWirelessAccessBarred nas.Cause5GMM = 78
)

func (u *UE) discardLocked(why string, err error) {
	u.stats.DiscardedOther++
	u.log.Debug("downlink NAS discarded", "why", why, "err", err)
}

// HandleRelease tells the UE that its signalling connection is gone: the gNB
// got UE Context Release Command and sent UE Context Release Complete at
// sentAt. What the UE does next in CM-IDLE (register again, a service
// request for buffered uplink data, T3512) starts here.
func (u *UE) HandleRelease(sentAt time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.connected = false
	u.secured = false
	switch u.proc {
	case procServiceRequest, procPagingResponse:
		if u.mm == mmServiceRequestInitiated {
			u.mm = mmRegistered
		}
		if u.svcReject != 0 {
			u.finishLocked(sentAt, &ServiceRejectError{Cause: u.svcReject})
		} else {
			u.finishLocked(sentAt, ErrReleased)
		}
	case procPeriodic:
		// The update did not complete; the registration stands.
		u.mm = mmRegistered
		u.finishLocked(sentAt, ErrReleased)
	case procDeregister:
		u.mm = mmDeregistered
		if u.deregAck {
			u.finishLocked(sentAt, nil)
		} else {
			u.finishLocked(sentAt, errors.New("ue: released before Deregistration Accept"))
		}
	case procSwitchOff:
		// TS 24.501 §5.5.2.2.1: switch-off expects no accept.
		u.mm = mmDeregistered
		u.finishLocked(sentAt, nil)
	case procRegister, procReregister:
		u.mm = mmDeregistered
		u.finishLocked(sentAt, ErrReleased)
	case procRelease:
		// AN release: the UE stays registered, now in CM-IDLE.
		u.finishLocked(sentAt, nil)
	case procHandoverXn, procHandoverN2:
		// The RAN part learns of it by itself; a registration update
		// after the move did not complete, the registration stands.
		if u.hoRegistering {
			if u.mm == mmRegisteredInitiated {
				u.mm = mmRegistered
			}
			u.finishLocked(sentAt, ErrReleased)
		}
	}
	if u.mm == mmDeregistered {
		u.releaseAllSessionsLocked(ErrReleased)
	} else {
		// CM-IDLE: the sessions stay, their user plane is gone (TS 23.502 §4.2.6).
		u.userPlaneLostLocked()
	}
	u.idleLocked()
}

// sendLocked encodes m and sends it on the open connection, protected
// (integrity and ciphering) once secure exchange is established.
func (u *UE) sendLocked(m nas.Message) (time.Time, error) {
	pdu, err := nas.Encode(m)
	if err != nil {
		return time.Time{}, err
	}
	if u.secured && u.sec != nil {
		if pdu, err = u.sec.Protect(pdu, nas.IntegrityProtectedAndCiphered, nas.Uplink); err != nil {
			return time.Time{}, err
		}
	}
	return u.send(pdu, m)
}

func (u *UE) send(pdu []byte, m nas.Message) (time.Time, error) {
	if u.link == nil || !u.connected {
		return time.Time{}, ErrNoLink
	}
	if u.debug {
		u.log.Debug("uplink NAS", "msg", m.MessageType().String())
	}
	t, err := u.link.SendUplink(pdu)
	if err != nil {
		u.log.Warn("uplink send failed", "msg", m.MessageType(), "err", err)
		u.finishLocked(t, err)
	}
	return t, err
}

// onAuthenticationRequestLocked runs the UE side of 5G AKA (TS 33.501
// §6.1.3.2, TS 24.501 §5.4.1.3).
func (u *UE) onAuthenticationRequestLocked(m *nas.AuthenticationRequest) {
	if len(m.RAND) != 16 || len(m.AUTN) != 16 {
		u.discardLocked("authentication request without RAND/AUTN (EAP is not supported)", nil)
		return
	}
	// TS 24.501 §5.4.1.3.4 / TS 33.102 §6.3.3: a retransmitted challenge
	// (same RAND) gets the stored RES* without running the USIM again.
	if u.lastRES != nil && bytes.Equal(m.RAND, u.lastRAND) {
		u.stats.RepeatedResponses++
		u.sendLocked(&nas.AuthenticationResponse{RESStar: u.lastRES})
		return
	}
	abba := m.ABBA
	if len(abba) == 0 {
		abba = []byte{0, 0}
	}
	aka, err := u.usim.Authenticate(u.snn, m.RAND, m.AUTN, abba)
	if err != nil {
		fail := &nas.AuthenticationFailure{}
		var sync *milenage.SyncError
		switch {
		case errors.Is(err, milenage.ErrMACFailure):
			fail.Cause = nas.CauseMACFailure // TS 24.501 §5.4.1.3.7 item a
		case errors.As(err, &sync):
			fail.Cause, fail.AUTS = nas.CauseSynchFailure, sync.AUTS // item c
		case errors.Is(err, usim.ErrNon5GAuth):
			fail.Cause = nas.CauseNon5GAuthenticationUnacceptable // item b
		default:
			u.discardLocked("authentication", err)
			return
		}
		u.log.Info("authentication failure", "cause", fail.Cause.String(), "err", err)
		u.authCause = fail.Cause
		u.stats.AuthFailures++
		u.lastRAND, u.lastRES = nil, nil
		u.sendLocked(fail)
		return
	}
	// The new KAMF forms a partial native context until the SMC activates it.
	u.pendingKAMF, u.pendingKSI = aka.KAMF, m.NgKSI.KSI
	u.lastRAND = append(u.lastRAND[:0], m.RAND...)
	u.lastRES = aka.RESStar
	u.sendLocked(&nas.AuthenticationResponse{RESStar: aka.RESStar})
}

func (u *UE) onAuthenticationRejectLocked() {
	// TS 24.501 §5.4.1.3.5: delete the 5G-GUTI, TAI list, ngKSI and contexts.
	u.setGUTILocked(nil)
	u.taiList, u.sec, u.kamf, u.ksi = nil, nil, nil, nas.KSINoKey
	u.pendingKAMF, u.lastRAND, u.lastRES = nil, nil, nil
	u.mm = mmDeregistered
	u.releaseAllSessionsLocked(ErrAuthenticationReject)
	u.finishLocked(time.Now(), ErrAuthenticationReject)
}

// handleSecurityModeCommandLocked takes an SMC (header type 3), activates
// the context it names and answers Security Mode Complete with the initial
// Registration Request in the NAS message container (TS 24.501 §5.4.2.3,
// §4.4.6), or Security Mode Reject (§5.4.2.5).
func (u *UE) handleSecurityModeCommandLocked(pdu []byte) {
	if len(pdu) < secHdrLen+3 {
		u.discardLocked("short security mode command", nil)
		return
	}
	msg, err := nas.Decode(pdu[secHdrLen:])
	if err != nil {
		u.discardLocked("decode security mode command", err)
		return
	}
	m, ok := msg.(*nas.SecurityModeCommand)
	if !ok {
		u.discardLocked(msg.MessageType().String()+" with header type 3", nil)
		return
	}
	kamf, ksi := u.pendingKAMF, u.pendingKSI
	if kamf == nil || m.NgKSI.KSI != ksi {
		// An SMC may also re-key the current context (TS 33.501 §6.7.2).
		kamf, ksi = u.kamf, u.ksi
	}
	if kamf == nil || m.NgKSI.KSI != ksi {
		u.rejectSMCLocked(nas.CauseSecurityModeRejectedUnspecified, "no key set for ngKSI")
		return
	}
	capab := u.secCap()
	if m.ReplayedUESecurityCapability.EA != capab.EA || m.ReplayedUESecurityCapability.IA != capab.IA {
		u.rejectSMCLocked(nas.CauseUESecurityCapabilitiesMismatch, "replayed UE security capabilities differ")
		return
	}
	if !capab.SupportsEA(m.CipheringAlg) || !capab.SupportsIA(m.IntegrityAlg) {
		u.rejectSMCLocked(nas.CauseSecurityModeRejectedUnspecified, "algorithm not accepted")
		return
	}
	kEnc, kInt := kdf.NASKeys(kamf, m.CipheringAlg, m.IntegrityAlg)
	ctx := nas.NewSecurityContext(kEnc, kInt, m.CipheringAlg, m.IntegrityAlg, ksi)
	if u.sec != nil && bytes.Equal(kamf, u.kamf) {
		// Same KAMF (a retransmitted SMC, or new algorithms): the NAS COUNTs
		// continue; they restart only with a new KAMF (TS 33.501 §6.7.2).
		ctx.SetNextCount(nas.Uplink, u.sec.NextCount(nas.Uplink))
		ctx.SetNextCount(nas.Downlink, u.sec.NextCount(nas.Downlink))
	}
	if _, _, err := ctx.Unprotect(pdu, nas.Downlink); err != nil {
		u.stats.DiscardedMAC++
		u.rejectSMCLocked(nas.CauseSecurityModeRejectedUnspecified, "integrity check: "+err.Error())
		return
	}
	u.sec, u.kamf, u.ksi = ctx, kamf, ksi
	u.pendingKAMF = nil
	u.secured = true

	complete := nas.SecurityModeComplete{}
	if m.IMEISVRequest {
		complete.IMEISV = u.cfg.IMEISV
	}
	if u.initialPlain != nil && (m.RetransmitInitialNAS || !u.initialProt) {
		complete.NASMessageContainer = u.initialPlain
	}
	plain, err := nas.Encode(&complete)
	if err != nil {
		u.log.Error("encode security mode complete", "err", err)
		return
	}
	out, err := ctx.Protect(plain, nas.IntegrityProtectedAndCipheredNewContext, nas.Uplink)
	if err != nil {
		u.log.Error("protect security mode complete", "err", err)
		return
	}
	u.send(out, &complete)
}

func (u *UE) rejectSMCLocked(cause nas.Cause5GMM, why string) {
	u.log.Info("security mode reject", "cause", cause.String(), "why", why)
	// Sent unprotected: the UE could not accept the new context.
	pdu, err := nas.Encode(&nas.SecurityModeReject{Cause: cause})
	if err == nil {
		u.send(pdu, &nas.SecurityModeReject{})
	}
}

// onIdentityRequestLocked answers TS 24.501 §5.4.3.
func (u *UE) onIdentityRequestLocked(m *nas.IdentityRequest) {
	var id nas.MobileIdentity
	switch m.IdentityType {
	case nas.IdentitySUCI:
		s, err := u.usim.SUCI()
		if err != nil {
			u.log.Error("identity request", "err", err)
			return
		}
		id = nas.MobileIdentity{Type: nas.IdentitySUCI, SUCI: s.String()}
	case nas.IdentityGUTI:
		if u.guti == nil {
			id = nas.MobileIdentity{Type: nas.IdentityNone}
		} else {
			id = nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}
		}
	case nas.IdentityIMEISV:
		id = nas.MobileIdentity{Type: nas.IdentityIMEISV, IMEISV: u.cfg.IMEISV}
	case nas.IdentityIMEI:
		id = nas.MobileIdentity{Type: nas.IdentityIMEI, IMEI: imeiOf(u.cfg.IMEISV)}
	default:
		id = nas.MobileIdentity{Type: nas.IdentityNone}
	}
	u.sendLocked(&nas.IdentityResponse{MobileIdentity: id})
}

// imeiOf turns a 16-digit IMEISV into a 15-digit IMEI (TAC+SNR+Luhn check digit).
func imeiOf(imeisv string) string {
	if len(imeisv) < 14 {
		return imeisv
	}
	body := imeisv[:14]
	sum := 0
	for i := 0; i < 14; i++ {
		d := int(body[13-i] - '0')
		if i%2 == 0 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return body + string(rune('0'+(10-sum%10)%10))
}

// onRegistrationAcceptLocked completes registration (TS 24.501 §5.5.1.2.4):
// store the 5G-GUTI, TAI list and allowed NSSAI and acknowledge a new GUTI
// with Registration Complete. An Accept outside a registration is the
// network's T3550 retransmission: acknowledge it again.
func (u *UE) onRegistrationAcceptLocked(m *nas.RegistrationAccept) {
	inProc := u.inRegistrationLocked()
	if !inProc && u.mm != mmRegistered {
		u.discardLocked("registration accept outside registration", nil)
		return
	}
	if m.GUTI != nil {
		u.setGUTILocked(m.GUTI)
	}
	if inProc {
		// TS 24.501 §5.3.7: T3512 from the accept; without the IE the
		// default (54 min); deactivated: no periodic updating.
		u.t3512 = DefaultT3512
		if m.T3512 != nil {
			d, ok := m.T3512.Duration()
			if !ok {
				d = 0
			}
			u.t3512 = d
		}
	}
	if m.PDUSessionStatus != nil {
		// TS 24.501 §5.5.1.3.4: sessions the network does not hold are
		// released locally.
		u.syncSessionsLocked(*m.PDUSessionStatus)
	}
	if m.TAIList != nil {
		u.taiList = append(u.taiList[:0], m.TAIList...)
	}
	if m.AllowedNSSAI != nil {
		u.allowedNSSAI = append(u.allowedNSSAI[:0], m.AllowedNSSAI...)
	}
	u.mm = mmRegistered
	end := time.Now()
	if m.GUTI != nil {
		t, err := u.sendLocked(&nas.RegistrationComplete{})
		if err != nil {
			return
		}
		end = t
	}
	if inProc {
		u.finishLocked(end, nil)
	} else {
		u.stats.RepeatedResponses++
	}
}

// onRegistrationRejectLocked handles TS 24.501 §5.5.1.2.5.
func (u *UE) onRegistrationRejectLocked(m *nas.RegistrationReject) {
	if !u.inRegistrationLocked() {
		u.discardLocked("registration reject outside registration", nil)
		return
	}
	switch m.Cause {
	case nas.CauseIllegalUE, nas.CauseIllegalME, nas.Cause5GSServicesNotAllowed:
		// The USIM is invalid for 5GS: forget identity and keys.
		u.setGUTILocked(nil)
		u.taiList, u.sec, u.kamf, u.ksi = nil, nil, nil, nas.KSINoKey
	case nas.CauseUEIdentityCannotBeDerived, nas.CauseImplicitlyDeregistered:
		// The network lost our context: the next registration uses SUCI.
		u.setGUTILocked(nil)
		u.sec, u.kamf, u.ksi = nil, nil, nas.KSINoKey
	}
	u.mm = mmDeregistered
	u.releaseAllSessionsLocked(&RejectError{Cause: m.Cause})
	u.finishLocked(time.Now(), &RejectError{Cause: m.Cause})
}

func (u *UE) onDeregistrationAcceptLocked() {
	if u.proc != procDeregister {
		u.discardLocked("deregistration accept outside deregistration", nil)
		return
	}
	// TS 24.501 §5.5.2.2.2: now wait for the release of the connection. The
	// 5G-GUTI and the security context are kept for the next registration.
	u.deregAck = true
	u.mm = mmDeregistered
	if !u.connected {
		u.finishLocked(time.Now(), nil)
	}
}
