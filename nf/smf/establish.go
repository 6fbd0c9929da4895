package smf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

// CreateSMContext implements sbi.PDUSession: the SMF side of UE-requested
// PDU session establishment (TS 23.502 §4.3.2.2.1, TS 24.501 §6.4.1).
//
// Synchronously (steps 3-9): decode the PDU SESSION ESTABLISHMENT REQUEST,
// check DNN, S-NSSAI, PDU session type and SSC mode against the SMF's
// configuration and the SM subscription (Nudm_SDM_Get sm-data), create the
// SM policy association (Npcf_SMPolicyControl_Create), allocate the UE
// address and select the UPF. Any failure there is a *sbi.SMContextError
// carrying the PDU SESSION ESTABLISHMENT REJECT.
//
// Asynchronously, on the UE's executor (steps 10-11): PFCP Session
// Establishment, then Namf_Communication_N1N2MessageTransfer with the
// ACCEPT (N1) and the PDU Session Resource Setup Request Transfer (N2), or,
// if N4 fails, with a REJECT followed by SMContextStatusNotify (RELEASED).
//
// Departure from step order: the spec creates the policy association and
// allocates the address after answering the AMF (steps 7-8); tern does it
// before, so that a missing policy or an empty pool is reported in the
// CreateSMContext answer, as the AMF expects for every reject the SMF can
// know early.
func (s *SMF) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	start := time.Now()
	var supi string
	var psi int32
	if req != nil && req.Data != nil {
		supi, psi = req.Data.Supi, req.Data.PduSessionId
	}
	if s.log.Enabled(ctx, slog.LevelInfo) { // the arguments cost allocations a disabled level need not pay
		s.log.Info("procedure started", "procedure", ProcPDUSessionEstablishment, "supi", supi, "psi", psi)
	}
	created, err := s.createSMContext(ctx, req, start)
	if err != nil {
		// Refused before a context existed: no later step reports it.
		s.procedureEnded(supi, psi, procedures.Rejected, start)
	}
	return created, err
}

func (s *SMF) createSMContext(ctx context.Context, req *sbi.SMContextCreate, start time.Time) (*sbi.SMContextCreated, error) {
	if req == nil || req.Data == nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "smContextCreateData")
	}
	d := req.Data
	switch {
	case d.Supi == "":
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "supi")
	case len(req.N1SmMsg) == 0:
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "n1SmMsg")
	case d.SNssai == nil:
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "sNssai")
	}
	msg, err := nas.DecodeSM(req.N1SmMsg)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseN1SMError, "%v", err)
	}
	er, ok := msg.(*nas.PDUSessionEstablishmentRequest)
	if !ok {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseN1SMError, "%s is not a PDU Session Establishment Request", msg.MessageType())
	}
	psi, pti := er.PDUSessionID(), er.PTI()
	// TS 24.501 §6.4.1.2 / §7.3.2: a PDU session identity must be 1..15
	// and be the one the AMF routes by.
	if psi < 1 || psi > 15 || int32(psi) != d.PduSessionId {
		return nil, s.rejectError(psi, pti, nas.CauseInvalidPDUSessionIdentity, http.StatusForbidden, sbi.CauseN1SMError,
			"PDU session ID mismatch or out of range")
	}
	slice, err := sbi.SNSSAIFromModel(*d.SNssai)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "sNssai: %v", err)
	}
	dnn := d.Dnn
	if d.SelectedDnn != "" { // after DNN replacement (TS 23.502 §4.3.2.2.1 step 2)
		dnn = d.SelectedDnn
	}

	// TS 24.501 §6.4.1.4.1: DNN served in the slice by this SMF.
	dc := s.cfg.dnns[dnn]
	switch {
	case dc == nil:
		return nil, s.rejectError(psi, pti, nas.CauseMissingOrUnknownDNN, http.StatusForbidden, sbi.CauseDNNNotSupported, "DNN "+dnn)
	case dc.slice != slice:
		return nil, s.rejectError(psi, pti, nas.CauseMissingOrUnknownDNNInSlice, http.StatusForbidden, sbi.CauseDNNNotSupported,
			"DNN "+dnn+" not served in slice "+slice.String())
	}
	// PDU session type (TS 24.501 §6.4.1.2, §6.4.1.4.1): tern serves IPv4.
	var typeCause nas.Cause5GSM
	switch er.PDUSessionType {
	case 0, nas.PDUSessionTypeIPv4:
	case nas.PDUSessionTypeIPv4v6:
		typeCause = nas.CausePDUSessionTypeIPv4OnlyAllowed // accepted as IPv4 with cause #50
	case nas.PDUSessionTypeIPv6:
		return nil, s.rejectError(psi, pti, nas.CausePDUSessionTypeIPv4OnlyAllowed, http.StatusForbidden, sbi.CausePDUTypeDenied, "IPv6")
	default:
		return nil, s.rejectError(psi, pti, nas.CauseUnknownPDUSessionType, http.StatusForbidden, sbi.CausePDUTypeDenied,
			"PDU session type not supported")
	}
	// SSC mode (TS 23.501 §5.6.9.3): tern supports SSC mode 1 only.
	if er.SSCMode != 0 && er.SSCMode != nas.SSCMode1 {
		return nil, s.rejectError(psi, pti, nas.CauseNotSupportedSSCMode, http.StatusForbidden, sbi.CauseSubscriptionDenied, "SSC mode")
	}

	// Step 4: SM subscription data.
	sm, err := s.deps.SDM.GetSmData(ctx, d.Supi, sbi.SmDataQuery{})
	if err != nil {
		switch sbi.CauseOf(err) {
		case sbi.CauseUserNotFound:
			return nil, s.rejectError(psi, pti, nas.CauseUserAuthFailed, http.StatusForbidden, sbi.CauseSubscriptionDenied, err.Error())
		case sbi.CauseDataNotFound:
			return nil, s.rejectError(psi, pti, nas.CauseMissingOrUnknownDNN, http.StatusForbidden, sbi.CauseDNNDenied, "no SM subscription")
		}
		return nil, s.rejectError(psi, pti, nas.CauseNetworkFailure, http.StatusGatewayTimeout, sbi.CauseUpstreamServerError, err.Error())
	}
	sub, otherSlice := findDNN(sm, slice, dnn)
	switch {
	case sub == nil && otherSlice:
		return nil, s.rejectError(psi, pti, nas.CauseMissingOrUnknownDNNInSlice, http.StatusForbidden, sbi.CauseDNNDenied,
			"DNN "+dnn+" not subscribed in slice "+slice.String())
	case sub == nil:
		return nil, s.rejectError(psi, pti, nas.CauseMissingOrUnknownDNN, http.StatusForbidden, sbi.CauseDNNDenied, "DNN "+dnn+" not subscribed")
	case !allowsIPv4(sub):
		return nil, s.rejectError(psi, pti, nas.CauseUnknownPDUSessionType, http.StatusForbidden, sbi.CausePDUTypeDenied, "subscription does not allow IPv4")
	case !allowsSSC1(sub):
		return nil, s.rejectError(psi, pti, nas.CauseNotSupportedSSCMode, http.StatusForbidden, sbi.CauseSubscriptionDenied, "subscription does not allow SSC mode 1")
	}

	return callUE(ctx, s, d.Supi, func(u *ueState) (*sbi.SMContextCreated, error) {
		return s.createContext(ctx, u, d, er, psi, pti, dc, slice, sub, typeCause, start)
	})
}

