// Package opstest is the conformance suite every SBI binding passes: a
// fake producer of every operation that answers fixed values and records
// what it received, and Run, which calls each operation through a
// binding's ops.Client and checks that arguments and answers (errors
// included) arrive intact.
package opstest

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// Producer implements every sbi interface of ops.All. Each method records
// its arguments under the operation's name and answers with fixed values;
// a SUPI of FailSUPI makes it answer the operation's error instead.
type Producer struct {
	mu   sync.Mutex
	seen map[string][]any
}

// FailSUPI (or ref/ID "fail", or the NF instance FailNF) makes the
// producer fail the call.
const (
	FailSUPI = "imsi-001010000000999"
	FailNF   = "00000000-0000-4000-8000-00000000dead"
	// NFID is the NF instance the suite registers.
	NFID = "6f1c0b0e-0000-4000-8000-000000000004"
)

// NewProducer returns an empty Producer.
func NewProducer() *Producer { return &Producer{seen: map[string][]any{}} }

func (p *Producer) record(op sbi.Operation, args ...any) {
	p.mu.Lock()
	p.seen[string(op)] = args
	p.mu.Unlock()
}

// Seen returns the arguments of the last call of op.
func (p *Producer) Seen(op sbi.Operation) []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[string(op)]
}

var notFound = sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "no such subscriber")

func fails(id string) bool { return id == FailSUPI || id == "fail" }

func (p *Producer) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	p.record(sbi.OpAUSFAuthenticate, req)
	if fails(req.SupiOrSuci) {
		return "", nil, notFound
	}
	return "ctx-1", AuthCtx(), nil
}

func (p *Producer) Confirm5gAka(ctx context.Context, id string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	p.record(sbi.OpAUSFConfirm5gAka, id, req)
	if fails(id) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "gone")
	}
	return &models.Ausf_UEAU_ConfirmationDataResponse{AuthResult: models.Ausf_UEAU_AuthResult_SUCCESS, Supi: SUPI, Kseaf: strings.Repeat("ab", 32)}, nil
}

func (p *Producer) GenerateAuthData(ctx context.Context, id string, req *models.Udm_UEAU_AuthenticationInfoRequest) (*models.Udm_UEAU_AuthenticationInfoResult, error) {
	p.record(sbi.OpUDMGenerateAuthData, id, req)
	if fails(id) {
		return nil, notFound
	}
	return &models.Udm_UEAU_AuthenticationInfoResult{AuthType: models.Udm_UEAU_AuthType_5_G_AKA, Supi: SUPI,
		AuthenticationVector: &models.Udm_UEAU_AuthenticationVector{AvType: models.Udm_UEAU_AvType_5_G_HE_AKA,
			Rand: strings.Repeat("01", 16), Autn: strings.Repeat("02", 16), XresStar: strings.Repeat("03", 16), Kausf: strings.Repeat("04", 32)}}, nil
}

func (p *Producer) ConfirmAuth(ctx context.Context, supi string, e *models.Udm_UEAU_AuthEvent) error {
	p.record(sbi.OpUDMResultConfirmation, supi, e)
	if fails(supi) {
		return notFound
	}
	return nil
}

func (p *Producer) GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	p.record(sbi.OpUDMGetAmData, supi, plmn)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udm_SDM_AccessAndMobilitySubscriptionData{SubscribedUeAmbr: &models.AmbrRm{Uplink: "1 Gbps", Downlink: "2 Gbps"},
		Nssai: &models.Udm_SDM_Nssai{DefaultSingleNssais: []models.Snssai{{Sst: 1, Sd: "010203"}}}}, nil
}

func (p *Producer) GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	p.record(sbi.OpUDMGetNSSAI, supi, plmn)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udm_SDM_Nssai{DefaultSingleNssais: []models.Snssai{{Sst: 1}}}, nil
}

func (p *Producer) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	p.record(sbi.OpUDMGetSmData, supi, q)
	if fails(supi) {
		return nil, notFound
	}
	return []models.Udm_SDM_SessionManagementSubscriptionData{{SingleNssai: &models.Snssai{Sst: 1},
		DnnConfigurations: map[string]models.Udm_SDM_DnnConfiguration{"internet": {
			PduSessionTypes: &models.Udm_SDM_PduSessionTypes{DefaultSessionType: models.PduSessionType_IPV4},
			SscModes:        &models.Udm_SDM_SscModes{DefaultSscMode: models.SscMode_1}}}}}, nil
}

func (p *Producer) GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	p.record(sbi.OpUDMGetSmfSelectData, supi, plmn)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udm_SDM_SmfSelectionSubscriptionData{SubscribedSnssaiInfos: map[string]models.Udm_SDM_SnssaiInfo{
		"1": {DnnInfos: []models.Udm_SDM_DnnInfo{{Dnn: "internet", DefaultDnnIndicator: true}}}}}, nil
}

func (p *Producer) RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (bool, error) {
	p.record(sbi.OpUDMRegisterAMF3GPP, supi, reg)
	if fails(supi) {
		return false, notFound
	}
	return true, nil
}

func (p *Producer) UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error {
	p.record(sbi.OpUDMUpdateAMF3GPP, supi, mod)
	if fails(supi) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "none")
	}
	return nil
}

func (p *Producer) GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error) {
	p.record(sbi.OpUDMGetAMF3GPP, supi)
	if fails(supi) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "none")
	}
	return AMFRegistration(), nil
}

func (p *Producer) DeregistrationNotify(ctx context.Context, uri string, d *models.Udm_UECM_DeregistrationData) error {
	p.record(sbi.OpUDMDeregistrationNotify, uri, d)
	if strings.HasSuffix(uri, FailSUPI) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "none")
	}
	return nil
}

func (p *Producer) SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error {
	p.record(sbi.OpUDMDataChangeNotify, supi, n)
	if fails(supi) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "none")
	}
	return nil
}

