//go:build linux

package afxdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

var (
	ueIP   = netip.MustParseAddr("10.60.0.1")
	uePool = netip.MustParsePrefix("10.60.0.0/16")
	gnbIP  = netip.MustParseAddr("10.100.3.1")
	n3IP   = netip.MustParseAddr("10.100.3.2")
	n6IP   = netip.MustParseAddr("10.100.6.1")
	dnIP   = netip.MustParseAddr("10.100.6.2")
	ulTEID = uint32(0x100)
	dlTEID = uint32(0x200)
	qfi    = uint8(9)
)

const (
	macRAN = "02:00:00:00:01:01"
	macN3  = "02:00:00:00:01:02"
	macN6  = "02:00:00:00:02:01"
	macDN  = "02:00:00:00:02:02"
)

var nsSeq atomic.Int32

// topo is the test topology: ran ns (r0) -- veth -- (n3) core ns (n6) --
// veth -- (d0) dn ns.
type topo struct {
	ran, core, dn string
}

func run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTopo builds the namespaces; static says whether the core knows its
// neighbours (else the kernel resolves them with ARP).
func newTopo(t testing.TB, queues int, static bool) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veth, XDP and AF_XDP")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	id := fmt.Sprintf("%d-%d", os.Getpid(), nsSeq.Add(1))
	tp := &topo{ran: "ran-" + id, core: "core-" + id, dn: "dn-" + id}
	for _, ns := range []string{tp.ran, tp.core, tp.dn} {
		run(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	q := fmt.Sprint(queues)
	run(t, "-n", tp.ran, "link", "add", "r0", "address", macRAN, "numtxqueues", q, "numrxqueues", q,
		"type", "veth", "peer", "name", "n3", "address", macN3, "netns", tp.core, "numtxqueues", q, "numrxqueues", q)
	run(t, "-n", tp.core, "link", "add", "n6", "address", macN6, "numtxqueues", q, "numrxqueues", q,
		"type", "veth", "peer", "name", "d0", "address", macDN, "netns", tp.dn, "numtxqueues", q, "numrxqueues", q)
	run(t, "-n", tp.ran, "addr", "add", "10.100.3.1/24", "dev", "r0")
	run(t, "-n", tp.core, "addr", "add", "10.100.3.2/24", "dev", "n3")
	run(t, "-n", tp.core, "addr", "add", "10.100.6.1/24", "dev", "n6")
	run(t, "-n", tp.dn, "addr", "add", "10.100.6.2/24", "dev", "d0")
	for _, l := range [][2]string{{tp.ran, "r0"}, {tp.core, "n3"}, {tp.core, "n6"}, {tp.dn, "d0"}, {tp.ran, "lo"}, {tp.core, "lo"}, {tp.dn, "lo"}} {
		run(t, "-n", l[0], "link", "set", l[1], "up")
	}
	run(t, "-n", tp.dn, "route", "add", uePool.String(), "via", n6IP.String())
	run(t, "-n", tp.ran, "neigh", "add", n3IP.String(), "lladdr", macN3, "dev", "r0", "nud", "permanent")
	run(t, "-n", tp.dn, "neigh", "add", n6IP.String(), "lladdr", macN6, "dev", "d0", "nud", "permanent")
	if static {
		run(t, "-n", tp.core, "neigh", "add", gnbIP.String(), "lladdr", macRAN, "dev", "n3", "nud", "permanent")
		run(t, "-n", tp.core, "neigh", "add", dnIP.String(), "lladdr", macDN, "dev", "n6", "nud", "permanent")
	}
	return tp
}

// in runs fn on a thread in network namespace ns.
func in(t testing.TB, ns string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// The thread is not unlocked: it dies with the goroutine
		// rather than go back to the pool in another namespace.
		h, e := netns.GetFromName(ns)
		if e != nil {
			err = e
			return
		}
		defer h.Close()
		if e := netns.Set(h); e != nil {
			err = e
			return
		}
		fn()
	}()
	<-done
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
}

