package sbi

import (
	"context"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
)

// UEAuthentication is Nausf_UEAuthentication (TS 29.509 §5.2), served by the
// AUSF and consumed by the AMF (SEAF).
type UEAuthentication interface {
	// Authenticate is Nausf_UEAuthentication_Authenticate (TS 33.501 §6.1.3.2
	// steps 1-5). req.SupiOrSuci and req.ServingNetworkName are mandatory;
	// req.ResynchronizationInfo carries RAND+AUTS after a synchronisation
	// failure. For 5G-AKA, res.Var5gAuthData holds a models.Ausf_UEAU_Av5gAka
	// (read it with Av5gAkaOf) and authCtxID names the context that
	// Confirm5gAka confirms. Errors: CauseUserNotFound,
	// CauseServingNetworkNotAuthorized, CauseAuthenticationRejected.
	Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (authCtxID string, res *models.Ausf_UEAU_UEAuthenticationCtx, err error)

	// Confirm5gAka is the 5g-aka-confirmation PUT (TS 33.501 §6.1.3.2 steps
	// 9-11). A wrong RES* is not an error: the result says
	// AUTHENTICATION_FAILURE. On AUTHENTICATION_SUCCESS the response carries
	// SUPI and KSEAF (hex). The context is consumed either way. Errors:
	// CauseContextNotFound (unknown or expired authCtxID).
	Confirm5gAka(ctx context.Context, authCtxID string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error)
}

// UDMUEAuthentication is Nudm_UEAuthentication (TS 29.503 §5.4), served by
// the UDM and consumed by the AUSF.
type UDMUEAuthentication interface {
	// GenerateAuthData is Nudm_UEAuthentication_Get: de-conceals a SUCI if
	// needed and returns one 5G HE AV (RAND, AUTN, XRES*, KAUSF as hex) and
	// the SUPI. req.ResynchronizationInfo triggers re-synchronisation
	// (TS 33.102 §6.3.5). Errors: CauseUserNotFound,
	// CauseAuthenticationRejected (bad AUTS, undecryptable SUCI),
	// CauseMandatoryIEIncorrect.
	GenerateAuthData(ctx context.Context, supiOrSuci string, req *models.Udm_UEAU_AuthenticationInfoRequest) (*models.Udm_UEAU_AuthenticationInfoResult, error)

	// ConfirmAuth is Nudm_UEAuthentication_ResultConfirmation (TS 33.501
	// §6.1.4.1a): the AUSF reports the outcome of an authentication.
	ConfirmAuth(ctx context.Context, supi string, event *models.Udm_UEAU_AuthEvent) error
}

// SmDataQuery holds the optional query parameters of Nudm_SDM_Get for the
// sm-data data set (TS 29.503 §6.1.3.5.3.1). Zero fields do not filter.
type SmDataQuery struct {
	PLMN   identity.PLMN
	SNSSAI *identity.SNSSAI // single-nssai
	DNN    string           // dnn
}

// SubscriberDataManagement is Nudm_SDM (TS 29.503 §5.2), served by the UDM and
// consumed by the AMF and SMF.
type SubscriberDataManagement interface {
	// GetAmData returns the access and mobility subscription data (with the
	// subscribed NSSAI and UE-AMBR). Errors: CauseUserNotFound, CauseDataNotFound.
	GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error)
	// GetNSSAI returns the subscribed NSSAI (data set "nssai").
	GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error)
	// GetSmData returns the session management subscription data, one entry
	// per subscribed S-NSSAI, each with its DNN configurations.
	GetSmData(ctx context.Context, supi string, q SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error)
	// GetSmfSelectData returns the SMF selection subscription data (data
	// set "smf-select-data"): per subscribed S-NSSAI (keyed by its TS
	// 29.571 string form, "1" or "1-010203"), the DNNs with the default DNN
	// indicator the AMF needs when a UE names no DNN. Errors:
	// CauseUserNotFound, CauseDataNotFound.
	GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error)
}

// UEContextManagement is Nudm_UECM for 3GPP access (TS 29.503 §5.3), served by
// the UDM and consumed by the AMF.
type UEContextManagement interface {
	// RegisterAMF3GPPAccess is Nudm_UECM_Registration: reg.AmfInstanceId
	// becomes the serving AMF of supi. Errors: CauseUserNotFound,
	// CauseMandatoryIEMissing.
	RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (created bool, err error)
	// UpdateAMF3GPPAccess is the registration's modification (TS 29.503
	// §5.3.2.4, HTTP PATCH), mod naming the serving AMF by its GUAMI: with
	// purgeFlag it is the AMF's Nudm_UECM_Deregistration and removes the
	// registration; without, it updates the members mod carries (pei,
	// imsVoPs, ...) and the registration stays. Errors:
	// CauseContextNotFound, CauseInvalidGUAMI, CauseMandatoryIEMissing.
	UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error
	// GetAMF3GPPAccess is Nudm_UECM_Get for the amf-3gpp-access data set.
	// Errors: CauseContextNotFound.
	GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error)
}

