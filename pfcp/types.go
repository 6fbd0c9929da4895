// Package pfcp is tern's N4 interface (TS 29.244): our own message and IE
// structs, a codec over github.com/wmnsk/go-pfcp, and two bindings of the
// same service interfaces: Direct (a plain in-process call) and a UDP
// Endpoint (PFCP on the wire, port 8805).
//
// Conventions for optional IEs: a pointer or slice that is nil, a string that
// is empty, or a netip.Addr that is invalid means "IE absent". A few integer
// fields use 0 for "absent"; their comments say so.
package pfcp

import (
	"fmt"
	"net/netip"
	"time"
)

// Port is the registered PFCP UDP port (TS 29.244 §4.2.2).
const Port = 8805

// NodeID is the Node ID IE (§8.2.38): an IPv4/IPv6 address or an FQDN.
type NodeID struct {
	IP   netip.Addr
	FQDN string
}

// String returns the address or the FQDN.
func (n NodeID) String() string {
	if n.IP.IsValid() {
		return n.IP.String()
	}
	return n.FQDN
}

// FSEID is the F-SEID IE (§8.2.37).
type FSEID struct {
	SEID uint64
	IPv4 netip.Addr
}

// FTEID is the F-TEID IE (§8.2.3). With Choose the CP asks the UP function to
// allocate the TEID and address (CH flag); ChooseID != 0 sets the CHID flag so
// that PDRs with the same Choose ID share one allocation. (A Choose ID of 0
// therefore cannot be expressed; tern numbers them from 1.)
type FTEID struct {
	TEID     uint32
	IPv4     netip.Addr
	Choose   bool
	ChooseID uint8
}

// Interface is the Source Interface (§8.2.2) / Destination Interface (§8.2.24) value.
type Interface uint8

// Interface values (§8.2.2, §8.2.24).
const (
	InterfaceAccess     Interface = 0
	InterfaceCore       Interface = 1
	InterfaceSGiLAN     Interface = 2 // SGi-LAN / N6-LAN
	InterfaceCPFunction Interface = 3
)

func (i Interface) String() string {
	switch i {
	case InterfaceAccess:
		return "access"
	case InterfaceCore:
		return "core"
	case InterfaceSGiLAN:
		return "sgi-lan"
	case InterfaceCPFunction:
		return "cp-function"
	}
	return fmt.Sprintf("interface(%d)", uint8(i))
}

// UEIPAddress is the UE IP Address IE (§8.2.62), IPv4 only.
type UEIPAddress struct {
	IPv4        netip.Addr
	Destination bool // S/D flag: true = destination address (DL PDRs)
}

// SDFFilter is the SDF Filter IE (§8.2.5) with a Flow Description.
type SDFFilter struct {
	FlowDescription string // IPFilterRule, e.g. "permit out ip from any to assigned"
	ID              uint32 // SDF Filter ID (BID flag); 0 = absent
}

// PDI is the Packet Detection Information grouped IE (§7.5.2.2-2).
type PDI struct {
	SourceInterface Interface
	FTEID           *FTEID
	NetworkInstance string
	UEIP            *UEIPAddress
	SDFFilters      []SDFFilter
	QFIs            []uint8
}

// Outer Header Removal descriptions (§8.2.64).
const (
	OuterHeaderRemovalGTPUUDPIPv4 uint8 = 0
	OuterHeaderRemovalGTPUUDPIPv6 uint8 = 1
	OuterHeaderRemovalUDPIPv4     uint8 = 2
	OuterHeaderRemovalUDPIPv6     uint8 = 3
	OuterHeaderRemovalIPv4        uint8 = 4
	OuterHeaderRemovalIPv6        uint8 = 5
	OuterHeaderRemovalGTPUUDPIP   uint8 = 6
)

// CreatePDR is the Create PDR grouped IE (§7.5.2.2).
type CreatePDR struct {
	ID                 uint16
	Precedence         uint32
	PDI                PDI
	OuterHeaderRemoval *uint8
	// FARID is sent unless NoFARID. Rule IDs have no reserved value
	// (§8.2.74): 0 names FAR 0, so absence is a flag of its own, set by
	// the decoder when the IE is not there.
	FARID   uint32
	NoFARID bool
	QERIDs  []uint32
	URRIDs  []uint32
}

// UpdatePDR is the Update PDR grouped IE (§7.5.4.2); nil = unchanged.
type UpdatePDR struct {
	ID                 uint16
	Precedence         *uint32
	PDI                *PDI
	OuterHeaderRemoval *uint8
	FARID              *uint32
	QERIDs             []uint32
	URRIDs             []uint32
}

