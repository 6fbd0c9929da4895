package upf_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf"
)

// cp is a fake SMF: it records Session Report Requests.
type cp struct {
	mu      sync.Mutex
	reports []*pfcp.SessionReportRequest
	nodes   []*pfcp.NodeReportRequest
	got     chan struct{}
}

func (c *cp) HandleSessionReport(_ context.Context, _ uint64, req *pfcp.SessionReportRequest) *pfcp.SessionReportResponse {
	c.mu.Lock()
	c.reports = append(c.reports, req)
	c.mu.Unlock()
	c.got <- struct{}{}
	return &pfcp.SessionReportResponse{Cause: pfcp.CauseRequestAccepted}
}

func (c *cp) HandleNodeReport(_ context.Context, req *pfcp.NodeReportRequest) *pfcp.NodeReportResponse {
	c.mu.Lock()
	c.nodes = append(c.nodes, req)
	c.mu.Unlock()
	return &pfcp.NodeReportResponse{NodeID: req.NodeID, Cause: pfcp.CauseRequestAccepted}
}

// gnbAddr is a loopback address of its own for this test process, so a
// socket can own port 2152 there (F-TEIDs carry no port).
func gnbAddr() netip.Addr {
	pid := os.Getpid()
	return netip.AddrFrom4([4]byte{127, 77, byte(pid >> 8), byte(pid)})
}

func listen(t *testing.T, ap netip.AddrPort) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func read(t *testing.T, c *net.UDPConn) []byte {
	t.Helper()
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func ipv4UDP(src, dst netip.AddrPort, payload []byte) []byte {
	return ipv4pkt.AppendUDP(nil, src.Addr(), dst.Addr(), src.Port(), dst.Port(), payload)
}

func start(t *testing.T, cfg upf.Config) (*upf.UPF, pfcp.UserPlane, *cp) {
	t.Helper()
	u, err := upf.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	c := &cp{got: make(chan struct{}, 16)}
	up := pfcp.Direct(u.Handler(), c)
	smfID := pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}
	resp, err := up.SetupAssociation(context.Background(), &pfcp.AssociationSetupRequest{NodeID: smfID, RecoveryTime: time.Now()})
	if err != nil || resp.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association: %+v %v", resp, err)
	}
	return u, up, c
}

func ptr[T any](v T) *T { return &v }

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []upf.Config{
		{N3Addr: "nope"},
		{N6: []upf.N6Config{{DNN: ""}}},
		{N6: []upf.N6Config{{DNN: "a"}, {DNN: "a"}}},
		{N6: []upf.N6Config{{DNN: "a", Pool: "10.0.0.0"}}},
		{N6: []upf.N6Config{{DNN: "a", TUN: "a-very-long-device-name"}}},
		{PDRTable: "per-flow"},
		{BufferPackets: -1},
		{BufferBytes: -1},
		{BufferGlobalBytes: -1},
		{BufferHoldTime: -time.Second},
		{EchoT3Response: -time.Second},
		{EchoN3Requests: -1},
		{BufferBytes: 4 << 20, BufferGlobalBytes: 1 << 20}, // one session's buffer above the cap
		{BufferGlobalBytes: 1 << 20},                       // below the default per-session 2 MiB
		{Driver: "dpdk"},
		{N6: []upf.N6Config{{DNN: "a", Iface: "eth1", Gateway: "gw.example"}}},
		{ShapingDelay: -time.Millisecond},
		{ShapingPackets: -1},
		{Workers: -3},
		{PFCPAddr: "127.0.0.1"},
		{PFCPAddr: "127.0.0.1:88050"},
		{NodeID: "not a name"},
		{N3Iface: "a-very-long-interface-name"},
		{N6: []upf.N6Config{{DNN: "a", Iface: "eth/1"}}},
		{N6: []upf.N6Config{{DNN: "a", MTU: 100}}},
	} {
		if _, err := upf.New(cfg, nil); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := upf.New(upf.DefaultConfig(), nil); err != nil {
		t.Errorf("default config: %v", err)
	}
	// The buffering keys as a YAML document spells them.
	var cfg upf.Config
	doc := "bufferPackets: 64\nbufferBytes: 65536\nbufferGlobalBytes: 1048576\nbufferHoldTime: 5s\n" +
		"echoInterval: 90s\nechoT3Response: 3s\nechoN3Requests: 5\ndriver: xdp\nn3Iface: eth0\nshapingDelay: 20ms\n"
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	want := upf.Config{BufferPackets: 64, BufferBytes: 64 << 10, BufferGlobalBytes: 1 << 20, BufferHoldTime: 5 * time.Second,
		EchoInterval: 90 * time.Second, EchoT3Response: 3 * time.Second, EchoN3Requests: 5,
		Driver: upf.DriverXDP, N3Iface: "eth0", ShapingDelay: 20 * time.Millisecond}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("YAML %+v, want %+v", cfg, want)
	}
	if _, err := upf.New(cfg, nil); err != nil {
		t.Errorf("%+v: %v", cfg, err)
	}
	d := upf.DefaultConfig()
	if d.BufferPackets != 1024 || d.BufferBytes != 2<<20 || d.BufferGlobalBytes != 256<<20 || d.BufferHoldTime != 30*time.Second ||
		d.EchoInterval != time.Minute || d.EchoT3Response != 2*time.Second || d.EchoN3Requests != 3 {
		t.Errorf("defaults %+v", d)
	}
}