// createContext runs steps 3-9 on u's executor: the old context of the
// same PDU session ID goes, then policy, address and UPF.
func (s *SMF) createContext(ctx context.Context, u *ueState, d *models.Smf_PDUSess_SmContextCreateData,
	er *nas.PDUSessionEstablishmentRequest, psi, pti uint8, dc *dnnConf, slice identity.SNSSAI,
	sub *models.Udm_SDM_DnnConfiguration, typeCause nas.Cause5GSM, start time.Time) (*sbi.SMContextCreated, error) {
	dnn := dc.name
	if old := u.sessions[psi]; old != nil {
		// TS 23.502 §4.3.2.2.1 step 3: a request for a PDU session ID that
		// already has a context releases the old one locally first.
		s.log.Info("new establishment for an existing PDU session ID; releasing the old context", "supi", d.Supi, "psi", psi)
		s.releaseResources(old)
		s.forget(old)
	}

	// The identifiers and the address first (step 8's address before
	// step 7's policy): the allocators' record must hold them before the
	// ref leaves in the policy's notification URI, so that a restored
	// SMF never hands them out again (recordAllocators).
	ref, seid := s.newRef(), s.newSEID()
	ip, ok := dc.pool.allocate()
	s.recordAllocators()
	if !ok {
		return nil, s.rejectError(psi, pti, nas.CauseInsufficientResources5GSM, http.StatusInternalServerError, sbi.CauseInsufficientResSlice,
			"address pool of "+dnn+" exhausted")
	}

	// Step 7: SM policy association. The PCF notifies changes at the
	// context's own URI (TS 29.512 §4.2.2.2: notificationUri).
	polID, dec, err := s.deps.PCF.CreateSMPolicy(ctx, &models.Pcf_SMPolCtrl_SmPolicyContextData{
		NotificationUri: s.apiRoot + sbi.CallbackSMPolicy + ref,
		Supi:            d.Supi,
		Gpsi:            d.Gpsi,
		PduSessionId:    int32(psi),
		PduSessionType:  models.PduSessionType_IPV4,
		Dnn:             dnn,
		SliceInfo:       d.SNssai,
		AccessType:      d.AnType,
		RatType:         d.RatType,
		SubsSessAmbr:    sub.SessionAmbr,
		SubsDefQos:      sub.Var5gQosProfile,
	})
	if err != nil {
		cause, status := nas.CauseNetworkFailure, http.StatusGatewayTimeout
		if st := sbi.StatusOf(err); st >= 400 && st < 500 {
			cause, status = nas.CauseRequestRejectedUnspecified, http.StatusForbidden
		}
		dc.pool.release(ip)
		return nil, s.rejectError(psi, pti, cause, status, sbi.CauseUpstreamServerError, "SM policy: "+err.Error())
	}
	deletePolicy := func() {
		ctx, cancel := context.WithTimeout(s.group.Context(), sbiTimeout)
		defer cancel()
		if err := s.deps.PCF.DeleteSMPolicy(ctx, polID, &models.Pcf_SMPolCtrl_SmPolicyDeleteData{}); err != nil {
			s.log.Warn("SM policy deletion failed", "policy", polID, "err", err)
		}
	}
	q, err := applyDecision(qos{}, dec)
	if err != nil {
		dc.pool.release(ip)
		deletePolicy()
		return nil, s.rejectError(psi, pti, nas.CauseRequestRejectedUnspecified, http.StatusForbidden, sbi.CauseUpstreamServerError, "SM policy decision: "+err.Error())
	}
	// Step 8: the UPF. No UPF up for the DNN (one restoring after a restart, or not
	// answering): the establishment waits for one (wait.go) unless too
	// many already do.
	upf := selectUPF(dc, nil)
	if upf == nil && !s.canWait() {
		dc.pool.release(ip)
		deletePolicy()
		return nil, s.rejectError(psi, pti, nas.CauseInsufficientResources5GSM, http.StatusInternalServerError, sbi.CauseUPFNotResponding,
			"no associated UPF serves "+dnn)
	}

	c := s.newContext(u, ref, seid, psi, dc, slice)
	c.establishing = start
	c.statusURI = d.SmContextStatusUri
	c.pti = pti
	c.ueIP = ip
	c.typeCause = typeCause
	c.pco = buildPCOResponse(parsePCORequest(er.ExtendedPCO), dc.dns, dc.mtu)
	c.policyID = polID
	s.stats.policies.Add(1)
	c.qos = q
	c.upf = upf
	s.post(u, func() { s.completeEstablishment(c) })

	sl := sbi.SNSSAIToModel(slice)
	return &sbi.SMContextCreated{
		Ref:  c.ref,
		Data: &models.Smf_PDUSess_SmContextCreatedData{PduSessionId: int32(psi), SNssai: &sl},
	}, nil
}

