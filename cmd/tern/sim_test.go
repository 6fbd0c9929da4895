package main

import (
	"net/netip"
	"strings"
	"testing"

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
