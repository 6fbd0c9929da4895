package sbi

import (
	"strings"

	"github.com/free5gc/openapi/models"
)

// NFType is the NF type of TS 29.510 §6.1.6.3.3. It is an alias of the model
// type so that NF profiles and discovery queries need no conversion.
type NFType = models.Nrf_NFMgmt_NFType

// NF types used by tern.
const (
	NFTypeNRF  NFType = models.Nrf_NFMgmt_NFType_NRF
	NFTypeAMF  NFType = models.Nrf_NFMgmt_NFType_AMF
	NFTypeSMF  NFType = models.Nrf_NFMgmt_NFType_SMF
	NFTypeAUSF NFType = models.Nrf_NFMgmt_NFType_AUSF
	NFTypeUDM  NFType = models.Nrf_NFMgmt_NFType_UDM
	NFTypeUDR  NFType = models.Nrf_NFMgmt_NFType_UDR
	NFTypePCF  NFType = models.Nrf_NFMgmt_NFType_PCF
	NFTypeNSSF NFType = models.Nrf_NFMgmt_NFType_NSSF
	NFTypeUPF  NFType = models.Nrf_NFMgmt_NFType_UPF
)

// Operation names a service operation as 3GPP writes it
// ("<Service>_<Operation>"); bindings use it to route requests and
// observability uses it as a label.
type Operation string

// Service operations defined in this package.
const (
	// Nausf_UEAuthentication, TS 29.509 §5.2.
	OpAUSFAuthenticate Operation = "Nausf_UEAuthentication_Authenticate"
	OpAUSFConfirm5gAka Operation = "Nausf_UEAuthentication_Authenticate_Confirm5gAka"
	// Nudm_UEAuthentication, TS 29.503 §5.4.
	OpUDMGenerateAuthData   Operation = "Nudm_UEAuthentication_Get"
	OpUDMResultConfirmation Operation = "Nudm_UEAuthentication_ResultConfirmation"
	// Nudm_SDM, TS 29.503 §5.2.
	OpUDMGetAmData Operation = "Nudm_SDM_Get_AmData"
	OpUDMGetNSSAI  Operation = "Nudm_SDM_Get_NSSAI"
	OpUDMGetSmData Operation = "Nudm_SDM_Get_SmData"
	// smf-select-data (TS 29.503 §5.2.2.2.7).
	OpUDMGetSmfSelectData Operation = "Nudm_SDM_Get_SmfSelectData"
	// Nudm_UECM, TS 29.503 §5.3.
	OpUDMRegisterAMF3GPP Operation = "Nudm_UECM_Registration_Amf3GppAccess"
	OpUDMUpdateAMF3GPP   Operation = "Nudm_UECM_Update_Amf3GppAccess"
	OpUDMGetAMF3GPP      Operation = "Nudm_UECM_Get_Amf3GppAccess"
	// Nnssf_NSSelection, TS 29.531 §5.2.
	OpNSSFSelectForRegistration Operation = "Nnssf_NSSelection_Get_Registration"
	// Nnrf_NFManagement / Nnrf_NFDiscovery / Nnrf_AccessToken, TS 29.510
	// §5.2, §5.3, §5.4.
	OpNRFRegister    Operation = "Nnrf_NFManagement_NFRegister"
	OpNRFHeartbeat   Operation = "Nnrf_NFManagement_NFUpdate" // the heart-beat PATCH
	OpNRFDeregister  Operation = "Nnrf_NFManagement_NFDeregister"
	OpNRFGetProfile  Operation = "Nnrf_NFManagement_NFProfileRetrieval"
	OpNRFSubscribe   Operation = "Nnrf_NFManagement_NFStatusSubscribe"
	OpNRFUnsubscribe Operation = "Nnrf_NFManagement_NFStatusUnSubscribe"
	OpNRFNotify      Operation = "Nnrf_NFManagement_NFStatusNotify"
	OpNRFDiscover    Operation = "Nnrf_NFDiscovery_Request"
	OpNRFAccessToken Operation = "Nnrf_AccessToken_Get"
	// Nudr_DataRepository, TS 29.504 / TS 29.505.
	OpUDRQueryAuthSubscription Operation = "Nudr_DataRepository_Query_AuthenticationSubscription"
	OpUDRAllocateSQN           Operation = "Nudr_DataRepository_Update_SequenceNumber"
	OpUDRQueryAmData           Operation = "Nudr_DataRepository_Query_AmData"
	OpUDRQuerySmData           Operation = "Nudr_DataRepository_Query_SmData"
	OpUDRQuerySmfSelectData    Operation = "Nudr_DataRepository_Query_SmfSelectData"
	// What a UDM that is not tern's uses besides (TS 29.505 §5.2):
	// authentication-subscription's PATCH, authentication-status and the
	// amf-3gpp-access context data.
	OpUDRModifyAuthSubscription = Operation("Nudr_DataRepository_Update_AuthenticationSubscription")
	OpUDRCreateAuthStatus       = Operation("Nudr_DataRepository_Create_AuthenticationStatus")
	OpUDRQueryAuthStatus        = Operation("Nudr_DataRepository_Query_AuthenticationStatus")
	OpUDRQueryAmfContext3gpp    = Operation("Nudr_DataRepository_Query_AmfContext3gpp")
	OpUDRCreateAmfContext3gpp   = Operation("Nudr_DataRepository_Create_AmfContext3gpp")
	OpUDRModifyAmfContext3gpp   = Operation("Nudr_DataRepository_Update_AmfContext3gpp")
)

