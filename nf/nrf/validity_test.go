package nrf

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

func TestRegisterAnswersHeartBeatTimerAndCreated(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{HeartBeatTimer: 7 * time.Second})
	p := profile("amf-1", sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM)
	p.HeartBeatTimer = 300 // the NF's proposal; the NRF decides
	out, created, err := n.Register(ctx, p)
	if err != nil || !created || out.HeartBeatTimer != 7 || out.NfStatus != models.Nrf_NFMgmt_NFStatus_REGISTERED {
		t.Fatalf("first register: created=%v err=%v profile=%+v", created, err, out)
	}
	if _, created, err = n.Register(ctx, p); err != nil || created {
		t.Fatalf("second register: created=%v err=%v, want a 200 replacement", created, err)
	}
	got, err := n.GetProfile(ctx, "amf-1")
	if err != nil || got.HeartBeatTimer != 7 || got.NfType != sbi.NFTypeAMF {
		t.Fatalf("GetProfile = %+v, %v", got, err)
	}
	if _, err := n.GetProfile(ctx, "nobody"); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("GetProfile(unknown) = %v", err)
	}
	if _, err := heartbeat(n, "nobody"); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("Heartbeat(unknown) = %v", err)
	}
}

func discoverable(t *testing.T, n *NRF, typ sbi.NFType, id string) bool {
	t.Helper()
	r, err := n.Discover(context.Background(), typ, sbi.DiscoveryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(ids(r), id)
}

func TestHeartbeatKeepsAlive(t *testing.T) {
	n, clk := newNRF(t, Config{}) // heartBeatTimer 10s, grace 1.5, removal after 60s
	mustRegister(t, n, profile("smf-1", sbi.NFTypeSMF))
	for i := 0; i < 10; i++ { // 100s of heartbeats every 10s
		now := clk.Advance(10 * time.Second)
		if p, err := heartbeat(n, "smf-1"); err != nil || p != nil {
			t.Fatalf("heartbeat %d: %v, %v; want 204", i, p, err)
		}
		n.expire(now.Add(4 * time.Second)) // just before the next one is due
		if !discoverable(t, n, sbi.NFTypeSMF, "smf-1") {
			t.Fatalf("heartbeating SMF not discoverable after %d beats", i+1)
		}
	}
}

func TestHeartbeatExpirySuspendsThenRemoves(t *testing.T) {
	ctx := context.Background()
	n, clk := newNRF(t, Config{})
	rec := newRecorder()
	n.SetNotifier(rec)
	if _, err := n.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "amf"}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, n, profile("smf-1", sbi.NFTypeSMF))
	mustRegister(t, n, profile("smf-2", sbi.NFTypeSMF))

	// smf-2 keeps beating; smf-1 goes silent. 15s (10s × 1.5) is still fine.
	n.expire(clk.Advance(15 * time.Second))
	if !discoverable(t, n, sbi.NFTypeSMF, "smf-1") {
		t.Fatal("suspended within the grace period")
	}
	if _, err := heartbeat(n, "smf-2"); err != nil {
		t.Fatal(err)
	}
	n.expire(clk.Advance(time.Second)) // 16s: smf-1 suspended
	if discoverable(t, n, sbi.NFTypeSMF, "smf-1") || !discoverable(t, n, sbi.NFTypeSMF, "smf-2") {
		t.Fatal("want smf-1 suspended, smf-2 discoverable")
	}
	if p, _ := n.GetProfile(ctx, "smf-1"); p.NfStatus != models.Nrf_NFMgmt_NFStatus_SUSPENDED {
		t.Fatalf("smf-1 status %s", p.NfStatus)
	}
	n.expire(clk.Advance(time.Second)) // no second notification

	// A heartbeat reinstates it: 200 with the profile.
	p, err := heartbeat(n, "smf-1")
	if err != nil || p == nil || p.NfStatus != models.Nrf_NFMgmt_NFStatus_REGISTERED {
		t.Fatalf("heartbeat of a suspended NF = %+v, %v; want 200 REGISTERED", p, err)
	}
	if !discoverable(t, n, sbi.NFTypeSMF, "smf-1") {
		t.Fatal("reinstated SMF not discoverable")
	}

	// Silent for removeAfter (60s): removed, and its heartbeat gets 404.
	n.expire(clk.Advance(30 * time.Second))
	n.expire(clk.Advance(31 * time.Second))
	if _, err := n.GetProfile(ctx, "smf-1"); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("after 61s silent: %v", err)
	}
	if _, err := heartbeat(n, "smf-1"); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("heartbeat after removal = %v, want 404", err)
	}
	got := rec.wait(t, "amf", 8)
	want := []string{
		"NF_REGISTERED smf-1 REGISTERED",
		"NF_REGISTERED smf-2 REGISTERED",
		"NF_PROFILE_CHANGED smf-1 SUSPENDED",
		"NF_PROFILE_CHANGED smf-1 REGISTERED",
	}
	// Then both went silent: each is suspended, then removed (the order
	// between the two follows the registry map's).
	if len(got) != 8 || !slices.Equal(got[:4], want) {
		t.Fatalf("notifications %q, want %q then suspension and removal of both", got, want)
	}
	for _, w := range []string{"NF_PROFILE_CHANGED smf-1 SUSPENDED", "NF_PROFILE_CHANGED smf-2 SUSPENDED", "NF_DEREGISTERED smf-2", "NF_DEREGISTERED smf-1"} {
		if !slices.Contains(got[4:], w) {
			t.Fatalf("notifications %q lack %q", got, w)
		}
	}
}

