package upfc

import (
	"context"
	"testing"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// urrOf is URR id of the installed snapshot of seid.
func urrOf(t testing.TB, dp *fakeDP, seid uint64, id uint32) *rules.URR {
	t.Helper()
	s := dp.get(seid)
	if s == nil {
		t.Fatal("no snapshot installed")
	}
	for _, p := range s.PDRs {
		for _, u := range p.URRs {
			if u.ID == id {
				return u
			}
		}
	}
	t.Fatalf("URR %d not in the snapshot", id)
	return nil
}

// TS 29.244 §5.2.2.2.1: a volume quota stops the PDRs' traffic when it is
// used up, is reported once (VOLQU), stays used up across later reports,
// and a new quota from Update URR counts from the moment it is granted.
func TestVolumeQuota(t *testing.T) {
	c, dp, cp := newUPFC(t)
	req := establishment(0x71)
	req.CreateURRs[0].Triggers = pfcp.TriggerVolumeQuota | pfcp.TriggerVolumeThreshold
	req.CreateURRs[0].VolumeQuota = &pfcp.Volume{Total: 1000, HasTotal: true}
	seid := establish(t, c, req).UPFSEID.SEID

	u := urrOf(t, dp, seid, 1)
	if u.Quota != (rules.Volume{Total: 1000}) || u.QuotaSpent {
		t.Fatalf("quota in the snapshot %+v spent %v", u.Quota, u.QuotaSpent)
	}
	// The data path counts 10 packets of 100 bytes: the last one reaches
	// the quota; after it the URR says stop.
	var why rules.UsageTrigger
	for range 10 {
		if u.QuotaExhausted(rules.Uplink) {
			t.Fatal("quota exhausted early")
		}
		d, tot := u.Counters.Add(rules.Uplink, 100)
		why |= u.Crossings(rules.Uplink, d, tot, 100)
	}
	if why&rules.UsageVolumeQuota == 0 || !u.QuotaExhausted(rules.Uplink) || !u.QuotaExhausted(rules.Downlink) {
		t.Fatalf("quota not reached: crossings %v", why)
	}
	use := u.Counters.Load()
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeQuota, PDRID: 1, URRID: 1,
		Volume: use.Volume, ULPackets: use.ULPackets})
	r := waitReport(t, cp)
	if len(r.req.UsageReports) != 1 || r.req.UsageReports[0].Trigger != pfcp.UsageTriggerVolumeQuota ||
		r.req.UsageReports[0].Volume.Total != 1000 {
		t.Fatalf("quota report %+v", r.req.UsageReports)
	}
	// The measurement restarted, but the quota stays used up.
	if u2 := urrOf(t, dp, seid, 1); !u2.QuotaSpent || !u2.QuotaExhausted(rules.Uplink) {
		t.Fatalf("after the report the quota must stay spent: %+v", u2)
	}

	// A new quota of 500 bytes counts from now.
	resp := c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdateURRs: []pfcp.UpdateURR{{ID: 1, VolumeQuota: &pfcp.Volume{Total: 500, HasTotal: true}}}})
	if !resp.Cause.Accepted() {
		t.Fatalf("new quota refused: %v", resp.Cause)
	}
	u3 := urrOf(t, dp, seid, 1)
	if u3.QuotaSpent || u3.Quota.Total != 1500 || u3.QuotaExhausted(rules.Uplink) {
		t.Fatalf("new quota in the snapshot %+v spent %v", u3.Quota, u3.QuotaSpent)
	}
}

// §5.2.2.3.1: after a threshold report the next measurement starts, and
// the threshold applies to it: the data path gets the next crossing point.
func TestVolumeThresholdMovesOn(t *testing.T) {
	c, dp, cp := newUPFC(t)
	req := establishment(0x72)
	req.CreateURRs[0].VolumeThreshold = &pfcp.Volume{Total: 300, HasTotal: true}
	seid := establish(t, c, req).UPFSEID.SEID
	u := urrOf(t, dp, seid, 1)
	if u.Threshold.Total != 300 {
		t.Fatalf("threshold %+v", u.Threshold)
	}
	d, tot := u.Counters.Add(rules.Downlink, 350)
	if u.Crossings(rules.Downlink, d, tot, 350) != rules.UsageVolumeThreshold {
		t.Fatal("threshold not crossed")
	}
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 2, URRID: 1,
		Volume: rules.Volume{Total: 350, DL: 350}, DLPackets: 1})
	if r := waitReport(t, cp); r.req.UsageReports[0].Volume.Total != 350 {
		t.Fatalf("report %+v", r.req.UsageReports[0])
	}
	if u2 := urrOf(t, dp, seid, 1); u2.Threshold.Total != 650 {
		t.Fatalf("next threshold at %d, want 650 (350 counted + 300)", u2.Threshold.Total)
	}
	// The deletion reports only what was counted since.
	u.Counters.Add(rules.Downlink, 40)
	del := c.HandleSessionDeletion(context.Background(), seid)
	if len(del.UsageReports) != 1 || del.UsageReports[0].Volume.Total != 40 {
		t.Fatalf("deletion reports %+v", del.UsageReports)
	}
}

// §5.2.2.2.1 periodic reporting: a report per Measurement Period with the
// usage of that period; the timer stops with the session.
func TestPeriodicReports(t *testing.T) {
	c, dp, cp := newUPFC(t)
	req := establishment(0x73)
	req.CreateURRs[0].Triggers = pfcp.TriggerPeriodic
	req.CreateURRs[0].MeasurementPeriod = 40 * time.Millisecond
	seid := establish(t, c, req).UPFSEID.SEID
	u := urrOf(t, dp, seid, 1)

	u.Counters.Add(rules.Uplink, 100)
	r := waitReport(t, cp)
	if got := r.req.UsageReports[0]; got.Trigger != pfcp.UsageTriggerPeriodic || got.Volume.Total != 100 || got.URSEQN != 0 {
		t.Fatalf("first period %+v", got)
	}
	u.Counters.Add(rules.Uplink, 7)
	r = waitReport(t, cp)
	if got := r.req.UsageReports[0]; got.Volume.Total != 7 || got.URSEQN != 1 {
		t.Fatalf("second period %+v", got)
	}
	c.HandleSessionDeletion(context.Background(), seid)
	// Drain what was due before the deletion, then nothing more comes.
	time.Sleep(100 * time.Millisecond)
	for len(cp.reports) > 0 {
		<-cp.reports
	}
	select {
	case r := <-cp.reports:
		t.Fatalf("periodic report after deletion: %+v", r.req)
	case <-time.After(150 * time.Millisecond):
	}
}
