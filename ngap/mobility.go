package ngap

import "github.com/tern5g/tern/identity"

// Procedure codes of the paging and UE mobility management procedures
// (TS 38.413 §9.4.7, §8.4, §8.5).
const (
	ProcDownlinkRANStatusTransfer  int64 = 7
	ProcHandoverCancel             int64 = 10
	ProcHandoverNotification       int64 = 11
	ProcHandoverPreparation        int64 = 12
	ProcHandoverResourceAllocation int64 = 13
	ProcPaging                     int64 = 24
	ProcPathSwitchRequest          int64 = 25
	ProcUplinkRANStatusTransfer    int64 = 49
)

// Radio network cause values of the handover procedures (TS 38.413
// §9.3.1.2).
const (
	RadioNetworkHandoverCancelled                      uint8 = 5
	RadioNetworkPartialHandover                        uint8 = 6
	RadioNetworkHOFailureInTarget                      uint8 = 7 // ho-failure-in-target-5GC-ngran-node-or-target-system
	RadioNetworkHOTargetNotAllowed                     uint8 = 8
	RadioNetworkTNGRELOCoverallExpiry                  uint8 = 9
	RadioNetworkTNGRELOCprepExpiry                     uint8 = 10
	RadioNetworkCellNotAvailable                       uint8 = 11
	RadioNetworkNoRadioResourcesAvailableInTarget      uint8 = 13
	RadioNetworkHandoverDesirableForRadioReason        uint8 = 16
	RadioNetworkTimeCriticalHandover                   uint8 = 17
	RadioNetworkResourceOptimisationHandover           uint8 = 18
	RadioNetworkReduceLoadInServingCell                uint8 = 19
	RadioNetworkNGIntraSystemHandoverTriggered         uint8 = 31
	RadioNetworkNGInterSystemHandoverTriggered         uint8 = 32
	RadioNetworkXnHandoverTriggered                    uint8 = 33
	RadioNetworkUPIntegrityProtectionNotPossible       uint8 = 37
	RadioNetworkUPConfidentialityProtectionNotPossible uint8 = 38
)

// HandoverType (TS 38.413 §9.3.1.22).
type HandoverType uint8

// Handover types. tern models the NG-RAN target side only (Target ID
// targetRANNodeID) and not the NAS Security Parameters from NG-RAN that a
// Handover Command towards EPS or UTRAN needs: Handover Required and
// Handover Command take HandoverIntra5GS, Handover Request HandoverIntra5GS
// or HandoverEPSTo5GS.
const (
	HandoverIntra5GS   HandoverType = 0
	Handover5GSToEPS   HandoverType = 1
	HandoverEPSTo5GS   HandoverType = 2
	Handover5GSToUTRAN HandoverType = 3 // extension
)

// SecurityContext (TS 38.413 §9.3.1.88): the Next Hop Chaining Count and the
// Next Hop (NH) key the target gNB derives KgNB* from (TS 33.501 §6.9.2).
type SecurityContext struct {
	NextHopChainingCount uint8 // NCC, 0..7
	NextHopNH            [32]byte
}

// TargetRANNodeID is the targetRANNodeID choice of Target ID (TS 38.413
// §9.3.1.25): the target gNB and the TAI selected for the UE there.
type TargetRANNodeID struct {
	GlobalGNBID GlobalGNBID
	SelectedTAI identity.TAI
}

// PDUSessionResourceSetupItemHOReq is one item of the PDU Session Resource
// Setup List HO Req (TS 38.413 §9.2.3.4). The Handover Request Transfer is,
// on the wire, a PDU Session Resource Setup Request Transfer
// (EncodeSetupRequestTransfer).
type PDUSessionResourceSetupItemHOReq struct {
	ID       uint8
	SNSSAI   identity.SNSSAI
	Transfer []byte
}

// COUNTValue is the UL or DL COUNT of a DRB: COUNT Value for PDCP SN Length
// 12 (TS 38.413 §9.3.1.109) or 18 (§9.3.1.110).
type COUNTValue struct {
	SNLength uint8  // PDCP SN length: 12 or 18
	PDCPSN   uint32 // 0..4095 (12-bit SN) or 0..262143 (18-bit SN)
	HFN      uint32 // 0..1048575 (12-bit SN) or 0..16383 (18-bit SN)
}

// DRBStatus is one DRBs Subject to Status Transfer Item of the RAN Status
// Transfer Transparent Container (TS 38.413 §9.3.1.108). UL.SNLength selects
// the DRB Status UL choice and DL.SNLength the DRB Status DL choice.
type DRBStatus struct {
	DRBID uint8 // 1..32
	UL    COUNTValue
	DL    COUNTValue
	// ULReceiveStatus is the Receive Status of UL PDCP SDUs bitmap of the
	// DRB Status UL: ULReceiveStatusBits bits (1..2048 with a 12-bit SN,
	// 1..131072 with an 18-bit SN; from 16384 bits on a whole number of
	// octets), the first in the most significant bit of the first octet.
	// nil = absent.
	ULReceiveStatus     []byte
	ULReceiveStatusBits uint32
}

