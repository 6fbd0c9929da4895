package ngap

import (
	"fmt"

	"github.com/tern5g/tern/identity"
)

// PPID is the SCTP payload protocol identifier of NGAP (TS 38.412 §7), as a
// plain host-order value (free5gc's message.PPID is pre-swapped for the
// kernel socket call; userspace stacks take this one).
const PPID uint32 = 60

// MessageType is the NGAP-PDU choice (TS 38.413 §9.4.2).
type MessageType uint8

// NGAP-PDU choices.
const (
	InitiatingMessage   MessageType = 0
	SuccessfulOutcome   MessageType = 1
	UnsuccessfulOutcome MessageType = 2
)

func (t MessageType) String() string {
	switch t {
	case InitiatingMessage:
		return "initiatingMessage"
	case SuccessfulOutcome:
		return "successfulOutcome"
	case UnsuccessfulOutcome:
		return "unsuccessfulOutcome"
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// Procedure codes (TS 38.413 §9.4.7) of the procedures tern implements.
const (
	ProcDownlinkNASTransport     int64 = 4
	ProcErrorIndication          int64 = 9
	ProcInitialContextSetup      int64 = 14
	ProcInitialUEMessage         int64 = 15
	ProcNASNonDeliveryIndication int64 = 19
	ProcNGSetup                  int64 = 21
	ProcUEContextRelease         int64 = 41
	ProcUEContextReleaseRequest  int64 = 42
	ProcUplinkNASTransport       int64 = 46
)

// Criticality (TS 38.413 §9.3.1.2).
type Criticality uint8

// Criticality values.
const (
	CriticalityReject Criticality = 0
	CriticalityIgnore Criticality = 1
	CriticalityNotify Criticality = 2
)

// CauseGroup is the choice of the Cause IE (TS 38.413 §9.3.1.2).
type CauseGroup uint8

// Cause groups.
const (
	CauseRadioNetwork CauseGroup = 0
	CauseTransport    CauseGroup = 1
	CauseNAS          CauseGroup = 2
	CauseProtocol     CauseGroup = 3
	CauseMisc         CauseGroup = 4
)

// Cause is the NGAP Cause IE (TS 38.413 §9.3.1.2).
type Cause struct {
	Group CauseGroup
	Value uint8
}

// Cause values used by tern (TS 38.413 §9.3.1.2).
const (
	// radioNetwork
	RadioNetworkUnspecified                      uint8 = 0
	RadioNetworkSuccessfulHandover               uint8 = 2
	RadioNetworkReleaseDueToNGRANGeneratedReason uint8 = 3
	RadioNetworkReleaseDueTo5GCGeneratedReason   uint8 = 4
	RadioNetworkUnknownTargetID                  uint8 = 12
	RadioNetworkUnknownLocalUENGAPID             uint8 = 14
	RadioNetworkInconsistentRemoteUENGAPID       uint8 = 15
	RadioNetworkUserInactivity                   uint8 = 20
	RadioNetworkRadioConnectionWithUELost        uint8 = 21
	RadioNetworkAlgorithmsNotSupported           uint8 = 30 // encryption-and/or-integrity-protection-algorithms-not-supported
	RadioNetworkSliceNotSupported                uint8 = 39

	// transport
	TransportResourceUnavailable uint8 = 0
	TransportUnspecified         uint8 = 1

	// nas
	NASNormalRelease         uint8 = 0
	NASAuthenticationFailure uint8 = 1
	NASDeregister            uint8 = 2
	NASUnspecified           uint8 = 3

	// protocol
	ProtocolTransferSyntaxError                          uint8 = 0
	ProtocolAbstractSyntaxErrorReject                    uint8 = 1
	ProtocolAbstractSyntaxErrorIgnoreAndNotify           uint8 = 2
	ProtocolMessageNotCompatibleWithReceiverState        uint8 = 3
	ProtocolSemanticError                                uint8 = 4
	ProtocolAbstractSyntaxErrorFalselyConstructedMessage uint8 = 5
	ProtocolUnspecified                                  uint8 = 6

	// misc
	MiscControlProcessingOverload             uint8 = 0
	MiscNotEnoughUserPlaneProcessingResources uint8 = 1
	MiscHardwareFailure                       uint8 = 2
	MiscOMIntervention                        uint8 = 3
	MiscUnknownPLMNOrSNPN                     uint8 = 4
	MiscUnspecified                           uint8 = 5
)

// TypeOfError of a CriticalityDiagnostics IE item (TS 38.413 §9.3.1.3).
type TypeOfError uint8

// TypeOfError values.
const (
	NotUnderstood TypeOfError = 0
	Missing       TypeOfError = 1
)

// CriticalityDiagnosticsIE reports one IE in CriticalityDiagnostics.
type CriticalityDiagnosticsIE struct {
	Criticality Criticality
	IEID        int64
	TypeOfError TypeOfError
}

// CriticalityDiagnostics (TS 38.413 §9.3.1.3). Pointers are optional fields.
type CriticalityDiagnostics struct {
	ProcedureCode        *int64
	TriggeringMessage    *MessageType
	ProcedureCriticality *Criticality
	IEs                  []CriticalityDiagnosticsIE
}

// GlobalGNBID is the Global gNB ID choice of Global RAN Node ID
// (TS 38.413 §9.3.1.6).
type GlobalGNBID struct {
	PLMN   identity.PLMN
	GNBID  uint32 // right-aligned value of BitLength bits
	BitLen uint8  // 22..32
}

// BroadcastPLMN is one Broadcast PLMN Item of a supported TA (TS 38.413 §9.3.1.?).
type BroadcastPLMN struct {
	PLMN   identity.PLMN
	Slices []identity.SNSSAI // TAI Slice Support List
}

// SupportedTA is one Supported TA Item (TS 38.413 §9.2.6.1).
type SupportedTA struct {
	TAC            uint32 // 24 bits
	BroadcastPLMNs []BroadcastPLMN
}

// PLMNSupport is one PLMN Support Item (TS 38.413 §9.2.6.2).
type PLMNSupport struct {
	PLMN   identity.PLMN
	Slices []identity.SNSSAI
}

// PagingDRX (TS 38.413 §9.3.1.90).
type PagingDRX uint8

// Paging DRX values.
const (
	PagingDRX32  PagingDRX = 0
	PagingDRX64  PagingDRX = 1
	PagingDRX128 PagingDRX = 2
	PagingDRX256 PagingDRX = 3
)

// TimeToWait (TS 38.413 §9.3.1.56).
type TimeToWait uint8

// TimeToWait values.
const (
	TimeToWait1s  TimeToWait = 0
	TimeToWait2s  TimeToWait = 1
	TimeToWait5s  TimeToWait = 2
	TimeToWait10s TimeToWait = 3
	TimeToWait20s TimeToWait = 4
	TimeToWait60s TimeToWait = 5
)

// NRCGI is the NR cell global identity (TS 38.413 §9.3.1.7).
type NRCGI struct {
	PLMN   identity.PLMN
	CellID uint64 // 36 bits
}

// UserLocationNR is the userLocationInformationNR choice of User Location
// Information (TS 38.413 §9.3.1.16).
type UserLocationNR struct {
	NRCGI NRCGI
	TAI   identity.TAI
}

// RRCEstablishmentCause (TS 38.413 §9.3.1.111).
type RRCEstablishmentCause uint8

// RRC establishment causes.
const (
	RRCEmergency          RRCEstablishmentCause = 0
	RRCHighPriorityAccess RRCEstablishmentCause = 1
	RRCMTAccess           RRCEstablishmentCause = 2
	RRCMOSignalling       RRCEstablishmentCause = 3
	RRCMOData             RRCEstablishmentCause = 4
	RRCMOVoiceCall        RRCEstablishmentCause = 5
	RRCMOVideoCall        RRCEstablishmentCause = 6
	RRCMOSMS              RRCEstablishmentCause = 7
	RRCMPSPriorityAccess  RRCEstablishmentCause = 8
	RRCMCSPriorityAccess  RRCEstablishmentCause = 9
	RRCNotAvailable       RRCEstablishmentCause = 10 // extension
	RRCMOExceptionData    RRCEstablishmentCause = 11 // extension
)

// UESecurityCapabilities (TS 38.413 §9.3.1.86): 16-bit bitmaps whose most
// significant bit is algorithm 1 (NEA1/NIA1); NEA0/NIA0 are implicit.
type UESecurityCapabilities struct {
	NREncryption, NRIntegrity       uint16
	EUTRAEncryption, EUTRAIntegrity uint16
}

// UESecurityCapabilitiesFromNAS converts the NAS UE security capability
// bitmaps (TS 24.501 §9.11.3.54: MSB = algorithm 0) to the NGAP form
// (MSB = algorithm 1).
func UESecurityCapabilitiesFromNAS(ea, ia, eea, eia uint8) UESecurityCapabilities {
	shift := func(b uint8) uint16 { return uint16(b<<1) << 8 }
	return UESecurityCapabilities{
		NREncryption: shift(ea), NRIntegrity: shift(ia),
		EUTRAEncryption: shift(eea), EUTRAIntegrity: shift(eia),
	}
}

// AMBR is an aggregate maximum bit rate pair in bit/s (TS 38.413 §9.3.1.58).
type AMBR struct {
	DL, UL uint64
}
