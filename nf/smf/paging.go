package smf

import (
	"context"
	"net/http"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// The SMF's part of the network-triggered service request (TS 23.502
// §4.2.3.3): the UPF reports the first downlink packet it buffers for a
// session whose user plane is deactivated; the SMF asks the AMF to reach
// the UE with the N2 content that sets the user plane up again; when the UE
// answers, the AMF activates the session (UpdateSMContext, §4.2.3.2) and
// the UPF sends what it buffered, in order, to the new tunnel. When the UE
// does not answer, the UPF discards the buffer and drops the session's
// downlink for a backoff, so that an unreachable UE is not paged for every
// packet.

var _ sbi.N1N2TransferFailureNotifier = (*SMF)(nil)

// onDownlinkData handles a Downlink Data Report (step 3a) on c's executor.
func (s *SMF) onDownlinkData(c *smContext) {
	switch {
	case c.state == stReleased || c.state == stReleasing || c.state == stEstablishing:
		return
	case c.upCnx != models.Smf_PDUSess_UpCnxState_DEACTIVATED || c.dl != dlBuffering:
		// Already being reached, or discarding during the backoff: the
		// UPF reports once per buffering episode, so this is a late one.
		return
	}
	n2, err := c.setupRequestTransfer()
	if err != nil {
		s.log.Warn("downlink data: no N2 content for the AMF", "supi", c.supi, "psi", c.psi, "err", err)
		return
	}
	c.dl = dlNotified
	c.upCnx = models.Smf_PDUSess_UpCnxState_ACTIVATING
	arp := c.qos.arp
	msg := n1n2{n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ, arp: &arp, failureURI: s.failureURI(c)}
	// An AMF that refuses at once (UE not reachable) is a paging failure
	// too.
	s.send(c, msg, func() { s.pagingFailed(c) })
}

// failureURI is the n1n2FailureTxfNotifURI of c's transfers: this SMF's
// callback path naming the SM context ref.
func (s *SMF) failureURI(c *smContext) string {
	return s.apiRoot + failurePath + c.ref
}

const failurePath = sbi.CallbackN1N2Failure

// N1N2TransferFailureNotify implements sbi.N1N2TransferFailureNotifier
// (TS 29.518 §5.2.2.3.2): the AMF could not reach the UE for a transfer
// it had answered with ATTEMPTING_TO_REACH_UE.
func (s *SMF) N1N2TransferFailureNotify(ctx context.Context, uri string, n *models.Amf_Comm_N1N2MsgTxfrFailureNotification) error {
	_, ref, ok := strings.Cut(uri, failurePath)
	if !ok || ref == "" {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no transfer at %q", uri)
	}
	_, err := callContext(ctx, s, ref, func(c *smContext) (struct{}, error) {
		s.log.Info("UE not reached for downlink data", "supi", c.supi, "psi", c.psi, "cause", string(n.Cause))
		s.pagingFailed(c)
		return struct{}{}, nil
	})
	return err
}

// pagingFailed: TS 23.502 §4.2.3.3 step 4b: the UE could not be reached;
// the UPF discards what it buffered and, for the backoff, what follows.
func (s *SMF) pagingFailed(c *smContext) {
	if c.dl != dlNotified || c.state == stReleased {
		return
	}
	c.upCnx = models.Smf_PDUSess_UpCnxState_DEACTIVATED
	c.dl = dlDiscarding
	s.stats.pagingFailures.Add(1)
	if err := s.dropDownlink(c); err != nil {
		s.log.Warn("could not make the UPF drop the buffer", "supi", c.supi, "psi", c.psi, "err", err)
	}
	c.backoff.Start(&c.ue.exec, s.cfg.mobility.PagingBackoff, func() { s.backoffEnded(c) })
}

// backoffEnded: the paging backoff is over; the UPF buffers (and reports)
// the session's downlink again. Runs on c's executor, a step of its own.
func (s *SMF) backoffEnded(c *smContext) {
	if c.dl == dlDiscarding && c.upCnx == models.Smf_PDUSess_UpCnxState_DEACTIVATED && c.state != stReleased {
		c.dl = dlBuffering
		if err := s.bufferDownlink(c); err != nil {
			s.log.Warn("buffering after the paging backoff not set", "supi", c.supi, "psi", c.psi, "err", err)
		}
	}
	s.endStep(c.ue)
}
