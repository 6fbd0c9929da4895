package ngap

import "github.com/tern5g/tern/identity"

// Procedure codes of the PDU session resource management procedures
// (TS 38.413 §9.4.7, §8.2).
const (
	ProcPDUSessionResourceModify  int64 = 26
	ProcPDUSessionResourceRelease int64 = 28
	ProcPDUSessionResourceSetup   int64 = 29
)

// Radio network cause values used by the PDU session resource procedures
// (TS 38.413 §9.3.1.2).
const (
	RadioNetworkRadioResourcesNotAvailable       uint8 = 22
	RadioNetworkInvalidQoSCombination            uint8 = 23
	RadioNetworkUnknownPDUSessionID              uint8 = 26
	RadioNetworkUnknownQoSFlowID                 uint8 = 27
	RadioNetworkMultiplePDUSessionIDInstances    uint8 = 28
	RadioNetworkMultipleQoSFlowIDInstances       uint8 = 29
	RadioNetworkNotSupported5QIValue             uint8 = 34
	RadioNetworkResourcesNotAvailableForTheSlice uint8 = 42
	RadioNetworkReleaseDueToCNDetectedMobility   uint8 = 44
)

// PDUSessionResourceSetupItemSUReq is one item of the PDU Session Resource
// Setup List SU Req (TS 38.413 §9.2.1.1); the same fields make up an item of
// the PDU Session Resource Setup List Cxt Req of Initial Context Setup
// Request (§9.2.2.1).
type PDUSessionResourceSetupItemSUReq struct {
	ID       uint8  // PDU Session ID
	NASPDU   []byte // optional per-session NAS-PDU; nil = absent
	SNSSAI   identity.SNSSAI
	Transfer []byte // encoded PDU Session Resource Setup Request Transfer (EncodeSetupRequestTransfer)
}

// PDUSessionResourceItem is a PDU Session ID with the encoded transfer IE
// the list it sits in carries (setup response/unsuccessful, modify
// response/unsuccessful, release command/response transfer).
type PDUSessionResourceItem struct {
	ID       uint8
	Transfer []byte
}

// PDUSessionResourceModifyItemModReq is one item of the PDU Session Resource
// Modify List Mod Req (TS 38.413 §9.2.1.3).
type PDUSessionResourceModifyItemModReq struct {
	ID       uint8
	NASPDU   []byte // optional; nil = absent
	Transfer []byte // encoded PDU Session Resource Modify Request Transfer
}

// PDUSessionResourceSetupRequest (TS 38.413 §9.2.1.1).
type PDUSessionResourceSetupRequest struct {
	AMFUENGAPID           int64
	RANUENGAPID           int64
	NASPDU                []byte // optional; nil = absent
	Items                 []PDUSessionResourceSetupItemSUReq
	UEAggregateMaxBitRate *AMBR // optional
}

// PDUSessionResourceSetupResponse (TS 38.413 §9.2.1.2). Setup items carry
// PDU Session Resource Setup Response Transfers, Failed items PDU Session
// Resource Setup Unsuccessful Transfers.
type PDUSessionResourceSetupResponse struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	Setup                  []PDUSessionResourceItem // optional; nil = absent
	Failed                 []PDUSessionResourceItem // optional; nil = absent
	CriticalityDiagnostics *CriticalityDiagnostics  // optional
}

// PDUSessionResourceModifyRequest (TS 38.413 §9.2.1.3).
type PDUSessionResourceModifyRequest struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	Items       []PDUSessionResourceModifyItemModReq
}

// PDUSessionResourceModifyResponse (TS 38.413 §9.2.1.4). Modified items
// carry PDU Session Resource Modify Response Transfers, Failed items PDU
// Session Resource Modify Unsuccessful Transfers.
type PDUSessionResourceModifyResponse struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	Modified               []PDUSessionResourceItem // optional; nil = absent
	Failed                 []PDUSessionResourceItem // optional; nil = absent
	CriticalityDiagnostics *CriticalityDiagnostics  // optional
}

// PDUSessionResourceReleaseCommand (TS 38.413 §9.2.1.5). Items carry PDU
// Session Resource Release Command Transfers.
type PDUSessionResourceReleaseCommand struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	NASPDU      []byte // optional; nil = absent
	Items       []PDUSessionResourceItem
}

// PDUSessionResourceReleaseResponse (TS 38.413 §9.2.1.6). Items carry PDU
// Session Resource Release Response Transfers.
type PDUSessionResourceReleaseResponse struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	Released               []PDUSessionResourceItem
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

func (*PDUSessionResourceSetupRequest) ProcedureCode() int64    { return ProcPDUSessionResourceSetup }
func (*PDUSessionResourceSetupResponse) ProcedureCode() int64   { return ProcPDUSessionResourceSetup }
func (*PDUSessionResourceModifyRequest) ProcedureCode() int64   { return ProcPDUSessionResourceModify }
func (*PDUSessionResourceModifyResponse) ProcedureCode() int64  { return ProcPDUSessionResourceModify }
func (*PDUSessionResourceReleaseCommand) ProcedureCode() int64  { return ProcPDUSessionResourceRelease }
func (*PDUSessionResourceReleaseResponse) ProcedureCode() int64 { return ProcPDUSessionResourceRelease }

func (*PDUSessionResourceSetupRequest) MessageType() MessageType    { return InitiatingMessage }
func (*PDUSessionResourceSetupResponse) MessageType() MessageType   { return SuccessfulOutcome }
func (*PDUSessionResourceModifyRequest) MessageType() MessageType   { return InitiatingMessage }
func (*PDUSessionResourceModifyResponse) MessageType() MessageType  { return SuccessfulOutcome }
func (*PDUSessionResourceReleaseCommand) MessageType() MessageType  { return InitiatingMessage }
func (*PDUSessionResourceReleaseResponse) MessageType() MessageType { return SuccessfulOutcome }
