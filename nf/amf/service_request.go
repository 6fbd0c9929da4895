package amf

import (
	"slices"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// The service request procedure (TS 24.501 §5.6.1, TS 23.502 §4.2.3.2): a
// registered UE asks for its NAS signalling connection and the user plane of
// its PDU sessions back, on its own (uplink data or signalling) or because
// it was paged (§4.2.3.3). Everything runs on the UE's executor.

// serviceRequestProc is the data of a running service request.
type serviceRequestProc struct {
	req *nas.ServiceRequest
	// afterAuth: the request did not verify, so the UE is authenticated
	// again and the complete request is taken from the Security Mode
	// Complete (TS 24.501 §4.4.6, §5.6.1.4.1).
	afterAuth bool
}

// onServiceRequest starts the procedure for a Service Request the UE sent
// as its initial NAS message (or, in CM-CONNECTED, in an Uplink NAS
// Transport to have its user plane set up). integrity says whether it
// verified with the UE's current NAS security context.
func (u *ue) onServiceRequest(m *nas.ServiceRequest, integrity bool) {
	if u.st.rm != rmRegistered {
		// TS 24.501 §5.6.1.5: the network no longer holds the UE's
		// registration; the UE registers again.
		u.rejectService(nas.CauseImplicitlyDeregistered)
		return
	}
	switch m.ServiceType {
	case nas.ServiceEmergency, nas.ServiceEmergencyFallback:
		// No emergency services in tern (TS 24.501 §5.6.1.5: #7).
		u.rejectService(nas.Cause5GSServicesNotAllowed)
		return
	}
	u.endProcedureData(u.st.proc) // paging, or a repeated service request
	if !u.fire(evServiceRequestStart) {
		u.sendStatus(nas.CauseMessageTypeNotCompatibleWithState)
		return
	}
	if integrity && len(m.NASMessageContainer) > 0 {
		// TS 24.501 §4.4.6: the complete request (with the Uplink data
		// status and PDU session status) is in the ciphered container.
		if full, ok := u.openInitial(m.NASMessageContainer).(*nas.ServiceRequest); ok {
			m = full
		}
	}
	u.svc = serviceRequestProc{req: m}
	if !integrity {
		// TS 24.501 §5.6.1.4.1 / TS 33.501 §6.4.6: the security context is
		// not usable (the request did not verify): authenticate and run
		// security mode control before acting on the request.
		u.svc.afterAuth = true
		u.startAuthentication(nil)
		return
	}
	u.acceptService()
}

// acceptService runs TS 23.502 §4.2.3.2 steps 4-12 for the current request:
// local release of the PDU sessions the UE no longer has, user-plane
// activation of those with uplink data (or, after paging, downlink data),
// then the Service Accept, in an Initial Context Setup when the gNB has no
// AS context for the UE yet.
func (u *ue) acceptService() {
	req := u.svc.req
	if req == nil || u.st.proc != procServiceRequest {
		return
	}
	u.common.step = commonNone
	accept := &nas.ServiceAccept{}
	// TS 24.501 §5.6.1.4.1: the sessions the UE reports inactive are
	// released locally (and at the SMF); the accept says which the
	// network keeps.
	accept.PDUSessionStatus = u.alignSessions(req.PDUSessionStatus)
	// The sessions to activate: those with uplink data, those the network
	// has downlink data for (the paging's reason) and, for a request in
	// answer to paging, every session paged for.
	want := u.pagedSessions()
	if req.UplinkDataStatus != nil {
		for id := uint8(1); id <= 15; id++ {
			if *req.UplinkDataStatus&(1<<id) != 0 && !slices.Contains(want, id) {
				want = append(want, id)
			}
		}
	}
	slices.Sort(want)
	var items []ngap.PDUSessionResourceSetupItemSUReq
	var failed uint16
	for _, id := range want {
		item, cause := u.activateSession(id)
		if cause != 0 {
			failed |= 1 << id
			accept.PDUSessionReactivationResultErrorCause = append(accept.PDUSessionReactivationResultErrorCause,
				nas.PDUSessionCause{PSI: id, Cause: cause})
			continue
		}
		items = append(items, item)
	}
	if req.UplinkDataStatus != nil {
		// TS 24.501 §9.11.3.42: a bit set says the requested re-establishment
		// did not succeed.
		accept.PDUSessionReactivationResult = &failed
	}
	pending := u.takePendingN1()
	plain, err := nas.Encode(accept)
	if err != nil {
		u.log.Error("encode Service Accept", "err", err)
		u.abortProcedure(causeNASUnspecified)
		return
	}
	hdr := nas.IntegrityProtectedAndCiphered
	r := u.ran
	viaICS := r.state != legContext
	if viaICS {
		// CM-IDLE to CM-CONNECTED: the gNB gets the AS context with the
		// sessions to set up, the Service Accept inside (step 12).
		err = u.sendInitialContextSetup(plain, hdr, items)
	} else {
		// Already CM-CONNECTED: the accept, then the sessions' resources.
		err = u.sendNAS(plain, hdr)
		if err == nil && len(items) > 0 {
			u.sendSetupItems(items)
		}
	}
	u.amf.stats.serviceRequests.Add(1)
	if err != nil {
		u.log.Warn("Service Accept not sent", "err", err)
		u.endServiceRequest()
		u.releaseConnection(causeNASUnspecified)
		return
	}
	for _, d := range pending {
		u.deliverSM(d)
	}
	if !viaICS || len(items) == 0 {
		u.serviceRequestDone()
	}
	// Otherwise the Initial Context Setup Response ends the procedure.
}

// activateSession asks the SMF for the user plane of session id (TS 23.502
// §4.2.3.2 step 4: Nsmf_PDUSession_UpdateSMContext, UP activation) and
// returns the item for the gNB, or the 5GMM cause for the Service Accept's
// error list.
func (u *ue) activateSession(id uint8) (ngap.PDUSessionResourceSetupItemSUReq, nas.Cause5GMM) {
	s := u.sessions[id]
	smf := u.amf.smfService()
	if s == nil || s.smfOr(smf) == nil {
		// TS 24.501 §5.6.1.4.1: no such PDU session on the network side.
		return ngap.PDUSessionResourceSetupItemSUReq{}, nas.CauseInsufficientUserPlaneResources
	}
	ctx, cancel := u.amf.callCtx()
	upd, err := s.smfOr(smf).UpdateSMContext(ctx, s.ref, &sbi.SMContextUpdate{
		Data: &models.Smf_PDUSess_SmContextUpdateData{
			UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING,
			UeLocation: u.userLocation(),
		},
	})
	cancel()
	if err != nil || upd == nil || len(upd.N2SmInfo) == 0 {
		u.log.Info("user plane activation refused by the SMF", "pdu_session_id", id, "err", err)
		if sbi.CauseOf(err) == sbi.CauseContextNotFound {
			u.forgetSession(s)
		}
		return ngap.PDUSessionResourceSetupItemSUReq{}, nas.CauseInsufficientUserPlaneResources
	}
	s.up = upActivating
	return ngap.PDUSessionResourceSetupItemSUReq{ID: id, SNSSAI: s.snssai, Transfer: upd.N2SmInfo}, 0
}

// sendSetupItems asks the gNB of a CM-CONNECTED UE to set up the user plane
// of the items' sessions (TS 38.413 §8.2.1).
func (u *ue) sendSetupItems(items []ngap.PDUSessionResourceSetupItemSUReq) {
	r := u.ran
	req := &ngap.PDUSessionResourceSetupRequest{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, Items: items}
	withAMBR := !r.ambrSent && u.ueAMBR != nil
	if withAMBR {
		ambr := *u.ueAMBR
		req.UEAggregateMaxBitRate = &ambr
	}
	if err := u.sendN2(r.gnb, r.stream, req); err != nil {
		u.log.Warn("PDU Session Resource Setup Request not sent", "err", err)
		return
	}
	r.ambrSent = r.ambrSent || withAMBR
}

// serviceRequestDone ends an accepted service request.
func (u *ue) serviceRequestDone() {
	u.svc = serviceRequestProc{}
	u.resetCommon()
	u.fire(evServiceRequestEnd)
}

// endServiceRequest abandons a running service request.
func (u *ue) endServiceRequest() {
	u.endProcedureData(procServiceRequest)
	u.fire(evServiceRequestEnd)
}

// rejectService sends Service Reject (TS 24.501 §5.6.1.5) with cause and
// releases the connection. A UE told to register again (#9, #10) keeps no
// context here.
func (u *ue) rejectService(cause nas.Cause5GMM) {
	u.log.Info("service request rejected", "cause", cause.String())
	u.amf.stats.serviceRejects.Add(1)
	u.sendNASMessage(&nas.ServiceReject{Cause: cause})
	if u.st.proc == procServiceRequest {
		u.outcome = procedures.Rejected
		u.endServiceRequest()
	}
	if u.st.rm == rmRegistered && cause != nas.CauseImplicitlyDeregistered && cause != nas.CauseUEIdentityCannotBeDerived {
		u.releaseConnection(causeNASNormalRelease)
		return
	}
	u.releaseAndRemove(causeNASNormalRelease)
}

// alignSessions takes the PDU session status a UE sent in a Service
// Request or Registration Request (TS 24.501 §5.6.1.4.1, §5.5.1.3.4): the
// sessions the UE reports inactive are released locally and at the SMF,
// and the status of those the network keeps is returned for the accept.
// Nil (the UE sent none): nothing changes, the accept carries none.
func (u *ue) alignSessions(ueStatus *uint16) *uint16 {
	if ueStatus == nil {
		return nil
	}
	for _, id := range u.sessionIDs() {
		if *ueStatus&(1<<id) == 0 {
			u.log.Info("PDU session the UE no longer has released", "pdu_session_id", id)
			s := u.sessions[id]
			u.releaseSMContext(u.amf.smfService(), s, models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON)
			u.forgetSession(s)
		}
	}
	status := u.sessionStatus()
	return &status
}

// sessionStatus is the PDU session status IE of the sessions the AMF holds
// (TS 24.501 §9.11.3.44: bit i = PSI i).
func (u *ue) sessionStatus() uint16 {
	var st uint16
	for id := range u.sessions {
		st |= 1 << id
	}
	return st
}
