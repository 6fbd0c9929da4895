package smf

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// fastSupervision makes the N4 supervision of cfg quick enough for tests.
func fastSupervision(cfg Config) Config {
	cfg.Timers.Heartbeat = 10 * time.Millisecond
	cfg.Timers.HeartbeatTimeout = 5 * time.Millisecond
	cfg.Timers.HeartbeatRetries = 2
	return cfg
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TS 23.527 §4.3.2: a UPF that restarted (new Recovery Time Stamp in a
// heartbeat response) is associated again and gets every PFCP session back
// with the uplink F-TEID the gNB uses, and the downlink where it was.
func TestUPFRestartRestoresSessions(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	ctx := context.Background()
	const active, idle = "imsi-208930000000001", "imsi-208930000000002"
	refActive, _, _ := h.establish(t, active, 1, "internet")
	refIdle, _, _ := h.establish(t, idle, 1, "internet")
	if _, err := h.smf.UpdateSMContext(ctx, refIdle, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}); err != nil {
		t.Fatal(err)
	}
	h.upf.mu.Lock()
	teids := make(map[uint64]uint32) // by CP SEID: the uplink TEID the UPF chose
	for _, r := range h.upf.establishes {
		teids[r.CPFSEID.SEID] = 0
	}
	h.upf.mu.Unlock()
	for seid := range teids {
		var tun uint32
		c := h.smf.seids.Get(seid)
		if _, err := callUE(ctx, h.smf, c.supi, func(*ueState) (struct{}, error) { tun = c.ulTunnel.TEID; return struct{}{}, nil }); err != nil {
			t.Fatal(err)
		}
		teids[seid] = tun
	}

	h.upf.restart()
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 2 })
	waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	if n := h.upf.live(); n != 2 {
		t.Fatalf("%d sessions at the restarted UPF, want 2", n)
	}
	h.upf.mu.Lock()
	for _, r := range h.upf.establishes {
		// The fake UPF advertises FTUP: the F-TEID goes back with RESTI.
		ft := r.CreatePDRs[0].PDI.FTEID
		if ft == nil || ft.Choose || ft.TEID != teids[r.CPFSEID.SEID] || ft.IPv4 != upfN3 || !r.RESTI {
			t.Errorf("restored UL F-TEID %+v (RESTI %v), had TEID %#x", ft, r.RESTI, teids[r.CPFSEID.SEID])
		}
		dl := r.CreateFARs[1]
		c := h.smf.seids.Get(r.CPFSEID.SEID)
		switch c.supi {
		case active:
			if dl.ApplyAction != pfcp.ActionForward || dl.Forwarding == nil || dl.Forwarding.OuterHeaderCreation == nil ||
				dl.Forwarding.OuterHeaderCreation.IPv4 != gnbN3 || dl.Forwarding.OuterHeaderCreation.TEID != 0xA001 {
				t.Errorf("active session's restored DL FAR %+v", dl)
			}
		case idle:
			if dl.ApplyAction != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
				t.Errorf("idle session's restored DL FAR %+v", dl)
			}
		}
	}
	assocs := h.upf.assocs
	h.upf.mu.Unlock()
	if assocs != 2 {
		t.Errorf("%d associations, want 2 (start, after the restart)", assocs)
	}
	if st := h.smf.Stats(); st.N4Sessions != 2 || st.SessionsNotRestored != 0 {
		t.Errorf("stats %+v", st)
	}
	// New sessions work, and everything is released cleanly.
	refNew, _, _ := h.establish(t, "imsi-208930000000003", 1, "internet")
	for _, ref := range []string{refActive, refIdle, refNew} {
		if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
			t.Fatal(err)
		}
	}
	h.empty(t)
}

