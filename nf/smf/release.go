package smf

import (
	"context"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

// beginRelease starts a PDU session release (TS 23.502 §4.3.4.2): the N4
// session and the policy association go first (steps 2-3), then the
// PDU SESSION RELEASE COMMAND (TS 24.501 §6.3.3.2) and, when the RAN holds
// resources for the session, the N2 Release Command Transfer. c moves to
// stReleasing with T3592 running; the UE address stays allocated until the
// UE has confirmed. Runs on c's executor.
func (s *SMF) beginRelease(c *smContext, pti uint8, cause nas.Cause5GSM) (n1, n2 []byte, err error) {
	n1, err = encodeNAS(&nas.PDUSessionReleaseCommand{
		SMHeader: nas.SMHeader{SessionID: c.psi, TransactionID: pti},
		Cause:    cause,
	})
	if err != nil {
		return nil, nil, err
	}
	ranResources := c.state != stEstablishing && c.upCnx != models.Smf_PDUSess_UpCnxState_DEACTIVATED
	if ranResources {
		if n2, err = releaseCommandTransfer(); err != nil {
			return nil, nil, err
		}
	}
	s.stopTimer(c)
	c.pending = nil
	s.deleteN4(c)
	s.deletePolicy(c)
	c.state = stReleasing
	c.pti = pti
	c.n1Done, c.n2Done = false, n2 == nil
	s.startTimer(c, n1)
	return n1, n2, nil
}

func (s *SMF) maybeFinishRelease(c *smContext) {
	if c.state == stReleasing && c.n1Done && c.n2Done {
		s.finishRelease(c)
	}
}

// finishRelease ends a UE- or network-requested release: the context goes
// and the AMF is told (TS 23.502 §4.3.4.2 step 11). Runs on c's executor.
func (s *SMF) finishRelease(c *smContext) {
	s.releaseResources(c)
	s.forget(c)
	s.sendReleased(c)
}

// ueRequestedRelease answers a PDU SESSION RELEASE REQUEST (TS 23.502
// §4.3.4.2 step 1a, TS 24.501 §6.4.3) with the command in the
// UpdateSMContext answer.
func (s *SMF) ueRequestedRelease(c *smContext, m *nas.PDUSessionReleaseRequest) (*sbi.SMContextUpdated, error) {
	if c.state == stReleasing && c.cmd != nil {
		// A repeated request while the command is out: resend the command.
		return updated(c.cmd, nil, "", c.upCnx), nil
	}
	n1, n2, err := s.beginRelease(c, m.PTI(), nas.CauseRegularDeactivation)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
	}
	return updated(n1, n2, models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD, c.upCnx), nil
}

// amfRequestedRelease handles UpdateSMContext with release=true (TS 29.502
// §5.2.2.3.4, TS 23.502 §4.3.4.2 step 1d with N2 resources to release): like
// a network-requested release, but the command is in the answer.
func (s *SMF) amfRequestedRelease(c *smContext) (*sbi.SMContextUpdated, error) {
	if c.state == stReleasing {
		return updated(nil, nil, "", c.upCnx), nil
	}
	n1, n2, err := s.beginRelease(c, 0, nas.CauseRegularDeactivation)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
	}
	return updated(n1, n2, models.Smf_PDUSess_N2SmInfoType_PDU_RES_REL_CMD, c.upCnx), nil
}

// networkRelease starts a network-requested release (TS 23.502 §4.3.4.2
// step 1b-1e) whose messages go out with N1N2MessageTransfer on the UE's
// outbound queue. If the AMF cannot deliver them, the session is released
// locally. Runs on c's executor.
func (s *SMF) networkRelease(c *smContext, cause nas.Cause5GSM) {
	if c.state == stReleasing || c.state == stReleased {
		return
	}
	n1, n2, err := s.beginRelease(c, 0, cause)
	if err != nil {
		s.log.Warn("network-requested release: building the command failed; releasing locally", "supi", c.supi, "psi", c.psi, "err", err)
		s.finishRelease(c)
		return
	}
	msg := n1n2{n1: n1, n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD}
	s.send(c, msg, func() {
		if c.state == stReleasing {
			s.finishRelease(c)
		}
	})
}

// Release is the operator's network-requested release of one PDU session
// (TS 23.502 §4.3.4.2 step 1e: "the SMF decides to release"). It returns
// once the release has started; completion is signalled to the AMF with
// SMContextStatusNotify.
func (s *SMF) Release(ctx context.Context, supi string, pduSessionID uint8) error {
	if s.ues.Get(supi) == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no PDU session for %s", supi)
	}
	_, err := callUE(ctx, s, supi, func(u *ueState) (struct{}, error) {
		c := u.sessions[pduSessionID]
		if c == nil {
			return struct{}{}, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "%s has no PDU session %d", supi, pduSessionID)
		}
		s.networkRelease(c, nas.CauseRegularDeactivation)
		return struct{}{}, nil
	})
	return err
}

// SMPolicyTerminateNotify ends a PDU session whose policy association the
// PCF terminates (TS 29.512 §4.2.3.3, TS 23.502 §4.3.4.2 step 1c). The PCF
// package calls it when its notifier implements it.
func (s *SMF) SMPolicyTerminateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_TerminationNotification) error {
	var resource string
	if n != nil {
		resource = n.ResourceUri
	}
	ref, err := policyNotifyRef(uri, "/terminate")
	if err != nil {
		return err
	}
	_, err = callContext(ctx, s, ref, func(c *smContext) (struct{}, error) {
		if err := c.samePolicy(resource); err != nil {
			return struct{}{}, err
		}
		s.networkRelease(c, nas.CauseRegularDeactivation)
		return struct{}{}, nil
	})
	return err
}

// ReleaseSMContext implements sbi.PDUSession (TS 29.502 §5.2.2.4): the AMF
// releases the context (deregistration, AMF-side release, TS 23.502
// §4.3.4.2 step 1d). The SMF deletes the N4 session and the policy
// association and frees the address; no N1/N2 and no status notification.
func (s *SMF) ReleaseSMContext(ctx context.Context, ref string, req *sbi.SMContextRelease) error {
	_, err := callContext(ctx, s, ref, func(c *smContext) (struct{}, error) {
		s.releaseResources(c)
		s.forget(c)
		return struct{}{}, nil
	})
	return err
}
