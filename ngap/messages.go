package ngap

import "github.com/tern5g/tern/identity"

// Message is an NGAP message tern builds or parses.
type Message interface {
	ProcedureCode() int64
	MessageType() MessageType
}

// NGSetupRequest (TS 38.413 §9.2.6.1).
type NGSetupRequest struct {
	GlobalRANNodeID  GlobalGNBID
	RANNodeName      string // optional; "" = absent
	SupportedTAs     []SupportedTA
	DefaultPagingDRX PagingDRX
}

// NGSetupResponse (TS 38.413 §9.2.6.2).
type NGSetupResponse struct {
	AMFName             string
	ServedGUAMIs        []identity.GUAMI
	RelativeAMFCapacity uint8
	PLMNSupport         []PLMNSupport
}

// NGSetupFailure (TS 38.413 §9.2.6.3).
type NGSetupFailure struct {
	Cause                  Cause
	TimeToWait             *TimeToWait             // optional
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// InitialUEMessage (TS 38.413 §9.2.5.1).
type InitialUEMessage struct {
	RANUENGAPID           int64
	NASPDU                []byte
	UserLocation          UserLocationNR
	RRCEstablishmentCause RRCEstablishmentCause
	FiveGSTMSI            *identity.STMSI // optional
	UEContextRequest      bool            // UE Context Request IE "requested"
}

// DownlinkNASTransport (TS 38.413 §9.2.5.2).
type DownlinkNASTransport struct {
	AMFUENGAPID  int64
	RANUENGAPID  int64
	NASPDU       []byte
	AllowedNSSAI []identity.SNSSAI // optional; nil = absent
}

// UplinkNASTransport (TS 38.413 §9.2.5.3).
type UplinkNASTransport struct {
	AMFUENGAPID  int64
	RANUENGAPID  int64
	NASPDU       []byte
	UserLocation UserLocationNR
}

// NASNonDeliveryIndication (TS 38.413 §9.2.5.4).
type NASNonDeliveryIndication struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	NASPDU      []byte
	Cause       Cause
}

// InitialContextSetupRequest (TS 38.413 §9.2.2.1).
type InitialContextSetupRequest struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	// UEAggregateMaxBitRate is conditional (C-ifPDUsessionResourceSetup):
	// Encode requires it with PDUSessionResourceSetupItems and, as tern
	// never sends it otherwise, rejects it alone.
	UEAggregateMaxBitRate  *AMBR
	GUAMI                  identity.GUAMI
	AllowedNSSAI           []identity.SNSSAI
	UESecurityCapabilities UESecurityCapabilities
	SecurityKey            [32]byte // KgNB
	NASPDU                 []byte   // optional; nil = absent
	// PDU Session Resource Setup List Cxt Req; nil = absent.
	PDUSessionResourceSetupItems []PDUSessionResourceSetupItemSUReq
}

// InitialContextSetupResponse (TS 38.413 §9.2.2.2).
type InitialContextSetupResponse struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	// PDU Session Resource Setup List Cxt Res (setup response transfers);
	// nil = absent.
	PDUSessionResourceSetupItems []PDUSessionResourceItem
	// PDU Session Resource Failed to Setup List Cxt Res (setup unsuccessful
	// transfers); nil = absent.
	PDUSessionResourceFailedItems []PDUSessionResourceItem
	CriticalityDiagnostics        *CriticalityDiagnostics // optional
}

// InitialContextSetupFailure (TS 38.413 §9.2.2.3).
type InitialContextSetupFailure struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	Cause                  Cause
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// UEContextReleaseRequest (TS 38.413 §9.2.2.4), gNB initiated.
type UEContextReleaseRequest struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	Cause       Cause
}

// UEContextReleaseCommand (TS 38.413 §9.2.2.5). UE NGAP IDs is a choice:
// the pair, or the AMF UE NGAP ID alone when AMFIDOnly is set.
type UEContextReleaseCommand struct {
	AMFUENGAPID int64
	RANUENGAPID int64
	AMFIDOnly   bool
	Cause       Cause
}

// UEContextReleaseComplete (TS 38.413 §9.2.2.6).
type UEContextReleaseComplete struct {
	AMFUENGAPID            int64
	RANUENGAPID            int64
	UserLocation           *UserLocationNR         // optional
	CriticalityDiagnostics *CriticalityDiagnostics // optional
	// PDU Session Resource List Cxt Rel Cpl: the sessions whose resources
	// the gNB released; nil = absent.
	PDUSessionIDs []uint8
}

// ErrorIndication (TS 38.413 §9.2.7.1). All IEs are optional; at least one
// of Cause and CriticalityDiagnostics should be present (TS 38.413 §8.7.5.2).
type ErrorIndication struct {
	AMFUENGAPID            *int64
	RANUENGAPID            *int64
	Cause                  *Cause
	CriticalityDiagnostics *CriticalityDiagnostics
}

// ProcedureCode and MessageType implementations.
func (*NGSetupRequest) ProcedureCode() int64              { return ProcNGSetup }
func (*NGSetupResponse) ProcedureCode() int64             { return ProcNGSetup }
func (*NGSetupFailure) ProcedureCode() int64              { return ProcNGSetup }
func (*InitialUEMessage) ProcedureCode() int64            { return ProcInitialUEMessage }
func (*DownlinkNASTransport) ProcedureCode() int64        { return ProcDownlinkNASTransport }
func (*UplinkNASTransport) ProcedureCode() int64          { return ProcUplinkNASTransport }
func (*NASNonDeliveryIndication) ProcedureCode() int64    { return ProcNASNonDeliveryIndication }
func (*InitialContextSetupRequest) ProcedureCode() int64  { return ProcInitialContextSetup }
func (*InitialContextSetupResponse) ProcedureCode() int64 { return ProcInitialContextSetup }
func (*InitialContextSetupFailure) ProcedureCode() int64  { return ProcInitialContextSetup }
func (*UEContextReleaseRequest) ProcedureCode() int64     { return ProcUEContextReleaseRequest }
func (*UEContextReleaseCommand) ProcedureCode() int64     { return ProcUEContextRelease }
func (*UEContextReleaseComplete) ProcedureCode() int64    { return ProcUEContextRelease }
func (*ErrorIndication) ProcedureCode() int64             { return ProcErrorIndication }

func (*NGSetupRequest) MessageType() MessageType              { return InitiatingMessage }
func (*NGSetupResponse) MessageType() MessageType             { return SuccessfulOutcome }
func (*NGSetupFailure) MessageType() MessageType              { return UnsuccessfulOutcome }
func (*InitialUEMessage) MessageType() MessageType            { return InitiatingMessage }
func (*DownlinkNASTransport) MessageType() MessageType        { return InitiatingMessage }
func (*UplinkNASTransport) MessageType() MessageType          { return InitiatingMessage }
func (*NASNonDeliveryIndication) MessageType() MessageType    { return InitiatingMessage }
func (*InitialContextSetupRequest) MessageType() MessageType  { return InitiatingMessage }
func (*InitialContextSetupResponse) MessageType() MessageType { return SuccessfulOutcome }
func (*InitialContextSetupFailure) MessageType() MessageType  { return UnsuccessfulOutcome }
func (*UEContextReleaseRequest) MessageType() MessageType     { return InitiatingMessage }
func (*UEContextReleaseCommand) MessageType() MessageType     { return InitiatingMessage }
func (*UEContextReleaseComplete) MessageType() MessageType    { return SuccessfulOutcome }
func (*ErrorIndication) MessageType() MessageType             { return InitiatingMessage }
