package ops

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// Empty is the message of an operation without a request or response body.
type Empty struct{}

// Nausf_UEAuthentication.

type AuthenticateRequest struct {
	Info *models.Ausf_UEAU_AuthenticationInfo `sbi:"body"`
}

type AuthenticateResponse struct {
	AuthCtxID string                                `sbi:"location"`
	Ctx       *models.Ausf_UEAU_UEAuthenticationCtx `sbi:"body"`
}

type Confirm5gAkaRequest struct {
	AuthCtxID string                             `sbi:"path=authCtxId"`
	Data      *models.Ausf_UEAU_ConfirmationData `sbi:"body"`
}

type Confirm5gAkaResponse struct {
	Result *models.Ausf_UEAU_ConfirmationDataResponse `sbi:"body"`
}

// Nudm_UEAuthentication.

type GenerateAuthDataRequest struct {
	SupiOrSuci string                                     `sbi:"path=supiOrSuci"`
	Info       *models.Udm_UEAU_AuthenticationInfoRequest `sbi:"body"`
}

type GenerateAuthDataResponse struct {
	Result *models.Udm_UEAU_AuthenticationInfoResult `sbi:"body"`
}

type ConfirmAuthRequest struct {
	Supi  string                     `sbi:"path=supi"`
	Event *models.Udm_UEAU_AuthEvent `sbi:"body"`
}

type ConfirmAuthResponse struct {
	EventID string                     `sbi:"location"`
	Event   *models.Udm_UEAU_AuthEvent `sbi:"body"`
}

// Nudm_SDM.

// PLMNQuery is a Nudm_SDM read of one data set of supi in a PLMN.
type PLMNQuery struct {
	Supi string         `sbi:"path=supi"`
	PLMN *models.PlmnId `sbi:"query=plmn-id,json"`
}

func (q *PLMNQuery) plmn() (identity.PLMN, error) { return plmnOf(q.PLMN) }

func plmnOf(m *models.PlmnId) (identity.PLMN, error) {
	if m == nil {
		return identity.PLMN{}, nil
	}
	p, err := sbi.PLMNFromModel(*m)
	if err != nil {
		return identity.PLMN{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "plmn-id: %v", err)
	}
	return p, nil
}

func plmnModel(p identity.PLMN) *models.PlmnId {
	if p == (identity.PLMN{}) {
		return nil
	}
	m := sbi.PLMNToModel(p)
	return &m
}

type AmDataResponse struct {
	Data *models.Udm_SDM_AccessAndMobilitySubscriptionData `sbi:"body"`
}

type NSSAIResponse struct {
	Data *models.Udm_SDM_Nssai `sbi:"body"`
}

type SmfSelectDataResponse struct {
	Data *models.Udm_SDM_SmfSelectionSubscriptionData `sbi:"body"`
}

// SmDataRequest is Nudm_SDM_Get of sm-data; its query (single-nssai, dnn,
// plmn-id) is encoded by EncodeQuery.
type SmDataRequest struct {
	Supi  string `sbi:"path=supi"`
	Query sbi.SmDataQuery
}

func (r *SmDataRequest) EncodeQuery(q url.Values) error { return encodeSmDataQuery(q, r.Query, true) }

func (r *SmDataRequest) DecodeQuery(q url.Values) (err error) {
	r.Query, err = decodeSmDataQuery(q, true)
	return err
}

func encodeSmDataQuery(q url.Values, s sbi.SmDataQuery, withPLMN bool) error {
	if s.SNSSAI != nil {
		if err := setJSON(q, "single-nssai", sbi.SNSSAIToModel(*s.SNSSAI)); err != nil {
			return err
		}
	}
	if s.DNN != "" {
		q.Set("dnn", s.DNN)
	}
	if withPLMN {
		if m := plmnModel(s.PLMN); m != nil {
			return setJSON(q, "plmn-id", m)
		}
	}
	return nil
}