// Without root: PFCP (direct and UDP) programs the data path; an uplink
// G-PDU is re-encapsulated towards a next-hop GTP-U peer (N9-style); after
// deletion the same TEID draws an Error Indication.
func TestPFCPProgramsDataPath(t *testing.T) {
	for _, mode := range []string{upf.PDRTableSession, upf.PDRTableGlobal} {
		t.Run(mode, func(t *testing.T) { testPFCPProgramsDataPath(t, mode) })
	}
}

func testPFCPProgramsDataPath(t *testing.T, mode string) {
	peerAP := netip.AddrPortFrom(gnbAddr(), gtpu.Port)
	peer := listen(t, peerAP)
	u, up, _ := start(t, upf.Config{N3Addr: "127.0.0.1:0", PFCPAddr: "127.0.0.1:0", PDRTable: mode})
	ctx := context.Background()

	// PFCP over UDP answers too.
	smf, err := pfcp.Listen(pfcp.EndpointConfig{Addr: "127.0.0.1:0", NodeID: pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}, CP: &cp{got: make(chan struct{}, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer smf.Close()
	if _, err := smf.UserPlane(u.PFCPAddr()).Heartbeat(ctx); err != nil {
		t.Fatalf("heartbeat over UDP: %v", err)
	}

	est, err := up.EstablishSession(ctx, &pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")},
		CPFSEID: pfcp.FSEID{SEID: 1, IPv4: netip.MustParseAddr("127.0.0.1")},
		CreatePDRs: []pfcp.CreatePDR{{ID: 1, Precedence: 255, FARID: 1,
			PDI:                pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}},
			OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4)}},
		CreateFARs: []pfcp.CreateFAR{{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
			Destination:         pfcp.InterfaceCore,
			OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr()}}}},
	})
	if err != nil || est.Cause != pfcp.CauseRequestAccepted || len(est.CreatedPDRs) != 1 || est.CreatedPDRs[0].LocalFTEID == nil {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	teid := est.CreatedPDRs[0].LocalFTEID.TEID
	inner := ipv4UDP(netip.MustParseAddrPort("10.60.0.9:1000"), netip.MustParseAddrPort("10.100.6.2:53"), []byte("hello n9"))
	to := net.UDPAddrFromAddrPort(u.N3Addr())
	if _, err := peer.WriteToUDP(gtpu.AppendGPDU(nil, teid, 1, false, inner), to); err != nil {
		t.Fatal(err)
	}
	b := read(t, peer)
	var h gtpu.Header
	if err := gtpu.Parse(b, &h); err != nil || h.TEID != 0x77 || string(h.Payload(b)) != string(inner) {
		t.Fatalf("forwarded %+v %v; stats %+v", h, err, u.Stats())
	}

	if del, err := up.DeleteSession(ctx, est.UPFSEID.SEID); err != nil || del.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("deletion: %+v %v", del, err)
	}
	if _, err := peer.WriteToUDP(gtpu.AppendGPDU(nil, teid, 1, false, inner), to); err != nil {
		t.Fatal(err)
	}
	ei, err := gtpu.ParseErrorIndication(read(t, peer))
	if err != nil || ei.TEID != teid {
		t.Fatalf("error indication %+v %v", ei, err)
	}
	st := u.Stats()
	if st.Pipeline.ULPackets != 1 || st.Pipeline.Drops["unknown-teid"] != 1 || st.Control.Sessions != 0 || st.Pipeline.Sessions != 0 {
		t.Errorf("stats %+v", st)
	}
}

