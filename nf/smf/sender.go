package smf

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/free5gc/openapi/models"
)

// sbiTimeout bounds one call to the AMF.
const sbiTimeout = 10 * time.Second

// send queues m for the AMF (Namf_Communication_N1N2MessageTransfer) on the
// UE's outbound queue, behind everything sent before it. The outbound queue
// is not the UE's executor, so an AMF that answers the transfer by calling
// back into the SMF (UpdateSMContext from inside N1N2MessageTransfer) finds
// the executor free. onFail, if not nil, runs on the executor when the AMF
// refuses the transfer.
func (s *SMF) send(c *smContext, m n1n2, onFail func()) {
	u := c.ue
	s.toAMF(u, func() {
		if err := s.transfer(c, m); err != nil && onFail != nil {
			s.post(u, onFail)
		}
	})
}

// sendReleased queues the SM context status notification of c's release
// (TS 23.502 §4.3.4.2 step 11) behind the messages sent before it.
func (s *SMF) sendReleased(c *smContext) {
	s.toAMF(c.ue, func() { s.notifyReleased(c) })
}

// transfer sends m with Namf_Communication_N1N2MessageTransfer, on the UE's
// outbound queue. ATTEMPTING_TO_REACH_UE counts as accepted (the AMF
// delivers after paging).
func (s *SMF) transfer(c *smContext, m n1n2) error {
	ctx, cancel := context.WithTimeout(s.group.Context(), sbiTimeout)
	defer cancel()
	rsp, err := s.deps.AMF.N1N2MessageTransfer(ctx, c.supi, m.request(c))
	if err == nil && rsp != nil {
		switch rsp.Cause {
		case "", models.Amf_Comm_N1N2MessageTransferCause_N1_N2_TRANSFER_INITIATED,
			models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE:
		default:
			err = fmt.Errorf("N1N2MessageTransfer answered %s", rsp.Cause)
		}
	}
	if err != nil {
		s.stats.amfFailures.Add(1)
		s.log.Warn("N1N2MessageTransfer failed", "supi", c.supi, "psi", c.psi, "err", err)
		return fmt.Errorf("smf: N1N2MessageTransfer: %w", err)
	}
	return nil
}

// notifyReleased tells the AMF that c is gone (Nsmf_PDUSession_
// SMContextStatusNotify, TS 29.502 §5.2.2.10; TS 23.502 §4.3.4.2 step 11).
// It runs on the UE's outbound queue.
func (s *SMF) notifyReleased(c *smContext) {
	ctx, cancel := context.WithTimeout(s.group.Context(), sbiTimeout)
	defer cancel()
	if c.statusURI == "" {
		return
	}
	err := s.deps.AMFStatus.SMContextStatusNotify(ctx, c.statusURI, &models.Smf_PDUSess_SmContextStatusNotification{
		StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED},
	})
	if err != nil {
		s.stats.amfFailures.Add(1)
		s.log.Debug("SMContextStatusNotify failed", "supi", c.supi, "psi", c.psi, "err", err)
	}
}

// releaseResources deletes the N4 session and the policy association and
// frees the UE address. Runs on c's executor.
func (s *SMF) releaseResources(c *smContext) {
	s.deleteN4(c)
	s.deletePolicy(c)
	if ip := c.ueIP; ip.IsValid() {
		// The address goes back to the pool once the UPF no longer
		// routes it to this session.
		c.ueIP = netip.Addr{}
		s.releaseAddress(c, ip)
	}
}

// deletePolicy ends c's SM policy association (Npcf_SMPolicyControl_Delete,
// TS 23.502 §4.3.4.2 step 4). Runs on c's executor.
func (s *SMF) deletePolicy(c *smContext) {
	if c.policyID == "" {
		return
	}
	id := c.policyID
	c.policyID = ""
	s.stats.policies.Add(-1)
	ctx, cancel := context.WithTimeout(s.group.Context(), sbiTimeout)
	defer cancel()
	if err := s.deps.PCF.DeleteSMPolicy(ctx, id, &models.Pcf_SMPolCtrl_SmPolicyDeleteData{}); err != nil {
		s.log.Warn("SM policy deletion failed", "supi", c.supi, "psi", c.psi, "policy", id, "err", err)
	}
}

// startTimer starts the network timer of the procedure c.state names
// (T3591 in stModifying, T3592 in stReleasing) after the first send of n1:
// each expiry retransmits the command alone (the N2 part was delivered),
// and the expiry after the last retransmission aborts the modification
// (TS 24.501 §6.3.2.5 a)) or releases the session locally (§6.3.3.5 a)).
// Runs on c's executor.
func (s *SMF) startTimer(c *smContext, n1 []byte) {
	c.cmd = n1
	c.timer.Start(&c.ue.exec, s.commandTimer(c), s.cfg.timers.MaxRetransmissions, s.commandResent(c), s.commandExpired(c))
}

// resumeTimer arms c's T3591 or T3592 where its record left it: sends
// sends of c.cmd made, the next expiry at deadline (record.go). Runs on
// c's executor.
func (s *SMF) resumeTimer(c *smContext, deadline time.Time, sends int) {
	c.timer.ResumeAt(&c.ue.exec, deadline, sends, s.commandTimer(c), s.cfg.timers.MaxRetransmissions,
		s.commandResent(c), s.commandExpired(c))
}

// commandTimer is the period of the network timer of c's procedure.
func (s *SMF) commandTimer(c *smContext) time.Duration {
	if c.state == stModifying {
		return s.cfg.timers.T3591
	}
	return s.cfg.timers.T3592
}

// commandResent retransmits c's command at an expiry of its timer (a step
// of its own: timer expiries run on the executor outside s.post).
func (s *SMF) commandResent(c *smContext) func(int) {
	return func(int) {
		s.send(c, n1n2{n1: c.cmd}, nil)
		s.endStep(c.ue)
	}
}

// commandExpired ends c's procedure at the expiry after the last
// retransmission.
func (s *SMF) commandExpired(c *smContext) func() {
	return func() {
		switch c.state {
		case stModifying:
			s.log.Info("T3591 expired the last time; modification aborted", "supi", c.supi, "psi", c.psi)
			c.cmd = nil
			c.state = stActive
			s.runPending(c)
		case stReleasing:
			s.log.Info("T3592 expired the last time; PDU session released locally", "supi", c.supi, "psi", c.psi)
			s.finishRelease(c)
		}
		s.endStep(c.ue)
	}
}

func (s *SMF) stopTimer(c *smContext) {
	c.timer.Stop()
	c.cmd = nil
}
