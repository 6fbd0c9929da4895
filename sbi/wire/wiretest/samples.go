package wiretest

import (
	"github.com/free5gc/openapi/models"
)

// Sample is one message of the wire benchmarks: Value is a pointer, as
// wire.Append and json.Marshal take it, and New returns a fresh zero
// value of the same type to decode into.
type Sample struct {
	Name  string
	Value any
	New   func() any
}

// Samples returns the messages of one PDU session establishment, filled
// as tern's AMF and SMF fill them (nf/amf/session.go, nf/amf/
// authentication.go, nf/smf/establish.go): the registration's
// authentication request, CreateSMContext, the N2 UpdateSMContext after
// the gNB's setup response, and the SMF's SM policy request.
func Samples() []Sample {
	return []Sample{
		{"AuthenticationInfo", AuthenticationInfo(), func() any { return new(models.Ausf_UEAU_AuthenticationInfo) }},
		{"SmContextCreateData", SmContextCreateData(), func() any { return new(models.Smf_PDUSess_SmContextCreateData) }},
		{"SmContextUpdateData", SmContextUpdateData(), func() any { return new(models.Smf_PDUSess_SmContextUpdateData) }},
		{"SmPolicyContextData", SmPolicyContextData(), func() any { return new(models.Pcf_SMPolCtrl_SmPolicyContextData) }},
	}
}

const (
	supi       = "imsi-208930000000001"
	suci       = "suci-0-208-93-0000-0-0-0000000001"
	pei        = "imeisv-4370816125816151"
	gpsi       = "msisdn-0900000001"
	amfID      = "7c4dcd9e-1f0a-4a55-9f0e-4f0c6b3e2a11"
	dnn        = "internet"
	statusURI  = "http://127.0.0.1:29518/namf-callback/v1/smContextStatus/" + supi + "/1/1"
	servingSNN = "5G:mnc093.mcc208.3gppnetwork.org"
)

// AuthenticationInfo is the AMF's Nausf_UEAuthentication_Authenticate request.
func AuthenticationInfo() *models.Ausf_UEAU_AuthenticationInfo {
	return &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: suci, ServingNetworkName: servingSNN}
}

// SmContextCreateData is the AMF's Nsmf_PDUSession_CreateSMContext request.
func SmContextCreateData() *models.Smf_PDUSess_SmContextCreateData {
	return &models.Smf_PDUSess_SmContextCreateData{
		Supi:               supi,
		Pei:                pei,
		Gpsi:               gpsi,
		PduSessionId:       1,
		Dnn:                dnn,
		SNssai:             &models.Snssai{Sst: 1, Sd: "010203"},
		ServingNfId:        amfID,
		Guami:              &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "208", Mnc: "93"}, AmfId: "cafe00"},
		ServingNetwork:     &models.PlmnIdNid{Mcc: "208", Mnc: "93"},
		RequestType:        models.Smf_PDUSess_RequestType_INITIAL_REQUEST,
		N1SmMsg:            &models.RefToBinaryData{ContentId: "n1SmMsg"},
		AnType:             models.AccessType_3_GPP_ACCESS,
		RatType:            models.RatType_NR,
		UeLocation:         userLocation(),
		SmContextStatusUri: statusURI,
		SelMode:            models.Smf_PDUSess_DnnSelectionMode_VERIFIED,
	}
}

// SmContextUpdateData is the AMF's N2 Nsmf_PDUSession_UpdateSMContext
// request carrying the PDU Session Resource Setup Response Transfer.
func SmContextUpdateData() *models.Smf_PDUSess_SmContextUpdateData {
	return &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo:     &models.RefToBinaryData{ContentId: "n2SmInfo"},
		N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP,
		UeLocation:   userLocation(),
	}
}

// SmPolicyContextData is the SMF's Npcf_SMPolicyControl_Create request.
func SmPolicyContextData() *models.Pcf_SMPolCtrl_SmPolicyContextData {
	return &models.Pcf_SMPolCtrl_SmPolicyContextData{
		Supi:           supi,
		Gpsi:           gpsi,
		PduSessionId:   1,
		PduSessionType: models.PduSessionType_IPV4,
		Dnn:            dnn,
		SliceInfo:      &models.Snssai{Sst: 1, Sd: "010203"},
		AccessType:     models.AccessType_3_GPP_ACCESS,
		RatType:        models.RatType_NR,
		SubsSessAmbr:   &models.Ambr{Uplink: "1 Gbps", Downlink: "2 Gbps"},
		SubsDefQos: &models.SubscribedDefaultQos{
			Var5qi:        9,
			PriorityLevel: 8,
			Arp: &models.Arp{
				PriorityLevel: 8,
				PreemptCap:    models.PreemptionCapability_NOT_PREEMPT,
				PreemptVuln:   models.PreemptionVulnerability_PREEMPTABLE,
			},
		},
	}
}

func userLocation() *models.UserLocation {
	return &models.UserLocation{NrLocation: &models.NrLocation{
		Tai:  &models.Tai{PlmnId: &models.PlmnId{Mcc: "208", Mnc: "93"}, Tac: "000001"},
		Ncgi: &models.Ncgi{PlmnId: &models.PlmnId{Mcc: "208", Mnc: "93"}, NrCellId: "000000010"},
	}}
}
