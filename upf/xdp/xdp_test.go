package xdp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// TestUplinkDecap: a G-PDU for an offloaded session leaves on N6 as its
// inner packet, TTL decreased, behind an Ethernet header to the gateway.
func TestUplinkDecap(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, dnIP, 1234, 80, 200)
	for _, pad := range []int{0, 7} { // trailing link padding is trimmed
		frame := append(ulFrame(ulTEID, qfi, inner), make([]byte, pad)...)
		act, out := e.ul(frame)
		e.want(act, xdpRedirect)
		want := ether(gwMAC, n6MAC, decTTL(inner))
		if !bytes.Equal(out, want) {
			t.Fatalf("pad %d: decapsulated frame differs:%s", pad, hexdiff(out, want))
		}
	}
	if st := e.f.Stats(); st.ForwardedUL != 2 {
		t.Fatalf("ForwardedUL %d, want 2", st.ForwardedUL)
	}
}

// TestUplinkNoGateway: without a gateway the inner destination is routed.
func TestUplinkNoGateway(t *testing.T) {
	e := setup(t, func(c *Config) { c.N6[0].Gateway = netip.Addr{} })
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, gwAddr, 1234, 80, 100) // on link: its own neighbour entry
	act, out := e.ul(ulFrame(ulTEID, qfi, inner))
	e.want(act, xdpRedirect)
	if want := ether(gwMAC, n6MAC, decTTL(inner)); !bytes.Equal(out, want) {
		t.Fatalf("frame differs:%s", hexdiff(out, want))
	}
	// No neighbour for an on-link address: the kernel resolves it.
	act, _ = e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, netip.MustParseAddr("10.6.0.99"), 1234, 80, 100)))
	e.want(act, xdpPass)
	if e.stat("fib") != 1 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
}

