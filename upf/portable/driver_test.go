package portable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/portable"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

func newPipeline(t *testing.T, netInst ...string) *upfu.Pipeline {
	t.Helper()
	p, err := upfu.New(upfu.Config{N3Addr: netip.MustParseAddr("127.0.0.1"), NetworkInstances: netInst}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func listenUDP(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readUDP(t *testing.T, c *net.UDPConn) ([]byte, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n], from
}

// startN3 runs a driver with N3 only (no privileges needed) on loopback.
func startN3(t *testing.T) *portable.Driver {
	t.Helper()
	d, err := portable.Open(portable.Config{N3: "127.0.0.1:0"}, newPipeline(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		d.Close()
	})
	d.Start(ctx)
	return d
}

// N3 alone needs no privileges: Echo over a real socket, batched.
func TestN3Echo(t *testing.T) {
	d := startN3(t)
	gnb := listenUDP(t, "127.0.0.1:0")
	to := net.UDPAddrFromAddrPort(d.N3Addr())
	for seq := range uint16(3) {
		if _, err := gnb.WriteToUDP(gtpu.AppendEchoRequest(nil, seq), to); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range uint16(3) {
		b, from := readUDP(t, gnb)
		var h gtpu.Header
		if err := gtpu.Parse(b, &h); err != nil || h.Type != gtpu.TypeEchoResponse || h.Seq != seq {
			t.Fatalf("reply %x: %+v %v", b, h, err)
		}
		if from != d.N3Addr() {
			t.Errorf("reply from %v", from)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := d.Stats(); st.N3Rx != 3 || st.N3Tx != 3; st = d.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

func ipv4UDP(src, dst netip.AddrPort, payload []byte) []byte {
	return ipv4pkt.AppendUDP(nil, src.Addr(), dst.Addr(), src.Port(), dst.Port(), payload)
}

// Both directions through a real TUN and a real N3 socket: a gNB socket
// sends an uplink G-PDU whose inner UDP datagram reaches a local "DN"
// socket via the TUN; the DN socket's answer comes back through the TUN
// and arrives at the gNB as a DL G-PDU with a PDU Session Container.
func TestTUNBothWays(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN")
	}
	tun := fmt.Sprintf("terntst%d", os.Getpid()%100000)
	pool := netip.MustParsePrefix("10.211.0.0/24")
	dnAddr := netip.MustParseAddr("10.212.0.1")
	ue := netip.MustParseAddrPort("10.211.0.5:40000")
	p := newPipeline(t, "internet")
	d, err := portable.Open(portable.Config{N3: "127.0.0.1:0", N6: []portable.N6{{TUN: tun, Pool: pool, MTU: 1400}}}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p.SetSink(d)
	link, err := netlink.LinkByName(tun)
	if err != nil {
		t.Fatal(err)
	}
	if link.Attrs().MTU != 1400 {
		t.Errorf("MTU %d", link.Attrs().MTU)
	}
	// The test's DN endpoint: an address on the TUN itself.
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: dnAddr.AsSlice(), Mask: net.CIDRMask(32, 32)}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Start(ctx)

	gnb := listenUDP(t, "127.0.0.1:0")
	dn := listenUDP(t, netip.AddrPortFrom(dnAddr, 0).String())
	dnAP := dn.LocalAddr().(*net.UDPAddr).AddrPort()

	ulc, _ := classify.NewLinear([]classify.Rule{{ID: 0, Has: classify.FieldSourceInterface | classify.FieldTEID, TEID: 0x10}})
	dlc, _ := classify.NewLinear([]classify.Rule{{ID: 1, Has: classify.FieldSourceInterface, SourceInterface: 1,
		UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ue.Addr(), 32))}})
	gnbAP := gnb.LocalAddr().(*net.UDPAddr).AddrPort()
	p.Install(&rules.Session{SEID: 1, UEIPv4: ue.Addr(), TEIDs: []uint32{0x10}, Uplink: ulc, Downlink: dlc,
		PDRs: []*rules.PDR{
			{ID: 1, Source: rules.InterfaceAccess, RemoveOuterHeader: true,
				FAR: &rules.FAR{ID: 1, Action: rules.ActionForward, Dest: rules.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, Source: rules.InterfaceCore,
				FAR: &rules.FAR{ID: 2, Action: rules.ActionForward, Dest: rules.InterfaceAccess,
					Encap: &rules.Encap{TEID: 0x20, Peer: gnbAP, QFI: 1}}},
		}})

	ul := gtpu.AppendGPDU(nil, 0x10, 1, false, ipv4UDP(ue, dnAP, []byte("uplink hello")))
	if _, err := gnb.WriteToUDPAddrPort(ul, d.N3Addr()); err != nil {
		t.Fatal(err)
	}
	got, from := readUDP(t, dn)
	if string(got) != "uplink hello" || from != ue {
		t.Fatalf("DN got %q from %v; driver %+v pipeline %+v", got, from, d.Stats(), p.Stats())
	}
	if _, err := dn.WriteToUDPAddrPort([]byte("downlink hello"), ue); err != nil {
		t.Fatal(err)
	}
	b, _ := readUDP(t, gnb)
	var h gtpu.Header
	if err := gtpu.Parse(b, &h); err != nil {
		t.Fatal(err)
	}
	if h.TEID != 0x20 || h.QFI != 1 || h.PDUType != gtpu.PDUTypeDL {
		t.Errorf("DL header %+v", h)
	}
	inner := h.Payload(b)
	if len(inner) < 28 || !bytes.Equal(inner[28:], []byte("downlink hello")) {
		t.Errorf("DL inner %x", inner)
	}
	// The counters are updated after the send returns.
	deadline := time.Now().Add(5 * time.Second)
	for st := d.Stats(); st.N6Rx < 1 || st.N6Tx != 1 || st.N3Tx < 1; st = d.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("driver stats %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

// The driver allocates nothing per packet (issue 3: "no allocation per
// packet"): an echo costs one recvmmsg and one sendmmsg, on preallocated
// headers and buffers. The test's own socket calls allocate nothing either,
// so any allocation counted here is the driver's.
func TestN3AllocatesNothingPerPacket(t *testing.T) {
	d := startN3(t)
	gnb := listenUDP(t, "127.0.0.1:0")
	req := gtpu.AppendEchoRequest(nil, 7)
	buf := make([]byte, 2048)
	echo := func() {
		if _, err := gnb.WriteToUDPAddrPort(req, d.N3Addr()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := gnb.ReadFromUDPAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	gnb.SetReadDeadline(time.Now().Add(10 * time.Second))
	echo() // warm-up: goroutines parked in the poller, pools filled
	if a := testing.AllocsPerRun(500, echo); a > 0.1 {
		t.Errorf("%.2f allocations per echo, want 0", a)
	}
}

// TestPoolRoutedElsewhere: a second UPF whose UE pool another UPF's N6
// device has, whole or in part, refuses to start and names the pool, the
// device and the process holding it; the first keeps its route (issue 37:
// a second `tern up` with the same pools took the first one's routes over
// and, exiting, took them away). A pool inside a wider route through a
// gateway is the usual case and starts.
func TestPoolRoutedElsewhere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN devices and a network namespace")
	}
	// A namespace of its own for this goroutine's thread, which is never
	// unlocked: Go discards it, and the namespace with it, at the end.
	runtime.LockOSThread()
	ns, err := netns.New()
	if err != nil {
		t.Skip(err)
	}
	defer ns.Close()
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	pool := netip.MustParsePrefix("10.60.0.0/16")
	open := func(tun, pool string) (*portable.Driver, error) {
		d, err := portable.Open(portable.Config{N3: "127.0.0.1:0", N6: []portable.N6{{TUN: tun, Pool: netip.MustParsePrefix(pool)}}},
			newPipeline(t, "internet"), nil)
		if err == nil {
			t.Cleanup(func() { d.Close() })
		}
		return d, err
	}
	if _, err := open("tern-first", pool.String()); err != nil {
		t.Fatal(err)
	}
	routedTo := func(p netip.Prefix) string {
		t.Helper()
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}, netlink.RT_FILTER_DST)
		if err != nil || len(rs) != 1 {
			t.Fatalf("routes to %s: %+v %v", p, rs, err)
		}
		l, err := netlink.LinkByIndex(rs[0].LinkIndex)
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Name
	}
	for _, p := range []string{"10.60.0.0/16", "10.60.4.0/24", "10.0.0.0/8"} {
		_, err := open("tern-second", p)
		var inUse *portable.PoolInUseError
		if !errors.As(err, &inUse) {
			t.Fatalf("second UPF with pool %s: %v; want it refused", p, err)
		}
		msg := err.Error()
		for _, want := range []string{p, "tern-first", fmt.Sprintf("process %d (", os.Getpid())} {
			if !strings.Contains(msg, want) {
				t.Errorf("pool %s refused with %q: no %q in it", p, msg, want)
			}
		}
		if dev := routedTo(pool); dev != "tern-first" {
			t.Fatalf("after the second UPF with pool %s, %s goes to %s", p, pool, dev)
		}
	}
	// The same device name: the kernel gives a TUN device one holder, and
	// the second UPF is told whose it is.
	_, err = open("tern-first", "10.63.0.0/16")
	var busy *portable.DeviceInUseError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), fmt.Sprintf("process %d (", os.Getpid())) {
		t.Fatalf("second UPF with device tern-first: %v; want it refused naming this process", err)
	}
	if dev := routedTo(pool); dev != "tern-first" {
		t.Fatalf("after the second UPF with device tern-first, %s goes to %s", pool, dev)
	}
	// A pool inside a network reached through a gateway, beside the first.
	lan := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "tern-lan"}, PeerName: "tern-lan-peer"}
	if err := netlink.LinkAdd(lan); err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(lan, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 168, 9, 1), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(lan); err != nil {
		t.Fatal(err)
	}
	wide := &netlink.Route{Dst: &net.IPNet{IP: net.IPv4(10, 0, 0, 0), Mask: net.CIDRMask(8, 32)}, Gw: net.IPv4(192, 168, 9, 2)}
	if err := netlink.RouteAdd(wide); err != nil {
		t.Fatal(err)
	}
	if _, err := open("tern-second", "10.62.0.0/16"); err != nil {
		t.Fatalf("a pool of its own: %v", err)
	}
	if dev := routedTo(netip.MustParsePrefix("10.62.0.0/16")); dev != "tern-second" {
		t.Errorf("10.62.0.0/16 goes to %s", dev)
	}
	if dev := routedTo(pool); dev != "tern-first" {
		t.Errorf("%s goes to %s", pool, dev)
	}
}
