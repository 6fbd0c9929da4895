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

// transfer sends m with Namf_Communication_N1N2MessageTransfer. It runs on
// the UE's sender without any lock. ATTEMPTING_TO_REACH_UE counts as
// accepted (the AMF delivers after paging).
func (s *SMF) transfer(c *smContext, m n1n2) error {
	ctx, cancel := context.WithTimeout(s.ctx, sbiTimeout)
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
// It runs on the UE's sender without any lock.
func (s *SMF) notifyReleased(c *smContext) {
	ctx, cancel := context.WithTimeout(s.ctx, sbiTimeout)
	defer cancel()
	err := s.deps.AMFStatus.SMContextStatusNotify(ctx, c.supi, int32(c.psi), c.ref, &models.Smf_PDUSess_SmContextStatusNotification{
		StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED},
	})
	if err != nil {
		s.stats.amfFailures.Add(1)
		s.log.Debug("SMContextStatusNotify failed", "supi", c.supi, "psi", c.psi, "err", err)
	}
}

// releaseResources deletes the N4 session and the policy association and
// frees the UE address. Runs with c.ue.mu held.
func (s *SMF) releaseResources(c *smContext) {
	s.deleteN4(c)
	s.deletePolicy(c)
	if c.ueIP.IsValid() {
		c.dnn.pool.release(c.ueIP)
		c.ueIP = netip.Addr{}
	}
}

// deletePolicy ends c's SM policy association (Npcf_SMPolicyControl_Delete,
// TS 23.502 §4.3.4.2 step 4). Runs with c.ue.mu held.
func (s *SMF) deletePolicy(c *smContext) {
	if c.policyID == "" {
		return
	}
	id := c.policyID
	c.policyID = ""
	s.policies.Delete(id)
	s.stats.policies.Add(-1)
	ctx, cancel := context.WithTimeout(s.ctx, sbiTimeout)
	defer cancel()
	if err := s.deps.PCF.DeleteSMPolicy(ctx, id, &models.Pcf_SMPolCtrl_SmPolicyDeleteData{}); err != nil {
		s.log.Warn("SM policy deletion failed", "supi", c.supi, "psi", c.psi, "policy", id, "err", err)
	}
}

// startTimer starts the network timer of the procedure c.state names
// (T3591 in stModifying, T3592 in stReleasing) after the first send of n1.
// Runs with c.ue.mu held.
func (s *SMF) startTimer(c *smContext, n1 []byte) {
	s.stopTimer(c)
	c.timer.sends = 1
	c.timer.n1 = n1
	s.armTimer(c)
}

func (s *SMF) armTimer(c *smContext) {
	d := s.cfg.timers.T3592
	if c.state == stModifying {
		d = s.cfg.timers.T3591
	}
	gen := c.timer.gen
	c.timer.t = time.AfterFunc(d, func() {
		s.post(c.ue, func() { s.timerExpired(c, gen) })
	})
}

func (s *SMF) stopTimer(c *smContext) {
	if c.timer.t != nil {
		c.timer.t.Stop()
		c.timer.t = nil
	}
	c.timer.gen++
	c.timer.n1 = nil
}

// timerExpired handles an expiry of T3591/T3592 on the UE's sender:
// retransmit the command, and on the fifth expiry abort the modification
// (TS 24.501 §6.3.2.5 a)) or release the session locally (§6.3.3.5 a)).
func (s *SMF) timerExpired(c *smContext, gen uint32) {
	u := c.ue
	u.mu.Lock()
	if c.state == stReleased || gen != c.timer.gen {
		s.unlockUE(u)
		return
	}
	if c.timer.sends > s.cfg.timers.MaxRetransmissions {
		switch c.state {
		case stModifying:
			s.log.Info("T3591 expired the last time; modification aborted", "supi", c.supi, "psi", c.psi)
			s.stopTimer(c)
			c.state = stActive
			s.runPending(c)
		case stReleasing:
			s.log.Info("T3592 expired the last time; PDU session released locally", "supi", c.supi, "psi", c.psi)
			s.finishRelease(c)
		}
		s.unlockUE(u)
		return
	}
	c.timer.sends++
	n1 := c.timer.n1
	s.armTimer(c)
	s.unlockUE(u)
	// Retransmission: the N1 message alone (the N2 part was delivered).
	_ = s.transfer(c, n1n2{n1: n1})
}
