package smf

import (
	"fmt"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// defaultQoSRule is the default QoS rule of a session: match-all,
// bidirectional, on the default QoS flow (TS 24.501 §6.2.5.1.1.2, §9.11.4.13).
func defaultQoSRule() nas.QoSRule {
	return nas.QoSRule{
		ID:         defaultQoSRuleID,
		Operation:  nas.QoSRuleCreate,
		Default:    true,
		Filters:    []nas.PacketFilter{{ID: defaultFilterID, Direction: nas.FilterBidirectional, MatchAll: true}},
		Precedence: defaultPrecedence,
		QFI:        defaultQFI,
	}
}

// flowDescription is the authorized QoS flow description of the default
// flow (TS 24.501 §9.11.4.12) with the given operation.
func flowDescription(op uint8, q qos) nas.QoSFlowDescription {
	return nas.QoSFlowDescription{QFI: defaultQFI, Operation: op, E: true, FiveQI: q.fiveQI}
}

// establishmentAccept builds the PDU SESSION ESTABLISHMENT ACCEPT (TS 24.501
// §6.4.1.3, §8.3.2).
func (c *smContext) establishmentAccept() ([]byte, error) {
	sl := c.slice
	m := &nas.PDUSessionEstablishmentAccept{
		SMHeader:            nas.SMHeader{SessionID: c.psi, TransactionID: c.pti},
		PDUSessionType:      nas.PDUSessionTypeIPv4,
		SSCMode:             nas.SSCMode1,
		QoSRules:            []nas.QoSRule{defaultQoSRule()},
		SessionAMBR:         c.qos.ambr,
		Cause:               c.typeCause,
		PDUAddress:          &nas.PDUAddress{Type: nas.PDUSessionTypeIPv4, IPv4: c.ueIP},
		SNSSAI:              &sl,
		QoSFlowDescriptions: []nas.QoSFlowDescription{flowDescription(nas.QoSFlowCreate, c.qos)},
		ExtendedPCO:         c.pco,
		DNN:                 c.dnn.name,
	}
	return encodeNAS(m)
}

func establishmentReject(psi, pti uint8, cause nas.Cause5GSM) ([]byte, error) {
	m := &nas.PDUSessionEstablishmentReject{SMHeader: nas.SMHeader{SessionID: psi, TransactionID: pti}, Cause: cause}
	if cause == nas.CauseNotSupportedSSCMode {
		m.AllowedSSCModes = 1 // SSC mode 1 only (TS 24.501 §6.4.1.4.1)
	}
	return encodeNAS(m)
}

func encodeNAS(m nas.Message) ([]byte, error) {
	b, err := nas.Encode(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.MessageType(), err)
	}
	return b, nil
}

// ngapQoSFlow is the default flow as an NGAP QoS Flow Setup Request Item
// (TS 38.413 §9.3.4.1): non-dynamic 5QI and ARP.
func ngapQoSFlow(q qos) ngap.QoSFlowSetupRequestItem {
	return ngap.QoSFlowSetupRequestItem{
		QFI:              defaultQFI,
		FiveQI:           q.fiveQI,
		PriorityLevelARP: uint8(q.arp.PriorityLevel),
		PreemptionCap:    q.arp.PreemptCap == models.PreemptionCapability_MAY_PREEMPT,
		PreemptionVuln:   q.arp.PreemptVuln != models.PreemptionVulnerability_NOT_PREEMPTABLE,
	}
}

// setupRequestTransfer is the PDU Session Resource Setup Request Transfer
// (TS 38.413 §9.3.4.1): session AMBR, UPF N3 tunnel, type, QoS flow.
func (c *smContext) setupRequestTransfer() ([]byte, error) {
	b, err := ngap.EncodeSetupRequestTransfer(&ngap.PDUSessionResourceSetupRequestTransfer{
		SessionAMBR:    &ngap.AMBR{DL: c.qos.ambr.DL, UL: c.qos.ambr.UL},
		ULTunnel:       c.ulTunnel,
		PDUSessionType: ngap.PDUSessionTypeIPv4,
		QoSFlows:       []ngap.QoSFlowSetupRequestItem{ngapQoSFlow(c.qos)},
	})
	if err != nil {
		return nil, fmt.Errorf("encode setup request transfer: %w", err)
	}
	return b, nil
}

