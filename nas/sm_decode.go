package nas

import (
	"errors"
	"fmt"
)

// 5GSM optional IEIs (TS 24.501 §8.3); type-1 IEIs are given by their high
// nibble.
const (
	ieiSMCause          = 0x59 // TV 2
	ieiMaxPacketFilters = 0x55 // TV 3
	ieiIntegrityMaxRate = 0x13 // TV 3
	ieiRQTimer          = 0x56 // TV 2, not kept
	ieiPDUSessionType   = 0x90
	ieiSSCMode          = 0xA0
	ieiAlwaysOnReq      = 0xB0
	ieiAlwaysOnInd      = 0x80
	ieiAllowedSSCMode   = 0xF0
	ieiAccessTypeSM     = 0xD0
	ieiCapability5GSM   = 0x28
	ieiPDUAddress       = 0x29
	ieiSessionAMBR      = 0x2A
	ieiSNSSAISM         = 0x22
	ieiDNNSM            = 0x25
	ieiBackoffTimer     = 0x37
	ieiEAPMessage       = 0x78
	ieiQoSFlowDescs     = 0x79
	ieiQoSRules         = 0x7A
	ieiExtendedPCO      = 0x7B
)

// Type-3 (TV) optional IEs of 5GSM messages with their total length.
var (
	tvSMRequest    = map[uint8]int{ieiMaxPacketFilters: 3}
	tvSMAccept     = map[uint8]int{ieiSMCause: 2, ieiRQTimer: 2}
	tvSMModRequest = map[uint8]int{ieiSMCause: 2, ieiMaxPacketFilters: 3, ieiIntegrityMaxRate: 3}
	tvSMModCommand = map[uint8]int{ieiSMCause: 2, ieiRQTimer: 2}
	tvSMCause      = map[uint8]int{ieiSMCause: 2}
)

// qosIE makes an error in an optional QoS rules or QoS flow descriptions IE
// fail the message instead of dropping the IE (TS 24.501 §7.7.1): the
// procedures answer errors in these IEs with causes of their own (#83, #84,
// #44, #45; §6.3.2.4 for the UE, §6.4.2 for the SMF), which a message
// without the IE would hide.
func qosIE(err error) error { return failMessage(err) }

// ErrNot5GSM is returned by DecodeSM for a PDU whose EPD is not 5GSM.
var ErrNot5GSM = errors.New("not a 5GSM message")

// DecodeSM parses a plain 5GSM message (the N1 SM container of UL/DL NAS
// TRANSPORT). It never panics, and treats optional IEs as Decode does.
// Byte-slice fields alias b.
func DecodeSM(b []byte) (m SMMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("nas decode: malformed 5GSM message (%v)", p)
		}
	}()
	if len(b) < 1 || b[0] != EPD5GSM {
		if len(b) < 1 {
			return nil, fmt.Errorf("nas decode: %w", ErrShort)
		}
		return nil, fmt.Errorf("nas decode: EPD 0x%02x: %w", b[0], ErrNot5GSM)
	}
	return decodeSM(b)
}

func decodeSM(b []byte) (SMMessage, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("nas decode 5GSM: %w", ErrShort)
	}
	h := SMHeader{SessionID: b[1], TransactionID: b[2]}
	t := MsgType(b[3])
	r := &reader{b: b[4:]}
	m, err := decodeSMBody(t, h, r)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, fmt.Errorf("nas decode %s: %w", t, err)
	}
	return m, nil
}