func (p *Producer) SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []sbi.SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error) {
	p.record(sbi.OpNSSFSelectForRegistration, requested, subscribed, tai)
	if tai.TAC == 0xdead {
		return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseSNSSAINotSupported, "no slice")
	}
	return &models.Nssf_NSSel_AuthorizedNetworkSliceInfo{AllowedNssaiList: []models.Nssf_NSSel_AllowedNssai{{
		AllowedSnssaiList: []models.Nssf_NSSel_AllowedSnssai{{AllowedSnssai: &models.Snssai{Sst: 1}}}, AccessType: models.AccessType_3_GPP_ACCESS}}}, nil
}

func (p *Producer) Register(ctx context.Context, prof *models.Nrf_NFMgmt_NFProfile) (*models.Nrf_NFMgmt_NFProfile, bool, error) {
	p.record(sbi.OpNRFRegister, prof)
	if prof == nil || prof.NfInstanceId == FailNF {
		return nil, false, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "profile")
	}
	// A profile registered twice is replaced: 200 instead of 201.
	return prof, prof.HeartBeatTimer == 0, nil
}

func (p *Producer) Update(ctx context.Context, id string, patch []models.PatchItem) (*models.Nrf_NFMgmt_NFProfile, error) {
	p.record(sbi.OpNRFHeartbeat, id, patch)
	switch id {
	case FailNF:
		return nil, sbi.ErrNFInstanceNotFound
	case NFID:
		return nil, nil
	}
	return &models.Nrf_NFMgmt_NFProfile{NfInstanceId: id, NfType: sbi.NFTypeSMF, NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED, Ipv4Addresses: []string{"127.0.0.1"}}, nil
}

func (p *Producer) GetProfile(ctx context.Context, id string) (*models.Nrf_NFMgmt_NFProfile, error) {
	p.record(sbi.OpNRFGetProfile, id)
	if id == FailNF {
		return nil, sbi.ErrNFInstanceNotFound
	}
	return &models.Nrf_NFMgmt_NFProfile{NfInstanceId: id, NfType: sbi.NFTypeSMF, NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED, Ipv4Addresses: []string{"127.0.0.1"}}, nil
}

func (p *Producer) Subscribe(ctx context.Context, s *models.Nrf_NFMgmt_SubscriptionData) (*models.Nrf_NFMgmt_SubscriptionData, error) {
	p.record(sbi.OpNRFSubscribe, s)
	if s.NfStatusNotificationUri == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfStatusNotificationUri")
	}
	out := *s
	out.SubscriptionId = "sub1"
	return &out, nil
}

func (p *Producer) Unsubscribe(ctx context.Context, id string) error {
	p.record(sbi.OpNRFUnsubscribe, id)
	if id == "fail" {
		return sbi.ErrSubscriptionNotFound
	}
	return nil
}

func (p *Producer) NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error {
	p.record(sbi.OpNRFNotify, uri, n)
	return nil
}

func (p *Producer) AccessToken(ctx context.Context, req *models.Nrf_AccTok_AccessTokenReq) (*models.Nrf_AccTok_AccessTokenRsp, error) {
	p.record(sbi.OpNRFAccessToken, req)
	if req.NfInstanceId == FailNF {
		return nil, sbi.NewOAuth2Error(http.StatusBadRequest, sbi.OAuth2InvalidClient, "unknown requester")
	}
	return &models.Nrf_AccTok_AccessTokenRsp{Access_token: "eyJ0.e30.sig", Token_type: "Bearer", Expires_in: 3600, Scope: req.Scope}, nil
}

func (p *Producer) Deregister(ctx context.Context, id string) error {
	p.record(sbi.OpNRFDeregister, id)
	if id == FailNF {
		return sbi.ErrNFInstanceNotFound
	}
	return nil
}

func (p *Producer) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	p.record(sbi.OpNRFDiscover, target, q)
	return &models.Nrf_NFDisc_SearchResult{ValidityPeriod: 3600, NfInstances: []models.Nrf_NFDisc_NFProfile{{
		NfInstanceId: "6f1c0b0e-0000-4000-8000-000000000001", NfType: target, NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED}}}, nil
}

func (p *Producer) QueryAuthenticationSubscription(ctx context.Context, supi string) (*models.Udr_DR_AuthenticationSubscription, error) {
	p.record(sbi.OpUDRQueryAuthSubscription, supi)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udr_DR_AuthenticationSubscription{AuthenticationMethod: models.Udr_DR_AuthMethod_5_G_AKA,
		EncPermanentKey: strings.Repeat("0a", 16), EncOpcKey: strings.Repeat("0b", 16),
		SequenceNumber: &models.Udr_DR_SequenceNumber{Sqn: "000000000021"}}, nil
}

func (p *Producer) AllocateSQN(ctx context.Context, supi, sqnMS string) (*models.Udr_DR_SequenceNumber, error) {
	p.record(sbi.OpUDRAllocateSQN, supi, sqnMS)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udr_DR_SequenceNumber{Sqn: "000000000041"}, nil
}

func (p *Producer) QueryAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_AccessAndMobilitySubscriptionData, error) {
	p.record(sbi.OpUDRQueryAmData, supi, plmn)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udr_DR_AccessAndMobilitySubscriptionData{Gpsis: []string{"msisdn-0900000000"}}, nil
}

func (p *Producer) QuerySmData(ctx context.Context, supi string, q sbi.SmDataQuery) (*models.Udr_DR_SmSubsData, error) {
	p.record(sbi.OpUDRQuerySmData, supi, q)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udr_DR_SmSubsData{IndividualSmSubsData: []models.Udm_SDM_SessionManagementSubscriptionData{{SingleNssai: &models.Snssai{Sst: 1}}}}, nil
}

func (p *Producer) QuerySmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_SmfSelectionSubscriptionData, error) {
	p.record(sbi.OpUDRQuerySmfSelectData, supi, plmn)
	if fails(supi) {
		return nil, notFound
	}
	return &models.Udr_DR_SmfSelectionSubscriptionData{SupportedFeatures: "0"}, nil
}

