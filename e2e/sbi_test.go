package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/sbi/openapitest"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/store"
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

// TestSBIConformance validates every SBI request the NFs send and every
// answer they give, during registrations, sessions, idle mode, paging
// and deregistration over the HTTP/2 binding, against the 3GPP OpenAPI
// files (shared/openapi).
func TestSBIConformance(t *testing.T) {
	v, err := openapitest.Load(openapitest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	var rec *openapitest.Recorder
	const ues = 4
	c := startCore(t, ues, func(cfg *config.Config) {
		cfg.SBI.Binding = config.BindingHTTP
		cfg.Store.FollowInterval = 10 * time.Millisecond
	}, core.WithSBITransport(func(base http.RoundTripper) http.RoundTripper {
		rec = v.Transport(t, base)
		// Departures documented in sbi/ops: fixed callback paths.
		rec.ExpectCallback("/tern-sdm-callback/v1/", "nudm-sdm", "Subscribe/datachangeNotification")
		rec.ExpectCallback("/tern-udr-callback/v1/data-change", "nudr-dr", "SubscriptionDataSubscriptions/onDataChange")
		rec.Skip("/tern-allocate-sqn") // tern's own operation: no 3GPP file describes it
		return rec
	}))
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 1, ues, 2
	cfg.Timeout = 20 * time.Second
	cfg.DNNs = []string{"internet", "ims"}
	cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepRelease, sim.StepSession}
	runSim(t, cfg, ues)

	// The network's own procedures: a policy change and a policy
	// termination from the PCF, a changed and a deleted subscription.
	ctx := context.Background()
	subs := store.DefaultSubscribers(ues)
	if err := c.PCF.UpdatePolicy(ctx, subs[0].SUPI, 1, pcf.Change{FiveQI: 8}); err != nil {
		t.Errorf("policy update: %v", err)
	}
	if err := c.PCF.Terminate(ctx, subs[1].SUPI, 1, ""); err != nil {
		t.Errorf("policy termination: %v", err)
	}
	changed := subs[2]
	changed.UEAMBR = store.AMBR{Uplink: "50 Mbps", Downlink: "100 Mbps"}
	if err := c.Store().Put(changed); err != nil {
		t.Fatal(err)
	}
	if err := c.Store().Delete(subs[3].SUPI); err != nil {
		t.Fatal(err)
	}
	want := []string{"3GppRegistration/deregistrationNotification", "Subscribe/datachangeNotification",
		"CreateSMPolicy/SmPolicyUpdateNotification", "CreateSMPolicy/SmPolicyControlTerminationRequestNotification",
		"SubscriptionDataSubscriptions/onDataChange", "N1N2MessageTransfer", "PostSmContexts/smContextStatusNotification"}
	if err := poll.Until(ctx, 5*time.Second, 5*time.Millisecond, func() bool {
		seen := map[string]bool{}
		for _, op := range rec.Operations() {
			seen[op] = true
		}
		for _, w := range want {
			if !seen[w] {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("operations validated: %v; want all of %v", rec.Operations(), want)
	}
	t.Logf("validated %d operations: %v", len(rec.Operations()), rec.Operations())
}
