// Package pcf is tern's Policy Control Function for session management
// (Npcf_SMPolicyControl, TS 29.512): it authorizes the session AMBR and the
// default QoS flow of each PDU session from the subscription the SMF passes
// in, optionally overridden per DNN by local policy, and pushes policy
// changes to the SMF (UpdateNotify, TS 29.512 §4.2.3).
package pcf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// Rule and decision identifiers used in every decision. One session rule,
// one PCC rule and one QoS decision describe the default QoS flow.
const (
	SessRuleID   = "sess-rule-1"
	PccRuleID    = "pcc-default"
	QosDecID     = "qos-default"
	matchAllFlow = "permit out ip from any to assigned" // TS 29.512 §5.6.2.14, match-all
)

// Change is a policy change for one PDU session (UpdatePolicy). Nil/zero
// fields keep the current value.
type Change struct {
	SessionAMBR *models.Ambr
	FiveQI      uint8
	ARPPriority uint8
}

// Stats counts the PCF's state and work.
type Stats struct {
	Policies      int    // live SM policy associations
	Created       uint64 // CreateSMPolicy successes
	Deleted       uint64
	Notifications uint64 // UpdateNotify / terminate sent
}

type policy struct {
	id       string
	supi     string
	psi      int32
	dnn      string
	slice    *models.Snssai
	decision models.Pcf_SMPolCtrl_SmPolicyDecision // the full current decision
	// notifyURI is the SMF's notificationUri for this association: update
	// and terminate notifications go to it with /update and /terminate
	// appended (TS 29.512 §4.2.3).
	notifyURI string
}

type sessionKey struct {
	supi string
	psi  int32
}

// PCF implements sbi.SMPolicyControl.
type PCF struct {
	dnns []dnnPolicy
	def  DefaultPolicy
	log  *slog.Logger

	notifier atomic.Pointer[sbi.SMPolicyNotifier]
	nextID   atomic.Uint64

	mu        sync.Mutex
	policies  map[string]*policy
	bySession map[sessionKey]string
	// rec, when set, gets every change of an association, under mu,
	// before the request that made it is answered (record.go).
	rec Recorder

	created, deleted, notified atomic.Uint64
}

var _ sbi.SMPolicyControl = (*PCF)(nil)

// New builds a PCF. The notifier (the SMF) is set later with SetNotifier,
// because the SMF is built with the PCF as a dependency.
func New(cfg Config, logger *slog.Logger) (*PCF, error) {
	cfg = cfg.WithDefaults()
	dnns, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PCF{
		dnns:      dnns,
		def:       cfg.Default,
		log:       logger.With("nf", "pcf"),
		policies:  make(map[string]*policy),
		bySession: make(map[sessionKey]string),
	}, nil
}

// SetNotifier sets the binding UpdateNotify goes through: it carries each
// notification to the notificationUri of its association.
func (p *PCF) SetNotifier(n sbi.SMPolicyNotifier) {
	if n == nil {
		p.notifier.Store(nil)
		return
	}
	p.notifier.Store(&n)
}

// CreateSMPolicy implements sbi.SMPolicyControl (TS 29.512 §4.2.2.2).
func (p *PCF) CreateSMPolicy(ctx context.Context, req *models.Pcf_SMPolCtrl_SmPolicyContextData) (string, *models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	switch {
	case req == nil || req.Supi == "":
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "supi")
	case req.PduSessionId < 1 || req.PduSessionId > 15:
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "pduSessionId %d", req.PduSessionId)
	case req.Dnn == "":
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "dnn")
	case req.NotificationUri == "":
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "notificationUri")
	}
	ambr, fiveQI, arp, err := p.authorize(req.Dnn, req.SliceInfo, req.SubsSessAmbr, req.SubsDefQos)
	if err != nil {
		return "", nil, err
	}
	pol := &policy{
		id:        strconv.FormatUint(p.nextID.Add(1), 10),
		supi:      req.Supi,
		psi:       req.PduSessionId,
		dnn:       req.Dnn,
		slice:     req.SliceInfo,
		decision:  decision(ambr, fiveQI, arp),
		notifyURI: req.NotificationUri,
	}
	key := sessionKey{req.Supi, req.PduSessionId}
	p.mu.Lock()
	// A new association for the same session replaces a stale one (the SMF
	// re-establishing the session ID, TS 23.502 §4.3.2.2.1 step 3).
	if old, ok := p.bySession[key]; ok {
		delete(p.policies, old)
		p.deleted.Add(1)
		if p.rec != nil {
			p.rec.DeletedPolicy(old)
		}
	}
	p.policies[pol.id] = pol
	p.bySession[key] = pol.id
	p.recordLocked(pol)
	out := copyDecision(&pol.decision)
	p.mu.Unlock()
	p.created.Add(1)
	p.log.Debug("SM policy created", "policy", pol.id, "supi", req.Supi, "psi", req.PduSessionId, "dnn", req.Dnn, "5qi", fiveQI, "ambr", ambr)
	return pol.id, out, nil
}