func (p *Producer) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	p.record(sbi.OpSMFCreateSMContext, req.Data, req.N1SmMsg)
	if req.Data != nil && fails(req.Data.Supi) {
		return nil, &sbi.SMContextError{Problem: sbi.NewProblem(http.StatusForbidden, sbi.CauseDNNDenied, "no"), N1SmMsg: []byte{0x2e, 1, 2, 0xc3, 0x1b}}
	}
	return &sbi.SMContextCreated{Ref: "sm-7", Data: &models.Smf_PDUSess_SmContextCreatedData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}}, nil
}

func (p *Producer) UpdateSMContext(ctx context.Context, ref string, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	p.record(sbi.OpSMFUpdateSMContext, ref, req.Data, req.N1SmMsg, req.N2SmInfo)
	switch ref {
	case "fail":
		return nil, &sbi.SMContextError{Problem: sbi.NewProblem(http.StatusForbidden, sbi.CauseN2SMError, "no"),
			N2SmInfo: []byte{9, 9}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD}
	case "empty":
		return &sbi.SMContextUpdated{}, nil
	}
	return &sbi.SMContextUpdated{Data: &models.Smf_PDUSess_SmContextUpdatedData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATED,
		N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ, N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM},
		N1SmMsg: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}}, N1SmMsg: []byte{0x2e, 1}, N2SmInfo: []byte{0, 1, 2, 3}}, nil
}

func (p *Producer) ReleaseSMContext(ctx context.Context, ref string, req *sbi.SMContextRelease) error {
	p.record(sbi.OpSMFReleaseSMContext, ref, req.Data, req.N2SmInfo)
	if fails(ref) {
		return sbi.ErrContextNotFound
	}
	return nil
}

func (p *Producer) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	p.record(sbi.OpSMFStatusNotify, uri, n)
	return nil
}

func (p *Producer) N1N2MessageTransfer(ctx context.Context, id string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	p.record(sbi.OpAMFN1N2MessageTransfer, id, req.Data, req.N1Msg, req.N2Info)
	if fails(id) {
		return nil, sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseUENotReachable, "unreachable")
	}
	return &models.Amf_Comm_N1N2MessageTransferRspData{Cause: models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE}, nil
}

func (p *Producer) N1N2TransferFailureNotify(ctx context.Context, uri string, n *models.Amf_Comm_N1N2MsgTxfrFailureNotification) error {
	p.record(sbi.OpAMFN1N2TransferFailureNotify, uri, n)
	return nil
}

func (p *Producer) CreateSMPolicy(ctx context.Context, req *models.Pcf_SMPolCtrl_SmPolicyContextData) (string, *models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	p.record(sbi.OpPCFCreateSMPolicy, req)
	if fails(req.Supi) {
		return "", nil, notFound
	}
	return "pol-3", Decision(), nil
}

func (p *Producer) UpdateSMPolicy(ctx context.Context, id string, req *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData) (*models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	p.record(sbi.OpPCFUpdateSMPolicy, id, req)
	return Decision(), nil
}

func (p *Producer) DeleteSMPolicy(ctx context.Context, id string, req *models.Pcf_SMPolCtrl_SmPolicyDeleteData) error {
	p.record(sbi.OpPCFDeleteSMPolicy, id, req)
	return nil
}

func (p *Producer) SMPolicyUpdateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_SmPolicyNotification) error {
	p.record(sbi.OpPCFUpdateNotify, uri, n)
	return nil
}

func (p *Producer) SMPolicyTerminateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_TerminationNotification) error {
	p.record(sbi.OpPCFTerminateNotify, uri, n)
	return nil
}

func (p *Producer) DataChanged(ctx context.Context, n *models.Udr_DR_DataChangeNotify) error {
	p.record(sbi.OpUDRDataChangeNotify, n)
	return nil
}

func (p *Producer) ModifyAuthenticationSubscription(ctx context.Context, supi string, patch []models.PatchItem) error {
	p.record(sbi.OpUDRModifyAuthSubscription, supi, patch)
	switch {
	case fails(supi):
		return notFound
	case len(patch) > 0 && patch[0].Op == models.PatchOperation_TEST: // fails, as if the value differed
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseInvalidMsgFormat, "JSON Patch: operation 0: testing value /sequenceNumber/sqn failed").
			WithInvalidParam("/0", "failed operation index=0: testing value /sequenceNumber/sqn failed")
	}
	return nil
}

func (p *Producer) CreateAuthenticationStatus(ctx context.Context, supi string, ev *models.Udm_UEAU_AuthEvent) error {
	p.record(sbi.OpUDRCreateAuthStatus, supi, ev)
	if fails(supi) {
		return notFound
	}
	return nil
}

func (p *Producer) QueryAuthenticationStatus(ctx context.Context, supi string) (*models.Udm_UEAU_AuthEvent, error) {
	p.record(sbi.OpUDRQueryAuthStatus, supi)
	if fails(supi) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "no authentication status")
	}
	return AuthEvent(), nil
}

func (p *Producer) CreateAmfContext3gpp(ctx context.Context, supi string, reg *models.Udr_DR_Amf3GppAccessRegistration) (bool, error) {
	created := p.Seen(sbi.OpUDRCreateAmfContext3gpp) == nil // the first one creates, the next replace
	p.record(sbi.OpUDRCreateAmfContext3gpp, supi, reg)
	if fails(supi) {
		return false, notFound
	}
	return created, nil
}

func (p *Producer) ModifyAmfContext3gpp(ctx context.Context, supi string, patch []models.PatchItem) error {
	p.record(sbi.OpUDRModifyAmfContext3gpp, supi, patch)
	if fails(supi) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "no amf-3gpp-access")
	}
	return nil
}

