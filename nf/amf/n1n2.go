package amf

import (
	"context"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

// The services the AMF serves to SMFs.
var (
	_ sbi.Communication           = (*AMF)(nil)
	_ sbi.SMContextStatusNotifier = (*AMF)(nil)
)

// N1N2MessageTransfer implements sbi.Communication (TS 29.518 §5.2.2.3.1,
// TS 23.502 §4.3.2.2.1 step 11, §4.2.3.3 step 3). ueContextID is the SUPI.
//
// It never waits for the UE's executor: the SMF may call it from inside a
// CreateSMContext or UpdateSMContext call the executor is making, so the
// delivery is queued behind that call and the answer is given from the
// state the executor last published: N1_N2_TRANSFER_INITIATED for a UE in
// CM-CONNECTED, ATTEMPTING_TO_REACH_UE for one in CM-IDLE (it is paged),
// and 504 UE_NOT_REACHABLE once its mobile reachable timer ran out. The
// executor decides again with the state it then finds (a UE that went idle
// meanwhile is paged; one that came back gets the content at once).
func (a *AMF) N1N2MessageTransfer(ctx context.Context, ueContextID string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	d, err := smDeliveryOf(req)
	if err != nil {
		return nil, err
	}
	u := a.supis.Get(ueContextID)
	if u == nil {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no UE context for %s", ueContextID)
	}
	st, reachable := u.publishedState()
	cause := models.Amf_Comm_N1N2MessageTransferCause_N1_N2_TRANSFER_INITIATED
	if st.cm == cmIdle {
		if !reachable {
			// TS 29.518 §6.1.3.5.3.1: 504 UE_NOT_REACHABLE.
			return nil, sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseUENotReachable, "%s is not reachable", ueContextID)
		}
		cause = models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE
	}
	a.stats.n1n2.Add(1)
	t := mtTransfer{d: d, failureURI: req.Data.N1n2FailureTxfNotifURI}
	prio := pagingPriority(req.Data.Arp)
	u.post(func() { u.onMobileTerminated(t, prio) })
	return &models.Amf_Comm_N1N2MessageTransferRspData{Cause: cause}, nil
}

// smDeliveryOf validates an N1N2MessageTransfer request (TS 29.518
// §6.1.6.2.1) and extracts what the UE's executor delivers.
func smDeliveryOf(req *sbi.N1N2Message) (smDelivery, error) {
	if req == nil || req.Data == nil {
		return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "N1N2MessageTransferReqData")
	}
	if len(req.N1Msg) == 0 && len(req.N2Info) == 0 {
		return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "neither N1 nor N2 content")
	}
	d := smDelivery{n1: req.N1Msg}
	id := req.Data.PduSessionId
	if len(req.N2Info) > 0 {
		c := req.Data.N2InfoContainer
		if c == nil || c.SmInfo == nil || c.SmInfo.N2InfoContent == nil {
			return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "n2InfoContainer.smInfo.n2InfoContent")
		}
		if c.N2InformationClass != "" && c.N2InformationClass != models.Amf_Comm_N2InformationClass_SM {
			return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect,
				"N2 information class %q is not SM", c.N2InformationClass)
		}
		switch t := c.SmInfo.N2InfoContent.NgapIeType; t {
		case models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ:
			d.kind = n2Setup
		case models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ:
			d.kind = n2Modify
		case models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD:
			d.kind = n2Release
		default:
			return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "NGAP IE type %q not supported", t)
		}
		d.n2 = req.N2Info
		if c.SmInfo.PduSessionId != 0 {
			id = c.SmInfo.PduSessionId
		}
		if c.SmInfo.SNssai != nil {
			sn, err := sbi.SNSSAIFromModel(*c.SmInfo.SNssai)
			if err != nil {
				return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "sNssai: %v", err)
			}
			d.snssai = &sn
		}
	}
	if id == 0 && len(req.N1Msg) >= 2 && req.N1Msg[0] == nas.EPD5GSM {
		// The 5GSM header names the session (TS 24.501 §9.4).
		id = int32(req.N1Msg[1])
	}
	if id < 1 || id > 15 {
		return smDelivery{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "PDU session ID %d", id)
	}
	d.id = uint8(id)
	return d, nil
}

// SMContextStatusNotify implements sbi.SMContextStatusNotifier (TS 29.502
// §5.2.2.10): a released SM context ends the AMF's PDU session. uri is the
// smContextStatusUri the AMF gave at creation. Like N1N2MessageTransfer it
// only queues the work for the UE.
func (a *AMF) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	if n == nil || n.StatusInfo == nil {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "statusInfo")
	}
	supi, id, ok := parseStatusURI(uri)
	if !ok {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseResourceURIStructureNotFound, "%q is no smContextStatusUri of this AMF", uri)
	}
	u := a.supis.Get(supi)
	if u == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no UE context for %s", supi)
	}
	if n.StatusInfo.ResourceStatus != models.Smf_PDUSess_ResourceStatus_RELEASED {
		// UPDATED / TRANSFERRED / ALT_ANCHOR_SMF concern SMF changes tern
		// does not make.
		return nil
	}
	u.post(func() { u.onSMContextReleased(id, uri) })
	return nil
}
