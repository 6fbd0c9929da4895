package nas

import (
	"errors"
	"fmt"
)

// Type-3 (TV) optional IEs with their total length, per message
// (TS 24.501 §8.2); every other optional IE is type 1, TLV or TLV-E.
var (
	tvRegistrationRequest = map[uint8]int{0x52: 7}
	tvAuthRequest         = map[uint8]int{0x21: 17}
	tvSecurityModeCommand = map[uint8]int{0x57: 2}
	tvULNASTransport      = map[uint8]int{0x12: 2, 0x59: 2}
	tvDLNASTransport      = map[uint8]int{0x12: 2, 0x58: 2}
	tvDeregRequestUETerm  = map[uint8]int{0x58: 2}
)

func decode(b []byte) (Message, error) {
	if len(b) >= 1 && b[0] == EPD5GSM {
		return decodeSM(b)
	}
	if len(b) < 3 {
		return nil, fmt.Errorf("nas decode: %w", ErrShort)
	}
	if b[0] != EPD5GMM {
		return nil, fmt.Errorf("nas decode: EPD 0x%02x is not 5GMM", b[0])
	}
	if h := b[1] & 0x0F; h != 0 {
		return nil, fmt.Errorf("nas decode: security header type %d: %w", h, ErrNotPlain)
	}
	t := MsgType(b[2])
	r := &reader{b: b[3:]}
	m, err := decodeBody(t, r)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, fmt.Errorf("nas decode %s: %w", t, err)
	}
	return m, nil
}

// ErrNotPlain is returned by Decode for a security protected PDU.
var ErrNotPlain = errors.New("security protected PDU")

// ErrUnknownMessage is returned by Decode for message types tern does not handle.
var ErrUnknownMessage = errors.New("unsupported message type")

func decodeBody(t MsgType, r *reader) (Message, error) {
	switch t {
	case MsgRegistrationRequest:
		return decodeRegistrationRequest(r)
	case MsgRegistrationAccept:
		return decodeRegistrationAccept(r)
	case MsgRegistrationComplete:
		r.optionals(nil, skip)
		return &RegistrationComplete{}, nil
	case MsgRegistrationReject:
		c := r.u8()
		r.optionals(nil, skip)
		return &RegistrationReject{Cause: Cause5GMM(c)}, nil
	case MsgAuthenticationRequest:
		return decodeAuthenticationRequest(r)
	case MsgAuthenticationResponse:
		m := &AuthenticationResponse{}
		r.optionals(nil, func(ie optIE) error {
			if ie.iei == 0x2D {
				m.RESStar = ie.v
			}
			return nil
		})
		return m, nil
	case MsgAuthenticationFailure:
		m := &AuthenticationFailure{Cause: Cause5GMM(r.u8())}
		r.optionals(nil, func(ie optIE) error {
			if ie.iei == 0x30 {
				if len(ie.v) != 14 {
					return fmt.Errorf("AUTS of %d octets", len(ie.v))
				}
				m.AUTS = ie.v
			}
			return nil
		})
		return m, nil
	case MsgAuthenticationReject:
		r.optionals(nil, skip)
		return &AuthenticationReject{}, nil
	case MsgAuthenticationResult:
		m := &AuthenticationResult{NgKSI: ngKSIFromHalf(r.u8())}
		m.EAPMessage = r.lve()
		r.optionals(nil, func(ie optIE) error {
			if ie.iei == 0x38 {
				m.ABBA = ie.v
			}
			return nil
		})
		return m, nil
	case MsgSecurityModeCommand:
		return decodeSecurityModeCommand(r)
	case MsgSecurityModeComplete:
		m := &SecurityModeComplete{}
		r.optionals(nil, func(ie optIE) error {
			switch ie.iei {
			case 0x77:
				id, err := decodeMobileIdentity(ie.v)
				if err != nil {
					return err
				}
				if id.Type != IdentityIMEISV {
					return fmt.Errorf("IMEISV IE holds a %s", id.Type)
				}
				m.IMEISV = id.IMEISV
			case 0x71:
				m.NASMessageContainer = ie.v
			}
			return nil
		})
		return m, nil
	case MsgSecurityModeReject:
		c := r.u8()
		r.optionals(nil, skip)
		return &SecurityModeReject{Cause: Cause5GMM(c)}, nil
	case MsgIdentityRequest:
		m := &IdentityRequest{IdentityType: IdentityType(r.u8() & 7)}
		r.optionals(nil, skip)
		return m, nil
	case MsgIdentityResponse:
		v := r.lve()
		if r.err != nil {
			return nil, r.err
		}
		id, err := decodeMobileIdentity(v)
		if err != nil {
			return nil, err
		}
		r.optionals(nil, skip)
		return &IdentityResponse{MobileIdentity: id}, nil
	case MsgDeregistrationRequestUEOrig:
		o := r.u8()
		v := r.lve()
		if r.err != nil {
			return nil, r.err
		}
		id, err := decodeMobileIdentity(v)
		if err != nil {
			return nil, err
		}
		r.optionals(nil, skip)
		return &DeregistrationRequestUEOriginating{
			SwitchOff: o&8 != 0, AccessType: AccessType(o & 3), NgKSI: ngKSIFromHalf(o >> 4), MobileIdentity: id,
		}, nil
	case MsgDeregistrationAcceptUEOrig:
		r.optionals(nil, skip)
		return &DeregistrationAcceptUEOriginating{}, nil
	case MsgDeregistrationRequestUETerm:
		return decodeDeregistrationRequestUETerminated(r)
	case MsgDeregistrationAcceptUETerm:
		r.optionals(nil, skip)
		return &DeregistrationAcceptUETerminated{}, nil
	case MsgServiceRequest:
		return decodeServiceRequest(r)
	case MsgServiceReject:
		return decodeServiceReject(r)
	case MsgServiceAccept:
		m := &ServiceAccept{}
		r.optionals(nil, func(ie optIE) (err error) {
			switch ie.iei {
			case 0x50:
				m.PDUSessionStatus, err = decodePSI(ie.v)
			case 0x26:
				m.PDUSessionReactivationResult, err = decodePSI(ie.v)
			case 0x72:
				m.PDUSessionReactivationResultErrorCause, err = decodePDUSessionCauses(ie.v)
			case 0x78:
				m.EAPMessage = ie.v
			case 0x6B:
				m.T3448, err = decodeGPRSTimer2(ie.v)
			}
			return err
		})
		return m, nil
	case MsgStatus5GMM:
		c := r.u8()
		r.optionals(nil, skip)
		return &Status5GMM{Cause: Cause5GMM(c)}, nil
	case MsgULNASTransport:
		return decodeULNASTransport(r)
	case MsgDLNASTransport:
		m := &DLNASTransport{PayloadContainerType: r.u8() & 0xF}
		m.Payload = r.lve()
		r.optionals(tvDLNASTransport, func(ie optIE) error {
			switch ie.iei {
			case 0x12:
				m.PDUSessionID = ie.v[0]
			case 0x58:
				m.Cause = Cause5GMM(ie.v[0])
			}
			return nil
		})
		return m, nil
	}
	return nil, ErrUnknownMessage
}