// TestDownlinkEncapMatchesUpfu: the GTP-U part of what upf_n6 sends is
// byte for byte what upfu's downlink emits for the packet the kernel hands
// it (TTL already decreased by the forwarding to the TUN device); the outer
// headers are what the host path's UDP socket would send.
func TestDownlinkEncapMatchesUpfu(t *testing.T) {
	e := setup(t, nil)
	s := session(sessOpts{qers: []*rules.QER{{ID: 1, QFI: 5, ULOpen: true, DLOpen: true}}})
	e.install(s)

	p, err := upfu.New(upfu.Config{N3Addr: n3Addr, NetworkInstances: []string{"internet"}, EchoInterval: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Install(session(sessOpts{qers: []*rules.QER{{ID: 1, QFI: 5, ULOpen: true, DLOpen: true}}}))
	w := p.NewWorker()

	for _, size := range []int{28, 100, 1400} {
		inner := udp4(dnIP, ueIP, 80, 1234, size)
		act, out := e.dl(dlFrame(inner))
		e.want(act, xdpRedirect)

		host := decTTL(inner)
		buf := make([]byte, upfu.Headroom+len(host))
		copy(buf[upfu.Headroom:], host)
		res := w.Downlink([]upfu.Packet{{Buf: buf, Off: upfu.Headroom, Len: len(host)}}, nil)
		if len(res) != 1 || res[0].Peer != gnb {
			t.Fatalf("upfu: %+v", res)
		}
		if got, want := out[14+28:], res[0].Data(); !bytes.Equal(got, want) {
			t.Fatalf("size %d: GTP-U differs from upfu's:%s", size, hexdiff(got, want))
		}
		if !bytes.Equal(out[:12], append(append([]byte(nil), gnbMAC...), n3MAC...)) {
			t.Fatalf("Ethernet %x", out[:14])
		}
		o := out[14:]
		if !ipv4pkt.ValidChecksum(o) {
			t.Fatal("outer IPv4 checksum")
		}
		ip, err := ipv4pkt.ParseIPv4(o)
		if err != nil {
			t.Fatal(err)
		}
		sport, dport := binary.BigEndian.Uint16(o[20:]), binary.BigEndian.Uint16(o[22:])
		ulen, ucsum := binary.BigEndian.Uint16(o[24:]), binary.BigEndian.Uint16(o[26:])
		if ip.Src != n3Addr || ip.Dst != gnbAddr || ip.Protocol != 17 || sport != gtpu.Port || dport != gtpu.Port ||
			int(ulen) != len(o)-20 || ucsum != 0 ||
			int(binary.BigEndian.Uint16(o[2:])) != len(o) || o[8] != 64 || o[6] != 0x40 {
			t.Fatalf("outer headers %x (%+v)", o[:28], ip)
		}
		var h gtpu.Header
		if err := gtpu.Parse(o[28:], &h); err != nil || h.QFI != 5 || h.TEID != dlTEID || h.PDUType != gtpu.PDUTypeDL {
			t.Fatalf("GTP-U %+v %v", h, err)
		}
	}
	if st := e.f.Stats(); st.ForwardedDL != 3 {
		t.Fatalf("ForwardedDL %d", st.ForwardedDL)
	}
}

// TestPass: what the programs leave to the host path.
func TestPass(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, dnIP, 1234, 80, 100)
	good := ulFrame(ulTEID, qfi, inner)

	withOptions := func() []byte {
		// Outer IPv4 with a 4-byte option (NOP x4).
		f := append([]byte(nil), good[:14]...)
		ip := append([]byte(nil), good[14:34]...)
		ip[0] = 0x46
		binary.BigEndian.PutUint16(ip[2:], binary.BigEndian.Uint16(ip[2:])+4)
		ip = append(ip, 1, 1, 1, 1)
		binary.BigEndian.PutUint16(ip[10:], 0)
		binary.BigEndian.PutUint16(ip[10:], ipv4pkt.Checksum(ip, 0))
		return append(append(f, ip...), good[34:]...)
	}
	fragment := func() []byte {
		f := append([]byte(nil), good...)
		f[14+6] |= 0x20 // MF
		binary.BigEndian.PutUint16(f[14+10:], 0)
		binary.BigEndian.PutUint16(f[14+10:], ipv4pkt.Checksum(f[14:34], 0))
		return f
	}
	innerTTL1 := func() []byte {
		in := append([]byte(nil), inner...)
		in[8] = 1
		binary.BigEndian.PutUint16(in[10:], 0)
		binary.BigEndian.PutUint16(in[10:], ipv4pkt.Checksum(in[:20], 0))
		return ulFrame(ulTEID, qfi, in)
	}
	otherMAC := func() []byte {
		f := append([]byte(nil), good...)
		f[5] = 0x99
		return f
	}
	badInnerCsum := func() []byte {
		in := append([]byte(nil), inner...)
		in[10] ^= 0xff
		return ulFrame(ulTEID, qfi, in)
	}
	comprehensionRequired := func() []byte {
		// An unknown extension header that must be understood (0xc1).
		g := []byte{0x34, 255, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xc1, 1, 0, 0, 0}
		binary.BigEndian.PutUint32(g[4:], ulTEID)
		g = append(g, inner...)
		binary.BigEndian.PutUint16(g[2:], uint16(len(g)-8))
		return gtpFrame(g)
	}
	dlContainer := gtpFrame(gtpu.AppendGPDU(nil, ulTEID, qfi, true, inner))
	ipv6 := append([]byte{0x60, 0, 0, 0, 0, 0, 17, 64}, make([]byte, 32)...)

	for _, c := range []struct {
		name, stat string
		frame      []byte
	}{
		{"unknown TEID", "unknown-teid", ulFrame(0x999, qfi, inner)},
		{"TEID 0", "unknown-teid", ulFrame(0, qfi, inner)},
		{"echo request", "gtpu-message", gtpFrame(gtpu.AppendEchoRequest(nil, 1))},
		{"end marker", "gtpu-message", gtpFrame(gtpu.AppendEndMarker(nil, ulTEID))},
		{"error indication", "gtpu-message", gtpFrame(gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{TEID: 5, PeerAddr: []byte{1, 2, 3, 4}}))},
		{"outer IP options", "ip-header", withOptions()},
		{"outer fragment", "fragment", fragment()},
		{"inner TTL 1", "ttl", innerTTL1()},
		{"inner IPv6", "inner", ulFrame(ulTEID, qfi, ipv6)},
		{"inner bad checksum", "inner", badInnerCsum()},
		{"other MAC", "mac", otherMAC()},
		{"other UDP port", "not-gtpu", ether(n3MAC, gnbMAC, udp4(gnbAddr, n3Addr, 2152, 2153, 100))},
		{"other address", "not-gtpu", ether(n3MAC, gnbMAC, ipv4pkt.AppendUDP(nil, gnbAddr, n6Addr, 2152, 2152, gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner)))},
		{"comprehension-required extension", "gtpu-extension", comprehensionRequired()},
		{"DL container on N3", "gtpu-extension", dlContainer},
		{"ARP", "not-ip", append(append(append([]byte(nil), n3MAC...), gnbMAC...), 0x08, 0x06, 0, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.sub(t)
			before := e.stat(c.stat)
			act, _ := e.ul(c.frame)
			e.want(act, xdpPass)
			if e.stat(c.stat) != before+1 {
				t.Fatalf("%q not counted: %+v", c.stat, e.f.Stats())
			}
		})
	}
}