func decodeSmDataQuery(q url.Values, withPLMN bool) (sbi.SmDataQuery, error) {
	var s sbi.SmDataQuery
	s.DNN = q.Get("dnn")
	if v := q.Get("single-nssai"); v != "" {
		var m models.Snssai
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return s, badQuery("single-nssai", err)
		}
		n, err := sbi.SNSSAIFromModel(m)
		if err != nil {
			return s, badQuery("single-nssai", err)
		}
		s.SNSSAI = &n
	}
	if v := q.Get("plmn-id"); v != "" && withPLMN {
		var m models.PlmnId
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return s, badQuery("plmn-id", err)
		}
		p, err := plmnOf(&m)
		if err != nil {
			return s, err
		}
		s.PLMN = p
	}
	return s, nil
}

type SmDataResponse struct {
	Data []models.Udm_SDM_SessionManagementSubscriptionData `sbi:"body"`
}

// DataChangeNotifyRequest is Nudm_SDM_Notification to a consumer.
type DataChangeNotifyRequest struct {
	Supi         string                                   `sbi:"path=supi"`
	Notification *models.Udm_SDM_ModificationNotification `sbi:"body"`
}

// Nudm_UECM.

type RegisterAMFRequest struct {
	Supi         string                                     `sbi:"path=ueId"`
	Registration *models.Udm_UECM_Amf3GppAccessRegistration `sbi:"body"`
}

type RegisterAMFResponse struct {
	Registration *models.Udm_UECM_Amf3GppAccessRegistration `sbi:"body"`
	Created      bool                                       `sbi:"created"`
}

// SuccessStatus is 201 when the PUT created the registration, 200 when it
// replaced the UE's (TS 29.503 §5.3.2.2.2; 3GppRegistration's responses).
func (r *RegisterAMFResponse) SuccessStatus() int {
	if r.Created {
		return http.StatusCreated
	}
	return http.StatusOK
}

type UpdateAMFRequest struct {
	Supi         string                                                 `sbi:"path=ueId"`
	Modification *models.Udm_UECM_Amf3GppAccessRegistrationModification `sbi:"body"`
}

// UEIDRequest names a UE by the {ueId} path parameter.
type UEIDRequest struct {
	Supi string `sbi:"path=ueId"`
}

type DeregistrationNotifyRequest struct {
	URI  string                              `sbi:"uri"`
	Data *models.Udm_UECM_DeregistrationData `sbi:"body"`
}

// Nnssf_NSSelection.

// NSSelectionRequest is Nnssf_NSSelection_Get for a registration. Its
// query (nf-type, nf-id, slice-info-request-for-registration, tai) is
// encoded by EncodeQuery; NFID is the requesting AMF's instance ID. The
// SUPI has no query parameter in TS 29.531 and is not sent over HTTP.
type NSSelectionRequest struct {
	NFID       string
	Supi       string
	Requested  []identity.SNSSAI
	Subscribed []sbi.SubscribedSNSSAI
	TAI        identity.TAI
}

func (r *NSSelectionRequest) EncodeQuery(q url.Values) error {
	q.Set("nf-type", string(sbi.NFTypeAMF))
	q.Set("nf-id", r.NFID)
	info := models.Nssf_NSSel_SliceInfoForRegistration{}
	for _, s := range r.Subscribed {
		info.SubscribedNssai = append(info.SubscribedNssai, models.Nssf_NSSel_SubscribedSnssai{
			SubscribedSnssai:  &models.Snssai{Sst: int32(s.SNSSAI.SST), Sd: sbi.SNSSAIToModel(s.SNSSAI).Sd},
			DefaultIndication: s.Default})
	}
	for _, s := range r.Requested {
		info.RequestedNssai = append(info.RequestedNssai, sbi.SNSSAIToModel(s))
	}
	if err := setJSON(q, "slice-info-request-for-registration", info); err != nil {
		return err
	}
	plmn := sbi.PLMNToModel(r.TAI.PLMN)
	return setJSON(q, "tai", models.Tai{PlmnId: &plmn, Tac: fmt.Sprintf("%06x", r.TAI.TAC)})
}

