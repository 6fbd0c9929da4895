package nas

import (
	"fmt"
	"net/netip"
)

// 5GSM message types (TS 24.501 Table 9.7.2). They share MsgType with
// 5GMM: the two ranges do not overlap.
const (
	MsgPDUSessionEstablishmentRequest      MsgType = 0xC1
	MsgPDUSessionEstablishmentAccept       MsgType = 0xC2
	MsgPDUSessionEstablishmentReject       MsgType = 0xC3
	MsgPDUSessionModificationRequest       MsgType = 0xC9
	MsgPDUSessionModificationReject        MsgType = 0xCA
	MsgPDUSessionModificationCommand       MsgType = 0xCB
	MsgPDUSessionModificationComplete      MsgType = 0xCC
	MsgPDUSessionModificationCommandReject MsgType = 0xCD
	MsgPDUSessionReleaseRequest            MsgType = 0xD1
	MsgPDUSessionReleaseReject             MsgType = 0xD2
	MsgPDUSessionReleaseCommand            MsgType = 0xD3
	MsgPDUSessionReleaseComplete           MsgType = 0xD4
	MsgStatus5GSM                          MsgType = 0xD6
)

// SMMessage is a plain 5GSM message (TS 24.501 §8.3). Every implementation
// embeds SMHeader.
type SMMessage interface {
	Message
	PDUSessionID() uint8
	PTI() uint8
}

// SMHeader is the 5GSM header after the EPD (TS 24.501 §9.2-§9.4). The
// fields are not called PDUSessionID/PTI because Go forbids a field and a
// method of the same name; the SMMessage methods read them.
type SMHeader struct {
	SessionID     uint8 // PDU session identity (1..15; 0 = no PDU session identity assigned)
	TransactionID uint8 // procedure transaction identity (0 = none, 1..254 UE-assigned, 128..254 network-assigned)
}

// PDUSessionID returns the PDU session identity.
func (h *SMHeader) PDUSessionID() uint8 { return h.SessionID }

// PTI returns the procedure transaction identity.
func (h *SMHeader) PTI() uint8 { return h.TransactionID }

// Cause5GSM is a 5GSM cause value (TS 24.501 §9.11.4.2, Table 9.11.4.2.1).
// Zero means "absent" where a field is optional.
type Cause5GSM uint8

// 5GSM cause values (TS 24.501 Table 9.11.4.2.1; Annex B explains each).
// Names that would clash with the 5GMM causes carry a 5GSM suffix.
const (
	CauseOperatorDeterminedBarring           Cause5GSM = 8
	CauseInsufficientResources5GSM           Cause5GSM = 26
	CauseMissingOrUnknownDNN                 Cause5GSM = 27
	CauseUnknownPDUSessionType               Cause5GSM = 28
	CauseUserAuthFailed                      Cause5GSM = 29 // user authentication or authorization failed
	CauseRequestRejectedUnspecified          Cause5GSM = 31
	CauseServiceOptionNotSupported           Cause5GSM = 32
	CauseRequestedServiceOptionNotSubscribed Cause5GSM = 33
	CausePTIAlreadyInUse                     Cause5GSM = 35
	CauseRegularDeactivation                 Cause5GSM = 36
	CauseQoSNotAccepted                      Cause5GSM = 37
	CauseNetworkFailure                      Cause5GSM = 38
	CauseReactivationRequested               Cause5GSM = 39
	CauseSemanticErrorInTFTOperation         Cause5GSM = 41
	CauseSyntacticalErrorInTFTOperation      Cause5GSM = 42
	CauseInvalidPDUSessionIdentity           Cause5GSM = 43
	CauseSemanticErrorsInPacketFilters       Cause5GSM = 44
	CauseSyntacticalErrorInPacketFilters     Cause5GSM = 45
	CauseOutOfLADNServiceArea                Cause5GSM = 46
	CausePTIMismatch                         Cause5GSM = 47
	CausePDUSessionTypeIPv4OnlyAllowed       Cause5GSM = 50
	CausePDUSessionTypeIPv6OnlyAllowed       Cause5GSM = 51
	CausePDUSessionDoesNotExist              Cause5GSM = 54
	CausePDUSessionTypeIPv4v6OnlyAllowed     Cause5GSM = 57
	CausePDUSessionTypeUnstructuredOnly      Cause5GSM = 58
	CauseUnsupported5QIValue                 Cause5GSM = 59
	CausePDUSessionTypeEthernetOnlyAllowed   Cause5GSM = 61
	CauseInsufficientResourcesForSliceAndDNN Cause5GSM = 67
	CauseNotSupportedSSCMode                 Cause5GSM = 68
	CauseInsufficientResourcesForSlice       Cause5GSM = 69
	CauseMissingOrUnknownDNNInSlice          Cause5GSM = 70
	CauseInvalidPTIValue                     Cause5GSM = 81
	CauseMaxDataRateForIntegrityTooLow       Cause5GSM = 82
	CauseSemanticErrorInQoSOperation         Cause5GSM = 83
	CauseSyntacticalErrorInQoSOperation      Cause5GSM = 84
	CauseInvalidMappedEPSBearerIdentity      Cause5GSM = 85
	CauseSemanticallyIncorrectMessage5GSM    Cause5GSM = 95
	CauseInvalidMandatoryInformation5GSM     Cause5GSM = 96
	CauseMessageTypeNonExistent5GSM          Cause5GSM = 97
	CauseMessageTypeNotCompatible5GSM        Cause5GSM = 98
	CauseIENonExistent5GSM                   Cause5GSM = 99
	CauseConditionalIEError5GSM              Cause5GSM = 100
	CauseMessageNotCompatible5GSM            Cause5GSM = 101
	CauseProtocolErrorUnspecified5GSM        Cause5GSM = 111
)

