package ops

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/tern5g/tern/sbi"
)

// The operations, by service. Paths and operationIds are those of the
// Release 17 OpenAPI files (TS 29.509, 29.503, 29.504, 29.531, 29.510,
// 29.502, 29.518, 29.512).

// Nausf_UEAuthentication (TS 29.509 §5.2).
var (
	AUSFAuthenticate = define(Op{ID: 1, Name: sbi.OpAUSFAuthenticate, OperationID: "UeAuthenticationsPost",
		Method: http.MethodPost, Path: "/nausf-auth/v1/ue-authentications", Status: http.StatusCreated,
		ResponseMedia: "application/3gppHal+json"},
		func(ctx context.Context, p sbi.UEAuthentication, rq *AuthenticateRequest, rs *AuthenticateResponse) (err error) {
			rs.AuthCtxID, rs.Ctx, err = p.Authenticate(ctx, rq.Info)
			return err
		})
	AUSFConfirm5gAka = define(Op{ID: 2, Name: sbi.OpAUSFConfirm5gAka, OperationID: "UeAuthenticationsAuthCtxId5gAkaConfirmationPut",
		Method: http.MethodPut, Path: "/nausf-auth/v1/ue-authentications/{authCtxId}/5g-aka-confirmation", Status: http.StatusOK},
		func(ctx context.Context, p sbi.UEAuthentication, rq *Confirm5gAkaRequest, rs *Confirm5gAkaResponse) (err error) {
			rs.Result, err = p.Confirm5gAka(ctx, rq.AuthCtxID, rq.Data)
			return err
		})
)

// Nudm_UEAuthentication (TS 29.503 §5.4).
var (
	UDMGenerateAuthData = define(Op{ID: 3, Name: sbi.OpUDMGenerateAuthData, OperationID: "GenerateAuthData",
		Method: http.MethodPost, Path: "/nudm-ueau/v1/{supiOrSuci}/security-information/generate-auth-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.UDMUEAuthentication, rq *GenerateAuthDataRequest, rs *GenerateAuthDataResponse) (err error) {
			rs.Result, err = p.GenerateAuthData(ctx, rq.SupiOrSuci, rq.Info)
			return err
		})
	UDMConfirmAuth = define(Op{ID: 4, Name: sbi.OpUDMResultConfirmation, OperationID: "ConfirmAuth",
		Method: http.MethodPost, Path: "/nudm-ueau/v1/{supi}/auth-events", Status: http.StatusCreated},
		func(ctx context.Context, p sbi.UDMUEAuthentication, rq *ConfirmAuthRequest, rs *ConfirmAuthResponse) error {
			if err := p.ConfirmAuth(ctx, rq.Supi, rq.Event); err != nil {
				return err
			}
			// The resource created is the event itself (TS 29.503
			// §6.3.3.4.3.1); tern keeps no event store, so it is echoed.
			rs.Event, rs.EventID = rq.Event, rq.Supi+"-auth-event"
			return nil
		})
)

