package ops

import (
	"context"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// Client is the consumer side of every operation over one binding: it
// implements each sbi interface by handing the operation and its
// messages to the Caller. Which producer answers is the Caller's
// business (an apiRoot, a shared-memory ring).
type Client struct {
	c Caller
	// NFInstanceID is the consumer's own instance ID, sent where an
	// operation asks for the requester (Nnssf_NSSelection's nf-id).
	NFInstanceID string
}

// NewClient returns a Client over c.
func NewClient(c Caller, nfInstanceID string) *Client {
	return &Client{c: c, NFInstanceID: nfInstanceID}
}

var (
	_ sbi.UEAuthentication             = (*Client)(nil)
	_ sbi.UDMUEAuthentication          = (*Client)(nil)
	_ sbi.SubscriberDataManagement     = (*Client)(nil)
	_ sbi.UEContextManagement          = (*Client)(nil)
	_ sbi.UECMNotifier                 = (*Client)(nil)
	_ sbi.SDMNotifier                  = (*Client)(nil)
	_ sbi.NetworkSliceSelection        = (*Client)(nil)
	_ sbi.NFManagement                 = (*Client)(nil)
	_ sbi.NFDiscovery                  = (*Client)(nil)
	_ sbi.NFStatusNotifier             = (*Client)(nil)
	_ sbi.AccessTokenService           = (*Client)(nil)
	_ sbi.DataChangeNotifier           = (*Client)(nil)
	_ sbi.DataRepository               = (*Client)(nil)
	_ sbi.PDUSession                   = (*Client)(nil)
	_ sbi.SMContextStatusNotifier      = (*Client)(nil)
	_ sbi.Communication                = (*Client)(nil)
	_ sbi.N1N2TransferFailureNotifier  = (*Client)(nil)
	_ sbi.SMPolicyControl              = (*Client)(nil)
	_ sbi.SMPolicyNotifier             = (*Client)(nil)
	_ sbi.AuthenticationDataRepository = (*Client)(nil)
	_ sbi.ContextDataRepository        = (*Client)(nil)
)

func (c *Client) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	rs, err := call[AuthenticateRequest, AuthenticateResponse](ctx, c.c, AUSFAuthenticate, &AuthenticateRequest{Info: req})
	return rs.AuthCtxID, rs.Ctx, err
}

func (c *Client) Confirm5gAka(ctx context.Context, authCtxID string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	rs, err := call[Confirm5gAkaRequest, Confirm5gAkaResponse](ctx, c.c, AUSFConfirm5gAka, &Confirm5gAkaRequest{AuthCtxID: authCtxID, Data: req})
	return rs.Result, err
}

func (c *Client) GenerateAuthData(ctx context.Context, supiOrSuci string, req *models.Udm_UEAU_AuthenticationInfoRequest) (*models.Udm_UEAU_AuthenticationInfoResult, error) {
	rs, err := call[GenerateAuthDataRequest, GenerateAuthDataResponse](ctx, c.c, UDMGenerateAuthData, &GenerateAuthDataRequest{SupiOrSuci: supiOrSuci, Info: req})
	return rs.Result, err
}

func (c *Client) ConfirmAuth(ctx context.Context, supi string, event *models.Udm_UEAU_AuthEvent) error {
	_, err := call[ConfirmAuthRequest, ConfirmAuthResponse](ctx, c.c, UDMConfirmAuth, &ConfirmAuthRequest{Supi: supi, Event: event})
	return err
}

func (c *Client) GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	rs, err := call[PLMNQuery, AmDataResponse](ctx, c.c, UDMGetAmData, &PLMNQuery{Supi: supi, PLMN: plmnModel(plmn)})
	return rs.Data, err
}

func (c *Client) GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	rs, err := call[PLMNQuery, NSSAIResponse](ctx, c.c, UDMGetNSSAI, &PLMNQuery{Supi: supi, PLMN: plmnModel(plmn)})
	return rs.Data, err
}

func (c *Client) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	rs, err := call[SmDataRequest, SmDataResponse](ctx, c.c, UDMGetSmData, &SmDataRequest{Supi: supi, Query: q})
	return rs.Data, err
}

func (c *Client) GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	rs, err := call[PLMNQuery, SmfSelectDataResponse](ctx, c.c, UDMGetSmfSelectData, &PLMNQuery{Supi: supi, PLMN: plmnModel(plmn)})
	return rs.Data, err
}