// TestMalformed: G-PDUs that upfu would drop as malformed are dropped
// and counted.
func TestMalformed(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, dnIP, 1234, 80, 100)
	g := gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner)

	long := append([]byte(nil), g...)
	binary.BigEndian.PutUint16(long[2:], uint16(len(g))) // 8 more than there are
	zeroExt := append([]byte(nil), g...)
	zeroExt[12] = 0 // extension length 0
	overExt := append([]byte(nil), g...)
	overExt[12] = 0xff                                 // runs past the message
	short := []byte{0x34, 255, 0, 2, 0, 0, 1, 0, 0, 0} // optional fields cut

	for i, m := range [][]byte{long, zeroExt, overExt, short} {
		act, _ := e.ul(gtpFrame(m))
		if act != xdpDrop {
			t.Fatalf("case %d: %s", i, action(act))
		}
	}
	if n := e.stat("malformed"); n != 4 {
		t.Fatalf("malformed %d", n)
	}
	// Truncated below the GTP-U header: the UDP length says 8.
	act, _ := e.ul(gtpFrame(nil))
	e.want(act, xdpDrop)
}

// TestQFIMatch: a PDR for one QoS flow matches only its QFI.
func TestQFIMatch(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{ulRules: []classify.Rule{{ID: 0, Precedence: 100,
		Has: classify.FieldSourceInterface | classify.FieldTEID | classify.FieldQFI, TEID: ulTEID, QFI: 5}}}))
	inner := udp4(ueIP, dnIP, 1234, 80, 100)
	act, _ := e.ul(ulFrame(ulTEID, qfi, inner))
	e.want(act, xdpPass)
	if e.stat("no-pdr") != 1 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
	act, _ = e.ul(ulFrame(ulTEID, 5, inner))
	e.want(act, xdpRedirect)
	// Without a PDU Session Container the QFI is 0.
	act, _ = e.ul(gtpFrame(append([]byte{0x30, 255, 0, byte(len(inner)), 0, 0, 1, 0}, inner...)))
	e.want(act, xdpPass)
}

// TestFARDrop: a FAR that drops drops, counted, both ways.
func TestFARDrop(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{ulFAR: rules.ActionDrop, dlFAR: rules.ActionDrop}))
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpDrop)
	act, _ = e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpDrop)
	if n := e.stat("far-drop"); n != 2 {
		t.Fatalf("far-drop %d", n)
	}
}

// TestBufferingFARPasses: a buffering FAR (paging, handover) leaves the
// packets to the host path, which buffers them.
func TestBufferingFARPasses(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	act, _ := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpPass)
	if e.stat("far") != 1 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
	// Other addresses on N6 are none of the fast path's business.
	act, _ = e.dl(dlFrame(udp4(dnIP, netip.MustParseAddr("10.60.0.2"), 2, 1, 100)))
	e.want(act, xdpPass)
}

// TestGateClosed: a closed gate drops, counted, in its direction only.
func TestGateClosed(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{qers: []*rules.QER{{ID: 1, ULOpen: false, DLOpen: true}}}))
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpDrop)
	act, _ = e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpRedirect)
	if n := e.stat("gate-closed"); n != 1 {
		t.Fatalf("gate-closed %d", n)
	}
}

// TestMBR: the kernel's token bucket lets the burst through, then drops.
func TestMBR(t *testing.T) {
	e := setup(t, nil)
	// 1000 bytes/s with a burst of 3000: three 1000-byte packets pass.
	tb := rules.NewTokenBucket(1000, 3000)
	e.install(session(sessOpts{qers: []*rules.QER{{ID: 1, ULOpen: true, DLOpen: true, MBRUL: tb}}}))
	frame := ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 1000))
	for i := range 3 {
		act, _ := e.ul(frame)
		if act != xdpRedirect {
			t.Fatalf("packet %d: %s", i, action(act))
		}
	}
	act, _ := e.ul(frame)
	e.want(act, xdpDrop)
	if n := e.stat("mbr"); n != 1 {
		t.Fatalf("mbr %d", n)
	}
	// Downlink has no MBR.
	for range 5 {
		act, _ := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 1000)))
		e.want(act, xdpRedirect)
	}
	// The bucket keeps its slot and state across snapshots.
	e.install(session(sessOpts{qers: []*rules.QER{{ID: 1, ULOpen: true, DLOpen: true, MBRUL: tb}}}))
	act, _ = e.ul(frame)
	e.want(act, xdpDrop)
}

