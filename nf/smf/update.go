package smf

import (
	"context"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// UpdateSMContext implements sbi.PDUSession (TS 29.502 §5.2.2.3): N2 SM
// information from the gNB, an N1 SM message from the UE, or a change of
// the user plane connection state. It never calls the AMF; N1/N2 content for
// the AMF to deliver is in the answer.
func (s *SMF) UpdateSMContext(ctx context.Context, ref string, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	if req == nil || req.Data == nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "smContextUpdateData")
	}
	return callContext(ctx, s, ref, func(c *smContext) (*sbi.SMContextUpdated, error) {
		// A restoration moved the uplink while an activation or a handover
		// was under way: the 5G-AN is told once it is done.
		defer s.settleUplink(c)
		return s.updateContext(ctx, c, req)
	})
}

// updateContext runs UpdateSMContext on c's executor.
func (s *SMF) updateContext(ctx context.Context, c *smContext, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	d := req.Data
	var out *sbi.SMContextUpdated
	var err error
	if len(req.N2SmInfo) > 0 || d.N2SmInfoType != "" {
		if out, err = s.handleN2(ctx, c, d.N2SmInfoType, req.N2SmInfo); err != nil {
			return nil, err
		}
	}
	if len(req.N1SmMsg) > 0 && c.state != stReleased {
		if out, err = s.handleN1(ctx, c, req.N1SmMsg); err != nil {
			return nil, err
		}
	}
	if out != nil {
		return out, nil
	}
	switch {
	case d.HoState == models.Smf_PDUSess_HoState_COMPLETED || d.HoState == models.Smf_PDUSess_HoState_CANCELLED:
		return s.handoverDone(c, d.HoState)
	case d.Release:
		return s.amfRequestedRelease(c)
	case d.UpCnxState == models.Smf_PDUSess_UpCnxState_DEACTIVATED:
		return s.deactivateUP(c)
	case d.UpCnxState == models.Smf_PDUSess_UpCnxState_ACTIVATING:
		return s.activateUP(c)
	}
	return updated(nil, nil, "", c.upCnx), nil
}

// userPlaneUp records that the AN holds the session's user plane, the
// downlink already pointing at c.dlTunnel: the end of an establishment
// (TS 23.502 §4.3.2.2.1 step 16) or of a reactivation (§4.2.3.2 step 12).
func (s *SMF) userPlaneUp(c *smContext) {
	if c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATING && c.state != stWaitN2Setup {
		s.stats.activations.Add(1)
	}
	c.upCnx = models.Smf_PDUSess_UpCnxState_ACTIVATED
	c.dl = dlBuffering
	if c.state == stWaitN2Setup {
		c.state = stActive
		s.stats.established.Add(1)
		s.establishmentEnded(c, procedures.Success)
		s.runPending(c)
	}
}

func n2Error(format string, args ...any) error {
	return sbi.NewProblem(http.StatusBadRequest, sbi.CauseN2SMError, format, args...)
}

