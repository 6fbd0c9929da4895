package upf_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf"
)

// The driver conformance suite: the same behaviour, checked on real
// interfaces in network namespaces, for every data-path driver, so that a
// rule means the same thing on each (issue 23 §4). The bed is a lab
// (package lab): a gNB socket in ran, the UPF in core, a server in the DN.
//
// The xdp and afxdp drivers send frames to the ran and DN ends of the veth
// pairs with XDP redirects or AF_XDP; a veth accepts such frames only when
// its receiving end has an XDP program (or GRO), so the bed attaches a
// pass-through program there, as a physical NIC would need nothing.

// conformanceDrivers are the drivers the suite runs on, with their
// settings: xdp also with its processing steered over both CPUs of a
// 2-CPU machine (upf.Config.Workers), and on CPU 1 alone (XDPCPUs).
var conformanceDrivers = []struct {
	name    string
	driver  string
	workers int
	cpus    string
}{
	{"portable", upf.DriverPortable, 1, ""},
	{"afxdp", upf.DriverAFXDP, 1, ""},
	{"xdp", upf.DriverXDP, 1, ""},
	{"xdp-steered", upf.DriverXDP, 2, ""},
	{"xdp-cpu1", upf.DriverXDP, 1, "1"},
}

// Addresses of the bed (lab's, see lab.go).
var (
	bedUEPool = "10.60.0.0/16"
	bedServer = netip.AddrPortFrom(lab.DNServer, 9000)
	bedGNB    = netip.AddrPortFrom(lab.RANN3, gtpu.Port)
	bedN3     = netip.AddrPortFrom(lab.CoreN3, gtpu.Port)
)

// bed is one lab with a UPF of one driver in its core namespace.
type bed struct {
	t      *testing.T
	lab    *lab.Lab
	u      *upf.UPF
	up     pfcp.UserPlane
	cp     *cp
	gnb    *net.UDPConn // in ran, at bedGNB
	server *net.UDPConn // in the DN, at bedServer
	nextUE uint16
}

func TestDriverConformance(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veth links, TUN and XDP")
	}
	if err := lab.Check(); err != nil {
		t.Skipf("no lab here: %v", err)
	}
	for _, d := range conformanceDrivers {
		t.Run(d.name, func(t *testing.T) {
			if d.cpus != "" && runtime.NumCPU() < 2 {
				t.Skip("needs 2 CPUs")
			}
			b := newBed(t, d.driver, d.workers, d.cpus)
			if d.cpus != "" {
				t.Run("threads leave the fast path's CPUs", b.threadsOffCPU1)
			}
			t.Run("uplink and downlink", b.uplinkDownlink)
			t.Run("FAR drop and closed gate", b.dropAndGate)
			t.Run("paging buffer drains in order", b.pagingBuffer)
			t.Run("End Marker on path switch", b.endMarker)
			t.Run("usage reported on deletion", b.usageOnDeletion)
			t.Run("unknown TEID answered with Error Indication", b.unknownTEID)
			t.Run("echo", b.echo)
			t.Run("sessions cycle", b.cycle)
		})
	}
}

