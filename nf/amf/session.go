package amf

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// This file holds the AMF's part of PDU session management: routing 5GSM
// messages between the UE and the SMF (TS 24.501 §5.4.5, TS 23.502
// §4.3.2.2.1, §4.3.3.2, §4.3.4.2) and relaying N2 SM information to and
// from the gNB (TS 38.413 §8.2). Everything runs on the UE's executor.
//
// Reentrancy: the executor calls the SMF synchronously, and the SMF may call
// back into the AMF (N1N2MessageTransfer, SMContextStatusNotify) from any
// goroutine, even from inside that call. Those entry points never wait for
// the executor: they post the work and return, so it runs after the SMF
// call that caused it has returned (n1n2.go).

// Request type values (TS 24.501 §9.11.3.47) tern routes; the emergency
// (3, 4) and MA PDU (6) requests are not offered.
const (
	requestInitial      uint8 = 1
	requestExisting     uint8 = 2
	requestModification uint8 = 5
)

// upState is the user-plane state of a PDU session as far as the AMF sees
// it (the N2 resources at the gNB).
type upState uint8

const (
	upNone        upState = iota // no N2 resources (yet, or any more)
	upActivating                 // PDU Session Resource Setup Request sent
	upActive                     // set up at the gNB
	upDeactivated                // released with the N2 connection (CM-IDLE)
)

// pduSession is the AMF's record of one PDU session, its PDU session
// routing context (TS 24.501 §5.4.5.2.5; TS 23.502 §5.2.2.2.2: PDU session
// ID, SMF, S-NSSAI, DNN).
type pduSession struct {
	id  uint8
	ref string // smContextRef at the SMF
	// smf is the SMF that holds the context (the one selected at
	// establishment); nil: the AMF's only SMF.
	smf sbi.PDUSession
	// statusURI is the smContextStatusUri given at creation; a
	// notification to another URI is for an older context.
	statusURI string
	snssai    identity.SNSSAI
	dnn       string
	up        upState
}

// smfOr is the SMF of s, or fallback when the session has none of its own.
func (s *pduSession) smfOr(fallback sbi.PDUSession) sbi.PDUSession {
	if s.smf != nil {
		return s.smf
	}
	return fallback
}

// n2Kind says which NGAP procedure carries an N2 SM transfer to the gNB.
type n2Kind uint8

const (
	n2None    n2Kind = iota // N1 only: Downlink NAS Transport
	n2Setup                 // PDU Session Resource Setup Request (TS 38.413 §8.2.1)
	n2Modify                // PDU Session Resource Modify Request (TS 38.413 §8.2.3)
	n2Release               // PDU Session Resource Release Command (TS 38.413 §8.2.2)
)

// n2KindOf maps the N2 SM information type of Nsmf_PDUSession (TS 29.502
// §6.1.6.3.6) to the procedure that delivers it; false for types the AMF
// does not deliver to the gNB.
func n2KindOf(t models.Smf_PDUSess_N2SmInfoType) (n2Kind, bool) {
	switch t {
	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ:
		return n2Setup, true
	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_REQ:
		return n2Modify, true
	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD:
		return n2Release, true
	}
	return n2None, false
}

// smDelivery is N1 and/or N2 SM content for the UE's PDU session id, from an
// N1N2MessageTransfer or from an Nsmf_PDUSession answer.
type smDelivery struct {
	id     uint8
	n1     []byte // 5GSM message; nil = none
	n2     []byte // NGAP SM transfer; nil = none
	kind   n2Kind
	snssai *identity.SNSSAI // from the N2 SM information, when given
}

