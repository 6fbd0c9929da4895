package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netns"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/rules"
)

// The test network, in a namespace of its own (setup):
//
//	n3 10.3.0.1 (02:..:03:01) -- veth -- gnb; neighbour 10.3.0.2 (the gNB) 02:..:03:02
//	n6 10.6.0.1 (02:..:06:01) -- veth -- dn;  neighbour 10.6.0.2 (the N6 gateway) 02:..:06:02
//	default route via 10.6.0.2 dev n6
//
// The programs run with BPF_PROG_TEST_RUN on a thread in that namespace,
// with the ingress interface set, so bpf_fib_lookup resolves the next hops
// from these routes and neighbours.
var (
	n3Addr  = netip.MustParseAddr("10.3.0.1")
	gnbAddr = netip.MustParseAddr("10.3.0.2")
	gnb     = netip.AddrPortFrom(gnbAddr, gtpu.Port)
	n6Addr  = netip.MustParseAddr("10.6.0.1")
	gwAddr  = netip.MustParseAddr("10.6.0.2")
	ueIP    = netip.MustParseAddr("10.60.0.1")
	dnIP    = netip.MustParseAddr("8.8.8.8")

	n3MAC  = net.HardwareAddr{2, 0, 0, 0, 3, 1}
	gnbMAC = net.HardwareAddr{2, 0, 0, 0, 3, 2}
	n6MAC  = net.HardwareAddr{2, 0, 0, 0, 6, 1}
	gwMAC  = net.HardwareAddr{2, 0, 0, 0, 6, 2}
)

const (
	ulTEID = uint32(0x100)
	dlTEID = uint32(0x200)
	qfi    = uint8(9)
	seid   = uint64(42)
)

var nsSeq atomic.Int32

type env struct {
	t      testing.TB
	f      *FastPath
	n3, n6 *net.Interface
	ns     string
}

// requireRoot skips a test that needs root, BPF and network namespaces.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads BPF programs and creates network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
}

