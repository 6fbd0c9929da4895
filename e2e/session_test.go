package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/ue"
)

// heapSlack bounds the heap growth a thousand establish/release cycles may
// leave. What legitimately stays is per-UE, not per-session: the AMF keeps
// each deregistered UE's 5G-GUTI and security context for a later
// registration (100 UEs: a few hundred KiB) and maps and pools keep the
// capacity they grew to. A leak of the per-session state (SM context, UPF
// rules and snapshots, TEIDs, N2 transfers: several KiB per session) would
// show as well over 8 MiB after 1,000 sessions.
const heapSlack = 8 << 20

// TestSessionCyclesLeaveNothingBehind: 100 UEs establish and release a PDU
// session 10 times each (1,000 cycles) and deregister; afterwards the SMF,
// the PCF, the UPF and the AMF hold nothing of the sessions and the heap is
// back near where it started.
func TestSessionCyclesLeaveNothingBehind(t *testing.T) {
	const ues, cycles = 100, 10
	c := startCore(t, ues, nil)
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 2, ues, 16
	cfg.Timeout = 20 * time.Second
	cfg.Scenario = sim.Scenario{sim.StepRegister}
	for range cycles {
		cfg.Scenario = append(cfg.Scenario, sim.StepSession, sim.StepRelease)
	}
	cfg.Scenario = append(cfg.Scenario, sim.StepDeregister)

	// The baseline is the freshly started core: what the first sessions
	// grow once (pools, map capacity) counts against heapSlack too.
	before := heapInUse()
	runSim(t, cfg, ues)
	st := waitIdle(t, c.Core)
	if st.SMF.Established != ues*cycles || st.SMF.Released != ues*cycles {
		t.Errorf("SMF: %d established, %d released; want %d each", st.SMF.Established, st.SMF.Released, ues*cycles)
	}
	after := heapInUse()
	t.Logf("%d establish/release cycles: heap in use %.1f MiB -> %.1f MiB; UPF control %+v",
		ues*cycles, float64(before)/(1<<20), float64(after)/(1<<20), st.UPF.Control)
	if after > before+heapSlack {
		t.Errorf("heap in use grew by %.1f MiB over %d cycles (bound %d MiB)", float64(after-before)/(1<<20), ues*cycles, heapSlack>>20)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // the second cycle frees what the first one's finalizers released
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// leftovers names what the core still holds of PDU sessions; empty when
// nothing.
func leftovers(st core.Stats) string {
	var s string
	add := func(what string, n int) {
		if n != 0 {
			s += fmt.Sprintf(" %s=%d", what, n)
		}
	}
	add("smf.contexts", st.SMF.Contexts)
	add("smf.n4sessions", st.SMF.N4Sessions)
	add("smf.policies", st.SMF.Policies)
	for dnn, n := range st.SMF.IPs {
		add("smf.ips."+dnn, n)
	}
	u := st.UPF.Control
	add("upf.sessions", u.Sessions)
	add("upf.pdrs", u.PDRs)
	add("upf.fars", u.FARs)
	add("upf.qers", u.QERs)
	add("upf.urrs", u.URRs)
	add("upf.bars", u.BARs)
	add("upf.teids", u.TEIDs)
	add("upf.datapath.sessions", st.UPF.Pipeline.Sessions)
	add("upf.buffered", st.UPF.Pipeline.Buffered)
	add("upf.bufferedbytes", st.UPF.Pipeline.BufferedBytes)
	add("amf.pdusessions", int(st.AMF.PDUSessions))
	add("amf.pendingtransfers", int(st.AMF.PendingTransfers))
	return s
}

// waitIdle waits (5 s at most) until the core holds no PDU session state:
// a UE is done with a release once it has answered, and the SMF may still
// be finishing N4 and the policy association.
func waitIdle(t *testing.T, c *core.Core) core.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := c.Stats()
		left := leftovers(st)
		if left == "" {
			return st
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind:%s", left)
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionTwoDNNsAndReject: a UE establishes sessions on internet and
// ims over the real core (addresses from each DNN's pool, one UPF session
// each), is refused a session on a DNN nobody serves, and releases the two.
func TestSessionTwoDNNsAndReject(t *testing.T) {
	c := startCore(t, 1, nil)
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	u := registeredUE(t, g, "0000000001")
	ctx := context.Background()
	slice := slices[0]
	pools := map[string]netip.Prefix{"internet": netip.MustParsePrefix("10.60.0.0/16"), "ims": netip.MustParsePrefix("10.61.0.0/16")}
	var ids []uint8
	for _, dnn := range []string{"internet", "ims"} {
		s, err := u.EstablishSession(ctx, ue.SessionRequest{DNN: dnn, SNSSAI: &slice})
		if err != nil {
			t.Fatalf("session on %s: %v", dnn, err)
		}
		if s.DNN != dnn || !pools[dnn].Contains(s.Address) || s.SNSSAI != slice || !s.UserPlane {
			t.Errorf("session on %s: %+v; want an address in %s, slice %s, user plane set up", dnn, s, pools[dnn], slice)
		}
		ids = append(ids, s.ID)
	}
	if ids[0] == ids[1] {
		t.Errorf("both sessions have PDU session ID %d", ids[0])
	}
	st := c.Stats()
	if st.SMF.Contexts != 2 || st.SMF.IPs["internet"] != 1 || st.SMF.IPs["ims"] != 1 || st.UPF.Control.Sessions != 2 || st.AMF.PDUSessions != 2 {
		t.Errorf("with two sessions: SMF %+v, UPF %+v, AMF sessions %d", st.SMF, st.UPF.Control, st.AMF.PDUSessions)
	}

	// TS 24.501 §6.4.1.4.1: an unknown DNN is rejected with 5GSM #27
	// (missing or unknown DNN) by the SMF, or the AMF does not forward it
	// when no SMF serves the DNN (§5.4.5.2.5: 5GMM #91 DNN not supported or
	// not subscribed in the slice). Either ends the procedure at the UE.
	_, err = u.EstablishSession(ctx, ue.SessionRequest{DNN: "nosuchdnn", SNSSAI: &slice})
	var rej *ue.SessionRejectError
	var nf *ue.NotForwardedError
	switch {
	case errors.As(err, &rej) && (rej.Cause == nas.CauseMissingOrUnknownDNN || rej.Cause == nas.CauseMissingOrUnknownDNNInSlice):
		t.Logf("unknown DNN: %v", err)
	case errors.As(err, &nf) && nf.Cause == 91:
		t.Logf("unknown DNN: %v", err)
	default:
		t.Errorf("session on an unknown DNN: %v; want 5GSM #27/#91 or 5GMM #91", err)
	}
	if st := c.Stats(); st.SMF.Contexts != 2 || st.UPF.Control.Sessions != 2 {
		t.Errorf("after the reject: %d SM contexts, %d UPF sessions; want 2 and 2", st.SMF.Contexts, st.UPF.Control.Sessions)
	}

	for _, id := range ids {
		if err := u.ReleaseSession(ctx, id); err != nil {
			t.Errorf("release of session %d: %v", id, err)
		}
	}
	waitIdle(t, c.Core)
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// TestMalformedGTPU sends the running core's UPF garbage and truncated
// GTP-U on N3 and a G-PDU for a TEID it never allocated. The garbage is
// dropped; the G-PDU is answered with Error Indication (TS 29.281 §7.3.1);
// afterwards the UPF answers Echo and a PDU session still works.
func TestMalformedGTPU(t *testing.T) {
	c := startCore(t, 1, nil)
	n3 := c.UPF.N3Addr()
	// The UPF sends Error Indication to the GTP-U port of the G-PDU's
	// source (TS 29.281 §4.4.2.4), so the fake gNB needs port 2152: on an
	// address of 127/8 of this process's own.
	gnbN3 := loopbackAddr(89)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: gnbN3.AsSlice(), Port: gtpu.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	checkMalformedGTPU(t, conn, n3)
	st := c.Stats().UPF.Pipeline
	if st.ErrorIndicationsSent != 1 || st.Drops["malformed"]+st.Drops["unsupported"] == 0 {
		t.Errorf("UPF counters after the garbage: %d Error Indications sent (want 1), drops %v", st.ErrorIndicationsSent, st.Drops)
	}
	t.Logf("UPF drops after the garbage: %v", st.Drops)
	runSessionScenario(t, c)
}

// checkMalformedGTPU sends garbage to the UPF at n3 from conn, expects
// silence for it, then an Error Indication for an unknown TEID and an Echo
// Response.
func checkMalformedGTPU(t *testing.T, conn *net.UDPConn, n3 netip.AddrPort) {
	t.Helper()
	to := net.UDPAddrFromAddrPort(n3)
	send := func(b []byte) {
		t.Helper()
		if _, err := conn.WriteToUDP(b, to); err != nil {
			t.Fatal(err)
		}
	}
	gpdu := gtpu.AppendGPDU(nil, 0x0badcafe, 9, false, []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 60, 0, 9, 192, 0, 2, 1})
	garbage := [][]byte{
		{},                                   // empty datagram
		{0xff},                               // one octet
		{0x30, 0xff, 0x00},                   // truncated mandatory header
		{0x50, 0xff, 0, 0, 1, 2, 3, 4},       // GTP version 2
		{0x30, 0xff, 0xff, 0xff, 0, 0, 0, 1}, // length beyond the datagram
		gpdu[:gtpu.GPDUHeaderLen-3],          // cut inside the extension header
		{0x34, 0xff, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0x85, 9, 0, 0, 0}, // extension length 9: past the end
		[]byte("GET / HTTP/1.1\r\nHost: upf\r\n\r\n"),
	}
	for _, g := range garbage {
		send(g)
	}
	send(gpdu) // TEID 0x0badcafe: never allocated
	// The garbage gets no answer: the first datagram back must be the
	// Error Indication.
	buf := make([]byte, 2048)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no Error Indication for a G-PDU to an unknown TEID: %v", err)
	}
	ei, err := gtpu.ParseErrorIndication(buf[:n])
	if err != nil {
		t.Fatalf("first answer % x: %v; want an Error Indication (and nothing for the garbage)", buf[:n], err)
	}
	if ei.TEID != 0x0badcafe {
		t.Fatalf("Error Indication for TEID %#x, want 0x0badcafe", ei.TEID)
	}
	if ei.UDPPort != uint16(conn.LocalAddr().(*net.UDPAddr).Port) {
		t.Errorf("Error Indication: UDP Port extension %d, want the G-PDU's source port (§5.2.2.1)", ei.UDPPort)
	}
	if peer, ok := netip.AddrFromSlice(ei.PeerAddr); !ok || peer.Unmap() != n3.Addr() {
		t.Errorf("Error Indication: GTP-U Peer Address %v, want the UPF's N3 %s", ei.PeerAddr, n3.Addr())
	}
	// Still alive: Echo Request -> Echo Response (§7.2.2).
	send(gtpu.AppendEchoRequest(nil, 77))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err = conn.Read(buf)
	var h gtpu.Header
	if err != nil || gtpu.Parse(buf[:n], &h) != nil || h.Type != gtpu.TypeEchoResponse || h.Seq != 77 {
		t.Fatalf("Echo after the garbage: % x, %v", buf[:max(n, 0)], err)
	}
}

// loopbackAddr returns 127.<second>.x.y, x.y from the process ID, for
// sockets on a fixed port that parallel test binaries must not share.
func loopbackAddr(second byte) netip.Addr {
	pid := os.Getpid()
	return netip.AddrFrom4([4]byte{127, second, byte(pid >> 8), byte(pid) | 1})
}

// runSessionScenario registers a UE, establishes and releases a session on
// each default DNN and deregisters, failing t if any step fails.
func runSessionScenario(t *testing.T, c *testCore) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.DNNs = []string{"internet", "ims"}
	cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepRelease, sim.StepDeregister}
	res, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim.Run: %v", err)
	}
	if n := res.Failures(); n != 0 {
		t.Fatalf("a normal session afterwards: %d failures: %+v", n, res.UEs)
	}
	waitIdle(t, c.Core)
}