var cause5GSMNames = map[Cause5GSM]string{
	CauseOperatorDeterminedBarring:           "operator determined barring",
	CauseInsufficientResources5GSM:           "insufficient resources",
	CauseMissingOrUnknownDNN:                 "missing or unknown DNN",
	CauseUnknownPDUSessionType:               "unknown PDU session type",
	CauseUserAuthFailed:                      "user authentication or authorization failed",
	CauseRequestRejectedUnspecified:          "request rejected, unspecified",
	CauseServiceOptionNotSupported:           "service option not supported",
	CauseRequestedServiceOptionNotSubscribed: "requested service option not subscribed",
	CausePTIAlreadyInUse:                     "PTI already in use",
	CauseRegularDeactivation:                 "regular deactivation",
	CauseQoSNotAccepted:                      "5GS QoS not accepted",
	CauseNetworkFailure:                      "network failure",
	CauseReactivationRequested:               "reactivation requested",
	CauseSemanticErrorInTFTOperation:         "semantic error in the TFT operation",
	CauseSyntacticalErrorInTFTOperation:      "syntactical error in the TFT operation",
	CauseInvalidPDUSessionIdentity:           "invalid PDU session identity",
	CauseSemanticErrorsInPacketFilters:       "semantic errors in packet filter(s)",
	CauseSyntacticalErrorInPacketFilters:     "syntactical error in packet filter(s)",
	CauseOutOfLADNServiceArea:                "out of LADN service area",
	CausePTIMismatch:                         "PTI mismatch",
	CausePDUSessionTypeIPv4OnlyAllowed:       "PDU session type IPv4 only allowed",
	CausePDUSessionTypeIPv6OnlyAllowed:       "PDU session type IPv6 only allowed",
	CausePDUSessionDoesNotExist:              "PDU session does not exist",
	CausePDUSessionTypeIPv4v6OnlyAllowed:     "PDU session type IPv4v6 only allowed",
	CausePDUSessionTypeUnstructuredOnly:      "PDU session type Unstructured only allowed",
	CauseUnsupported5QIValue:                 "unsupported 5QI value",
	CausePDUSessionTypeEthernetOnlyAllowed:   "PDU session type Ethernet only allowed",
	CauseInsufficientResourcesForSliceAndDNN: "insufficient resources for specific slice and DNN",
	CauseNotSupportedSSCMode:                 "not supported SSC mode",
	CauseInsufficientResourcesForSlice:       "insufficient resources for specific slice",
	CauseMissingOrUnknownDNNInSlice:          "missing or unknown DNN in a slice",
	CauseInvalidPTIValue:                     "invalid PTI value",
	CauseMaxDataRateForIntegrityTooLow:       "maximum data rate per UE for user-plane integrity protection is too low",
	CauseSemanticErrorInQoSOperation:         "semantic error in the QoS operation",
	CauseSyntacticalErrorInQoSOperation:      "syntactical error in the QoS operation",
	CauseInvalidMappedEPSBearerIdentity:      "invalid mapped EPS bearer identity",
	CauseSemanticallyIncorrectMessage5GSM:    "semantically incorrect message",
	CauseInvalidMandatoryInformation5GSM:     "invalid mandatory information",
	CauseMessageTypeNonExistent5GSM:          "message type non-existent or not implemented",
	CauseMessageTypeNotCompatible5GSM:        "message type not compatible with the protocol state",
	CauseIENonExistent5GSM:                   "information element non-existent or not implemented",
	CauseConditionalIEError5GSM:              "conditional IE error",
	CauseMessageNotCompatible5GSM:            "message not compatible with the protocol state",
	CauseProtocolErrorUnspecified5GSM:        "protocol error, unspecified",
}