func newBed(t *testing.T, driver string, workers int, xdpCPUs string) *bed {
	l, err := lab.New(lab.Config{Prefix: fmt.Sprintf("tcf%d", os.Getpid()%100000), DNNs: []string{"internet"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("lab: %v", err)
	}
	t.Cleanup(func() { l.Down() })
	b := &bed{t: t, lab: l, cp: &cp{got: make(chan struct{}, 64)}}
	for ns, dev := range map[string]string{l.RAN(): "n3", l.DN("internet"): "n6"} {
		acceptRedirects(t, ns, dev)
	}

	if driver == upf.DriverAFXDP {
		fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW, 0)
		if err != nil {
			t.Skipf("no AF_XDP sockets here: %v", err)
		}
		unix.Close(fd)
	}
	b.u, err = upf.New(upf.Config{
		Driver: driver, Workers: workers, XDPCPUs: xdpCPUs, N3Addr: bedN3.String(), N3Iface: "n3",
		N6: []upf.N6Config{{DNN: "internet", TUN: lab.TUN("internet"), Pool: bedUEPool,
			Iface: lab.N6Link("internet"), Gateway: lab.DNN6(0).String()}},
		EchoInterval: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Do(l.Core(), func() error { return b.u.Start(ctx) }); err != nil {
		t.Fatalf("start the %s driver: %v", driver, err)
	}
	t.Cleanup(func() { b.u.Close() })
	b.up = pfcp.Direct(b.u.Handler(), b.cp)
	smf := pfcp.NodeID{IP: netip.MustParseAddr("10.100.4.1")}
	if resp, err := b.up.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: smf, RecoveryTime: time.Now()}); err != nil || !resp.Cause.Accepted() {
		t.Fatalf("association: %+v %v", resp, err)
	}
	if b.gnb, err = lab.ListenUDP(l.RAN(), bedGNB.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.gnb.Close() })
	if b.server, err = lab.ListenUDP(l.DN("internet"), bedServer.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.server.Close() })
	return b
}

// acceptRedirects attaches an XDP program that passes every frame to dev
// in ns, for as long as the test runs (see the package comment above).
func acceptRedirects(t *testing.T, ns, dev string) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		t.Skipf("no XDP here: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	err = lab.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		xl, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.Attrs().Index})
		if err != nil {
			return err
		}
		t.Cleanup(func() { xl.Close() })
		return nil
	})
	if err != nil {
		t.Skipf("cannot attach XDP to %s in %s: %v", dev, ns, err)
	}
}

// session is one PDU session of the bed: its UE address, its uplink TEID
// (allocated by the UPF) and the gNB's downlink TEID.
type session struct {
	seid   uint64
	ue     netip.AddrPort
	ulTEID uint32
	dlTEID uint32
}

// establish creates a PDU session with one uplink and one downlink PDR, a
// QER (QFI 9, a rate that does not limit) and a URR on both.
func (b *bed) establish(t *testing.T) session {
	t.Helper()
	b.nextUE++
	// From 10.60.1.1: the first addresses of the pool may belong to the
	// UPF's N6 device.
	ue := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 60, 1 + byte(b.nextUE>>8), byte(b.nextUE)}), 40000)
	dlTEID := 0x8800 + uint32(b.nextUE)
	est, err := b.up.EstablishSession(context.Background(), &pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("10.100.4.1")},
		CPFSEID: pfcp.FSEID{SEID: uint64(b.nextUE), IPv4: netip.MustParseAddr("10.100.4.1")},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, FARID: 1, QERIDs: []uint32{1}, URRIDs: []uint32{1},
				OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}, NetworkInstance: "internet",
					UEIP: &pfcp.UEIPAddress{IPv4: ue.Addr()}}},
			{ID: 2, Precedence: 255, FARID: 2, QERIDs: []uint32{1}, URRIDs: []uint32{1},
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: "internet",
					UEIP: &pfcp.UEIPAddress{IPv4: ue.Addr(), Destination: true}}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: dlTEID, IPv4: lab.RANN3}}},
		},
		CreateQERs: []pfcp.CreateQER{{ID: 1, QFI: 9, MBR: &pfcp.BitRate{UL: 1 << 30, DL: 1 << 30}}},
		CreateURRs: []pfcp.CreateURR{{ID: 1, Method: pfcp.MethodVolume}},
	})
	if err != nil || !est.Cause.Accepted() {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	return session{seid: est.UPFSEID.SEID, ue: ue, ulTEID: est.CreatedPDRs[0].LocalFTEID.TEID, dlTEID: dlTEID}
}

func (b *bed) modify(t *testing.T, s session, req *pfcp.SessionModificationRequest) *pfcp.SessionModificationResponse {
	t.Helper()
	resp, err := b.up.ModifySession(context.Background(), s.seid, req)
	if err != nil || !resp.Cause.Accepted() {
		t.Fatalf("modification: %+v %v", resp, err)
	}
	return resp
}