// A UPF that answers a session request with "No established PFCP
// Association" restarted since the last heartbeat: the SMF checks at once
// instead of at the next period, restores, and the establishment that
// found out waits for the UPF and completes once it is back, rather than
// fail to the UE.
func TestRejectionWakesSupervision(t *testing.T) {
	cfg := testConfig()
	cfg.Timers.Heartbeat = time.Hour // only the rejection can start it
	h := newHarness(t, cfg, pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	h.upf.restart()
	h.amf.clearRef(testSUPI, 2)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(testSUPI, 2, "internet", sliceA, estRequest(t, 2, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 2, created.Ref)
	if tr := h.amf.next(t); tr.psi != 2 {
		t.Fatalf("transfer %+v", tr)
	} else if _, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept); !ok {
		t.Fatalf("session at the restarted UPF: %T, want an Accept once the UPF is back", tr.n1)
	}
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 1 })
	waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	if st := h.smf.Stats(); st.EstablishmentsHeld != 1 || st.Rejected != 0 || st.N4Sessions != 2 {
		t.Errorf("stats %+v", st)
	}
	h.establish(t, testSUPI, 3, "internet")
}

// createBurst asks for a session of each of n UEs (SUPIs from base) at
// once and returns when CreateSMContext has answered for all.
func (h *harness) createBurst(t *testing.T, base, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		supi := fmt.Sprintf("imsi-20893%010d", base+i)
		h.amf.clearRef(supi, 1)
		wg.Go(func() {
			created, err := h.smf.CreateSMContext(context.Background(), createReq(supi, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
			if err != nil {
				t.Errorf("CreateSMContext %s: %v", supi, err)
				return
			}
			h.amf.setRef(supi, 1, created.Ref)
		})
	}
	wg.Wait()
}

// TS 23.527 §4.3.2: establishments that arrive while the UPF is away and
// while it restores its sessions wait for it (bounded by
// Timers.UPFWait), and all complete once its association is back; none
// fails to the UE.
func TestEstablishmentsWaitForRestartedUPF(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.Timers.UPFWait = 5 * time.Second
	h := newHarness(t, cfg, pcf.Config{})
	h.amf.auto = true
	h.establish(t, testSUPI, 1, "internet")
	h.upf.setDown(true)
	waitFor(t, "UPF down", func() bool { return h.smf.UPFStates()["upf1"] == "down" })
	const burst = 20
	h.createBurst(t, 100, burst/2) // while the UPF is away
	h.upf.restart()
	h.upf.setDown(false)
	h.createBurst(t, 200, burst/2) // while it comes back and restores
	accepted := 0
	for range burst {
		tr := h.amf.next(t)
		if _, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept); !ok {
			t.Fatalf("%s: %T, want an Accept", tr.supi, tr.n1)
		}
		accepted++
	}
	waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	st := h.smf.Stats()
	if st.Rejected != 0 || st.SessionsRestored != 1 || st.N4Sessions != burst+1 || h.upf.live() != burst+1 || st.Waiting != 0 {
		t.Errorf("stats %+v, UPF holds %d", st, h.upf.live())
	}
	if st.EstablishmentsHeld < burst/2 {
		t.Errorf("%d establishments waited, want at least the %d sent while the UPF was away", st.EstablishmentsHeld, burst/2)
	}
}

// A UPF that never comes back: the waiting establishments are rejected
// with 5GSM #26 once Timers.UPFWait has passed since each request, not
// sooner, not much later, and nothing of them is left.
func TestEstablishmentsWaitBounded(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.Timers.UPFWait = 300 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	h.upf.setDown(true)
	waitFor(t, "UPF down", func() bool { return h.smf.UPFStates()["upf1"] == "down" })
	const burst = 10
	start := time.Now()
	h.createBurst(t, 100, burst)
	for range burst {
		tr := h.amf.next(t)
		rej, ok := tr.n1.(*nas.PDUSessionEstablishmentReject)
		if !ok || rej.Cause != nas.CauseInsufficientResources5GSM {
			t.Fatalf("%s: %+v, want a Reject #26", tr.supi, tr.n1)
		}
		if took := time.Since(start); took < cfg.Timers.UPFWait-50*time.Millisecond || took > cfg.Timers.UPFWait+time.Second {
			t.Errorf("%s rejected after %v, UPFWait %v", tr.supi, took, cfg.Timers.UPFWait)
		}
		h.amf.note(t)
	}
	st := h.smf.Stats()
	if st.Rejected != burst || st.EstablishmentsHeld != burst || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
	h.empty(t)
}