// TestMalformedPFCP runs N4 over PFCP/UDP (the SMF's endpoint and the
// UPF's) and sends the UPF's endpoint a Session Establishment Request
// without its mandatory Create PDR and Create FAR, answered with cause 66
// Mandatory IE missing (TS 29.244 §7.2.2.4.2), and garbage, dropped. The
// SMF's sessions over the same endpoint work before and after.
func TestMalformedPFCP(t *testing.T) {
	upfPort, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	// The SMF's endpoint binds port 8805 (TS 29.244 §4.2.2) on its N4
	// address: an address of 127/8 of this process's own keeps parallel
	// test binaries apart.
	smfN4 := loopbackAddr(88).String()
	upfN4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(upfPort))
	c := startCore(t, 1, func(cfg *config.Config) {
		cfg.SMF.N4Address = smfN4
		cfg.UPF.PFCPAddr = upfN4.String()
		cfg.SMF.UPFs[0].N4 = upfN4.String()
	})
	if got := c.UPF.PFCPAddr(); got != upfN4 {
		t.Fatalf("UPF PFCP endpoint on %v, want %v", got, upfN4)
	}
	runSessionScenario(t, c)

	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := net.UDPAddrFromAddrPort(upfN4)
	exchange := func(b []byte) []byte {
		t.Helper()
		if _, err := conn.WriteToUDP(b, to); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no answer to % x: %v", b[:min(len(b), 16)], err)
		}
		return buf[:n]
	}

	// Garbage first: nothing comes back (the Heartbeat after it is the
	// first answer), and the endpoint keeps serving.
	// (Version 1 in each: other versions are answered with Version Not
	// Supported, §7.2.2.1.)
	garbage := [][]byte{
		{0xff},                                       // short
		{0x20, 0x32, 0, 1},                           // a header cut short
		{0x21, 0x32, 0xff, 0xff, 0, 0, 0, 0},         // length beyond the datagram
		{0x20, 0xee, 0, 4, 0, 0, 1, 0},               // unknown message type (§7.3: ignored)
		{0x20, 0x32, 0, 12, 0, 0, 2, 0, 0, 60, 0, 9}, // an IE longer than the message
	}
	for _, g := range garbage {
		if _, err := conn.WriteToUDP(g, to); err != nil {
			t.Fatal(err)
		}
	}
	hb, err := pfcp.Encode(&pfcp.HeartbeatRequest{RecoveryTime: time.Now()}, 41, 0)
	if err != nil {
		t.Fatal(err)
	}
	hdr, m, err := pfcp.Decode(exchange(hb))
	if _, ok := m.(*pfcp.HeartbeatResponse); err != nil || !ok || hdr.Seq != 41 {
		t.Fatalf("first answer after garbage: %+v %T %v; want the Heartbeat Response to seq 41", hdr, m, err)
	}

	// §7.5.2: Create PDR and Create FAR are mandatory; the encoder leaves
	// them out when the lists are empty.
	req, err := pfcp.Encode(&pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")},
		CPFSEID: pfcp.FSEID{SEID: 0x5eed, IPv4: netip.MustParseAddr("127.0.0.1")},
	}, 42, 0)
	if err != nil {
		t.Fatal(err)
	}
	hdr, m, err = pfcp.Decode(exchange(req))
	r, ok := m.(*pfcp.SessionEstablishmentResponse)
	if err != nil || !ok || hdr.Seq != 42 {
		t.Fatalf("answer to an establishment without Create PDR: %+v %T %v", hdr, m, err)
	}
	if r.Cause != pfcp.CauseMandatoryIEMissing || r.OffendingIE == 0 {
		t.Errorf("establishment without Create PDR/FAR: cause %d offending IE %d; want 66 and the missing IE", r.Cause, r.OffendingIE)
	}
	if hdr.SEID != 0x5eed {
		t.Errorf("answer's SEID %#x; want the CP F-SEID's 0x5eed (§7.2.2.4.2)", hdr.SEID)
	}
	t.Logf("missing mandatory IE: cause %d, offending IE %d", r.Cause, r.OffendingIE)
	if n := c.Stats().UPF.Control.Sessions; n != 0 {
		t.Errorf("UPF holds %d sessions after a rejected establishment", n)
	}
	runSessionScenario(t, c)
}

// TestFailedStepReleasesSessions: a UE whose ping fails (this core's UPF
// has no N6, so nothing answers) skips the scenario's release and
// deregister steps; the simulator deregisters it at once, and the core is
// left with no SM context, UPF session or registered UE.
func TestFailedStepReleasesSessions(t *testing.T) {
	c := startCore(t, 4, nil)
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.UEs, cfg.Concurrency = 4, 2
	cfg.DNNs = []string{"internet", "ims"}
	cfg.PingCount, cfg.PingTimeout = 1, 50*time.Millisecond
	cfg.Scenario, _ = sim.ParseScenario("session+ping")
	res, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Steps[2]; st.Step != sim.StepPing || st.Failed != 4 {
		t.Fatalf("steps %+v: want the ping step failed for every UE", res.Steps)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := c.Stats()
		if st.SMF.Contexts == 0 && st.UPF.Control.Sessions == 0 && st.AMF.RegisteredUEs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in the core: %d SM contexts, %d UPF sessions, %d registered UEs",
				st.SMF.Contexts, st.UPF.Control.Sessions, st.AMF.RegisteredUEs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