// With root: a PDU session over a real TUN, both directions, then paging:
// the SMF switches the DL FAR to buffer+notify, the UPF reports downlink
// data, and switching back to forward drains the buffer in order.
func TestPDUSessionOverTUN(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN")
	}
	// A device, pool and DN address per mode: the kernel may still hold
	// the previous subtest's TUN when the next one starts.
	for i, mode := range []string{upf.PDRTableSession, upf.PDRTableGlobal} {
		t.Run(mode, func(t *testing.T) { testPDUSessionOverTUN(t, mode, byte(i)) })
	}
}

func testPDUSessionOverTUN(t *testing.T, mode string, i byte) {
	tun := fmt.Sprintf("ternupf%d%c", os.Getpid()%100000, 'a'+i)
	ue := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 213, i, 5}), 40000)
	dnIP := netip.AddrFrom4([4]byte{10, 214, i, 1})
	gnbAP := netip.AddrPortFrom(gnbAddr(), gtpu.Port)
	gnb := listen(t, gnbAP)
	u, up, c := start(t, upf.Config{N3Addr: "127.0.0.1:0", N6: []upf.N6Config{{DNN: "internet", TUN: tun, Pool: fmt.Sprintf("10.213.%d.0/24", i)}}, PDRTable: mode})
	link, err := netlink.LinkByName(tun)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: dnIP.AsSlice(), Mask: net.CIDRMask(32, 32)}}); err != nil {
		t.Fatal(err)
	}
	dn := listen(t, netip.AddrPortFrom(dnIP, 0))
	dnAP := dn.LocalAddr().(*net.UDPAddr).AddrPort()
	ctx := context.Background()

	est, err := up.EstablishSession(ctx, &pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")},
		CPFSEID: pfcp.FSEID{SEID: 1, IPv4: netip.MustParseAddr("127.0.0.1")},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, FARID: 1, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}, NetworkInstance: "internet",
					UEIP: &pfcp.UEIPAddress{IPv4: ue.Addr()}}},
			{ID: 2, Precedence: 255, FARID: 2,
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: "internet",
					UEIP: &pfcp.UEIPAddress{IPv4: ue.Addr(), Destination: true}}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x88, IPv4: gnbAddr()}}},
		},
	})
	if err != nil || est.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	teid := est.CreatedPDRs[0].LocalFTEID.TEID
	n3 := net.UDPAddrFromAddrPort(u.N3Addr())
	if _, err := gnb.WriteToUDP(gtpu.AppendGPDU(nil, teid, 1, false, ipv4UDP(ue, dnAP, []byte("up"))), n3); err != nil {
		t.Fatal(err)
	}
	dn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, from, err := dn.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "up" || from != ue {
		t.Fatalf("DN read %q from %v: %v; stats %+v", buf[:n], from, err, u.Stats())
	}
	downlink := func(msg string) {
		t.Helper()
		if _, err := dn.WriteToUDPAddrPort([]byte(msg), ue); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(msg string) {
		t.Helper()
		b := read(t, gnb)
		var h gtpu.Header
		if err := gtpu.Parse(b, &h); err != nil || h.TEID != 0x88 || h.PDUType != gtpu.PDUTypeDL {
			t.Fatalf("DL %+v %v", h, err)
		}
		if p := h.Payload(b); len(p) < 28 || string(p[28:]) != msg {
			t.Fatalf("DL payload %q, want %q", p, msg)
		}
	}
	downlink("down")
	expect("down")

	// Paging: buffer with notification.
	buff := pfcp.ActionBuffer | pfcp.ActionNotifyCP
	mod, err := up.ModifySession(ctx, est.UPFSEID.SEID, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: &buff}}})
	if err != nil || mod.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %+v %v", mod, err)
	}
	for i := range 3 {
		downlink(fmt.Sprintf("buffered %d", i))
	}
	select {
	case <-c.got:
	case <-time.After(5 * time.Second):
		t.Fatalf("no downlink data report; stats %+v", u.Stats())
	}
	c.mu.Lock()
	r := c.reports[0]
	c.mu.Unlock()
	if r.DownlinkDataReport == nil || len(r.DownlinkDataReport.PDRIDs) != 1 || r.DownlinkDataReport.PDRIDs[0] != 2 {
		t.Errorf("report %+v", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for u.Stats().Pipeline.Buffered != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("buffered %+v", u.Stats().Pipeline)
		}
		time.Sleep(time.Millisecond)
	}
	fwd := pfcp.ActionForward
	if mod, err := up.ModifySession(ctx, est.UPFSEID.SEID, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: &fwd}}}); err != nil || mod.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %+v %v", mod, err)
	}
	for i := range 3 {
		expect(fmt.Sprintf("buffered %d", i))
	}
	downlink("after")
	expect("after")
}