// onULNASTransport routes an uplink payload (TS 24.501 §5.4.5.2.2). Only
// N1 SM information has a consumer in tern; other payloads are returned
// with cause #90 "payload was not forwarded" (TS 24.501 §5.4.5.2.5).
func (u *ue) onULNASTransport(m *nas.ULNASTransport) {
	if m.PayloadContainerType != nas.PayloadN1SMInformation {
		u.returnPayload(m, nas.CausePayloadNotForwarded)
		return
	}
	smf := u.amf.smfService()
	if smf == nil && u.amf.deps.SMFSelector == nil {
		u.returnPayload(m, nas.CausePayloadNotForwarded)
		return
	}
	if m.PDUSessionID < 1 || m.PDUSessionID > 15 {
		// No valid PDU session ID to route the 5GSM message with.
		u.log.Info("UL NAS Transport without a valid PDU session ID", "pdu_session_id", m.PDUSessionID)
		u.returnPayload(m, nas.CausePayloadNotForwarded)
		return
	}
	s := u.sessions[m.PDUSessionID]
	switch m.RequestType {
	case requestInitial:
		u.establishSession(smf, m, s)
	case 0, requestExisting, requestModification:
		if s == nil {
			// TS 24.501 §5.4.5.2.5: no PDU session routing context for the
			// PDU session ID: the 5GSM message is sent back as not forwarded
			// (§5.4.5.3.1 case e), cause #90).
			u.log.Info("5GSM message for an unknown PDU session", "pdu_session_id", m.PDUSessionID,
				"request_type", m.RequestType)
			u.returnPayload(m, nas.CausePayloadNotForwarded)
			return
		}
		u.forwardN1(smf, s, m)
	default:
		// Emergency and MA PDU sessions are not offered (no emergency
		// services, no non-3GPP access): not forwarded.
		u.log.Info("PDU session request type not supported", "request_type", m.RequestType)
		u.returnPayload(m, nas.CausePayloadNotForwarded)
	}
}

// establishSession runs the AMF steps 2-3 of UE-requested PDU session
// establishment (TS 23.502 §4.3.2.2.1): S-NSSAI and DNN selection, then
// Nsmf_PDUSession_CreateSMContext. The SMF continues with
// N1N2MessageTransfer (step 11).
func (u *ue) establishSession(smf sbi.PDUSession, m *nas.ULNASTransport, old *pduSession) {
	a := u.amf
	if old != nil {
		// The UE reuses the ID of a session we still hold, so it has
		// released that session locally: the old SM context goes first
		// (TS 29.502 cause REL_DUE_TO_DUPLICATE_SESSION_ID).
		u.log.Info("PDU session ID in use, releasing the old SM context", "pdu_session_id", old.id)
		u.releaseSMContext(smf, old, models.Smf_PDUSess_Cause_REL_DUE_TO_DUPLICATE_SESSION_ID)
		u.forgetSession(old)
	}
	snssai, ok := u.selectSNSSAI(m.SNSSAI)
	if !ok {
		// TS 23.502 §4.3.2.2.1 step 2: the S-NSSAI must be one of the
		// allowed NSSAI; the AMF cannot route the request otherwise.
		req := "none"
		if m.SNSSAI != nil {
			req = m.SNSSAI.String()
		}
		u.log.Info("PDU session for an S-NSSAI not allowed", "snssai", req, "allowed", len(u.allowedNSSAI))
		a.stats.smRejected.Add(1)
		u.returnPayload(m, nas.CausePayloadNotForwarded)
		return
	}
	dnn, selMode := m.DNN, models.Smf_PDUSess_DnnSelectionMode_UE_DNN_NOT_VERIFIED
	if dnn == "" {
		var cause nas.Cause5GMM
		if dnn, cause = u.defaultDNN(snssai); cause != 0 {
			a.stats.smRejected.Add(1)
			u.returnPayload(m, cause)
			return
		}
		selMode = models.Smf_PDUSess_DnnSelectionMode_VERIFIED
	}
	sn := sbi.SNSSAIToModel(snssai)
	plmn := u.servingPLMN()
	statusURI := a.smContextStatusURI(u.supi, m.PDUSessionID)
	data := &models.Smf_PDUSess_SmContextCreateData{
		Supi:               u.supi,
		Pei:                u.pei,
		PduSessionId:       int32(m.PDUSessionID),
		Dnn:                dnn,
		SNssai:             &sn,
		ServingNfId:        a.instanceID,
		Guami:              guamiModel(u.guami()),
		ServingNetwork:     &models.PlmnIdNid{Mcc: plmn.MCC, Mnc: plmn.MNC},
		RequestType:        models.Smf_PDUSess_RequestType_INITIAL_REQUEST,
		N1SmMsg:            &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM},
		AnType:             models.AccessType_3_GPP_ACCESS,
		RatType:            models.RatType_NR,
		UeLocation:         u.userLocation(),
		SmContextStatusUri: statusURI,
		SelMode:            selMode,
	}
	ctx, cancel := a.callCtx()
	if sel := a.deps.SMFSelector; sel != nil {
		// TS 23.502 §4.3.2.2.1 step 2, TS 23.501 §6.3.2: the SMF is
		// chosen for the S-NSSAI and DNN (through the NRF); the session
		// stays with it.
		picked, err := sel.SelectSMF(ctx, snssai, dnn)
		if err != nil {
			cancel()
			u.log.Info("no SMF for the PDU session", "pdu_session_id", m.PDUSessionID, "snssai", snssai, "dnn", dnn, "err", err)
			u.returnPayload(m, nas.CauseDNNNotSupportedOrNotSubscribed)
			return
		}
		smf = picked
	}
	created, err := smf.CreateSMContext(ctx, &sbi.SMContextCreate{Data: data, N1SmMsg: m.Payload})
	cancel()
	if err == nil && (created == nil || created.Ref == "") {
		err = errors.New("SMF answered without an SM context reference")
	}
	if err != nil {
		a.stats.smRejected.Add(1)
		var se *sbi.SMContextError
		if errors.As(err, &se) && len(se.N1SmMsg) > 0 {
			// TS 23.502 §4.3.2.2.1 step 3: the SMF's PDU Session
			// Establishment Reject goes to the UE.
			u.log.Info("PDU session establishment rejected by the SMF", "pdu_session_id", m.PDUSessionID, "err", err)
			u.deliverSM(smDelivery{id: m.PDUSessionID, n1: se.N1SmMsg})
			return
		}
		u.log.Info("Nsmf_PDUSession_CreateSMContext failed", "pdu_session_id", m.PDUSessionID, "err", err)
		u.returnPayload(m, causeForSMError(err))
		return
	}
	if u.sessions == nil {
		u.sessions = make(map[uint8]*pduSession)
	}
	u.sessions[m.PDUSessionID] = &pduSession{id: m.PDUSessionID, ref: created.Ref, smf: smf, statusURI: statusURI, snssai: snssai, dnn: dnn}
	a.stats.smCreated.Add(1)
	a.stats.pduSessions.Add(1)
	u.log.Debug("SM context created", "pdu_session_id", m.PDUSessionID, "ref", created.Ref, "dnn", dnn,
		"snssai", snssai.String())
}

