package nrfclient_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/syncbuf"
	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/sbi"
)

func amfProfile(t *testing.T) *models.Nrf_NFMgmt_NFProfile {
	t.Helper()
	p, err := nrfclient.ProfileFor(sbi.NFTypeAMF, "amf-1", "http://10.0.0.1:8000", models.Nrf_NFMgmt_ServiceName_NAMF_COMM)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newAgent(t *testing.T, f sbi.NFManagement) *nrfclient.Agent {
	t.Helper()
	a, err := nrfclient.NewAgent(nrfclient.AgentConfig{NRF: f, Profile: amfProfile(t),
		HeartbeatInterval: 5 * time.Millisecond, RetryMin: 2 * time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func registered(f *fakeNRF, id string) func() bool {
	return func() bool {
		_, err := f.GetProfile(context.Background(), id)
		return err == nil
	}
}

func TestAgentRegistersHeartbeatsDeregisters(t *testing.T) {
	f := newFake(t, nrf.Config{HeartBeatTimer: 3 * time.Second})
	base := runtime.NumGoroutine()
	a := newAgent(t, f)
	a.Start()
	a.Start() // idempotent
	eventually(t, "the AMF is registered", registered(f, "amf-1"))
	eventually(t, "the agent heartbeats", func() bool { return f.heartbeats.Load() >= 3 })
	if p := a.Profile(); p == nil || p.HeartBeatTimer != 3 || !a.Registered() {
		t.Fatalf("agent state: registered=%v profile=%+v", a.Registered(), p)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent's goroutine has ended", func() bool { return runtime.NumGoroutine() <= base })
	if registered(f, "amf-1")() {
		t.Fatal("still registered after Stop")
	}
	// The goroutine has ended: nothing is sent any more.
	beats := f.heartbeats.Load()
	time.Sleep(20 * time.Millisecond)
	if f.heartbeats.Load() != beats || f.registers.Load() != 1 {
		t.Fatalf("calls after Stop: heartbeats %d→%d, registers %d", beats, f.heartbeats.Load(), f.registers.Load())
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// The agent uses the interval the NRF answered when not told otherwise.
func TestAgentHeartbeatsAtTheNRFInterval(t *testing.T) {
	f := newFake(t, nrf.Config{HeartBeatTimer: time.Second})
	a, err := nrfclient.NewAgent(nrfclient.AgentConfig{NRF: f, Profile: amfProfile(t)})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	defer a.Stop()
	eventually(t, "registered", a.Registered)
	time.Sleep(300 * time.Millisecond)
	if n := f.heartbeats.Load(); n != 0 {
		t.Fatalf("%d heartbeats within 300ms of a 1s heartBeatTimer", n)
	}
}

func TestAgentStartsWhileNRFIsDown(t *testing.T) {
	f := newFake(t, nrf.Config{})
	f.setDown(true)
	a := newAgent(t, f)
	start := time.Now()
	a.Start()
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Start blocked %v on an unreachable NRF", d)
	}
	eventually(t, "the agent retries", func() bool { return f.registers.Load() >= 3 })
	if a.Registered() {
		t.Fatal("registered with an unreachable NRF")
	}
	f.setDown(false)
	eventually(t, "the AMF is registered once the NRF is up", registered(f, "amf-1"))
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAgentReregistersAfterNRFRestart(t *testing.T) {
	f := newFake(t, nrf.Config{})
	a := newAgent(t, f)
	a.Start()
	defer a.Stop()
	eventually(t, "registered", registered(f, "amf-1"))
	fresh := f.restart(t, nrf.Config{}) // an empty NRF: the next heartbeat gets 404
	eventually(t, "registered with the restarted NRF", func() bool {
		_, err := fresh.GetProfile(context.Background(), "amf-1")
		return err == nil
	})
	if f.registers.Load() != 2 {
		t.Fatalf("%d registrations, want 2", f.registers.Load())
	}
}

// A heartbeat failing for another reason than 404 (NRF down) keeps the
// registration; the agent does not flood the NRF with registrations.
func TestAgentKeepsHeartbeatingThroughAnOutage(t *testing.T) {
	f := newFake(t, nrf.Config{})
	a := newAgent(t, f)
	a.Start()
	defer a.Stop()
	eventually(t, "registered", registered(f, "amf-1"))
	f.setDown(true)
	beats := f.heartbeats.Load()
	eventually(t, "heartbeats continue", func() bool { return f.heartbeats.Load() >= beats+3 })
	f.setDown(false)
	if f.registers.Load() != 1 || !a.Registered() {
		t.Fatalf("registers %d, registered %v", f.registers.Load(), a.Registered())
	}
}

// stuckNRF never answers a deregistration.
type stuckNRF struct{ *fakeNRF }

func (s stuckNRF) Deregister(ctx context.Context, id string) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestAgentStopHasADeadline(t *testing.T) {
	f := newFake(t, nrf.Config{})
	a, err := nrfclient.NewAgent(nrfclient.AgentConfig{NRF: stuckNRF{f}, Profile: amfProfile(t), StopTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	eventually(t, "registered", a.Registered)
	start := time.Now()
	if err := a.Stop(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want the deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Stop took %v", d)
	}
}

func TestAgentConfig(t *testing.T) {
	f := newFake(t, nrf.Config{})
	for name, cfg := range map[string]nrfclient.AgentConfig{
		"no NRF":      {Profile: amfProfile(t)},
		"no profile":  {NRF: f},
		"no instance": {NRF: f, Profile: &models.Nrf_NFMgmt_NFProfile{NfType: sbi.NFTypeAMF}},
		"negative":    {NRF: f, Profile: amfProfile(t), RetryMin: -1},
	} {
		if _, err := nrfclient.NewAgent(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Stop without Start sends nothing.
	a := newAgent(t, f)
	if err := a.Stop(); err != nil || f.registers.Load() != 0 {
		t.Fatalf("Stop before Start: %v, %d registrations", err, f.registers.Load())
	}
}

// An NF started beside its NRF may ask before the NRF listens (the
// README's script starts them all at once): that normal start logs no
// failure. An NRF that stays away is reported once at Warn, with the error,
// and the recovery at Info.
func TestAgentQuietWhileTheNRFComesUp(t *testing.T) {
	f := newFake(t, nrf.Config{})
	f.setDown(true)
	var log syncbuf.Buffer
	a, err := nrfclient.NewAgent(nrfclient.AgentConfig{NRF: f, Profile: amfProfile(t), RetryMin: 2 * time.Millisecond, RetryMax: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	eventually(t, "the agent retries", func() bool { return f.registers.Load() >= 3 })
	f.setDown(false) // the NRF listens, well within QuietFor
	eventually(t, "registered", a.Registered)
	a.Stop()
	if strings.Contains(log.String(), "level=WARN") || strings.Contains(log.String(), "fail") {
		t.Fatalf("a normal start logged a failure:\n%s", log.String())
	}

	f.setDown(true)
	var log2 syncbuf.Buffer
	a, err = nrfclient.NewAgent(nrfclient.AgentConfig{NRF: f, Profile: amfProfile(t), RetryMin: 2 * time.Millisecond, RetryMax: 10 * time.Millisecond,
		QuietFor: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log2, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	defer a.Stop()
	eventually(t, "the failure is reported", func() bool { return strings.Contains(log2.String(), "level=WARN") })
	time.Sleep(50 * time.Millisecond)
	f.setDown(false)
	eventually(t, "registered", a.Registered)
	got := log2.String()
	if n := strings.Count(got, "level=WARN"); n != 1 || !strings.Contains(got, `msg="NRF registration failing; retrying in the background"`) ||
		!strings.Contains(got, "connection refused") || !strings.Contains(got, `msg="NRF registration succeeded after failures"`) {
		t.Fatalf("an NRF that stays away: want one Warn with the error, then the recovery; got:\n%s", got)
	}
}