func skip(optIE) error { return nil }

func decodeRegistrationRequest(r *reader) (Message, error) {
	o := r.u8()
	m := &RegistrationRequest{
		RegistrationType: RegistrationType(o & 7),
		FollowOnRequest:  o&8 != 0,
		NgKSI:            ngKSIFromHalf(o >> 4),
	}
	v := r.lve()
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if m.MobileIdentity, err = decodeMobileIdentity(v); err != nil {
		return nil, err
	}
	r.optionals(tvRegistrationRequest, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x2E:
			var c UESecurityCapability
			if c, err = decodeUESecCap(ie.v); err == nil {
				m.UESecurityCapability = &c
			}
		case 0x2F:
			m.RequestedNSSAI, err = decodeNSSAI(ie.v)
		case 0x52:
			t, err := decodeTAI(ie.v)
			if err != nil {
				return err
			}
			m.LastVisitedTAI = &t
		case 0x40:
			m.UplinkDataStatus, err = decodePSI(ie.v)
		case 0x50:
			m.PDUSessionStatus, err = decodePSI(ie.v)
		case 0x71:
			m.NASMessageContainer = ie.v
		}
		return err
	})
	return m, nil
}

func decodeRegistrationAccept(r *reader) (Message, error) {
	v := r.lv()
	if r.err != nil {
		return nil, r.err
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("5GS registration result of %d octets", len(v))
	}
	m := &RegistrationAccept{Result: RegistrationResult(v[0] & 7), SMSAllowed: v[0]&8 != 0}
	r.optionals(nil, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x77:
			id, err := decodeMobileIdentity(ie.v)
			if err != nil {
				return err
			}
			if id.Type != IdentityGUTI {
				return fmt.Errorf("5G-GUTI IE holds a %s", id.Type)
			}
			m.GUTI = &id.GUTI
		case 0x54:
			m.TAIList, err = decodeTAIList(ie.v)
		case 0x15:
			m.AllowedNSSAI, err = decodeNSSAI(ie.v)
		case 0x50:
			m.PDUSessionStatus, err = decodePSI(ie.v)
		case 0x5E:
			m.T3512, err = decodeGPRSTimer3(ie.v)
		case 0x16:
			m.T3502, err = decodeGPRSTimer2(ie.v)
		}
		return err
	})
	return m, nil
}