// UECMNotifier receives Nudm_UECM_DeregistrationNotification (TS 29.503
// §5.3.2.2.3: the UDM's callback to the serving AMF at uri, the
// deregCallbackUri of its registration, which names the UE), served by the
// AMF: the UDM tells the AMF to deregister the UE, e.g. because its
// subscription was withdrawn (TS 23.502 §4.2.2.3.3).
type UECMNotifier interface {
	DeregistrationNotify(ctx context.Context, uri string, d *models.Udm_UECM_DeregistrationData) error
}

// SDMNotifier receives Nudm_SDM_Notification (TS 29.503 §5.2.2.3.2), served
// by a consumer of subscription data (the AMF): the data items named in n
// changed and should be read again (TS 23.502 §4.5.2).
type SDMNotifier interface {
	SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error
}

// DataChangeNotifier receives the UDR's data change notification (TS
// 29.504 §5.2.2.3 callback "onDataChange", body DataChangeNotify), served
// by the UDM: n.UeId's subscription was written, or deleted (a notify item
// whose change removes the whole resource "/").
//
// Departure: the UDM does not create a subs-to-notify subscription; the
// UDR notifies the UDMs it finds (or is wired to) of every subscriber
// change another process made, at a fixed callback path.
type DataChangeNotifier interface {
	DataChanged(ctx context.Context, n *models.Udr_DR_DataChangeNotify) error
}

// SubscriberDeleted and SubscriberWritten build the notification of a
// subscriber's deletion or change.
func SubscriberDeleted(supi string) *models.Udr_DR_DataChangeNotify {
	return &models.Udr_DR_DataChangeNotify{UeId: supi, NotifyItems: []models.NotifyItem{{ResourceId: "/subscription-data/" + supi,
		Changes: []models.ChangeItem{{Op: models.ChangeType_REMOVE, Path: "/"}}}}}
}

func SubscriberWritten(supi string) *models.Udr_DR_DataChangeNotify {
	return &models.Udr_DR_DataChangeNotify{UeId: supi, NotifyItems: []models.NotifyItem{{ResourceId: "/subscription-data/" + supi,
		Changes: []models.ChangeItem{{Op: models.ChangeType_REPLACE, Path: "/"}}}}}
}

// IsDeletion reports whether n removes the subscriber.
func IsDeletion(n *models.Udr_DR_DataChangeNotify) bool {
	for _, it := range n.NotifyItems {
		for _, c := range it.Changes {
			if c.Op == models.ChangeType_REMOVE && (c.Path == "/" || c.Path == "") {
				return true
			}
		}
	}
	return false
}

// SubscribedSNSSAI is one subscribed S-NSSAI with its default indication
// (TS 29.531 SubscribedSnssai, TS 23.501 §5.15.3).
type SubscribedSNSSAI struct {
	SNSSAI  identity.SNSSAI
	Default bool
}

// NetworkSliceSelection is Nnssf_NSSelection (TS 29.531 §5.2), served by the
// NSSF and consumed by the AMF.
//
// Departure from the contract draft: subscribed carries the default flag
// (SubscribedSNSSAI) because the NSSF needs it when the UE requests no
// S-NSSAI (TS 23.501 §5.15.5.2.1); SubscribedFromNssai builds it from the
// UDM's Nssai.
type NetworkSliceSelection interface {
	// SelectForRegistration is Nnssf_NSSelection_Get for a registration:
	// allowed NSSAI = requested ∩ subscribed ∩ supported in tai, or the
	// default subscribed S-NSSAIs (∩ supported) when requested is empty or
	// none of it can be allowed. Requested S-NSSAIs not allowed are listed in
	// RejectedNssaiInPlmn (not subscribed or not supported in the PLMN) or
	// RejectedNssaiInTa (not supported in tai). ConfiguredNssai lists the
	// subscribed S-NSSAIs supported somewhere in the PLMN. When nothing can
	// be allowed, AllowedNssaiList is empty and err is nil: the AMF rejects
	// the registration (5GMM cause #62, TS 24.501 §5.5.1.2.5).
	SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error)
}