// Paging (TS 38.413 §9.2.4.1).
type Paging struct {
	UEPagingIdentity identity.STMSI // 5G-S-TMSI choice of UE Paging Identity (§9.3.3.18)
	PagingDRX        *PagingDRX     // optional
	TAIListForPaging []identity.TAI // 1..16 TAIs
	PagingPriority   uint8          // priolevel1..8 as 1..8; 0 = absent (§9.3.1.78)
	// PagingOriginNon3GPP is Paging Origin "non-3gpp" (§9.3.3.22); false =
	// absent.
	PagingOriginNon3GPP bool
}

// PathSwitchRequest (TS 38.413 §9.2.3.8). ToBeSwitched items carry Path
// Switch Request Transfers, FailedToSetup items Path Switch Request Setup
// Failed Transfers.
type PathSwitchRequest struct {
	RANUENGAPID            int64
	SourceAMFUENGAPID      int64
	UserLocation           UserLocationNR
	UESecurityCapabilities UESecurityCapabilities
	// PDU Session Resource to be Switched in Downlink List.
	ToBeSwitched []PDUSessionResourceItem
	// PDU Session Resource Failed to Setup List PS Req; nil = absent.
	FailedToSetup []PDUSessionResourceItem
}

// PathSwitchRequestAcknowledge (TS 38.413 §9.2.3.9). Switched items carry
// Path Switch Request Acknowledge Transfers, Released items Path Switch
// Request Unsuccessful Transfers.
type PathSwitchRequestAcknowledge struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	UESecurityCapabilities *UESecurityCapabilities // optional
	SecurityContext        SecurityContext
	// PDU Session Resource Switched List.
	Switched []PDUSessionResourceItem
	// PDU Session Resource Released List PS Ack; nil = absent.
	Released               []PDUSessionResourceItem
	AllowedNSSAI           []identity.SNSSAI
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// PathSwitchRequestFailure (TS 38.413 §9.2.3.10). Released items carry Path
// Switch Request Unsuccessful Transfers.
type PathSwitchRequestFailure struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	// PDU Session Resource Released List PS Fail.
	Released               []PDUSessionResourceItem
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// HandoverRequired (TS 38.413 §9.2.3.1). Sessions items carry Handover
// Required Transfers.
type HandoverRequired struct {
	AMFUENGAPID  int64
	RANUENGAPID  int64
	HandoverType HandoverType
	Cause        Cause
	TargetID     TargetRANNodeID
	// DirectForwardingPathAvailable is Direct Forwarding Path Availability
	// "direct-path-available"; false = absent.
	DirectForwardingPathAvailable bool
	// PDU Session Resource List HO Rqd.
	Sessions []PDUSessionResourceItem
	// SourceToTargetTransparentContainer is opaque to the AMF (§9.3.1.20).
	SourceToTargetTransparentContainer []byte
}

// HandoverCommand (TS 38.413 §9.2.3.2). Handover items carry Handover
// Command Transfers, ToRelease items Handover Preparation Unsuccessful
// Transfers.
type HandoverCommand struct {
	AMFUENGAPID  int64
	RANUENGAPID  int64
	HandoverType HandoverType
	// PDU Session Resource Handover List; nil = absent.
	Handover []PDUSessionResourceItem
	// PDU Session Resource to Release List HO Cmd; nil = absent.
	ToRelease []PDUSessionResourceItem
	// TargetToSourceTransparentContainer is opaque to the AMF (§9.3.1.21).
	TargetToSourceTransparentContainer []byte
	CriticalityDiagnostics             *CriticalityDiagnostics // optional
}

// HandoverPreparationFailure (TS 38.413 §9.2.3.3).
type HandoverPreparationFailure struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	Cause                  Cause
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// HandoverRequest (TS 38.413 §9.2.3.4). It carries no RAN UE NGAP ID: the
// target gNB allocates one and returns it in the acknowledgement.
type HandoverRequest struct {
	AMFUENGAPID            int64
	HandoverType           HandoverType
	Cause                  Cause
	UEAggregateMaxBitRate  AMBR
	UESecurityCapabilities UESecurityCapabilities
	SecurityContext        SecurityContext
	// PDU Session Resource Setup List HO Req.
	Sessions                           []PDUSessionResourceSetupItemHOReq
	AllowedNSSAI                       []identity.SNSSAI
	SourceToTargetTransparentContainer []byte
	GUAMI                              identity.GUAMI
}