func (c Cause5GSM) String() string {
	if s, ok := cause5GSMNames[c]; ok {
		return fmt.Sprintf("#%d %s", uint8(c), s)
	}
	return fmt.Sprintf("#%d", uint8(c))
}

// PDU session type values (TS 24.501 §9.11.4.11).
const (
	PDUSessionTypeIPv4         uint8 = 1
	PDUSessionTypeIPv6         uint8 = 2
	PDUSessionTypeIPv4v6       uint8 = 3
	PDUSessionTypeUnstructured uint8 = 4
	PDUSessionTypeEthernet     uint8 = 5
)

// SSC mode values (TS 24.501 §9.11.4.16).
const (
	SSCMode1 uint8 = 1
	SSCMode2 uint8 = 2
	SSCMode3 uint8 = 3
)

// Integrity protection maximum data rate values (TS 24.501 §9.11.4.7), one
// octet per direction: [0] uplink, [1] downlink.
const (
	IntegrityMaxRate64kbps uint8 = 0x00
	IntegrityMaxRateNull   uint8 = 0x01
	IntegrityMaxRateFull   uint8 = 0xFF
)

// PDUAddress is the PDU address IE (TS 24.501 §9.11.4.10).
type PDUAddress struct {
	Type uint8      // PDUSessionTypeIPv4, PDUSessionTypeIPv6 or PDUSessionTypeIPv4v6
	IPv4 netip.Addr // IPv4 and IPv4v6
	// IPv6InterfaceID is the 8-octet interface identifier for the IPv6
	// link-local address (IPv6 and IPv4v6).
	IPv6InterfaceID [8]byte
}

// SessionAMBR is the session aggregate maximum bit rate (TS 24.501
// §9.11.4.14) in bit/s. Encoding picks the coarsest unit that holds the
// value exactly, else rounds up to the finest unit that fits 16 bits.
type SessionAMBR struct {
	DL, UL uint64
}

// QoS rule operation codes (TS 24.501 §9.11.4.13, Table 9.11.4.13.1).
const (
	QoSRuleCreate               uint8 = 1
	QoSRuleDelete               uint8 = 2
	QoSRuleModifyAddFilters     uint8 = 3
	QoSRuleModifyReplaceFilters uint8 = 4
	QoSRuleModifyDeleteFilters  uint8 = 5
	QoSRuleModifyWithoutFilters uint8 = 6
)

// QoSRule is one QoS rule (TS 24.501 §9.11.4.13).
type QoSRule struct {
	ID        uint8 // QoS rule identifier, 1..255
	Operation uint8 // QoSRuleCreate ...
	Default   bool  // DQR: the default QoS rule
	// Filters: for QoSRuleModifyDeleteFilters only their IDs are coded; for
	// QoSRuleDelete and QoSRuleModifyWithoutFilters there are none.
	Filters []PacketFilter
	// Precedence, Segregation and QFI are absent on the wire for QoSRuleDelete.
	Precedence  uint8
	Segregation bool
	QFI         uint8 // 6 bits
}

// Packet filter directions (TS 24.501 §9.11.4.13).
const (
	FilterDownlink      uint8 = 1
	FilterUplink        uint8 = 2
	FilterBidirectional uint8 = 3
)