func (b *bed) delete(t *testing.T, s session) *pfcp.SessionDeletionResponse {
	t.Helper()
	resp, err := b.up.DeleteSession(context.Background(), s.seid)
	if err != nil || !resp.Cause.Accepted() {
		t.Fatalf("deletion: %+v %v", resp, err)
	}
	return resp
}

// uplink sends payload from the UE to the server as a G-PDU with QFI 9.
func (b *bed) uplink(t *testing.T, s session, payload []byte) {
	t.Helper()
	pdu := gtpu.AppendGPDU(nil, s.ulTEID, 9, false, ipv4UDP(s.ue, bedServer, payload))
	if _, err := b.gnb.WriteToUDPAddrPort(pdu, bedN3); err != nil {
		t.Fatal(err)
	}
}

// downlink sends payload from the server to the UE.
func (b *bed) downlink(t *testing.T, s session, payload []byte) {
	t.Helper()
	if _, err := b.server.WriteToUDPAddrPort(payload, s.ue); err != nil {
		t.Fatal(err)
	}
}

// atServer reads one datagram at the server (within d) and checks who
// sent it; ok false: none came.
func (b *bed) atServer(t *testing.T, s session, d time.Duration) ([]byte, bool) {
	t.Helper()
	buf := make([]byte, 2048)
	b.server.SetReadDeadline(time.Now().Add(d))
	n, from, err := b.server.ReadFromUDPAddrPort(buf)
	if err != nil {
		return nil, false
	}
	if from != s.ue {
		t.Fatalf("server got a datagram from %v, want the UE %v", from, s.ue)
	}
	return buf[:n], true
}

// atGNB reads one GTP-U message at the gNB (within d).
func (b *bed) atGNB(t *testing.T, d time.Duration) ([]byte, bool) {
	t.Helper()
	buf := make([]byte, 2048)
	b.gnb.SetReadDeadline(time.Now().Add(d))
	n, from, err := b.gnb.ReadFromUDPAddrPort(buf)
	if err != nil {
		return nil, false
	}
	if from.Addr() != bedN3.Addr() {
		t.Fatalf("gNB got a message from %v, want the UPF %v", from, bedN3)
	}
	return buf[:n], true
}

// expectDownlink reads a G-PDU at the gNB and checks it carries payload to
// the UE on the session's tunnel with QFI 9 (TS 38.415 §5.5.2.1).
func (b *bed) expectDownlink(t *testing.T, s session, teid uint32, payload []byte) {
	t.Helper()
	m, ok := b.atGNB(t, 5*time.Second)
	if !ok {
		t.Fatalf("no downlink for %q at the gNB; stats %+v", payload, b.u.Stats())
	}
	var h gtpu.Header
	if err := gtpu.Parse(m, &h); err != nil {
		t.Fatalf("downlink: %v", err)
	}
	if h.Type != gtpu.TypeGPDU || h.TEID != teid || h.PDUType != gtpu.PDUTypeDL || h.QFI != 9 {
		t.Fatalf("downlink header %+v, want a G-PDU on TEID %#x with a DL PDU Session Container, QFI 9", h, teid)
	}
	inner := h.Payload(m)
	if len(inner) < 28 || !bytes.Equal(inner[28:], payload) || netip.AddrFrom4([4]byte(inner[16:20])) != s.ue.Addr() {
		t.Fatalf("downlink inner packet % x, want payload %q to %v", inner, payload, s.ue)
	}
}