func listenUDP(t testing.TB, ns string, addr netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	var err error
	in(t, ns, func() { c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr)) })
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

// session is a two-PDR session: uplink by TEID to "internet", downlink by
// UE address to the gNB.
func session(t testing.TB) *rules.Session {
	ul := &rules.PDR{ID: 1, Precedence: 100, Source: rules.InterfaceAccess, RemoveOuterHeader: true,
		FAR: &rules.FAR{ID: 1, Action: rules.ActionForward, Dest: rules.InterfaceCore, NetworkInstance: "internet"}}
	dl := &rules.PDR{ID: 2, Precedence: 100, Source: rules.InterfaceCore,
		FAR: &rules.FAR{ID: 2, Action: rules.ActionForward, Dest: rules.InterfaceAccess,
			Encap: &rules.Encap{TEID: dlTEID, Peer: netip.AddrPortFrom(gnbIP, 2152), QFI: qfi}}}
	ulr := []classify.Rule{{ID: 0, Precedence: 100,
		Has: classify.FieldSourceInterface | classify.FieldTEID, SourceInterface: 0, TEID: ulTEID}}
	dlr := []classify.Rule{{ID: 1, Precedence: 100,
		Has: classify.FieldSourceInterface, SourceInterface: 1, UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ueIP, 32))}}
	ulc, err := classify.NewLinear(ulr)
	if err != nil {
		t.Fatal(err)
	}
	dlc, err := classify.NewLinear(dlr)
	if err != nil {
		t.Fatal(err)
	}
	return &rules.Session{SEID: 42, CPSEID: 7, UEIPv4: ueIP, TEIDs: []uint32{ulTEID},
		PDRs: []*rules.PDR{ul, dl}, Uplink: ulc, Downlink: dlc, UplinkRules: ulr, DownlinkRules: dlr}
}

