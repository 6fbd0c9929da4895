package main

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sim"
)

// TestNoDownlinkReason: against a core on loopback, a data target no
// interface here holds (a UPF without N6) means uplink-only; one that an
// interface holds, or a core elsewhere, does not.
func TestNoDownlinkReason(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.DataTarget = netip.MustParseAddr("192.0.2.77") // TEST-NET-1: on no interface
	if r := noDownlinkReason(cfg); !strings.Contains(r, "192.0.2.77") || !strings.Contains(r, "root") {
		t.Errorf("target on no interface: reason %q", r)
	}
	cfg.DataTarget = netip.MustParseAddr("127.0.0.1")
	if r := noDownlinkReason(cfg); r != "" {
		t.Errorf("target on lo: reason %q, want none", r)
	}
	cfg.DataTarget = netip.MustParseAddr("192.0.2.77")
	cfg.AMFAddr = "192.0.2.1:38412"
	if r := noDownlinkReason(cfg); r != "" {
		t.Errorf("remote core: reason %q, want none", r)
	}
}

// TestLoopbackN3Addrs: every gNB of `tern sim` gets an N3 address of its
// own with the GTP-U port, clear of the UPF's 127.0.0.1:2152.
func TestLoopbackN3Addrs(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range sim.LoopbackN3Addrs(300) {
		ap := netip.MustParseAddrPort(a)
		if seen[a] || ap.Port() != 2152 || !ap.Addr().IsLoopback() || ap.Addr() == netip.MustParseAddr("127.0.0.1") {
			t.Fatalf("address %s (duplicate %v)", a, seen[a])
		}
		seen[a] = true
	}
}

// TestHeldSessionsReadyLine: the hold's ready line lists the sessions the
// simulator reported, each UE's in establishment order, with their TUN
// devices in TUN mode and without one otherwise (issue 37: without --tun
// the line gave no address).
func TestHeldSessionsReadyLine(t *testing.T) {
	held := &heldSessions{}
	held.add("imsi-1", sim.SessionOutcome{DNN: "internet", Address: "10.60.0.2", TUN: "uesimtun0"})
	held.add("imsi-2", sim.SessionOutcome{DNN: "internet", Address: "10.60.0.3", TUN: "uesimtun1"})
	held.add("imsi-1", sim.SessionOutcome{DNN: "ims", Address: "10.61.0.2", TUN: "uesimtun2"})
	got := held.readyLine()
	want := "tern sim ready: 3 PDU sessions held (SIGINT or SIGTERM releases them): " +
		"imsi-1 internet 10.60.0.2 uesimtun0, imsi-1 ims 10.61.0.2 uesimtun2, imsi-2 internet 10.60.0.3 uesimtun1"
	if got != want {
		t.Errorf("ready line\n got %s\nwant %s", got, want)
	}
	var out strings.Builder
	held = &heldSessions{out: &out}
	held.add("imsi-1", sim.SessionOutcome{DNN: "internet", Address: "10.60.0.2"})
	if got, want := out.String(), "tern sim: PDU session up: imsi-1 internet 10.60.0.2\n"; got != want {
		t.Errorf("session printed as %q, want %q", got, want)
	}
	held.add("imsi-2", sim.SessionOutcome{DNN: "ims", Address: "10.61.0.3"})
	got = held.readyLine()
	want = "tern sim ready: 2 PDU sessions held (SIGINT or SIGTERM releases them): imsi-1 internet 10.60.0.2, imsi-2 ims 10.61.0.3"
	if got != want {
		t.Errorf("ready line without TUN devices\n got %s\nwant %s", got, want)
	}
}

// TestNetworkDeregistrationPrinted: tern sim says when the network
// deregisters a UE, with the 5GMM cause by name (issue 37: it was
// silent).
func TestNetworkDeregistrationPrinted(t *testing.T) {
	var out strings.Builder
	p := printNetworkDeregistration(&out)
	p("imsi-208930000000001", nas.Cause5GSServicesNotAllowed, false)
	p("imsi-208930000000002", 0, true)
	want := "tern sim: imsi-208930000000001 deregistered by the network, 5GMM cause #7 5GS services not allowed; it does not register again\n" +
		"tern sim: imsi-208930000000002 deregistered by the network, no cause given; it registers again\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