// completeEstablishment runs steps 10-11 of TS 23.502 §4.3.2.2.1 on the
// UE's executor, after CreateSMContext has answered. Without a UPF up for
// the DNN, or at a UPF that turns out to have lost its association, the
// establishment waits for one (wait.go).
func (s *SMF) completeEstablishment(c *smContext) {
	if c.state != stEstablishing || c.held { // released meanwhile, or waiting
		return
	}
	if c.waited && s.waitLeft(c) <= 0 {
		s.failEstablishment(c, fmt.Errorf("%w (%v after the request)", errNoUPF, s.cfg.timers.UPFWait))
		return
	}
	if c.asked != nil && c.asked.ended() {
		c.asked = nil // the UPF lost what it was asked for with its life
	}
	u := s.upfFor(c)
	if u == nil {
		why := fmt.Errorf("no UPF serving %s is up", c.dnn.name)
		if c.asked != nil {
			why = fmt.Errorf("UPF %s, which may hold the session, is not up", c.upf.name)
		}
		s.holdEstablishment(c, why)
		return
	}
	c.upf = u
	upf, epoch := c.upf, c.upf.epoch.Load()
	// Intent before the request (issue 36): the record says which UPF,
	// in which life, may hold the session before the request leaves; a
	// restored SMF asks it again (the UPF answers a repeated CP F-SEID
	// with the session it has) and leaves no orphan there.
	c.asked = upf.life.Load()
	s.recordIntent(c.ue)
	err := s.establishN4(c)
	c.asked = nil
	if err != nil && waitsForUPF(err) {
		// Passed over until it has associated again (wait.go).
		c.upf = nil
		c.avoid = append(c.avoid, avoidedUPF{upf, epoch})
		s.holdEstablishment(c, err)
		return
	}
	if err != nil {
		s.failEstablishment(c, err)
		return
	}
	n1, err1 := c.establishmentAccept()
	n2, err2 := c.setupRequestTransfer()
	if err := errors.Join(err1, err2); err != nil {
		s.failEstablishment(c, err)
		return
	}
	c.state = stWaitN2Setup
	c.upCnx = models.Smf_PDUSess_UpCnxState_ACTIVATING
	msg := n1n2{n1: n1, n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ}
	s.send(c, msg, func() {
		if c.state == stWaitN2Setup {
			// The AMF could not take the Accept: the session cannot complete.
			s.releaseResources(c)
			s.forget(c)
			s.sendReleased(c)
		}
	})
}

