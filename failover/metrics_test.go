package failover

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/sim"
)

// TestSupervisorMetrics: the supervisor serves its UPF's and its front
// end's metrics on upf.metricsAddress, and counts a takeover.
func TestSupervisorMetrics(t *testing.T) {
	cfg := testConfig(t, 2)
	port, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.UPF.MetricsAddress = fmt.Sprintf("127.0.0.1:%d", port)
	s, took, _ := supervise(t, cfg)
	scrape := func() string {
		r, err := http.Get("http://" + cfg.UPF.MetricsAddress + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	for _, want := range []string{"tern_n2front_unit_active 1", "tern_failover_takeovers_total 0", "tern_upf_pfcp_associations 1"} {
		if m := scrape(); !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	simCfg := sim.DefaultConfig()
	simCfg.AMFAddr, simCfg.Transport = s.N2Addr(), cfg.AMF.SCTP
	simCfg.GNBs, simCfg.UEs = 1, 2
	simCfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepDeregister}
	killed := false
	simCfg.AfterStep = func(sim.StepResult) {
		if killed {
			return
		}
		killed = true
		if err := syscall.Kill(s.ActivePID(), syscall.SIGKILL); err != nil {
			t.Error(err)
		}
	}
	if _, err := sim.Run(context.Background(), simCfg); err != nil {
		t.Fatal(err)
	}
	select {
	case <-took:
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover")
	}
	m := scrape()
	for _, want := range []string{"tern_failover_takeovers_total 1", "tern_n2front_epoch 2", "tern_n2front_unit_active 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("after the takeover, metrics lack %q", want)
		}
	}
}