func (r *NSSelectionRequest) DecodeQuery(q url.Values) error {
	r.NFID = q.Get("nf-id")
	var info models.Nssf_NSSel_SliceInfoForRegistration
	if err := json.Unmarshal([]byte(q.Get("slice-info-request-for-registration")), &info); err != nil {
		return badQuery("slice-info-request-for-registration", err)
	}
	for _, m := range info.SubscribedNssai {
		if m.SubscribedSnssai == nil {
			return badQuery("slice-info-request-for-registration", fmt.Errorf("subscribedSnssai missing"))
		}
		s, err := sbi.SNSSAIFromModel(*m.SubscribedSnssai)
		if err != nil {
			return badQuery("slice-info-request-for-registration", err)
		}
		r.Subscribed = append(r.Subscribed, sbi.SubscribedSNSSAI{SNSSAI: s, Default: m.DefaultIndication})
	}
	for _, m := range info.RequestedNssai {
		s, err := sbi.SNSSAIFromModel(m)
		if err != nil {
			return badQuery("slice-info-request-for-registration", err)
		}
		r.Requested = append(r.Requested, s)
	}
	if v := q.Get("tai"); v != "" {
		t, err := taiOf(v)
		if err != nil {
			return err
		}
		r.TAI = t
	}
	return nil
}

type NSSelectionResponse struct {
	Info *models.Nssf_NSSel_AuthorizedNetworkSliceInfo `sbi:"body"`
}

// Nnrf.

type NFRegisterRequest struct {
	ID      string                       `sbi:"path=nfInstanceID"`
	Profile *models.Nrf_NFMgmt_NFProfile `sbi:"body"`
}

type NFProfileResponse struct {
	Profile *models.Nrf_NFMgmt_NFProfile `sbi:"body"`
	Created bool                         `sbi:"created"`
}

// SuccessStatus is 201 for a new instance, 200 for a replaced profile
// (TS 29.510 §5.2.2.2.2).
func (r *NFProfileResponse) SuccessStatus() int {
	if r.Created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// NFHeartbeatRequest is NFUpdate's PATCH (TS 29.510 §5.2.2.3): the JSON
// Patch, of which the heart-beat (§5.2.2.3.2, sbi.HeartbeatPatch) is one.
type NFHeartbeatRequest struct {
	ID    string             `sbi:"path=nfInstanceID"`
	Patch []models.PatchItem `sbi:"body"`
}

type NFHeartbeatResponse struct {
	Profile *models.Nrf_NFMgmt_NFProfile `sbi:"body"`
}

// SuccessStatus is 204 when the profile is unchanged, 200 with the
// profile as stored otherwise.
func (r *NFHeartbeatResponse) SuccessStatus() int {
	if r.Profile == nil {
		return http.StatusNoContent
	}
	return http.StatusOK
}

type SubscribeRequest struct {
	Data *models.Nrf_NFMgmt_SubscriptionData `sbi:"body"`
}

type SubscribeResponse struct {
	ID   string                              `sbi:"location"`
	Data *models.Nrf_NFMgmt_SubscriptionData `sbi:"body"`
}

type UnsubscribeRequest struct {
	ID string `sbi:"path=subscriptionID"`
}

type NFStatusNotifyRequest struct {
	URI          string                              `sbi:"uri"`
	Notification *models.Nrf_NFMgmt_NotificationData `sbi:"body"`
}

type AccessTokenRequest struct {
	Req *models.Nrf_AccTok_AccessTokenReq `sbi:"body"`
}

type AccessTokenResponse struct {
	Token *models.Nrf_AccTok_AccessTokenRsp `sbi:"body"`
}

type NFInstanceRequest struct {
	ID string `sbi:"path=nfInstanceID"`
}

// DiscoverRequest is Nnrf_NFDiscovery_Request; EncodeQuery writes the
// TS 29.510 §6.2.3.2.3.1 query parameters.
type DiscoverRequest struct {
	Target sbi.NFType
	Query  sbi.DiscoveryQuery
}

func (r *DiscoverRequest) EncodeQuery(q url.Values) error {
	q.Set("target-nf-type", string(r.Target))
	q.Set("requester-nf-type", string(r.Query.RequesterNFType))
	if len(r.Query.ServiceNames) > 0 {
		names := make([]string, len(r.Query.ServiceNames))
		for i, n := range r.Query.ServiceNames {
			names[i] = string(n)
		}
		q.Set("service-names", strings.Join(names, ","))
	}
	if len(r.Query.SNSSAIs) > 0 {
		list := make([]models.Snssai, len(r.Query.SNSSAIs))
		for i, s := range r.Query.SNSSAIs {
			list[i] = sbi.SNSSAIToModel(s)
		}
		if err := setJSON(q, "snssais", list); err != nil {
			return err
		}
	}
	if r.Query.PLMN != nil {
		if err := setJSON(q, "target-plmn-list", []models.PlmnId{sbi.PLMNToModel(*r.Query.PLMN)}); err != nil {
			return err
		}
	}
	if r.Query.DNN != "" {
		q.Set("dnn", r.Query.DNN)
	}
	if r.Query.SUPI != "" {
		q.Set("supi", r.Query.SUPI)
	}
	if t := r.Query.TAI; t != nil {
		plmn := sbi.PLMNToModel(t.PLMN)
		if err := setJSON(q, "tai", models.Tai{PlmnId: &plmn, Tac: fmt.Sprintf("%06x", t.TAC)}); err != nil {
			return err
		}
	}
	if r.Query.TargetNFInstanceID != "" {
		q.Set("target-nf-instance-id", r.Query.TargetNFInstanceID)
	}
	return nil
}

func (r *DiscoverRequest) DecodeQuery(q url.Values) error {
	r.Target = sbi.NFType(q.Get("target-nf-type"))
	r.Query.RequesterNFType = sbi.NFType(q.Get("requester-nf-type"))
	if r.Target == "" || r.Query.RequesterNFType == "" {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "target-nf-type and requester-nf-type are mandatory")
	}
	if v := q.Get("service-names"); v != "" {
		for _, n := range strings.Split(v, ",") {
			r.Query.ServiceNames = append(r.Query.ServiceNames, models.Nrf_NFMgmt_ServiceName(n))
		}
	}
	if v := q.Get("snssais"); v != "" {
		var list []models.Snssai
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return badQuery("snssais", err)
		}
		for _, m := range list {
			s, err := sbi.SNSSAIFromModel(m)
			if err != nil {
				return badQuery("snssais", err)
			}
			r.Query.SNSSAIs = append(r.Query.SNSSAIs, s)
		}
	}
	if v := q.Get("target-plmn-list"); v != "" {
		var list []models.PlmnId
		if err := json.Unmarshal([]byte(v), &list); err != nil || len(list) == 0 {
			return badQuery("target-plmn-list", err)
		}
		p, err := plmnOf(&list[0])
		if err != nil {
			return err
		}
		r.Query.PLMN = &p
	}
	r.Query.DNN = q.Get("dnn")
	r.Query.SUPI = q.Get("supi")
	r.Query.TargetNFInstanceID = q.Get("target-nf-instance-id")
	if v := q.Get("tai"); v != "" {
		t, err := taiOf(v)
		if err != nil {
			return err
		}
		r.Query.TAI = &t
	}
	return nil
}