// handleN2 handles N2 SM information relayed by the AMF. Runs on c's executor.
func (s *SMF) handleN2(ctx context.Context, c *smContext, typ models.Smf_PDUSess_N2SmInfoType, b []byte) (*sbi.SMContextUpdated, error) {
	switch typ {
	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_RSP:
		// TS 23.502 §4.3.2.2.1 steps 14-16a, or §4.2.3.2 steps 11-12 (service request).
		t, err := ngap.DecodeSetupResponseTransfer(b)
		if err != nil {
			return nil, n2Error("setup response transfer: %v", err)
		}
		reactivation := c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATING && (c.state == stActive || c.state == stModifying)
		if c.state != stWaitN2Setup && !reactivation {
			return nil, n2Error("setup response for a session in state %s", c.state)
		}
		if !t.DLTunnel.Addr.Is4() {
			return nil, n2Error("DL tunnel address %v is not IPv4", t.DLTunnel.Addr)
		}
		if err := s.forwardDownlink(c, t.DLTunnel); err != nil {
			// The user plane cannot carry the session: release it.
			s.log.Warn("downlink path setup failed; releasing the PDU session", "supi", c.supi, "psi", c.psi, "err", err)
			s.networkRelease(c, nas.CauseNetworkFailure)
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
		}
		c.dlTunnel = t.DLTunnel
		s.userPlaneUp(c)
		return updated(nil, nil, "", c.upCnx), nil

	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_FAIL:
		t, err := ngap.DecodeSetupUnsuccessfulTransfer(b)
		if err != nil {
			return nil, n2Error("setup unsuccessful transfer: %v", err)
		}
		s.log.Info("RAN could not set up the PDU session", "supi", c.supi, "psi", c.psi, "cause", t.Cause.String())
		if c.state == stWaitN2Setup {
			// TS 23.502 §4.3.2.2.1 step 12: the RAN does not forward the
			// Accept when it cannot set up the resources, so the UE gets a
			// Reject and the session is released.
			n1, err := establishmentReject(c.psi, c.pti, nas.CauseInsufficientResources5GSM)
			if err != nil {
				return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
			}
			s.establishmentEnded(c, procedures.Rejected)
			s.releaseResources(c)
			s.forget(c)
			s.stats.rejected.Add(1)
			s.sendReleased(c)
			return updated(n1, nil, "", models.Smf_PDUSess_UpCnxState_DEACTIVATED), nil
		}
		if c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATING && c.state != stReleasing {
			// Service request: the session stays, without user plane; the
			// UPF keeps buffering, and reports again in the next episode.
			c.upCnx = models.Smf_PDUSess_UpCnxState_DEACTIVATED
			c.dl = dlBuffering
		}
		return updated(nil, nil, "", c.upCnx), nil

	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_RSP:
		// TS 23.502 §4.3.4.2 step 6-7 (N2 SM Resource Release Ack).
		if _, err := ngap.DecodeReleaseResponseTransfer(b); err != nil {
			return nil, n2Error("release response transfer: %v", err)
		}
		c.upCnx = models.Smf_PDUSess_UpCnxState_DEACTIVATED
		c.dlTunnel = ngap.GTPTunnel{}
		if c.state == stReleasing {
			c.n2Done = true
			s.maybeFinishRelease(c)
		}
		return updated(nil, nil, "", models.Smf_PDUSess_UpCnxState_DEACTIVATED), nil

	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_RSP:
		// TS 23.502 §4.3.3.2 steps 4-5.
		if _, err := ngap.DecodeModifyResponseTransfer(b); err != nil {
			return nil, n2Error("modify response transfer: %v", err)
		}
		if c.ulMoving {
			// The answer to the uplink move, sent before any
			// modification's request (settleUplink).
			s.uplinkMoveAnswered(c, false, "")
			return updated(nil, nil, "", c.upCnx), nil
		}
		if c.state == stModifying {
			c.n2Done = true
			s.maybeFinishModification(c)
		}
		return updated(nil, nil, "", c.upCnx), nil

	case models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_FAIL:
		t, err := ngap.DecodeModifyUnsuccessfulTransfer(b)
		if err != nil {
			return nil, n2Error("modify unsuccessful transfer: %v", err)
		}
		if c.ulMoving {
			s.uplinkMoveAnswered(c, true, t.Cause.String())
			return updated(nil, nil, "", c.upCnx), nil
		}
		// The RAN keeps the previous QoS; the NAS part still completes.
		s.log.Info("RAN could not modify the PDU session", "supi", c.supi, "psi", c.psi, "cause", t.Cause.String())
		if c.state == stModifying {
			c.n2Done = true
			s.maybeFinishModification(c)
		}
		return updated(nil, nil, "", c.upCnx), nil
	}
	return s.handover(c, typ, b)
}