// A session the restarted UPF refuses is released towards the UE with #39
// so that the UE establishes it again (TS 24.501 §6.3.3.2).
func TestUPFRestartRestorationRefused(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	h.upf.mu.Lock()
	h.upf.reject = true
	h.upf.mu.Unlock()
	h.upf.restart()
	tr := h.amf.next(t)
	cmd, ok := tr.n1.(*nas.PDUSessionReleaseCommand)
	if !ok || cmd.Cause != nas.CauseReactivationRequested {
		t.Fatalf("transfer %+v, want a PDU Session Release Command with #39", tr.n1)
	}
	waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	if st := h.smf.Stats(); st.SessionsNotRestored != 1 || st.SessionsRestored != 0 || st.N4Sessions != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A UPF that is not there when the SMF starts is associated when it
// appears; a session asked for meanwhile waits for it.
func TestUPFDownAtStart(t *testing.T) {
	up := newFakeUPF()
	up.setDown(true)
	h := buildHarness(t, fastSupervision(testConfig()), pcf.Config{}, map[string]*fakeUPF{"upf1": up})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatalf("Start with the UPF down: %v", err)
	}
	if st := h.smf.UPFStates()["upf1"]; st != "down" {
		t.Fatalf("UPF %s, want down", st)
	}
	h.amf.clearRef(testSUPI, 1)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	h.amf.noTransfer(t)
	up.setDown(false)
	waitFor(t, "association", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	if tr := h.amf.next(t); tr.psi != 1 {
		t.Fatalf("transfer %+v", tr)
	} else if _, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept); !ok {
		t.Fatalf("session asked for before the UPF was there: %T, want an Accept", tr.n1)
	}
	h.establish(t, "imsi-208930000000009", 1, "internet")
	if n := up.live(); n != 2 {
		t.Errorf("%d sessions at the UPF, want 2", n)
	}
}