func (p *Producer) QueryAmfContext3gpp(ctx context.Context, supi string) (*models.Udr_DR_Amf3GppAccessRegistration, error) {
	p.record(sbi.OpUDRQueryAmfContext3gpp, supi)
	if fails(supi) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "no amf-3gpp-access")
	}
	r := models.Udr_DR_Amf3GppAccessRegistration(*AMFRegistration())
	return &r, nil
}

// AuthEvent is a successful 5G AKA's result, as the AUSF reports it.
func AuthEvent() *models.Udm_UEAU_AuthEvent {
	stamp := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	return &models.Udm_UEAU_AuthEvent{NfInstanceId: "6f1c0b0e-0000-4000-8000-000000000003", Success: true,
		TimeStamp: &stamp, AuthType: models.Udm_UEAU_AuthType_5_G_AKA, ServingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org"}
}

// SUPI is the subscriber the suite uses.
const SUPI = "imsi-001010000000001"

// AuthCtx is the AUSF's answer: 5G AKA with the vector in 5gAuthData.
func AuthCtx() *models.Ausf_UEAU_UEAuthenticationCtx {
	return &models.Ausf_UEAU_UEAuthenticationCtx{AuthType: models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{Rand: strings.Repeat("01", 16), Autn: strings.Repeat("02", 16), HxresStar: strings.Repeat("03", 16)},
		Links:         map[string][]models.Link{"5g-aka": {{Href: "/nausf-auth/v1/ue-authentications/ctx-1/5g-aka-confirmation"}}}}
}

// AMFRegistration is a complete Amf3GppAccessRegistration.
func AMFRegistration() *models.Udm_UECM_Amf3GppAccessRegistration {
	return &models.Udm_UECM_Amf3GppAccessRegistration{AmfInstanceId: "6f1c0b0e-0000-4000-8000-000000000002",
		DeregCallbackUri: "http://127.0.0.1:1/namf-callback/v1/deregistration/" + SUPI,
		Guami:            &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "001", Mnc: "01"}, AmfId: "cafe00"}, RatType: models.RatType_NR}
}

// Decision is the PCF's policy decision.
func Decision() *models.Pcf_SMPolCtrl_SmPolicyDecision {
	return &models.Pcf_SMPolCtrl_SmPolicyDecision{SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"1": {SessRuleId: "1",
		AuthSessAmbr: &models.Ambr{Uplink: "100 Mbps", Downlink: "200 Mbps"},
		AuthDefQos:   &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: 9, Arp: &models.Arp{PriorityLevel: 8, PreemptCap: models.PreemptionCapability_NOT_PREEMPT, PreemptVuln: models.PreemptionVulnerability_PREEMPTABLE}}}}}
}