// TestURRSync: usage counted in the kernel reaches the session's
// counters with Sync, with a report when a threshold is crossed.
func TestURRSync(t *testing.T) {
	e := setup(t, nil)
	u := &rules.URR{ID: 7, Counters: &rules.Counters{}, Threshold: rules.Volume{Total: 500}}
	e.install(session(sessOpts{urrs: []*rules.URR{u}}))
	for range 3 {
		act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
		e.want(act, xdpRedirect)
	}
	if r := e.f.Sync(); len(r) != 0 {
		t.Fatalf("reports %+v before the threshold", r)
	}
	got := u.Counters.Load()
	if got.ULPackets != 3 || got.Volume.UL != 300 || got.Volume.Total != 300 {
		t.Fatalf("usage %+v", got)
	}
	for range 2 {
		act, _ := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 150)))
		e.want(act, xdpRedirect)
	}
	r := e.f.Sync()
	if len(r) != 1 || r[0].SEID != seid || r[0].Kind != rules.ReportUsage || r[0].URRID != 7 ||
		r[0].Volume != (rules.Volume{Total: 600, UL: 300, DL: 300}) || r[0].ULPackets != 3 || r[0].DLPackets != 2 {
		t.Fatalf("reports %+v", r)
	}
	if r := e.f.Sync(); len(r) != 0 {
		t.Fatalf("reports %+v after", r)
	}
	// SyncSession folds one session's counters; another SEID's fold
	// leaves them.
	e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.f.SyncSession(seid + 1)
	if got := u.Counters.Load(); got.ULPackets != 3 {
		t.Fatalf("usage after another session's fold %+v", got)
	}
	e.f.SyncSession(seid)
	if got := u.Counters.Load(); got.ULPackets != 4 || got.Volume.Total != 700 {
		t.Fatalf("usage after SyncSession %+v", got)
	}
	// Remove folds what was counted since.
	e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.f.Remove(seid)
	if got := u.Counters.Load(); got.ULPackets != 5 || got.Volume.Total != 800 {
		t.Fatalf("usage after Remove %+v", got)
	}
}

// TestURRCountsOfEveryCPU: each CPU counts in a region of its own;
// Sync sums them, and a slot handed out again starts from zero on every
// CPU.
func TestURRCountsOfEveryCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	e := setup(t, nil)
	u := &rules.URR{ID: 7, Counters: &rules.Counters{}}
	e.install(session(sessOpts{urrs: []*rules.URR{u}}))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &all)
	for cpu, n := range []int{2, 3} {
		pinThread(t, cpu)
		for range n {
			act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
			e.want(act, xdpRedirect)
		}
		if got := e.f.counters.at(cpu, 0); binary.NativeEndian.Uint64(got) != uint64(n) {
			t.Fatalf("CPU %d's region counts %d packets, want %d", cpu, binary.NativeEndian.Uint64(got), n)
		}
	}
	e.f.Sync()
	if got := u.Counters.Load(); got.ULPackets != 5 || got.Volume.UL != 500 {
		t.Fatalf("usage %+v, want 5 packets from two CPUs", got)
	}
	// The slot again, for another URR: nothing of the last one's counts.
	e.f.Remove(seid)
	u2 := &rules.URR{ID: 8, Counters: &rules.Counters{}}
	e.install(session(sessOpts{urrs: []*rules.URR{u2}}))
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpRedirect)
	e.f.Sync()
	if got := u2.Counters.Load(); got.ULPackets != 1 || got.Volume.UL != 100 {
		t.Fatalf("usage of the slot's next URR %+v", got)
	}
}

