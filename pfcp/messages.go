package pfcp

import (
	"net/netip"
	"time"
)

// Message types (§7.3 Table 7.3-1).
const (
	MsgHeartbeatRequest             uint8 = 1
	MsgHeartbeatResponse            uint8 = 2
	MsgAssociationSetupRequest      uint8 = 5
	MsgAssociationSetupResponse     uint8 = 6
	MsgAssociationReleaseRequest    uint8 = 9
	MsgAssociationReleaseResponse   uint8 = 10
	MsgVersionNotSupportedResponse  uint8 = 11
	MsgNodeReportRequest            uint8 = 12
	MsgNodeReportResponse           uint8 = 13
	MsgSessionEstablishmentRequest  uint8 = 50
	MsgSessionEstablishmentResponse uint8 = 51
	MsgSessionModificationRequest   uint8 = 52
	MsgSessionModificationResponse  uint8 = 53
	MsgSessionDeletionRequest       uint8 = 54
	MsgSessionDeletionResponse      uint8 = 55
	MsgSessionReportRequest         uint8 = 56
	MsgSessionReportResponse        uint8 = 57
)

// IE types used as Offending IE values (§8.1.2 Table 8.1.2-1).
const (
	IECreatePDR                   uint16 = 1
	IEPDI                         uint16 = 2
	IECreateFAR                   uint16 = 3
	IEForwardingParameters        uint16 = 4
	IECreateURR                   uint16 = 6
	IECreateQER                   uint16 = 7
	IEUpdatePDR                   uint16 = 9
	IEUpdateFAR                   uint16 = 10
	IEUpdateURR                   uint16 = 13
	IEUpdateQER                   uint16 = 14
	IERemovePDR                   uint16 = 15
	IERemoveFAR                   uint16 = 16
	IERemoveURR                   uint16 = 17
	IERemoveQER                   uint16 = 18
	IECause                       uint16 = 19
	IESourceInterface             uint16 = 20
	IEFTEID                       uint16 = 21
	IEGateStatus                  uint16 = 25
	IEPrecedence                  uint16 = 29
	IEReportType                  uint16 = 39
	IEOffendingIE                 uint16 = 40
	IEDestinationInterface        uint16 = 42
	IEApplyAction                 uint16 = 44
	IEPDRID                       uint16 = 56
	IEFSEID                       uint16 = 57
	IENodeID                      uint16 = 60
	IEMeasurementMethod           uint16 = 62
	IEReportingTriggers           uint16 = 37
	IEQueryURR                    uint16 = 77
	IEURRID                       uint16 = 81
	IECreateBAR                   uint16 = 85
	IEUpdateBAR                   uint16 = 86
	IERemoveBAR                   uint16 = 87
	IEBARID                       uint16 = 88
	IERecoveryTimeStamp           uint16 = 96
	IEErrorIndicationReport       uint16 = 99
	IENodeReportType              uint16 = 101
	IEUserPlanePathFailureReport  uint16 = 102
	IERemoteGTPUPeer              uint16 = 103
	IEFARID                       uint16 = 108
	IEQERID                       uint16 = 109
	IEUserPlanePathRecoveryReport uint16 = 187
)

// Message is one PFCP message of the set tern speaks.
type Message interface {
	MessageType() uint8
}

// HeartbeatRequest (§7.4.2.1).
type HeartbeatRequest struct {
	RecoveryTime time.Time
}

// HeartbeatResponse (§7.4.2.2).
type HeartbeatResponse struct {
	RecoveryTime time.Time
}

// AssociationSetupRequest (§7.4.4.1).
type AssociationSetupRequest struct {
	NodeID             NodeID
	RecoveryTime       time.Time
	UPFunctionFeatures uint64 // octet 5 in bits 0-7, octet 6 in 8-15, ...; 0 = absent
	CPFunctionFeatures uint64 // same packing; 0 = absent
}

// AssociationSetupResponse (§7.4.4.2).
type AssociationSetupResponse struct {
	NodeID             NodeID
	Cause              Cause
	RecoveryTime       time.Time
	UPFunctionFeatures uint64
	CPFunctionFeatures uint64
}

// AssociationReleaseRequest (§7.4.4.5).
type AssociationReleaseRequest struct {
	NodeID NodeID
}

// AssociationReleaseResponse (§7.4.4.6).
type AssociationReleaseResponse struct {
	NodeID NodeID
	Cause  Cause
}

// VersionNotSupportedResponse (§7.4.4.7): header only.
type VersionNotSupportedResponse struct{}

// NodeReportRequest (§7.4.5.1): the Node Report procedure (§6.2.9), by
// which a UP function reports an event of the node rather than of one
// session; here the GTP-U paths to remote peers that Echo supervision
// found broken or working again (TS 23.007 §20.3.1).
type NodeReportRequest struct {
	NodeID NodeID
	// ReportType is the Node Report Type (§8.2.69): NodeReport* flags.
	ReportType uint8
	// PathFailurePeers are the Remote GTP-U Peers (§8.2.70) of the User
	// Plane Path Failure Report (§7.4.5.1-2); present with UPFR.
	PathFailurePeers []netip.Addr
	// PathRecoveryPeers are those of the User Plane Path Recovery Report
	// (§7.4.5.1-3, Rel-16); present with UPRR.
	PathRecoveryPeers []netip.Addr
}

