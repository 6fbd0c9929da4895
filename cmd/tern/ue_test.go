package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/store"
)

// startTestCore runs a core unit on a store in a temporary directory, on
// free ports and without TUN devices, serving the operator API on the
// socket `tern up` would use. It returns the core and its store's path.
func startTestCore(t *testing.T, subscribers int) (*core.Core, config.Config) {
	t.Helper()
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	cfg.Store.DemoSubscribers = subscribers
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, port
	cfg.UPF.N3Addr, cfg.UPF.NoN6 = "127.0.0.1:0", true
	c, err := core.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	op, err := core.ServeOperator(core.OperatorSocket(cfg), c.OperatorHandler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close() })
	return c, cfg
}

// TestUEListAndShow: tern ue list and tern ue show, found from the core's
// --store alone, give the registered UEs' state, RAN leg and sessions with
// the addresses the UEs were given; an unknown SUPI exits 1, saying so.
func TestUEListAndShow(t *testing.T) {
	c, cfg := startTestCore(t, 2)
	db := cfg.Store.Path
	scfg := sim.DefaultConfig()
	scfg.AMFAddr, scfg.Transport = c.N2Addr(), cfg.AMF.SCTP
	scfg.GNBs, scfg.UEs, scfg.Concurrency = 1, 2, 2
	scfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession}
	scfg.DNNs = []string{"internet"}
	scfg.Timeout = 20 * time.Second
	var mu sync.Mutex
	addr := map[string]string{} // SUPI -> the UE's address
	scfg.OnSession = func(supi string, s sim.SessionOutcome) {
		mu.Lock()
		addr[supi] = s.Address
		mu.Unlock()
	}
	var list, showText, showJSON string
	var listErr, showErr, jsonErr error
	scfg.AfterStep = func(sr sim.StepResult) {
		if sr.Step != sim.StepSession {
			return
		}
		// The UEs are registered, connected and hold their sessions.
		var b strings.Builder
		listErr = ueCommand([]string{"list", "--store", db}, &b)
		list = b.String()
		b.Reset()
		showErr = ueCommand([]string{"show", store.DemoSUPI(1), "--store", db}, &b)
		showText = b.String()
		b.Reset()
		jsonErr = ueCommand([]string{"show", "--store", db, "--json", strings.TrimPrefix(store.DemoSUPI(2), "imsi-")}, &b)
		showJSON = b.String()
	}
	res, err := sim.Run(context.Background(), scfg)
	if err != nil || res.Failures() > 0 {
		t.Fatalf("sim: %v, %d failures", err, res.Failures())
	}
	if listErr != nil || showErr != nil || jsonErr != nil {
		t.Fatalf("ue list: %v; ue show: %v; ue show --json: %v", listErr, showErr, jsonErr)
	}
	t.Logf("tern ue list:\n%s\ntern ue show:\n%s", list, showText)

	for i, supi := range []string{store.DemoSUPI(1), store.DemoSUPI(2)} {
		line := lineOf(list, supi)
		if addr[supi] == "" || !strings.Contains(line, "REGISTERED") || !strings.Contains(line, "CONNECTED") ||
			!strings.Contains(line, "20893-000001") || !strings.Contains(line, "1:internet "+addr[supi]) {
			t.Errorf("UE %d: list line %q, want it registered, connected in TAI 20893-000001, with session 1:internet %s", i+1, line, addr[supi])
		}
	}
	if !strings.Contains(list, "2 UEs\n") {
		t.Errorf("list does not count 2 UEs:\n%s", list)
	}
	for _, want := range []string{"SUPI", store.DemoSUPI(1), "5g-guti-", "RM-REGISTERED, CM-CONNECTED, procedure none",
		"TAI 20893-000001", "connection context", addr[store.DemoSUPI(1)], "internet", "1-010203", "active", "ACTIVATED", cfg.UPF.Name} {
		if !strings.Contains(showText, want) {
			t.Errorf("ue show does not say %q:\n%s", want, showText)
		}
	}

	var v core.UEView
	if err := json.Unmarshal([]byte(showJSON), &v); err != nil {
		t.Fatalf("ue show --json: %v\n%s", err, showJSON)
	}
	if v.SUPI != store.DemoSUPI(2) || v.RMState != "RM-REGISTERED" || v.CMState != "CM-CONNECTED" || v.GUTI == "" ||
		v.RAN == nil || v.RAN.GNB == "" || v.RAN.RANUENGAPID == 0 || v.RAN.TAI != "20893-000001" || !v.SMF ||
		v.LastActivity == nil || len(v.Sessions) != 1 {
		t.Fatalf("ue show --json: %+v", v)
	}
	s := v.Sessions[0]
	if s.ID != 1 || s.DNN != "internet" || s.SNSSAI != "1-010203" || s.UEIP != addr[v.SUPI] || s.State != "active" ||
		s.UserPlane != "active" || s.UpCnxState != "ACTIVATED" || s.UPF != cfg.UPF.Name || s.SMContextRef == "" {
		t.Errorf("session %+v, want 1 internet %s active at %s", s, addr[v.SUPI], cfg.UPF.Name)
	}

	// An unknown SUPI: not found, exit 1.
	var out, errs strings.Builder
	if code := run([]string{"ue", "show", "imsi-208930000000099", "--store", db}, &out, &errs); code != 1 ||
		!strings.Contains(errs.String(), "no UE context for imsi-208930000000099") {
		t.Errorf("unknown SUPI: exit %d, stderr %q; want 1 and a not-found", code, errs.String())
	}
}

// lineOf returns the line of s that mentions what, or "".
func lineOf(s, what string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	return ""
}

// TestUECommandWithoutCore: with no core serving, tern ue names the socket
// it tried and how to start one; a missing SUPI is a usage error.
func TestUECommandWithoutCore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subscribers.db")
	sock := db + ".sock"
	var out, errs strings.Builder
	if code := run([]string{"ue", "list", "--store", db}, &out, &errs); code != 1 ||
		!strings.Contains(errs.String(), sock+" does not exist") || !strings.Contains(errs.String(), "up, or") {
		t.Errorf("no core: exit %d, stderr %q", code, errs.String())
	}
	errs.Reset()
	if code := run([]string{"ue", "show", "--store", db}, &out, &errs); code != 1 || !strings.Contains(errs.String(), "which UE?") {
		t.Errorf("show without a SUPI: exit %d, stderr %q", code, errs.String())
	}
	errs.Reset()
	if code := run([]string{"ue", "-h"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "ue list|show") {
		t.Errorf("ue -h: exit %d, stdout %q", code, out.String())
	}
}