func TestRegisterUndiscoverableStaysSoAfterHeartbeat(t *testing.T) {
	ctx := context.Background()
	n, clk := newNRF(t, Config{})
	p := profile("udm-1", sbi.NFTypeUDM)
	p.NfStatus = models.Nrf_NFMgmt_NFStatus_UNDISCOVERABLE
	mustRegister(t, n, p)
	n.expire(clk.Advance(20 * time.Second))
	if got, _ := n.GetProfile(ctx, "udm-1"); got.NfStatus != models.Nrf_NFMgmt_NFStatus_SUSPENDED {
		t.Fatalf("silent UNDISCOVERABLE NF: %s, want SUSPENDED", got.NfStatus)
	}
	// Its heart-beat replaces nfStatus by the status it registered with.
	got, err := n.Update(ctx, "udm-1", sbi.HeartbeatPatch(models.Nrf_NFMgmt_NFStatus_UNDISCOVERABLE))
	if err != nil || got.NfStatus != models.Nrf_NFMgmt_NFStatus_UNDISCOVERABLE {
		t.Fatalf("heartbeat restores %v, %v; want the registered UNDISCOVERABLE", got, err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{HeartBeatTimer: 1500 * time.Millisecond},
		{HeartBeatTimer: 500 * time.Millisecond},
		{HeartBeatGrace: 0.5},
		{HeartBeatTimer: 48 * time.Hour},
		{TokenLifetime: 100 * 365 * 24 * time.Hour},
		{HeartBeatTimer: 10 * time.Second, RemoveAfter: 15 * time.Second},
		{NotifyTimeout: -1},
		{APIRoot: "http://nrf/"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (&Config{HeartBeatTimer: 2 * time.Second, HeartBeatGrace: 2, RemoveAfter: 5 * time.Second}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// The sweeper runs from Start in real time and ends with Stop.
func TestStartSweepsAndStopEnds(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	base := runtime.NumGoroutine()
	n, err := New(Config{HeartBeatTimer: time.Second}, nil, WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	n.Start() // idempotent
	for range 3 {
		if _, err := n.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	if g := runtime.NumGoroutine(); g != base+4 {
		t.Fatalf("%d goroutines, want %d + the sweeper and 3 workers", g, base)
	}
	mustRegister(t, n, profile("pcf-1", sbi.NFTypePCF))
	clk.Advance(2 * time.Second) // past 1s × 1.5
	deadline := time.Now().Add(3 * time.Second)
	for discoverable(t, n, sbi.NFTypePCF, "pcf-1") {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not suspend a silent NF")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := make(chan struct{})
	go func() { n.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("Stop did not return")
	}
	n.Stop() // idempotent
	// A goroutine that has signalled its end may still be returning.
	for deadline := time.Now().Add(time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Stop, %d before New", runtime.NumGoroutine(), base)
		}
	}
	if _, err := n.GetProfile(ctx, "pcf-1"); err != nil {
		t.Fatalf("registry after Stop: %v", err)
	}
}

// A silent instance's suspension and removal are logged at Info, naming
// the instance, where it is, and why (issue: an NF whose client never
// sends NFUpdate vanished from discovery without a word).
func TestSilentInstanceIsLogged(t *testing.T) {
	var buf bytes.Buffer
	clk := newClock()
	n, err := New(Config{}, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	p := profile("5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f01", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	p.Ipv4Addresses = []string{"10.0.0.7"}
	p.NfServices[0].IpEndPoints = []models.Nrf_NFMgmt_IpEndPoint{{Ipv4Address: "10.0.0.7", Port: 8000}}
	mustRegister(t, n, p)

	n.expire(clk.Advance(16 * time.Second))
	n.expire(clk.Advance(45 * time.Second))
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "no heartbeat") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want a suspension and a removal logged, got:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{`level=INFO`, `msg="NF suspended: no heartbeat"`, `silentFor=16s`, `suspendAfter=15s`,
			`reason="no heartbeat (NFUpdate) for 16s since 2025-01-01T00:00:00Z; heartBeatTimer 10s, suspendAfter 15s"`},
		{`level=INFO`, `msg="NF removed: no heartbeat"`, `silentFor=1m1s`, `removeAfter=1m0s`},
	} {
		want = append(want, `nfInstanceId=5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f01`, `nfType=SMF`, `addresses="[10.0.0.7 10.0.0.7:8000]"`,
			`lastHeartbeat=2025-01-01T00:00:00.000Z`, `heartBeatTimer=10s`)
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("log line %q lacks %s", lines[i], w)
			}
		}
	}
}