// NodeReportResponse (§7.4.5.2).
type NodeReportResponse struct {
	NodeID      NodeID
	Cause       Cause
	OffendingIE uint16
}

// SessionEstablishmentRequest (§7.5.2).
type SessionEstablishmentRequest struct {
	NodeID     NodeID
	CPFSEID    FSEID
	CreatePDRs []CreatePDR
	CreateFARs []CreateFAR
	CreateQERs []CreateQER
	CreateURRs []CreateURR
	CreateBAR  *CreateBAR
	PDNType    uint8 // PDNType*; 0 = absent
	// RESTI is the Restoration Indication of the PFCPSEReq-Flags IE
	// (§8.2.136, Rel-16): the session restores one the UP function lost
	// (TS 23.527 §4.3.2), so a Local F-TEID given with it is one the UP
	// function allocated before (§5.5.1), not the CP function's choice.
	RESTI bool
}

// SessionEstablishmentResponse (§7.5.3).
type SessionEstablishmentResponse struct {
	NodeID       NodeID
	Cause        Cause
	OffendingIE  uint16 // 0 = absent
	UPFSEID      *FSEID
	CreatedPDRs  []CreatedPDR
	FailedRuleID *RuleID
}

// SessionModificationRequest (§7.5.4).
type SessionModificationRequest struct {
	CPFSEID *FSEID

	RemovePDRs []uint16
	RemoveFARs []uint32
	RemoveURRs []uint32
	RemoveQERs []uint32
	RemoveBAR  *uint8

	CreatePDRs []CreatePDR
	CreateFARs []CreateFAR
	CreateURRs []CreateURR
	CreateQERs []CreateQER
	CreateBAR  *CreateBAR

	UpdatePDRs []UpdatePDR
	UpdateFARs []UpdateFAR
	UpdateURRs []UpdateURR
	UpdateQERs []UpdateQER
	UpdateBAR  *UpdateBAR

	QueryURRs []uint32
}

// SessionModificationResponse (§7.5.5).
type SessionModificationResponse struct {
	Cause        Cause
	OffendingIE  uint16
	CreatedPDRs  []CreatedPDR
	UsageReports []UsageReport
	FailedRuleID *RuleID
}

// SessionDeletionRequest (§7.5.6): no IEs; the session is the header SEID.
type SessionDeletionRequest struct{}

// SessionDeletionResponse (§7.5.7).
type SessionDeletionResponse struct {
	Cause        Cause
	OffendingIE  uint16
	UsageReports []UsageReport
}

// SessionReportRequest (§7.5.8).
type SessionReportRequest struct {
	ReportType         uint8 // Report* flags
	DownlinkDataReport *DownlinkDataReport
	UsageReports       []UsageReport
	// ErrorIndicationReport comes with ReportERIR (§7.5.8.4).
	ErrorIndicationReport *ErrorIndicationReport
}

// SessionReportResponse (§7.5.9).
type SessionReportResponse struct {
	Cause       Cause
	OffendingIE uint16
}

func (*HeartbeatRequest) MessageType() uint8             { return MsgHeartbeatRequest }
func (*HeartbeatResponse) MessageType() uint8            { return MsgHeartbeatResponse }
func (*AssociationSetupRequest) MessageType() uint8      { return MsgAssociationSetupRequest }
func (*AssociationSetupResponse) MessageType() uint8     { return MsgAssociationSetupResponse }
func (*AssociationReleaseRequest) MessageType() uint8    { return MsgAssociationReleaseRequest }
func (*AssociationReleaseResponse) MessageType() uint8   { return MsgAssociationReleaseResponse }
func (*VersionNotSupportedResponse) MessageType() uint8  { return MsgVersionNotSupportedResponse }
func (*NodeReportRequest) MessageType() uint8            { return MsgNodeReportRequest }
func (*NodeReportResponse) MessageType() uint8           { return MsgNodeReportResponse }
func (*SessionEstablishmentRequest) MessageType() uint8  { return MsgSessionEstablishmentRequest }
func (*SessionEstablishmentResponse) MessageType() uint8 { return MsgSessionEstablishmentResponse }
func (*SessionModificationRequest) MessageType() uint8   { return MsgSessionModificationRequest }
func (*SessionModificationResponse) MessageType() uint8  { return MsgSessionModificationResponse }
func (*SessionDeletionRequest) MessageType() uint8       { return MsgSessionDeletionRequest }
func (*SessionDeletionResponse) MessageType() uint8      { return MsgSessionDeletionResponse }
func (*SessionReportRequest) MessageType() uint8         { return MsgSessionReportRequest }
func (*SessionReportResponse) MessageType() uint8        { return MsgSessionReportResponse }

// isSessionMessage reports whether type t carries a SEID (§7.2.2.1: session
// related messages are types 50..99).
func isSessionMessage(t uint8) bool { return t >= 50 }

// isRequest reports whether type t is a request (odd types in our set, §7.3).
func isRequest(t uint8) bool {
	switch t {
	case MsgHeartbeatRequest, MsgAssociationSetupRequest, MsgAssociationReleaseRequest,
		MsgNodeReportRequest,
		3, 7, 14, // PFD management, association update, session set deletion
		MsgSessionEstablishmentRequest, MsgSessionModificationRequest,
		MsgSessionDeletionRequest, MsgSessionReportRequest:
		return true
	}
	return false
}
