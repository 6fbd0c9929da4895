package openapitest

import (
	"net/url"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"
)

// The exchanges below are built the way tern builds them (the values its NFs
// put in, see nf/...), from free5gc's models marshalled with encoding/json,
// one or more per API, so a mismatch between those models and the 3GPP
// schemas shows here rather than in the binding's tests. Each mismatch
// found is pinned by a test that expects the violation (see the package
// comment).

const (
	amfID  = "6f3e7a4c-0b1d-4c59-9a55-2f2c1f0b7a11"
	ausfID = "0b5f8a1e-7c7a-4a52-8f36-0a9c4c4b3d21"
)

var (
	plmn   = models.PlmnId{Mcc: "001", Mnc: "01"}
	slice1 = models.Snssai{Sst: 1, Sd: "010203"}
	arp    = &models.Arp{PriorityLevel: 8, PreemptCap: models.PreemptionCapability_NOT_PREEMPT, PreemptVuln: models.PreemptionVulnerability_PREEMPTABLE}
	when   = time.Date(2024, 5, 1, 12, 0, 0, 123000000, time.UTC)
)

// exchange is one request and response to check.
type exch struct {
	name        string
	method, uri string
	reqBody     any
	reqCT       string
	status      int
	respBody    any
	respCT      string
	respHeaders []string
	op          string
	wantErr     []string // substrings of the violation, or nil for none
}

func runExchanges(t *testing.T, v *Validator, xs []exch) {
	t.Helper()
	for _, x := range xs {
		t.Run(x.name, func(t *testing.T) {
			ct := x.reqCT
			if ct == "" {
				ct = jsonT
			}
			req, rb := request(t, x.method, x.uri, x.reqBody, ct)
			rct := x.respCT
			if rct == "" {
				rct = jsonT
			}
			resp, sb := response(t, x.status, x.respBody, rct, x.respHeaders...)
			if x.wantErr != nil {
				wantErr(t, v, req, rb, resp, sb, x.wantErr...)
				return
			}
			wantOK(t, v, x.op, req, rb, resp, sb)
		})
	}
}