func (c *Client) RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (bool, error) {
	rs, err := call[RegisterAMFRequest, RegisterAMFResponse](ctx, c.c, UDMRegisterAMF, &RegisterAMFRequest{Supi: supi, Registration: reg})
	return rs.Created, err
}

func (c *Client) UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error {
	_, err := call[UpdateAMFRequest, Empty](ctx, c.c, UDMUpdateAMF, &UpdateAMFRequest{Supi: supi, Modification: mod})
	return err
}

func (c *Client) GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error) {
	rs, err := call[UEIDRequest, RegisterAMFResponse](ctx, c.c, UDMGetAMF, &UEIDRequest{Supi: supi})
	return rs.Registration, err
}

func (c *Client) DeregistrationNotify(ctx context.Context, uri string, d *models.Udm_UECM_DeregistrationData) error {
	_, err := call[DeregistrationNotifyRequest, Empty](ctx, c.c, UDMDeregistrationNotify, &DeregistrationNotifyRequest{URI: uri, Data: d})
	return err
}

func (c *Client) SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error {
	_, err := call[DataChangeNotifyRequest, Empty](ctx, c.c, UDMDataChangeNotify, &DataChangeNotifyRequest{Supi: supi, Notification: n})
	return err
}

func (c *Client) SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []sbi.SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error) {
	rs, err := call[NSSelectionRequest, NSSelectionResponse](ctx, c.c, NSSFSelect, &NSSelectionRequest{
		NFID: c.NFInstanceID, Supi: supi, Requested: requested, Subscribed: subscribed, TAI: tai})
	return rs.Info, err
}

func (c *Client) Register(ctx context.Context, profile *models.Nrf_NFMgmt_NFProfile) (*models.Nrf_NFMgmt_NFProfile, bool, error) {
	var id string
	if profile != nil {
		id = profile.NfInstanceId
	}
	rs, err := call[NFRegisterRequest, NFProfileResponse](ctx, c.c, NRFRegister, &NFRegisterRequest{ID: id, Profile: profile})
	return rs.Profile, rs.Created, err
}

func (c *Client) Update(ctx context.Context, nfInstanceID string, patch []models.PatchItem) (*models.Nrf_NFMgmt_NFProfile, error) {
	rs, err := call[NFHeartbeatRequest, NFHeartbeatResponse](ctx, c.c, NRFHeartbeat, &NFHeartbeatRequest{ID: nfInstanceID, Patch: patch})
	return rs.Profile, err
}

func (c *Client) GetProfile(ctx context.Context, nfInstanceID string) (*models.Nrf_NFMgmt_NFProfile, error) {
	rs, err := call[NFInstanceRequest, NFProfileResponse](ctx, c.c, NRFGetProfile, &NFInstanceRequest{ID: nfInstanceID})
	return rs.Profile, err
}

func (c *Client) Subscribe(ctx context.Context, sub *models.Nrf_NFMgmt_SubscriptionData) (*models.Nrf_NFMgmt_SubscriptionData, error) {
	rs, err := call[SubscribeRequest, SubscribeResponse](ctx, c.c, NRFSubscribe, &SubscribeRequest{Data: sub})
	if rs.Data != nil && rs.Data.SubscriptionId == "" {
		rs.Data.SubscriptionId = rs.ID
	}
	return rs.Data, err
}

func (c *Client) Unsubscribe(ctx context.Context, subscriptionID string) error {
	_, err := call[UnsubscribeRequest, Empty](ctx, c.c, NRFUnsubscribe, &UnsubscribeRequest{ID: subscriptionID})
	return err
}

func (c *Client) NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error {
	_, err := call[NFStatusNotifyRequest, Empty](ctx, c.c, NRFStatusNotify, &NFStatusNotifyRequest{URI: uri, Notification: n})
	return err
}

func (c *Client) AccessToken(ctx context.Context, req *models.Nrf_AccTok_AccessTokenReq) (*models.Nrf_AccTok_AccessTokenRsp, error) {
	rs, err := call[AccessTokenRequest, AccessTokenResponse](ctx, c.c, NRFAccessToken, &AccessTokenRequest{Req: req})
	return rs.Token, err
}

