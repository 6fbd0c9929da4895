package failover

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/ue"
)

// drainVia asks the active unit to drain through the operator socket
// (what tern drain does).
func drainVia(socket string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}
	defer c.CloseIdleConnections()
	r, err := c.Post("http://tern/unit/drain", "", nil)
	if err != nil {
		return err
	}
	r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		return &httpStatusError{r.Status}
	}
	return nil
}

type httpStatusError struct{ status string }

func (e *httpStatusError) Error() string { return "drain: " + e.status }

// checkEveryUEOnce fails t unless every step of res passed for all ues,
// every UE registered exactly once, and no gNB saw anything of the change
// of unit.
func checkEveryUEOnce(t *testing.T, res *sim.Result, ues int) {
	t.Helper()
	for _, st := range res.Steps {
		if st.OK != ues || st.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed, %d skipped", st.Step, st.OK, st.Failed, st.Skipped)
		}
	}
	for _, sum := range res.Summaries {
		switch sum.Procedure {
		case ue.ProcRegistration:
			if sum.Count != ues || sum.Failures != 0 {
				t.Errorf("%d registrations, %d failed: want each of the %d UEs registered once", sum.Count, sum.Failures, ues)
			}
		case ue.ProcReregistration, ue.ProcPeriodicRegistration:
			t.Errorf("%d %s", sum.Count, sum.Procedure)
		}
	}
	for _, g := range res.GNBs {
		if c := g.Counters; c.Reconnects != 0 || c.Resets != 0 || c.UnknownUE != 0 || c.ErrorIndications != 0 {
			t.Errorf("gNB %d saw the change of unit: %+v", g.ID, c)
		}
	}
}

// TestDrainDuringRegistrationStorm is drill (f) of issue 36 §6, a planned
// removal: the active unit is drained (tern drain) while UEs register.
// It stops taking messages, lets its steps in flight finish and leaves;
// its standby takes over and gets, through the front end, exactly the
// messages the drained unit did not handle. No UE fails or registers
// twice, and, unlike a SIGKILL, nothing is handled twice: no gNB gets an
// Error Indication.
func TestDrainDuringRegistrationStorm(t *testing.T) {
	const ues, drainAfter = 50, 8
	cfg := testConfig(t, ues)
	s, took, _ := supervise(t, cfg)
	first := s.ActivePID()

	// The drain request goes from another goroutine: the unit answers it
	// while the UEs' procedures (and this hook) go on.
	drained := make(chan error, 1)
	drain := atNth(ue.ProcRegistration, drainAfter, func() error {
		go func() { drained <- drainVia(cfg.Operator.Socket) }()
		return nil
	})
	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs, simCfg.Concurrency = 2, ues, 10
	simCfg.Timeout = 20 * time.Second
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepRelease, sim.StepDeregister}
	simCfg.OnProcedure = drain.observe
	res, err := sim.Run(context.Background(), simCfg)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	drain.wait(t)
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
	checkEveryUEOnce(t, res, ues)
	select {
	case tk := <-took:
		t.Logf("drained: the standby served %v after the drained unit left; %d UEs, %d refused", tk.Restore, tk.UEs, tk.Refused)
		if tk.Refused != 0 {
			t.Errorf("%d records refused", tk.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover after the drain")
	}
	if s.ActivePID() == first {
		t.Error("the drained unit is still the active one")
	}
}

// TestBothUnitsDie: the standby dies in the middle of its takeover (it is
// stopped, then the active unit and it are SIGKILLed). The supervisor
// starts a unit that takes over at once from the last active unit's
// store, which outlives both, and the UEs go on as if nothing happened.
func TestBothUnitsDie(t *testing.T) {
	const ues = 10
	cfg := testConfig(t, ues)
	s, took, _ := supervise(t, cfg)

	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs, simCfg.Concurrency = 1, ues, 5
	simCfg.Timeout = 20 * time.Second
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepRelease, sim.StepDeregister}
	steps := 0
	simCfg.AfterStep = func(sim.StepResult) {
		if steps++; steps != 3 { // after idle
			return
		}
		standby := s.StandbyPID()
		if standby == 0 {
			t.Error("no standby")
			return
		}
		syscall.Kill(standby, syscall.SIGSTOP)
		syscall.Kill(s.ActivePID(), syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
		syscall.Kill(standby, syscall.SIGKILL)
		syscall.Kill(standby, syscall.SIGCONT)
	}
	res, err := sim.Run(context.Background(), simCfg)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	checkEveryUEOnce(t, res, ues)
	select {
	case tk := <-took:
		if tk.UEs != ues {
			t.Errorf("the unit that took over restored %d UEs, want %d", tk.UEs, ues)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover")
	}
}