// taiOf reads a JSON Tai query parameter.
func taiOf(v string) (identity.TAI, error) {
	var t models.Tai
	if err := json.Unmarshal([]byte(v), &t); err != nil || t.PlmnId == nil {
		return identity.TAI{}, badQuery("tai", err)
	}
	plmn, err := sbi.PLMNFromModel(*t.PlmnId)
	if err != nil {
		return identity.TAI{}, badQuery("tai", err)
	}
	tac, err := strconv.ParseUint(t.Tac, 16, 24)
	if err != nil {
		return identity.TAI{}, badQuery("tai", err)
	}
	return identity.TAI{PLMN: plmn, TAC: uint32(tac)}, nil
}

type DiscoverResponse struct {
	Result *models.Nrf_NFDisc_SearchResult `sbi:"body"`
}

// Nudr_DataRepository.

type AuthSubscriptionResponse struct {
	Data *models.Udr_DR_AuthenticationSubscription `sbi:"body"`
}

type AllocateSQNRequest struct {
	Supi string                        `sbi:"path=ueId"`
	Body *models.Udr_DR_SequenceNumber `sbi:"body"` // Sqn: SQN_MS, or empty
}

type SequenceNumberResponse struct {
	SQN *models.Udr_DR_SequenceNumber `sbi:"body"`
}

// UDRPLMNRequest reads a provisioned data set of a UE in a serving PLMN
// ({servingPlmnId}: MCC followed by MNC).
type UDRPLMNRequest struct {
	Supi string `sbi:"path=ueId"`
	PLMN string `sbi:"path=servingPlmnId"`
}