// NGAP cause values of the NAS group (TS 38.413 §9.3.1.2).
const ngapCauseNASNormalRelease = 0

func releaseCommandTransfer() ([]byte, error) {
	b, err := ngap.EncodeReleaseCommandTransfer(&ngap.PDUSessionResourceReleaseCommandTransfer{
		Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngapCauseNASNormalRelease},
	})
	if err != nil {
		return nil, fmt.Errorf("encode release command transfer: %w", err)
	}
	return b, nil
}

// n1n2 is one Namf_Communication_N1N2MessageTransfer to send.
type n1n2 struct {
	n1     []byte
	n2     []byte
	n2Type models.Amf_Comm_NgapIeType
	// For a UE that may be CM-IDLE (downlink data, TS 23.502 §4.2.3.3
	// step 3a): the ARP the AMF derives the paging priority from, and
	// where it reports that the UE could not be reached.
	arp        *models.Arp
	failureURI string
}

// request builds the transfer body (TS 29.518 §6.1.6.2.4) for c.
func (m n1n2) request(c *smContext) *sbi.N1N2Message {
	d := &models.Amf_Comm_N1N2MessageTransferReqData{PduSessionId: int32(c.psi),
		Arp: m.arp, N1n2FailureTxfNotifURI: m.failureURI}
	if m.arp != nil {
		d.Var5qi = int32(c.qos.fiveQI)
	}
	if m.n1 != nil {
		d.N1MessageContainer = &models.Amf_Comm_N1MessageContainer{
			N1MessageClass:   models.Amf_Comm_N1MessageClass_SM,
			N1MessageContent: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM},
		}
	}
	if m.n2 != nil {
		sl := sbi.SNSSAIToModel(c.slice)
		d.N2InfoContainer = &models.Amf_Comm_N2InfoContainer{
			N2InformationClass: models.Amf_Comm_N2InformationClass_SM,
			SmInfo: &models.Amf_Comm_N2SmInformation{
				PduSessionId: int32(c.psi),
				SNssai:       &sl,
				N2InfoContent: &models.Amf_Comm_N2InfoContent{
					NgapIeType: m.n2Type,
					NgapData:   &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM},
				},
			},
		}
	}
	return &sbi.N1N2Message{Data: d, N1Msg: m.n1, N2Info: m.n2}
}

// updated is an SMContextUpdated answer with optional N1/N2 parts.
func updated(n1, n2 []byte, n2Type models.Smf_PDUSess_N2SmInfoType, up models.Smf_PDUSess_UpCnxState) *sbi.SMContextUpdated {
	d := &models.Smf_PDUSess_SmContextUpdatedData{UpCnxState: up}
	if n1 != nil {
		d.N1SmMsg = &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}
	}
	if n2 != nil {
		d.N2SmInfo = &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}
		d.N2SmInfoType = n2Type
	}
	return &sbi.SMContextUpdated{Data: d, N1SmMsg: n1, N2SmInfo: n2}
}

// rejectError is the CreateSMContext error carrying a PDU SESSION
// ESTABLISHMENT REJECT (TS 29.502 §5.2.2.2.2, TS 23.502 §4.3.2.2.1 step 3).
func (s *SMF) rejectError(psi, pti uint8, cause nas.Cause5GSM, status int, appCause, detail string) error {
	s.stats.rejected.Add(1)
	n1, err := establishmentReject(psi, pti, cause)
	if err != nil {
		return sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
	}
	return &sbi.SMContextError{
		Problem: sbi.NewProblem(status, appCause, "5GSM cause %s: %s", cause, detail),
		N1SmMsg: n1,
	}
}