// startUPF runs a pipeline with the session and the driver in the core
// namespace.
func startUPF(t testing.TB, tp *topo, queues int) (*Driver, *upfu.Pipeline) {
	t.Helper()
	p, err := upfu.New(upfu.Config{N3Addr: n3IP, NetworkInstances: []string{"internet"}, EchoInterval: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Install(session(t))
	cfg := Config{N3Iface: "n3", N3Addr: n3IP, Queues: queues, Frames: 4096,
		N6: []N6{{NetworkInstance: "internet", Iface: "n6", Gateway: dnIP, Pool: uePool}}}
	var d *Driver
	in(t, tp.core, func() { d, err = Open(cfg, p, nil) })
	if err != nil {
		t.Skipf("AF_XDP driver refused: %v", err)
	}
	p.SetSink(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	d.Start(ctx)
	t.Cleanup(func() {
		cancel()
		<-done
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d, p
}

func payload(seq, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(seq))
	for i := 4; i < size; i++ {
		b[i] = byte(seq + i)
	}
	return b
}

func TestForwarding(t *testing.T) {
	for _, c := range []struct {
		name   string
		queues int
		static bool
	}{{"static", 1, true}, {"arp", 1, false}, {"queues2", 2, true}} {
		t.Run(c.name, func(t *testing.T) { testForwarding(t, c.queues, c.static) })
	}
}

func testForwarding(t *testing.T, queues int, static bool) {
	tp := newTopo(t, queues, static)
	d, p := startUPF(t, tp, queues)
	gnb := listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 2152))
	// More gNB-side sockets (other source ports, as several gNBs
	// would be): the veth spreads their flows over its queues.
	senders := []*net.UDPConn{gnb}
	for port := range uint16(3) {
		senders = append(senders, listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 3000+port)))
	}
	const srvPort = 9000
	srv := listenUDP(t, tp.dn, netip.AddrPortFrom(dnIP, srvPort))
	n3 := net.UDPAddrFromAddrPort(netip.AddrPortFrom(n3IP, 2152))
	const count = 2000

	// Uplink: GTP-U from the gNB, decapsulated to the DN server.
	go func() {
		for i := range count {
			// Several UE source ports: with 2 queues, the flows
			// spread over the veth's queues.
			inner := ipv4pkt.AppendUDP(nil, ueIP, dnIP, uint16(1000+i%8), srvPort, payload(i, 64+i%900))
			senders[i%len(senders)].WriteToUDP(gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner), n3)
			if i%64 == 63 {
				time.Sleep(time.Millisecond) // stay under the sockets' buffers
			}
		}
	}()
	buf := make([]byte, 4096)
	seen := make([]bool, count)
	got := 0
	srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	for got < count {
		n, from, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("uplink: %d of %d received: %v; driver %+v; pipeline %+v", got, count, err, d.Stats(), p.Stats())
		}
		seq := int(binary.BigEndian.Uint32(buf))
		if seq >= count || seen[seq] || !bytes.Equal(buf[:n], payload(seq, 64+seq%900)) || from.Addr() != ueIP {
			t.Fatalf("uplink: bad datagram seq %d (%d bytes) from %v", seq, n, from)
		}
		seen[seq] = true
		got++
	}

	// Downlink: the DN server to the UE, encapsulated to the gNB.
	ue := net.UDPAddrFromAddrPort(netip.AddrPortFrom(ueIP, 1000))
	go func() {
		for i := range count {
			srv.WriteToUDP(payload(i, 64+i%900), ue)
			if i%64 == 63 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	clear(seen)
	got = 0
	gnb.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h gtpu.Header
	for got < count {
		n, from, err := gnb.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("downlink: %d of %d received: %v; driver %+v; pipeline %+v", got, count, err, d.Stats(), p.Stats())
		}
		if from != netip.AddrPortFrom(n3IP, 2152) {
			t.Fatalf("downlink from %v", from)
		}
		if err := gtpu.Parse(buf[:n], &h); err != nil || h.TEID != dlTEID || h.QFI != qfi {
			t.Fatalf("downlink: GTP-U %+v: %v", h, err)
		}
		ip, err := ipv4pkt.ParseIPv4(h.Payload(buf[:n]))
		if err != nil {
			t.Fatal(err)
		}
		u, ok := ipv4pkt.ParseUDP(ip.Payload)
		if !ok || ip.Dst != ueIP || ip.Src != dnIP || u.DstPort != 1000 {
			t.Fatalf("downlink inner %+v", ip)
		}
		seq := int(binary.BigEndian.Uint32(u.Payload))
		if seq >= count || seen[seq] || !bytes.Equal(u.Payload, payload(seq, 64+seq%900)) {
			t.Fatalf("downlink: bad datagram seq %d", seq)
		}
		seen[seq] = true
		got++
	}
	// The workers publish a batch's counters after its kick: wait.
	st := waitStats(d, func(st Stats) bool {
		n3s, n6s := st.Ifaces[0], st.Ifaces[1]
		return n6s.Tx+n6s.Fallback >= count && n3s.Tx+n3s.Fallback >= count
	})
	n3s, n6s := st.Ifaces[0], st.Ifaces[1]
	t.Logf("N3 rx %d tx %d fallback %d per queue %v; N6 rx %d tx %d fallback %d per queue %v",
		n3s.Rx, n3s.Tx, n3s.Fallback, n3s.Queues, n6s.Rx, n6s.Tx, n6s.Fallback, n6s.Queues)
	if n3s.Rx < count || n6s.Tx+n6s.Fallback < count || n6s.Rx < count || n3s.Tx+n3s.Fallback < count {
		t.Errorf("counters: N3 %+v, N6 %+v", n3s, n6s)
	}
	// The first packets to a next hop the cache does not know yet go
	// through the kernel; the rest by AF_XDP.
	if n3s.Tx < count/2 || n6s.Tx < count/2 {
		t.Errorf("AF_XDP TX: N3 %d, N6 %d of %d", n3s.Tx, n6s.Tx, count)
	}
}

