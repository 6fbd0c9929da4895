package nas

import (
	"errors"
	"fmt"
)

// smHeader starts a plain 5GSM message (TS 24.501 §9.1.1): EPD, PDU
// session identity, PTI, message type.
func smHeader(m SMMessage, size int) *writer {
	w := &writer{b: make([]byte, 0, size)}
	w.raw([]byte{EPD5GSM, m.PDUSessionID(), m.PTI(), byte(m.MessageType())})
	return w
}

// EncodeSM builds the plain 5GSM encoding of m (Encode does the same for
// any message).
func EncodeSM(m SMMessage) ([]byte, error) { return Encode(m) }

func encodeSMMessage(m SMMessage) ([]byte, error) {
	switch m := m.(type) {
	case *PDUSessionEstablishmentRequest:
		w := smHeader(m, 16+len(m.Capability5GSM)+len(m.ExtendedPCO))
		w.raw(m.IntegrityMaxDataRate[:])
		if m.PDUSessionType != 0 {
			w.u8(ieiPDUSessionType | m.PDUSessionType&7)
		}
		if m.SSCMode != 0 {
			w.u8(ieiSSCMode | m.SSCMode&7)
		}
		if m.Capability5GSM != nil {
			w.tlv(ieiCapability5GSM, m.Capability5GSM)
		}
		if m.MaxPacketFilters != 0 {
			if m.MaxPacketFilters > 0x7FF {
				return nil, fmt.Errorf("maximum number of packet filters %d", m.MaxPacketFilters)
			}
			w.u8(ieiMaxPacketFilters)
			w.raw(encodeMaxPacketFilters(m.MaxPacketFilters))
		}
		if m.AlwaysOnRequested {
			w.u8(ieiAlwaysOnReq | 1)
		}
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionEstablishmentAccept:
		return m.encode()
	case *PDUSessionEstablishmentReject:
		w := smHeader(m, 12+len(m.EAPMessage)+len(m.ExtendedPCO))
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		optBackoff(w, m.BackoffTimer)
		if m.AllowedSSCModes != 0 {
			w.u8(ieiAllowedSSCMode | m.AllowedSSCModes&7)
		}
		if m.EAPMessage != nil {
			w.tlve(ieiEAPMessage, m.EAPMessage)
		}
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionModificationRequest:
		return m.encode()
	case *PDUSessionModificationReject:
		w := smHeader(m, 12+len(m.ExtendedPCO))
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		optBackoff(w, m.BackoffTimer)
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionModificationCommand:
		return m.encode()
	case *PDUSessionModificationComplete:
		w := smHeader(m, 8+len(m.ExtendedPCO))
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionModificationCommandReject:
		w := smHeader(m, 8+len(m.ExtendedPCO))
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionReleaseRequest:
		w := smHeader(m, 8+len(m.ExtendedPCO))
		optCause(w, m.Cause)
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionReleaseReject:
		w := smHeader(m, 8+len(m.ExtendedPCO))
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *PDUSessionReleaseCommand:
		w := smHeader(m, 12+len(m.EAPMessage)+len(m.ExtendedPCO))
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		optBackoff(w, m.BackoffTimer)
		if m.EAPMessage != nil {
			w.tlve(ieiEAPMessage, m.EAPMessage)
		}
		optPCO(w, m.ExtendedPCO)
		if m.AccessType != 0 {
			w.u8(ieiAccessTypeSM | uint8(m.AccessType)&3)
		}
		return w.b, nil
	case *PDUSessionReleaseComplete:
		w := smHeader(m, 8+len(m.ExtendedPCO))
		optCause(w, m.Cause)
		optPCO(w, m.ExtendedPCO)
		return w.b, nil
	case *Status5GSM:
		w := smHeader(m, 5)
		if err := mandatoryCause(w, m.Cause); err != nil {
			return nil, err
		}
		return w.b, nil
	}
	return nil, fmt.Errorf("unsupported 5GSM message %T", m)
}

func mandatoryCause(w *writer, c Cause5GSM) error {
	if c == 0 {
		return errors.New("missing 5GSM cause")
	}
	w.u8(uint8(c))
	return nil
}

func optCause(w *writer, c Cause5GSM) {
	if c != 0 {
		w.raw([]byte{ieiSMCause, uint8(c)})
	}
}

func optPCO(w *writer, pco []byte) {
	if pco != nil {
		w.tlve(ieiExtendedPCO, pco)
	}
}

func optBackoff(w *writer, t *GPRSTimer3) {
	if t != nil {
		w.tlv(ieiBackoffTimer, []byte{t.octet()})
	}
}

func optAlwaysOn(w *writer, v *bool) {
	if v != nil {
		o := uint8(ieiAlwaysOnInd)
		if *v {
			o |= 1
		}
		w.u8(o)
	}
}