// TestRemove: a removed session's packets go to the host path.
func TestRemove(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	e.f.Remove(seid)
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpPass)
	act, _ = e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpPass)
	if st := e.f.Stats(); st.Sessions != 0 || st.Passed["unknown-teid"] != 1 || st.Passed["no-session"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestMapFull: a session that does not fit stays on the host path.
func TestMapFull(t *testing.T) {
	e := setup(t, func(c *Config) { c.MaxSessions = 2 })
	// Keys that share one place of the index: the first takes it, the
	// others fill the hash maps (two entries each).
	size := IndexPlaces(2)
	sess := func(k int) *rules.Session {
		return session(sessOpts{seid: uint64(k + 1), ulTEID: 1 + uint32(k)*size,
			ue: netip.AddrFrom4([4]byte{10, 60, byte(uint32(k) * size >> 8), byte(1 + uint32(k)*size)})})
	}
	for k := range 3 {
		e.install(sess(k))
	}
	if e.f.Install(sess(3)) {
		t.Fatal("fourth session offloaded into an index place and maps of two")
	}
	if st := e.f.Stats(); st.Sessions != 3 || st.NotOffloadedMapFull != 1 || st.Keys != 6 || st.Indexed != 2 {
		t.Fatalf("stats %+v", st)
	}
	for k := range 3 {
		act, _ := e.ul(ulFrame(1+uint32(k)*size, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
		e.want(act, xdpRedirect)
	}
	act, _ := e.ul(ulFrame(1+3*size, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpPass)
	// Replacing an installed session still works.
	e.install(sess(2))
}

// TestNotOffloadable: rules beyond the programs keep the whole session on
// the host path, and take an installed one off.
func TestNotOffloadable(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	s := session(sessOpts{ulRules: []classify.Rule{{ID: 0, Precedence: 100,
		Has: classify.FieldTEID | classify.FieldAppID, TEID: ulTEID, AppID: 3}}})
	if e.f.Install(s) {
		t.Fatal("application ID rule offloaded")
	}
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpPass)
	if st := e.f.Stats(); st.Sessions != 0 || st.NotOffloaded != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSDFAndFlowCache: SDF filters in precedence order, the flow cache
// remembers the match, and an Install invalidates it.
func TestSDFAndFlowCache(t *testing.T) {
	e := setup(t, nil)
	web := classify.PrefixFromNetip(netip.MustParsePrefix("8.8.8.0/24"))
	s := session(sessOpts{ulRules: []classify.Rule{
		// PDR 0 (forward) for UDP to 8.8.8.0/24 ports 50-90; the rest
		// matches nothing (no catch-all): host path.
		{ID: 0, Precedence: 10, Has: classify.FieldTEID | classify.FieldProto | classify.FieldDstPort,
			TEID: ulTEID, Proto: 17, DstIP: web, DstPort: classify.PortRange{Lo: 50, Hi: 90}},
	}})
	e.install(s)
	for i := range 3 {
		act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 100)))
		if act != xdpRedirect {
			t.Fatalf("packet %d: %s", i, action(act))
		}
	}
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 91, 100)))
	e.want(act, xdpPass)
	act, _ = e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, netip.MustParseAddr("9.9.9.9"), 1234, 80, 100)))
	e.want(act, xdpPass)
	st := e.f.Stats()
	if st.FlowCacheMisses != 3 || st.FlowCacheHits != 2 {
		t.Fatalf("flow cache hits %d misses %d", st.FlowCacheHits, st.FlowCacheMisses)
	}
	// The same flow after a rule change: PDR 1 drops port 80.
	s2 := session(sessOpts{ulRules: []classify.Rule{
		{ID: 0, Precedence: 10, Has: classify.FieldTEID | classify.FieldProto | classify.FieldDstPort,
			TEID: ulTEID, Proto: 17, DstIP: web, DstPort: classify.PortRange{Lo: 50, Hi: 90}},
	}, ulFAR: rules.ActionDrop})
	e.install(s2)
	act, _ = e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 100)))
	e.want(act, xdpDrop)
	if st := e.f.Stats(); st.FlowCacheMisses != 4 {
		t.Fatalf("flow cache misses %d after Install", st.FlowCacheMisses)
	}
}

// TestUEAddressRuleNoFlowCache: the UE IP address of an uplink PDI (the
// SMF sends it with every session) is checked in the rule itself, without
// the flow cache, which only pays for rules on the inner 5-tuple; a
// packet from another source still misses the rule.
func TestUEAddressRuleNoFlowCache(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{ulRules: []classify.Rule{{ID: 0, Precedence: 100,
		Has:  classify.FieldSourceInterface | classify.FieldTEID | classify.FieldQFI,
		TEID: ulTEID, QFI: qfi, UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ueIP, 32))}}}))
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 100)))
	e.want(act, xdpRedirect)
	act, _ = e.ul(ulFrame(ulTEID, qfi, udp4(netip.MustParseAddr("10.60.9.9"), dnIP, 1234, 80, 100)))
	e.want(act, xdpPass)
	if st := e.f.Stats(); st.FlowCacheHits != 0 || st.FlowCacheMisses != 0 || st.ForwardedUL != 1 {
		t.Fatalf("flow cache hits %d misses %d, forwarded %d", st.FlowCacheHits, st.FlowCacheMisses, st.ForwardedUL)
	}
}