func (c *Client) Deregister(ctx context.Context, nfInstanceID string) error {
	_, err := call[NFInstanceRequest, Empty](ctx, c.c, NRFDeregister, &NFInstanceRequest{ID: nfInstanceID})
	return err
}

func (c *Client) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	rs, err := call[DiscoverRequest, DiscoverResponse](ctx, c.c, NRFDiscover, &DiscoverRequest{Target: target, Query: q})
	return rs.Result, err
}

func (c *Client) QueryAuthenticationSubscription(ctx context.Context, supi string) (*models.Udr_DR_AuthenticationSubscription, error) {
	rs, err := call[UEIDRequest, AuthSubscriptionResponse](ctx, c.c, UDRQueryAuthSubscription, &UEIDRequest{Supi: supi})
	return rs.Data, err
}

func (c *Client) AllocateSQN(ctx context.Context, supi string, sqnMS string) (*models.Udr_DR_SequenceNumber, error) {
	rs, err := call[AllocateSQNRequest, SequenceNumberResponse](ctx, c.c, UDRAllocateSQN, &AllocateSQNRequest{Supi: supi, Body: &models.Udr_DR_SequenceNumber{Sqn: sqnMS}})
	return rs.SQN, err
}

func (c *Client) QueryAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_AccessAndMobilitySubscriptionData, error) {
	rs, err := call[UDRPLMNRequest, UDRAmDataResponse](ctx, c.c, UDRQueryAmData, &UDRPLMNRequest{Supi: supi, PLMN: plmn.String()})
	return rs.Data, err
}

func (c *Client) QuerySmData(ctx context.Context, supi string, q sbi.SmDataQuery) (*models.Udr_DR_SmSubsData, error) {
	rs, err := call[UDRSmDataRequest, UDRSmDataResponse](ctx, c.c, UDRQuerySmData, &UDRSmDataRequest{Supi: supi, PLMN: q.PLMN.String(), Query: q})
	if err != nil {
		return nil, err
	}
	return &models.Udr_DR_SmSubsData{IndividualSmSubsData: rs.Data}, nil
}

func (c *Client) QuerySmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_SmfSelectionSubscriptionData, error) {
	rs, err := call[UDRPLMNRequest, UDRSmfSelectDataResponse](ctx, c.c, UDRQuerySmfSelectData, &UDRPLMNRequest{Supi: supi, PLMN: plmn.String()})
	return rs.Data, err
}

func (c *Client) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	rs, err := call[CreateSMContextRequest, CreateSMContextResponse](ctx, c.c, SMFCreateSMContext, &CreateSMContextRequest{Data: req.Data, N1SmMsg: req.N1SmMsg})
	if err != nil {
		return nil, err
	}
	return &sbi.SMContextCreated{Ref: rs.Ref, Data: rs.Data}, nil
}

func (c *Client) UpdateSMContext(ctx context.Context, ref string, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	rs, err := call[UpdateSMContextRequest, UpdateSMContextResponse](ctx, c.c, SMFUpdateSMContext, &UpdateSMContextRequest{
		Ref: ref, Data: req.Data, N1SmMsg: req.N1SmMsg, N2SmInfo: req.N2SmInfo})
	if err != nil {
		return nil, err
	}
	return &sbi.SMContextUpdated{Data: rs.Data, N1SmMsg: rs.N1SmMsg, N2SmInfo: rs.N2SmInfo}, nil
}

func (c *Client) ReleaseSMContext(ctx context.Context, ref string, req *sbi.SMContextRelease) error {
	rq := &ReleaseSMContextRequest{Ref: ref}
	if req != nil {
		rq.Data, rq.N2SmInfo = req.Data, req.N2SmInfo
	}
	_, err := call[ReleaseSMContextRequest, Empty](ctx, c.c, SMFReleaseSMContext, rq)
	return err
}

func (c *Client) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	_, err := call[StatusNotifyRequest, Empty](ctx, c.c, SMFStatusNotify, &StatusNotifyRequest{URI: uri, Notification: n})
	return err
}

func (c *Client) N1N2MessageTransfer(ctx context.Context, ueContextID string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	rs, err := call[N1N2TransferRequest, N1N2TransferResponse](ctx, c.c, AMFN1N2MessageTransfer, &N1N2TransferRequest{
		UEContextID: ueContextID, Data: req.Data, N1Msg: req.N1Msg, N2Info: req.N2Info})
	return rs.Data, err
}