func TestFree5gcModels(t *testing.T) {
	v := load(t)
	const (
		nrf  = "http://nrf.example:8000"
		udm  = "http://udm.example:8000"
		udr  = "http://udr.example:8000"
		amf  = "http://amf.example:8000"
		smf  = "http://smf.example:8000"
		pcf  = "http://pcf.example:8000"
		nssf = "http://nssf.example:8000"
		ausf = "http://ausf.example:8000"
	)
	profile := models.Nrf_NFMgmt_NFProfile{
		NfInstanceId:  amfID,
		NfType:        models.Nrf_NFMgmt_NFType_AMF,
		NfStatus:      models.Nrf_NFMgmt_NFStatus_REGISTERED,
		PlmnList:      []models.PlmnId{plmn},
		Ipv4Addresses: []string{"10.0.0.1"},
		NfServices: []models.Nrf_NFMgmt_NFService{{
			ServiceInstanceId: "namf-comm-1",
			ServiceName:       models.Nrf_NFMgmt_ServiceName_NAMF_COMM,
			Versions:          []models.Nrf_NFMgmt_NFServiceVersion{{ApiVersionInUri: "v1", ApiFullVersion: "1.2.4"}},
			Scheme:            models.UriScheme_HTTP,
			NfServiceStatus:   models.Nrf_NFMgmt_NFServiceStatus_REGISTERED,
		}},
	}
	ternProfile := profile
	ternProfile.NfInstanceId = "tern-amf" // core/core.go's instance IDs
	guami := &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "001", Mnc: "01"}, AmfId: "cafe00"}
	amfReg := models.Udm_UECM_Amf3GppAccessRegistration{
		AmfInstanceId:          amfID,
		DeregCallbackUri:       amf + "/namf-callback/v1/dereg/" + supi,
		InitialRegistrationInd: true,
		Guami:                  guami,
		RatType:                models.RatType_NR,
		Pei:                    "imeisv-4370816125816151",
		Supi:                   supi,
	}
	authEvent := func(success bool) models.Udm_UEAU_AuthEvent {
		return models.Udm_UEAU_AuthEvent{NfInstanceId: ausfID, Success: success, TimeStamp: &when, AuthType: models.Udm_UEAU_AuthType_5_G_AKA, ServingNetworkName: snn}
	}
	dnnConf := models.Udm_SDM_DnnConfiguration{
		PduSessionTypes: &models.Udm_SDM_PduSessionTypes{DefaultSessionType: models.PduSessionType_IPV4, AllowedSessionTypes: []models.PduSessionType{models.PduSessionType_IPV4}},
		SscModes:        &models.Udm_SDM_SscModes{DefaultSscMode: models.SscMode_1, AllowedSscModes: []models.SscMode{models.SscMode_1}},
		Var5gQosProfile: &models.SubscribedDefaultQos{Var5qi: 9, Arp: arp, PriorityLevel: 8},
		SessionAmbr:     &models.Ambr{Uplink: "100 Mbps", Downlink: "200 Mbps"},
	}
	smData := []models.Udm_SDM_SessionManagementSubscriptionData{{
		SingleNssai:       &slice1,
		DnnConfigurations: map[string]models.Udm_SDM_DnnConfiguration{"internet": dnnConf},
	}}
	policyCtx := models.Pcf_SMPolCtrl_SmPolicyContextData{
		Supi:            supi,
		PduSessionId:    1,
		PduSessionType:  models.PduSessionType_IPV4,
		Dnn:             "internet",
		SliceInfo:       &slice1,
		AccessType:      models.AccessType_3_GPP_ACCESS,
		RatType:         models.RatType_NR,
		SubsSessAmbr:    dnnConf.SessionAmbr,
		SubsDefQos:      dnnConf.Var5gQosProfile,
		NotificationUri: smf + "/nsmf-callback/v1/sm-policy-notify/1",
		ServingNetwork:  &models.PlmnIdNid{Mcc: "001", Mnc: "01"},
	}
	decision := models.Pcf_SMPolCtrl_SmPolicyDecision{
		SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"sr1": {
			SessRuleId:   "sr1",
			AuthSessAmbr: dnnConf.SessionAmbr,
			AuthDefQos:   &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: 9, Arp: arp, PriorityLevel: 8},
		}},
		PolicyCtrlReqTriggers: []models.Pcf_SMPolCtrl_PolicyControlRequestTrigger{models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_SE_AMBR_CH},
	}
	n1n2 := models.Amf_Comm_N1N2MessageTransferReqData{
		PduSessionId: 1,
		N1MessageContainer: &models.Amf_Comm_N1MessageContainer{
			N1MessageClass:   models.Amf_Comm_N1MessageClass_SM,
			N1MessageContent: &models.RefToBinaryData{ContentId: "n1SmMsg"},
		},
		N2InfoContainer: &models.Amf_Comm_N2InfoContainer{
			N2InformationClass: models.Amf_Comm_N2InformationClass_SM,
			SmInfo: &models.Amf_Comm_N2SmInformation{
				PduSessionId: 1,
				SNssai:       &slice1,
				N2InfoContent: &models.Amf_Comm_N2InfoContent{
					NgapIeType: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ,
					NgapData:   &models.RefToBinaryData{ContentId: "n2SmInfo"},
				},
			},
		},
		N1n2FailureTxfNotifURI: smf + "/nsmf-callback/v1/n1n2-failure/1",
	}
	n1n2Body, n1n2CT := multipartRelated(t, n1n2,
		part{"application/vnd.3gpp.5gnas", "n1SmMsg", "\x2e\x01\x01\xc2"},
		part{"application/vnd.3gpp.ngap", "n2SmInfo", "\x00\x01"})
	sliceQuery := url.Values{
		"nf-type": {"AMF"},
		"nf-id":   {amfID},
		"slice-info-request-for-registration": {string(mustJSON(t, models.Nssf_NSSel_SliceInfoForRegistration{
			SubscribedNssai: []models.Nssf_NSSel_SubscribedSnssai{{SubscribedSnssai: &slice1, DefaultIndication: true}},
			RequestedNssai:  []models.Snssai{slice1},
		}))},
		"tai": {string(mustJSON(t, models.Tai{PlmnId: &plmn, Tac: "000001"}))},
	}

	runExchanges(t, v, []exch{
		{name: "NRF register", method: "PUT", uri: nrf + "/nnrf-nfm/v1/nf-instances/" + amfID, reqBody: profile, status: 201, respBody: profile,
			respHeaders: []string{"Location", nrf + "/nnrf-nfm/v1/nf-instances/" + amfID}, op: "RegisterNFInstance"},
		{name: "NRF register with tern's instance ID", method: "PUT", uri: nrf + "/nnrf-nfm/v1/nf-instances/tern-amf", reqBody: ternProfile, status: 201, respBody: ternProfile,
			respHeaders: []string{"Location", nrf + "/nnrf-nfm/v1/nf-instances/tern-amf"}, wantErr: []string{"nfInstanceId", "uuid"}},
		{name: "NRF discovery", method: "GET", uri: nrf + "/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF&target-plmn-list=" + url.QueryEscape(`[{"mcc":"001","mnc":"01"}]`),
			status: 200, respBody: models.Nrf_NFDisc_SearchResult{ValidityPeriod: 60, NfInstances: []models.Nrf_NFDisc_NFProfile{{NfInstanceId: amfID, NfType: models.Nrf_NFMgmt_NFType_AMF, NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED}}},
			op: "SearchNFInstances"},
		{name: "AUSF 5G AKA confirmation", method: "PUT", uri: ausf + "/nausf-auth/v1/ue-authentications/1/5g-aka-confirmation",
			reqBody: models.Ausf_UEAU_ConfirmationData{ResStar: ptr("00112233445566778899aabbccddeeff")},
			status:  200, respBody: models.Ausf_UEAU_ConfirmationDataResponse{AuthResult: models.Ausf_UEAU_AuthResult_SUCCESS, Supi: supi, Kseaf: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"},
			op: "PUT /nausf-auth/v1/ue-authentications/{authCtxId}/5g-aka-confirmation"},
		{name: "UDM generate auth data", method: "POST", uri: udm + "/nudm-ueau/v1/suci-0-001-01-0000-0-0-0000000001/security-information/generate-auth-data",
			reqBody: models.Udm_UEAU_AuthenticationInfoRequest{ServingNetworkName: snn, AusfInstanceId: ausfID},
			status:  200, respBody: models.Udm_UEAU_AuthenticationInfoResult{AuthType: models.Udm_UEAU_AuthType_5_G_AKA, Supi: supi,
				AuthenticationVector: &models.Udm_UEAU_AuthenticationVector{AvType: models.Udm_UEAU_AvType_5_G_HE_AKA, Rand: "00112233445566778899aabbccddeeff", Autn: "00112233445566778899aabbccddeeff", XresStar: "00112233445566778899aabbccddeeff", Kausf: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}},
			op: "GenerateAuthData"},
		{name: "UDM auth event, success", method: "POST", uri: udm + "/nudm-ueau/v1/" + supi + "/auth-events", reqBody: authEvent(true),
			status: 201, respBody: authEvent(true), respHeaders: []string{"Location", udm + "/nudm-ueau/v1/" + supi + "/auth-events/1"}, op: "ConfirmAuth"},
		{name: "UDM auth event, failure", method: "POST", uri: udm + "/nudm-ueau/v1/" + supi + "/auth-events", reqBody: authEvent(false),
			status: 201, respBody: authEvent(false), respHeaders: []string{"Location", udm + "/nudm-ueau/v1/" + supi + "/auth-events/1"},
			wantErr: []string{`property "success" is missing`}},
		{name: "UDM SDM NSSAI with SST 0", method: "GET", uri: udm + "/nudm-sdm/v2/" + supi + "/nssai",
			status: 200, respBody: models.Udm_SDM_Nssai{DefaultSingleNssais: []models.Snssai{{Sst: 0}}},
			wantErr: []string{"defaultSingleNssais/0", `property "sst" is missing`}},
		{name: "UDM SDM am-data with Release 18 trace field", method: "GET", uri: udm + "/nudm-sdm/v2/" + supi + "/am-data",
			status: 200, respBody: models.Udm_SDM_AccessAndMobilitySubscriptionData{TraceData: &models.TraceData{
				TraceRef: "001010-abcdef", TraceDepth: models.TraceDepth_MINIMUM, NeTypeList: "01", EventList: "01",
				TraceReportingConsumerUri: "http://tcf.example/trace"}},
			wantErr: []string{"traceData/traceReportingConsumerUri", "not defined by the schema"}},
		{name: "UDM SDM sm-data", method: "GET", uri: udm + "/nudm-sdm/v2/" + supi + "/sm-data?single-nssai=" + url.QueryEscape(`{"sst":1,"sd":"010203"}`) + "&dnn=internet",
			status: 200, respBody: smData, op: "GetSmData"},
		{name: "UDM SDM smf-select-data", method: "GET", uri: udm + "/nudm-sdm/v2/" + supi + "/smf-select-data?plmn-id=" + url.QueryEscape(`{"mcc":"001","mnc":"01"}`),
			status: 200, respBody: models.Udm_SDM_SmfSelectionSubscriptionData{SubscribedSnssaiInfos: map[string]models.Udm_SDM_SnssaiInfo{"1-010203": {DnnInfos: []models.Udm_SDM_DnnInfo{{Dnn: "internet", DefaultDnnIndicator: true}}}}},
			op: "GetSmfSelData"},
		{name: "UDM UECM AMF registration", method: "PUT", uri: udm + "/nudm-uecm/v1/" + supi + "/registrations/amf-3gpp-access", reqBody: amfReg,
			status: 201, respBody: amfReg, respHeaders: []string{"Location", udm + "/nudm-uecm/v1/" + supi + "/registrations/amf-3gpp-access"}, op: "3GppRegistration"},
		{name: "UDM UECM AMF registration with tern's URN", method: "PUT", uri: udm + "/nudm-uecm/v1/" + supi + "/registrations/amf-3gpp-access",
			reqBody: func() any { r := amfReg; r.DeregCallbackUri = "urn:tern:amf:x:dereg"; return r }(),
			status:  204, op: "3GppRegistration"},
		{name: "UDR authentication subscription", method: "GET", uri: udr + "/nudr-dr/v2/subscription-data/" + supi + "/authentication-data/authentication-subscription",
			status: 200, respBody: models.Udr_DR_AuthenticationSubscription{AuthenticationMethod: models.Udr_DR_AuthMethod_5_G_AKA, EncPermanentKey: "00112233445566778899aabbccddeeff", EncOpcKey: "00112233445566778899aabbccddeeff",
				AuthenticationManagementField: "8000", SequenceNumber: &models.Udr_DR_SequenceNumber{SqnScheme: models.Udr_DR_SqnScheme_NON_TIME_BASED, Sqn: "000000000001"}},
			op: "QueryAuthSubsData"},
		{name: "UDR am-data", method: "GET", uri: udr + "/nudr-dr/v2/subscription-data/" + supi + "/00101/provisioned-data/am-data",
			status: 200, respBody: models.Udr_DR_AccessAndMobilitySubscriptionData{Nssai: &models.Udm_SDM_Nssai{DefaultSingleNssais: []models.Snssai{slice1}}}, op: "QueryAmData"},
		{name: "NSSF selection for registration", method: "GET", uri: nssf + "/nnssf-nsselection/v2/network-slice-information?" + sliceQuery.Encode(),
			status: 200, respBody: models.Nssf_NSSel_AuthorizedNetworkSliceInfo{AllowedNssaiList: []models.Nssf_NSSel_AllowedNssai{{
				AccessType: models.AccessType_3_GPP_ACCESS, AllowedSnssaiList: []models.Nssf_NSSel_AllowedSnssai{{AllowedSnssai: &slice1}}}}},
			op: "NSSelectionGet"},
		{name: "PCF create SM policy", method: "POST", uri: pcf + "/npcf-smpolicycontrol/v1/sm-policies", reqBody: policyCtx,
			status: 201, respBody: decision, respHeaders: []string{"Location", pcf + "/npcf-smpolicycontrol/v1/sm-policies/1"}, op: "CreateSMPolicy"},
		{name: "PCF delete SM policy", method: "POST", uri: pcf + "/npcf-smpolicycontrol/v1/sm-policies/1/delete", reqBody: models.Pcf_SMPolCtrl_SmPolicyDeleteData{},
			status: 204, op: "DeleteSMPolicy"},
		{name: "AMF N1N2 message transfer", method: "POST", uri: amf + "/namf-comm/v1/ue-contexts/" + supi + "/n1-n2-messages", reqBody: n1n2Body, reqCT: n1n2CT,
			status: 200, respBody: models.Amf_Comm_N1N2MessageTransferRspData{Cause: models.Amf_Comm_N1N2MessageTransferCause_N1_N2_TRANSFER_INITIATED}, op: "N1N2MessageTransfer"},
		{name: "SMF update SM context", method: "POST", uri: smf + "/nsmf-pdusession/v1/sm-contexts/1/modify",
			reqBody: models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED},
			status:  200, respBody: models.Smf_PDUSess_SmContextUpdatedData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}, op: "UpdateSmContext"},
		{name: "SMF release SM context", method: "POST", uri: smf + "/nsmf-pdusession/v1/sm-contexts/1/release",
			reqBody: models.Smf_PDUSess_SmContextReleaseData{Cause: models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON},
			status:  204, op: "ReleaseSmContext"},
	})
}

func ptr[T any](v T) *T { return &v }