// Nudm_SDM (TS 29.503 §5.2).
var (
	UDMGetAmData = define(Op{ID: 5, Name: sbi.OpUDMGetAmData, OperationID: "GetAmData",
		Method: http.MethodGet, Path: "/nudm-sdm/v2/{supi}/am-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.SubscriberDataManagement, rq *PLMNQuery, rs *AmDataResponse) (err error) {
			plmn, err := rq.plmn()
			if err != nil {
				return err
			}
			rs.Data, err = p.GetAmData(ctx, rq.Supi, plmn)
			return err
		})
	UDMGetNSSAI = define(Op{ID: 6, Name: sbi.OpUDMGetNSSAI, OperationID: "GetNSSAI",
		Method: http.MethodGet, Path: "/nudm-sdm/v2/{supi}/nssai", Status: http.StatusOK},
		func(ctx context.Context, p sbi.SubscriberDataManagement, rq *PLMNQuery, rs *NSSAIResponse) (err error) {
			plmn, err := rq.plmn()
			if err != nil {
				return err
			}
			rs.Data, err = p.GetNSSAI(ctx, rq.Supi, plmn)
			return err
		})
	UDMGetSmData = define(Op{ID: 7, Name: sbi.OpUDMGetSmData, OperationID: "GetSmData",
		Method: http.MethodGet, Path: "/nudm-sdm/v2/{supi}/sm-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.SubscriberDataManagement, rq *SmDataRequest, rs *SmDataResponse) (err error) {
			rs.Data, err = p.GetSmData(ctx, rq.Supi, rq.Query)
			return err
		})
	UDMGetSmfSelectData = define(Op{ID: 8, Name: sbi.OpUDMGetSmfSelectData, OperationID: "GetSmfSelData",
		Method: http.MethodGet, Path: "/nudm-sdm/v2/{supi}/smf-select-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.SubscriberDataManagement, rq *PLMNQuery, rs *SmfSelectDataResponse) (err error) {
			plmn, err := rq.plmn()
			if err != nil {
				return err
			}
			rs.Data, err = p.GetSmfSelectData(ctx, rq.Supi, plmn)
			return err
		})
)

// Nudm_UECM (TS 29.503 §5.3).
var (
	UDMRegisterAMF = define(Op{ID: 9, Name: sbi.OpUDMRegisterAMF3GPP, OperationID: "3GppRegistration",
		Method: http.MethodPut, Path: "/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access", Status: http.StatusCreated, LocationSelf: true},
		func(ctx context.Context, p sbi.UEContextManagement, rq *RegisterAMFRequest, rs *RegisterAMFResponse) error {
			created, err := p.RegisterAMF3GPPAccess(ctx, rq.Supi, rq.Registration)
			if err != nil {
				return err
			}
			// The resource, created or replaced (TS 29.503 §6.2.3.2.3.1).
			rs.Registration, rs.Created = rq.Registration, created
			return nil
		})
	UDMUpdateAMF = define(Op{ID: 10, Name: sbi.OpUDMUpdateAMF3GPP, OperationID: "Update3GppRegistration",
		Method: http.MethodPatch, Path: "/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access", Status: http.StatusNoContent,
		RequestMedia: "application/merge-patch+json"},
		func(ctx context.Context, p sbi.UEContextManagement, rq *UpdateAMFRequest, _ *Empty) error {
			return p.UpdateAMF3GPPAccess(ctx, rq.Supi, rq.Modification)
		})
	UDMGetAMF = define(Op{ID: 11, Name: sbi.OpUDMGetAMF3GPP, OperationID: "Get3GppRegistration",
		Method: http.MethodGet, Path: "/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access", Status: http.StatusOK},
		func(ctx context.Context, p sbi.UEContextManagement, rq *UEIDRequest, rs *RegisterAMFResponse) (err error) {
			rs.Registration, err = p.GetAMF3GPPAccess(ctx, rq.Supi)
			return err
		})
)

// Nnssf_NSSelection (TS 29.531 §5.2).
var NSSFSelect = define(Op{ID: 12, Name: sbi.OpNSSFSelectForRegistration, OperationID: "NSSelectionGet",
	Method: http.MethodGet, Path: "/nnssf-nsselection/v2/network-slice-information", Status: http.StatusOK},
	func(ctx context.Context, p sbi.NetworkSliceSelection, rq *NSSelectionRequest, rs *NSSelectionResponse) (err error) {
		rs.Info, err = p.SelectForRegistration(ctx, rq.Supi, rq.Requested, rq.Subscribed, rq.TAI)
		return err
	})