func decodeSMBody(t MsgType, h SMHeader, r *reader) (SMMessage, error) {
	switch t {
	case MsgPDUSessionEstablishmentRequest:
		return decodeEstablishmentRequest(h, r)
	case MsgPDUSessionEstablishmentAccept:
		return decodeEstablishmentAccept(h, r)
	case MsgPDUSessionEstablishmentReject:
		m := &PDUSessionEstablishmentReject{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, func(ie optIE) (err error) {
			switch ie.iei {
			case ieiBackoffTimer:
				m.BackoffTimer, err = decodeGPRSTimer3(ie.v)
			case ieiAllowedSSCMode:
				m.AllowedSSCModes = ie.v[0] & 7
			case ieiEAPMessage:
				m.EAPMessage = ie.v
			case ieiExtendedPCO:
				m.ExtendedPCO = ie.v
			}
			return err
		})
		return m, nil
	case MsgPDUSessionModificationRequest:
		return decodeModificationRequest(h, r)
	case MsgPDUSessionModificationReject:
		m := &PDUSessionModificationReject{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, func(ie optIE) (err error) {
			switch ie.iei {
			case ieiBackoffTimer:
				m.BackoffTimer, err = decodeGPRSTimer3(ie.v)
			case ieiExtendedPCO:
				m.ExtendedPCO = ie.v
			}
			return err
		})
		return m, nil
	case MsgPDUSessionModificationCommand:
		return decodeModificationCommand(h, r)
	case MsgPDUSessionModificationComplete:
		m := &PDUSessionModificationComplete{SMHeader: h}
		r.optionals(nil, pcoOnly(&m.ExtendedPCO))
		return m, nil
	case MsgPDUSessionModificationCommandReject:
		m := &PDUSessionModificationCommandReject{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, pcoOnly(&m.ExtendedPCO))
		return m, nil
	case MsgPDUSessionReleaseRequest:
		m := &PDUSessionReleaseRequest{SMHeader: h}
		r.optionals(tvSMCause, causeAndPCO(&m.Cause, &m.ExtendedPCO))
		return m, nil
	case MsgPDUSessionReleaseReject:
		m := &PDUSessionReleaseReject{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, pcoOnly(&m.ExtendedPCO))
		return m, nil
	case MsgPDUSessionReleaseCommand:
		m := &PDUSessionReleaseCommand{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, func(ie optIE) (err error) {
			switch ie.iei {
			case ieiBackoffTimer:
				m.BackoffTimer, err = decodeGPRSTimer3(ie.v)
			case ieiEAPMessage:
				m.EAPMessage = ie.v
			case ieiExtendedPCO:
				m.ExtendedPCO = ie.v
			case ieiAccessTypeSM:
				m.AccessType = AccessType(ie.v[0] & 3)
			}
			return err
		})
		return m, nil
	case MsgPDUSessionReleaseComplete:
		m := &PDUSessionReleaseComplete{SMHeader: h}
		r.optionals(tvSMCause, causeAndPCO(&m.Cause, &m.ExtendedPCO))
		return m, nil
	case MsgStatus5GSM:
		m := &Status5GSM{SMHeader: h, Cause: Cause5GSM(r.u8())}
		r.optionals(nil, skip)
		return m, nil
	}
	return nil, ErrUnknownMessage
}

func pcoOnly(pco *[]byte) func(optIE) error {
	return func(ie optIE) error {
		if ie.iei == ieiExtendedPCO {
			*pco = ie.v
		}
		return nil
	}
}

func causeAndPCO(c *Cause5GSM, pco *[]byte) func(optIE) error {
	return func(ie optIE) error {
		switch ie.iei {
		case ieiSMCause:
			*c = Cause5GSM(ie.v[0])
		case ieiExtendedPCO:
			*pco = ie.v
		}
		return nil
	}
}

func decodeEstablishmentRequest(h SMHeader, r *reader) (SMMessage, error) {
	m := &PDUSessionEstablishmentRequest{SMHeader: h}
	if v := r.n(2); v != nil {
		m.IntegrityMaxDataRate = [2]byte(v)
	}
	r.optionals(tvSMRequest, func(ie optIE) error {
		switch ie.iei {
		case ieiPDUSessionType:
			m.PDUSessionType = ie.v[0] & 7
		case ieiSSCMode:
			m.SSCMode = ie.v[0] & 7
		case ieiAlwaysOnReq:
			m.AlwaysOnRequested = ie.v[0]&1 != 0
		case ieiCapability5GSM:
			m.Capability5GSM = ie.v
		case ieiMaxPacketFilters:
			m.MaxPacketFilters = decodeMaxPacketFilters(ie.v)
		case ieiExtendedPCO:
			m.ExtendedPCO = ie.v
		}
		return nil
	})
	return m, nil
}

