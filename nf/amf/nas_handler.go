package amf

import (
	"errors"
	"fmt"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// nasIn is one received 5GMM message after security processing.
type nasIn struct {
	msg nas.Message
	// integrity is true when the message passed the integrity check with a
	// context of this UE (TS 24.501 §4.4.4.3).
	integrity bool
	// newContext is true for a message verified with the context that the
	// pending security mode command establishes.
	newContext bool
}

// onInitialUEMessage handles the NAS PDU of an Initial UE Message for a new
// UE context (no 5G-GUTI of ours, or it failed verification).
func (u *ue) onInitialUEMessage(r *ranUE, pdu []byte, msg nas.Message) {
	u.connect(r)
	if msg == nil {
		// Not a readable initial NAS message (ciphered or malformed): there is
		// nothing to continue; release the connection (TS 24.501 §4.4.4.3).
		u.log.Info("initial NAS message unreadable, releasing", "amf_ue_ngap_id", r.amfID)
		u.amf.stats.nasDiscarded.Add(1)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	switch msg.(type) {
	case *nas.RegistrationRequest, *nas.DeregistrationRequestUEOriginating:
		u.dispatch(nasIn{msg: msg})
	case *nas.ServiceRequest:
		// TS 24.501 §5.6.1.5: the 5G-S-TMSI names no UE we know (or its
		// claim did not verify while that UE is connected elsewhere).
		u.rejectService(nas.CauseUEIdentityCannotBeDerived)
	default:
		// Not an initial NAS message this AMF serves for an unknown UE
		// (TS 24.501 §4.4.4.3 / §5.6.1.5: a Service Request from a UE whose
		// identity cannot be derived cannot proceed).
		u.log.Info("initial NAS message not acceptable for an unknown UE, releasing",
			"type", msg.MessageType().String())
		u.amf.stats.nasDiscarded.Add(1)
		u.releaseAndRemove(causeNASUnspecified)
	}
}

// onInitialUEMessageForKnownGUTI runs on the executor of the UE context that
// holds the 5G-GUTI of an Initial UE Message. If the message verifies with
// this context's NAS security context, the new connection belongs to this
// UE (TS 24.501 §5.5.1.2.2, §4.4.4.3); otherwise the claim is
// unproven and a fresh context identifies the UE (TS 24.501 §5.4.3).
func (u *ue) onInitialUEMessageForKnownGUTI(g *gnb, m *ngap.InitialUEMessage, msg nas.Message) {
	a := u.amf
	pdu := m.NASPDU
	if !u.gone() && u.sec != nil && !nas.IsPlain(pdu) {
		if _, _, err := u.sec.Unprotect(pdu, nas.Uplink); err == nil {
			r := a.newRANUE(g, u, m.RANUENGAPID, m.UserLocation)
			if r == nil {
				return // the association went down meanwhile
			}
			if !u.connect(r) {
				u.forgetConnection(r)
				return
			}
			r.state = legSecured
			u.dispatch(nasIn{msg: msg, integrity: true})
			return
		} else {
			u.log.Info("initial NAS message with our 5G-GUTI fails integrity check", "err", err)
		}
	}
	if sr, ok := msg.(*nas.ServiceRequest); ok && !u.gone() && u.st.rm == rmRegistered && u.st.cm == cmIdle {
		// TS 24.501 §5.6.1.4.1, TS 33.501 §6.4.6: a Service Request of an
		// idle UE whose security context is not usable (it did not
		// verify) leads to a new authentication on this context; a UE
		// that is connected elsewhere keeps its connection, and the
		// unverified claim gets a fresh context (and is rejected).
		r := a.newRANUE(g, u, m.RANUENGAPID, m.UserLocation)
		if r == nil {
			return
		}
		if !u.connect(r) {
			u.forgetConnection(r)
			return
		}
		u.onServiceRequest(sr, false)
		return
	}
	// Unverified: hand the message to a fresh context.
	a.newConnection(g, m, msg)
}

// handleUplinkNAS applies TS 24.501 §4.4.4.3 to an uplink NAS PDU of an
// established connection and dispatches the message.
func (u *ue) handleUplinkNAS(r *ranUE, pdu []byte, loc ngap.UserLocationNR) {
	if u.gone() || r != u.ran || r.state == legReleasing {
		u.log.Debug("NAS on a stale connection dropped", "amf_ue_ngap_id", r.amfID)
		return
	}
	// TS 38.413 §8.6.3.2: the AMF stores the user location it carries.
	r.loc, r.tai = loc, loc.TAI
	in, ok := u.unprotect(pdu)
	if !ok {
		u.amf.stats.nasDiscarded.Add(1)
		return
	}
	u.dispatch(in)
}

// unprotect verifies and deciphers pdu. Messages that fail are discarded and
// leave the UE context unchanged; before a secure exchange is established
// the messages TS 24.501 §4.4.4.3 lists are processed unverified.
func (u *ue) unprotect(pdu []byte) (nasIn, bool) {
	r := u.ran
	hdr, err := nas.SecurityHeader(pdu)
	if err != nil {
		u.log.Info("NAS PDU discarded", "reason", err)
		return nasIn{}, false
	}
	if hdr != nas.Plain {
		ctx, newCtx := u.sec, false
		if hdr == nas.IntegrityProtectedAndCipheredNewContext || hdr == nas.IntegrityProtectedNewContext {
			ctx, newCtx = u.smc.pending, true
		}
		if ctx != nil {
			plain, _, err := ctx.Unprotect(pdu, nas.Uplink)
			if err == nil {
				msg, err := nas.Decode(plain)
				if err != nil {
					u.log.Info("NAS message discarded: undecodable", "err", err)
					u.sendStatus(nas.CauseInvalidMandatoryInformation)
					return nasIn{}, false
				}
				if !newCtx && r.state < legSecured {
					r.state = legSecured
				}
				return nasIn{msg: msg, integrity: true, newContext: newCtx}, true
			}
			if r.secured() || newCtx {
				// TS 24.501 §4.4.4.3: after the secure exchange is established,
				// a message failing the integrity check is discarded.
				u.log.Info("NAS message discarded: integrity check failed", "err", err)
				return nasIn{}, false
			}
		}
	} else if r.secured() {
		u.log.Info("NAS message discarded: not protected after secure exchange")
		return nasIn{}, false
	}
	// No secure exchange yet: read the message unverified and accept only
	// what TS 24.501 §4.4.4.3 allows.
	inner, _, err := nas.PeekPlain(pdu)
	if err != nil {
		u.log.Info("NAS message discarded", "err", err)
		return nasIn{}, false
	}
	msg, err := nas.Decode(inner)
	if err != nil {
		u.log.Info("NAS message discarded: undecodable", "err", err)
		u.sendStatus(nas.CauseInvalidMandatoryInformation)
		return nasIn{}, false
	}
	switch msg.(type) {
	case *nas.RegistrationRequest, *nas.IdentityResponse, *nas.AuthenticationResponse,
		*nas.AuthenticationFailure, *nas.SecurityModeReject, *nas.DeregistrationRequestUEOriginating,
		*nas.ServiceRequest:
		return nasIn{msg: msg}, true
	}
	u.log.Info("NAS message discarded: not allowed without integrity protection", "type", msg.MessageType().String())
	return nasIn{}, false
}

// dispatch hands a received 5GMM message to its procedure.
func (u *ue) dispatch(in nasIn) {
	u.lastActivity = u.exec.Now()
	switch m := in.msg.(type) {
	case *nas.RegistrationRequest:
		u.onRegistrationRequest(m, in.integrity)
	case *nas.RegistrationComplete:
		u.onRegistrationComplete()
	case *nas.AuthenticationResponse:
		u.onAuthenticationResponse(m)
	case *nas.AuthenticationFailure:
		u.onAuthenticationFailure(m)
	case *nas.SecurityModeComplete:
		if !in.newContext {
			// TS 24.501 §5.4.2.4: it comes protected with the new context.
			u.log.Info("Security Mode Complete not protected with the new context, discarded")
			u.amf.stats.nasDiscarded.Add(1)
			return
		}
		u.onSecurityModeComplete(m)
	case *nas.SecurityModeReject:
		u.onSecurityModeReject(m)
	case *nas.IdentityResponse:
		u.onIdentityResponse(m)
	case *nas.DeregistrationRequestUEOriginating:
		u.onDeregistrationRequest(m, in.integrity)
	case *nas.ULNASTransport:
		u.onULNASTransport(m)
	case *nas.ServiceRequest:
		u.onServiceRequest(m, in.integrity)
	case *nas.DeregistrationAcceptUETerminated:
		u.onNetworkDeregistrationAccept()
	case *nas.Status5GMM:
		u.log.Info("5GMM STATUS from UE", "cause", m.Cause.String())
	default:
		// TS 24.501 §7.4: message type not implemented / not compatible.
		u.log.Info("unexpected 5GMM message", "type", in.msg.MessageType().String())
		u.sendStatus(nas.CauseMessageTypeNotCompatibleWithState)
	}
}

// dlHeader is the security header for downlink messages on the current
// connection: ciphered and integrity protected once a context is in use.
func (u *ue) dlHeader() nas.SecurityHeaderType {
	if u.sec != nil && u.ran != nil && u.ran.secured() {
		return nas.IntegrityProtectedAndCiphered
	}
	return nas.Plain
}

// sendNASMessage encodes m and sends it with the current downlink header.
// It returns the plain encoding (for retransmission) and the header used.
func (u *ue) sendNASMessage(m nas.Message) ([]byte, nas.SecurityHeaderType, error) {
	plain, err := nas.Encode(m)
	if err != nil {
		u.log.Error("NAS encode failed", "type", m.MessageType().String(), "err", err)
		return nil, 0, fmt.Errorf("encode %s: %w", m.MessageType(), err)
	}
	hdr := u.dlHeader()
	if err := u.sendNAS(plain, hdr); err != nil {
		u.log.Warn("NAS send failed", "type", m.MessageType().String(), "err", err)
		return plain, hdr, err
	}
	return plain, hdr, nil
}

// protect applies hdr to plain: the new-context header types use the
// context the pending Security Mode Command establishes.
func (u *ue) protect(plain []byte, hdr nas.SecurityHeaderType) ([]byte, error) {
	if hdr == nas.Plain {
		return plain, nil
	}
	ctx := u.sec
	if hdr == nas.IntegrityProtectedNewContext || hdr == nas.IntegrityProtectedAndCipheredNewContext {
		ctx = u.smc.pending
	}
	if ctx == nil {
		return nil, errors.New("no NAS security context")
	}
	return ctx.Protect(plain, hdr, nas.Downlink)
}

// sendNAS protects plain with hdr and sends it in a Downlink NAS Transport.
func (u *ue) sendNAS(plain []byte, hdr nas.SecurityHeaderType) error {
	if u.ran == nil || u.ran.state == legReleasing {
		return errors.New("UE has no N2 connection")
	}
	pdu, err := u.protect(plain, hdr)
	if err != nil {
		return fmt.Errorf("protect: %w", err)
	}
	return u.ran.sendDownlinkNAS(pdu)
}

func (u *ue) sendStatus(cause nas.Cause5GMM) {
	u.sendNASMessage(&nas.Status5GMM{Cause: cause})
}