// Nnrf_NFManagement and Nnrf_NFDiscovery (TS 29.510 §5.2, §5.3).
var (
	NRFRegister = define(Op{ID: 13, Name: sbi.OpNRFRegister, OperationID: "RegisterNFInstance",
		Method: http.MethodPut, Path: "/nnrf-nfm/v1/nf-instances/{nfInstanceID}", Status: http.StatusCreated, LocationSelf: true},
		func(ctx context.Context, p sbi.NFManagement, rq *NFRegisterRequest, rs *NFProfileResponse) (err error) {
			if rq.Profile != nil && rq.Profile.NfInstanceId == "" {
				rq.Profile.NfInstanceId = rq.ID
			}
			// TS 29.510 §5.2.2.2.2: the profile registers at the URI's
			// nfInstanceID; one naming another instance would be stored
			// where its Location does not point. A UUID is the same
			// whatever the case of its hex digits (RFC 4122 §3): the
			// instance takes the URI's spelling, which its Location has.
			if rq.Profile != nil && rq.Profile.NfInstanceId != rq.ID {
				if !strings.EqualFold(rq.Profile.NfInstanceId, rq.ID) {
					return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect,
						"nfInstanceId %q differs from the URI's %q", rq.Profile.NfInstanceId, rq.ID)
				}
				rq.Profile.NfInstanceId = rq.ID
			}
			rs.Profile, rs.Created, err = p.Register(ctx, rq.Profile)
			return err
		})
	NRFDeregister = define(Op{ID: 14, Name: sbi.OpNRFDeregister, OperationID: "DeregisterNFInstance",
		Method: http.MethodDelete, Path: "/nnrf-nfm/v1/nf-instances/{nfInstanceID}", Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.NFManagement, rq *NFInstanceRequest, _ *Empty) error {
			return p.Deregister(ctx, rq.ID)
		})
	NRFDiscover = define(Op{ID: 15, Name: sbi.OpNRFDiscover, OperationID: "SearchNFInstances",
		Method: http.MethodGet, Path: "/nnrf-disc/v1/nf-instances", Status: http.StatusOK},
		func(ctx context.Context, p sbi.NFDiscovery, rq *DiscoverRequest, rs *DiscoverResponse) (err error) {
			rs.Result, err = p.Discover(ctx, rq.Target, rq.Query)
			return err
		})
)

