package nas

import (
	"fmt"
)

// header appends the plain 5GMM header (TS 24.501 §9.1.1): EPD, security
// header type 0 with spare half octet, message type.
func header(t MsgType, size int) *writer {
	w := &writer{b: make([]byte, 0, size)}
	w.raw([]byte{EPD5GMM, 0, byte(t)})
	return w
}

func encode(m Message) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("nas encode: nil message")
	}
	b, err := encodeMessage(m)
	if err != nil {
		return nil, fmt.Errorf("nas encode %s: %w", m.MessageType(), err)
	}
	return b, nil
}

func encodeMessage(m Message) ([]byte, error) {
	switch m := m.(type) {
	case *RegistrationRequest:
		return m.encode()
	case *RegistrationAccept:
		return m.encode()
	case *RegistrationComplete:
		return header(MsgRegistrationComplete, 3).b, nil
	case *RegistrationReject:
		return causeOnly(MsgRegistrationReject, m.Cause)
	case *AuthenticationRequest:
		return m.encode()
	case *AuthenticationResponse:
		w := header(MsgAuthenticationResponse, 21)
		if m.RESStar != nil {
			w.tlv(0x2D, m.RESStar)
		}
		return w.b, nil
	case *AuthenticationFailure:
		if m.Cause == 0 {
			return nil, fmt.Errorf("missing 5GMM cause")
		}
		w := header(MsgAuthenticationFailure, 20)
		w.u8(uint8(m.Cause))
		if m.AUTS != nil {
			if len(m.AUTS) != 14 {
				return nil, fmt.Errorf("AUTS of %d octets, want 14", len(m.AUTS))
			}
			w.tlv(0x30, m.AUTS)
		}
		return w.b, nil
	case *AuthenticationReject:
		return header(MsgAuthenticationReject, 3).b, nil
	case *AuthenticationResult:
		w := header(MsgAuthenticationResult, 8+len(m.EAPMessage))
		w.u8(m.NgKSI.half())
		w.lve(m.EAPMessage)
		if m.ABBA != nil {
			w.tlv(0x38, m.ABBA)
		}
		return w.b, nil
	case *SecurityModeCommand:
		return m.encode()
	case *SecurityModeComplete:
		w := header(MsgSecurityModeComplete, 16+len(m.NASMessageContainer))
		if m.IMEISV != "" {
			v, err := encodeMobileIdentity(&MobileIdentity{Type: IdentityIMEISV, IMEISV: m.IMEISV})
			if err != nil {
				return nil, err
			}
			w.tlve(0x77, v)
		}
		if m.NASMessageContainer != nil {
			w.tlve(0x71, m.NASMessageContainer)
		}
		return w.b, nil
	case *SecurityModeReject:
		return causeOnly(MsgSecurityModeReject, m.Cause)
	case *IdentityRequest:
		w := header(MsgIdentityRequest, 4)
		w.u8(uint8(m.IdentityType) & 7)
		return w.b, nil
	case *IdentityResponse:
		v, err := encodeMobileIdentity(&m.MobileIdentity)
		if err != nil {
			return nil, err
		}
		w := header(MsgIdentityResponse, 5+len(v))
		w.lve(v)
		return w.b, nil
	case *DeregistrationRequestUEOriginating:
		v, err := encodeMobileIdentity(&m.MobileIdentity)
		if err != nil {
			return nil, err
		}
		w := header(MsgDeregistrationRequestUEOrig, 6+len(v))
		// TS 24.501 §9.11.3.20: bit 4 switch off, bits 2-1 access type
		dt := uint8(m.AccessType) & 3
		if m.SwitchOff {
			dt |= 8
		}
		w.u8(m.NgKSI.half()<<4 | dt)
		w.lve(v)
		return w.b, nil
	case *DeregistrationAcceptUEOriginating:
		return header(MsgDeregistrationAcceptUEOrig, 3).b, nil
	case *DeregistrationRequestUETerminated:
		return m.encode()
	case *DeregistrationAcceptUETerminated:
		return header(MsgDeregistrationAcceptUETerm, 3).b, nil
	case *ServiceRequest:
		w := header(MsgServiceRequest, 24+len(m.NASMessageContainer))
		w.u8(m.ServiceType<<4 | m.NgKSI.half())
		w.lve(encodeSTMSI(m.STMSI))
		if m.UplinkDataStatus != nil {
			w.tlv(0x40, psiBytes(*m.UplinkDataStatus))
		}
		if m.PDUSessionStatus != nil {
			w.tlv(0x50, psiBytes(*m.PDUSessionStatus))
		}
		if m.AllowedPDUSessionStatus != nil {
			w.tlv(0x25, psiBytes(*m.AllowedPDUSessionStatus))
		}
		if m.NASMessageContainer != nil {
			w.tlve(0x71, m.NASMessageContainer)
		}
		return w.b, nil
	case *ServiceAccept:
		return m.encode()
	case *Status5GMM:
		return causeOnly(MsgStatus5GMM, m.Cause)
	case *ULNASTransport:
		return m.encode()
	case *DLNASTransport:
		w := header(MsgDLNASTransport, 12+len(m.Payload))
		w.u8(m.PayloadContainerType & 0xF)
		w.lve(m.Payload)
		if m.PDUSessionID != 0 {
			w.raw([]byte{0x12, m.PDUSessionID})
		}
		if m.Cause != 0 {
			w.raw([]byte{0x58, uint8(m.Cause)})
		}
		return w.b, nil
	case *ServiceReject:
		return m.encode()
	case SMMessage:
		return encodeSMMessage(m)
	}
	return nil, fmt.Errorf("unsupported message %T", m)
}

