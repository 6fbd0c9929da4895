package ngap

// Procedure codes of the interface management procedures that restore N2
// after a failure (TS 38.413 §9.4.7, §8.7.2, §8.7.4).
const (
	ProcNGReset                int64 = 20
	ProcRANConfigurationUpdate int64 = 35
)

// UEConnection names one UE-associated logical NG-connection in an NG Reset
// or NG Reset Acknowledge (UE-associated Logical NG-connection Item, TS
// 38.413 §9.2.6.11): the AMF UE NGAP ID, the RAN UE NGAP ID, or both; nil =
// absent. Encode wants at least one; Decode also takes an item with none
// (§8.7.4.2.1 allows for them: the answer may leave them out).
type UEConnection struct {
	AMFUENGAPID *int64
	RANUENGAPID *int64
}

// NGReset (TS 38.413 §9.2.6.11). Reset Type is a choice: the whole NG
// interface when Connections is nil, else part of it, the listed
// connections (1..65536).
type NGReset struct {
	Cause       Cause
	Connections []UEConnection
}

// NGResetAcknowledge (TS 38.413 §9.2.6.12). Connections is the
// UE-associated Logical NG-connection List of a partial reset (§8.7.4.2.1:
// the connections that were reset); nil = absent.
type NGResetAcknowledge struct {
	Connections            []UEConnection
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// RANConfigurationUpdate (TS 38.413 §9.2.6.4). Every IE is optional: nil
// (or "") = absent, the AMF keeps what it had.
type RANConfigurationUpdate struct {
	RANNodeName      string
	SupportedTAs     []SupportedTA
	DefaultPagingDRX *PagingDRX
	GlobalRANNodeID  *GlobalGNBID
}

// RANConfigurationUpdateAcknowledge (TS 38.413 §9.2.6.5).
type RANConfigurationUpdateAcknowledge struct {
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// RANConfigurationUpdateFailure (TS 38.413 §9.2.6.6).
type RANConfigurationUpdateFailure struct {
	Cause                  Cause
	TimeToWait             *TimeToWait             // optional
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

func (*NGReset) ProcedureCode() int64                           { return ProcNGReset }
func (*NGResetAcknowledge) ProcedureCode() int64                { return ProcNGReset }
func (*RANConfigurationUpdate) ProcedureCode() int64            { return ProcRANConfigurationUpdate }
func (*RANConfigurationUpdateAcknowledge) ProcedureCode() int64 { return ProcRANConfigurationUpdate }
func (*RANConfigurationUpdateFailure) ProcedureCode() int64     { return ProcRANConfigurationUpdate }

func (*NGReset) MessageType() MessageType                           { return InitiatingMessage }
func (*NGResetAcknowledge) MessageType() MessageType                { return SuccessfulOutcome }
func (*RANConfigurationUpdate) MessageType() MessageType            { return InitiatingMessage }
func (*RANConfigurationUpdateAcknowledge) MessageType() MessageType { return SuccessfulOutcome }
func (*RANConfigurationUpdateFailure) MessageType() MessageType     { return UnsuccessfulOutcome }