func sh(t testing.TB, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if out, err := exec.Command("sh", "-c", c).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

// newNS creates a network namespace with the test network and moves the
// calling goroutine's thread into it for good (the thread is locked and
// never unlocked, so Go discards it when the test ends).
func newNS(t testing.TB) string {
	t.Helper()
	requireRoot(t)
	ns := fmt.Sprintf("tern-xdp-%d-%d", os.Getpid(), nsSeq.Add(1))
	sh(t, "ip netns add "+ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip := "ip -n " + ns + " "
	sh(t,
		ip+"link set lo up",
		ip+"link add n3 address 02:00:00:00:03:01 type veth peer name gnb address 02:00:00:00:03:02",
		ip+"link add n6 address 02:00:00:00:06:01 type veth peer name dn address 02:00:00:00:06:02",
		ip+"addr add 10.3.0.1/24 dev n3",
		ip+"addr add 10.6.0.1/24 dev n6",
		ip+"link set n3 up", ip+"link set gnb up", ip+"link set n6 up", ip+"link set dn up",
		ip+"neigh add 10.3.0.2 lladdr 02:00:00:00:03:02 dev n3 nud permanent",
		ip+"neigh add 10.6.0.2 lladdr 02:00:00:00:06:02 dev n6 nud permanent",
		ip+"route add default via 10.6.0.2 dev n6",
		// bpf_fib_lookup, like the host path, forwards only where
		// forwarding is on.
		"ip netns exec "+ns+" sysctl -qw net.ipv4.conf.all.forwarding=1",
	)
	enterForGood(t, ns)
	return ns
}

// enterForGood moves the calling goroutine's thread into namespace ns and
// locks it there: it is never unlocked, so Go discards the thread when the
// test ends.
func enterForGood(t testing.TB, ns string) {
	t.Helper()
	runtime.LockOSThread()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		t.Fatal(err)
	}
}

// sub is e for t, a test running on a goroutine of its own (a subtest, a
// fuzz input): its thread enters e's namespace for good, as setup's did.
// BPF_PROG_RUN resolves the ingress interface by index in the calling
// thread's namespace, and a new goroutine may run on any thread: in the
// host namespace the index may name another device (so the program sees
// a wrong ingress) or none ("no such device" in a namespace of its own).
// t also gets the failures: a subtest must not fail its parent.
func (e *env) sub(t testing.TB) *env {
	t.Helper()
	enterForGood(t, e.ns)
	ee := *e
	ee.t = t
	return &ee
}

// setup opens the fast path (programs not attached) in a new namespace.
func setup(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	ns := newNS(t)
	cfg := Config{N3Iface: "n3", N3Addr: n3Addr, N6: []Port{{NetworkInstance: "internet", Iface: "n6", Gateway: gwAddr}}}
	if mod != nil {
		mod(&cfg)
	}
	f, err := Open(cfg)
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("BPF not supported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := &env{t: t, f: f, ns: ns}
	if e.n3, err = net.InterfaceByName("n3"); err != nil {
		t.Fatal(err)
	}
	if e.n6, err = net.InterfaceByName("n6"); err != nil {
		t.Fatal(err)
	}
	return e
}

// xdpMD is struct xdp_md, the context of a test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// run runs prog on frame as if received on ifc and returns the action and
// the frame the program left.
func (e *env) run(prog *ebpf.Program, ifc *net.Interface, frame []byte) (uint32, []byte) {
	e.t.Helper()
	opts := &ebpf.RunOptions{
		Data:    frame,
		DataOut: make([]byte, len(frame)+256),
		Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifc.Index)},
	}
	ret, err := prog.Run(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return ret, opts.DataOut
}

func (e *env) ul(frame []byte) (uint32, []byte) { return e.run(e.f.objs.UpfN3, e.n3, frame) }
func (e *env) dl(frame []byte) (uint32, []byte) { return e.run(e.f.objs.UpfN6, e.n6, frame) }

// XDP actions.
const (
	xdpAborted  = 0
	xdpDrop     = 1
	xdpPass     = 2
	xdpTx       = 3
	xdpRedirect = 4
)

func action(a uint32) string {
	return [...]string{"ABORTED", "DROP", "PASS", "TX", "REDIRECT"}[min(a, 4)]
}

func (e *env) want(got, want uint32) {
	e.t.Helper()
	if got != want {
		e.t.Fatalf("action %s, want %s (stats %+v)", action(got), action(want), e.f.Stats())
	}
}

func ether(dst, src net.HardwareAddr, payload []byte) []byte {
	b := append(append(append([]byte(nil), dst...), src...), 0x08, 0x00)
	return append(b, payload...)
}

// udp4 is an IPv4/UDP packet of total length size (>= 28), TTL 64.
func udp4(src, dst netip.Addr, sport, dport uint16, size int) []byte {
	payload := make([]byte, size-28)
	for i := range payload {
		payload[i] = byte(i)
	}
	return ipv4pkt.AppendUDP(nil, src, dst, sport, dport, payload)
}

// ulFrame is a G-PDU from the gNB carrying inner, with a UL PDU Session
// Container (QFI q).
func ulFrame(teid uint32, q uint8, inner []byte) []byte {
	g := gtpu.AppendGPDU(nil, teid, q, false, inner)
	return gtpFrame(g)
}

func gtpFrame(g []byte) []byte {
	return ether(n3MAC, gnbMAC, ipv4pkt.AppendUDP(nil, gnbAddr, n3Addr, gtpu.Port, gtpu.Port, g))
}

func dlFrame(inner []byte) []byte { return ether(n6MAC, gwMAC, inner) }

// decTTL is what the kernel's forwarding does to an IPv4 header.
func decTTL(p []byte) []byte {
	p = append([]byte(nil), p...)
	p[8]--
	binary.BigEndian.PutUint16(p[10:], 0)
	binary.BigEndian.PutUint16(p[10:], ipv4pkt.Checksum(p[:20], 0))
	return p
}

type sessOpts struct {
	seid             uint64
	ue               netip.Addr
	ulTEID           uint32
	ulFAR, dlFAR     rules.Action
	peer             netip.AddrPort
	qers             []*rules.QER
	urrs             []*rules.URR
	ulRules, dlRules []classify.Rule // instead of the default ones
	netInst          string
}

// session builds a two-PDR session (uplink by TEID, downlink by UE IP) as
// UPF-C compiles one.
func session(o sessOpts) *rules.Session {
	if o.seid == 0 {
		o.seid = seid
	}
	if !o.ue.IsValid() {
		o.ue = ueIP
	}
	if o.ulTEID == 0 {
		o.ulTEID = ulTEID
	}
	if o.ulFAR == 0 {
		o.ulFAR = rules.ActionForward
	}
	if o.dlFAR == 0 {
		o.dlFAR = rules.ActionForward
	}
	if !o.peer.IsValid() {
		o.peer = gnb
	}
	if o.netInst == "" {
		o.netInst = "internet"
	}
	ul := &rules.PDR{ID: 1, Precedence: 100, Source: rules.InterfaceAccess, RemoveOuterHeader: true,
		FAR:  &rules.FAR{ID: 1, Action: o.ulFAR, Dest: rules.InterfaceCore, NetworkInstance: o.netInst},
		QERs: o.qers, URRs: o.urrs}
	dl := &rules.PDR{ID: 2, Precedence: 100, Source: rules.InterfaceCore,
		FAR: &rules.FAR{ID: 2, Action: o.dlFAR, Dest: rules.InterfaceAccess,
			Encap: &rules.Encap{TEID: dlTEID, Peer: o.peer, QFI: qfi}},
		QERs: o.qers, URRs: o.urrs}
	ulr := o.ulRules
	if ulr == nil {
		ulr = []classify.Rule{{ID: 0, Precedence: 100,
			Has: classify.FieldSourceInterface | classify.FieldTEID, SourceInterface: 0, TEID: o.ulTEID}}
	}
	dlr := o.dlRules
	if dlr == nil {
		dlr = []classify.Rule{{ID: 1, Precedence: 100,
			Has: classify.FieldSourceInterface, SourceInterface: 1, UEIP: classify.PrefixFromNetip(netip.PrefixFrom(o.ue, 32))}}
	}
	// The per-session classifiers are upfu's; the fast path compiles the
	// rule lists. (Several rules of one PDR share its ID: Linear refuses
	// them, and then there is no classifier.)
	s := &rules.Session{SEID: o.seid, CPSEID: 7, UEIPv4: o.ue, TEIDs: []uint32{o.ulTEID},
		PDRs: []*rules.PDR{ul, dl}, UplinkRules: ulr, DownlinkRules: dlr}
	if c, err := classify.NewLinear(ulr); err == nil {
		s.Uplink = c
	}
	if c, err := classify.NewLinear(dlr); err == nil {
		s.Downlink = c
	}
	return s
}

func (e *env) install(s *rules.Session) {
	e.t.Helper()
	if !e.f.Install(s) {
		e.t.Fatalf("Install(%d) = false", s.SEID)
	}
}

// stat returns a pass or drop counter by name.
func (e *env) stat(name string) uint64 {
	st := e.f.Stats()
	if v, ok := st.Passed[name]; ok {
		return v
	}
	return st.Dropped[name]
}

func hexdiff(a, b []byte) string {
	var s strings.Builder
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = fmt.Sprintf("%02x", a[i])
		}
		if i < len(b) {
			y = fmt.Sprintf("%02x", b[i])
		}
		if x != y {
			fmt.Fprintf(&s, " [%d] %s != %s", i, x, y)
		}
	}
	return s.String()
}