// Without root, over PFCP on UDP: a handover with indirect data forwarding
// (TS 23.502 §4.9.1.3.2-3) and a path switch with End Markers (§4.9.1.3.3
// step 4). The source gNB's forwarded downlink reaches the target's
// forwarding tunnel; the Update FAR with SNDEM sends an End Marker to the
// source; removing the forwarding PDR frees its TEID.
func TestHandoverOverPFCP(t *testing.T) {
	src := listen(t, netip.AddrPortFrom(gnbAddr(), gtpu.Port))
	pid := os.Getpid()
	targetAddr := netip.AddrFrom4([4]byte{127, 78, byte(pid >> 8), byte(pid)})
	dst := listen(t, netip.AddrPortFrom(targetAddr, gtpu.Port))
	u, err := upf.New(upf.Config{N3Addr: "127.0.0.1:0", PFCPAddr: "127.0.0.1:0", NoN6: true,
		N6: []upf.N6Config{{DNN: "internet", Pool: "10.60.0.0/16"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	ctx := context.Background()
	smfID := pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}
	smf, err := pfcp.Listen(pfcp.EndpointConfig{Addr: "127.0.0.1:0", NodeID: smfID, CP: &cp{got: make(chan struct{}, 16)}})
	if err != nil {
		t.Fatal(err)
	}
	defer smf.Close()
	up := smf.UserPlane(u.PFCPAddr())
	if r, err := up.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: smfID, RecoveryTime: time.Now()}); err != nil || r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association: %+v %v", r, err)
	}
	ue := netip.MustParseAddr("10.60.0.5")
	ohc := func(addr netip.Addr, teid uint32) *pfcp.OuterHeaderCreation {
		return &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: teid, IPv4: addr}
	}
	est, err := up.EstablishSession(ctx, &pfcp.SessionEstablishmentRequest{
		NodeID: smfID, CPFSEID: pfcp.FSEID{SEID: 1, IPv4: smfID.IP},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, FARID: 1, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true, ChooseID: 1},
					UEIP: &pfcp.UEIPAddress{IPv4: ue}}},
			{ID: 2, Precedence: 255, FARID: 2, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore,
				UEIP: &pfcp.UEIPAddress{IPv4: ue, Destination: true}}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: ohc(gnbAddr(), 0x200)}},
		},
	})
	if err != nil || est.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	seid := est.UPFSEID.SEID
	modify := func(req *pfcp.SessionModificationRequest) *pfcp.SessionModificationResponse {
		t.Helper()
		mr, err := up.ModifySession(ctx, seid, req)
		if err != nil || mr.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("modification: %+v %v", mr, err)
		}
		return mr
	}
	// Handover preparation: the indirect forwarding tunnel.
	mr := modify(&pfcp.SessionModificationRequest{
		CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
			Destination: pfcp.InterfaceAccess, OuterHeaderCreation: ohc(targetAddr, 0xf00d)}}},
		CreatePDRs: []pfcp.CreatePDR{{ID: 3, Precedence: 255, FARID: 3, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
			PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true, ChooseID: 1}}}},
	})
	if len(mr.CreatedPDRs) != 1 || mr.CreatedPDRs[0].LocalFTEID == nil {
		t.Fatalf("created %+v", mr.CreatedPDRs)
	}
	fwdTEID := mr.CreatedPDRs[0].LocalFTEID.TEID
	if u.Stats().Control.TEIDs != 2 {
		t.Fatalf("TEIDs %d", u.Stats().Control.TEIDs)
	}
	n3 := net.UDPAddrFromAddrPort(u.N3Addr())
	inner := ipv4UDP(netip.MustParseAddrPort("10.100.6.2:53"), netip.AddrPortFrom(ue, 1000), []byte("forwarded"))
	if _, err := src.WriteToUDP(gtpu.AppendGPDU(nil, fwdTEID, 9, true, inner), n3); err != nil {
		t.Fatal(err)
	}
	b := read(t, dst)
	var h gtpu.Header
	if err := gtpu.Parse(b, &h); err != nil || h.Type != gtpu.TypeGPDU || h.TEID != 0xf00d || h.PDUType != gtpu.PDUTypeDL ||
		h.QFI != 9 || string(h.Payload(b)) != string(inner) {
		t.Fatalf("forwarded %+v %v; stats %+v", h, err, u.Stats())
	}

	// Path switch: the DL FAR moves to the target with SNDEM. The source
	// gets an End Marker for its tunnel.
	modify(&pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, Forwarding: &pfcp.UpdateForwardingParameters{
		NoDestination: true, OuterHeaderCreation: ohc(targetAddr, 0x300), SendEndMarker: true}}}})
	b = read(t, src)
	if teid, err := gtpu.ParseEndMarker(b); err != nil || teid != 0x200 {
		t.Fatalf("source got % x: TEID %#x %v", b, teid, err)
	}
	// Forwarding ends: the PDR and FAR go, and with them the TEID.
	modify(&pfcp.SessionModificationRequest{RemovePDRs: []uint16{3}, RemoveFARs: []uint32{3}})
	if _, err := src.WriteToUDP(gtpu.AppendGPDU(nil, fwdTEID, 9, true, inner), n3); err != nil {
		t.Fatal(err)
	}
	if ei, err := gtpu.ParseErrorIndication(read(t, src)); err != nil || ei.TEID != fwdTEID {
		t.Fatalf("after removal: %+v %v", ei, err)
	}
	st := u.Stats()
	if st.Control.TEIDs != 1 || st.Pipeline.EndMarkersSent != 1 || st.Pipeline.DLPackets != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestInjectDownlinkBuffersAndDrainsInOrder: packets handed in by the