// Run calls every operation through c, served by p, and checks what each
// side saw. callbackRoot prefixes the callback URIs (the producer's
// apiRoot on a binding that routes by URI; "" otherwise).
func Run(t *testing.T, c *ops.Client, p *Producer, callbackRoot string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	plmn, _ := identity.ParsePLMN("00101")
	slice := identity.SNSSAI{SST: 1, SD: 0x010203}
	check := func(op sbi.Operation, err error, want ...any) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", op, err)
			return
		}
		if got := p.Seen(op); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: producer saw %#v\nwant %#v", op, got, want)
		}
	}
	wantProblem := func(op sbi.Operation, err error, status int, cause string) {
		t.Helper()
		var pd *sbi.ProblemDetails
		if !errors.As(err, &pd) || pd.Status != status || pd.Cause != cause {
			t.Errorf("%s: error %v, want %d %s", op, err, status, cause)
		}
	}
	same := func(op sbi.Operation, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: answer %#v\nwant %#v", op, got, want)
		}
	}

	// Nausf_UEAuthentication.
	info := &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: SUPI, ServingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org"}
	id, actx, err := c.Authenticate(ctx, info)
	check(sbi.OpAUSFAuthenticate, err, info)
	if id != "ctx-1" {
		t.Errorf("authCtxId %q", id)
	}
	if av, err := sbi.Av5gAkaOf(actx); err != nil || av.Rand != strings.Repeat("01", 16) {
		t.Errorf("5gAuthData %+v: %v", av, err)
	}
	_, _, err = c.Authenticate(ctx, &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: FailSUPI, ServingNetworkName: info.ServingNetworkName})
	wantProblem(sbi.OpAUSFAuthenticate, err, 404, sbi.CauseUserNotFound)
	resStar := strings.Repeat("05", 16)
	conf := &models.Ausf_UEAU_ConfirmationData{ResStar: &resStar}
	cres, err := c.Confirm5gAka(ctx, "ctx-1", conf)
	check(sbi.OpAUSFConfirm5gAka, err, "ctx-1", conf)
	same(sbi.OpAUSFConfirm5gAka, cres.Supi, SUPI)
	_, err = c.Confirm5gAka(ctx, "fail", conf)
	wantProblem(sbi.OpAUSFConfirm5gAka, err, 404, sbi.CauseContextNotFound)

	// Nudm_UEAuthentication.
	air := &models.Udm_UEAU_AuthenticationInfoRequest{ServingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org", AusfInstanceId: "6f1c0b0e-0000-4000-8000-000000000003"}
	gres, err := c.GenerateAuthData(ctx, "suci-0-001-01-0000-0-0-0000000001", air)
	check(sbi.OpUDMGenerateAuthData, err, "suci-0-001-01-0000-0-0-0000000001", air)
	if gres == nil || gres.AuthenticationVector == nil || gres.AuthenticationVector.Kausf == "" {
		t.Errorf("GenerateAuthData answer %+v", gres)
	}
	stamp := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ev := &models.Udm_UEAU_AuthEvent{NfInstanceId: "6f1c0b0e-0000-4000-8000-000000000003", Success: true,
		TimeStamp: &stamp, AuthType: models.Udm_UEAU_AuthType_5_G_AKA, ServingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org"}
	check(sbi.OpUDMResultConfirmation, c.ConfirmAuth(ctx, SUPI, ev), SUPI, ev)
	wantProblem(sbi.OpUDMResultConfirmation, c.ConfirmAuth(ctx, FailSUPI, ev), 404, sbi.CauseUserNotFound)

	// Nudm_SDM.
	am, err := c.GetAmData(ctx, SUPI, plmn)
	check(sbi.OpUDMGetAmData, err, SUPI, plmn)
	same(sbi.OpUDMGetAmData, am.SubscribedUeAmbr.Downlink, "2 Gbps")
	_, err = c.GetAmData(ctx, FailSUPI, plmn)
	wantProblem(sbi.OpUDMGetAmData, err, 404, sbi.CauseUserNotFound)
	_, err = c.GetNSSAI(ctx, SUPI, plmn)
	check(sbi.OpUDMGetNSSAI, err, SUPI, plmn)
	smq := sbi.SmDataQuery{PLMN: plmn, SNSSAI: &slice, DNN: "internet"}
	sm, err := c.GetSmData(ctx, SUPI, smq)
	check(sbi.OpUDMGetSmData, err, SUPI, smq)
	if len(sm) != 1 || sm[0].DnnConfigurations["internet"].SscModes == nil {
		t.Errorf("GetSmData answer %+v", sm)
	}
	sel, err := c.GetSmfSelectData(ctx, SUPI, plmn)
	check(sbi.OpUDMGetSmfSelectData, err, SUPI, plmn)
	same(sbi.OpUDMGetSmfSelectData, sel.SubscribedSnssaiInfos["1"].DnnInfos[0].Dnn, "internet")

	// Nudm_UECM.
	reg := AMFRegistration()
	regCreated, err := c.RegisterAMF3GPPAccess(ctx, SUPI, reg)
	check(sbi.OpUDMRegisterAMF3GPP, err, SUPI, reg)
	same(sbi.OpUDMRegisterAMF3GPP, regCreated, true)
	upd := &models.Udm_UECM_Amf3GppAccessRegistrationModification{Guami: reg.Guami, Pei: "imeisv-4370816125816151"}
	check(sbi.OpUDMUpdateAMF3GPP, c.UpdateAMF3GPPAccess(ctx, SUPI, upd), SUPI, upd)
	mod := &models.Udm_UECM_Amf3GppAccessRegistrationModification{Guami: reg.Guami, PurgeFlag: true}
	check(sbi.OpUDMUpdateAMF3GPP, c.UpdateAMF3GPPAccess(ctx, SUPI, mod), SUPI, mod)
	wantProblem(sbi.OpUDMUpdateAMF3GPP, c.UpdateAMF3GPPAccess(ctx, FailSUPI, mod), 404, sbi.CauseContextNotFound)
	got, err := c.GetAMF3GPPAccess(ctx, SUPI)
	check(sbi.OpUDMGetAMF3GPP, err, SUPI)
	same(sbi.OpUDMGetAMF3GPP, got, AMFRegistration())
	dd := &models.Udm_UECM_DeregistrationData{DeregReason: models.Udm_UECM_DeregistrationReason_SUBSCRIPTION_WITHDRAWN, AccessType: models.AccessType_3_GPP_ACCESS}
	uri := callbackRoot + sbi.CallbackDeregistration + SUPI
	check(sbi.OpUDMDeregistrationNotify, c.DeregistrationNotify(ctx, uri, dd), sbi.CallbackDeregistration+SUPI, dd)
	mn := &models.Udm_SDM_ModificationNotification{NotifyItems: []models.NotifyItem{{ResourceId: "/" + SUPI + "/am-data",
		Changes: []models.ChangeItem{{Op: models.ChangeType_REPLACE, Path: "/"}}}}}
	check(sbi.OpUDMDataChangeNotify, c.SubscriptionDataChanged(ctx, SUPI, mn), SUPI, mn)

	// Nnssf_NSSelection.
	tai := identity.TAI{PLMN: plmn, TAC: 1}
	subscribed := []sbi.SubscribedSNSSAI{{SNSSAI: identity.SNSSAI{SST: 1, SD: identity.NoSD}, Default: true}, {SNSSAI: slice}}
	_, err = c.SelectForRegistration(ctx, "", []identity.SNSSAI{slice}, subscribed, tai)
	check(sbi.OpNSSFSelectForRegistration, err, []identity.SNSSAI{slice}, subscribed, tai)
	_, err = c.SelectForRegistration(ctx, "", nil, subscribed, identity.TAI{PLMN: plmn, TAC: 0xdead})
	wantProblem(sbi.OpNSSFSelectForRegistration, err, 403, sbi.CauseSNSSAINotSupported)

	// Nnrf.
	prof := &models.Nrf_NFMgmt_NFProfile{NfInstanceId: NFID, NfType: sbi.NFTypeSMF,
		NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED, Ipv4Addresses: []string{"127.0.0.1"}}
	back, isNew, err := c.Register(ctx, prof)
	check(sbi.OpNRFRegister, err, prof)
	same(sbi.OpNRFRegister, back, prof)
	if !isNew {
		t.Errorf("%s: a new profile was not created", sbi.OpNRFRegister)
	}
	again := *prof
	again.HeartBeatTimer = 10
	if _, created, err := c.Register(ctx, &again); err != nil || created {
		t.Errorf("%s: replacing a profile: created %v, %v", sbi.OpNRFRegister, created, err)
	}
	if back, err := c.Update(ctx, NFID, sbi.HeartbeatPatch("")); err != nil || back != nil {
		t.Errorf("%s: %+v, %v", sbi.OpNRFHeartbeat, back, err)
	}
	patch := []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/nfServices/0/apiPrefix", Value: "http://10.0.0.1:8000"},
		{Op: models.PatchOperation_MOVE, From: "/fqdn", Path: "/interPlmnFqdn"}, {Op: models.PatchOperation_REMOVE, Path: "/load"}}
	if back, err := c.Update(ctx, "6f1c0b0e-0000-4000-8000-000000000005", patch); err != nil || back == nil || back.NfInstanceId != "6f1c0b0e-0000-4000-8000-000000000005" {
		t.Errorf("%s with a changed profile: %+v, %v", sbi.OpNRFHeartbeat, back, err)
	}
	if seen := p.Seen(sbi.OpNRFHeartbeat); len(seen) != 2 || !reflect.DeepEqual(seen[1], patch) {
		t.Errorf("%s: the producer got the patch %+v, want %+v", sbi.OpNRFHeartbeat, seen, patch)
	}
	_, err = c.Update(ctx, FailNF, sbi.HeartbeatPatch(""))
	wantProblem(sbi.OpNRFHeartbeat, err, 404, sbi.CauseNFInstanceNotFound)
	got2, err := c.GetProfile(ctx, NFID)
	check(sbi.OpNRFGetProfile, err, NFID)
	same(sbi.OpNRFGetProfile, got2.NfInstanceId, NFID)
	sd := &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: callbackRoot + sbi.CallbackNFStatus + "/amf",
		ReqNfInstanceId: NFID, ReqNotifEvents: []models.Nrf_NFMgmt_NotificationEventType{models.Nrf_NFMgmt_NotificationEventType_REGISTERED}}
	subd, err := c.Subscribe(ctx, sd)
	check(sbi.OpNRFSubscribe, err, sd)
	if err == nil && subd.SubscriptionId != "sub1" {
		t.Errorf("%s: subscription %+v", sbi.OpNRFSubscribe, subd)
	}
	check(sbi.OpNRFUnsubscribe, c.Unsubscribe(ctx, "sub1"), "sub1")
	wantProblem(sbi.OpNRFUnsubscribe, c.Unsubscribe(ctx, "fail"), 404, sbi.CauseSubscriptionNotFound)
	nd := &models.Nrf_NFMgmt_NotificationData{Event: models.Nrf_NFMgmt_NotificationEventType_REGISTERED,
		NfInstanceUri: "/nnrf-nfm/v1/nf-instances/" + NFID, NfProfile: prof}
	check(sbi.OpNRFNotify, c.NFStatusNotify(ctx, sd.NfStatusNotificationUri, nd), sbi.CallbackNFStatus+"/amf", nd)
	atr := &models.Nrf_AccTok_AccessTokenReq{Grant_type: "client_credentials", NfInstanceId: NFID, NfType: sbi.NFTypeAMF,
		TargetNfType: sbi.NFTypeSMF, Scope: "nsmf-pdusession", RequesterPlmn: &models.PlmnId{Mcc: "001", Mnc: "01"}}
	tok, err := c.AccessToken(ctx, atr)
	check(sbi.OpNRFAccessToken, err, atr)
	if err == nil && (tok.Token_type != "Bearer" || tok.Scope != "nsmf-pdusession") {
		t.Errorf("%s: %+v", sbi.OpNRFAccessToken, tok)
	}
	bad := *atr
	bad.NfInstanceId = FailNF
	_, err = c.AccessToken(ctx, &bad)
	var oe *sbi.OAuth2Error
	if !errors.As(err, &oe) || oe.Status != 400 || oe.Code != sbi.OAuth2InvalidClient {
		t.Errorf("%s refused: %#v", sbi.OpNRFAccessToken, err)
	}
	check(sbi.OpNRFDeregister, c.Deregister(ctx, prof.NfInstanceId), prof.NfInstanceId)
	wantProblem(sbi.OpNRFDeregister, c.Deregister(ctx, FailNF), 404, sbi.CauseNFInstanceNotFound)
	dq := sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF, ServiceNames: []models.Nrf_NFMgmt_ServiceName{"nsmf-pdusession"}, SNSSAIs: []identity.SNSSAI{slice}, PLMN: &plmn}
	res, err := c.Discover(ctx, sbi.NFTypeSMF, dq)
	check(sbi.OpNRFDiscover, err, sbi.NFTypeSMF, dq)
	if res == nil || len(res.NfInstances) != 1 {
		t.Errorf("Discover answer %+v", res)
	}

	// Nudr_DataRepository.
	_, err = c.QueryAuthenticationSubscription(ctx, SUPI)
	check(sbi.OpUDRQueryAuthSubscription, err, SUPI)
	sqn, err := c.AllocateSQN(ctx, SUPI, "000000000030")
	check(sbi.OpUDRAllocateSQN, err, SUPI, "000000000030")
	same(sbi.OpUDRAllocateSQN, sqn.Sqn, "000000000041")
	_, err = c.AllocateSQN(ctx, FailSUPI, "")
	wantProblem(sbi.OpUDRAllocateSQN, err, 404, sbi.CauseUserNotFound)
	_, err = c.QueryAmData(ctx, SUPI, plmn)
	check(sbi.OpUDRQueryAmData, err, SUPI, plmn)
	_, err = c.QuerySmData(ctx, SUPI, smq)
	check(sbi.OpUDRQuerySmData, err, SUPI, smq)
	_, err = c.QuerySmfSelectData(ctx, SUPI, plmn)
	check(sbi.OpUDRQuerySmfSelectData, err, SUPI, plmn)
	// What a standard UDM uses besides: free5GC writes the SQN back as
	// an object, Open5GS as a string at /sequenceNumber/sqn.
	sqnPatch := []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/sequenceNumber", Value: map[string]any{"sqn": "000000000022"}},
		{Op: models.PatchOperation_REPLACE, Path: "/sequenceNumber/sqn", Value: "000000000023"}}
	check(sbi.OpUDRModifyAuthSubscription, c.ModifyAuthenticationSubscription(ctx, SUPI, sqnPatch), SUPI, sqnPatch)
	// A Go value in a patch arrives as JSON would carry it, whatever the
	// binding.
	err = c.ModifyAuthenticationSubscription(ctx, SUPI, []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/sequenceNumber",
		Value: models.Udr_DR_SequenceNumber{Sqn: "000000000022"}}})
	check(sbi.OpUDRModifyAuthSubscription, err, SUPI, sqnPatch[:1])
	err = c.ModifyAuthenticationSubscription(ctx, SUPI, []models.PatchItem{{Op: models.PatchOperation_TEST, Path: "/sequenceNumber/sqn", Value: "ffffffffffff"}})
	wantProblem(sbi.OpUDRModifyAuthSubscription, err, 400, sbi.CauseInvalidMsgFormat)
	// The parameter at fault travels with the problem (TS 29.571
	// invalidParams).
	var pd *sbi.ProblemDetails
	if !errors.As(err, &pd) || len(pd.InvalidParams) != 1 || pd.InvalidParams[0].Param != "/0" || pd.InvalidParams[0].Reason == "" {
		t.Errorf("%s: invalidParams of %#v, want /0 named", sbi.OpUDRModifyAuthSubscription, err)
	}
	wantProblem(sbi.OpUDRModifyAuthSubscription, c.ModifyAuthenticationSubscription(ctx, FailSUPI, sqnPatch), 404, sbi.CauseUserNotFound)
	check(sbi.OpUDRCreateAuthStatus, c.CreateAuthenticationStatus(ctx, SUPI, AuthEvent()), SUPI, AuthEvent())
	wantProblem(sbi.OpUDRCreateAuthStatus, c.CreateAuthenticationStatus(ctx, FailSUPI, AuthEvent()), 404, sbi.CauseUserNotFound)
	aev, err := c.QueryAuthenticationStatus(ctx, SUPI)
	check(sbi.OpUDRQueryAuthStatus, err, SUPI)
	same(sbi.OpUDRQueryAuthStatus, aev, AuthEvent())
	_, err = c.QueryAuthenticationStatus(ctx, FailSUPI)
	wantProblem(sbi.OpUDRQueryAuthStatus, err, 404, sbi.CauseDataNotFound)
	dreg := models.Udr_DR_Amf3GppAccessRegistration(*AMFRegistration())
	isNew, err = c.CreateAmfContext3gpp(ctx, SUPI, &dreg)
	check(sbi.OpUDRCreateAmfContext3gpp, err, SUPI, &dreg)
	if !isNew {
		t.Errorf("%s: the first PUT did not create", sbi.OpUDRCreateAmfContext3gpp)
	}
	if created, err := c.CreateAmfContext3gpp(ctx, SUPI, &dreg); err != nil || created {
		t.Errorf("%s: the second PUT: created %v, %v; want a replacement", sbi.OpUDRCreateAmfContext3gpp, created, err)
	}
	ctxPatch := []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/pei", Value: "imeisv-4370816125816151"},
		{Op: models.PatchOperation_ADD, Path: "/purgeFlag", Value: true}}
	check(sbi.OpUDRModifyAmfContext3gpp, c.ModifyAmfContext3gpp(ctx, SUPI, ctxPatch), SUPI, ctxPatch)
	wantProblem(sbi.OpUDRModifyAmfContext3gpp, c.ModifyAmfContext3gpp(ctx, FailSUPI, ctxPatch), 404, sbi.CauseDataNotFound)
	gotCtx, err := c.QueryAmfContext3gpp(ctx, SUPI)
	check(sbi.OpUDRQueryAmfContext3gpp, err, SUPI)
	same(sbi.OpUDRQueryAmfContext3gpp, gotCtx, &dreg)

	// Nsmf_PDUSession.
	sn := sbi.SNSSAIToModel(slice)
	cd := &models.Smf_PDUSess_SmContextCreateData{Supi: SUPI, PduSessionId: 1, Dnn: "internet", SNssai: &sn,
		ServingNfId: "6f1c0b0e-0000-4000-8000-000000000002", Guami: reg.Guami, ServingNetwork: &models.PlmnIdNid{Mcc: "001", Mnc: "01"},
		N1SmMsg: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}, AnType: models.AccessType_3_GPP_ACCESS,
		SmContextStatusUri: callbackRoot + sbi.CallbackSMContextStatus + SUPI + "/1/1"}
	n1 := []byte{0x2e, 1, 1, 0xc1, 0xff, 0xff, 0x91}
	created, err := c.CreateSMContext(ctx, &sbi.SMContextCreate{Data: cd, N1SmMsg: n1})
	check(sbi.OpSMFCreateSMContext, err, cd, n1)
	if err == nil && created.Ref != "sm-7" {
		t.Errorf("smContextRef %q", created.Ref)
	}
	fcd := *cd
	fcd.Supi = FailSUPI
	_, err = c.CreateSMContext(ctx, &sbi.SMContextCreate{Data: &fcd, N1SmMsg: n1})
	var se *sbi.SMContextError
	if !errors.As(err, &se) || se.Problem.Status != 403 || se.Problem.Cause != sbi.CauseDNNDenied || !reflect.DeepEqual(se.N1SmMsg, []byte{0x2e, 1, 2, 0xc3, 0x1b}) {
		t.Errorf("CreateSMContext rejected: %#v", err)
	}
	ud := &models.Smf_PDUSess_SmContextUpdateData{N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP, N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}}
	n2 := []byte{0, 3, 0xe0, 10, 0, 0, 1}
	up, err := c.UpdateSMContext(ctx, "sm-7", &sbi.SMContextUpdate{Data: ud, N2SmInfo: n2})
	check(sbi.OpSMFUpdateSMContext, err, "sm-7", ud, []byte(nil), n2)
	if err == nil && (up.Data == nil || !reflect.DeepEqual(up.N2SmInfo, []byte{0, 1, 2, 3}) || !reflect.DeepEqual(up.N1SmMsg, []byte{0x2e, 1})) {
		t.Errorf("UpdateSMContext answer %+v", up)
	}
	if up, err := c.UpdateSMContext(ctx, "empty", &sbi.SMContextUpdate{Data: ud}); err != nil || up.Data != nil || up.N1SmMsg != nil {
		t.Errorf("empty update answer %+v, %v", up, err)
	}
	_, err = c.UpdateSMContext(ctx, "fail", &sbi.SMContextUpdate{Data: ud})
	if !errors.As(err, &se) || se.Problem.Status != 403 || se.N2SmInfoType != models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD || !reflect.DeepEqual(se.N2SmInfo, []byte{9, 9}) {
		t.Errorf("UpdateSMContext rejected: %#v", err)
	}
	rd := &models.Smf_PDUSess_SmContextReleaseData{Cause: models.Smf_PDUSess_Cause_REL_DUE_TO_REACTIVATION}
	check(sbi.OpSMFReleaseSMContext, c.ReleaseSMContext(ctx, "sm-7", &sbi.SMContextRelease{Data: rd}), "sm-7", rd, []byte(nil))
	wantProblem(sbi.OpSMFReleaseSMContext, c.ReleaseSMContext(ctx, "fail", &sbi.SMContextRelease{}), 404, sbi.CauseContextNotFound)
	sn2 := &models.Smf_PDUSess_SmContextStatusNotification{StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED}}
	check(sbi.OpSMFStatusNotify, c.SMContextStatusNotify(ctx, cd.SmContextStatusUri, sn2), sbi.CallbackSMContextStatus+SUPI+"/1/1", sn2)

	// Namf_Communication.
	td := &models.Amf_Comm_N1N2MessageTransferReqData{PduSessionId: 1, N1n2FailureTxfNotifURI: callbackRoot + sbi.CallbackN1N2Failure + "sm-7",
		N2InfoContainer: &models.Amf_Comm_N2InfoContainer{N2InformationClass: models.Amf_Comm_N2InformationClass_SM, SmInfo: &models.Amf_Comm_N2SmInformation{
			PduSessionId: 1, SNssai: &sn, N2InfoContent: &models.Amf_Comm_N2InfoContent{NgapIeType: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ,
				NgapData: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}}}}}
	tr, err := c.N1N2MessageTransfer(ctx, SUPI, &sbi.N1N2Message{Data: td, N2Info: n2})
	check(sbi.OpAMFN1N2MessageTransfer, err, SUPI, td, []byte(nil), n2)
	if err == nil && tr.Cause != models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE {
		t.Errorf("N1N2MessageTransfer cause %q", tr.Cause)
	}
	_, err = c.N1N2MessageTransfer(ctx, "fail", &sbi.N1N2Message{Data: td, N2Info: n2})
	wantProblem(sbi.OpAMFN1N2MessageTransfer, err, 504, sbi.CauseUENotReachable)
	fn := &models.Amf_Comm_N1N2MsgTxfrFailureNotification{Cause: models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING, N1n2MsgDataUri: "/namf-comm/v1/ue-contexts/" + SUPI + "/n1-n2-messages/1"}
	check(sbi.OpAMFN1N2TransferFailureNotify, c.N1N2TransferFailureNotify(ctx, td.N1n2FailureTxfNotifURI, fn), sbi.CallbackN1N2Failure+"sm-7", fn)

	// Npcf_SMPolicyControl.
	pc := &models.Pcf_SMPolCtrl_SmPolicyContextData{Supi: SUPI, PduSessionId: 1, Dnn: "internet", SliceInfo: &sn,
		NotificationUri: callbackRoot + sbi.CallbackSMPolicy + "sm-7", PduSessionType: models.PduSessionType_IPV4}
	pid, dec, err := c.CreateSMPolicy(ctx, pc)
	check(sbi.OpPCFCreateSMPolicy, err, pc)
	if pid != "pol-3" || !reflect.DeepEqual(dec, Decision()) {
		t.Errorf("CreateSMPolicy answer %q %+v", pid, dec)
	}
	uc := &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{RepPolicyCtrlReqTriggers: []models.Pcf_SMPolCtrl_PolicyControlRequestTrigger{models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_SE_AMBR_CH}}
	_, err = c.UpdateSMPolicy(ctx, "pol-3", uc)
	check(sbi.OpPCFUpdateSMPolicy, err, "pol-3", uc)
	del := &models.Pcf_SMPolCtrl_SmPolicyDeleteData{}
	check(sbi.OpPCFDeleteSMPolicy, c.DeleteSMPolicy(ctx, "pol-3", del), "pol-3", del)
	pn := &models.Pcf_SMPolCtrl_SmPolicyNotification{ResourceUri: "/npcf-smpolicycontrol/v1/sm-policies/pol-3", SmPolicyDecision: Decision()}
	check(sbi.OpPCFUpdateNotify, c.SMPolicyUpdateNotify(ctx, pc.NotificationUri+"/update", pn), sbi.CallbackSMPolicy+"sm-7/update", pn)

	tn := &models.Pcf_SMPolCtrl_TerminationNotification{ResourceUri: pn.ResourceUri, Cause: models.Pcf_SMPolCtrl_SmPolicyAssociationReleaseCause_UNSPECIFIED}
	check(sbi.OpPCFTerminateNotify, c.SMPolicyTerminateNotify(ctx, pc.NotificationUri+"/terminate", tn), sbi.CallbackSMPolicy+"sm-7/terminate", tn)

	dcn := sbi.SubscriberDeleted(SUPI)
	check(sbi.OpUDRDataChangeNotify, c.DataChanged(ctx, dcn), dcn)
	if !sbi.IsDeletion(dcn) || sbi.IsDeletion(sbi.SubscriberWritten(SUPI)) {
		t.Error("IsDeletion")
	}

	// Every operation was called.
	for _, op := range ops.All {
		if p.Seen(op.Name) == nil {
			t.Errorf("%s was not exercised", op.Name)
		}
	}
}