// Both directions, enough packets that a fast path serves the steady
// state after the first packets resolve neighbours on the host path.
func (b *bed) uplinkDownlink(t *testing.T) {
	s := b.establish(t)
	defer b.delete(t, s)
	roundTrips := func(n int, tag string) {
		t.Helper()
		for i := range n {
			msg := fmt.Appendf(nil, "%s up %d", tag, i)
			b.uplink(t, s, msg)
			got, ok := b.atServer(t, s, 5*time.Second)
			if !ok || !bytes.Equal(got, msg) {
				t.Fatalf("uplink %d: got %q (arrived %v); stats %+v", i, got, ok, b.u.Stats())
			}
			msg = fmt.Appendf(nil, "%s down %d", tag, i)
			b.downlink(t, s, msg)
			b.expectDownlink(t, s, s.dlTEID, msg)
		}
	}
	// The first packets may take the kernel's path while it resolves the
	// next hops (ARP); then the driver's own path carries everything.
	roundTrips(3, "warm-up")
	time.Sleep(50 * time.Millisecond)
	before := b.u.Stats()
	roundTrips(50, "steady")
	// Workers publish their counters after a batch: let them.
	deadline := time.Now().Add(time.Second)
	for b.driverCarried(before, b.u.Stats(), 50) != nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.driverCarried(before, b.u.Stats(), 50); err != nil {
		t.Error(err)
	}
}

// driverCarried checks that the driver's own path carried the n packets
// each way between two snapshots of the counters: a driver that handed
// everything to a fallback would pass the suite untested.
func (b *bed) driverCarried(before, after upf.Stats, n uint64) error {
	switch after.DriverName {
	case upf.DriverAFXDP:
		for i, name := range []string{"N3", "N6"} {
			x, y := before.AFXDP.Ifaces[i], after.AFXDP.Ifaces[i]
			if rx, tx := y.Rx-x.Rx, y.Tx-x.Tx; rx != n || tx != n {
				return fmt.Errorf("AF_XDP on %s received %d and sent %d of the %d packets each way (fallback %d)", name, rx, tx, n, y.Fallback-x.Fallback)
			}
		}
	case upf.DriverXDP:
		x, y := before.XDP, after.XDP
		if ul, dl := y.ForwardedUL-x.ForwardedUL, y.ForwardedDL-x.ForwardedDL; ul != n || dl != n {
			return fmt.Errorf("the XDP programs forwarded %d up and %d down of %d each way; passed %v", ul, dl, n, y.Passed)
		}
	case upf.DriverPortable:
		if ul, dl := after.Pipeline.ULPackets-before.Pipeline.ULPackets, after.Pipeline.DLPackets-before.Pipeline.DLPackets; ul != n || dl != n {
			return fmt.Errorf("the pipeline forwarded %d up and %d down of %d each way", ul, dl, n)
		}
	default:
		return fmt.Errorf("no check of what driver %q carried", after.DriverName)
	}
	return nil
}

// TS 29.244 §5.2.3 FAR drop; §5.2.1 QER gate closed.
func (b *bed) dropAndGate(t *testing.T) {
	s := b.establish(t)
	defer b.delete(t, s)
	b.uplink(t, s, []byte("before"))
	if _, ok := b.atServer(t, s, 5*time.Second); !ok {
		t.Fatal("no uplink before the drop")
	}
	drop := pfcp.ActionDrop
	b.modify(t, s, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 1, ApplyAction: &drop}}})
	for range 5 {
		b.uplink(t, s, []byte("dropped"))
	}
	if got, ok := b.atServer(t, s, 300*time.Millisecond); ok {
		t.Fatalf("FAR drop let %q through", got)
	}
	fwd := pfcp.ActionForward
	b.modify(t, s, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 1, ApplyAction: &fwd}},
		UpdateQERs: []pfcp.UpdateQER{{ID: 1, Gate: &pfcp.GateStatus{DLClosed: true}}},
	})
	b.uplink(t, s, []byte("open uplink"))
	if got, ok := b.atServer(t, s, 5*time.Second); !ok || string(got) != "open uplink" {
		t.Fatalf("uplink with its gate open: %q %v", got, ok)
	}
	for range 5 {
		b.downlink(t, s, []byte("gated"))
	}
	if m, ok := b.atGNB(t, 300*time.Millisecond); ok {
		t.Fatalf("closed DL gate let % x through", m)
	}
}