func (m *PDUSessionEstablishmentAccept) encode() ([]byte, error) {
	if len(m.QoSRules) == 0 {
		return nil, errors.New("no authorized QoS rule")
	}
	rules, err := encodeQoSRules(m.QoSRules)
	if err != nil {
		return nil, fmt.Errorf("authorized QoS rules: %w", err)
	}
	w := smHeader(m, 64+len(rules)+len(m.ExtendedPCO)+len(m.EAPMessage))
	w.u8(m.SSCMode&7<<4 | m.PDUSessionType&7)
	w.lve(rules)
	w.lv(encodeSessionAMBR(m.SessionAMBR))
	optCause(w, m.Cause)
	if m.PDUAddress != nil {
		v, err := encodePDUAddress(m.PDUAddress)
		if err != nil {
			return nil, err
		}
		w.tlv(ieiPDUAddress, v)
	}
	if m.SNSSAI != nil {
		w.b = appendSNSSAI(append(w.b, ieiSNSSAISM), *m.SNSSAI)
	}
	optAlwaysOn(w, m.AlwaysOn)
	if m.EAPMessage != nil {
		w.tlve(ieiEAPMessage, m.EAPMessage)
	}
	if m.QoSFlowDescriptions != nil {
		v, err := encodeQoSFlowDescriptions(m.QoSFlowDescriptions)
		if err != nil {
			return nil, fmt.Errorf("authorized QoS flow descriptions: %w", err)
		}
		w.tlve(ieiQoSFlowDescs, v)
	}
	optPCO(w, m.ExtendedPCO)
	if m.DNN != "" {
		v, err := encodeDNN(m.DNN)
		if err != nil {
			return nil, err
		}
		w.tlv(ieiDNNSM, v)
	}
	return w.b, nil
}

func (m *PDUSessionModificationRequest) encode() ([]byte, error) {
	w := smHeader(m, 32+len(m.Capability5GSM)+len(m.ExtendedPCO))
	if m.Capability5GSM != nil {
		w.tlv(ieiCapability5GSM, m.Capability5GSM)
	}
	optCause(w, m.Cause)
	if m.MaxPacketFilters != 0 {
		if m.MaxPacketFilters > 0x7FF {
			return nil, fmt.Errorf("maximum number of packet filters %d", m.MaxPacketFilters)
		}
		w.u8(ieiMaxPacketFilters)
		w.raw(encodeMaxPacketFilters(m.MaxPacketFilters))
	}
	if m.AlwaysOnRequested {
		w.u8(ieiAlwaysOnReq | 1)
	}
	if m.IntegrityMaxDataRate != nil {
		w.u8(ieiIntegrityMaxRate)
		w.raw(m.IntegrityMaxDataRate[:])
	}
	if err := optQoS(w, m.RequestedQoSRules, m.RequestedQoSFlowDescriptions); err != nil {
		return nil, err
	}
	optPCO(w, m.ExtendedPCO)
	return w.b, nil
}

func (m *PDUSessionModificationCommand) encode() ([]byte, error) {
	w := smHeader(m, 48+len(m.ExtendedPCO))
	optCause(w, m.Cause)
	if m.SessionAMBR != nil {
		w.tlv(ieiSessionAMBR, encodeSessionAMBR(*m.SessionAMBR))
	}
	optAlwaysOn(w, m.AlwaysOn)
	if err := optQoS(w, m.QoSRules, m.QoSFlowDescriptions); err != nil {
		return nil, err
	}
	optPCO(w, m.ExtendedPCO)
	return w.b, nil
}

// optQoS appends the QoS rules (0x7A) and QoS flow descriptions (0x79) IEs
// in the order of TS 24.501 §8.3.7/§8.3.9.
func optQoS(w *writer, rules []QoSRule, flows []QoSFlowDescription) error {
	if rules != nil {
		v, err := encodeQoSRules(rules)
		if err != nil {
			return fmt.Errorf("QoS rules: %w", err)
		}
		w.tlve(ieiQoSRules, v)
	}
	if flows != nil {
		v, err := encodeQoSFlowDescriptions(flows)
		if err != nil {
			return fmt.Errorf("QoS flow descriptions: %w", err)
		}
		w.tlve(ieiQoSFlowDescs, v)
	}
	return nil
}

func (m *ServiceReject) encode() ([]byte, error) {
	if m.Cause == 0 {
		return nil, errors.New("missing 5GMM cause")
	}
	w := header(MsgServiceReject, 16+len(m.EAPMessage))
	w.u8(uint8(m.Cause))
	if m.PDUSessionStatus != nil {
		w.tlv(0x50, psiBytes(*m.PDUSessionStatus))
	}
	if m.T3346 != nil {
		w.tlv(0x5F, []byte{m.T3346.octet()})
	}
	if m.EAPMessage != nil {
		w.tlve(0x78, m.EAPMessage)
	}
	if m.T3448 != nil {
		w.tlv(0x6B, []byte{m.T3448.octet()})
	}
	return w.b, nil
}
