package smf

import (
	"context"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

var _ sbi.SDMNotifier = (*SMF)(nil)

// SubscriptionDataChanged implements sbi.SDMNotifier: the UDM's
// Nudm_SDM_Notification that the UE's session management subscription
// changed (TS 29.503 §5.2.2.3.2). Each PDU session is checked against the
// new sm-data (TS 23.502 §4.3.3.2 step 1b, "SMF-requested modification"
// triggered by the UDM):
//   - its DNN is no longer subscribed in its slice: the session is released
//     with 5GSM cause #27 (missing or unknown DNN);
//   - otherwise the PCF is told the subscribed session AMBR and default QoS
//     (Npcf_SMPolicyControl_Update, triggers SE_AMBR_CH and DEF_QOS_CH) and
//     a changed decision is applied with a network-requested PDU session
//     modification, after the procedure running, if any.
//
// A UE the SMF has no session of is ignored: its next establishment reads
// the subscription afresh.
func (s *SMF) SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error {
	if s.ues.Get(supi) == nil {
		return nil
	}
	sm, err := s.deps.SDM.GetSmData(ctx, supi, sbi.SmDataQuery{})
	if err != nil && sbi.CauseOf(err) != sbi.CauseDataNotFound {
		return err // the subscription is gone (USER_NOT_FOUND) or unreadable: the UDM deregisters a withdrawn one
	}
	_, err = callUE(ctx, s, supi, func(u *ueState) (struct{}, error) {
		for _, c := range u.sessions {
			if c.state == stReleasing || c.state == stReleased || c.policyID == "" {
				continue
			}
			s.subscriptionChanged(ctx, c, sm)
		}
		return struct{}{}, nil
	})
	if err != nil && sbi.StatusOf(err) != http.StatusNotFound {
		return err
	}
	return nil
}

// subscriptionChanged applies sm to c. Runs on c's executor.
func (s *SMF) subscriptionChanged(ctx context.Context, c *smContext, sm []models.Udm_SDM_SessionManagementSubscriptionData) {
	sub, _ := findDNN(sm, c.slice, c.dnn.name)
	if sub == nil {
		s.log.Info("DNN no longer subscribed: releasing the PDU session", "supi", c.supi, "psi", c.psi, "dnn", c.dnn.name, "slice", c.slice)
		s.networkRelease(c, nas.CauseMissingOrUnknownDNN)
		return
	}
	dec, err := s.deps.PCF.UpdateSMPolicy(ctx, c.policyID, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{
		RepPolicyCtrlReqTriggers: []models.Pcf_SMPolCtrl_PolicyControlRequestTrigger{
			models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_SE_AMBR_CH,
			models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_DEF_QOS_CH,
		},
		SubsSessAmbr: sub.SessionAmbr,
		SubsDefQos:   sub.Var5gQosProfile,
	})
	if err != nil {
		s.log.Warn("SM policy update for a changed subscription failed; the session keeps its QoS", "supi", c.supi, "psi", c.psi, "err", err)
		return
	}
	q, err := applyDecision(c.qos, dec)
	if err != nil {
		s.log.Warn("SM policy decision for a changed subscription unusable", "supi", c.supi, "psi", c.psi, "err", err)
		return
	}
	if q == c.qos {
		return
	}
	s.log.Info("subscription changed: modifying the PDU session", "supi", c.supi, "psi", c.psi, "ambr_ul", q.ambr.UL, "ambr_dl", q.ambr.DL, "5qi", q.fiveQI)
	if c.state != stActive {
		c.pending = &q
		return
	}
	_ = s.networkModification(c, q)
}