// failEstablishment ends c's establishment with a PDU Session
// Establishment Reject #26 (TS 23.502 §4.3.2.2.1 step 11: "If the PDU
// Session establishment failed anywhere between step 5 and step 11, then
// the N1N2MessageTransfer request shall include the N1 SM container with
// a PDU Session Establishment Reject"; TS 24.501 §6.4.1.4.1: #26 for
// resources, the UPF included, that the network lacks). Runs on c's
// executor.
func (s *SMF) failEstablishment(c *smContext, err error) {
	s.log.Warn("PDU session establishment failed", "supi", c.supi, "psi", c.psi, "err", err)
	s.establishmentEnded(c, procedures.Rejected)
	s.releaseResources(c)
	s.forget(c)
	s.stats.rejected.Add(1)
	if n1, rerr := establishmentReject(c.psi, c.pti, nas.CauseInsufficientResources5GSM); rerr == nil {
		s.send(c, n1n2{n1: n1}, nil)
	}
	s.sendReleased(c)
}

// findDNN returns the subscribed configuration of dnn in slice, and whether
// dnn is subscribed in another slice (TS 24.501 #70 rather than #27).
func findDNN(sm []models.Udm_SDM_SessionManagementSubscriptionData, slice identity.SNSSAI, dnn string) (*models.Udm_SDM_DnnConfiguration, bool) {
	other := false
	for i := range sm {
		if sm[i].SingleNssai == nil {
			continue
		}
		sl, err := sbi.SNSSAIFromModel(*sm[i].SingleNssai)
		if err != nil {
			continue
		}
		conf, ok := sm[i].DnnConfigurations[dnn]
		if !ok {
			continue
		}
		if sl == slice {
			return &conf, false
		}
		other = true
	}
	return nil, other
}

func allowsIPv4(c *models.Udm_SDM_DnnConfiguration) bool {
	t := c.PduSessionTypes
	if t == nil {
		return true
	}
	if t.DefaultSessionType == models.PduSessionType_IPV4 || t.DefaultSessionType == models.PduSessionType_IPV4_V6 {
		return true
	}
	for _, a := range t.AllowedSessionTypes {
		if a == models.PduSessionType_IPV4 || a == models.PduSessionType_IPV4_V6 {
			return true
		}
	}
	return false
}

func allowsSSC1(c *models.Udm_SDM_DnnConfiguration) bool {
	m := c.SscModes
	if m == nil || m.DefaultSscMode == models.SscMode_1 {
		return true
	}
	for _, a := range m.AllowedSscModes {
		if a == models.SscMode_1 {
			return true
		}
	}
	return false
}

// applyDecision applies the session rule of a policy decision (TS 29.512
// §5.6.2.7: authorized session AMBR and default QoS) to cur. Fields the
// decision leaves out keep their value; the result must be complete.
func applyDecision(cur qos, d *models.Pcf_SMPolCtrl_SmPolicyDecision) (qos, error) {
	if d == nil {
		return cur, errors.New("no decision")
	}
	q := cur
	ids := make([]string, 0, len(d.SessRules))
	for id := range d.SessRules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := d.SessRules[id]
		if r == nil {
			continue
		}
		if a := r.AuthSessAmbr; a != nil {
			ul, err := sbi.ParseBitRate(a.Uplink)
			if err != nil {
				return cur, err
			}
			dl, err := sbi.ParseBitRate(a.Downlink)
			if err != nil {
				return cur, err
			}
			q.ambr = nas.SessionAMBR{UL: ul, DL: dl}
		}
		if dq := r.AuthDefQos; dq != nil {
			if dq.Var5qi < 0 || dq.Var5qi > 255 {
				return cur, errors.New("authDefQos: 5qi out of range")
			}
			if dq.Var5qi != 0 {
				q.fiveQI = uint8(dq.Var5qi)
			}
			if dq.Arp != nil {
				q.arp = *dq.Arp
			}
		}
	}
	switch {
	case q.ambr.UL == 0 || q.ambr.DL == 0:
		return cur, errors.New("no authorized session AMBR")
	case q.fiveQI == 0:
		return cur, errors.New("no authorized default 5QI")
	case q.arp.PriorityLevel < 1 || q.arp.PriorityLevel > 15:
		return cur, errors.New("authorized ARP priority level not in 1..15")
	}
	return q, nil
}