// forwardN1 relays a 5GSM message of an existing PDU session to its SMF
// (TS 23.502 §4.3.3.2 step 1a, §4.3.4.2 step 1a, and the Complete
// messages) and delivers what the SMF answers with.
func (u *ue) forwardN1(smf sbi.PDUSession, s *pduSession, m *nas.ULNASTransport) {
	ctx, cancel := u.amf.callCtx()
	upd, err := s.smfOr(smf).UpdateSMContext(ctx, s.ref, &sbi.SMContextUpdate{
		Data: &models.Smf_PDUSess_SmContextUpdateData{
			N1SmMsg:    &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM},
			UeLocation: u.userLocation(),
		},
		N1SmMsg: m.Payload,
	})
	cancel()
	if err != nil {
		if u.deliverSMError(s.id, err) {
			return
		}
		u.log.Info("Nsmf_PDUSession_UpdateSMContext (N1) failed", "pdu_session_id", s.id, "err", err)
		if sbi.CauseOf(err) == sbi.CauseContextNotFound {
			u.forgetSession(s)
		}
		u.returnPayload(m, nas.CausePayloadNotForwarded)
		return
	}
	u.deliverUpdated(s.id, upd)
}

// forwardN2 relays the gNB's answer for one PDU session to its SMF with
// Nsmf_PDUSession_UpdateSMContext (TS 23.502 §4.3.2.2.1 step 14,
// §4.3.3.2 step 4, §4.3.4.2 step 5).
func (u *ue) forwardN2(id uint8, transfer []byte, typ models.Smf_PDUSess_N2SmInfoType, next upState) {
	s := u.sessions[id]
	if s == nil {
		u.log.Info("N2 SM information for an unknown PDU session", "pdu_session_id", id, "type", string(typ))
		return
	}
	smf := s.smfOr(u.amf.smfService())
	if smf == nil {
		return
	}
	ctx, cancel := u.amf.callCtx()
	upd, err := smf.UpdateSMContext(ctx, s.ref, &sbi.SMContextUpdate{
		Data: &models.Smf_PDUSess_SmContextUpdateData{
			N2SmInfo:     &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM},
			N2SmInfoType: typ,
			UeLocation:   u.userLocation(),
		},
		N2SmInfo: transfer,
	})
	cancel()
	if err != nil {
		if u.deliverSMError(id, err) {
			return
		}
		u.log.Info("Nsmf_PDUSession_UpdateSMContext (N2) failed", "pdu_session_id", id, "type", string(typ), "err", err)
		if sbi.CauseOf(err) == sbi.CauseContextNotFound {
			u.forgetSession(s)
		}
		return
	}
	s.up = next
	u.deliverUpdated(id, upd)
}