// TestPrecedence: the first rule in precedence order wins; the UE IP
// address IE checks the inner source uplink.
func TestPrecedence(t *testing.T) {
	e := setup(t, nil)
	s := session(sessOpts{})
	drop := &rules.PDR{ID: 3, Precedence: 50, Source: rules.InterfaceAccess, FAR: &rules.FAR{ID: 3, Action: rules.ActionDrop}}
	s.PDRs = append(s.PDRs, drop)
	s.UplinkRules = []classify.Rule{
		{ID: 0, Precedence: 100, Has: classify.FieldTEID, TEID: ulTEID, UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ueIP, 32))},
		{ID: 2, Precedence: 50, Has: classify.FieldTEID | classify.FieldProto, TEID: ulTEID, Proto: 6},
	}
	e.install(s)
	act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
	e.want(act, xdpRedirect)
	tcp := udp4(ueIP, dnIP, 1, 2, 100)
	tcp[9] = 6
	binary.BigEndian.PutUint16(tcp[10:], 0)
	binary.BigEndian.PutUint16(tcp[10:], ipv4pkt.Checksum(tcp[:20], 0))
	act, _ = e.ul(ulFrame(ulTEID, qfi, tcp))
	e.want(act, xdpDrop)
	// Another inner source than the UE's: no PDR.
	act, _ = e.ul(ulFrame(ulTEID, qfi, udp4(netip.MustParseAddr("10.60.0.9"), dnIP, 1, 2, 100)))
	e.want(act, xdpPass)
}

// TestDownlinkNoNeighbour: a gNB whose MAC is unknown gets its packets
// through the kernel, which resolves it.
func TestDownlinkNoNeighbour(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{peer: netip.MustParseAddrPort("10.3.0.3:2152")}))
	act, _ := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpPass)
	if e.stat("fib") != 1 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
	// Too big for N3 once encapsulated.
	e.install(session(sessOpts{}))
	act, _ = e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 1480)))
	e.want(act, xdpPass)
	if e.stat("mtu") != 1 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
}

// TestDownlinkOtherMAC: a downlink frame not addressed to the N6
// interface it arrived on (nor received on an interface that is no N6
// port) is the host's.
func TestDownlinkOtherMAC(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	other := ether(n6MAC, gwMAC, udp4(dnIP, ueIP, 2, 1, 100))
	other[5] ^= 0x99
	act, _ := e.dl(other)
	e.want(act, xdpPass)
	// The N6 program run as if the frame came in on N3, which is no N6
	// port here.
	act, _ = e.run(e.f.objs.UpfN6, e.n3, dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpPass)
	if e.stat("mac") != 2 || e.f.Stats().ForwardedDL != 0 {
		t.Fatalf("stats %+v", e.f.Stats())
	}
	act, _ = e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpRedirect)
}

// TestPrepare: a snapshot that moves the tunnel with End Markers takes the
// session off the fast path until Install.
func TestPrepare(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	next := session(sessOpts{peer: netip.MustParseAddrPort("10.3.0.2:2153")})
	next.PDRs[1].FAR.SendEndMarker = true
	e.f.Prepare(next)
	act, _ := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpPass)
	e.install(next)
	act, out := e.dl(dlFrame(udp4(dnIP, ueIP, 2, 1, 100)))
	e.want(act, xdpRedirect)
	if binary.BigEndian.Uint16(out[14+22:]) != 2153 {
		t.Fatalf("UDP destination port %d", binary.BigEndian.Uint16(out[14+22:]))
	}
}

// TestSharedInterface: one interface that is N3 and N6 at once gets
// upf_n3, which runs the downlink for what is not GTP-U to the N3 address.
func TestSharedInterface(t *testing.T) {
	e := setup(t, func(c *Config) { c.N6 = []Port{{NetworkInstance: "internet", Iface: "n3", Gateway: gnbAddr}} })
	sh(t, "ip -n "+e.ns+" route replace default via 10.3.0.2 dev n3")
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, dnIP, 1234, 80, 100)
	act, out := e.ul(ulFrame(ulTEID, qfi, inner))
	e.want(act, xdpRedirect)
	if want := ether(gnbMAC, n3MAC, decTTL(inner)); !bytes.Equal(out, want) {
		t.Fatalf("uplink differs:%s", hexdiff(out, want))
	}
	act, out = e.ul(ether(n3MAC, gnbMAC, udp4(dnIP, ueIP, 80, 1234, 100)))
	e.want(act, xdpRedirect)
	var h gtpu.Header
	if err := gtpu.Parse(out[14+28:], &h); err != nil || h.TEID != dlTEID {
		t.Fatalf("downlink %+v %v", h, err)
	}
	// Neither: counted once.
	act, _ = e.ul(ether(n3MAC, gnbMAC, udp4(dnIP, n3Addr, 80, 1234, 100)))
	e.want(act, xdpPass)
	if st := e.f.Stats(); st.Passed["no-session"] != 1 || st.Passed["not-gtpu"] != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestUplinkRoutedElsewhere: an inner destination that the kernel does