// ApplyAction is the Apply Action IE (§8.2.26): octet 5 in the low byte,
// octet 6 in the high byte.
type ApplyAction uint16

// Apply Action flags (§8.2.26 bit order).
const (
	ActionDrop      ApplyAction = 1 << 0 // DROP
	ActionForward   ApplyAction = 1 << 1 // FORW
	ActionBuffer    ApplyAction = 1 << 2 // BUFF
	ActionNotifyCP  ApplyAction = 1 << 3 // NOCP
	ActionDuplicate ApplyAction = 1 << 4 // DUPL
)

// Outer Header Creation descriptions (§8.2.56; octets 5-6 as a big-endian uint16).
const (
	OuterHeaderCreationGTPUUDPIPv4 uint16 = 0x0100
	OuterHeaderCreationGTPUUDPIPv6 uint16 = 0x0200
	OuterHeaderCreationUDPIPv4     uint16 = 0x0400
	OuterHeaderCreationUDPIPv6     uint16 = 0x0800
)

// OuterHeaderCreation is the Outer Header Creation IE (§8.2.56).
type OuterHeaderCreation struct {
	Description uint16 // e.g. OuterHeaderCreationGTPUUDPIPv4
	TEID        uint32
	IPv4        netip.Addr
	Port        uint16 // only with a UDP/IP description; 0 = absent
}

// ForwardingParameters is the Forwarding Parameters grouped IE of a Create
// FAR (IE type 4, §7.5.2.3 Table 7.5.2.3-2).
type ForwardingParameters struct {
	Destination         Interface
	NetworkInstance     string
	OuterHeaderCreation *OuterHeaderCreation
}

// UpdateForwardingParameters is the Update Forwarding Parameters grouped IE
// of an Update FAR (IE type 11, §7.5.4.3 Table 7.5.4.3-2): the forwarding
// parameters that change; those left out keep their values.
type UpdateForwardingParameters struct {
	// Destination is the Destination Interface, sent unless NoDestination
	// (the IE is conditional: present when it changes).
	Destination Interface
	// NoDestination leaves the Destination Interface out. The decoder sets
	// it when the IE is absent, so that an absent IE is not read as Access
	// (value 0).
	NoDestination       bool
	NetworkInstance     string
	OuterHeaderCreation *OuterHeaderCreation
	// SendEndMarker is the SNDEM flag of a PFCPSMReq-Flags IE (§8.2.31)
	// in the Update Forwarding Parameters: when the Outer Header Creation
	// switches the traffic to a new F-TEID (handover, TS 23.502
	// §4.9.1.2.2 step 6, §4.9.1.3.3 step 4), the UP function sends End
	// Marker packets (TS 29.281 §7.3.2) on the old tunnel after the last
	// packet there.
	SendEndMarker bool
}

// CreateFAR is the Create FAR grouped IE (§7.5.2.3).
type CreateFAR struct {
	ID          uint32
	ApplyAction ApplyAction
	Forwarding  *ForwardingParameters
	BARID       *uint8
}

// UpdateFAR is the Update FAR grouped IE (§7.5.4.3); nil = unchanged.
type UpdateFAR struct {
	ID          uint32
	ApplyAction *ApplyAction
	Forwarding  *UpdateForwardingParameters
	BARID       *uint8
}

// GateStatus is the Gate Status IE (§8.2.7).
type GateStatus struct {
	ULClosed, DLClosed bool
}

// BitRate is the MBR (§8.2.8) / GBR (§8.2.9) IE.
type BitRate struct {
	UL, DL uint64 // kbit/s as on the wire
}

// CreateQER is the Create QER grouped IE (§7.5.2.5).
type CreateQER struct {
	ID   uint32
	Gate GateStatus
	MBR  *BitRate
	GBR  *BitRate
	QFI  uint8 // 0 = absent
}

// UpdateQER is the Update QER grouped IE (§7.5.4.5); nil = unchanged.
type UpdateQER struct {
	ID   uint32
	Gate *GateStatus
	MBR  *BitRate
	GBR  *BitRate
	QFI  *uint8
}

// Measurement Method flags (§8.2.40).
const (
	MethodDuration uint8 = 1 // DURAT
	MethodVolume   uint8 = 2 // VOLUM
	MethodEvent    uint8 = 4 // EVENT
)