// deliverSMError delivers the N1/N2 parts of an *sbi.SMContextError (for
// instance a PDU Session Modification Reject); false when err has none.
func (u *ue) deliverSMError(id uint8, err error) bool {
	var se *sbi.SMContextError
	if !errors.As(err, &se) || len(se.N1SmMsg) == 0 && len(se.N2SmInfo) == 0 {
		return false
	}
	d := smDelivery{id: id, n1: se.N1SmMsg}
	if len(se.N2SmInfo) > 0 {
		kind, ok := n2KindOf(se.N2SmInfoType)
		if !ok {
			u.log.Info("SMF error with undeliverable N2 SM information", "type", string(se.N2SmInfoType))
			if len(se.N1SmMsg) == 0 {
				return false
			}
		} else {
			d.n2, d.kind = se.N2SmInfo, kind
		}
	}
	u.log.Info("SMF refused, relaying its answer", "pdu_session_id", id, "err", err)
	u.deliverSM(d)
	return true
}

// deliverUpdated delivers the N1/N2 parts of an UpdateSMContext answer: the
// SMF may answer a UE-requested modification or release with the command
// (TS 23.502 §4.3.3.2 step 3b, §4.3.4.2 step 3b) instead of a separate
// N1N2MessageTransfer.
func (u *ue) deliverUpdated(id uint8, upd *sbi.SMContextUpdated) {
	if upd == nil || len(upd.N1SmMsg) == 0 && len(upd.N2SmInfo) == 0 {
		return
	}
	d := smDelivery{id: id, n1: upd.N1SmMsg}
	if len(upd.N2SmInfo) > 0 {
		var typ models.Smf_PDUSess_N2SmInfoType
		if upd.Data != nil {
			typ = upd.Data.N2SmInfoType
		}
		kind, ok := n2KindOf(typ)
		if !ok {
			u.log.Warn("UpdateSMContext answer with undeliverable N2 SM information", "type", string(typ))
			if len(upd.N1SmMsg) == 0 {
				return
			}
		} else {
			d.n2, d.kind = upd.N2SmInfo, kind
		}
	}
	u.deliverSM(d)
}

// deliverSM sends SM content to the UE and/or its gNB: the N1 part in a DL
// NAS Transport (TS 24.501 §5.4.5.3), inside the NGAP message that carries
// the N2 part when there is one (TS 23.502 §4.3.2.2.1 step 12). A UE that is
// no longer CM-CONNECTED misses it (paging is not implemented; the SMF was
// told the UE was reachable when it asked, so it learns of the loss through
// its own timers).
func (u *ue) deliverSM(d smDelivery) {
	if u.gone() {
		u.log.Debug("SM content for a removed UE context dropped", "pdu_session_id", d.id)
		return
	}
	r := u.ran
	if r == nil || r.state == legReleasing {
		u.log.Info("SM content dropped: UE not CM-CONNECTED", "pdu_session_id", d.id)
		return
	}
	var nasPDU []byte
	if len(d.n1) > 0 {
		dl := &nas.DLNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, Payload: d.n1, PDUSessionID: d.id}
		plain, err := nas.Encode(dl)
		if err != nil {
			u.log.Error("DL NAS Transport encode failed", "err", err)
			return
		}
		if nasPDU, err = u.protect(plain, u.dlHeader()); err != nil {
			u.log.Warn("DL NAS Transport not protected", "err", err)
			return
		}
	}
	s := u.sessions[d.id]
	var err error
	switch d.kind {
	case n2None:
		if nasPDU == nil {
			return
		}
		err = r.sendDownlinkNAS(nasPDU)
	case n2Setup:
		var snssai identity.SNSSAI
		switch {
		case d.snssai != nil:
			snssai = *d.snssai
		case s != nil:
			snssai = s.snssai
		default:
			u.log.Warn("PDU Session Resource Setup without S-NSSAI for an unknown PDU session dropped", "pdu_session_id", d.id)
			return
		}
		req := &ngap.PDUSessionResourceSetupRequest{
			AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID,
			Items: []ngap.PDUSessionResourceSetupItemSUReq{{ID: d.id, NASPDU: nasPDU, SNSSAI: snssai, Transfer: d.n2}},
		}
		// TS 38.413 §8.2.1.2: the gNB needs the UE-AMBR with the first
		// PDU session resources of the UE (§9.2.1.1); later requests may
		// omit it.
		withAMBR := !r.ambrSent && u.ueAMBR != nil
		if withAMBR {
			ambr := *u.ueAMBR
			req.UEAggregateMaxBitRate = &ambr
		}
		if err = u.sendN2(r.gnb, r.stream, req); err == nil {
			r.ambrSent = r.ambrSent || withAMBR
			if s != nil {
				s.up = upActivating
			}
		}
	case n2Modify:
		err = u.sendN2(r.gnb, r.stream, &ngap.PDUSessionResourceModifyRequest{
			AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID,
			Items: []ngap.PDUSessionResourceModifyItemModReq{{ID: d.id, NASPDU: nasPDU, Transfer: d.n2}},
		})
	case n2Release:
		// TS 38.413 §9.2.1.5: the NAS-PDU (PDU Session Release Command) is
		// at message level.
		err = u.sendN2(r.gnb, r.stream, &ngap.PDUSessionResourceReleaseCommand{
			AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, NASPDU: nasPDU,
			Items: []ngap.PDUSessionResourceItem{{ID: d.id, Transfer: d.n2}},
		})
	}
	if err != nil {
		u.log.Warn("SM content not sent", "pdu_session_id", d.id, "err", err)
	}
}