// not route out of the FAR's N6 port (a local address, another UE pool
// behind a TUN device, loopback) is the host path's, with or without a
// gateway (with one, the UE pools are named in Config.Pools).
func TestUplinkRoutedElsewhere(t *testing.T) {
	for _, gw := range []netip.Addr{gwAddr, {}} {
		e := setup(t, func(c *Config) {
			c.N6[0].Gateway = gw
			c.Pools = []netip.Prefix{netip.MustParsePrefix("10.61.0.0/16")}
		})
		sh(t, "ip -n "+e.ns+" link add pool type veth peer name poolp", "ip -n "+e.ns+" link set pool up", "ip -n "+e.ns+" link set poolp up",
			"ip -n "+e.ns+" route add 10.61.0.0/16 dev pool")
		e.install(session(sessOpts{}))
		for _, dst := range []string{"10.6.0.1", "10.3.0.1", "10.61.0.5", "127.0.0.1"} {
			act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, netip.MustParseAddr(dst), 1, 2, 100)))
			if act != xdpPass {
				t.Fatalf("gateway %v, inner destination %s: %s", gw, dst, action(act))
			}
		}
		act, _ := e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100)))
		e.want(act, xdpRedirect)
	}
}

// TestObjectFresh: the committed BPF object was generated from the
// committed C (make bpf regenerates both the object and the digest).
func TestObjectFresh(t *testing.T) {
	src, err := os.ReadFile("bpf/upf.c")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("bpf/upf.c.sha256")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(src)); got != strings.TrimSpace(string(want)) {
		t.Fatalf("bpf/upf.c changed since upf_bpfel.o was generated: run make bpf")
	}
}

// TestPrepareStopsForwarding: a snapshot whose FAR turns from forwarding
// to buffering (handover, paging) takes the session off the fast path
// before the host path installs it.
func TestPrepareStopsForwarding(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	next := session(sessOpts{dlFAR: rules.ActionBuffer})
	e.f.Prepare(next)
	if st := e.f.Stats(); st.Sessions != 0 {
		t.Fatalf("still offloaded: %+v", st)
	}
	// A snapshot that changes nothing on the way leaves it alone.
	e.install(session(sessOpts{}))
	e.f.Prepare(session(sessOpts{}))
	if st := e.f.Stats(); st.Sessions != 1 {
		t.Fatalf("taken off: %+v", st)
	}
}