// Reporting Triggers flags (§8.2.19): octet 5 in bits 0-7, octet 6 in bits
// 8-15, octet 7 in bits 16-23.
const (
	TriggerPeriodic        uint32 = 1 << 0 // PERIO
	TriggerVolumeThreshold uint32 = 1 << 1 // VOLTH
	TriggerTimeThreshold   uint32 = 1 << 2 // TIMTH
	TriggerQuotaHolding    uint32 = 1 << 3 // QUHTI
	TriggerStartOfTraffic  uint32 = 1 << 4 // START
	TriggerStopOfTraffic   uint32 = 1 << 5 // STOPT
	TriggerDroppedDL       uint32 = 1 << 6 // DROTH
	TriggerLinkedUsage     uint32 = 1 << 7 // LIUSA
	TriggerVolumeQuota     uint32 = 1 << 8 // VOLQU
	TriggerTimeQuota       uint32 = 1 << 9 // TIMQU
)

// Usage Report Trigger flags (§8.2.41), same octet packing as the triggers.
const (
	UsageTriggerPeriodic        uint32 = 1 << 0  // PERIO
	UsageTriggerVolumeThreshold uint32 = 1 << 1  // VOLTH
	UsageTriggerTimeThreshold   uint32 = 1 << 2  // TIMTH
	UsageTriggerStartOfTraffic  uint32 = 1 << 4  // START
	UsageTriggerStopOfTraffic   uint32 = 1 << 5  // STOPT
	UsageTriggerImmediate       uint32 = 1 << 7  // IMMER (Query URR)
	UsageTriggerVolumeQuota     uint32 = 1 << 8  // VOLQU
	UsageTriggerTimeQuota       uint32 = 1 << 9  // TIMQU
	UsageTriggerTermination     uint32 = 1 << 11 // TERMR (session deleted)
)

// Volume is a Volume Threshold (§8.2.13), Volume Quota (§8.2.50) or Volume
// Measurement (§8.2.44): bytes, each value present only with its flag.
type Volume struct {
	Total, UL, DL          uint64
	HasTotal, HasUL, HasDL bool
}

// CreateURR is the Create URR grouped IE (§7.5.2.4).
type CreateURR struct {
	ID                uint32
	Method            uint8  // MethodDuration | MethodVolume | MethodEvent
	Triggers          uint32 // Trigger* flags
	VolumeThreshold   *Volume
	VolumeQuota       *Volume
	MeasurementPeriod time.Duration // whole seconds on the wire; 0 = absent
}

// UpdateURR is the Update URR grouped IE (§7.5.4.4); nil = unchanged.
type UpdateURR struct {
	ID                uint32
	Method            *uint8
	Triggers          *uint32
	VolumeThreshold   *Volume
	VolumeQuota       *Volume
	MeasurementPeriod *time.Duration
}

// CreateBAR is the Create BAR grouped IE (§7.5.2.6).
type CreateBAR struct {
	ID                        uint8
	SuggestedBufferingPackets uint8 // 0 = absent
}

// UpdateBAR is the Update BAR grouped IE in a Session Modification Request (§7.5.4.11).
type UpdateBAR struct {
	ID                        uint8
	SuggestedBufferingPackets *uint8
}

// CreatedPDR is the Created PDR grouped IE (§7.5.3.2).
type CreatedPDR struct {
	ID         uint16
	LocalFTEID *FTEID
}

// Rule types of the Failed Rule ID IE (§8.2.80).
const (
	RuleTypePDR uint8 = 0
	RuleTypeFAR uint8 = 1
	RuleTypeQER uint8 = 2
	RuleTypeURR uint8 = 3
	RuleTypeBAR uint8 = 4
)

// RuleID is the Failed Rule ID IE (§8.2.80).
type RuleID struct {
	Type uint8 // RuleType*
	ID   uint32
}

// Report Type flags (§8.2.21).
const (
	ReportDLDR uint8 = 1 << 0 // Downlink Data Report
	ReportUSAR uint8 = 1 << 1 // Usage Report
	ReportERIR uint8 = 1 << 2 // Error Indication Report
	ReportUPIR uint8 = 1 << 3 // User Plane Inactivity Report
)

// ErrorIndicationReport is the Error Indication Report grouped IE
// (§7.5.8.4): the remote F-TEIDs (TEID and GTP-U peer address) that GTP-U
// Error Indications came back for (§5.10).
type ErrorIndicationReport struct {
	RemoteFTEIDs []FTEID
}

