package xdp

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, false},
		{"", nil, false},
		{"3-1", nil, true},
		{"x", nil, true},
	} {
		got, err := ParseCPUList(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// TestPlanMoves: Rebalance's decision, loads in, moves out.
func TestPlanMoves(t *testing.T) {
	// spread: the buckets of loads round robin over n slots, as
	// configureSteering starts.
	spread := func(nb, n int) []int {
		o := make([]int, nb)
		for b := range o {
			o[b] = b % n
		}
		return o
	}
	slotLoads := func(loads []uint64, owner []int, n int, moves []SteerMove) []uint64 {
		o := slices.Clone(owner)
		for _, m := range moves {
			if o[m.Bucket] != m.From {
				t.Fatalf("move %+v: bucket is on %d", m, o[m.Bucket])
			}
			o[m.Bucket] = m.To
		}
		out := make([]uint64, n)
		for b, l := range loads {
			out[o[b]] += l
		}
		return out
	}
	t.Run("balanced", func(t *testing.T) {
		loads := []uint64{1000, 1000, 1000, 1000}
		if m := planMoves(loads, spread(4, 2), 2); len(m) != 0 {
			t.Fatalf("moves %v", m)
		}
	})
	t.Run("within margin", func(t *testing.T) {
		// 1100 vs 900: 10 % over the average.
		if m := planMoves([]uint64{1100, 900}, spread(2, 2), 2); len(m) != 0 {
			t.Fatalf("moves %v", m)
		}
	})
	t.Run("too little traffic", func(t *testing.T) {
		if m := planMoves([]uint64{rebalanceMinPackets - 1, 0}, spread(2, 2), 2); len(m) != 0 {
			t.Fatalf("moves %v", m)
		}
	})
	t.Run("hot CPU", func(t *testing.T) {
		// Slot 0 carries buckets 0, 2, 4, 6 (400 each), slot 1 buckets
		// 1, 3, 5, 7 (100 each): 1600 vs 400.
		loads := []uint64{400, 100, 400, 100, 400, 100, 400, 100}
		owner := spread(8, 2)
		m := planMoves(loads, owner, 2)
		if len(m) == 0 {
			t.Fatal("no moves")
		}
		for _, x := range m {
			if x.From != 0 || x.To != 1 {
				t.Fatalf("move %+v", x)
			}
		}
		after := slotLoads(loads, owner, 2, m)
		if after[0] != 1200 || after[1] != 800 {
			// One 400 bucket: 1200/800; two would make slot 1 the busier.
			t.Fatalf("loads after %v (moves %v)", after, m)
		}
	})
	t.Run("elephant", func(t *testing.T) {
		// One bucket carries nearly everything: moving it would only
		// make the other CPU the hot one. The rest of its CPU's buckets
		// go.
		m := planMoves([]uint64{10000, 10, 10, 10}, spread(4, 2), 2)
		if len(m) != 1 || m[0] != (SteerMove{Bucket: 2, From: 0, To: 1}) {
			t.Fatalf("moves %v", m)
		}
		if m := planMoves([]uint64{10000, 10}, spread(2, 2), 2); len(m) != 0 {
			t.Fatalf("moves %v", m)
		}
	})
	t.Run("hottest bucket that fits", func(t *testing.T) {
		// Slot 0: 3000 and 1000 (buckets 0, 2); slot 1: 500. The 3000
		// would overshoot; the 1000 fits (3000 vs 1500).
		loads := []uint64{3000, 500, 1000, 0}
		m := planMoves(loads, spread(4, 2), 2)
		if len(m) != 1 || m[0] != (SteerMove{Bucket: 2, From: 0, To: 1}) {
			t.Fatalf("moves %v", m)
		}
	})
	t.Run("three CPUs", func(t *testing.T) {
		// Everything on slot 0 at first: 12 buckets of 100.
		loads := make([]uint64, 12)
		owner := make([]int, 12)
		for b := range loads {
			loads[b] = 100
		}
		m := planMoves(loads, owner, 3)
		after := slotLoads(loads, owner, 3, m)
		// Until the busiest is within the margin: 500 <= 1.25 * 400.
		if !slices.Equal(after, []uint64{500, 400, 300}) {
			t.Fatalf("loads after %v (moves %v)", after, m)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		loads := make([]uint64, 256)
		owner := make([]int, 256)
		for b := range loads {
			loads[b] = 100
		}
		if m := planMoves(loads, owner, 2); len(m) != maxMovesPerRebalance {
			t.Fatalf("%d moves", len(m))
		}
	})
}

// pinThread pins the calling (locked) thread to cpu.
func pinThread(t testing.TB, cpu int) {
	t.Helper()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
}

// steerAll points every bucket at cpu.
func (e *env) steerAll(cpu int) {
	for b := range steerBuckets {
		if err := e.f.objs.SteerTable.Update(uint32(b), uint32(cpu), ebpf.UpdateAny); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) steered() uint64 {
	var n uint64
	vals := make([]uint64, e.f.ncpu)
	for b := range uint32(steerBuckets) {
		if err := e.f.objs.SteerLoad.Lookup(b, &vals); err != nil {
			e.t.Fatal(err)
		}
		for _, v := range vals {
			n += v
		}
	}
	return n
}

func setupSteering(t *testing.T) *env {
	t.Helper()
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	e := setup(t, func(c *Config) { c.CPUs = 2 })
	if got := e.f.SteerCPUs(); len(got) != 2 {
		t.Fatalf("SteerCPUs %v", got)
	}
	return e
}

// TestSteering: the steering programs hand a packet of an offloaded
// session to its bucket's CPU, process it here when that is this CPU,
// and leave everything else on the inline path, which passes to the host
// what it cannot handle.
func TestSteering(t *testing.T) {
	e := setupSteering(t)
	e.install(session(sessOpts{}))
	cpus := e.f.SteerCPUs()
	pinThread(t, cpus[0]) // the test runs execute there
	p := e.f.Programs()
	inner := udp4(ueIP, dnIP, 1234, 80, 200)
	ul := ulFrame(ulTEID, qfi, inner)
	dl := dlFrame(udp4(dnIP, ueIP, 80, 1234, 200))

	// Remote CPU: redirected to the cpumap, not processed (a test run
	// does not execute the redirect).
	e.steerAll(cpus[1])
	act, out := e.run(p.N3Steer, e.n3, ul)
	e.want(act, xdpRedirect)
	if !bytes.Equal(out[:len(ul)], ul) {
		t.Fatal("steered frame changed")
	}
	act, _ = e.run(p.N6Steer, e.n6, dl)
	e.want(act, xdpRedirect)
	if st := e.f.Stats(); st.ForwardedUL != 0 || st.ForwardedDL != 0 || e.steered() != 2 {
		t.Fatalf("steered %d, stats %+v", e.steered(), st)
	}

	// Not steered, whatever the table says: the inline path's verdicts.
	arp := ether(n3MAC, gnbMAC, make([]byte, 28))
	arp[12], arp[13] = 0x08, 0x06
	for _, c := range []struct {
		name  string
		prog  *ebpf.Program
		ifc   *net.Interface
		frame []byte
		stat  string
	}{
		{"ARP on N3", p.N3Steer, e.n3, arp, "not-ip"},
		{"short", p.N3Steer, e.n3, ether(n3MAC, gnbMAC, []byte{0x45}), "not-ip"},
		{"unknown TEID", p.N3Steer, e.n3, ulFrame(0x999, qfi, inner), "unknown-teid"},
		{"echo", p.N3Steer, e.n3, gtpFrame(gtpu.AppendEchoRequest(nil, 1)), "gtpu-message"},
		{"UDP to N3 not GTP-U", p.N3Steer, e.n3, ether(n3MAC, gnbMAC, udp4(gnbAddr, n3Addr, 5, 6, 60)), "not-gtpu"},
		{"ARP on N6", p.N6Steer, e.n6, arp, "not-ip"},
		{"unknown UE", p.N6Steer, e.n6, dlFrame(udp4(dnIP, netip.MustParseAddr("10.60.9.9"), 80, 1234, 100)), "no-session"},
	} {
		before := e.stat(c.stat)
		act, _ := e.run(c.prog, c.ifc, c.frame)
		if act != xdpPass || e.stat(c.stat) != before+1 {
			t.Errorf("%s: action %s, %s %d (was %d)", c.name, action(act), c.stat, e.stat(c.stat), before)
		}
	}
	if e.steered() != 2 {
		t.Fatalf("steered %d", e.steered())
	}

	// This CPU: processed inline, as upf_n3 would.
	e.steerAll(cpus[0])
	act, out = e.run(p.N3Steer, e.n3, ul)
	e.want(act, xdpRedirect)
	if want := ether(gwMAC, n6MAC, decTTL(inner)); !bytes.Equal(out[:len(want)], want) {
		t.Fatalf("decapsulated frame differs:%s", hexdiff(out[:len(want)], want))
	}
	act, _ = e.run(p.N6Steer, e.n6, dl)
	e.want(act, xdpRedirect)
	st := e.f.Stats()
	if st.ForwardedUL != 1 || st.ForwardedDL != 1 || st.PerCPUForwarded[cpus[0]] != 2 || e.steered() != 4 {
		t.Fatalf("steered %d, stats %+v", e.steered(), st)
	}
}

// TestSteeringOff: without CPUs > 1 nothing of the steering is loaded.
func TestSteeringOff(t *testing.T) {
	e := setup(t, func(c *Config) { c.CPUs = 1 })
	if p := e.f.Programs(); p.N3Steer != nil || p.CPU != nil || e.f.SteerCPUs() != nil {
		t.Fatalf("steering loaded: %+v", p)
	}
	if e.f.Rebalance() != nil {
		t.Fatal("Rebalance moved buckets")
	}
}

// TestSteeredEndToEnd is TestEndToEnd with CPUs = 2 and 64 sessions:
// every G-PDU arrives at the server decapsulated and every answer at the
// gNB encapsulated, and both CPUs forwarded some (the sessions' buckets
// are spread over both; the cpumap program runs on the CPU that is not
// the receiving one).
func TestSteeredEndToEnd(t *testing.T) {
	requireRoot(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	const sessions = 64
	upf, ran, dn := threeNamespaces(t, "tern-steer")
	_ = upf
	f, err := Load(Config{N3Iface: "n3", N3Addr: n3Addr, CPUs: 2,
		N6: []Port{{NetworkInstance: "internet", Iface: "n6", Gateway: gwAddr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ue := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 60, 0, byte(i + 1)}) }
	for i := range sessions {
		e := &env{t: t, f: f}
		e.install(session(sessOpts{seid: uint64(100 + i), ue: ue(i), ulTEID: ulTEID + uint32(i)}))
	}
	gnbConn, server := e2ePeers(t, f, ran, dn)

	// Room for every datagram: a frame redirected into a veth becomes an
	// skb of a page or so, and the default buffer holds only some 50.
	for _, c := range []*net.UDPConn{gnbConn, server} {
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// The test runs on one CPU: the uplink and downlink sent from here
	// arrive there (veth), and the other CPU gets its sessions through
	// the cpumap.
	here := f.SteerCPUs()[0]
	pinThread(t, here)

	// recv reads until it has want datagrams or a quiet second, and
	// returns what each source (uplink) or TEID (downlink) sent.
	recv := func(c *net.UDPConn, want int, key func([]byte, *net.UDPAddr) int) map[int]int {
		got := map[int]int{}
		buf := make([]byte, 2048)
		for n := 0; n < want; n++ {
			c.SetReadDeadline(time.Now().Add(time.Second))
			m, from, err := c.ReadFromUDP(buf)
			if err != nil {
				break
			}
			got[key(buf[:m], from)]++
		}
		return got
	}
	const rounds = 4
	var wg sync.WaitGroup
	var ulGot map[int]int
	wg.Go(func() {
		ulGot = recv(server, sessions*rounds, func(_ []byte, from *net.UDPAddr) int { return int(from.IP.To4()[3]) - 1 })
	})
	for round := range rounds {
		for i := range sessions {
			inner := ipv4pkt.AppendUDP(nil, ue(i), gwAddr, 4000, 9999, []byte(fmt.Sprintf("ul %d %d", i, round)))
			if _, err := gnbConn.WriteToUDP(gtpu.AppendGPDU(nil, ulTEID+uint32(i), qfi, false, inner), &net.UDPAddr{IP: net.IP{10, 3, 0, 1}, Port: gtpu.Port}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	var dlGot map[int]int
	wg.Go(func() {
		dlGot = recv(gnbConn, sessions*rounds, func(b []byte, _ *net.UDPAddr) int {
			var gh gtpu.Header
			if gtpu.Parse(b, &gh) != nil || gh.TEID != dlTEID {
				return -1
			}
			in := gh.Payload(b)
			if len(in) < 20 {
				return -1
			}
			return int(in[19]) - 1 // the UE address's last byte
		})
	})
	for round := range rounds {
		for i := range sessions {
			if _, err := server.WriteToUDP([]byte(fmt.Sprintf("dl %d %d", i, round)), &net.UDPAddr{IP: ue(i).AsSlice(), Port: 4000}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	st := f.Stats()
	for i := range sessions {
		if ulGot[i] != rounds || dlGot[i] != rounds {
			t.Errorf("session %d: %d uplink, %d downlink packets arrived, want %d each", i, ulGot[i], dlGot[i], rounds)
		}
	}
	if st.ForwardedUL != sessions*rounds || st.ForwardedDL != sessions*rounds {
		t.Errorf("forwarded %d up, %d down", st.ForwardedUL, st.ForwardedDL)
	}
	for _, cpu := range f.SteerCPUs() {
		if st.PerCPUForwarded[cpu] == 0 {
			t.Errorf("CPU %d forwarded nothing", cpu)
		}
	}
	t.Logf("per-CPU forwarded %v; passed %v, dropped %v", st.PerCPUForwarded, st.Passed, st.Dropped)
	if n := (&env{t: t, f: f}).steered(); n != 2*sessions*rounds {
		t.Errorf("steered %d packets, want %d", n, 2*sessions*rounds)
	}

	// What the fast path does not forward reaches the host: ARP and ICMP
	// through the steering program on N3, and a G-PDU of a session on
	// the other CPU whose inner destination is routed back out of N3
	// (not the FAR's port), passed by the cpumap program there, at the
	// host path's GTP-U socket.
	sh(t, "ip netns exec "+ran+" ping -c 1 -W 2 10.3.0.1")
	host, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP{10, 3, 0, 1}, Port: gtpu.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	i := -1
	for j := range sessions {
		if f.steer.cpus[f.steer.owner[steerBucket(ulTEID+uint32(j))]] != here {
			i = j
			break
		}
	}
	if i < 0 {
		t.Fatal("no session on the other CPU")
	}
	// Sent whole from a packet socket: a veth passes the UDP socket's
	// partial checksum along, which XDP_PASS keeps but a frame that went
	// through the cpumap loses (it reaches the stack as a new skb, whose
	// checksum the stack verifies as a NIC's that did not).
	g := gtpu.AppendGPDU(nil, ulTEID+uint32(i), qfi, false, ipv4pkt.AppendUDP(nil, ue(i), netip.MustParseAddr("10.3.0.99"), 4000, 9999, []byte("host")))
	inNS(t, ran, func() {
		pinThread(t, here)
		ifc, err := net.InterfaceByName("gnb")
		if err != nil {
			t.Error(err)
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Sendto(fd, gtpFrame(g), 0, &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6, Addr: [8]byte{2, 0, 0, 0, 3, 1}}); err != nil {
			t.Error(err)
		}
	})
	host.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := host.ReadFromUDP(buf)
	if err != nil || !bytes.Equal(buf[:n], g) {
		t.Fatalf("host path got %x, %v; stats %+v", buf[:n], err, f.Stats())
	}
	if st := f.Stats(); st.Passed["fib"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRebalance: Rebalance reads the programs' bucket counters and moves
// buckets off the busy CPU in the steering table.
func TestRebalance(t *testing.T) {
	e := setupSteering(t)
	cpus := e.f.SteerCPUs()
	pinThread(t, cpus[0])
	// Eight sessions whose buckets start on the second CPU: the test runs
	// on the first steer them there without touching the frame.
	var teids []uint32
	for teid := ulTEID; len(teids) < 8; teid++ {
		if b := steerBucket(teid); e.f.steer.owner[b] == 1 && !slices.ContainsFunc(teids, func(x uint32) bool { return steerBucket(x) == b }) {
			teids = append(teids, teid)
			e.install(session(sessOpts{seid: uint64(teid), ue: netip.AddrFrom4([4]byte{10, 60, 1, byte(len(teids))}), ulTEID: teid}))
		}
	}
	if m := e.f.Rebalance(); len(m) != 0 {
		t.Fatalf("moves without traffic: %v", m)
	}
	for _, teid := range teids {
		frame := ulFrame(teid, qfi, udp4(netip.AddrFrom4([4]byte{10, 60, 1, 1}), dnIP, 1, 2, 100))
		if _, err := e.f.objs.UpfN3Steer.Run(&ebpf.RunOptions{Data: frame, Repeat: 500,
			Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(e.n3.Index)}}); err != nil {
			t.Fatal(err)
		}
	}
	moves := e.f.Rebalance()
	if len(moves) != 3 {
		t.Fatalf("moves %v", moves)
	}
	for _, m := range moves {
		var cpu uint32
		if err := e.f.objs.SteerTable.Lookup(uint32(m.Bucket), &cpu); err != nil || m.From != cpus[1] || m.To != cpus[0] || int(cpu) != cpus[0] {
			t.Fatalf("move %+v, table says %d (%v)", m, cpu, err)
		}
	}
	st := e.f.Stats()
	// (A Repeat run that a signal interrupts is run again: a few more
	// packets may be counted.)
	if st.SteerMoves != 3 || len(st.SteerCPULoads) != 2 || st.SteerCPULoads[0] != 0 || st.SteerCPULoads[1] < 4000 || len(st.SteerBucketLoads) != steerBuckets {
		t.Fatalf("stats %+v", st)
	}
	// 4000 vs 0: three buckets move, 2500 vs 1500 is within the margin.
	// No traffic since: nothing moves.
	if m := e.f.Rebalance(); len(m) != 0 {
		t.Fatalf("moves %v without traffic", m)
	}
}