// TestNextHopCache: the programs take the next hop of a gateway and of a
// gNB from the cache that package nexthop keeps from the kernel's tables,
// and follow a changed neighbour within the refresh.
func TestNextHopCache(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	dmac := func(frame []byte) net.HardwareAddr { return net.HardwareAddr(frame[0:6]) }
	waitHop := func(a netip.Addr, mac string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			var v upfNexthop
			if err := e.f.objs.Nexthops.Lookup(be32(a), &v); err == nil && net.HardwareAddr(v.Dmac[:]).String() == mac {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("next hop %v never became %s", a, mac)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The port's own slot (port_hops) for its gateway: which slot, and the
	// MAC it holds.
	portHop := func(mac string) uint32 {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			var p upfPort
			var v upfNexthop
			if err := e.f.objs.Ports.Lookup(uint32(0), &p); err == nil && p.Hop != 0 &&
				e.f.objs.PortHops.Lookup(p.Hop-1, &v) == nil && net.HardwareAddr(v.Dmac[:]).String() == mac {
				return p.Hop
			}
			if time.Now().After(deadline) {
				t.Fatalf("the port's next hop never became %s", mac)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitHop(gwAddr, "02:00:00:00:06:02")
	waitHop(gnbAddr, "02:00:00:00:03:02")
	slot := portHop("02:00:00:00:06:02")
	// plantedGoesTo: with a MAC planted in slot pub-1 of m (the resolver
	// rewrites slots only when a hop changes), the frame run goes there:
	// the program reads the slot, not the nexthops hash map.
	plantedGoesTo := func(what string, m *ebpf.Map, pub uint32, run func() (uint32, []byte)) {
		t.Helper()
		var held upfNexthop
		if err := m.Lookup(pub-1, &held); err != nil {
			t.Fatal(err)
		}
		planted := held
		planted.Dmac = [6]byte{2, 0, 0, 0, 9, 0x77}
		if err := m.Update(pub-1, &planted, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
		defer m.Update(pub-1, &held, ebpf.UpdateAny)
		act, out := run()
		e.want(act, xdpRedirect)
		if got := dmac(out).String(); got != "02:00:00:00:09:77" {
			t.Fatalf("%s to %s, not to its slot", what, got)
		}
	}
	ul := func() (uint32, []byte) { return e.ul(ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100))) }
	dl := func() (uint32, []byte) { return e.dl(dlFrame(udp4(dnIP, ueIP, 80, 1234, 100))) }
	plantedGoesTo("uplink", e.f.objs.PortHops, slot, ul)
	act, out := ul()
	e.want(act, xdpRedirect)
	if got := dmac(out).String(); got != "02:00:00:00:06:02" {
		t.Fatalf("uplink to %s", got)
	}
	sh(t, "ip -n "+e.ns+" neigh replace 10.6.0.2 lladdr 02:00:00:00:06:99 dev n6 nud permanent")
	waitHop(gwAddr, "02:00:00:00:06:99")
	if next := portHop("02:00:00:00:06:99"); next == slot {
		t.Fatalf("the new next hop was written into the slot in use (%d)", slot)
	}
	act, out = ul()
	e.want(act, xdpRedirect)
	if got := dmac(out).String(); got != "02:00:00:00:06:99" {
		t.Fatalf("uplink after the neighbour changed went to %s", got)
	}
	act, out = dl()
	e.want(act, xdpRedirect)
	if got := dmac(out).String(); got != "02:00:00:00:03:02" {
		t.Fatalf("downlink to %s", got)
	}

	// The downlink reads its gNB's slot (peer_slot, peer_hops) too.
	id := uint32(e.f.peerID(gnbAddr))
	var gslot uint32
	deadline := time.Now().Add(3 * time.Second)
	for e.f.objs.PeerSlot.Lookup(id, &gslot) != nil || gslot == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("gNB %v (index %d) has no slot", gnbAddr, id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	plantedGoesTo("downlink", e.f.objs.PeerHops, gslot, dl)
}

// TestClock: the programs' clock (the clock map, which QoS reads instead
// of calling the kernel's clock) runs once Open has armed it: it moves a
// millisecond at a time and is never ahead of CLOCK_MONOTONIC, the clock
// of bpf_ktime_get_ns, which judges what it would drop.
func TestClock(t *testing.T) {
	e := setup(t, nil)
	read := func() (stored, mono uint64) {
		var c upfClock
		if err := e.f.objs.Clock.Lookup(uint32(0), &c); err != nil {
			t.Fatal(err)
		}
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return c.Now, uint64(ts.Nano())
	}
	s1, m1 := read()
	time.Sleep(50 * time.Millisecond)
	s2, m2 := read()
	if s1 == 0 || s1 > m1 || s2 > m2 {
		t.Fatalf("stored %d, %d; monotonic %d, %d", s1, s2, m1, m2)
	}
	// Loose bounds: a loaded machine runs timers late.
	if s2-s1 < uint64(10*time.Millisecond) || m2-s2 > uint64(500*time.Millisecond) {
		t.Fatalf("the clock moved %v in 50 ms and is %v behind", time.Duration(s2-s1), time.Duration(m2-s2))
	}
}

// freshNSEnv marks the test binary re-run by TestFreshNamespace.
const freshNSEnv = "TERN_XDP_TEST_FRESH_NETNS"

// TestFreshNamespace runs TestPass, whose cases are subtests, in a network
// namespace that holds only lo, as a CI runner's or a container's may: a
// subtest that ran the programs from the host namespace's thread found no
// device by the test network's interface index there ("no such device";
// in a host namespace with more devices it found another one).
func TestFreshNamespace(t *testing.T) {
	requireRoot(t)
	if os.Getenv(freshNSEnv) != "" {
		t.Skip("already in the fresh namespace")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	ns := fmt.Sprintf("tern-xdp-fresh-%d", os.Getpid())
	sh(t, "ip netns add "+ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	cmd := exec.Command("ip", "netns", "exec", ns, exe, "-test.run", "^TestPass$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), freshNSEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestPass in a fresh namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestPass ") {
		t.Fatalf("TestPass did not run in the fresh namespace:\n%s", out)
	}
}
