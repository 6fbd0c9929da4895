package upfbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/internal/traffic"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf"
)

func TestIPv4UDPExactSizeAndChecksum(t *testing.T) {
	src := netip.MustParseAddrPort("10.60.0.2:9000")
	dst := netip.MustParseAddrPort("192.0.2.1:9001")
	for _, size := range []int{28, 64, 1400} {
		b, err := IPv4UDP(src, dst, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size || int(binary.BigEndian.Uint16(b[2:4])) != size {
			t.Fatalf("size %d: got %d bytes, total length %d", size, len(b), binary.BigEndian.Uint16(b[2:4]))
		}
		// A header with its checksum in place sums to zero (RFC 1071).
		if c := ipv4pkt.Checksum(b[:20], 0); c != 0 {
			t.Fatalf("size %d: header checksum does not verify (%#04x)", size, c)
		}
		if !bytes.Equal(b[12:16], []byte{10, 60, 0, 2}) || !bytes.Equal(b[16:20], []byte{192, 0, 2, 1}) {
			t.Fatalf("addresses % x", b[12:20])
		}
		if binary.BigEndian.Uint16(b[20:22]) != 9000 || binary.BigEndian.Uint16(b[22:24]) != 9001 ||
			int(binary.BigEndian.Uint16(b[24:26])) != size-20 {
			t.Fatalf("size %d: UDP header % x", size, b[20:28])
		}
		if len(Payload(size))+IPv4UDPHeaders != size {
			t.Fatalf("size %d: plain payload %d bytes", size, len(Payload(size)))
		}
	}
	if _, err := IPv4UDP(src, dst, 27); err == nil {
		t.Fatal("27 bytes accepted")
	}
	if _, err := IPv4UDP(netip.MustParseAddrPort("[::1]:1"), dst, 64); err == nil {
		t.Fatal("IPv6 accepted")
	}
}

func TestUplinkGPDUParses(t *testing.T) {
	inner, err := IPv4UDP(netip.MustParseAddrPort("10.60.0.2:9000"), netip.MustParseAddrPort("192.0.2.1:9000"), 64)
	if err != nil {
		t.Fatal(err)
	}
	b := UplinkGPDU(0x10001, inner)
	if len(b)+20+8 != len(inner)+Overhead {
		t.Fatalf("G-PDU %d bytes for a %d-byte packet", len(b), len(inner))
	}
	var h gtpu.Header
	if err := gtpu.Parse(b, &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != gtpu.TypeGPDU || h.TEID != 0x10001 || !h.HasPDUSessionContainer || h.QFI != QFI || !bytes.Equal(h.Payload(b), inner) {
		t.Fatalf("parsed %+v", h)
	}
}

func TestPlan(t *testing.T) {
	ss, err := Plan(1000, netip.MustParsePrefix("10.60.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]bool{}
	teids := map[uint32]bool{}
	for _, s := range ss {
		if seen[s.UE] || teids[s.ULTEID] || teids[s.DLTEID] {
			t.Fatalf("duplicate in %+v", s)
		}
		seen[s.UE], teids[s.ULTEID], teids[s.DLTEID] = true, true, true
	}
	if ss[0].UE != netip.MustParseAddr("10.60.0.2") {
		t.Fatalf("first UE %v: the pool's first host belongs to the N6 device", ss[0].UE)
	}
	if _, err := Plan(5, netip.MustParsePrefix("10.60.0.0/30")); err == nil {
		t.Fatal("5 sessions in a /30 accepted")
	}
	if _, err := Plan(0, netip.MustParsePrefix("10.60.0.0/16")); err == nil {
		t.Fatal("0 sessions accepted")
	}
}

// The rules are accepted by tern's UPF-C, and removed again (no N3/N6 is
// opened: the handler works before Start).
func TestInstallRemove(t *testing.T) {
	u, err := upf.New(upf.Config{N3Addr: "10.100.3.2:2152", N6: []upf.N6Config{{DNN: "internet", Pool: "10.60.0.0/16"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	topo := Topology{SMF: netip.MustParseAddr("127.0.0.1"), N3: netip.MustParseAddr("10.100.3.2"), GNB: netip.MustParseAddr("10.100.3.1"), DNN: "internet"}
	up := pfcp.Direct(u.Handler(), nil)
	if r, err := up.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: pfcp.NodeID{IP: topo.SMF}, RecoveryTime: time.Now()}); err != nil || r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association: %v %+v", err, r)
	}
	ss, err := Plan(50, netip.MustParsePrefix("10.60.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Install(ctx, up, topo, ss); err != nil {
		t.Fatal(err)
	}
	st := u.Stats().Control
	if st.Sessions != 50 || st.PDRs != 100 || st.FARs != 100 {
		t.Fatalf("after install: %+v", st)
	}
	// A second install of the same TEIDs by other sessions must fail.
	other := append([]Session(nil), ss[:1]...)
	other[0].CPSEID = 999
	if err := Install(ctx, up, topo, other); err == nil {
		t.Fatal("duplicate TEID accepted")
	}
	if err := Remove(ctx, up, ss); err != nil {
		t.Fatal(err)
	}
	if st := u.Stats().Control; st.Sessions != 0 {
		t.Fatalf("after remove: %d sessions", st.Sessions)
	}
}

func TestMeasureCountsLoopback(t *testing.T) {
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	to := probe.LocalAddr().(*net.UDPAddr)
	probe.Close() // Measure opens the sink on this port
	f := Flow{Send: tx, Datagrams: []traffic.Datagram{{Payload: Payload(64), To: to}},
		OpenSink: func() (*net.UDPConn, error) { return net.ListenUDP("udp4", to) }}
	s, err := Measure(context.Background(), f, 20*time.Millisecond, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sent == 0 || s.Delivered == 0 || s.Delivered > s.Sent || s.PPS() <= 0 || s.Loss() < 0 || s.Loss() >= 1 {
		t.Fatalf("sample %+v: pps %f loss %f", s, s.PPS(), s.Loss())
	}
}

func TestSampleArithmetic(t *testing.T) {
	s := Sample{Sent: 1000, Delivered: 750, Elapsed: 500 * time.Millisecond}
	if s.PPS() != 1500 || s.Loss() != 0.25 {
		t.Fatalf("pps %f loss %f", s.PPS(), s.Loss())
	}
	if (Sample{}).PPS() != 0 || (Sample{}).Loss() != 0 {
		t.Fatal("empty sample")
	}
}