func (r *UDRPLMNRequest) plmn() (identity.PLMN, error) {
	p, err := identity.ParsePLMN(r.PLMN)
	if err != nil {
		return identity.PLMN{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "servingPlmnId: %v", err)
	}
	return p, nil
}

type UDRAmDataResponse struct {
	Data *models.Udr_DR_AccessAndMobilitySubscriptionData `sbi:"body"`
}

type UDRSmfSelectDataResponse struct {
	Data *models.Udr_DR_SmfSelectionSubscriptionData `sbi:"body"`
}

// UDRSmDataRequest reads sm-data, filtered by single-nssai and dnn.
type UDRSmDataRequest struct {
	Supi  string `sbi:"path=ueId"`
	PLMN  string `sbi:"path=servingPlmnId"`
	Query sbi.SmDataQuery
}

func (r *UDRSmDataRequest) EncodeQuery(q url.Values) error {
	return encodeSmDataQuery(q, r.Query, false)
}

func (r *UDRSmDataRequest) DecodeQuery(q url.Values) (err error) {
	r.Query, err = decodeSmDataQuery(q, false)
	return err
}

func (r *UDRSmDataRequest) query() (sbi.SmDataQuery, error) {
	p, err := (&UDRPLMNRequest{PLMN: r.PLMN}).plmn()
	q := r.Query
	q.PLMN = p
	return q, err
}

// UDRSmDataResponse is SmSubsData in its array form (TS 29.505: the
// extended form is for shared data, which tern does not use).
type UDRSmDataResponse struct {
	Data []models.Udm_SDM_SessionManagementSubscriptionData `sbi:"body"`
}

// Nsmf_PDUSession.

type CreateSMContextRequest struct {
	Data    *models.Smf_PDUSess_SmContextCreateData `sbi:"body"`
	N1SmMsg []byte                                  `sbi:"part=n1SmMsg"`
}

type CreateSMContextResponse struct {
	Ref  string                                   `sbi:"location"`
	Data *models.Smf_PDUSess_SmContextCreatedData `sbi:"body"`
}

type UpdateSMContextRequest struct {
	Ref      string                                  `sbi:"path=smContextRef"`
	Data     *models.Smf_PDUSess_SmContextUpdateData `sbi:"body"`
	N1SmMsg  []byte                                  `sbi:"part=n1SmMsg"`
	N2SmInfo []byte                                  `sbi:"part=n2SmInfo"`
}

type UpdateSMContextResponse struct {
	Data     *models.Smf_PDUSess_SmContextUpdatedData `sbi:"body"`
	N1SmMsg  []byte                                   `sbi:"part=n1SmMsg"`
	N2SmInfo []byte                                   `sbi:"part=n2SmInfo"`
}

// SuccessStatus is 204 for an update with nothing to return (TS 29.502
// §6.1.3.3.4.2.2).
func (r *UpdateSMContextResponse) SuccessStatus() int {
	if r.Data == nil && r.N1SmMsg == nil && r.N2SmInfo == nil {
		return http.StatusNoContent
	}
	return http.StatusOK
}

type ReleaseSMContextRequest struct {
	Ref      string                                   `sbi:"path=smContextRef"`
	Data     *models.Smf_PDUSess_SmContextReleaseData `sbi:"body"`
	N2SmInfo []byte                                   `sbi:"part=n2SmInfo"`
}

type StatusNotifyRequest struct {
	URI          string                                          `sbi:"uri"`
	Notification *models.Smf_PDUSess_SmContextStatusNotification `sbi:"body"`
}

// Namf_Communication.

type N1N2TransferRequest struct {
	UEContextID string                                      `sbi:"path=ueContextId"`
	Data        *models.Amf_Comm_N1N2MessageTransferReqData `sbi:"body"`
	N1Msg       []byte                                      `sbi:"part=n1SmMsg"`
	N2Info      []byte                                      `sbi:"part=n2SmInfo"`
}

type N1N2TransferResponse struct {
	// ID names the transfer the AMF keeps while it pages (the 202's
	// Location, .../n1-n2-messages/{n1N2MessageId}): tern holds one per
	// PDU session, so its ID is the PDU session ID.
	ID   string                                      `sbi:"location"`
	Data *models.Amf_Comm_N1N2MessageTransferRspData `sbi:"body"`
}