// handleN1 handles a 5GSM message from the UE. Runs on c's executor.
func (s *SMF) handleN1(ctx context.Context, c *smContext, b []byte) (*sbi.SMContextUpdated, error) {
	m, err := nas.DecodeSM(b)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseN1SMError, "%v", err)
	}
	if m.PDUSessionID() != c.psi {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseN1SMError, "PDU session ID %d in a message for session %d", m.PDUSessionID(), c.psi)
	}
	switch m := m.(type) {
	case *nas.PDUSessionModificationRequest:
		return s.ueRequestedModification(ctx, c, m)
	case *nas.PDUSessionModificationComplete:
		// TS 24.501 §6.3.2.3: stop T3591.
		if c.state == stModifying {
			s.stopTimer(c)
			c.n1Done = true
			s.maybeFinishModification(c)
		}
		return updated(nil, nil, "", c.upCnx), nil
	case *nas.PDUSessionModificationCommandReject:
		// TS 24.501 §6.3.2.4: stop T3591 and abort the procedure.
		if c.state == stModifying {
			s.log.Info("UE rejected the modification command", "supi", c.supi, "psi", c.psi, "cause", m.Cause.String())
			s.stopTimer(c)
			c.state = stActive
			if m.Cause == nas.CauseInvalidPDUSessionIdentity {
				// The UE has no such session: release it locally (§6.3.2.4).
				s.releaseResources(c)
				s.forget(c)
				s.sendReleased(c)
				return updated(nil, nil, "", models.Smf_PDUSess_UpCnxState_DEACTIVATED), nil
			}
			s.runPending(c)
		}
		return updated(nil, nil, "", c.upCnx), nil
	case *nas.PDUSessionReleaseRequest:
		return s.ueRequestedRelease(c, m)
	case *nas.PDUSessionReleaseComplete:
		// TS 24.501 §6.3.3.3: stop T3592.
		if c.state == stReleasing {
			s.stopTimer(c)
			c.n1Done = true
			s.maybeFinishRelease(c)
		}
		return updated(nil, nil, "", c.upCnx), nil
	case *nas.Status5GSM:
		s.log.Info("5GSM STATUS from the UE", "supi", c.supi, "psi", c.psi, "cause", m.Cause.String())
		return updated(nil, nil, "", c.upCnx), nil
	}
	// TS 24.501 §7.4: a message not compatible with the protocol state is
	// answered with 5GSM STATUS #98.
	st, err := encodeNAS(&nas.Status5GSM{
		SMHeader: nas.SMHeader{SessionID: c.psi, TransactionID: m.PTI()},
		Cause:    nas.CauseMessageTypeNotCompatible5GSM,
	})
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
	}
	return nil, &sbi.SMContextError{
		Problem: sbi.NewProblem(http.StatusForbidden, sbi.CauseN1SMError, "%s not expected in state %s", m.MessageType(), c.state),
		N1SmMsg: st,
	}
}

// deactivateUP handles the AN release (TS 23.502 §4.2.6 steps 5-7): the
// UPF buffers downlink data and reports it.
func (s *SMF) deactivateUP(c *smContext) (*sbi.SMContextUpdated, error) {
	if c.state != stReleasing && c.upSEID != 0 {
		if err := s.bufferDownlink(c); err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
		}
	}
	if c.upCnx != models.Smf_PDUSess_UpCnxState_DEACTIVATED {
		s.stats.deactivations.Add(1)
	}
	c.upCnx = models.Smf_PDUSess_UpCnxState_DEACTIVATED
	c.dlTunnel = ngap.GTPTunnel{}
	c.dl = dlBuffering
	c.backoff.Stop()
	// An uplink move the 5G-AN has not answered goes with the user plane:
	// the next activation carries the new tunnel.
	c.ulMoving = false
	// A handover in progress ends with the user plane.
	s.dropForwarding(c)
	c.ho, c.hoTarget = hoNone, ngap.GTPTunnel{}
	switch c.state {
	case stWaitN2Setup:
		// The RAN went away before answering the setup: the session exists
		// without user plane (it can be activated by a service request).
		c.state = stActive
		s.runPending(c)
	case stModifying:
		c.n2Done = true
		s.maybeFinishModification(c)
	case stReleasing:
		c.n2Done = true
		s.maybeFinishRelease(c)
	}
	return updated(nil, nil, "", models.Smf_PDUSess_UpCnxState_DEACTIVATED), nil
}

// activateUP handles a service request for this session (TS 23.502 §4.2.3.2
// steps 4-5): the answer carries the N2 setup transfer for the gNB.
func (s *SMF) activateUP(c *smContext) (*sbi.SMContextUpdated, error) {
	if c.state == stReleasing || c.state == stEstablishing || c.upSEID == 0 {
		return updated(nil, nil, "", models.Smf_PDUSess_UpCnxState_DEACTIVATED), nil
	}
	n2, err := c.setupRequestTransfer()
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
	}
	if c.dl == dlDiscarding {
		// The UE is back during the paging backoff: the setup response
		// turns the downlink to the new tunnel.
		c.backoff.Stop()
		c.dl = dlBuffering
	}
	c.upCnx = models.Smf_PDUSess_UpCnxState_ACTIVATING
	return updated(nil, n2, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ, c.upCnx), nil
}
