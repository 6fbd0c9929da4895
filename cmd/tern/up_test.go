package main

import (
	"testing"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/sim"
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

// TestHeldSessionsReadyLine: the hold's ready line lists the sessions the
// simulator reported, each UE's in establishment order.
func TestHeldSessionsReadyLine(t *testing.T) {
	held := &heldSessions{}
	held.add("imsi-1", sim.SessionOutcome{DNN: "internet", Address: "10.60.0.2", TUN: "uesimtun0"})
	held.add("imsi-2", sim.SessionOutcome{DNN: "internet", Address: "10.60.0.3", TUN: "uesimtun1"})
	held.add("imsi-1", sim.SessionOutcome{DNN: "ims", Address: "10.61.0.2", TUN: "uesimtun2"})
	got := held.readyLine(true)
	want := "tern sim ready: 3 PDU sessions held (SIGINT or SIGTERM releases them): " +
		"imsi-1 internet 10.60.0.2 uesimtun0, imsi-1 ims 10.61.0.2 uesimtun2, imsi-2 internet 10.60.0.3 uesimtun1"
	if got != want {
		t.Errorf("ready line\n got %s\nwant %s", got, want)
	}
}