// Paging (TS 23.502 §4.2.3.3): the DL FAR buffers and notifies; the UPF
// reports downlink data; forwarding again drains the buffer in order
// before new packets.
func (b *bed) pagingBuffer(t *testing.T) {
	s := b.establish(t)
	defer b.delete(t, s)
	b.downlink(t, s, []byte("warm"))
	b.expectDownlink(t, s, s.dlTEID, []byte("warm"))
	buff := pfcp.ActionBuffer | pfcp.ActionNotifyCP
	b.modify(t, s, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: &buff}}})
	for i := range 5 {
		b.downlink(t, s, fmt.Appendf(nil, "buffered %d", i))
	}
	select {
	case <-b.cp.got:
	case <-time.After(5 * time.Second):
		t.Fatalf("no downlink data report; stats %+v", b.u.Stats())
	}
	if m, ok := b.atGNB(t, 100*time.Millisecond); ok {
		t.Fatalf("a buffering FAR sent % x", m)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.u.Stats().Pipeline.Buffered < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("buffered %d of 5", b.u.Stats().Pipeline.Buffered)
		}
		time.Sleep(time.Millisecond)
	}
	fwd := pfcp.ActionForward
	b.modify(t, s, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: &fwd}}})
	for i := range 5 {
		b.expectDownlink(t, s, s.dlTEID, fmt.Appendf(nil, "buffered %d", i))
	}
	b.downlink(t, s, []byte("after"))
	b.expectDownlink(t, s, s.dlTEID, []byte("after"))
}

// Path switch with SNDEM (TS 29.244 §8.2.31, TS 29.281 §7.3.2): an End
// Marker on the old tunnel after its last packet, then packets on the new.
func (b *bed) endMarker(t *testing.T) {
	s := b.establish(t)
	defer b.delete(t, s)
	for i := range 10 {
		msg := fmt.Appendf(nil, "old path %d", i)
		b.downlink(t, s, msg)
		b.expectDownlink(t, s, s.dlTEID, msg)
	}
	newTEID := s.dlTEID + 0x1000
	b.modify(t, s, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2,
		Forwarding: &pfcp.UpdateForwardingParameters{SendEndMarker: true, Destination: pfcp.InterfaceAccess,
			OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: newTEID, IPv4: lab.RANN3}}}}})
	m, ok := b.atGNB(t, 5*time.Second)
	if !ok {
		t.Fatal("no End Marker")
	}
	var h gtpu.Header
	if err := gtpu.Parse(m, &h); err != nil || h.Type != gtpu.TypeEndMarker || h.TEID != s.dlTEID {
		t.Fatalf("after the switch got %+v (%v), want an End Marker on TEID %#x", h, err, s.dlTEID)
	}
	b.downlink(t, s, []byte("new path"))
	b.expectDownlink(t, s, newTEID, []byte("new path"))
}

// TS 29.244 §7.5.7: the deletion response carries the URR's usage, counted
// on whichever path forwarded the packets.
func (b *bed) usageOnDeletion(t *testing.T) {
	s := b.establish(t)
	const n, size = 20, 100
	payload := bytes.Repeat([]byte{'u'}, size)
	for range n {
		b.uplink(t, s, payload)
		if _, ok := b.atServer(t, s, 5*time.Second); !ok {
			t.Fatal("uplink lost")
		}
		b.downlink(t, s, payload)
		b.expectDownlink(t, s, s.dlTEID, payload)
	}
	del := b.delete(t, s)
	if len(del.UsageReports) != 1 {
		t.Fatalf("usage reports %+v", del.UsageReports)
	}
	v := del.UsageReports[0].Volume
	want := uint64(n * (size + 28)) // the UE's IP packets, either way
	if v.UL != want || v.DL != want || v.Total != 2*want {
		t.Fatalf("usage UL %d DL %d total %d, want %d each way", v.UL, v.DL, v.Total, want)
	}
}