// Packet filter component type identifiers (TS 24.501 Table 9.11.4.13.1).
const (
	ComponentMatchAll          uint8 = 0x01
	ComponentIPv4Remote        uint8 = 0x10 // address + mask, 8 octets
	ComponentIPv4Local         uint8 = 0x11 // address + mask, 8 octets
	ComponentIPv6Remote        uint8 = 0x21 // address + prefix length, 17 octets
	ComponentIPv6Local         uint8 = 0x23 // address + prefix length, 17 octets
	ComponentProtocol          uint8 = 0x30 // protocol identifier / next header, 1 octet
	ComponentLocalPort         uint8 = 0x40 // 2 octets
	ComponentLocalPortRange    uint8 = 0x41 // low, high: 4 octets
	ComponentRemotePort        uint8 = 0x50 // 2 octets
	ComponentRemotePortRange   uint8 = 0x51 // low, high: 4 octets
	ComponentSPI               uint8 = 0x60 // 4 octets
	ComponentTypeOfService     uint8 = 0x70 // value + mask, 2 octets
	ComponentFlowLabel         uint8 = 0x80 // 3 octets
	ComponentDestinationMAC    uint8 = 0x81 // 6 octets
	ComponentSourceMAC         uint8 = 0x82 // 6 octets
	Component8021QCTagVID      uint8 = 0x83 // 2 octets
	Component8021QSTagVID      uint8 = 0x84 // 2 octets
	Component8021QCTagPCPDEI   uint8 = 0x85 // 1 octet
	Component8021QSTagPCPDEI   uint8 = 0x86 // 1 octet
	ComponentEthertype         uint8 = 0x87 // 2 octets
	ComponentDestinationMACRng uint8 = 0x88 // 12 octets
	ComponentSourceMACRng      uint8 = 0x89 // 12 octets
)

// PacketFilter is one packet filter of a QoS rule (TS 24.501 §9.11.4.13).
// Components are the raw packet filter contents (type identifier + value
// sequences); MatchAll stands for the lone match-all component and is what
// decoding reports for it (Components then nil). Build filters with
// MatchAllFilter and IPv4RemoteFilter, read them with ParseFilterComponents.
type PacketFilter struct {
	ID         uint8 // 4 bits
	Direction  uint8 // FilterDownlink, FilterUplink, FilterBidirectional
	Components []byte
	MatchAll   bool
}

// FilterComponent is one parsed packet filter component.
type FilterComponent struct {
	Type  uint8
	Value []byte
}

// QoS flow description operation codes (TS 24.501 §9.11.4.12).
const (
	QoSFlowCreate uint8 = 1
	QoSFlowDelete uint8 = 2
	QoSFlowModify uint8 = 3
)

// QoSFlowDescription is one QoS flow description (TS 24.501 §9.11.4.12).
type QoSFlowDescription struct {
	QFI       uint8 // 6 bits
	Operation uint8 // QoSFlowCreate, QoSFlowDelete, QoSFlowModify
	// E is the E bit of QoSFlowModify: true = the parameters replace all
	// previous ones, false = they extend them. For create and delete the bit
	// only says whether parameters follow, so the encoder derives it and
	// decoding leaves E false.
	E      bool
	FiveQI uint8     // 0 = absent
	GFBR   *BitRates // guaranteed flow bit rate; nil = absent
	MFBR   *BitRates // maximum flow bit rate; nil = absent
	// AveragingWindow in milliseconds; 0 = absent.
	AveragingWindow uint16
	// EPSBearerIDs are the EPS bearer identity parameters (4 bits each).
	EPSBearerIDs []uint8
}

// BitRates is an uplink/downlink pair of flow bit rates in bit/s, coded
// with the §9.11.4.14 unit table (TS 24.501 §9.11.4.12).
type BitRates struct {
	UL, DL uint64
}

// GPRSTimer2 is a GPRS timer 2 value (TS 24.008 §10.5.7.4), used for T3346
// and T3448.
type GPRSTimer2 struct {
	Unit  uint8 // 3 bits: 0=2s 1=1min 2=6min 7=deactivated
	Value uint8 // 5 bits
}
