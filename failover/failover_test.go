package failover

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/ue"
)

// unitEnv makes the test binary a unit process (the supervisor's Spawn
// below): tern unit, without building tern.
const unitEnv = "TERN_FAILOVER_TEST_UNIT"

func TestMain(m *testing.M) {
	if os.Getenv(unitEnv) == "1" {
		os.Exit(runTestUnit(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runTestUnit(args []string) int {
	if len(args) == 0 || args[0] != "unit" {
		fmt.Fprintln(os.Stderr, "unit process: want the unit command line")
		return 2
	}
	uc, err := ParseUnitArgs(args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(uc.Config.Log.Level)); err != nil {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("unit", uc.Epoch)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunUnit(ctx, uc, log, func(state string, t *Takeover) { fmt.Println(UnitLine(state, t)) }); err != nil {
		fmt.Fprintln(os.Stderr, "unit:", err)
		return 1
	}
	return 0
}

// unitLogs keeps what the unit processes of a test log (at warn level
// and above), besides passing it on to the test's stderr.
type unitLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *unitLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	return os.Stderr.Write(p)
}

// count counts the lines that contain s.
func (l *unitLogs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func testSpawn(logs *unitLogs) func(args []string) (*exec.Cmd, error) {
	return func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), unitEnv+"=1")
		cmd.Stderr = logs
		return cmd, nil
	}
}

// testConfig is a core of subscribers demo subscribers on addresses of its
// own, replicated locally.
func testConfig(t *testing.T, subscribers int) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Log.Level = "warn"
	dir := t.TempDir()
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = subscribers
	cfg.Operator.Socket = filepath.Join(dir, "operator.sock")
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, port
	n4, upfAddr := freeport.Loopback(), freeport.Loopback()
	cfg.SMF.NodeID, cfg.SMF.N4Address = n4.String(), n4.String()
	cfg.UPF.PFCPAddr = netip.AddrPortFrom(upfAddr, pfcp.Port).String()
	cfg.UPF.N3Addr = netip.AddrPortFrom(upfAddr, gtpu.Port).String()
	cfg.UPF.NoN6 = true
	for i := range cfg.SMF.UPFs {
		if cfg.SMF.UPFs[i].Name == cfg.UPF.Name {
			cfg.SMF.UPFs[i].N3 = upfAddr.String()
		}
	}
	cfg.Resiliency.Mode = config.ResiliencyLocal
	cfg.Resiliency.Dir = filepath.Join(dir, "resiliency")
	cfg.Resiliency.RecordStoreMiB = 8
	return cfg
}

func supervise(t *testing.T, cfg config.Config) (*Supervisor, chan Takeover, *unitLogs) {
	t.Helper()
	logs := &unitLogs{}
	took := make(chan Takeover, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Supervise(ctx, cfg, Hooks{Spawn: testSpawn(logs), OnTakeover: func(tk Takeover) { took <- tk }},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, took, logs
}

// TestIdleUEsSurviveTheActiveUnitsDeath is drill (a) of issue 36 §6: UEs
// registered with a PDU session and idle; the active unit is SIGKILLed;
// the standby takes over; then every UE runs a service request, releases
// its session and deregisters, without registering again and without a
// failure, through the gNB association it had before.
func TestIdleUEsSurviveTheActiveUnitsDeath(t *testing.T) {
	const ues = 20
	cfg := testConfig(t, ues)
	mport, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Address = fmt.Sprintf("127.0.0.1:%d", mport)
	s, took, logs := supervise(t, cfg)
	ready := func() bool {
		r, err := http.Get("http://" + cfg.Metrics.Address + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}
	if !ready() {
		t.Error("the active unit's /readyz is not ready")
	}

	var killed time.Time
	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs, simCfg.Concurrency = 2, ues, 8
	simCfg.Timeout = 20 * time.Second
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepIdle,
		sim.StepService, sim.StepRelease, sim.StepDeregister}
	steps := 0
	simCfg.AfterStep = func(sr sim.StepResult) {
		steps++
		if steps != 3 { // after the first idle
			return
		}
		pid := s.ActivePID()
		killed = time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	res, err := sim.Run(context.Background(), simCfg)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	for _, st := range res.Steps {
		if st.OK != ues || st.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed, %d skipped", st.Step, st.OK, st.Failed, st.Skipped)
		}
	}
	for _, o := range res.UEs {
		if o.Err != "" {
			t.Errorf("%s failed at %s: %s", o.SUPI, o.FailedStep, o.Err)
			break
		}
	}
	for _, sum := range res.Summaries {
		t.Logf("%s: %d, %d failures", sum.Procedure, sum.Count, sum.Failures)
		switch sum.Procedure {
		case ue.ProcRegistration:
			if sum.Count != ues {
				t.Errorf("%d registrations, want the %d before the failure only", sum.Count, ues)
			}
		case ue.ProcReregistration, ue.ProcPeriodicRegistration:
			t.Errorf("%d %s after the failure", sum.Count, sum.Procedure)
		}
	}
	select {
	case tk := <-took:
		t.Logf("takeover: detected %v after the SIGKILL (the parent's wait4 returned after %v), served %v after that; %d UEs, %d with sessions, %d records refused",
			tk.Detected.Sub(killed), tk.Reaped.Sub(killed), tk.Restore, tk.UEs, tk.Sessions, tk.Refused)
		if tk.UEs != ues || tk.Refused != 0 {
			t.Errorf("takeover restored %d UEs (want %d), refused %d records", tk.UEs, ues, tk.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover reported")
	}
	// The metrics moved with the active unit.
	deadline := time.Now().Add(5 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatal("the new active unit's /readyz is not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, g := range res.GNBs {
		c := g.Counters
		if c.Reconnects != 0 || c.Resets != 0 || c.UnknownUE != 0 {
			t.Errorf("gNB %d saw the failure: %+v", g.ID, c)
		}
		// Not yet exactly once (docs/resiliency.md): a SIGKILL between a
		// step's sends and its acknowledgement has the new unit send the
		// step's recorded outputs again; a repeated UE Context Release
		// Command for a UE the gNB released already draws an Error
		// Indication. The UE sees nothing of it.
		if c.ErrorIndications != 0 {
			t.Logf("gNB %d: %d Error Indications (a step's outputs sent again)", g.ID, c.ErrorIndications)
		}
	}
	// The sessions established before the failure are released at the
	// new unit: their SM policy associations are the restored PCF's
	// (the SMF logs a deletion the PCF refuses).
	if n := logs.count("SM policy deletion failed"); n != 0 {
		t.Errorf("%d SM policy associations not found at the PCF after the takeover", n)
	}

}

// TestRegistrationStormSurvivesTheActiveUnitsDeath is drill (b) of issue
// 36 §6: UEs register, ten at a time, and the active unit is SIGKILLed
// after a few registrations completed, while others are in flight
// (between Registration Request and Accept: at the AUSF, in security mode
// control, at the UDM). The standby takes over and the front end replays
// what the dead unit had not acknowledged: every UE completes its
// registration once, as the UE sees it, then sets up a PDU session,
// releases it and deregisters, through the gNB association it had.
func TestRegistrationStormSurvivesTheActiveUnitsDeath(t *testing.T) {
	const ues, killAfter = 50, 8
	cfg := testConfig(t, ues)
	s, took, _ := supervise(t, cfg)

	kill := atNth(ue.ProcRegistration, killAfter, func() error { return syscall.Kill(s.ActivePID(), syscall.SIGKILL) })
	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs, simCfg.Concurrency = 2, ues, 10
	// The UE does not retransmit its Registration Request (no T3510 in
	// package sim): a message the dead unit took comes back to the new
	// one through the front end's replay, so the procedure's bound only
	// has to cover the takeover.
	simCfg.Timeout = 20 * time.Second
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepRelease, sim.StepDeregister}
	simCfg.OnProcedure = kill.observe
	res, err := sim.Run(context.Background(), simCfg)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	killed := kill.wait(t)
	for _, st := range res.Steps {
		if st.OK != ues || st.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed, %d skipped", st.Step, st.OK, st.Failed, st.Skipped)
		}
	}
	failed := 0
	for _, o := range res.UEs {
		if o.Err != "" {
			if failed++; failed <= 5 {
				t.Errorf("%s failed at %s: %s", o.SUPI, o.FailedStep, o.Err)
			}
		}
	}
	for _, sum := range res.Summaries {
		t.Logf("%s: %d, %d failures", sum.Procedure, sum.Count, sum.Failures)
		switch sum.Procedure {
		case ue.ProcRegistration:
			if sum.Count != ues || sum.Failures != 0 {
				t.Errorf("%d registrations, %d failed: want each of the %d UEs registered once", sum.Count, sum.Failures, ues)
			}
		case ue.ProcReregistration, ue.ProcPeriodicRegistration:
			t.Errorf("%d %s", sum.Count, sum.Procedure)
		}
	}
	select {
	case tk := <-took:
		t.Logf("takeover: detected %v after the SIGKILL, served %v after that; %d UEs, %d with sessions, %d records refused",
			tk.Detected.Sub(killed), tk.Restore, tk.UEs, tk.Sessions, tk.Refused)
		if tk.UEs < killAfter || tk.Refused != 0 {
			t.Errorf("takeover restored %d UEs (want at least the %d registered), refused %d records", tk.UEs, killAfter, tk.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover reported")
	}
	for _, g := range res.GNBs {
		c := g.Counters
		if c.Reconnects != 0 || c.Resets != 0 || c.UnknownUE != 0 {
			t.Errorf("gNB %d saw the failure: %+v", g.ID, c)
		}
		// Not yet fixed (docs/resiliency.md, "what it does not, yet"):
		// a message whose step the dead unit recorded and answered, but
		// whose stamp it had not acknowledged, is replayed and handled
		// again. A replayed InitialUEMessage starts the registration over
		// with a new AMF UE NGAP ID, and the UE's answer to the first
		// Authentication Request, which names the old one, is answered
		// with an Error Indication. The UE registers all the same.
		if c.ErrorIndications != 0 {
			t.Logf("gNB %d: %d Error Indications (a recorded step replayed, not yet fixed)", g.ID, c.ErrorIndications)
		}
	}
}

// TestSessionEstablishmentsSurviveTheActiveUnitsDeath is drill (d) of
// issue 36 §6: registered UEs set up a PDU session each, eight at a
// time, and the active unit is SIGKILLed after a few establishments
// completed, while others are in flight (at the PCF, at the UPF, between
// the Accept and the PDU Session Resource Setup Response). Every UE gets
// its session with no failure; the UPF then holds exactly one PFCP
// session and one uplink TEID per UE (none orphaned, none twice), and
// none once the UEs released them and deregistered.
func TestSessionEstablishmentsSurviveTheActiveUnitsDeath(t *testing.T) {
	const ues, killAfter = 40, 6
	cfg := testConfig(t, ues)
	s, took, _ := supervise(t, cfg)

	kill := atNth(ue.ProcPDUSession, killAfter, func() error { return syscall.Kill(s.ActivePID(), syscall.SIGKILL) })
	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs, simCfg.Concurrency = 2, ues, 8
	simCfg.Timeout = 20 * time.Second
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepRelease, sim.StepDeregister}
	simCfg.OnProcedure = kill.observe
	// What the UPF holds once every UE has its session, and once every
	// session is released.
	var afterSession, afterRelease upfCount
	simCfg.AfterStep = func(sr sim.StepResult) {
		switch sr.Step {
		case sim.StepSession:
			afterSession = countUPF(s)
		case sim.StepRelease:
			afterRelease = waitUPFEmpty(s, 2*time.Second)
		}
	}
	res, err := sim.Run(context.Background(), simCfg)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	killed := kill.wait(t)
	for _, st := range res.Steps {
		// Not yet asserted: the session step's time. An Accept that a
		// restored SMF sends before the front end has resumed the UE's
		// gNB association is dropped by the AMF ("SM content not sent",
		// the leg is detached), and that UE gets its session only when
		// it asks again (T3580).
		t.Logf("step %s: %v", st.Step, st.Wall)
		if st.OK != ues || st.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed, %d skipped", st.Step, st.OK, st.Failed, st.Skipped)
		}
	}
	failed := 0
	for _, o := range res.UEs {
		if o.Err != "" {
			if failed++; failed <= 5 {
				t.Errorf("%s failed at %s: %s", o.SUPI, o.FailedStep, o.Err)
			}
		}
	}
	for _, sum := range res.Summaries {
		t.Logf("%s: %d, %d failures", sum.Procedure, sum.Count, sum.Failures)
		switch sum.Procedure {
		case ue.ProcRegistration:
			if sum.Count != ues || sum.Failures != 0 {
				t.Errorf("%d registrations, %d failed: want each of the %d UEs registered once", sum.Count, sum.Failures, ues)
			}
		case ue.ProcPDUSession:
			if sum.Failures != 0 {
				t.Errorf("%d PDU session establishments failed", sum.Failures)
			}
		case ue.ProcReregistration, ue.ProcPeriodicRegistration:
			t.Errorf("%d %s", sum.Count, sum.Procedure)
		}
	}
	select {
	case tk := <-took:
		t.Logf("takeover: detected %v after the SIGKILL, served %v after that; %d UEs, %d with sessions, %d records refused",
			tk.Detected.Sub(killed), tk.Restore, tk.UEs, tk.Sessions, tk.Refused)
		if tk.Sessions < killAfter || tk.Refused != 0 {
			t.Errorf("takeover restored %d sessions (want at least the %d established), refused %d records", tk.Sessions, killAfter, tk.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover reported")
	}
	t.Logf("UPF after the sessions: %+v; after their release: %+v", afterSession, afterRelease)
	if want := (upfCount{Sessions: ues, TEIDs: ues}); afterSession != want {
		t.Errorf("the UPF holds %+v once each of the %d UEs has its session, want %+v", afterSession, ues, want)
	}
	if afterRelease != (upfCount{}) {
		t.Errorf("the UPF holds %+v once every session is released: orphans", afterRelease)
	}
	for _, g := range res.GNBs {
		if c := g.Counters; c.Reconnects != 0 || c.Resets != 0 || c.UnknownUE != 0 {
			t.Errorf("gNB %d saw the failure: %+v", g.ID, c)
		}
	}
}

// upfCount is what the supervisor's UPF holds.
type upfCount struct{ Sessions, TEIDs int }

func countUPF(s *Supervisor) upfCount {
	st := s.UPF.Stats().Control
	return upfCount{Sessions: st.Sessions, TEIDs: st.TEIDs}
}

// waitUPFEmpty waits up to d for the UPF to hold no session (the SMF's
// PFCP deletions run beside the releases) and returns what it holds.
func waitUPFEmpty(s *Supervisor, d time.Duration) upfCount {
	deadline := time.Now().Add(d)
	for {
		c := countUPF(s)
		if c == (upfCount{}) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUnitLines(t *testing.T) {
	tk := Takeover{Detected: time.Unix(5, 6), Reaped: time.Unix(5, 3), Restore: 1234 * time.Microsecond, UEs: 7, Sessions: 5, Refused: 1}
	state, got, ok := ParseUnitLine(UnitLine("active", &tk))
	if !ok || state != "active" || got == nil || *got != tk {
		t.Fatalf("unit line: %q %+v %v, want %+v", state, got, ok, tk)
	}
	if state, got, ok := ParseUnitLine(UnitLine("standby", nil)); !ok || state != "standby" || got != nil {
		t.Fatalf("standby line: %q %+v %v", state, got, ok)
	}
	if got, ok := ParseTakeoverLine(TakeoverLine(tk)); !ok || *got != tk {
		t.Fatalf("takeover line: %+v %v", got, ok)
	}
	for _, bad := range []string{"tern unit: ", "tern unit: active ues=x", "something else"} {
		if _, _, ok := ParseUnitLine(bad); ok {
			t.Errorf("%q read as a unit line", bad)
		}
	}
}

func TestUnitArgsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "unit.yaml")
	b, err := config.Marshal(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := UnitConfig{Role: Standby, Epoch: 3, Records: "/x/unit-3.rec", RecordStoreSize: 8 << 20, Front: "/x/n2.sock",
		TakeoverFrom: "/x/unit-2.rec", Watch: 42, Recording: RecordNone}
	got, err := ParseUnitArgs(unitArgs(cfgPath, want), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.Store.Path != config.Default().Store.Path {
		t.Errorf("configuration not loaded: store %q", got.Config.Store.Path)
	}
	got.Config = config.Config{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip: %+v, want %+v", got, want)
	}
	for _, args := range [][]string{
		{"--config", cfgPath, "--role", "leader", "--epoch", "1", "--records", "r", "--front", "f"},
		{"--config", cfgPath, "--role", "standby", "--epoch", "1", "--records", "r", "--front", "f"},
		{"--config", cfgPath, "--role", "active", "--records", "r", "--front", "f"},
		{"--config", cfgPath, "--role", "active", "--epoch", "1", "--records", "r", "--front", "f", "--watch", "-1"},
		{"--config", cfgPath, "--role", "active", "--epoch", "1", "--records", "r", "--front", "f", "--recording", "disk"},
	} {
		if _, err := ParseUnitArgs(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// trigger runs an action once, when the n-th success of a procedure is
// seen (a sim.Config.OnProcedure hook): a drill's SIGKILL or drain in the
// middle of a storm of that procedure.
type trigger struct {
	proc string
	n    int
	act  func() error

	mu    sync.Mutex
	count int
	at    time.Time
	err   error
	done  chan struct{}
}

func atNth(proc string, n int, act func() error) *trigger {
	return &trigger{proc: proc, n: n, act: act, done: make(chan struct{})}
}

func (tr *trigger) observe(proc string, ok bool) {
	if proc != tr.proc || !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.count++; tr.count == tr.n {
		tr.at = time.Now()
		tr.err = tr.act()
		close(tr.done)
	}
}

// wait returns when the action ran, failing t if it did not or failed.
func (tr *trigger) wait(t *testing.T) time.Time {
	t.Helper()
	select {
	case <-tr.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the %d-th %s never came", tr.n, tr.proc)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.err != nil {
		t.Fatalf("at the %d-th %s: %v", tr.n, tr.proc, tr.err)
	}
	return tr.at
}