func decodeDeregistrationRequestUETerminated(r *reader) (Message, error) {
	o := r.u8()
	if r.err != nil {
		return nil, r.err
	}
	// TS 24.501 §9.11.3.20: the switch off bit is spare in this direction.
	m := &DeregistrationRequestUETerminated{ReRegistrationRequired: o&4 != 0, AccessType: AccessType(o & 3)}
	if m.AccessType == 0 {
		return nil, errors.New("de-registration type: access type 0 is reserved")
	}
	r.optionals(tvDeregRequestUETerm, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x58:
			m.Cause = Cause5GMM(ie.v[0])
		case 0x5F:
			m.T3346, err = decodeGPRSTimer2(ie.v)
		}
		// rejected NSSAI (0x6D) and the CAG information lists are skipped
		return err
	})
	return m, nil
}

func decodeAuthenticationRequest(r *reader) (Message, error) {
	m := &AuthenticationRequest{NgKSI: ngKSIFromHalf(r.u8())}
	m.ABBA = r.lv()
	if r.err == nil && len(m.ABBA) < 2 {
		return nil, fmt.Errorf("ABBA of %d octets", len(m.ABBA))
	}
	r.optionals(tvAuthRequest, func(ie optIE) error {
		switch ie.iei {
		case 0x21:
			m.RAND = ie.v
		case 0x20:
			if len(ie.v) != 16 {
				return fmt.Errorf("AUTN of %d octets", len(ie.v))
			}
			m.AUTN = ie.v
		}
		return nil
	})
	return m, nil
}

func decodeSecurityModeCommand(r *reader) (Message, error) {
	alg := r.u8()
	m := &SecurityModeCommand{CipheringAlg: alg >> 4 & 7, IntegrityAlg: alg & 7, NgKSI: ngKSIFromHalf(r.u8())}
	v := r.lv()
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if m.ReplayedUESecurityCapability, err = decodeUESecCap(v); err != nil {
		return nil, err
	}
	r.optionals(tvSecurityModeCommand, func(ie optIE) error {
		switch ie.iei {
		case 0xE0:
			m.IMEISVRequest = ie.v[0]&7 == 1
		case 0x36:
			if len(ie.v) < 1 {
				return errors.New("empty additional 5G security information")
			}
			m.RetransmitInitialNAS = ie.v[0]&2 != 0
			m.HorizontalDerivation = ie.v[0]&1 != 0
		case 0x38:
			m.ABBA = ie.v
		}
		return nil
	})
	return m, nil
}

func decodeServiceRequest(r *reader) (Message, error) {
	o := r.u8()
	m := &ServiceRequest{ServiceType: o >> 4, NgKSI: ngKSIFromHalf(o)}
	v := r.lve()
	if r.err != nil {
		return nil, r.err
	}
	id, err := decodeMobileIdentity(v)
	if err != nil {
		return nil, err
	}
	if id.Type != IdentitySTMSI {
		return nil, fmt.Errorf("5G-S-TMSI IE holds a %s", id.Type)
	}
	m.STMSI = id.STMSI
	r.optionals(nil, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x40:
			m.UplinkDataStatus, err = decodePSI(ie.v)
		case 0x50:
			m.PDUSessionStatus, err = decodePSI(ie.v)
		case 0x25:
			m.AllowedPDUSessionStatus, err = decodePSI(ie.v)
		case 0x71:
			m.NASMessageContainer = ie.v
		}
		return err
	})
	return m, nil
}

func decodeULNASTransport(r *reader) (Message, error) {
	m := &ULNASTransport{PayloadContainerType: r.u8() & 0xF}
	m.Payload = r.lve()
	r.optionals(tvULNASTransport, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x12:
			m.PDUSessionID = ie.v[0]
		case 0x59:
			m.OldPDUSessionID = ie.v[0]
		case 0x80:
			m.RequestType = ie.v[0] & 7
		case 0x22:
			s, err := decodeSNSSAI(ie.v)
			if err != nil {
				return err
			}
			m.SNSSAI = &s
		case 0x25:
			m.DNN, err = decodeDNN(ie.v)
		}
		return err
	})
	return m, nil
}