// Nudr_DataRepository (TS 29.504, TS 29.505).
var (
	// UDRQueryAuthSubscription allocates the SQN it answers (see
	// sbi.DataRepository.QueryAuthenticationSubscription) and carries K
	// and OPc: no cache may keep it (NoStore).
	UDRQueryAuthSubscription = define(Op{ID: 16, Name: sbi.OpUDRQueryAuthSubscription, OperationID: "QueryAuthSubsData",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/authentication-data/authentication-subscription", Status: http.StatusOK,
		NoStore: true},
		func(ctx context.Context, p sbi.DataRepository, rq *UEIDRequest, rs *AuthSubscriptionResponse) (err error) {
			rs.Data, err = p.QueryAuthenticationSubscription(ctx, rq.Supi)
			return err
		})
	// UDRAllocateSQN is tern's atomic SQN allocation (see
	// sbi.DataRepository.AllocateSQN): no 3GPP file describes it, so it
	// lives under a custom operation of the same resource.
	UDRAllocateSQN = define(Op{ID: 17, Name: sbi.OpUDRAllocateSQN,
		Method: http.MethodPost, Path: "/nudr-dr/v2/subscription-data/{ueId}/authentication-data/authentication-subscription/tern-allocate-sqn", Status: http.StatusOK,
		OptionalBody: true, NoStore: true},
		func(ctx context.Context, p sbi.DataRepository, rq *AllocateSQNRequest, rs *SequenceNumberResponse) (err error) {
			var sqnMS string
			if rq.Body != nil {
				sqnMS = rq.Body.Sqn
			}
			rs.SQN, err = p.AllocateSQN(ctx, rq.Supi, sqnMS)
			return err
		})
	UDRQueryAmData = define(Op{ID: 18, Name: sbi.OpUDRQueryAmData, OperationID: "QueryAmData",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/{servingPlmnId}/provisioned-data/am-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.DataRepository, rq *UDRPLMNRequest, rs *UDRAmDataResponse) (err error) {
			plmn, err := rq.plmn()
			if err != nil {
				return err
			}
			rs.Data, err = p.QueryAmData(ctx, rq.Supi, plmn)
			return err
		})
	UDRQuerySmData = define(Op{ID: 19, Name: sbi.OpUDRQuerySmData, OperationID: "QuerySmData",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/{servingPlmnId}/provisioned-data/sm-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.DataRepository, rq *UDRSmDataRequest, rs *UDRSmDataResponse) (err error) {
			q, err := rq.query()
			if err != nil {
				return err
			}
			sm, err := p.QuerySmData(ctx, rq.Supi, q)
			if sm != nil {
				rs.Data = sm.IndividualSmSubsData
			}
			return err
		})
	UDRQuerySmfSelectData = define(Op{ID: 20, Name: sbi.OpUDRQuerySmfSelectData, OperationID: "QuerySmfSelectData",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/{servingPlmnId}/provisioned-data/smf-selection-subscription-data", Status: http.StatusOK},
		func(ctx context.Context, p sbi.DataRepository, rq *UDRPLMNRequest, rs *UDRSmfSelectDataResponse) (err error) {
			plmn, err := rq.plmn()
			if err != nil {
				return err
			}
			rs.Data, err = p.QuerySmfSelectData(ctx, rq.Supi, plmn)
			return err
		})
)

// Nsmf_PDUSession for SM contexts (TS 29.502 §5.2.2).
var (
	SMFCreateSMContext = define(Op{ID: 21, Name: sbi.OpSMFCreateSMContext, OperationID: "PostSmContexts",
		Method: http.MethodPost, Path: "/nsmf-pdusession/v1/sm-contexts", Status: http.StatusCreated, SMError: true},
		func(ctx context.Context, p sbi.PDUSession, rq *CreateSMContextRequest, rs *CreateSMContextResponse) error {
			out, err := p.CreateSMContext(ctx, &sbi.SMContextCreate{Data: rq.Data, N1SmMsg: rq.N1SmMsg})
			if out != nil {
				rs.Ref, rs.Data = out.Ref, out.Data
			}
			return err
		})
	SMFUpdateSMContext = define(Op{ID: 22, Name: sbi.OpSMFUpdateSMContext, OperationID: "UpdateSmContext",
		Method: http.MethodPost, Path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify", Status: http.StatusOK, SMError: true},
		func(ctx context.Context, p sbi.PDUSession, rq *UpdateSMContextRequest, rs *UpdateSMContextResponse) error {
			out, err := p.UpdateSMContext(ctx, rq.Ref, &sbi.SMContextUpdate{Data: rq.Data, N1SmMsg: rq.N1SmMsg, N2SmInfo: rq.N2SmInfo})
			if out != nil {
				rs.Data, rs.N1SmMsg, rs.N2SmInfo = out.Data, out.N1SmMsg, out.N2SmInfo
			}
			return err
		})
	SMFReleaseSMContext = define(Op{ID: 23, Name: sbi.OpSMFReleaseSMContext, OperationID: "ReleaseSmContext",
		Method: http.MethodPost, Path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/release", Status: http.StatusNoContent,
		OptionalBody: true}, // TS 29.502 §6.1.3.3.4.3
		func(ctx context.Context, p sbi.PDUSession, rq *ReleaseSMContextRequest, _ *Empty) error {
			return p.ReleaseSMContext(ctx, rq.Ref, &sbi.SMContextRelease{Data: rq.Data, N2SmInfo: rq.N2SmInfo})
		})
	// SMFStatusNotify is the SMF's callback to the AMF's smContextStatusUri
	// (TS 29.502 §5.2.2.10; callback "smContextStatusNotification").
	SMFStatusNotify = define(Op{ID: 24, Name: sbi.OpSMFStatusNotify, OperationID: "smContextStatusNotification",
		Method: http.MethodPost, Callback: sbi.CallbackSMContextStatus, Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.SMContextStatusNotifier, rq *StatusNotifyRequest, _ *Empty) error {
			return p.SMContextStatusNotify(ctx, rq.URI, rq.Notification)
		})
)

// Namf_Communication (TS 29.518 §5.2.2).
var (
	AMFN1N2MessageTransfer = define(Op{ID: 25, Name: sbi.OpAMFN1N2MessageTransfer, OperationID: "N1N2MessageTransfer",
		Method: http.MethodPost, Path: "/namf-comm/v1/ue-contexts/{ueContextId}/n1-n2-messages", Status: http.StatusOK},
		func(ctx context.Context, p sbi.Communication, rq *N1N2TransferRequest, rs *N1N2TransferResponse) (err error) {
			rs.Data, err = p.N1N2MessageTransfer(ctx, rq.UEContextID, &sbi.N1N2Message{Data: rq.Data, N1Msg: rq.N1Msg, N2Info: rq.N2Info})
			if rs.SuccessStatus() == http.StatusAccepted && rq.Data != nil {
				rs.ID = strconv.Itoa(int(rq.Data.PduSessionId))
			}
			return err
		})
	// AMFN1N2FailureNotify goes to the n1n2FailureTxfNotifURI of a
	// transfer (TS 29.518 §5.2.2.3.2; callback "N1N2TransferFailure").
	AMFN1N2FailureNotify = define(Op{ID: 26, Name: sbi.OpAMFN1N2TransferFailureNotify, OperationID: "N1N2TransferFailureNotification",
		Method: http.MethodPost, Callback: sbi.CallbackN1N2Failure, Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.N1N2TransferFailureNotifier, rq *N1N2FailureNotifyRequest, _ *Empty) error {
			return p.N1N2TransferFailureNotify(ctx, rq.URI, rq.Notification)
		})
)

// Callbacks of Nudm_UECM and Nudm_SDM.
var (
	// UDMDeregistrationNotify goes to the AMF's deregCallbackUri (TS 29.503
	// §5.3.2.2.3; callback "deregistrationNotification").
	UDMDeregistrationNotify = define(Op{ID: 27, Name: sbi.OpUDMDeregistrationNotify, OperationID: "deregistrationNotification",
		Method: http.MethodPost, Callback: sbi.CallbackDeregistration, Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.UECMNotifier, rq *DeregistrationNotifyRequest, _ *Empty) error {
			return p.DeregistrationNotify(ctx, rq.URI, rq.Data)
		})
	// UDMDataChangeNotify goes to a consumer's SDM callback (TS 29.503
	// §5.2.2.3.2; callback "datachangeNotification").
	//
	// Departure: tern's consumers do not call Nudm_SDM_Subscribe; the UDM
	// notifies the AMF and the SMF it was wired to at this fixed path of
	// their apiRoot, naming the UE in the path.
	UDMDataChangeNotify = define(Op{ID: 28, Name: sbi.OpUDMDataChangeNotify, OperationID: "datachangeNotification",
		Method: http.MethodPost, Path: "/tern-sdm-callback/v1/{supi}/data-change", Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.SDMNotifier, rq *DataChangeNotifyRequest, _ *Empty) error {
			return p.SubscriptionDataChanged(ctx, rq.Supi, rq.Notification)
		})
)

// Npcf_SMPolicyControl (TS 29.512 §4.2).
var (
	PCFCreateSMPolicy = define(Op{ID: 29, Name: sbi.OpPCFCreateSMPolicy, OperationID: "CreateSMPolicy",
		Method: http.MethodPost, Path: "/npcf-smpolicycontrol/v1/sm-policies", Status: http.StatusCreated},
		func(ctx context.Context, p sbi.SMPolicyControl, rq *CreateSMPolicyRequest, rs *SMPolicyResponse) (err error) {
			rs.PolicyID, rs.Decision, err = p.CreateSMPolicy(ctx, rq.Context)
			return err
		})
	PCFUpdateSMPolicy = define(Op{ID: 30, Name: sbi.OpPCFUpdateSMPolicy, OperationID: "UpdateSMPolicy",
		Method: http.MethodPost, Path: "/npcf-smpolicycontrol/v1/sm-policies/{smPolicyId}/update", Status: http.StatusOK},
		func(ctx context.Context, p sbi.SMPolicyControl, rq *UpdateSMPolicyRequest, rs *SMPolicyResponse) (err error) {
			rs.Decision, err = p.UpdateSMPolicy(ctx, rq.PolicyID, rq.Context)
			return err
		})
	PCFDeleteSMPolicy = define(Op{ID: 31, Name: sbi.OpPCFDeleteSMPolicy, OperationID: "DeleteSMPolicy",
		Method: http.MethodPost, Path: "/npcf-smpolicycontrol/v1/sm-policies/{smPolicyId}/delete", Status: http.StatusNoContent,
		OptionalBody: true}, // TS 29.512 SmPolicyDeleteData
		func(ctx context.Context, p sbi.SMPolicyControl, rq *DeleteSMPolicyRequest, _ *Empty) error {
			return p.DeleteSMPolicy(ctx, rq.PolicyID, rq.Data)
		})
	// PCFUpdateNotify goes to {notificationUri}/update of the policy
	// association (TS 29.512 §4.2.3.2; callback "SmPolicyUpdateNotification").
	PCFUpdateNotify = define(Op{ID: 32, Name: sbi.OpPCFUpdateNotify, OperationID: "SmPolicyUpdateNotification",
		Method: http.MethodPost, Callback: sbi.CallbackSMPolicy, CallbackSuffix: "/update", Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.SMPolicyNotifier, rq *PolicyUpdateNotifyRequest, _ *Empty) error {
			return p.SMPolicyUpdateNotify(ctx, rq.URI, rq.Notification)
		})
)

// PCFTerminateNotify asks the SMF to end a policy association: it goes to
// {notificationUri}/terminate (TS 29.512 §4.2.3.3; callback
// "SmPolicyControlTerminationRequestNotification").
var PCFTerminateNotify = define(Op{ID: 33, Name: sbi.OpPCFTerminateNotify, OperationID: "SmPolicyControlTerminationRequestNotification",
	Method: http.MethodPost, Callback: sbi.CallbackSMPolicy, CallbackSuffix: "/terminate", Status: http.StatusNoContent},
	func(ctx context.Context, p sbi.SMPolicyNotifier, rq *PolicyTerminateNotifyRequest, _ *Empty) error {
		return p.SMPolicyTerminateNotify(ctx, rq.URI, rq.Notification)
	})

// The rest of Nnrf_NFManagement and Nnrf_AccessToken (TS 29.510 §5.2.2,
// §5.4).
var (
	NRFHeartbeat = define(Op{ID: 34, Name: sbi.OpNRFHeartbeat, OperationID: "UpdateNFInstance",
		Method: http.MethodPatch, Path: "/nnrf-nfm/v1/nf-instances/{nfInstanceID}", Status: http.StatusNoContent,
		RequestMedia: "application/json-patch+json"},
		func(ctx context.Context, p sbi.NFManagement, rq *NFHeartbeatRequest, rs *NFHeartbeatResponse) (err error) {
			rs.Profile, err = p.Update(ctx, rq.ID, rq.Patch)
			return err
		})
	NRFGetProfile = define(Op{ID: 35, Name: sbi.OpNRFGetProfile, OperationID: "GetNFInstance",
		Method: http.MethodGet, Path: "/nnrf-nfm/v1/nf-instances/{nfInstanceID}", Status: http.StatusOK},
		func(ctx context.Context, p sbi.NFManagement, rq *NFInstanceRequest, rs *NFProfileResponse) (err error) {
			rs.Profile, err = p.GetProfile(ctx, rq.ID)
			return err
		})
	NRFSubscribe = define(Op{ID: 36, Name: sbi.OpNRFSubscribe, OperationID: "CreateSubscription",
		Method: http.MethodPost, Path: "/nnrf-nfm/v1/subscriptions", Status: http.StatusCreated},
		func(ctx context.Context, p sbi.NFManagement, rq *SubscribeRequest, rs *SubscribeResponse) (err error) {
			rs.Data, err = p.Subscribe(ctx, rq.Data)
			if rs.Data != nil {
				rs.ID = rs.Data.SubscriptionId
			}
			return err
		})
	NRFUnsubscribe = define(Op{ID: 37, Name: sbi.OpNRFUnsubscribe, OperationID: "RemoveSubscription",
		Method: http.MethodDelete, Path: "/nnrf-nfm/v1/subscriptions/{subscriptionID}", Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.NFManagement, rq *UnsubscribeRequest, _ *Empty) error {
			return p.Unsubscribe(ctx, rq.ID)
		})
	// NRFStatusNotify goes to a subscription's nfStatusNotificationUri
	// (TS 29.510 §5.2.2.6; callback "onNFStatusEvent").
	NRFStatusNotify = define(Op{ID: 38, Name: sbi.OpNRFNotify, OperationID: "onNFStatusEvent",
		Method: http.MethodPost, Callback: sbi.CallbackNFStatus, Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.NFStatusNotifier, rq *NFStatusNotifyRequest, _ *Empty) error {
			return p.NFStatusNotify(ctx, rq.URI, rq.Notification)
		})
	// NRFAccessToken is the OAuth2 client credentials grant (TS 29.510
	// §5.4.2.2): a form-encoded request, answered with the token or an
	// OAuth2 error (RFC 6749 §5.2), not ProblemDetails, neither of which
	// may be cached (RFC 6749 §5.1; TS 29.510's OpenAPI lists
	// Cache-Control and Pragma on both).
	NRFAccessToken = define(Op{ID: 39, Name: sbi.OpNRFAccessToken, OperationID: "AccessTokenRequest",
		Method: http.MethodPost, Path: "/oauth2/token", Status: http.StatusOK, RequestMedia: "application/x-www-form-urlencoded",
		OAuth2: true, NoStore: true},
		func(ctx context.Context, p sbi.AccessTokenService, rq *AccessTokenRequest, rs *AccessTokenResponse) (err error) {
			rs.Token, err = p.AccessToken(ctx, rq.Req)
			return err
		})
)

// UDRDataChangeNotify is the UDR's notification of a changed subscriber to
// the UDM (TS 29.504 §5.2.2.3, callback "onDataChange"), at a fixed path
// (see sbi.DataChangeNotifier).
var UDRDataChangeNotify = define(Op{ID: 40, Name: sbi.OpUDRDataChangeNotify, OperationID: "onDataChange",
	Method: http.MethodPost, Path: "/tern-udr-callback/v1/data-change", Status: http.StatusNoContent},
	func(ctx context.Context, p sbi.DataChangeNotifier, rq *DataChangedRequest, _ *Empty) error {
		return p.DataChanged(ctx, rq.Notification)
	})

// The rest of Nudr_DataRepository that a standard UDM (free5GC's,
// Open5GS's) calls (TS 29.505), which tern's UDM does not: it writes no
// SQN back (UDRAllocateSQN and QueryAuthenticationSubscription hand SQNs
// out), and keeps its own registrations and authentication results.
var (
	UDRModifyAuthSubscription = define(Op{ID: 41, Name: sbi.OpUDRModifyAuthSubscription, OperationID: "ModifyAuthenticationSubscription",
		Method: http.MethodPatch, Path: "/nudr-dr/v2/subscription-data/{ueId}/authentication-data/authentication-subscription", Status: http.StatusNoContent,
		RequestMedia: "application/json-patch+json"},
		func(ctx context.Context, p sbi.AuthenticationDataRepository, rq *PatchRequest, _ *Empty) error {
			return p.ModifyAuthenticationSubscription(ctx, rq.Supi, rq.Patch)
		})
	UDRCreateAuthStatus = define(Op{ID: 42, Name: sbi.OpUDRCreateAuthStatus, OperationID: "CreateAuthenticationStatus",
		Method: http.MethodPut, Path: "/nudr-dr/v2/subscription-data/{ueId}/authentication-data/authentication-status", Status: http.StatusNoContent},
		func(ctx context.Context, p sbi.AuthenticationDataRepository, rq *AuthStatusRequest, _ *Empty) error {
			return p.CreateAuthenticationStatus(ctx, rq.Supi, rq.Event)
		})
	UDRQueryAuthStatus = define(Op{ID: 43, Name: sbi.OpUDRQueryAuthStatus, OperationID: "QueryAuthenticationStatus",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/authentication-data/authentication-status", Status: http.StatusOK},
		func(ctx context.Context, p sbi.AuthenticationDataRepository, rq *UEIDRequest, rs *AuthStatusResponse) (err error) {
			rs.Event, err = p.QueryAuthenticationStatus(ctx, rq.Supi)
			return err
		})
	UDRQueryAmfContext3gpp = define(Op{ID: 44, Name: sbi.OpUDRQueryAmfContext3gpp, OperationID: "QueryAmfContext3gpp",
		Method: http.MethodGet, Path: "/nudr-dr/v2/subscription-data/{ueId}/context-data/amf-3gpp-access", Status: http.StatusOK},
		func(ctx context.Context, p sbi.ContextDataRepository, rq *UEIDRequest, rs *AmfContext3gppResponse) (err error) {
			rs.Registration, err = p.QueryAmfContext3gpp(ctx, rq.Supi)
			return err
		})
	UDRCreateAmfContext3gpp = define(Op{ID: 45, Name: sbi.OpUDRCreateAmfContext3gpp, OperationID: "CreateAmfContext3gpp",
		Method: http.MethodPut, Path: "/nudr-dr/v2/subscription-data/{ueId}/context-data/amf-3gpp-access", Status: http.StatusCreated, LocationSelf: true},
		func(ctx context.Context, p sbi.ContextDataRepository, rq *AmfContext3gppRequest, rs *AmfContext3gppCreated) (err error) {
			rs.Created, err = p.CreateAmfContext3gpp(ctx, rq.Supi, rq.Registration)
			if rs.Created {
				rs.Registration = rq.Registration // the created resource
			}
			return err
		})
	UDRModifyAmfContext3gpp = define(Op{ID: 46, Name: sbi.OpUDRModifyAmfContext3gpp, OperationID: "AmfContext3gpp",
		Method: http.MethodPatch, Path: "/nudr-dr/v2/subscription-data/{ueId}/context-data/amf-3gpp-access", Status: http.StatusNoContent,
		RequestMedia: "application/json-patch+json"},
		func(ctx context.Context, p sbi.ContextDataRepository, rq *PatchRequest, _ *Empty) error {
			return p.ModifyAmfContext3gpp(ctx, rq.Supi, rq.Patch)
		})
)

// All lists every operation; All[i].ID == i+1.
var All = []*Op{
	AUSFAuthenticate, AUSFConfirm5gAka,
	UDMGenerateAuthData, UDMConfirmAuth,
	UDMGetAmData, UDMGetNSSAI, UDMGetSmData, UDMGetSmfSelectData,
	UDMRegisterAMF, UDMUpdateAMF, UDMGetAMF,
	NSSFSelect,
	NRFRegister, NRFDeregister, NRFDiscover,
	UDRQueryAuthSubscription, UDRAllocateSQN, UDRQueryAmData, UDRQuerySmData, UDRQuerySmfSelectData,
	SMFCreateSMContext, SMFUpdateSMContext, SMFReleaseSMContext, SMFStatusNotify,
	AMFN1N2MessageTransfer, AMFN1N2FailureNotify,
	UDMDeregistrationNotify, UDMDataChangeNotify,
	PCFCreateSMPolicy, PCFUpdateSMPolicy, PCFDeleteSMPolicy, PCFUpdateNotify,
	PCFTerminateNotify,
	NRFHeartbeat, NRFGetProfile, NRFSubscribe, NRFUnsubscribe, NRFStatusNotify, NRFAccessToken,
	UDRDataChangeNotify,
	UDRModifyAuthSubscription, UDRCreateAuthStatus, UDRQueryAuthStatus,
	UDRQueryAmfContext3gpp, UDRCreateAmfContext3gpp, UDRModifyAmfContext3gpp,
}

// ByID returns the operation with id, or nil.
func ByID(id uint16) *Op {
	if id == 0 || int(id) > len(All) {
		return nil
	}
	return All[id-1]
}