// DataRepository is the subset of Nudr_DataRepository (TS 29.504, data model
// TS 29.505) that the UDM uses, served by the UDR.
type DataRepository interface {
	// QueryAuthenticationSubscription returns
	// subscription-data/{ueId}/authentication-data/authentication-subscription.
	// EncPermanentKey (K), EncOpcKey (OPc) and AuthenticationManagementField
	// are hex, unencrypted (tern keeps no transport key). The TS 29.505 model
	// has no OP field, so for a subscriber provisioned with OP the UDR
	// derives OPc (TS 35.206 §4.1) before answering.
	//
	// SequenceNumber.Sqn is an SQN handed out to this read: SQN_HE
	// advanced atomically, as by AllocateSQN, so that the reader may put it
	// in an authentication vector as it is. UDMs that are not tern's (free5GC,
	// Open5GS) do exactly that with the SQN they read; were it SQN_HE as
	// stored, two reads would give two UDMs the same SQN. Errors:
	// CauseUserNotFound.
	QueryAuthenticationSubscription(ctx context.Context, supi string) (*models.Udr_DR_AuthenticationSubscription, error)

	// AllocateSQN atomically advances the subscriber's SQN_HE to the SQN of
	// the next authentication vector and returns it (Sqn: 12 hex digits).
	// sqnMS (12 hex digits) is empty, or SQN_MS from a verified AUTS: then
	// SQN_HE is first raised to SQN_MS (TS 33.102 §6.3.5, Annex C.3.4).
	//
	// Departure from TS 29.505: 3GPP lets the UDM read the SQN and PATCH it
	// back; tern makes it one atomic operation so that UDM instances sharing
	// a UDR never issue the same SQN twice.
	AllocateSQN(ctx context.Context, supi string, sqnMS string) (*models.Udr_DR_SequenceNumber, error)

	// QueryAmData returns subscription-data/{ueId}/{servingPlmnId}/provisioned-data/am-data.
	// Errors: CauseUserNotFound.
	QueryAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_AccessAndMobilitySubscriptionData, error)

	// QuerySmData returns subscription-data/{ueId}/{servingPlmnId}/provisioned-data/sm-data
	// filtered by q. Errors: CauseUserNotFound.
	QuerySmData(ctx context.Context, supi string, q SmDataQuery) (*models.Udr_DR_SmSubsData, error)

	// QuerySmfSelectData returns
	// subscription-data/{ueId}/{servingPlmnId}/provisioned-data/smf-selection-subscription-data.
	// Errors: CauseUserNotFound.
	QuerySmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_SmfSelectionSubscriptionData, error)
}

// AuthenticationDataRepository is the rest of the authentication data of
// Nudr_DataRepository that a UDM other than tern's uses (TS 29.505:
// ModifyAuthenticationSubscription, CreateAuthenticationStatus,
// QueryAuthenticationStatus), served by the UDR.
type AuthenticationDataRepository interface {
	// ModifyAuthenticationSubscription applies a JSON Patch (RFC 6902) to
	// authentication-subscription: the UDM writing back sequenceNumber
	// (its sqn, as an object at /sequenceNumber or a string at
	// /sequenceNumber/sqn). SQN_HE only moves forward: a value at or below
	// what was handed out already changes nothing (TS 33.102 Annex C). Any
	// other member is the provisioning's. Errors: CauseUserNotFound,
	// CauseInvalidMsgFormat (a patch that does not apply),
	// CauseMandatoryIEIncorrect (an sqn that is not 12 hex digits),
	// CauseModificationNotAllowed (another member).
	ModifyAuthenticationSubscription(ctx context.Context, supi string, patch []models.PatchItem) error
	// CreateAuthenticationStatus stores the result of the UE's last
	// authentication (authentication-status, the AuthEvent the UDM got
	// from the AUSF). Errors: CauseUserNotFound, CauseMandatoryIEMissing.
	CreateAuthenticationStatus(ctx context.Context, supi string, ev *models.Udm_UEAU_AuthEvent) error
	// QueryAuthenticationStatus returns it. Errors: CauseUserNotFound,
	// CauseDataNotFound.
	QueryAuthenticationStatus(ctx context.Context, supi string) (*models.Udm_UEAU_AuthEvent, error)
}

// ContextDataRepository is the UE context data of Nudr_DataRepository
// for 3GPP access (TS 29.505 context-data/amf-3gpp-access:
// CreateAmfContext3gpp, AmfContext3gpp, QueryAmfContext3gpp): the serving
// AMF's registration, which a UDM other than tern's keeps in the UDR,
// served by the UDR.
type ContextDataRepository interface {
	// CreateAmfContext3gpp stores reg, replacing any; created says there
	// was none. Errors: CauseUserNotFound, CauseMandatoryIEMissing.
	CreateAmfContext3gpp(ctx context.Context, supi string, reg *models.Udr_DR_Amf3GppAccessRegistration) (created bool, err error)
	// ModifyAmfContext3gpp applies a JSON Patch (RFC 6902) to it. Errors:
	// CauseDataNotFound, CauseInvalidMsgFormat, CauseMandatoryIEIncorrect.
	ModifyAmfContext3gpp(ctx context.Context, supi string, patch []models.PatchItem) error
	// QueryAmfContext3gpp returns it. Errors: CauseDataNotFound.
	QueryAmfContext3gpp(ctx context.Context, supi string) (*models.Udr_DR_Amf3GppAccessRegistration, error)
}