func (c *Client) N1N2TransferFailureNotify(ctx context.Context, uri string, n *models.Amf_Comm_N1N2MsgTxfrFailureNotification) error {
	_, err := call[N1N2FailureNotifyRequest, Empty](ctx, c.c, AMFN1N2FailureNotify, &N1N2FailureNotifyRequest{URI: uri, Notification: n})
	return err
}

func (c *Client) CreateSMPolicy(ctx context.Context, req *models.Pcf_SMPolCtrl_SmPolicyContextData) (string, *models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	rs, err := call[CreateSMPolicyRequest, SMPolicyResponse](ctx, c.c, PCFCreateSMPolicy, &CreateSMPolicyRequest{Context: req})
	return rs.PolicyID, rs.Decision, err
}

func (c *Client) UpdateSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData) (*models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	rs, err := call[UpdateSMPolicyRequest, SMPolicyResponse](ctx, c.c, PCFUpdateSMPolicy, &UpdateSMPolicyRequest{PolicyID: policyID, Context: req})
	return rs.Decision, err
}

func (c *Client) DeleteSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyDeleteData) error {
	_, err := call[DeleteSMPolicyRequest, Empty](ctx, c.c, PCFDeleteSMPolicy, &DeleteSMPolicyRequest{PolicyID: policyID, Data: req})
	return err
}

func (c *Client) SMPolicyUpdateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_SmPolicyNotification) error {
	_, err := call[PolicyUpdateNotifyRequest, Empty](ctx, c.c, PCFUpdateNotify, &PolicyUpdateNotifyRequest{URI: uri, Notification: n})
	return err
}

func (c *Client) SMPolicyTerminateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_TerminationNotification) error {
	_, err := call[PolicyTerminateNotifyRequest, Empty](ctx, c.c, PCFTerminateNotify, &PolicyTerminateNotifyRequest{URI: uri, Notification: n})
	return err
}

func (c *Client) DataChanged(ctx context.Context, n *models.Udr_DR_DataChangeNotify) error {
	_, err := call[DataChangedRequest, Empty](ctx, c.c, UDRDataChangeNotify, &DataChangedRequest{Notification: n})
	return err
}

func (c *Client) ModifyAuthenticationSubscription(ctx context.Context, supi string, patch []models.PatchItem) error {
	patch, err := jsonValues(patch)
	if err != nil {
		return err
	}
	_, err = call[PatchRequest, Empty](ctx, c.c, UDRModifyAuthSubscription, &PatchRequest{Supi: supi, Patch: patch})
	return err
}

func (c *Client) CreateAuthenticationStatus(ctx context.Context, supi string, ev *models.Udm_UEAU_AuthEvent) error {
	_, err := call[AuthStatusRequest, Empty](ctx, c.c, UDRCreateAuthStatus, &AuthStatusRequest{Supi: supi, Event: ev})
	return err
}

func (c *Client) QueryAuthenticationStatus(ctx context.Context, supi string) (*models.Udm_UEAU_AuthEvent, error) {
	rs, err := call[UEIDRequest, AuthStatusResponse](ctx, c.c, UDRQueryAuthStatus, &UEIDRequest{Supi: supi})
	return rs.Event, err
}

func (c *Client) CreateAmfContext3gpp(ctx context.Context, supi string, reg *models.Udr_DR_Amf3GppAccessRegistration) (bool, error) {
	rs, err := call[AmfContext3gppRequest, AmfContext3gppCreated](ctx, c.c, UDRCreateAmfContext3gpp, &AmfContext3gppRequest{Supi: supi, Registration: reg})
	return rs.Created, err
}

func (c *Client) ModifyAmfContext3gpp(ctx context.Context, supi string, patch []models.PatchItem) error {
	patch, err := jsonValues(patch)
	if err != nil {
		return err
	}
	_, err = call[PatchRequest, Empty](ctx, c.c, UDRModifyAmfContext3gpp, &PatchRequest{Supi: supi, Patch: patch})
	return err
}

func (c *Client) QueryAmfContext3gpp(ctx context.Context, supi string) (*models.Udr_DR_Amf3GppAccessRegistration, error) {
	rs, err := call[UEIDRequest, AmfContext3gppResponse](ctx, c.c, UDRQueryAmfContext3gpp, &UEIDRequest{Supi: supi})
	return rs.Registration, err
}