func causeOnly(t MsgType, c Cause5GMM) ([]byte, error) {
	if c == 0 {
		return nil, fmt.Errorf("missing 5GMM cause")
	}
	w := header(t, 4)
	w.u8(uint8(c))
	return w.b, nil
}

func (m *RegistrationRequest) encode() ([]byte, error) {
	id, err := encodeMobileIdentity(&m.MobileIdentity)
	if err != nil {
		return nil, err
	}
	w := header(MsgRegistrationRequest, 48+len(id)+len(m.NASMessageContainer))
	rt := uint8(m.RegistrationType) & 7
	if m.FollowOnRequest {
		rt |= 8
	}
	w.u8(m.NgKSI.half()<<4 | rt) // TS 24.501 §8.2.6: registration type in bits 4-1
	w.lve(id)
	if m.UESecurityCapability != nil {
		w.tlv(0x2E, m.UESecurityCapability.encode())
	}
	if m.RequestedNSSAI != nil {
		w.tlv(0x2F, encodeNSSAI(m.RequestedNSSAI))
	}
	if m.LastVisitedTAI != nil {
		w.u8(0x52)
		if w.b, err = appendTAI(w.b, *m.LastVisitedTAI); err != nil {
			return nil, err
		}
	}
	if m.UplinkDataStatus != nil {
		w.tlv(0x40, psiBytes(*m.UplinkDataStatus))
	}
	if m.PDUSessionStatus != nil {
		w.tlv(0x50, psiBytes(*m.PDUSessionStatus))
	}
	if m.NASMessageContainer != nil {
		w.tlve(0x71, m.NASMessageContainer)
	}
	return w.b, nil
}

func (m *RegistrationAccept) encode() ([]byte, error) {
	w := header(MsgRegistrationAccept, 64)
	r := uint8(m.Result) & 7
	if m.SMSAllowed {
		r |= 8
	}
	w.lv([]byte{r})
	if m.GUTI != nil {
		v, err := encodeMobileIdentity(&MobileIdentity{Type: IdentityGUTI, GUTI: *m.GUTI})
		if err != nil {
			return nil, err
		}
		w.tlve(0x77, v)
	}
	if m.TAIList != nil {
		v, err := encodeTAIList(m.TAIList)
		if err != nil {
			return nil, err
		}
		w.tlv(0x54, v)
	}
	if m.AllowedNSSAI != nil {
		w.tlv(0x15, encodeNSSAI(m.AllowedNSSAI))
	}
	if m.PDUSessionStatus != nil {
		w.tlv(0x50, psiBytes(*m.PDUSessionStatus))
	}
	if m.T3512 != nil {
		w.tlv(0x5E, []byte{m.T3512.octet()})
	}
	if m.T3502 != nil {
		w.tlv(0x16, []byte{m.T3502.octet()})
	}
	return w.b, nil
}