// authorize is the session rule of a PDU session (TS 29.512 §4.2.2.4):
// the authorized session AMBR and default QoS, from local policy, else
// from the subscription, else from defaults.
func (p *PCF) authorize(dnn string, slice *models.Snssai, subsAmbr *models.Ambr, subsQos *models.SubscribedDefaultQos) (ambr models.Ambr, fiveQI int32, arp models.Arp, err error) {
	local := p.localPolicy(dnn, slice)

	ambr = models.Ambr{Uplink: p.def.SessionAMBRUplink, Downlink: p.def.SessionAMBRDownlink}
	if s := subsAmbr; s != nil {
		if s.Uplink != "" {
			ambr.Uplink = s.Uplink
		}
		if s.Downlink != "" {
			ambr.Downlink = s.Downlink
		}
	}
	fiveQI, arp = int32(p.def.FiveQI), models.Arp{
		PriorityLevel: int32(p.def.ARPPriority),
		PreemptCap:    models.PreemptionCapability_NOT_PREEMPT,
		PreemptVuln:   models.PreemptionVulnerability_PREEMPTABLE,
	}
	if q := subsQos; q != nil {
		if q.Var5qi != 0 {
			fiveQI = q.Var5qi
		}
		if q.Arp != nil {
			arp = *q.Arp
		}
	}
	if local != nil {
		if local.SessionAMBRUplink != "" {
			ambr.Uplink = local.SessionAMBRUplink
		}
		if local.SessionAMBRDownlink != "" {
			ambr.Downlink = local.SessionAMBRDownlink
		}
		if local.FiveQI != 0 {
			fiveQI = int32(local.FiveQI)
		}
		if local.ARPPriority != 0 {
			arp.PriorityLevel = int32(local.ARPPriority)
		}
	}
	if !validBitRate(ambr.Uplink) || !validBitRate(ambr.Downlink) {
		return ambr, 0, arp, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "subsSessAmbr %+v", ambr)
	}
	if fiveQI < 1 || fiveQI > 255 || arp.PriorityLevel < 1 || arp.PriorityLevel > 15 {
		return ambr, 0, arp, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "subsDefQos 5qi %d arp %d", fiveQI, arp.PriorityLevel)
	}
	return ambr, fiveQI, arp, nil
}

// decision builds a full policy decision for the default QoS flow: a session
// rule (TS 29.512 §5.6.2.7), a match-all PCC rule (§5.6.2.6) and its QoS
// data (§5.6.2.8) flagged as the default QoS flow.
func decision(ambr models.Ambr, fiveQI int32, arp models.Arp) models.Pcf_SMPolCtrl_SmPolicyDecision {
	a := arp
	q := arp
	return models.Pcf_SMPolCtrl_SmPolicyDecision{
		SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{SessRuleID: {
			SessRuleId:   SessRuleID,
			AuthSessAmbr: &models.Ambr{Uplink: ambr.Uplink, Downlink: ambr.Downlink},
			AuthDefQos:   &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: fiveQI, Arp: &a},
		}},
		PccRules: map[string]*models.Pcf_SMPolCtrl_PccRule{PccRuleID: {
			PccRuleId:  PccRuleID,
			Precedence: 255,
			FlowInfos: []models.Pcf_SMPolCtrl_FlowInformation{{
				FlowDescription: matchAllFlow,
				FlowDirection:   models.Pcf_SMPolCtrl_FlowDirectionRm_BIDIRECTIONAL,
			}},
			RefQosData: []string{QosDecID},
		}},
		QosDecs: map[string]*models.Pcf_SMPolCtrl_QosData{QosDecID: {
			QosId:                QosDecID,
			Var5qi:               fiveQI,
			Arp:                  &q,
			DefQosFlowIndication: true,
		}},
	}
}