// process take the N6 path: while the downlink FAR buffers (an idle UE)
// they are held and one Downlink Data Report is raised; when the FAR
// forwards again, every one reaches the gNB in order, then the live ones.
func TestInjectDownlinkBuffersAndDrainsInOrder(t *testing.T) {
	gnb := listen(t, netip.AddrPortFrom(gnbAddr(), gtpu.Port))
	u, up, c := start(t, upf.Config{N3Addr: "127.0.0.1:0", NoN6: true, N6: []upf.N6Config{{DNN: "internet", Pool: "10.60.0.0/16"}}})
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.9")
	smfID := pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}
	bar := uint8(1)
	est, err := up.EstablishSession(ctx, &pfcp.SessionEstablishmentRequest{
		NodeID: smfID, CPFSEID: pfcp.FSEID{SEID: 7, IPv4: smfID.IP},
		CreatePDRs: []pfcp.CreatePDR{{ID: 2, Precedence: 255, FARID: 2,
			PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ue, Destination: true}}}},
		CreateFARs: []pfcp.CreateFAR{{ID: 2, ApplyAction: pfcp.ActionBuffer | pfcp.ActionNotifyCP, BARID: &bar}},
		CreateBAR:  &pfcp.CreateBAR{ID: 1, SuggestedBufferingPackets: 100},
	})
	if err != nil || est.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	pkt := func(seq int) []byte {
		return ipv4UDP(netip.MustParseAddrPort("10.100.6.2:9"), netip.AddrPortFrom(ue, 9), fmt.Appendf(nil, "seq %03d", seq))
	}
	var batch [][]byte
	for i := range 50 {
		batch = append(batch, pkt(i))
	}
	if err := u.InjectDownlink(batch...); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no Downlink Data Report")
	}
	act := pfcp.ActionForward
	if r, err := up.ModifySession(ctx, est.UPFSEID.SEID, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: &act,
		Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
			Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr()}}}}}); err != nil || r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %+v %v", r, err)
	}
	if err := u.InjectDownlink(pkt(50), pkt(51)); err != nil {
		t.Fatal(err)
	}
	var h gtpu.Header
	for i := range 52 {
		b := read(t, gnb)
		if err := gtpu.Parse(b, &h); err != nil || h.TEID != 0x77 {
			t.Fatalf("packet %d: %+v %v", i, h, err)
		}
		if got, want := string(h.Payload(b)), string(pkt(i)); got != want {
			t.Fatalf("packet %d out of order: got %q", i, got[len(got)-7:])
		}
	}
	c.mu.Lock()
	reports := len(c.reports)
	c.mu.Unlock()
	if reports != 1 {
		t.Errorf("%d reports, want one for the episode", reports)
	}
	if err := (&upf.UPF{}).InjectDownlink(pkt(0)); err == nil {
		t.Error("InjectDownlink on a UPF not started succeeded")
	}
}