func (m *DeregistrationRequestUETerminated) encode() ([]byte, error) {
	if m.AccessType < Access3GPP || m.AccessType > AccessBoth {
		return nil, fmt.Errorf("access type %d", m.AccessType)
	}
	w := header(MsgDeregistrationRequestUETerm, 8)
	// TS 24.501 §8.2.14: de-registration type in bits 4-1 (§9.11.3.20:
	// switch off 0, re-registration required, access type), spare half
	// octet in bits 8-5.
	dt := uint8(m.AccessType)
	if m.ReRegistrationRequired {
		dt |= 4
	}
	w.u8(dt)
	if m.Cause != 0 {
		w.raw([]byte{0x58, uint8(m.Cause)})
	}
	if m.T3346 != nil {
		w.tlv(0x5F, []byte{m.T3346.octet()})
	}
	return w.b, nil
}

func (m *ServiceAccept) encode() ([]byte, error) {
	w := header(MsgServiceAccept, 16+2*len(m.PDUSessionReactivationResultErrorCause)+len(m.EAPMessage))
	if m.PDUSessionStatus != nil {
		w.tlv(0x50, psiBytes(*m.PDUSessionStatus))
	}
	if m.PDUSessionReactivationResult != nil {
		w.tlv(0x26, psiBytes(*m.PDUSessionReactivationResult))
	}
	if l := m.PDUSessionReactivationResultErrorCause; l != nil {
		if len(l) == 0 || len(l) > 256 {
			return nil, fmt.Errorf("PDU session reactivation result error cause of %d entries", len(l))
		}
		v := make([]byte, 0, 2*len(l))
		for _, e := range l {
			v = append(v, e.PSI, uint8(e.Cause))
		}
		w.tlve(0x72, v)
	}
	if m.EAPMessage != nil {
		w.tlve(0x78, m.EAPMessage)
	}
	if m.T3448 != nil {
		w.tlv(0x6B, []byte{m.T3448.octet()})
	}
	return w.b, nil
}

func (m *AuthenticationRequest) encode() ([]byte, error) {
	if len(m.ABBA) < 2 {
		return nil, fmt.Errorf("ABBA of %d octets, want >= 2", len(m.ABBA))
	}
	w := header(MsgAuthenticationRequest, 44)
	w.u8(m.NgKSI.half())
	w.lv(m.ABBA)
	if m.RAND != nil {
		if len(m.RAND) != 16 {
			return nil, fmt.Errorf("RAND of %d octets", len(m.RAND))
		}
		w.u8(0x21)
		w.raw(m.RAND)
	}
	if m.AUTN != nil {
		if len(m.AUTN) != 16 {
			return nil, fmt.Errorf("AUTN of %d octets", len(m.AUTN))
		}
		w.tlv(0x20, m.AUTN)
	}
	return w.b, nil
}

func (m *SecurityModeCommand) encode() ([]byte, error) {
	w := header(MsgSecurityModeCommand, 24)
	w.u8(m.CipheringAlg<<4 | m.IntegrityAlg&0xF)
	w.u8(m.NgKSI.half())
	w.lv(m.ReplayedUESecurityCapability.encode())
	if m.IMEISVRequest {
		w.u8(0xE1) // TS 24.501 §9.11.3.28: IMEISV requested
	}
	if m.RetransmitInitialNAS || m.HorizontalDerivation {
		var v uint8
		if m.RetransmitInitialNAS {
			v |= 2
		}
		if m.HorizontalDerivation {
			v |= 1
		}
		w.tlv(0x36, []byte{v})
	}
	if m.ABBA != nil {
		w.tlv(0x38, m.ABBA)
	}
	return w.b, nil
}

func (m *ULNASTransport) encode() ([]byte, error) {
	w := header(MsgULNASTransport, 32+len(m.Payload)+len(m.DNN))
	w.u8(m.PayloadContainerType & 0xF)
	w.lve(m.Payload)
	if m.PDUSessionID != 0 {
		w.raw([]byte{0x12, m.PDUSessionID})
	}
	if m.OldPDUSessionID != 0 {
		w.raw([]byte{0x59, m.OldPDUSessionID})
	}
	if m.RequestType != 0 {
		w.u8(0x80 | m.RequestType&7)
	}
	if m.SNSSAI != nil {
		w.b = appendSNSSAI(append(w.b, 0x22), *m.SNSSAI)
	}
	if m.DNN != "" {
		v, err := encodeDNN(m.DNN)
		if err != nil {
			return nil, err
		}
		w.tlv(0x25, v)
	}
	return w.b, nil
}
