package smf

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// modificationCommand builds the PDU SESSION MODIFICATION COMMAND (TS 24.501
// §6.3.2.2, §8.3.9) carrying the new session AMBR and the modified default
// QoS flow description; the default QoS rule does not change.
func (c *smContext) modificationCommand(pti uint8) ([]byte, error) {
	ambr := c.qos.ambr
	return encodeNAS(&nas.PDUSessionModificationCommand{
		SMHeader:            nas.SMHeader{SessionID: c.psi, TransactionID: pti},
		SessionAMBR:         &ambr,
		QoSFlowDescriptions: []nas.QoSFlowDescription{flowDescription(nas.QoSFlowModify, c.qos)},
	})
}

// modifyRequestTransfer is the PDU Session Resource Modify Request Transfer
// (TS 38.413 §9.3.4.3) with the new AMBR and the default flow's QoS.
func (c *smContext) modifyRequestTransfer() ([]byte, error) {
	b, err := ngap.EncodeModifyRequestTransfer(&ngap.PDUSessionResourceModifyRequestTransfer{
		SessionAMBR:         &ngap.AMBR{DL: c.qos.ambr.DL, UL: c.qos.ambr.UL},
		QoSFlowsAddOrModify: []ngap.QoSFlowSetupRequestItem{ngapQoSFlow(c.qos)},
	})
	if err != nil {
		return nil, fmt.Errorf("encode modify request transfer: %w", err)
	}
	return b, nil
}

// beginModification applies q at the UPF first (TS 23.502 §4.3.3.2 step
// 2: N4 Session Modification with the new MBR), then builds the command
// and, with an active user plane, the N2 transfer (step 3). It moves c to
// stModifying and starts T3591. Runs on c's executor.
func (s *SMF) beginModification(c *smContext, q qos, pti uint8) (n1, n2 []byte, err error) {
	if q.ambr != c.qos.ambr {
		if err := s.updateMBR(c, q); err != nil {
			return nil, nil, err
		}
	}
	c.qos = q
	if n1, err = c.modificationCommand(pti); err != nil {
		return nil, nil, err
	}
	if c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED {
		if n2, err = c.modifyRequestTransfer(); err != nil {
			return nil, nil, err
		}
	}
	c.state = stModifying
	c.pti = pti
	c.n1Done, c.n2Done = false, n2 == nil
	s.startTimer(c, n1)
	return n1, n2, nil
}

func (s *SMF) maybeFinishModification(c *smContext) {
	if c.state == stModifying && c.n1Done && c.n2Done {
		c.state = stActive
		s.stats.modified.Add(1)
		s.runPending(c)
	}
}

// ueRequestedModification handles a PDU SESSION MODIFICATION REQUEST (TS
// 23.502 §4.3.3.2 step 1a, TS 24.501 §6.4.2). The SMF asks the PCF
// (Npcf_SMPolicyControl_Update, trigger RES_MO_RE) and answers with a
// command carrying what the policy authorizes; QoS the UE asks for beyond
// the policy is not granted (tern has one QoS flow per session).
func (s *SMF) ueRequestedModification(ctx context.Context, c *smContext, m *nas.PDUSessionModificationRequest) (*sbi.SMContextUpdated, error) {
	pti := m.PTI()
	reject := func(cause nas.Cause5GSM, detail string) (*sbi.SMContextUpdated, error) {
		n1, err := encodeNAS(&nas.PDUSessionModificationReject{SMHeader: nas.SMHeader{SessionID: c.psi, TransactionID: pti}, Cause: cause})
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
		}
		return nil, &sbi.SMContextError{Problem: sbi.NewProblem(http.StatusForbidden, sbi.CauseN1SMError, "modification rejected: %s", detail), N1SmMsg: n1}
	}
	if c.state != stActive {
		// TS 24.501 §6.4.2.4: a request the network cannot handle now.
		return reject(nas.CauseRequestRejectedUnspecified, "session "+c.state.String())
	}
	dec, err := s.deps.PCF.UpdateSMPolicy(ctx, c.policyID, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{
		RepPolicyCtrlReqTriggers: []models.Pcf_SMPolCtrl_PolicyControlRequestTrigger{models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_RES_MO_RE},
	})
	if err != nil {
		return reject(nas.CauseNetworkFailure, err.Error())
	}
	q, err := applyDecision(c.qos, dec)
	if err != nil {
		return reject(nas.CauseRequestRejectedUnspecified, err.Error())
	}
	n1, n2, err := s.beginModification(c, q, pti)
	if err != nil {
		return reject(nas.CauseInsufficientResources5GSM, err.Error())
	}
	return updated(n1, n2, models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_REQ, c.upCnx), nil
}

