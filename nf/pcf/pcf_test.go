package pcf

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

type recorder struct {
	updates []*models.Pcf_SMPolCtrl_SmPolicyNotification
	ids     []string
	terms   []models.Pcf_SMPolCtrl_SmPolicyAssociationReleaseCause
	fail    bool
}

func (r *recorder) SMPolicyUpdateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_SmPolicyNotification) error {
	if r.fail {
		return errors.New("smf down")
	}
	if !strings.HasPrefix(uri, "/cb/") || !strings.HasSuffix(uri, "/update") {
		return fmt.Errorf("update notification to %q", uri)
	}
	r.ids = append(r.ids, path.Base(n.ResourceUri))
	r.updates = append(r.updates, n)
	return nil
}

func (r *recorder) SMPolicyTerminateNotify(ctx context.Context, uri string, n *models.Pcf_SMPolCtrl_TerminationNotification) error {
	if !strings.HasPrefix(uri, "/cb/") || !strings.HasSuffix(uri, "/terminate") {
		return fmt.Errorf("terminate notification to %q", uri)
	}
	r.ids = append(r.ids, path.Base(n.ResourceUri))
	r.terms = append(r.terms, n.Cause)
	return nil
}

func ctxData(supi string, psi int32, dnn string) *models.Pcf_SMPolCtrl_SmPolicyContextData {
	sl := models.Snssai{Sst: 1, Sd: "010203"}
	return &models.Pcf_SMPolCtrl_SmPolicyContextData{
		Supi: supi, PduSessionId: psi, Dnn: dnn, SliceInfo: &sl,
		NotificationUri: fmt.Sprintf("/cb/%s/%d", supi, psi),
		SubsSessAmbr:    &models.Ambr{Uplink: "1 Gbps", Downlink: "2 Gbps"},
		SubsDefQos:      &models.SubscribedDefaultQos{Var5qi: 9, Arp: &models.Arp{PriorityLevel: 8}},
	}
}

func sessionRule(t *testing.T, d *models.Pcf_SMPolCtrl_SmPolicyDecision) *models.Pcf_SMPolCtrl_SessionRule {
	t.Helper()
	r := d.SessRules[SessRuleID]
	if r == nil || r.AuthSessAmbr == nil || r.AuthDefQos == nil || r.AuthDefQos.Arp == nil {
		t.Fatalf("decision without a complete session rule: %+v", d)
	}
	return r
}