// TestCycles opens, starts and closes the driver many times on one
// topology: no descriptor or goroutine outlives Close, and the queues can
// be bound again at once.
func TestCycles(t *testing.T) {
	tp := newTopo(t, 1, true)
	p, err := upfu.New(upfu.Config{N3Addr: n3IP, NetworkInstances: []string{"internet"}, EchoInterval: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{N3Iface: "n3", N3Addr: n3IP, Frames: 512,
		N6: []N6{{NetworkInstance: "internet", Iface: "n6", Gateway: dnIP, Pool: uePool}}}
	cycle := func() {
		var d *Driver
		in(t, tp.core, func() { d, err = Open(cfg, p, nil) })
		if err != nil {
			t.Skipf("AF_XDP driver refused: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		d.Start(ctx)
		cancel()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // the runtime's own descriptors and threads settle
	time.Sleep(50 * time.Millisecond)
	fds0, g0 := countFDs(t), runtime.NumGoroutine()
	for range 20 {
		cycle()
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fds, g := countFDs(t), runtime.NumGoroutine(); fds > fds0 || g > g0 {
		t.Errorf("after 20 cycles: %d descriptors (were %d), %d goroutines (were %d)", fds, fds0, g, g0)
	}
	// Open with a missing interface fails cleanly.
	bad := cfg
	bad.N6 = []N6{{NetworkInstance: "internet", Iface: "nope", Gateway: dnIP, Pool: uePool}}
	in(t, tp.core, func() { _, err = Open(bad, p, nil) })
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("open with a missing interface: %v", err)
	}
	if fds := countFDs(t); fds > fds0 {
		t.Errorf("failed Open leaked descriptors: %d, were %d", fds, fds0)
	}
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSink sends the pipeline's own packets (Send: End Markers, drained
// buffers) through the kernel sockets.
func TestSink(t *testing.T) {
	tp := newTopo(t, 1, true)
	d, _ := startUPF(t, tp, 1)
	gnb := listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 2152))
	srv := listenUDP(t, tp.dn, netip.AddrPortFrom(dnIP, 9000))
	em := gtpu.AppendEndMarker(nil, dlTEID)
	inner := ipv4pkt.AppendUDP(nil, ueIP, dnIP, 1000, 9000, []byte("drained"))
	d.Send([]upfu.Packet{
		{Buf: em, Len: len(em), Peer: netip.AddrPortFrom(gnbIP, 2152), Port: upfu.PortN3},
		{Buf: inner, Len: len(inner), Port: 0},
	})
	buf := make([]byte, 2048)
	gnb.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := gnb.ReadFromUDPAddrPort(buf)
	if err != nil || !bytes.Equal(buf[:n], em) {
		t.Fatalf("End Marker: %x, %v", buf[:n], err)
	}
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err = srv.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "drained" {
		t.Fatalf("N6: %q, %v", buf[:n], err)
	}
	if st := d.Stats(); st.SinkSent != 2 || st.SinkErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRate pushes uplink GTP-U as fast as one sender thread can and
// reports the rate the DN receives (copy mode on veth: a smoke figure,
// not a benchmark of the NIC path).
func TestRate(t *testing.T) {
	if testing.Short() {
		t.Skip("rate measurement")
	}
	tp := newTopo(t, 1, true)
	_, p := startUPF(t, tp, 1)
	gnb := listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 2152))
	srv := listenUDP(t, tp.dn, netip.AddrPortFrom(dnIP, 9000))
	n3 := net.UDPAddrFromAddrPort(netip.AddrPortFrom(n3IP, 2152))
	msg := gtpu.AppendGPDU(nil, ulTEID, qfi, false, ipv4pkt.AppendUDP(nil, ueIP, dnIP, 1000, 9000, payload(0, 64)))
	var recvd atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := srv.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
			recvd.Add(1)
		}
	}()
	const dur = 2 * time.Second
	to := n3.AddrPort()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	sent := 0
	for time.Since(start) < dur {
		for range 256 {
			gnb.WriteToUDPAddrPort(msg, to)
		}
		sent += 256
	}
	time.Sleep(100 * time.Millisecond)
	el := time.Since(start).Seconds()
	runtime.ReadMemStats(&m1)
	// The sender and the receiver goroutines allocate nothing per
	// datagram either: the mallocs are the driver's and the test's
	// background (timers, the pipeline's Run).
	perPkt := float64(m1.Mallocs-m0.Mallocs) / float64(sent)
	t.Logf("uplink 64-byte payloads: sent %d (%.0f/s), received %d (%.0f/s), %.4f allocations per packet; pipeline UL %d",
		sent, float64(sent)/el, recvd.Load(), float64(recvd.Load())/el, perPkt, p.Stats().ULPackets)
	if perPkt > 0.01 {
		t.Errorf("%.4f allocations per packet", perPkt)
	}
}

// TestEcho answers an Echo Request from the gNB: the pipeline builds the
// response in its scratch space, which the driver copies into a frame.
func TestEcho(t *testing.T) {
	tp := newTopo(t, 1, true)
	d, _ := startUPF(t, tp, 1)
	gnb := listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 2152))
	n3 := netip.AddrPortFrom(n3IP, 2152)
	buf := make([]byte, 2048)
	var h gtpu.Header
	for i := range 100 {
		if _, err := gnb.WriteToUDPAddrPort(gtpu.AppendEchoRequest(nil, uint16(i)), n3); err != nil {
			t.Fatal(err)
		}
		gnb.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := gnb.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("echo %d: %v; %+v", i, err, d.Stats())
		}
		if err := gtpu.Parse(buf[:n], &h); err != nil || h.Type != gtpu.TypeEchoResponse || h.Seq != uint16(i) || from != n3 {
			t.Fatalf("echo %d: %+v from %v: %v", i, h, from, err)
		}
	}
	// The worker publishes its counters after the kick that sent the
	// last response: wait for them.
	st := waitStats(d, func(st Stats) bool { return st.Ifaces[0].Tx+st.Ifaces[0].Fallback >= 100 })
	if st.NoFrame != 0 || st.Ifaces[0].Tx+st.Ifaces[0].Fallback != 100 {
		t.Errorf("stats %+v", st.Ifaces[0])
	}
}