// A UPF that stops answering is marked down after HeartbeatRetries missed
// heartbeats; new sessions go to another UPF serving the DNN, and the first
// is used again when it answers. Having lost nothing (same Recovery Time
// Stamp), its sessions are not established again.
func TestUPFFailoverAndReturn(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.UPFs = append(cfg.UPFs, UPFConfig{Name: "upf2", N4: "direct", N3: "10.100.3.3", DNNs: []string{"internet"}})
	up1, up2 := newFakeUPF(), newFakeUPF()
	h := buildHarness(t, cfg, pcf.Config{}, map[string]*fakeUPF{"upf1": up1, "upf2": up2})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.establish(t, "imsi-208930000000001", 1, "internet") // fewest sessions, first listed: upf1
	if up1.live() != 1 {
		t.Fatalf("first session on upf1: %d/%d", up1.live(), up2.live())
	}
	up1.setDown(true)
	waitFor(t, "upf1 down", func() bool { return h.smf.UPFStates()["upf1"] == "down" })
	if st := h.smf.Stats(); st.UPFFailures != 1 || st.HeartbeatsMissed < 2 {
		t.Errorf("stats %+v", st)
	}
	h.establish(t, "imsi-208930000000002", 1, "internet")
	h.establish(t, "imsi-208930000000003", 1, "internet")
	if up2.live() != 2 {
		t.Errorf("upf2 has %d sessions, want both new ones", up2.live())
	}
	up1.setDown(false)
	waitFor(t, "upf1 up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	h.establish(t, "imsi-208930000000004", 1, "internet")
	if up1.live() != 2 {
		t.Errorf("upf1 has %d sessions, want its old one and the new one", up1.live())
	}
	if st := h.smf.Stats(); st.SessionsRestored != 0 || st.Associations != 2 {
		// One association each; upf1's survived the partition: a second
		// one would have had it delete its sessions (§6.2.6.2.2).
		t.Errorf("%d sessions restored at a UPF that lost nothing, %d associations (want 2)", st.SessionsRestored, st.Associations)
	}
}

// Heartbeats lost in bursts shorter than HeartbeatRetries cost nothing: the
// UPF stays up and nothing is re-established.
func TestHeartbeatBurstLoss(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.Timers.HeartbeatRetries = 3
	h := newHarness(t, cfg, pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	for range 5 {
		h.upf.mu.Lock()
		h.upf.lostBeats = 2
		beats := h.upf.beats
		h.upf.mu.Unlock()
		waitFor(t, "an answered heartbeat after the burst", func() bool {
			h.upf.mu.Lock()
			defer h.upf.mu.Unlock()
			return h.upf.lostBeats == 0 && h.upf.beats > beats
		})
		if st := h.smf.UPFStates()["upf1"]; st != "up" {
			t.Fatalf("UPF %s after a burst of 2 lost heartbeats (retries 3)", st)
		}
	}
	st := h.smf.Stats()
	if st.UPFFailures != 0 || st.HeartbeatsMissed != 10 || st.Associations != 1 || st.SessionsRestored != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A Node Report names its UPF by the Node ID the UPF gave at association:
// the sessions of the other UPF, at the same gNB, keep their user plane.
func TestNodeReportNamesUPFByAssociatedNodeID(t *testing.T) {
	cfg := testConfig()
	cfg.UPFs = append(cfg.UPFs, UPFConfig{Name: "upf2", N4: "direct", N3: "10.100.3.3", DNNs: []string{"ims"}})
	up1, up2 := newFakeUPF(), newFakeUPF()
	up1.nodeID = pfcp.NodeID{FQDN: "upf-a.tern.example"}
	up2.nodeID = pfcp.NodeID{FQDN: "upf-b.tern.example"}
	h := buildHarness(t, cfg, pcf.Config{}, map[string]*fakeUPF{"upf1": up1, "upf2": up2})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.establish(t, testSUPI, 1, "internet") // upf1
	h.establish(t, testSUPI, 2, "ims")      // upf2
	h.smf.HandleNodeReport(context.Background(), &pfcp.NodeReportRequest{NodeID: up2.nodeID, ReportType: pfcp.NodeReportUPFR,
		PathFailurePeers: []netip.Addr{gnbN3}})
	if tr := h.amf.next(t); tr.psi != 2 || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD {
		t.Fatalf("transfer %+v, want session 2's user plane released", tr)
	}
	h.amf.noTransfer(t)
}

func TestRestartedRecoveryTime(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		was, now time.Time
		want     bool
	}{
		{t0, t0, false},
		{t0, t0.Add(time.Second), true},
		{t0, t0.Add(-time.Second), true}, // backwards is a restart too
		{time.Time{}, t0, false},         // first time we hear of it
		{t0, time.Time{}, false},         // the direct binding has none
	} {
		if got := restarted(c.was, c.now); got != c.want {
			t.Errorf("restarted(%v, %v) = %v", c.was, c.now, got)
		}
	}
}

// A DNN withdrawn from the subscription releases the UE's session on it
// with #27 (TS 23.502 §4.3.3.2 step 1b); its session on a DNN still
// subscribed is left as it was (the PCF's decision did not change).
func TestSubscriptionChangeReleasesWithdrawnDNN(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx := context.Background()
	h.establish(t, testSUPI, 1, "internet")
	h.establish(t, testSUPI, 2, "ims")
	h.sdm.withdraw(testSUPI, "ims")
	if err := h.smf.SubscriptionDataChanged(ctx, testSUPI, &models.Udm_SDM_ModificationNotification{}); err != nil {
		t.Fatal(err)
	}
	tr := h.amf.next(t)
	cmd, ok := tr.n1.(*nas.PDUSessionReleaseCommand)
	if !ok || tr.psi != 2 || cmd.Cause != nas.CauseMissingOrUnknownDNN {
		t.Fatalf("transfer %+v, want session 2 released with #27", tr)
	}
	h.amf.noTransfer(t)
	if err := h.smf.SubscriptionDataChanged(ctx, "imsi-208930000000077", &models.Udm_SDM_ModificationNotification{}); err != nil {
		t.Errorf("a UE without sessions: %v", err)
	}
}

// A UPF that advertised FTUP but refuses the restored F-TEID (it does not
// take RESTI) gets the session with CHOOSE, and the 5G-AN is told of the
// new uplink tunnel with a PDU Session Resource Modify Request: at once
// for an active user plane, once its setup is answered for one being
// activated; an idle UE needs nothing, its next activation carrying the
// new tunnel (TS 23.502 §4.3.3.2, §4.2.3.2; TS 38.413 §8.2.3).
func TestRestorationFallsBackToChoose(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	ctx := context.Background()
	const active, idle, activating = "imsi-208930000000001", "imsi-208930000000002", "imsi-208930000000003"
	h.establish(t, active, 1, "internet")
	refIdle, _, _ := h.establish(t, idle, 1, "internet")
	refActivating, _, _ := h.establish(t, activating, 1, "internet")
	for _, ref := range []string{refIdle, refActivating} {
		if _, err := h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}); err != nil {
			t.Fatal(err)
		}
	}
	// A service request: the setup request goes out with the old tunnel.
	up, err := h.smf.UpdateSMContext(ctx, refActivating, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}})
	if err != nil || up.N2SmInfo == nil {
		t.Fatalf("activation: %+v %v", up, err)
	}
	h.upf.mu.Lock()
	h.upf.onlyChoose = true
	h.upf.mu.Unlock()

	h.upf.restart()
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 3 })
	tr := h.amf.next(t)
	if tr.supi != active || tr.n1 != nil || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
		t.Fatalf("transfer %+v, want the active session's PDU Session Resource Modify Request", tr)
	}
	newUL := func(supi string) ngap.GTPTunnel {
		t.Helper()
		ul, err := callUE(ctx, h.smf, supi, func(u *ueState) (ngap.GTPTunnel, error) { return u.sessions[1].ulTunnel, nil })
		if err != nil {
			t.Fatal(err)
		}
		return ul
	}
	m, err := ngap.DecodeModifyRequestTransfer(tr.n2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ngap.ULTunnelModifyItem{UL: newUL(active), DL: ngap.GTPTunnel{Addr: gnbN3, TEID: 0xA001}}); len(m.ULTunnels) != 1 || m.ULTunnels[0] != want {
		t.Errorf("UL NG-U UP TNL Modify List %+v, want %+v", m.ULTunnels, want)
	}
	h.amf.noTransfer(t) // not for the idle UE, not yet for the one activating
	if _, err := h.smf.UpdateSMContext(ctx, refActivating, setupResponse(t, 1)); err != nil {
		t.Fatal(err)
	}
	tr = h.amf.next(t)
	if m, err := ngap.DecodeModifyRequestTransfer(tr.n2); tr.supi != activating || err != nil || len(m.ULTunnels) != 1 || m.ULTunnels[0].UL != newUL(activating) {
		t.Fatalf("transfer %+v (%v), want the activated session's new uplink tunnel", tr, err)
	}
	up, err = h.smf.UpdateSMContext(ctx, refIdle, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ngap.DecodeSetupRequestTransfer(up.N2SmInfo); err != nil || st.ULTunnel != newUL(idle) {
		t.Errorf("idle UE's activation carries %+v (%v), want its new tunnel %+v", st, err, newUL(idle))
	}
	if st := h.smf.Stats(); st.UplinksMoved != 3 || st.RestoredSameTEID != 0 || st.SessionsNotRestored != 0 {
		t.Errorf("stats %+v", st)
	}
	h.amf.noTransfer(t)
}

