package xdp

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/upf/rules"
)

// inNS runs fn in the named network namespace (sockets fn opens belong
// to it), on the calling thread, which lab.Do takes back afterwards.
func inNS(t *testing.T, name string, fn func()) {
	t.Helper()
	if err := lab.Do(name, func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestEndToEnd sends real traffic through the attached programs:
//
//	ran ns: gnb 10.3.0.2  <-veth->  upf ns: n3 10.3.0.1 [upf_n3]
//	dn ns:  dn 10.6.0.2   <-veth->  upf ns: n6 10.6.0.1 [upf_n6]
//
// A G-PDU from the gNB arrives as plain UDP at a server in the dn
// namespace, and the server's answer arrives at the gNB as a G-PDU. The
// upf namespace runs no host path (no GTP-U socket, no route to the UE),
// so delivery proves the fast path. The veth ends that receive redirected
// frames (gnb, dn) carry an XDP_PASS program: a veth drops XDP frames
// redirected towards a peer that has no XDP program (unless GRO is on).
func TestEndToEnd(t *testing.T) {
	requireRoot(t)
	upf, ran, dn := threeNamespaces(t, "tern-e2e")
	f, err := Load(Config{N3Iface: "n3", N3Addr: n3Addr,
		N6: []Port{{NetworkInstance: "internet", Iface: "n6", Gateway: gwAddr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u1 := &rules.URR{ID: 1, Counters: &rules.Counters{}}
	s := session(sessOpts{urrs: []*rules.URR{u1}})
	if !f.Install(s) {
		t.Fatal("Install = false")
	}
	gnbConn, server := e2ePeers(t, f, ran, dn)

	// Uplink: UE 10.60.0.1:4000 -> 10.6.0.2:9999 in a G-PDU. Retried: the
	// first packets may meet ARP on the receiving side.
	payload := []byte("uplink through XDP")
	inner := ipv4pkt.AppendUDP(nil, ueIP, gwAddr, 4000, 9999, payload)
	buf := make([]byte, 2048)
	var from *net.UDPAddr
	for try := 0; ; try++ {
		if _, err := gnbConn.WriteToUDP(gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner), &net.UDPAddr{IP: net.IP{10, 3, 0, 1}, Port: gtpu.Port}); err != nil {
			t.Fatal(err)
		}
		server.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var n int
		n, from, err = server.ReadFromUDP(buf)
		if err == nil {
			if !bytes.Equal(buf[:n], payload) || from.String() != "10.60.0.1:4000" {
				t.Fatalf("server got %q from %v", buf[:n], from)
			}
			break
		}
		if try == 10 {
			for _, c := range []string{"ip -n " + dn + " -s link show dn", "ip netns exec " + dn + " nstat -az", "ip -n " + upf + " -s link show n6", "ip netns exec " + dn + " sysctl net.ipv4.conf.all.rp_filter net.ipv4.conf.dn.rp_filter"} {
				out, _ := exec.Command("sh", "-c", c).CombinedOutput()
				t.Logf("%s\n%s", c, out)
			}
			t.Fatalf("uplink never arrived: %v; stats %+v", err, f.Stats())
		}
	}

	// Downlink: the server answers the UE; the gNB gets a G-PDU.
	answer := []byte("downlink through XDP")
	for try := 0; ; try++ {
		if _, err := server.WriteToUDP(answer, from); err != nil {
			t.Fatal(err)
		}
		gnbConn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, src, err := gnbConn.ReadFromUDP(buf)
		if err == nil {
			var gh gtpu.Header
			if err := gtpu.Parse(buf[:n], &gh); err != nil {
				t.Fatal(err)
			}
			in := gh.Payload(buf[:n])
			if gh.TEID != dlTEID || gh.QFI != qfi || src.String() != "10.3.0.1:2152" ||
				len(in) < 28 || !bytes.Equal(in[28:], answer) || netip.AddrFrom4([4]byte(in[16:20])) != ueIP {
				t.Fatalf("gNB got %+v from %v: %x", gh, src, buf[:n])
			}
			break
		}
		if try == 10 {
			t.Fatalf("downlink never arrived: %v; stats %+v", err, f.Stats())
		}
	}
	st := f.Stats()
	if st.ForwardedUL == 0 || st.ForwardedDL == 0 {
		t.Fatalf("stats %+v", st)
	}
	f.Sync()
	if use := u1.Counters.Load(); use.ULPackets == 0 || use.DLPackets == 0 {
		t.Fatalf("usage %+v", use)
	}
	t.Logf("stats %+v", st)
}

// e2ePeers attaches PassAll to the veth ends in ran and dn (they receive
// frames the programs redirect, which a veth drops towards a peer without
// an XDP program) and opens the gNB's GTP-U socket there and the server.
func e2ePeers(t *testing.T, f *FastPath, ran, dn string) (gnb, server *net.UDPConn) {
	t.Helper()
	for _, x := range []struct{ ns, ifc string }{{ran, "gnb"}, {dn, "dn"}} {
		inNS(t, x.ns, func() {
			ifc, err := net.InterfaceByName(x.ifc)
			if err != nil {
				t.Error(err)
				return
			}
			l, err := link.AttachXDP(link.XDPOptions{Program: f.Programs().PassAll, Interface: ifc.Index})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { l.Close() })
		})
	}
	var err error
	inNS(t, ran, func() {
		gnb, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP{10, 3, 0, 2}, Port: gtpu.Port})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gnb.Close() })
	inNS(t, dn, func() {
		server, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP{10, 6, 0, 2}, Port: 9999})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return gnb, server
}

// threeNamespaces builds ran ── veth ── upf ── veth ── dn (gnb 10.3.0.2,
// n3 10.3.0.1; n6 10.6.0.1, dn 10.6.0.2, which routes the UE pool back
// through the UPF) with permanent neighbours, and moves the calling
// goroutine's thread into upf for good (Go discards it when the test
// ends).
func threeNamespaces(t *testing.T, prefix string) (upf, ran, dn string) {
	t.Helper()
	base := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), nsSeq.Add(1))
	upf, ran, dn = base+"-upf", base+"-ran", base+"-dn"
	for _, ns := range []string{upf, ran, dn} {
		sh(t, "ip netns add "+ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	u, r, d := "ip -n "+upf+" ", "ip -n "+ran+" ", "ip -n "+dn+" "
	sh(t,
		u+"link add n3 address 02:00:00:00:03:01 type veth peer name gnb address 02:00:00:00:03:02 netns "+ran,
		u+"link add n6 address 02:00:00:00:06:01 type veth peer name dn address 02:00:00:00:06:02 netns "+dn,
		u+"addr add 10.3.0.1/24 dev n3", u+"addr add 10.6.0.1/24 dev n6",
		u+"link set n3 up", u+"link set n6 up", u+"link set lo up",
		u+"neigh add 10.3.0.2 lladdr 02:00:00:00:03:02 dev n3 nud permanent",
		u+"neigh add 10.6.0.2 lladdr 02:00:00:00:06:02 dev n6 nud permanent",
		"ip netns exec "+upf+" sysctl -qw net.ipv4.conf.all.forwarding=1",
		r+"addr add 10.3.0.2/24 dev gnb", r+"link set gnb up", r+"link set lo up",
		d+"addr add 10.6.0.2/24 dev dn", d+"link set dn up", d+"link set lo up",
		d+"route add 10.60.0.0/16 via 10.6.0.1",
		d+"neigh add 10.6.0.1 lladdr 02:00:00:00:06:01 dev dn nud permanent",
	)
	enterForGood(t, upf)
	return upf, ran, dn
}