// onPDUSessionResourceSetupResponse relays each session's outcome to its
// SMF (TS 38.413 §8.2.1.2, TS 23.502 §4.3.2.2.1 step 14).
func (u *ue) onPDUSessionResourceSetupResponse(r *ranUE, m *ngap.PDUSessionResourceSetupResponse) {
	if u.gone() || r != u.ran {
		return
	}
	for _, it := range m.Setup {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP, upActive)
	}
	for _, it := range m.Failed {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_FAIL, upNone)
	}
}

// onPDUSessionResourceModifyResponse: TS 38.413 §8.2.3.2, TS 23.502
// §4.3.3.2 step 4.
func (u *ue) onPDUSessionResourceModifyResponse(r *ranUE, m *ngap.PDUSessionResourceModifyResponse) {
	if u.gone() || r != u.ran {
		return
	}
	for _, it := range m.Modified {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_RSP, upActive)
	}
	for _, it := range m.Failed {
		next := upActive
		if s := u.sessions[it.ID]; s != nil {
			next = s.up // a failed modification leaves the resources as they were
		}
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_FAIL, next)
	}
}

// onPDUSessionResourceReleaseResponse: TS 38.413 §8.2.2.2, TS 23.502
// §4.3.4.2 step 5. The session stays until the SMF reports its context
// released (SMContextStatusNotify).
func (u *ue) onPDUSessionResourceReleaseResponse(r *ranUE, m *ngap.PDUSessionResourceReleaseResponse) {
	if u.gone() || r != u.ran {
		return
	}
	for _, it := range m.Released {
		u.forwardN2(it.ID, it.Transfer, models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_RSP, upNone)
	}
}

// onSMContextReleased forgets a PDU session whose SM context the SMF
// released (TS 29.502 §5.2.2.10, TS 23.502 §4.3.4.2 step 11).
//
// Only the named context is forgotten: after a UE-requested release the UE
// may ask for the same PDU session ID again before this notification
// arrives, and the new session must survive it.
func (u *ue) onSMContextReleased(id uint8, uri string) {
	if s := u.sessions[id]; s != nil && sameStatusURI(s.statusURI, uri) {
		u.log.Debug("SM context released by the SMF", "pdu_session_id", id)
		u.forgetSession(s)
	}
}