// HandoverRequestAcknowledge (TS 38.413 §9.2.3.5). Admitted items carry
// Handover Request Acknowledge Transfers, FailedToSetup items Handover
// Resource Allocation Unsuccessful Transfers.
type HandoverRequestAcknowledge struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	// PDU Session Resource Admitted List.
	Admitted []PDUSessionResourceItem
	// PDU Session Resource Failed to Setup List HO Ack; nil = absent.
	FailedToSetup                      []PDUSessionResourceItem
	TargetToSourceTransparentContainer []byte
	CriticalityDiagnostics             *CriticalityDiagnostics // optional
}

// HandoverFailure (TS 38.413 §9.2.3.6). Like Handover Request, it carries
// no RAN UE NGAP ID.
type HandoverFailure struct {
	AMFUENGAPID            int64
	Cause                  Cause
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// HandoverNotify (TS 38.413 §9.2.3.7).
type HandoverNotify struct {
	AMFUENGAPID  int64
	RANUENGAPID  int64
	UserLocation UserLocationNR
}

// HandoverCancel (TS 38.413 §9.2.3.11).
type HandoverCancel struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	Cause       Cause
}

// HandoverCancelAcknowledge (TS 38.413 §9.2.3.12).
type HandoverCancelAcknowledge struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// UplinkRANStatusTransfer (TS 38.413 §9.2.3.13). DRBs is the RAN Status
// Transfer Transparent Container (§9.3.1.108), 1..32 DRBs.
type UplinkRANStatusTransfer struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	DRBs        []DRBStatus
}

// DownlinkRANStatusTransfer (TS 38.413 §9.2.3.14). DRBs is the RAN Status
// Transfer Transparent Container (§9.3.1.108), 1..32 DRBs.
type DownlinkRANStatusTransfer struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	DRBs        []DRBStatus
}

func (*Paging) ProcedureCode() int64                       { return ProcPaging }
func (*PathSwitchRequest) ProcedureCode() int64            { return ProcPathSwitchRequest }
func (*PathSwitchRequestAcknowledge) ProcedureCode() int64 { return ProcPathSwitchRequest }
func (*PathSwitchRequestFailure) ProcedureCode() int64     { return ProcPathSwitchRequest }
func (*HandoverRequired) ProcedureCode() int64             { return ProcHandoverPreparation }
func (*HandoverCommand) ProcedureCode() int64              { return ProcHandoverPreparation }
func (*HandoverPreparationFailure) ProcedureCode() int64   { return ProcHandoverPreparation }
func (*HandoverRequest) ProcedureCode() int64              { return ProcHandoverResourceAllocation }
func (*HandoverRequestAcknowledge) ProcedureCode() int64   { return ProcHandoverResourceAllocation }
func (*HandoverFailure) ProcedureCode() int64              { return ProcHandoverResourceAllocation }
func (*HandoverNotify) ProcedureCode() int64               { return ProcHandoverNotification }
func (*HandoverCancel) ProcedureCode() int64               { return ProcHandoverCancel }
func (*HandoverCancelAcknowledge) ProcedureCode() int64    { return ProcHandoverCancel }
func (*UplinkRANStatusTransfer) ProcedureCode() int64      { return ProcUplinkRANStatusTransfer }
func (*DownlinkRANStatusTransfer) ProcedureCode() int64    { return ProcDownlinkRANStatusTransfer }

func (*Paging) MessageType() MessageType                       { return InitiatingMessage }
func (*PathSwitchRequest) MessageType() MessageType            { return InitiatingMessage }
func (*PathSwitchRequestAcknowledge) MessageType() MessageType { return SuccessfulOutcome }
func (*PathSwitchRequestFailure) MessageType() MessageType     { return UnsuccessfulOutcome }
func (*HandoverRequired) MessageType() MessageType             { return InitiatingMessage }
func (*HandoverCommand) MessageType() MessageType              { return SuccessfulOutcome }
func (*HandoverPreparationFailure) MessageType() MessageType   { return UnsuccessfulOutcome }
func (*HandoverRequest) MessageType() MessageType              { return InitiatingMessage }
func (*HandoverRequestAcknowledge) MessageType() MessageType   { return SuccessfulOutcome }
func (*HandoverFailure) MessageType() MessageType              { return UnsuccessfulOutcome }
func (*HandoverNotify) MessageType() MessageType               { return InitiatingMessage }
func (*HandoverCancel) MessageType() MessageType               { return InitiatingMessage }
func (*HandoverCancelAcknowledge) MessageType() MessageType    { return SuccessfulOutcome }
func (*UplinkRANStatusTransfer) MessageType() MessageType      { return InitiatingMessage }
func (*DownlinkRANStatusTransfer) MessageType() MessageType    { return InitiatingMessage }
