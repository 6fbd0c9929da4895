package sbi

import (
	"context"
	"fmt"

	"github.com/free5gc/openapi/models"
)

// Binary parts. On the HTTP binding, N1 and N2 contents travel as parts of
// a multipart/related body that the JSON model references by content ID
// (TS 29.502 §6.1.2.4, TS 29.518 §6.1.2.4). The in-process binding carries
// them as byte slices beside the model; the model's RefToBinaryData fields
// still name them (ContentID* below), so that the HTTP binding is mechanical.
const (
	ContentIDN1SM = "n1SmMsg"  // a 5GSM message, plain (TS 24.501 §8.3)
	ContentIDN2SM = "n2SmInfo" // an NGAP SM transfer IE (TS 38.413 §9.3.4)
)

// Callback paths: where an NF serves the notifications addressed to the
// URIs it hands out ({apiRoot}{path}...), so that every binding can route
// them. The rest of the URI is the NF's own.
const (
	CallbackSMContextStatus = "/namf-callback/v1/smContextStatus/" // + {supi}/{pduSessionId}/{n}
	CallbackDeregistration  = "/namf-callback/v1/deregistration/"  // + {supi}
	CallbackN1N2Failure     = "/nsmf-callback/v1/n1n2-failure/"    // + {smContextRef}
	CallbackNFStatus        = "/tern-nrf-callback/v1/nf-status"    // + anything the subscriber likes
	CallbackSMPolicy        = "/nsmf-callback/v1/sm-policy/"       // + {smContextRef}/update or /terminate
)

// Application error causes of Nsmf_PDUSession (TS 29.502 §6.1.7.3) and
// Namf_Communication (TS 29.518 §6.1.7.3) that tern uses.
const (
	CauseDNNDenied            = "DNN_DENIED"
	CauseDNNNotSupported      = "DNN_NOT_SUPPORTED"
	CausePDUTypeDenied        = "PDUTYPE_DENIED"
	CauseSubscriptionDenied   = "SUBSCRIPTION_DENIED"
	CauseInsufficientResSlice = "INSUFFICIENT_RESOURCES_SLICE_DNN"
	CauseN1SMError            = "N1_SM_ERROR"
	CauseN2SMError            = "N2_SM_ERROR"
	CauseUENotReachable       = "UE_NOT_REACHABLE"
	CauseUPFNotResponding     = "UPF_NOT_RESPONDING"
)

// SMContextCreate is the body of Nsmf_PDUSession_CreateSMContext.
// N1SmMsg is the PDU Session Establishment Request.
type SMContextCreate struct {
	Data    *models.Smf_PDUSess_SmContextCreateData
	N1SmMsg []byte
}

// SMContextCreated is the 201 answer: Ref is the smContextRef of the
// created resource (the Location header's last segment).
type SMContextCreated struct {
	Ref  string
	Data *models.Smf_PDUSess_SmContextCreatedData
}

// SMContextUpdate is the body of Nsmf_PDUSession_UpdateSMContext: an N1 SM
// message from the UE and/or an N2 SM transfer from the gNB
// (Data.N2SmInfoType says which), or a state change (Data.UpCnxState,
// Data.Release, ...).
type SMContextUpdate struct {
	Data     *models.Smf_PDUSess_SmContextUpdateData
	N1SmMsg  []byte
	N2SmInfo []byte
}

// SMContextUpdated is the 200 answer; the N1/N2 parts, when present, are for
// the AMF to deliver (Data.N2SmInfoType names the N2 transfer).
type SMContextUpdated struct {
	Data     *models.Smf_PDUSess_SmContextUpdatedData
	N1SmMsg  []byte
	N2SmInfo []byte
}

// SMContextRelease is the body of Nsmf_PDUSession_ReleaseSMContext; N2SmInfo
// is a PDU Session Resource Release Response Transfer when the AMF has one.
type SMContextRelease struct {
	Data     *models.Smf_PDUSess_SmContextReleaseData
	N2SmInfo []byte
}

// SMContextError is the error answer of CreateSMContext and UpdateSMContext
// when it carries binary parts (TS 29.502 §6.1.6.2.6 SmContextCreateError,
// §6.1.6.2.7 SmContextUpdateError): for instance a rejected establishment
// returns 403 with N1SmMsg = PDU Session Establishment Reject, which the AMF
// forwards to the UE (TS 23.502 §4.3.2.2.1 step 3).
type SMContextError struct {
	Problem      *ProblemDetails
	N1SmMsg      []byte
	N2SmInfo     []byte
	N2SmInfoType models.Smf_PDUSess_N2SmInfoType
}

func (e *SMContextError) Error() string {
	if e.Problem == nil {
		return "sm context error"
	}
	return fmt.Sprintf("sm context: %v", e.Problem)
}

// Unwrap lets errors.As find the ProblemDetails (CauseOf, StatusOf).
func (e *SMContextError) Unwrap() error {
	if e.Problem == nil {
		return nil
	}
	return e.Problem
}