// Node Report Type flags (§8.2.69).
const (
	NodeReportUPFR uint8 = 1 << 0 // User Plane Path Failure Report
	NodeReportUPRR uint8 = 1 << 1 // User Plane Path Recovery Report
)

// DownlinkDataReport is the Downlink Data Report grouped IE (§7.5.8.2).
type DownlinkDataReport struct {
	PDRIDs []uint16
	// QFIs are sent as one Downlink Data Service Information IE (§8.2.27)
	// each, with the QFII flag and the QFI.
	QFIs []uint8
}

// UsageReport is the Usage Report grouped IE of Session Modification /
// Deletion Responses and Session Report Requests (§7.5.5.2, §7.5.7.2, §7.5.8.3).
type UsageReport struct {
	URRID   uint32
	URSEQN  uint32
	Trigger uint32    // UsageTrigger* flags
	Volume  Volume    // Volume Measurement; absent when no Has* flag is set
	Start   time.Time // zero = absent
	End     time.Time // zero = absent
}

// PDN Type values (§8.2.79).
const (
	PDNTypeIPv4     uint8 = 1
	PDNTypeIPv6     uint8 = 2
	PDNTypeIPv4v6   uint8 = 3
	PDNTypeNonIP    uint8 = 4
	PDNTypeEthernet uint8 = 5
)

// Cause is the Cause IE value (§8.2.1).
type Cause uint8

// Cause values (§8.2.1 Table 8.2.1-1).
const (
	CauseRequestAccepted                 Cause = 1
	CauseRequestRejected                 Cause = 64
	CauseSessionContextNotFound          Cause = 65
	CauseMandatoryIEMissing              Cause = 66
	CauseConditionalIEMissing            Cause = 67
	CauseInvalidLength                   Cause = 68
	CauseMandatoryIEIncorrect            Cause = 69
	CauseInvalidForwardingPolicy         Cause = 70
	CauseInvalidFTEIDAllocationOption    Cause = 71
	CauseNoEstablishedPFCPAssociation    Cause = 72
	CauseRuleCreationModificationFailure Cause = 73
	CausePFCPEntityInCongestion          Cause = 74
	CauseNoResourcesAvailable            Cause = 75
	CauseServiceNotSupported             Cause = 76
	CauseSystemFailure                   Cause = 77
)

func (c Cause) String() string {
	switch c {
	case CauseRequestAccepted:
		return "Request accepted"
	case CauseRequestRejected:
		return "Request rejected"
	case CauseSessionContextNotFound:
		return "Session context not found"
	case CauseMandatoryIEMissing:
		return "Mandatory IE missing"
	case CauseConditionalIEMissing:
		return "Conditional IE missing"
	case CauseInvalidLength:
		return "Invalid length"
	case CauseMandatoryIEIncorrect:
		return "Mandatory IE incorrect"
	case CauseInvalidForwardingPolicy:
		return "Invalid Forwarding Policy"
	case CauseInvalidFTEIDAllocationOption:
		return "Invalid F-TEID allocation option"
	case CauseNoEstablishedPFCPAssociation:
		return "No established PFCP Association"
	case CauseRuleCreationModificationFailure:
		return "Rule creation/modification Failure"
	case CausePFCPEntityInCongestion:
		return "PFCP entity in congestion"
	case CauseNoResourcesAvailable:
		return "No resources available"
	case CauseServiceNotSupported:
		return "Service not supported"
	case CauseSystemFailure:
		return "System failure"
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Accepted reports whether c is an acceptance cause (1..63, §8.2.1).
func (c Cause) Accepted() bool { return c >= 1 && c < 64 }

// IEError is returned by Decode for a request that decodes but has a
// mandatory IE missing or incorrect (§7.2.2.4.2): the receiver answers with
// Cause and an Offending IE carrying OffendingIE.
type IEError struct {
	Cause       Cause
	OffendingIE uint16 // IE type (§8.1.2)
	Err         error  // detail; may be nil
}

func (e *IEError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("pfcp: %s (IE type %d): %v", e.Cause, e.OffendingIE, e.Err)
	}
	return fmt.Sprintf("pfcp: %s (IE type %d)", e.Cause, e.OffendingIE)
}

func (e *IEError) Unwrap() error { return e.Err }

// Header is the decoded PFCP header (§7.2.2).
type Header struct {
	Type    uint8
	SEID    uint64
	HasSEID bool
	Seq     uint32
}