// A restoration that finds the UPF gone again (no answer) releases
// nothing: the sessions not restored yet are kept, the restorations in
// flight end with the first unanswered one and no more are sent, and the
// UPF's next association restores them all.
func TestRestorationInterruptedKeepsSessions(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.Timers.Heartbeat = 300 * time.Millisecond // also the association retry period
	cfg.Timers.PFCPTimeout = 100 * time.Millisecond
	h := newHarness(t, cfg, pcf.Config{})
	const n = restoreWindow + 10
	for i := range n {
		h.establish(t, fmt.Sprintf("imsi-208930000001%03d", i), 1, "internet")
	}
	h.upf.mu.Lock()
	h.upf.holdEstablishments = true // the restarted UPF answers no establishment
	h.upf.gate = make(chan struct{})
	h.upf.mu.Unlock()
	t.Cleanup(func() { close(h.upf.gate) })
	h.upf.restart()
	waitFor(t, "an interrupted restoration", func() bool { return h.smf.Stats().SessionsKept == n })
	h.amf.noTransfer(t)
	h.upf.mu.Lock()
	sent := h.upf.held
	h.upf.holdEstablishments = false
	h.upf.mu.Unlock()
	if sent > restoreWindow {
		t.Errorf("%d restorations sent to a UPF that answered none, want at most the %d in flight at once", sent, restoreWindow)
	}
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == n })
	waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	if st := h.smf.Stats(); st.SessionsNotRestored != 0 || st.Contexts != n || st.N4Sessions != n || h.upf.live() != n {
		t.Errorf("stats %+v, UPF holds %d", st, h.upf.live())
	}
	h.amf.noTransfer(t)
}