// SuccessStatus is 202 when the AMF pages the UE (TS 29.518
// §6.1.3.5.3.1).
func (r *N1N2TransferResponse) SuccessStatus() int {
	if r.Data != nil && r.Data.Cause == models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE {
		return http.StatusAccepted
	}
	return http.StatusOK
}

type N1N2FailureNotifyRequest struct {
	URI          string                                          `sbi:"uri"`
	Notification *models.Amf_Comm_N1N2MsgTxfrFailureNotification `sbi:"body"`
}

// Npcf_SMPolicyControl.

type CreateSMPolicyRequest struct {
	Context *models.Pcf_SMPolCtrl_SmPolicyContextData `sbi:"body"`
}

type SMPolicyResponse struct {
	PolicyID string                                 `sbi:"location"`
	Decision *models.Pcf_SMPolCtrl_SmPolicyDecision `sbi:"body"`
}

type UpdateSMPolicyRequest struct {
	PolicyID string                                          `sbi:"path=smPolicyId"`
	Context  *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData `sbi:"body"`
}

type DeleteSMPolicyRequest struct {
	PolicyID string                                   `sbi:"path=smPolicyId"`
	Data     *models.Pcf_SMPolCtrl_SmPolicyDeleteData `sbi:"body"`
}

type PolicyUpdateNotifyRequest struct {
	URI          string                                     `sbi:"uri"`
	Notification *models.Pcf_SMPolCtrl_SmPolicyNotification `sbi:"body"`
}

type PolicyTerminateNotifyRequest struct {
	URI          string                                        `sbi:"uri"`
	Notification *models.Pcf_SMPolCtrl_TerminationNotification `sbi:"body"`
}

type DataChangedRequest struct {
	Notification *models.Udr_DR_DataChangeNotify `sbi:"body"`
}

// The rest of Nudr_DataRepository (TS 29.505) a UDM other than tern's
// uses.

// PatchRequest is a JSON Patch (RFC 6902) of a UE's resource.
type PatchRequest struct {
	Supi  string             `sbi:"path=ueId"`
	Patch []models.PatchItem `sbi:"body"`
}

type AuthStatusRequest struct {
	Supi  string                     `sbi:"path=ueId"`
	Event *models.Udm_UEAU_AuthEvent `sbi:"body"`
}

type AuthStatusResponse struct {
	Event *models.Udm_UEAU_AuthEvent `sbi:"body"`
}

type AmfContext3gppRequest struct {
	Supi         string                                   `sbi:"path=ueId"`
	Registration *models.Udr_DR_Amf3GppAccessRegistration `sbi:"body"`
}

type AmfContext3gppResponse struct {
	Registration *models.Udr_DR_Amf3GppAccessRegistration `sbi:"body"`
}

// AmfContext3gppCreated answers the PUT of amf-3gpp-access.
type AmfContext3gppCreated struct {
	Registration *models.Udr_DR_Amf3GppAccessRegistration `sbi:"body"`
	Created      bool                                     `sbi:"created"`
}

// SuccessStatus is 201 with the resource when the PUT created it, 204 when
// it replaced one (TS 29.505 CreateAmfContext3gpp).
func (r *AmfContext3gppCreated) SuccessStatus() int {
	if r.Created {
		return http.StatusCreated
	}
	return http.StatusNoContent
}

// jsonValues gives each operation of patch its value as encoding/json
// decodes it into an any (a map for a struct): what the producer gets over
// HTTP, and what the shared-memory binding can carry.
func jsonValues(patch []models.PatchItem) ([]models.PatchItem, error) {
	out := make([]models.PatchItem, len(patch))
	for i, it := range patch {
		out[i] = it
		if it.Value == nil {
			continue
		}
		b, err := json.Marshal(it.Value)
		if err != nil {
			return nil, fmt.Errorf("ops: patch operation %d: %w", i, err)
		}
		if err := json.Unmarshal(b, &out[i].Value); err != nil {
			return nil, fmt.Errorf("ops: patch operation %d: %w", i, err)
		}
	}
	return out, nil
}

func setJSON(q url.Values, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ops: query %s: %w", name, err)
	}
	q.Set(name, string(b))
	return nil
}

func badQuery(name string, err error) error {
	return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "query parameter %s: %v", name, err)
}
