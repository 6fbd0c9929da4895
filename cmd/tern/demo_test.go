package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/tern5g/tern/upf"
)

// demoBesideEnv marks the test binary that TestDemoBesideACore re-runs in
// a network namespace of its own.
const demoBesideEnv = "TERN_TEST_DEMO_BESIDE_CORE"

// TestDemoBesideACore: `tern demo` runs beside what a `tern up` with the
// defaults and a `tern sim` hold (issue 37: the demo bound 127.0.0.1:2152
// and :8805 and the gNBs' 127.0.1.x:2152 whatever ran beside it). As root
// it runs in a namespace of its own beside a UPF with `tern up`'s
// defaults, N6 devices and pool routes included, and that UPF keeps its
// routes; otherwise beside the sockets only.
func TestDemoBesideACore(t *testing.T) {
	inNS := os.Getenv(demoBesideEnv) != ""
	if os.Geteuid() == 0 && !inNS {
		besideInNamespace(t)
		return
	}
	// What `tern up` (N3, and N4 when run with a PFCP UPF) and `tern
	// sim` with two gNBs hold.
	for _, a := range []string{"127.0.0.1:8805", "127.0.0.2:8805", "127.0.0.1:2152", "127.0.1.1:2152", "127.0.1.2:2152"} {
		if inNS && a == "127.0.0.1:2152" {
			continue // the UPF's, below
		}
		holdUDP(t, a)
	}
	if inNS {
		u, err := upf.New(upf.Config{Driver: upf.DriverPortable, N3Addr: "127.0.0.1:2152", N6: upf.DefaultConfig().N6}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := u.Start(ctx); err != nil {
			t.Fatalf("the core beside the demo: %v", err)
		}
		defer u.Close()
	}
	if err := runDemo([]string{"--ues", "2", "--gnbs", "2", "--capture", filepath.Join(t.TempDir(), "demo.pcap")}); err != nil {
		t.Fatalf("tern demo beside a core: %v", err)
	}
	if !inNS {
		return
	}
	for _, n := range upf.DefaultConfig().N6 {
		p := netip.MustParsePrefix(n.Pool)
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}, netlink.RT_FILTER_DST)
		if err != nil || len(rs) != 1 {
			t.Fatalf("the core's route to %s after the demo: %+v %v", p, rs, err)
		}
		if l, err := netlink.LinkByIndex(rs[0].LinkIndex); err != nil || l.Attrs().Name != n.TUN {
			t.Errorf("the core's route to %s goes to %v after the demo, want %s (%v)", p, l, n.TUN, err)
		}
	}
}

// holdUDP binds addr for the rest of the test; an address some other
// process holds already is held all the same.
func holdUDP(t *testing.T, addr string) {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if errors.Is(err, syscall.EADDRINUSE) {
		return
	}
	if err != nil {
		t.Fatalf("hold %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
}

// besideInNamespace re-runs TestDemoBesideACore in a network namespace of
// its own, where it may start a UPF with `tern up`'s defaults.
func besideInNamespace(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) for a network namespace")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	ns := "tern-demo-" + strconv.Itoa(os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, exe, "-test.run", "^TestDemoBesideACore$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), demoBesideEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in namespace %s: %v\n%s", ns, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestDemoBesideACore") {
		t.Fatalf("did not run in namespace %s:\n%s", ns, out)
	}
	if testing.Verbose() {
		t.Logf("in namespace %s:\n%s", ns, out)
	}
}