// A restoration with CHOOSE learns the new F-TEID only from the UPF's
// Created PDR: an answer without one is a failed restoration (the session
// is released with #39), not a session kept on the F-TEID the UPF no
// longer has.
func TestChooseRestorationNeedsCreatedPDR(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	h.upf.mu.Lock()
	h.upf.onlyChoose, h.upf.noCreatedPDR = true, true
	h.upf.mu.Unlock()
	h.upf.restart()
	tr := h.amf.next(t)
	if cmd, ok := tr.n1.(*nas.PDUSessionReleaseCommand); !ok || cmd.Cause != nas.CauseReactivationRequested {
		t.Fatalf("transfer %+v, want a PDU Session Release Command with #39", tr.n1)
	}
	waitFor(t, "the restoration's end", func() bool { return h.smf.Stats().SessionsNotRestored == 1 })
	if st := h.smf.Stats(); st.SessionsNotRestored != 1 || st.SessionsRestored != 0 || st.RestoredSameTEID != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A restarted UPF that takes the session back with RESTI but announces
// another F-TEID all the same: the session counts as moved (the gNB is
// sent the new tunnel), not also as restored with its F-TEID.
func TestRestorationStatsDisjoint(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	h.upf.mu.Lock()
	h.upf.restiNewTEID = true
	h.upf.mu.Unlock()
	h.upf.restart()
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 1 })
	if tr := h.amf.next(t); tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
		t.Fatalf("transfer %+v, want the new uplink tunnel", tr)
	}
	if st := h.smf.Stats(); st.RestoredSameTEID != 0 || st.UplinksMoved != 1 {
		t.Errorf("RestoredSameTEID %d, UplinksMoved %d: want 0 and 1", st.RestoredSameTEID, st.UplinksMoved)
	}
}

// modifyFailure is the 5G-AN's PDU Session Resource Modify Unsuccessful
// Transfer.
func modifyFailure(t *testing.T) *sbi.SMContextUpdate {
	t.Helper()
	b, err := ngap.EncodeModifyUnsuccessfulTransfer(&ngap.PDUSessionResourceModifyUnsuccessfulTransfer{
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnspecified}})
	if err != nil {
		t.Fatal(err)
	}
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
		N2SmInfo: &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}, N2SmInfoType: models.Smf_PDUSess_N2SmInfoType_PDU_RES_MOD_FAIL,
	}, N2SmInfo: b}
}

