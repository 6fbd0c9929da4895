package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/lab"
)

// TestLabConfig: --lab puts N2, N3 and the SMF's view of the UPF on the
// lab's core address, over SCTP over UDP, with N6 TUNs the lab routes, and
// the result validates.
func TestLabConfig(t *testing.T) {
	cfg := config.Default()
	if err := labConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("lab config does not validate: %v", err)
	}
	core := lab.CoreN3.String()
	if cfg.AMF.N2Address != core+":38412" || cfg.AMF.SCTP.Transport != "udp" || cfg.UPF.N3Addr != core+":2152" || cfg.UPF.NoN6 {
		t.Errorf("lab config: n2 %s (%s), n3 %s, noN6 %v", cfg.AMF.N2Address, cfg.AMF.SCTP.Transport, cfg.UPF.N3Addr, cfg.UPF.NoN6)
	}
	if cfg.SMF.UPFs[0].N3 != core {
		t.Errorf("smf.upfs[0].n3 = %s, want %s", cfg.SMF.UPFs[0].N3, core)
	}
	for _, n := range cfg.UPF.N6 {
		if n.TUN != lab.TUN(n.DNN) {
			t.Errorf("N6 of %s on %q; the lab routes %q", n.DNN, n.TUN, lab.TUN(n.DNN))
		}
	}
	// The defaults themselves are untouched (the SMF's UPF list is copied).
	if config.Default().SMF.UPFs[0].N3 == core {
		t.Error("labConfig changed the defaults' smf.upfs")
	}
}

// TestSessionTapReadyLine: the hold's ready line lists the sessions the
// simulator logged, each UE's in the order of the DNNs, and the tap still
// passes records on at the inner handler's level.
func TestSessionTapReadyLine(t *testing.T) {
	var logged strings.Builder
	tap := &sessionTap{inner: slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}), list: &heldSessions{}}
	log := slog.New(tap)
	log.Info("session tun up", "supi", "imsi-1", "dev", "uesimtun0", "addr", "10.60.0.2")
	log.With("supi", "imsi-2").Info("session tun up", "dev", "uesimtun1", "addr", "10.60.0.3")
	log.Info("session tun up", "supi", "imsi-1", "dev", "uesimtun2", "addr", "10.61.0.2")
	log.Info("step done")
	log.Warn("something")
	got := tap.list.readyLine([]string{"internet", "ims"}, true)
	want := "tern sim ready: 3 PDU sessions held (SIGINT or SIGTERM releases them): " +
		"imsi-1 internet 10.60.0.2 uesimtun0, imsi-1 ims 10.61.0.2 uesimtun2, imsi-2 internet 10.60.0.3 uesimtun1"
	if got != want {
		t.Errorf("ready line\n got %s\nwant %s", got, want)
	}
	if s := logged.String(); strings.Contains(s, "session tun up") || !strings.Contains(s, "something") {
		t.Errorf("inner handler got:\n%s", s)
	}
}