// waitStats returns the driver's counters once cond holds of them, or
// after a second.
func waitStats(d *Driver, cond func(Stats) bool) Stats {
	st := d.Stats()
	for deadline := time.Now().Add(time.Second); !cond(st) && time.Now().Before(deadline); st = d.Stats() {
		time.Sleep(time.Millisecond)
	}
	return st
}

// TestFragments sends GTP-U that the gNB's kernel fragments: the XDP
// program passes the fragments to the kernel, which reassembles them for
// the driver's fallback socket, and the decapsulated packet reaches the DN.
func TestFragments(t *testing.T) {
	tp := newTopo(t, 1, true)
	d, _ := startUPF(t, tp, 1)
	gnb := listenUDP(t, tp.ran, netip.AddrPortFrom(gnbIP, 2152))
	srv := listenUDP(t, tp.dn, netip.AddrPortFrom(dnIP, 9000))
	// A 1480-byte inner packet fits N6's MTU; with GTP-U, UDP and IPv4
	// around it, it does not fit N3's.
	data := payload(7, 1480-28)
	inner := ipv4pkt.AppendUDP(nil, ueIP, dnIP, 1000, 9000, data)
	if _, err := gnb.WriteToUDPAddrPort(gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner), netip.AddrPortFrom(n3IP, 2152)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := srv.ReadFromUDPAddrPort(buf)
	if err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("received %d bytes: %v; %+v", n, err, d.Stats())
	}
	if st := waitStats(d, func(st Stats) bool { return st.KernelTx == 1 }); st.KernelRx != 1 || st.KernelTx != 1 {
		t.Errorf("kernel path: rx %d tx %d", st.KernelRx, st.KernelTx)
	}
}