// copyDecision returns a deep copy of the parts of d that the PCF fills in,
// so that callers never share maps with the PCF's state.
func copyDecision(d *models.Pcf_SMPolCtrl_SmPolicyDecision) *models.Pcf_SMPolCtrl_SmPolicyDecision {
	var ambr models.Ambr
	var fiveQI int32
	var arp models.Arp
	if r := d.SessRules[SessRuleID]; r != nil {
		if r.AuthSessAmbr != nil {
			ambr = *r.AuthSessAmbr
		}
		if r.AuthDefQos != nil {
			fiveQI = r.AuthDefQos.Var5qi
			if r.AuthDefQos.Arp != nil {
				arp = *r.AuthDefQos.Arp
			}
		}
	}
	out := decision(ambr, fiveQI, arp)
	out.RelCause = d.RelCause
	return &out
}

func (p *PCF) localPolicy(dnn string, slice *models.Snssai) *DNNPolicy {
	for i := range p.dnns {
		d := &p.dnns[i]
		if d.DNN != dnn {
			continue
		}
		if !d.anySlice {
			if slice == nil {
				continue
			}
			s, err := sbi.SNSSAIFromModel(*slice)
			if err != nil || s != d.slice {
				continue
			}
		}
		return &d.DNNPolicy
	}
	return nil
}

// UpdateSMPolicy implements sbi.SMPolicyControl (TS 29.512 §4.2.4.2). A
// changed subscription the SMF reports (subsSessAmbr with trigger
// SE_AMBR_CH, subsDefQos with DEF_QOS_CH, TS 29.512 §4.2.4.8-9) is
// authorized again, local policy still taking precedence; other triggers
// do not change tern's decisions, so the answer is the current one.
func (p *PCF) UpdateSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData) (*models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pol, ok := p.policies[policyID]
	if !ok {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm policy %q", policyID)
	}
	if req != nil && (req.SubsSessAmbr != nil || req.SubsDefQos != nil) {
		ambr, fiveQI, arp, err := p.authorize(pol.dnn, pol.slice, req.SubsSessAmbr, req.SubsDefQos)
		if err != nil {
			return nil, err
		}
		pol.decision = decision(ambr, fiveQI, arp)
		p.recordLocked(pol)
		p.log.Debug("SM policy authorized again for a changed subscription", "policy", pol.id, "5qi", fiveQI, "ambr", ambr)
	}
	return copyDecision(&pol.decision), nil
}

// DeleteSMPolicy implements sbi.SMPolicyControl (TS 29.512 §4.2.5.2).
func (p *PCF) DeleteSMPolicy(ctx context.Context, policyID string, req *models.Pcf_SMPolCtrl_SmPolicyDeleteData) error {
	p.mu.Lock()
	pol, ok := p.policies[policyID]
	if ok {
		delete(p.policies, policyID)
		key := sessionKey{pol.supi, pol.psi}
		if p.bySession[key] == policyID {
			delete(p.bySession, key)
		}
		if p.rec != nil {
			p.rec.DeletedPolicy(policyID)
		}
	}
	p.mu.Unlock()
	if !ok {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "sm policy %q", policyID)
	}
	p.deleted.Add(1)
	return nil
}

// ErrNoNotifier is returned by UpdatePolicy and Terminate before SetNotifier.
var ErrNoNotifier = errors.New("pcf: no SM policy notifier set")