// Operations of the SMF, AMF and PCF services and the callbacks between NFs.
const (
	// Nsmf_PDUSession, TS 29.502 §5.2.2.
	OpSMFCreateSMContext  Operation = "Nsmf_PDUSession_CreateSMContext"
	OpSMFUpdateSMContext  Operation = "Nsmf_PDUSession_UpdateSMContext"
	OpSMFReleaseSMContext Operation = "Nsmf_PDUSession_ReleaseSMContext"
	OpSMFStatusNotify     Operation = "Nsmf_PDUSession_SMContextStatusNotify"
	// Namf_Communication, TS 29.518 §5.2.2.
	OpAMFN1N2MessageTransfer       Operation = "Namf_Communication_N1N2MessageTransfer"
	OpAMFN1N2TransferFailureNotify Operation = "Namf_Communication_N1N2TransferFailureNotification"
	// Nudm callbacks, TS 29.503 §5.3.2.2.3, §5.2.2.3.2.
	OpUDMDeregistrationNotify Operation = "Nudm_UECM_DeregistrationNotification"
	OpUDMDataChangeNotify     Operation = "Nudm_SDM_Notification"
	// Npcf_SMPolicyControl, TS 29.512 §4.2.
	OpPCFCreateSMPolicy   Operation = "Npcf_SMPolicyControl_Create"
	OpPCFUpdateSMPolicy   Operation = "Npcf_SMPolicyControl_Update"
	OpPCFDeleteSMPolicy   Operation = "Npcf_SMPolicyControl_Delete"
	OpPCFUpdateNotify     Operation = "Npcf_SMPolicyControl_UpdateNotify"
	OpUDRDataChangeNotify Operation = "Nudr_DataRepository_DataChangeNotify"
	OpPCFTerminateNotify  Operation = "Npcf_SMPolicyControl_UpdateNotify_Terminate"
)

// serviceTypes maps a service name's prefix to the NF type that produces
// it (TS 29.510 §6.1.6.3.11 ServiceName: "n" + NF type + "-" + service).
var serviceTypes = map[string]NFType{
	"nnrf": NFTypeNRF, "namf": NFTypeAMF, "nsmf": NFTypeSMF, "nausf": NFTypeAUSF, "nudm": NFTypeUDM,
	"nudr": NFTypeUDR, "npcf": NFTypePCF, "nnssf": NFTypeNSSF, "nupf": NFTypeUPF,
}

// NFTypeOfService is the NF type producing service ("nudm-sdm": UDM), or ""
// for a service tern does not know.
func NFTypeOfService(service string) NFType {
	prefix, _, _ := strings.Cut(service, "-")
	return serviceTypes[prefix]
}