func TestCreateFromSubscription(t *testing.T) {
	p, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, d, err := p.CreateSMPolicy(context.Background(), ctxData("imsi-1", 1, "internet"))
	if err != nil {
		t.Fatal(err)
	}
	r := sessionRule(t, d)
	if r.AuthSessAmbr.Uplink != "1 Gbps" || r.AuthSessAmbr.Downlink != "2 Gbps" || r.AuthDefQos.Var5qi != 9 || r.AuthDefQos.Arp.PriorityLevel != 8 {
		t.Errorf("session rule %+v", r)
	}
	pcc := d.PccRules[PccRuleID]
	q := d.QosDecs[QosDecID]
	if pcc == nil || len(pcc.FlowInfos) != 1 || pcc.RefQosData[0] != QosDecID || q == nil || !q.DefQosFlowIndication || q.Var5qi != 9 {
		t.Errorf("PCC rule %+v QoS %+v", pcc, q)
	}
	// The caller's copy is not the PCF's state.
	r.AuthDefQos.Var5qi = 1
	d2, err := p.UpdateSMPolicy(context.Background(), id, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{})
	if err != nil || sessionRule(t, d2).AuthDefQos.Var5qi != 9 {
		t.Errorf("update: %+v %v", d2, err)
	}
	if s := p.Stats(); s.Policies != 1 || s.Created != 1 {
		t.Errorf("stats %+v", s)
	}
	if err := p.DeleteSMPolicy(context.Background(), id, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSMPolicy(context.Background(), id, nil); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := p.UpdateSMPolicy(context.Background(), id, nil); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("update of a deleted policy: %v", err)
	}
	if s := p.Stats(); s.Policies != 0 || s.Deleted != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestDNNOverrideAndDefaults(t *testing.T) {
	p, err := New(Config{DNNs: []DNNPolicy{
		{DNN: "ims", SNSSAI: "1-010203", FiveQI: 5, ARPPriority: 1, SessionAMBRUplink: "10 Mbps", SessionAMBRDownlink: "20 Mbps"},
		{DNN: "ims", FiveQI: 6}, // other slices
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, d, err := p.CreateSMPolicy(context.Background(), ctxData("imsi-1", 1, "ims"))
	if err != nil {
		t.Fatal(err)
	}
	if r := sessionRule(t, d); r.AuthDefQos.Var5qi != 5 || r.AuthDefQos.Arp.PriorityLevel != 1 || r.AuthSessAmbr.Uplink != "10 Mbps" {
		t.Errorf("override %+v", r)
	}
	req := ctxData("imsi-1", 2, "ims")
	req.SliceInfo = &models.Snssai{Sst: 2}
	_, d, _ = p.CreateSMPolicy(context.Background(), req)
	if r := sessionRule(t, d); r.AuthDefQos.Var5qi != 6 || r.AuthSessAmbr.Uplink != "1 Gbps" {
		t.Errorf("any-slice override %+v", r)
	}
	// No subscription values: the PCF's defaults.
	_, d, err = p.CreateSMPolicy(context.Background(), &models.Pcf_SMPolCtrl_SmPolicyContextData{Supi: "imsi-2", PduSessionId: 1, Dnn: "internet", NotificationUri: "/cb/imsi-2/1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := sessionRule(t, d); r.AuthDefQos.Var5qi != DefaultFiveQI || r.AuthSessAmbr.Downlink != DefaultSessionAMBR {
		t.Errorf("defaults %+v", r)
	}
	for _, bad := range []*models.Pcf_SMPolCtrl_SmPolicyContextData{
		nil,
		{PduSessionId: 1, Dnn: "x"},
		{Supi: "imsi-1", PduSessionId: 16, Dnn: "x"},
		{Supi: "imsi-1", PduSessionId: 1},
		{Supi: "imsi-1", PduSessionId: 1, Dnn: "internet"}, // no notificationUri
		{Supi: "imsi-1", PduSessionId: 1, Dnn: "x", SubsSessAmbr: &models.Ambr{Uplink: "lots"}},
	} {
		if _, _, err := p.CreateSMPolicy(context.Background(), bad); sbi.StatusOf(err) != 400 {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestUpdatePolicyNotifies(t *testing.T) {
	p, _ := New(Config{}, nil)
	ctx := context.Background()
	if err := p.UpdatePolicy(ctx, "imsi-1", 1, Change{FiveQI: 7}); !errors.Is(err, ErrNoNotifier) {
		t.Fatalf("without notifier: %v", err)
	}
	rec := &recorder{}
	p.SetNotifier(rec)
	id, _, _ := p.CreateSMPolicy(ctx, ctxData("imsi-1", 1, "internet"))
	if err := p.UpdatePolicy(ctx, "imsi-1", 2, Change{FiveQI: 7}); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	if err := p.UpdatePolicy(ctx, "imsi-1", 1, Change{SessionAMBR: &models.Ambr{Uplink: "5 Mbps", Downlink: "6 Mbps"}, FiveQI: 7}); err != nil {
		t.Fatal(err)
	}
	if len(rec.updates) != 1 || rec.ids[0] != id {
		t.Fatalf("notifications %+v", rec.ids)
	}
	r := sessionRule(t, rec.updates[0].SmPolicyDecision)
	if r.AuthSessAmbr.Uplink != "5 Mbps" || r.AuthDefQos.Var5qi != 7 || r.AuthDefQos.Arp.PriorityLevel != 8 {
		t.Errorf("notified rule %+v", r)
	}
	if d, _ := p.UpdateSMPolicy(ctx, id, nil); sessionRule(t, d).AuthDefQos.Var5qi != 7 {
		t.Error("stored decision not updated")
	}
	if err := p.UpdatePolicy(ctx, "imsi-1", 1, Change{SessionAMBR: &models.Ambr{Uplink: "x"}}); err == nil {
		t.Error("bad AMBR accepted")
	}
	rec.fail = true
	if err := p.UpdatePolicy(ctx, "imsi-1", 1, Change{FiveQI: 6}); err == nil {
		t.Error("notifier failure not reported")
	}
	rec.fail = false
	if err := p.Terminate(ctx, "imsi-1", 1, ""); err != nil || len(rec.terms) != 1 ||
		rec.terms[0] != models.Pcf_SMPolCtrl_SmPolicyAssociationReleaseCause_UNSPECIFIED {
		t.Errorf("terminate: %v %+v", err, rec.terms)
	}
}

func TestSameSessionReplaces(t *testing.T) {
	p, _ := New(Config{}, nil)
	ctx := context.Background()
	id1, _, _ := p.CreateSMPolicy(ctx, ctxData("imsi-1", 1, "internet"))
	id2, _, _ := p.CreateSMPolicy(ctx, ctxData("imsi-1", 1, "internet"))
	if id1 == id2 || p.Stats().Policies != 1 {
		t.Errorf("ids %s %s stats %+v", id1, id2, p.Stats())
	}
	// Deleting the stale ID does not drop the new association's index.
	rec := &recorder{}
	p.SetNotifier(rec)
	_ = p.DeleteSMPolicy(ctx, id1, nil)
	if err := p.UpdatePolicy(ctx, "imsi-1", 1, Change{FiveQI: 8}); err != nil || rec.ids[0] != id2 {
		t.Errorf("update after stale delete: %v %v", err, rec.ids)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"dnn":    {DNNs: []DNNPolicy{{}}},
		"snssai": {DNNs: []DNNPolicy{{DNN: "x", SNSSAI: "zz"}}},
		"arp":    {DNNs: []DNNPolicy{{DNN: "x", ARPPriority: 16}}},
		"ambr":   {DNNs: []DNNPolicy{{DNN: "x", SessionAMBRUplink: "1 Xbps"}}},
		"def":    {Default: DefaultPolicy{ARPPriority: 20}},
	} {
		if _, err := New(c, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
	for s, ok := range map[string]bool{"1 Gbps": true, "1.5 Mbps": true, "1 gbps": false, "1Gbps": false, "+1 Mbps": false, "1. Mbps": false} {
		if validBitRate(s) != ok {
			t.Errorf("validBitRate(%q) = %v", s, !ok)
		}
	}
}

// TestUpdateWithChangedSubscription: an update reporting a changed
// subscription (SE_AMBR_CH, DEF_QOS_CH) is authorized again; a DNN's local
// policy still takes precedence over the subscription.
func TestUpdateWithChangedSubscription(t *testing.T) {
	p, err := New(Config{DNNs: []DNNPolicy{{DNN: "ims", SessionAMBRUplink: "10 Mbps", SessionAMBRDownlink: "20 Mbps"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, _, err := p.CreateSMPolicy(ctx, ctxData("imsi-1", 1, "internet"))
	if err != nil {
		t.Fatal(err)
	}
	changed := &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{
		RepPolicyCtrlReqTriggers: []models.Pcf_SMPolCtrl_PolicyControlRequestTrigger{models.Pcf_SMPolCtrl_PolicyControlRequestTrigger_SE_AMBR_CH},
		SubsSessAmbr:             &models.Ambr{Uplink: "5 Mbps", Downlink: "7 Mbps"},
		SubsDefQos:               &models.SubscribedDefaultQos{Var5qi: 7, Arp: &models.Arp{PriorityLevel: 3}},
	}
	d, err := p.UpdateSMPolicy(ctx, id, changed)
	if r := sessionRule(t, d); err != nil || r.AuthSessAmbr.Uplink != "5 Mbps" || r.AuthSessAmbr.Downlink != "7 Mbps" || r.AuthDefQos.Var5qi != 7 {
		t.Errorf("re-authorized %+v %v", r, err)
	}
	// The new decision is the policy's from now on.
	if d, _ := p.UpdateSMPolicy(ctx, id, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{}); sessionRule(t, d).AuthSessAmbr.Uplink != "5 Mbps" {
		t.Errorf("decision not kept: %+v", sessionRule(t, d))
	}
	ims, _, err := p.CreateSMPolicy(ctx, ctxData("imsi-1", 2, "ims"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := p.UpdateSMPolicy(ctx, ims, changed); sessionRule(t, d).AuthSessAmbr.Uplink != "10 Mbps" {
		t.Errorf("local policy lost to the subscription: %+v", sessionRule(t, d))
	}
	bad := *changed
	bad.SubsSessAmbr = &models.Ambr{Uplink: "fast", Downlink: "1 Mbps"}
	if _, err := p.UpdateSMPolicy(ctx, id, &bad); err == nil {
		t.Error("an unusable subscribed AMBR was accepted")
	}
}