// UpdatePolicy changes the policy of one PDU session and pushes the new
// decision to the SMF with Npcf_SMPolicyControl_UpdateNotify (TS 29.512
// §4.2.3.2), which the SMF applies with a network-requested PDU session
// modification (TS 23.502 §4.3.3.2 step 1b). It is the operator's (or a
// test's) trigger; it returns the SMF's answer.
func (p *PCF) UpdatePolicy(ctx context.Context, supi string, pduSessionID int32, ch Change) error {
	n := p.notifierOrNil()
	if n == nil {
		return ErrNoNotifier
	}
	if ch.SessionAMBR != nil && (!validBitRate(ch.SessionAMBR.Uplink) || !validBitRate(ch.SessionAMBR.Downlink)) {
		return fmt.Errorf("pcf: session AMBR %+v: not bit rates like \"100 Mbps\"", *ch.SessionAMBR)
	}
	if ch.ARPPriority > 15 {
		return fmt.Errorf("pcf: ARP priority %d not in 1..15", ch.ARPPriority)
	}
	p.mu.Lock()
	id, ok := p.bySession[sessionKey{supi, pduSessionID}]
	pol := p.policies[id]
	if !ok || pol == nil {
		p.mu.Unlock()
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no SM policy for %s PDU session %d", supi, pduSessionID)
	}
	r := pol.decision.SessRules[SessRuleID]
	ambr, fiveQI, arp := *r.AuthSessAmbr, r.AuthDefQos.Var5qi, *r.AuthDefQos.Arp
	if ch.SessionAMBR != nil {
		ambr = *ch.SessionAMBR
	}
	if ch.FiveQI != 0 {
		fiveQI = int32(ch.FiveQI)
	}
	if ch.ARPPriority != 0 {
		arp.PriorityLevel = int32(ch.ARPPriority)
	}
	pol.decision = decision(ambr, fiveQI, arp)
	p.recordLocked(pol) // before the SMF hears of it
	out := copyDecision(&pol.decision)
	uri := pol.notifyURI + "/update"
	p.mu.Unlock()

	p.notified.Add(1)
	err := n.SMPolicyUpdateNotify(ctx, uri, &models.Pcf_SMPolCtrl_SmPolicyNotification{
		ResourceUri:      "/npcf-smpolicycontrol/v1/sm-policies/" + id,
		SmPolicyDecision: out,
	})
	if err != nil {
		return fmt.Errorf("pcf: UpdateNotify of policy %s: %w", id, err)
	}
	return nil
}

// Terminate asks the SMF to end the policy association of one PDU session
// (TS 29.512 §4.2.3.3); the SMF releases the PDU session and then deletes
// the association (TS 23.502 §4.3.4.2 step 1c).
func (p *PCF) Terminate(ctx context.Context, supi string, pduSessionID int32, cause models.Pcf_SMPolCtrl_SmPolicyAssociationReleaseCause) error {
	n := p.notifierOrNil()
	if n == nil {
		return ErrNoNotifier
	}
	p.mu.Lock()
	id, ok := p.bySession[sessionKey{supi, pduSessionID}]
	pol := p.policies[id]
	p.mu.Unlock()
	if !ok || pol == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no SM policy for %s PDU session %d", supi, pduSessionID)
	}
	if cause == "" {
		cause = models.Pcf_SMPolCtrl_SmPolicyAssociationReleaseCause_UNSPECIFIED
	}
	p.notified.Add(1)
	if err := n.SMPolicyTerminateNotify(ctx, pol.notifyURI+"/terminate", &models.Pcf_SMPolCtrl_TerminationNotification{
		ResourceUri: "/npcf-smpolicycontrol/v1/sm-policies/" + id,
		Cause:       cause,
	}); err != nil {
		return fmt.Errorf("pcf: terminate policy %s: %w", id, err)
	}
	return nil
}

func (p *PCF) notifierOrNil() sbi.SMPolicyNotifier {
	if n := p.notifier.Load(); n != nil {
		return *n
	}
	return nil
}

// Stats returns a snapshot of the PCF's counters.
func (p *PCF) Stats() Stats {
	p.mu.Lock()
	n := len(p.policies)
	p.mu.Unlock()
	return Stats{Policies: n, Created: p.created.Load(), Deleted: p.deleted.Load(), Notifications: p.notified.Load()}
}