// ulTunnelOf is the uplink tunnel of supi's session 1 at the SMF.
func (h *harness) ulTunnelOf(t *testing.T, supi string) ngap.GTPTunnel {
	t.Helper()
	ul, err := callUE(context.Background(), h.smf, supi, func(u *ueState) (ngap.GTPTunnel, error) { return u.sessions[1].ulTunnel, nil })
	if err != nil {
		t.Fatal(err)
	}
	return ul
}

// A gNB that refuses the uplink move of a restored session keeps sending
// to the F-TEID the UPF no longer has: the SMF takes the user plane down
// (the AMF is asked to release the session's resources in the 5G-AN, TS
// 23.502 §4.3.7), so that the next activation carries the new F-TEID.
func TestRefusedUplinkMoveDeactivates(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	h.upf.mu.Lock()
	h.upf.onlyChoose = true
	h.upf.mu.Unlock()
	h.upf.restart()
	if tr := h.amf.next(t); tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
		t.Fatalf("transfer %+v, want the new uplink tunnel", tr)
	}
	up, err := h.smf.UpdateSMContext(ctx, ref, modifyFailure(t))
	if err != nil {
		t.Fatal(err)
	}
	if tr := h.amf.next(t); tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD || tr.n1 != nil {
		t.Fatalf("transfer %+v, want the session's resources in the 5G-AN released", tr)
	}
	if up.Data.UpCnxState != models.Smf_PDUSess_UpCnxState_DEACTIVATED {
		t.Errorf("user plane %s after the refused move, want DEACTIVATED", up.Data.UpCnxState)
	}
	if mod := h.upf.lastMod(t); len(mod.UpdateFARs) != 1 || *mod.UpdateFARs[0].ApplyAction != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("UPF told %+v, want the downlink buffered", mod)
	}
	up, err = h.smf.UpdateSMContext(ctx, ref, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ngap.DecodeSetupRequestTransfer(up.N2SmInfo); err != nil || st.ULTunnel != h.ulTunnelOf(t, testSUPI) {
		t.Errorf("activation carries %+v (%v), want the new tunnel %+v", st, err, h.ulTunnelOf(t, testSUPI))
	}
	h.amf.noTransfer(t)
}

// An uplink move that a restoration makes while a QoS modification awaits
// the 5G-AN's answer waits for the modification to end: sent at once, its
// answer would be taken for the modification's. Then it is sent, and its
// answer is its own.
func TestUplinkMoveWaitsForModification(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	if err := h.pcf.UpdatePolicy(ctx, testSUPI, 1, pcf.Change{FiveQI: 8}); err != nil {
		t.Fatal(err)
	}
	if tr := h.amf.next(t); tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ || tr.n1 == nil {
		t.Fatalf("transfer %+v, want the modification command", tr)
	}
	h.upf.mu.Lock()
	h.upf.onlyChoose = true
	h.upf.mu.Unlock()
	h.upf.restart()
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 1 })
	h.amf.noTransfer(t) // not while the modification runs
	if _, err := h.smf.UpdateSMContext(ctx, ref, n1Update(t, &nas.PDUSessionModificationComplete{SMHeader: nas.SMHeader{SessionID: 1}})); err != nil {
		t.Fatal(err)
	}
	h.amf.noTransfer(t) // the 5G-AN has not answered the modification yet
	if _, err := h.smf.UpdateSMContext(ctx, ref, modifyResponse(t)); err != nil {
		t.Fatal(err)
	}
	tr := h.amf.next(t)
	if m, err := ngap.DecodeModifyRequestTransfer(tr.n2); err != nil || tr.n1 != nil || len(m.ULTunnels) != 1 || m.ULTunnels[0].UL != h.ulTunnelOf(t, testSUPI) {
		t.Fatalf("transfer %+v (%v), want the new uplink tunnel once the modification ended", tr, err)
	}
	if st := h.smf.Stats(); st.Modified != 1 {
		t.Errorf("%d modifications completed, want 1", st.Modified)
	}
	// The move's answer: nothing more to do.
	if _, err := h.smf.UpdateSMContext(ctx, ref, modifyResponse(t)); err != nil {
		t.Fatal(err)
	}
	h.amf.noTransfer(t)
}