// SMPolicyUpdateNotify implements sbi.SMPolicyNotifier (TS 29.512 §4.2.3.2):
// a new policy decision starts a network-requested PDU session modification
// (TS 23.502 §4.3.3.2 step 1b). If another procedure is running, the change
// is applied when it ends. The N1N2MessageTransfer goes out on the UE's
// outbound queue after this returns.
//
// uri is the context's notificationUri with /update.
func (s *SMF) SMPolicyUpdateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_SmPolicyNotification) error {
	if n == nil || n.SmPolicyDecision == nil {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "smPolicyDecision")
	}
	ref, err := policyNotifyRef(uri, "/update")
	if err != nil {
		return err
	}
	_, err = callContext(ctx, s, ref, func(c *smContext) (struct{}, error) {
		if err := c.samePolicy(n.ResourceUri); err != nil {
			return struct{}{}, err
		}
		q, err := applyDecision(c.qos, n.SmPolicyDecision)
		if err != nil {
			return struct{}{}, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "smPolicyDecision: %v", err)
		}
		if c.state != stActive {
			c.pending = &q
			return struct{}{}, nil
		}
		return struct{}{}, s.networkModification(c, q)
	})
	return err
}

// networkModification runs a network-requested modification to q. Runs
// on c's executor, c in stActive.
func (s *SMF) networkModification(c *smContext, q qos) error {
	if q == c.qos {
		return nil
	}
	// TS 24.501 §6.3.2.2: a network-requested command has no PTI.
	n1, n2, err := s.beginModification(c, q, 0)
	if err != nil {
		s.log.Warn("network-requested modification failed", "supi", c.supi, "psi", c.psi, "err", err)
		return sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
	}
	msg := n1n2{n1: n1, n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ}
	s.send(c, msg, func() {
		if c.state == stModifying && c.pti == 0 {
			s.stopTimer(c)
			c.state = stActive
			s.runPending(c)
		}
	})
	return nil
}

// runPending sends an uplink move that waited for the previous procedure
// (settleUplink), then starts the policy change that waited for it. Runs
// on c's executor.
func (s *SMF) runPending(c *smContext) {
	s.settleUplink(c)
	if c.pending == nil || c.state != stActive {
		return
	}
	q := *c.pending
	c.pending = nil
	_ = s.networkModification(c, q)
}

// policyNotifyRef reads the SM context ref from a policy notification's
// URI: the notificationUri the SMF gave (CallbackSMPolicy + ref) and
// suffix.
func policyNotifyRef(uri, suffix string) (string, error) {
	_, rest, ok := strings.Cut(uri, sbi.CallbackSMPolicy)
	ref, ok2 := strings.CutSuffix(rest, suffix)
	if !ok || !ok2 || ref == "" || strings.Contains(ref, "/") {
		return "", sbi.NewProblem(http.StatusNotFound, sbi.CauseResourceURIStructureNotFound, "%q is no policy notification URI of this SMF", uri)
	}
	return ref, nil
}

// samePolicy checks that a notification's resourceUri (…/sm-policies/{id})
// names c's association, not an older one of the same context.
func (c *smContext) samePolicy(resourceURI string) error {
	if c.policyID == "" || resourceURI != "" && path.Base(resourceURI) != c.policyID {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm policy %q", resourceURI)
	}
	return nil
}