// TS 29.281 §7.3.1: a G-PDU for no session is answered with an Error
// Indication naming its TEID.
func (b *bed) unknownTEID(t *testing.T) {
	pdu := gtpu.AppendGPDU(nil, 0xdead0001, 9, false, ipv4UDP(netip.MustParseAddrPort("10.60.9.9:1"), bedServer, []byte("?")))
	if _, err := b.gnb.WriteToUDPAddrPort(pdu, bedN3); err != nil {
		t.Fatal(err)
	}
	m, ok := b.atGNB(t, 5*time.Second)
	if !ok {
		t.Fatal("no Error Indication")
	}
	ei, err := gtpu.ParseErrorIndication(m)
	if err != nil || ei.TEID != 0xdead0001 {
		t.Fatalf("Error Indication %+v %v", ei, err)
	}
}

// TS 29.281 §7.2.1: an Echo Request is answered.
func (b *bed) echo(t *testing.T) {
	if _, err := b.gnb.WriteToUDPAddrPort(gtpu.AppendEchoRequest(nil, 77), bedN3); err != nil {
		t.Fatal(err)
	}
	m, ok := b.atGNB(t, 5*time.Second)
	var h gtpu.Header
	if !ok || gtpu.Parse(m, &h) != nil || h.Type != gtpu.TypeEchoResponse {
		t.Fatalf("echo answer % x (arrived %v)", m, ok)
	}
}

// Many sessions come and go; the data path ends with none, and a session
// made afterwards forwards.
func (b *bed) cycle(t *testing.T) {
	for range 300 {
		s := b.establish(t)
		b.delete(t, s)
	}
	if st := b.u.Stats(); st.Pipeline.Sessions != 0 || st.Control.Sessions != 0 {
		t.Fatalf("after the cycle: %d sessions in the pipeline, %d in UPF-C", st.Pipeline.Sessions, st.Control.Sessions)
	}
	b.uplinkDownlink(t)
}

// auto takes the first driver that opens: xdp where the interfaces are
// named and XDP works; portable where N3 is on loopback, saying why the
// others declined.
func TestAutoDriver(t *testing.T) {
	var logs bytes.Buffer
	u, err := upf.New(upf.Config{N3Addr: "127.0.0.1:0", NoN6: true, EchoInterval: -1},
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if got := u.Stats().DriverName; got != upf.DriverPortable {
		t.Fatalf("auto on loopback chose %q", got)
	}
	for _, want := range []string{"driver auto chose portable", "xdp: N3 address 127.0.0.1 is not on a network interface", "afxdp: noN6 is set"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	if os.Geteuid() != 0 {
		t.Skip("needs root for the lab: network namespaces, veth links, XDP")
	}
	if err := lab.Check(); err != nil {
		t.Skipf("no lab here: %v", err)
	}
	b := newBed(t, upf.DriverAuto, 1, "")
	if got := b.u.Stats().DriverName; got != upf.DriverXDP {
		t.Fatalf("auto in the lab chose %q, want xdp", got)
	}
	s := b.establish(t)
	b.uplink(t, s, []byte("auto"))
	if got, ok := b.atServer(t, s, 5*time.Second); !ok || string(got) != "auto" {
		t.Fatalf("uplink through auto's choice: %q %v", got, ok)
	}
}

// threadsOffCPU1: with upf.xdpCPUs 1 no thread of the process may run on
// CPU 1 but those pinned there alone.
func (b *bed) threadsOffCPU1(t *testing.T) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		tid, _ := strconv.Atoi(d.Name())
		var m unix.CPUSet
		if unix.SchedGetaffinity(tid, &m) != nil {
			continue // exited
		}
		if m.IsSet(1) && m.Count() > 1 {
			t.Errorf("thread %d may run on CPU 1 (%d CPUs)", tid, m.Count())
		}
	}
}