// PDUSession is Nsmf_PDUSession for SM contexts (TS 29.502 §5.2.2), served by
// the SMF and consumed by the AMF.
type PDUSession interface {
	// CreateSMContext is Nsmf_PDUSession_CreateSMContext (TS 29.502
	// §5.2.2.2, TS 23.502 §4.3.2.2.1 step 3). Errors: *SMContextError
	// (with the 5GSM reject in N1SmMsg) or *ProblemDetails.
	CreateSMContext(ctx context.Context, req *SMContextCreate) (*SMContextCreated, error)
	// UpdateSMContext is Nsmf_PDUSession_UpdateSMContext (TS 29.502
	// §5.2.2.3). Errors: *SMContextError, *ProblemDetails
	// (CauseContextNotFound for an unknown ref).
	UpdateSMContext(ctx context.Context, ref string, req *SMContextUpdate) (*SMContextUpdated, error)
	// ReleaseSMContext is Nsmf_PDUSession_ReleaseSMContext (TS 29.502
	// §5.2.2.4): the AMF releases the context (deregistration, AMF-side
	// release). Errors: CauseContextNotFound.
	ReleaseSMContext(ctx context.Context, ref string, req *SMContextRelease) error
}

// N1N2Message is the body of Namf_Communication_N1N2MessageTransfer: N1Msg is
// a 5GSM message, N2Info an NGAP SM transfer (Data.N2InfoContainer.SmInfo
// says which, with the PDU session ID and S-NSSAI).
type N1N2Message struct {
	Data   *models.Amf_Comm_N1N2MessageTransferReqData
	N1Msg  []byte
	N2Info []byte
}

// Communication is the part of Namf_Communication (TS 29.518 §5.2.2) that
// SMFs consume, served by the AMF.
type Communication interface {
	// N1N2MessageTransfer is Namf_Communication_N1N2MessageTransfer (TS
	// 29.518 §5.2.2.3.1): ueContextID is the SUPI. With N2 content the AMF
	// sends PDU Session Resource Setup/Modify/Release Request (per
	// Data.N2InfoContainer.SmInfo.N2InfoContent.NgapIeType) carrying the N1
	// message as its NAS-PDU; N1 alone goes in a DL NAS Transport. The answer
	// says N1_N2_TRANSFER_INITIATED for a UE in CM-CONNECTED, and
	// ATTEMPTING_TO_REACH_UE for one in CM-IDLE, which the AMF pages
	// (TS 23.502 §4.2.3.3): the content is delivered when the UE answers,
	// and if it does not, the AMF calls the requester's
	// Data.N1n2FailureTxfNotifURI (N1N2TransferFailureNotifier).
	// Errors: CauseContextNotFound (unknown UE), CauseUENotReachable (the
	// mobile reachable timer ran out, TS 24.501 §5.3.7).
	N1N2MessageTransfer(ctx context.Context, ueContextID string, req *N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error)
}

// N1N2TransferFailureNotifier receives Namf_Communication_N1N2Transfer
// FailureNotification (TS 29.518 §5.2.2.3.2): the AMF could not deliver an
// N1N2MessageTransfer it answered with ATTEMPTING_TO_REACH_UE (the paged UE
// did not answer: cause UE_NOT_RESPONDING). uri is the
// n1n2FailureTxfNotifURI of the transfer; the SMF serves it.
type N1N2TransferFailureNotifier interface {
	N1N2TransferFailureNotify(ctx context.Context, uri string, n *models.Amf_Comm_N1N2MsgTxfrFailureNotification) error
}

// SMContextStatusNotifier receives Nsmf_PDUSession_SMContextStatusNotify
// (TS 29.502 §5.2.2.10): the SMF tells the AMF that an SM context is gone
// (network-requested release completed), so the AMF forgets the PDU session.
// The AMF serves it at the smContextStatusUri it gave at creation, which
// the SMF passes as uri: the URI names the UE, the PDU session and the
// creation, so that a late notification for an old context never removes
// a newer session that reuses its PDU session ID.
type SMContextStatusNotifier interface {
	SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error
}

// SMPolicyControl is Npcf_SMPolicyControl (TS 29.512 §4.2), served by the PCF
// and consumed by the SMF.
type SMPolicyControl interface {
	// CreateSMPolicy is Npcf_SMPolicyControl_Create (TS 29.512 §4.2.2): the
	// decision carries the session rule (authorized session AMBR, default
	// QoS: 5QI, ARP) for the default QoS flow. Errors: CauseUserNotFound,
	// "DNN_NOT_ALLOWED"-style causes of TS 29.512 §5.7.3.
	CreateSMPolicy(ctx context.Context, req *models.Pcf_SMPolCtrl_SmPolicyContextData) (policyID string, dec *models.Pcf_SMPolCtrl_SmPolicyDecision, err error)
	// UpdateSMPolicy is Npcf_SMPolicyControl_Update (TS 29.512 §4.2.4).
	UpdateSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData) (*models.Pcf_SMPolCtrl_SmPolicyDecision, error)
	// DeleteSMPolicy is Npcf_SMPolicyControl_Delete (TS 29.512 §4.2.5).
	DeleteSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyDeleteData) error
}

// SMPolicyNotifier receives Npcf_SMPolicyControl_UpdateNotify (TS 29.512
// §4.2.3): a policy change the PCF pushes (for instance a new session AMBR
// or 5QI), which the SMF applies with a network-requested PDU session
// modification (TS 23.502 §4.3.3.2 step 1b). The SMF serves it at the
// notificationUri it gave when it created the association: uri is that URI
// followed by /update (or /terminate), n.ResourceUri names the association.
type SMPolicyNotifier interface {
	SMPolicyUpdateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_SmPolicyNotification) error
	// SMPolicyTerminateNotify is the PCF's request to end the policy
	// association (TS 29.512 §4.2.3.3, {notificationUri}/terminate): the
	// SMF releases the PDU session, then deletes the association (TS
	// 23.502 §4.3.4.2 step 1c).
	SMPolicyTerminateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_TerminationNotification) error
}