// GTP-U path supervision end to end: the UPF sends Echo Requests to the
// peer its session's FAR tunnels to; while the peer answers the path stays
// up; when it falls silent, the SMF gets one Node Report Request with a
// User Plane Path Failure Report naming it (TS 29.281 §7.2.1, TS 29.244
// §7.4.5.1).
func TestEchoPathFailureReachesSMF(t *testing.T) {
	peerAP := netip.AddrPortFrom(gnbAddr(), gtpu.Port)
	peer := listen(t, peerAP)
	u, up, c := start(t, upf.Config{N3Addr: "127.0.0.1:0", EchoInterval: 40 * time.Millisecond,
		EchoT3Response: 20 * time.Millisecond, EchoN3Requests: 1})
	var answer atomic.Bool
	answer.Store(true)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := peer.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed at cleanup
			}
			var h gtpu.Header
			if gtpu.Parse(buf[:n], &h) == nil && h.Type == gtpu.TypeEchoRequest && answer.Load() {
				_, _ = peer.WriteToUDPAddrPort(gtpu.AppendEchoResponse(nil, h.Seq), from)
			}
		}
	}()
	est, err := up.EstablishSession(context.Background(), &pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")},
		CPFSEID: pfcp.FSEID{SEID: 1, IPv4: netip.MustParseAddr("127.0.0.1")},
		CreatePDRs: []pfcp.CreatePDR{{ID: 1, Precedence: 255, FARID: 1,
			PDI:                pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}},
			OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4)}},
		CreateFARs: []pfcp.CreateFAR{{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
			Destination:         pfcp.InterfaceCore,
			OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr()}}}},
	})
	if err != nil || est.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("establishment: %+v %v", est, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for u.Stats().Pipeline.EchoRequestsSent < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st := u.Stats()
	c.mu.Lock()
	nodes := len(c.nodes)
	c.mu.Unlock()
	if st.Pipeline.EchoRequestsSent < 4 || st.Pipeline.PathFailures != 0 || st.Pipeline.PathsUp != 1 || nodes != 0 {
		t.Fatalf("answering peer: stats %+v, %d node reports", st.Pipeline, nodes)
	}
	answer.Store(false)
	for u.Stats().Control.NodeReportsSent == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.nodes) != 1 || c.nodes[0].ReportType != pfcp.NodeReportUPFR ||
		!reflect.DeepEqual(c.nodes[0].PathFailurePeers, []netip.Addr{gnbAddr()}) {
		t.Fatalf("node reports %+v; stats %+v", c.nodes, u.Stats())
	}
}

// The UPF's N6 pools name the network of a FAR that names none: on the
// default two DNNs, an SMF that never sends a Network Instance (SMF
// simulators) establishes sessions for UE addresses of either pool, and
// only an address in neither is refused (TS 29.244 §7.5.2.3-2).
func TestNetworkInstanceFromN6Pool(t *testing.T) {
	cfg := upf.DefaultConfig()
	cfg.N3Addr, cfg.NoN6 = "127.0.0.1:0", true
	_, up, _ := start(t, cfg)
	for i, c := range []struct {
		ue   string
		want pfcp.Cause
	}{{"10.60.0.9", pfcp.CauseRequestAccepted}, {"10.61.0.9", pfcp.CauseRequestAccepted}, {"192.0.2.9", pfcp.CauseRuleCreationModificationFailure}} {
		ue := netip.MustParseAddr(c.ue)
		est, err := up.EstablishSession(context.Background(), &pfcp.SessionEstablishmentRequest{
			NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")},
			CPFSEID: pfcp.FSEID{SEID: uint64(10 + i), IPv4: netip.MustParseAddr("127.0.0.1")},
			CreatePDRs: []pfcp.CreatePDR{
				{ID: 1, Precedence: 100, FARID: 1, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}}},
				{ID: 2, Precedence: 100, FARID: 2,
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ue, Destination: true}}},
			},
			CreateFARs: []pfcp.CreateFAR{
				{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore}},
				{ID: 2, ApplyAction: pfcp.ActionDrop},
			},
		})
		if err != nil || est.Cause != c.want {
			t.Errorf("UE %s: %+v %v, want %v", c.ue, est, err, c.want)
		}
	}
}
