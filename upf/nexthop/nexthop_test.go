package nexthop_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tern5g/tern/upf/nexthop"
)

func sh(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if out, err := exec.Command("sh", "-c", c).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

// The cache resolves an address on link and one behind a gateway from the
// kernel's tables, follows a changed neighbour, and forgets one the
// kernel no longer has.
func TestCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	ns := fmt.Sprintf("tern-nh-%d", os.Getpid())
	sh(t, "ip netns add "+ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip := "ip -n " + ns + " "
	sh(t,
		ip+"link add nha mtu 1400 address 02:00:00:00:00:01 type veth peer name nhb",
		ip+"addr add 10.9.0.1/24 dev nha", ip+"link set nha up", ip+"link set nhb up",
		ip+"neigh add 10.9.0.2 lladdr 02:00:00:00:00:02 dev nha nud permanent",
		ip+"route add 192.0.2.0/24 via 10.9.0.2",
	)
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	changes := make(chan map[netip.Addr]nexthop.Hop, 100)
	c := nexthop.New(nl, nil, func(m map[netip.Addr]nexthop.Hop) { changes <- m })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()

	gw, far := netip.MustParseAddr("10.9.0.2"), netip.MustParseAddr("192.0.2.7")
	wait := func(a netip.Addr, mac string) nexthop.Hop {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			h, ok := c.Lookup(a)
			if ok && fmt.Sprintf("%x", h.MAC) == mac || !ok && mac == "" {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v: got %+v (%v), want MAC %q", a, h, ok, mac)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	h1 := wait(gw, "020000000002")
	if h1.MTU != 1400 || fmt.Sprintf("%x", h1.SrcMAC) != "020000000001" || h1.Ifindex == 0 {
		t.Fatalf("hop %+v", h1)
	}
	if h2 := wait(far, "020000000002"); h2 != h1 {
		t.Fatalf("behind the gateway %+v, want the gateway's %+v", h2, h1)
	}
	sh(t, ip+"neigh replace 10.9.0.2 lladdr 02:00:00:00:00:09 dev nha nud permanent")
	wait(gw, "020000000009")
	sh(t, ip+"neigh del 10.9.0.2 dev nha")
	wait(gw, "")
	if len(changes) == 0 {
		t.Error("no change published")
	}
}
