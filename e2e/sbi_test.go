package e2e

import (
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/sim"
)

// TestOverHTTPBinding runs the whole UE life over the HTTP/2 binding: every
// NF of the unit serves its SBI on its own loopback server, and every call
// between NFs, callbacks included, is an HTTP/2 request. Registration,
// sessions, idle and service request (paging: N1N2MessageTransfer and its
// callbacks), release and deregistration behave as in-process, and nothing
// is left behind.
func TestOverHTTPBinding(t *testing.T) { overBinding(t, config.BindingHTTP) }

// TestOverShmBinding is the same over the shared-memory binding.
func TestOverShmBinding(t *testing.T) { overBinding(t, config.BindingShm) }

func overBinding(t *testing.T, binding string) {
	const ues = 20
	c := startCore(t, ues, func(cfg *config.Config) { cfg.SBI.Binding = binding })
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 2, ues, 8
	cfg.Timeout = 20 * time.Second
	cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepRelease,
		sim.StepSession, sim.StepDeregister}
	runSim(t, cfg, ues)
	st := waitIdle(t, c.Core)
	if st.SMF.Established != 2*ues || st.SMF.Released != 2*ues {
		t.Errorf("SMF: %d established, %d released; want %d each", st.SMF.Established, st.SMF.Released, 2*ues)
	}
	if s := leftovers(st); s != "" {
		t.Errorf("left behind:%s", s)
	}
}