// deactivateSessions tells the SMF that the user plane is gone with the N2
// connection (TS 23.502 §4.2.6 step 5) for the sessions the gNB listed
// (listed) and, since a lost association lists nothing, for every session
// whose N2 resources were requested or set up. Best effort: a failure is
// logged, the UE stays CM-IDLE regardless.
func (u *ue) deactivateSessions(listed []uint8) {
	smf := u.amf.smfService()
	for _, id := range u.sessionIDs() {
		s := u.sessions[id]
		if s.smfOr(smf) == nil {
			continue
		}
		if s.up == upDeactivated || s.up == upNone && !slices.Contains(listed, id) {
			continue
		}
		s.up = upDeactivated
		ctx, cancel := u.amf.callCtx()
		_, err := s.smfOr(smf).UpdateSMContext(ctx, s.ref, &sbi.SMContextUpdate{
			Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED},
		})
		cancel()
		if err != nil {
			u.log.Info("user plane deactivation not accepted by the SMF", "pdu_session_id", id, "err", err)
			if sbi.CauseOf(err) == sbi.CauseContextNotFound {
				u.forgetSession(s)
			}
		}
	}
}

// releaseSessions releases every SM context of the UE and forgets the
// sessions (TS 23.502 §4.2.2.3.2 step 2).
func (u *ue) releaseSessions(cause models.Smf_PDUSess_Cause) {
	if len(u.sessions) == 0 {
		return
	}
	smf := u.amf.smfService()
	for _, id := range u.sessionIDs() {
		s := u.sessions[id]
		u.releaseSMContext(smf, s, cause)
		u.forgetSession(s)
	}
}

// releaseSMContext is Nsmf_PDUSession_ReleaseSMContext for s; a context the
// SMF no longer has is already what we want.
func (u *ue) releaseSMContext(smf sbi.PDUSession, s *pduSession, cause models.Smf_PDUSess_Cause) {
	req := &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{Cause: cause}}
	if u.ran != nil {
		req.Data.UeLocation = u.userLocation()
	}
	if smf = s.smfOr(smf); smf == nil {
		return
	}
	ctx, cancel := u.amf.callCtx()
	defer cancel()
	if err := smf.ReleaseSMContext(ctx, s.ref, req); err != nil && sbi.CauseOf(err) != sbi.CauseContextNotFound {
		u.log.Warn("Nsmf_PDUSession_ReleaseSMContext failed", "pdu_session_id", s.id, "err", err)
	}
}

func (u *ue) forgetSession(s *pduSession) {
	if u.sessions[s.id] != s {
		return
	}
	delete(u.sessions, s.id)
	u.amf.stats.pduSessions.Add(-1)
	u.amf.stats.smReleased.Add(1)
}

