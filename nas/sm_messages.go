package nas

import "github.com/tern5g/tern/identity"

// 5GSM messages (TS 24.501 §8.3). Optional IEs: nil / zero = absent unless
// a comment says otherwise. ExtendedPCO is the raw value of the extended
// protocol configuration options IE (TS 24.008 §10.5.6.3A).

// PDUSessionEstablishmentRequest (TS 24.501 §8.3.1).
type PDUSessionEstablishmentRequest struct {
	SMHeader
	IntegrityMaxDataRate [2]byte // [0] uplink, [1] downlink: IntegrityMaxRate*
	PDUSessionType       uint8   // optional; PDUSessionTypeIPv4 ...
	SSCMode              uint8   // optional; SSCMode1 ...
	Capability5GSM       []byte  // optional, raw 5GSM capability (§9.11.4.1)
	MaxPacketFilters     uint16  // optional, 11 bits (§9.11.4.9); 0 = absent
	AlwaysOnRequested    bool    // always-on PDU session requested (§9.11.4.4)
	ExtendedPCO          []byte
}

// PDUSessionEstablishmentAccept (TS 24.501 §8.3.2).
type PDUSessionEstablishmentAccept struct {
	SMHeader
	PDUSessionType uint8     // selected PDU session type
	SSCMode        uint8     // selected SSC mode
	QoSRules       []QoSRule // authorized QoS rules, at least one
	SessionAMBR    SessionAMBR
	Cause          Cause5GSM // optional
	PDUAddress     *PDUAddress
	SNSSAI         *identity.SNSSAI
	// AlwaysOn is the always-on PDU session indication (§9.11.4.3): nil =
	// absent, true = required, false = not allowed.
	AlwaysOn            *bool
	EAPMessage          []byte
	QoSFlowDescriptions []QoSFlowDescription // authorized QoS flow descriptions
	ExtendedPCO         []byte
	DNN                 string // "" = absent
}

// PDUSessionEstablishmentReject (TS 24.501 §8.3.3).
type PDUSessionEstablishmentReject struct {
	SMHeader
	Cause        Cause5GSM
	BackoffTimer *GPRSTimer3
	// AllowedSSCModes (§9.11.4.5): bit 0 SSC mode 1, bit 1 mode 2, bit 2
	// mode 3; 0 = absent.
	AllowedSSCModes uint8
	EAPMessage      []byte
	ExtendedPCO     []byte
}

// PDUSessionModificationRequest (TS 24.501 §8.3.7).
type PDUSessionModificationRequest struct {
	SMHeader
	Capability5GSM               []byte
	Cause                        Cause5GSM
	MaxPacketFilters             uint16
	AlwaysOnRequested            bool
	IntegrityMaxDataRate         *[2]byte
	RequestedQoSRules            []QoSRule
	RequestedQoSFlowDescriptions []QoSFlowDescription
	ExtendedPCO                  []byte
}

// PDUSessionModificationReject (TS 24.501 §8.3.8).
type PDUSessionModificationReject struct {
	SMHeader
	Cause        Cause5GSM
	BackoffTimer *GPRSTimer3
	ExtendedPCO  []byte
}

// PDUSessionModificationCommand (TS 24.501 §8.3.9).
type PDUSessionModificationCommand struct {
	SMHeader
	Cause               Cause5GSM
	SessionAMBR         *SessionAMBR
	AlwaysOn            *bool
	QoSRules            []QoSRule            // authorized QoS rules
	QoSFlowDescriptions []QoSFlowDescription // authorized QoS flow descriptions
	ExtendedPCO         []byte
}

// PDUSessionModificationComplete (TS 24.501 §8.3.10).
type PDUSessionModificationComplete struct {
	SMHeader
	ExtendedPCO []byte
}

// PDUSessionModificationCommandReject (TS 24.501 §8.3.11).
type PDUSessionModificationCommandReject struct {
	SMHeader
	Cause       Cause5GSM
	ExtendedPCO []byte
}

// PDUSessionReleaseRequest (TS 24.501 §8.3.12).
type PDUSessionReleaseRequest struct {
	SMHeader
	Cause       Cause5GSM // optional
	ExtendedPCO []byte
}

// PDUSessionReleaseReject (TS 24.501 §8.3.13).
type PDUSessionReleaseReject struct {
	SMHeader
	Cause       Cause5GSM
	ExtendedPCO []byte
}

// PDUSessionReleaseCommand (TS 24.501 §8.3.14).
type PDUSessionReleaseCommand struct {
	SMHeader
	Cause        Cause5GSM
	BackoffTimer *GPRSTimer3
	EAPMessage   []byte
	ExtendedPCO  []byte
	AccessType   AccessType // optional; 0 = absent
}

// PDUSessionReleaseComplete (TS 24.501 §8.3.15).
type PDUSessionReleaseComplete struct {
	SMHeader
	Cause       Cause5GSM // optional
	ExtendedPCO []byte
}

// Status5GSM is the 5GSM STATUS message (TS 24.501 §8.3.16).
type Status5GSM struct {
	SMHeader
	Cause Cause5GSM
}

// ServiceReject (TS 24.501 §8.2.18), a 5GMM message.
type ServiceReject struct {
	Cause            Cause5GMM
	PDUSessionStatus *uint16     // optional
	T3346            *GPRSTimer2 // optional
	EAPMessage       []byte      // optional
	T3448            *GPRSTimer2 // optional
}

func (*PDUSessionEstablishmentRequest) MessageType() MsgType {
	return MsgPDUSessionEstablishmentRequest
}
func (*PDUSessionEstablishmentAccept) MessageType() MsgType {
	return MsgPDUSessionEstablishmentAccept
}
func (*PDUSessionEstablishmentReject) MessageType() MsgType {
	return MsgPDUSessionEstablishmentReject
}
func (*PDUSessionModificationRequest) MessageType() MsgType {
	return MsgPDUSessionModificationRequest
}
func (*PDUSessionModificationReject) MessageType() MsgType {
	return MsgPDUSessionModificationReject
}
func (*PDUSessionModificationCommand) MessageType() MsgType {
	return MsgPDUSessionModificationCommand
}
func (*PDUSessionModificationComplete) MessageType() MsgType {
	return MsgPDUSessionModificationComplete
}
func (*PDUSessionModificationCommandReject) MessageType() MsgType {
	return MsgPDUSessionModificationCommandReject
}
func (*PDUSessionReleaseRequest) MessageType() MsgType  { return MsgPDUSessionReleaseRequest }
func (*PDUSessionReleaseReject) MessageType() MsgType   { return MsgPDUSessionReleaseReject }
func (*PDUSessionReleaseCommand) MessageType() MsgType  { return MsgPDUSessionReleaseCommand }
func (*PDUSessionReleaseComplete) MessageType() MsgType { return MsgPDUSessionReleaseComplete }
func (*Status5GSM) MessageType() MsgType                { return MsgStatus5GSM }
func (*ServiceReject) MessageType() MsgType             { return MsgServiceReject }