func decodeEstablishmentAccept(h SMHeader, r *reader) (SMMessage, error) {
	// TS 24.501 §8.3.2: selected PDU session type in bits 4-1, selected
	// SSC mode in bits 8-5 of the first octet.
	o := r.u8()
	m := &PDUSessionEstablishmentAccept{SMHeader: h, PDUSessionType: o & 7, SSCMode: o >> 4 & 7}
	rules := r.lve()
	ambr := r.lv()
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if m.QoSRules, err = decodeQoSRules(rules); err != nil {
		return nil, fmt.Errorf("authorized QoS rules: %w", err)
	}
	if m.SessionAMBR, err = decodeSessionAMBR(ambr); err != nil {
		return nil, err
	}
	r.optionals(tvSMAccept, func(ie optIE) (err error) {
		switch ie.iei {
		case ieiSMCause:
			m.Cause = Cause5GSM(ie.v[0])
		case ieiPDUAddress:
			m.PDUAddress, err = decodePDUAddress(ie.v)
		case ieiSNSSAISM:
			s, err := decodeSNSSAI(ie.v)
			if err != nil {
				return err
			}
			m.SNSSAI = &s
		case ieiAlwaysOnInd:
			v := ie.v[0]&1 != 0
			m.AlwaysOn = &v
		case ieiEAPMessage:
			m.EAPMessage = ie.v
		case ieiQoSFlowDescs:
			m.QoSFlowDescriptions, err = decodeQoSFlowDescriptions(ie.v)
			err = qosIE(err)
		case ieiExtendedPCO:
			m.ExtendedPCO = ie.v
		case ieiDNNSM:
			m.DNN, err = decodeDNN(ie.v)
		}
		return err
	})
	return m, nil
}

func decodeModificationRequest(h SMHeader, r *reader) (SMMessage, error) {
	m := &PDUSessionModificationRequest{SMHeader: h}
	r.optionals(tvSMModRequest, func(ie optIE) (err error) {
		switch ie.iei {
		case ieiCapability5GSM:
			m.Capability5GSM = ie.v
		case ieiSMCause:
			m.Cause = Cause5GSM(ie.v[0])
		case ieiMaxPacketFilters:
			m.MaxPacketFilters = decodeMaxPacketFilters(ie.v)
		case ieiAlwaysOnReq:
			m.AlwaysOnRequested = ie.v[0]&1 != 0
		case ieiIntegrityMaxRate:
			v := [2]byte(ie.v)
			m.IntegrityMaxDataRate = &v
		case ieiQoSRules:
			m.RequestedQoSRules, err = decodeQoSRules(ie.v)
			err = qosIE(err)
		case ieiQoSFlowDescs:
			m.RequestedQoSFlowDescriptions, err = decodeQoSFlowDescriptions(ie.v)
			err = qosIE(err)
		case ieiExtendedPCO:
			m.ExtendedPCO = ie.v
		}
		return err
	})
	return m, nil
}

func decodeModificationCommand(h SMHeader, r *reader) (SMMessage, error) {
	m := &PDUSessionModificationCommand{SMHeader: h}
	r.optionals(tvSMModCommand, func(ie optIE) (err error) {
		switch ie.iei {
		case ieiSMCause:
			m.Cause = Cause5GSM(ie.v[0])
		case ieiSessionAMBR:
			a, err := decodeSessionAMBR(ie.v)
			if err != nil {
				return err
			}
			m.SessionAMBR = &a
		case ieiAlwaysOnInd:
			v := ie.v[0]&1 != 0
			m.AlwaysOn = &v
		case ieiQoSRules:
			m.QoSRules, err = decodeQoSRules(ie.v)
			err = qosIE(err)
		case ieiQoSFlowDescs:
			m.QoSFlowDescriptions, err = decodeQoSFlowDescriptions(ie.v)
			err = qosIE(err)
		case ieiExtendedPCO:
			m.ExtendedPCO = ie.v
		}
		return err
	})
	return m, nil
}

func decodeServiceReject(r *reader) (Message, error) {
	m := &ServiceReject{Cause: Cause5GMM(r.u8())}
	r.optionals(nil, func(ie optIE) (err error) {
		switch ie.iei {
		case 0x50:
			m.PDUSessionStatus, err = decodePSI(ie.v)
		case 0x5F:
			m.T3346, err = decodeGPRSTimer2(ie.v)
		case 0x78:
			m.EAPMessage = ie.v
		case 0x6B:
			m.T3448, err = decodeGPRSTimer2(ie.v)
		}
		return err
	})
	return m, nil
}