// sessionIDs returns the PDU session IDs in order (deterministic signalling).
func (u *ue) sessionIDs() []uint8 {
	ids := make([]uint8, 0, len(u.sessions))
	for id := range u.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// returnPayload sends an uplink payload back as not forwarded (TS 24.501
// §5.4.5.3.1 e), f)) with the 5GMM cause.
func (u *ue) returnPayload(m *nas.ULNASTransport, cause nas.Cause5GMM) {
	u.sendNASMessage(&nas.DLNASTransport{
		PayloadContainerType: m.PayloadContainerType, Payload: m.Payload,
		PDUSessionID: m.PDUSessionID, Cause: cause,
	})
}

// selectSNSSAI applies TS 23.502 §4.3.2.2.1 step 2: the UE's S-NSSAI when it
// is allowed; without one, a default subscribed S-NSSAI that is allowed,
// else the first allowed one.
func (u *ue) selectSNSSAI(requested *identity.SNSSAI) (identity.SNSSAI, bool) {
	if requested != nil {
		return *requested, containsSNSSAI(u.allowedNSSAI, *requested)
	}
	for _, s := range u.subscribed {
		if s.Default && containsSNSSAI(u.allowedNSSAI, s.SNSSAI) {
			return s.SNSSAI, true
		}
	}
	if len(u.allowedNSSAI) > 0 {
		return u.allowedNSSAI[0], true
	}
	return identity.SNSSAI{}, false
}

// defaultDNN selects the DNN for a request without one (TS 23.502
// §4.3.2.2.1 step 2): the DNN the SMF selection subscription data marks as
// the slice's default (TS 29.503 smf-select-data, defaultDnnIndicator).
//
// Without a marked default the spec has the AMF use a locally configured
// DNN; tern has none to configure, so it takes the slice's DNN when there
// is exactly one and otherwise rejects with #91, rather than guess.
func (u *ue) defaultDNN(snssai identity.SNSSAI) (string, nas.Cause5GMM) {
	a := u.amf
	ctx, cancel := a.callCtx()
	defer cancel()
	data, err := a.deps.SDM.GetSmfSelectData(ctx, u.supi, u.servingPLMN())
	if err != nil {
		u.log.Info("Nudm_SDM_Get smf-select-data failed", "snssai", snssai.String(), "err", err)
		switch sbi.CauseOf(err) {
		case sbi.CauseDataNotFound, sbi.CauseUserNotFound:
			return "", nas.CauseDNNNotSupportedOrNotSubscribed // #91
		}
		return "", nas.CausePayloadNotForwarded
	}
	info := data.SubscribedSnssaiInfos[snssai.String()]
	n, only := 0, ""
	for _, d := range info.DnnInfos {
		if d.DnnBarred || d.Dnn == "" {
			continue
		}
		if d.DefaultDnnIndicator {
			return d.Dnn, 0
		}
		n, only = n+1, d.Dnn
	}
	if n == 1 {
		return only, 0
	}
	u.log.Info("no default DNN for the slice", "snssai", snssai.String(), "subscribed", len(info.DnnInfos))
	return "", nas.CauseDNNNotSupportedOrNotSubscribed
}

// causeForSMError is the 5GMM cause of a DL NAS Transport returning a 5GSM
// message the SMF refused without an answer of its own (TS 24.501
// §5.4.5.3.1 e), f)).
func causeForSMError(err error) nas.Cause5GMM {
	switch sbi.CauseOf(err) {
	case sbi.CauseDNNDenied, sbi.CauseDNNNotSupported:
		return nas.CauseDNNNotSupportedOrNotSubscribed // #91
	}
	return nas.CausePayloadNotForwarded // #90
}

// guami is the GUAMI serving the UE: that of its 5G-GUTI.
func (u *ue) guami() identity.GUAMI {
	if u.guti != nil {
		return u.guti.GUAMI
	}
	return u.amf.cfg.guamis[0]
}

// userLocation is the UE's last NR location as a TS 29.571 UserLocation;
// nil in CM-IDLE.
func (u *ue) userLocation() *models.UserLocation {
	if u.ran == nil {
		return nil
	}
	return userLocationModel(u.ran.loc)
}

func userLocationModel(l ngap.UserLocationNR) *models.UserLocation {
	taiPLMN := sbi.PLMNToModel(l.TAI.PLMN)
	cellPLMN := sbi.PLMNToModel(l.NRCGI.PLMN)
	return &models.UserLocation{NrLocation: &models.NrLocation{
		Tai:  &models.Tai{PlmnId: &taiPLMN, Tac: fmt.Sprintf("%06x", l.TAI.TAC)},
		Ncgi: &models.Ncgi{PlmnId: &cellPLMN, NrCellId: fmt.Sprintf("%09x", l.NRCGI.CellID)},
	}}
}

// smContextStatusURI is the callback the SMF notifies when the SM context
// of the UE's PDU session psi is released (SMContextStatusNotify):
// {apiRoot}/namf-callback/v1/smContextStatus/{supi}/{psi}/{n}, n unique
// per creation so that a late notification for an older context of the
// same PDU session ID is recognised.
func (a *AMF) smContextStatusURI(supi string, psi uint8) string {
	return fmt.Sprintf("%s%s%s/%d/%d", a.apiRoot, smContextStatusPath, supi, psi, a.statusSeq.Add(1))
}

const (
	smContextStatusPath = sbi.CallbackSMContextStatus
	deregNotifyPath     = sbi.CallbackDeregistration
)

// sameStatusURI reports whether a notification's uri names the context
// whose smContextStatusUri was given: by the path from the callback prefix
// on, which the creation number makes unique. The apiRoot before it does
// not take part: the HTTP binding hands the AMF the request's path only,
// and a peer may write the authority differently (a name for an address).
// Without this the notification of a released context went unheard and
// the AMF released the context again at deregistration (404 at the SMF).
func sameStatusURI(given, uri string) bool {
	_, g, ok1 := strings.Cut(given, smContextStatusPath)
	_, n, ok2 := strings.Cut(uri, smContextStatusPath)
	return ok1 && ok2 && g == n
}

// parseStatusURI reads the UE and PDU session ID from a URI made by
// smContextStatusURI.
func parseStatusURI(uri string) (supi string, psi uint8, ok bool) {
	_, rest, ok := strings.Cut(uri, smContextStatusPath)
	if !ok {
		return "", 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" {
		return "", 0, false
	}
	n, err := strconv.ParseUint(parts[1], 10, 8)
	if err != nil || n < 1 || n > 15 {
		return "", 0, false
	}
	return parts[0], uint8(n), true
}
