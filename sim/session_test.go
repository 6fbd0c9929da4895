package sim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sim/ue"
)

// The test core's session management (an SMF in miniature) and a fake UPF
// with a data network host behind it: it answers ICMP echo requests and
// echoes UDP to port 7, optionally dropping every n-th uplink packet.

// sessKey names a session by SUPI: a UE keeps its sessions across
// connections (CM-IDLE and back).
type sessKey struct {
	supi string
	psi  uint8
}

type upfSession struct {
	ueIP   netip.Addr
	ulTEID uint32
	dlTEID uint32
	qfi    uint8
	// dlPeer: after a handover (handover_test.go) downlink goes to the DL
	// tunnel's gNB instead of where the uplink came from.
	dlPeer netip.AddrPort
}

type testUPF struct {
	t         *testing.T
	conn      *net.UDPConn
	dropEvery int

	mu       sync.Mutex
	nextTEID uint32
	nextIP   map[string]uint32
	sessions map[sessKey]*upfSession
	byTEID   map[uint32]*upfSession
	uplink   int
	dropped  int
	badQFI   int
	done     chan struct{}
	// ports: the N3 port of each gNB address, learnt from the uplink.
	ports map[netip.Addr]uint16
}

var dnnPools = map[string]netip.Addr{
	"internet": netip.MustParseAddr("10.60.0.0"),
	"ims":      netip.MustParseAddr("10.61.0.0"),
}

func (c *testCore) withUPF(dropEvery int) *testUPF {
	c.t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		c.t.Fatal(err)
	}
	u := &testUPF{t: c.t, conn: conn, dropEvery: dropEvery, nextTEID: 0x1000, nextIP: map[string]uint32{},
		sessions: map[sessKey]*upfSession{}, byTEID: map[uint32]*upfSession{}, done: make(chan struct{}), ports: map[netip.Addr]uint16{}}
	go u.serve()
	c.t.Cleanup(func() {
		conn.Close()
		<-u.done
	})
	c.mu.Lock()
	c.upf = u
	c.mu.Unlock()
	return u
}

func (u *testUPF) port() uint16 { return u.conn.LocalAddr().(*net.UDPAddr).AddrPort().Port() }

func (u *testUPF) count() (sessions, uplink, dropped, badQFI int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sessions), u.uplink, u.dropped, u.badQFI
}

func (u *testUPF) serve() {
	defer close(u.done)
	buf := make([]byte, 65536)
	var h gtpu.Header
	for {
		n, from, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if gtpu.Parse(buf[:n], &h) != nil || h.Type != gtpu.TypeGPDU {
			continue
		}
		u.mu.Lock()
		s := u.byTEID[h.TEID]
		u.ports[from.Addr()] = from.Port()
		u.uplink++
		if s != nil && (!h.HasPDUSessionContainer || h.PDUType != gtpu.PDUTypeUL || h.QFI != s.qfi) {
			u.badQFI++
		}
		drop := u.dropEvery > 0 && u.uplink%u.dropEvery == 0
		if drop {
			u.dropped++
		}
		u.mu.Unlock()
		if s == nil || drop {
			continue
		}
		ip, err := ipv4pkt.ParseIPv4(h.Payload(buf[:n]))
		if err != nil || ip.Src != s.ueIP {
			continue
		}
		var reply []byte
		switch ip.Protocol {
		case ipv4pkt.ProtoICMP:
			if e, ok := ipv4pkt.ParseICMPEcho(ip.Payload); ok && e.Type == ipv4pkt.ICMPEchoRequest {
				reply = ipv4pkt.AppendICMPEchoReply(nil, ip.Dst, ip.Src, e.ID, e.Seq, e.Payload)
			}
		case ipv4pkt.ProtoUDP:
			if d, ok := ipv4pkt.ParseUDP(ip.Payload); ok && d.DstPort == 7 {
				reply = ipv4pkt.AppendUDP(nil, ip.Dst, ip.Src, d.DstPort, d.SrcPort, d.Payload)
			}
		}
		if reply != nil {
			// The first uplink can overtake the gNB's Setup Response to
			// the core: like a UPF buffering until the SMF installs the
			// downlink FAR, wait for the DL TEID.
			for i := 0; i < 200; i++ {
				u.mu.Lock()
				dl := s.dlTEID
				u.mu.Unlock()
				if dl != 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			u.mu.Lock()
			dl, to := s.dlTEID, s.dlPeer
			u.mu.Unlock()
			// Downlink goes back to where the uplink came from: the DL
			// tunnel holds only the gNB's IP, and the test gNB's N3 port
			// is not 2152.
			if !to.IsValid() {
				to = from
			}
			u.conn.WriteToUDPAddrPort(gtpu.AppendGPDU(nil, dl, s.qfi, true, reply), to)
		}
	}
}

// protectedSM wraps a 5GSM message in a protected DL NAS Transport.
func (c *testCore) protectedSM(u *coreUE, sm nas.SMMessage, cause nas.Cause5GMM) []byte {
	b, err := nas.Encode(sm)
	if err != nil {
		c.fail(err)
		return nil
	}
	dl, err := nas.Encode(&nas.DLNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, PDUSessionID: sm.PDUSessionID(), Payload: b, Cause: cause})
	if err != nil {
		c.fail(err)
		return nil
	}
	pdu, err := u.sec.Protect(dl, nas.IntegrityProtectedAndCiphered, nas.Downlink)
	if err != nil {
		c.fail(err)
	}
	return pdu
}

// smUplink is the SMF side of TS 24.501 §6.4 (called with c.mu held).
func (c *testCore) smUplink(u *coreUE, m *nas.ULNASTransport, send sendFunc) {
	sm, err := nas.DecodeSM(m.Payload)
	if err != nil {
		c.fail(err)
		return
	}
	if c.upf == nil {
		c.fail(errors.New("5GSM without a test UPF"))
		return
	}
	key := sessKey{u.supi, sm.PDUSessionID()}
	switch sm := sm.(type) {
	case *nas.PDUSessionEstablishmentRequest:
		pool, ok := dnnPools[m.DNN]
		if m.RequestType != nas.RequestInitial || !ok {
			rej := &nas.PDUSessionEstablishmentReject{SMHeader: nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI()}, Cause: nas.CauseMissingOrUnknownDNN}
			send(u.stream, &ngap.DownlinkNASTransport{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, NASPDU: c.protectedSM(u, rej, 0)})
			return
		}
		up := c.upf
		up.mu.Lock()
		up.nextTEID++
		up.nextIP[m.DNN]++
		p4 := pool.As4()
		n := up.nextIP[m.DNN]
		s := &upfSession{ueIP: netip.AddrFrom4([4]byte{p4[0], p4[1], byte(n >> 8), byte(n)}), ulTEID: up.nextTEID, qfi: 1}
		if m.DNN == "ims" {
			s.qfi = 5
		}
		up.sessions[key] = s
		up.byTEID[s.ulTEID] = s
		up.mu.Unlock()
		slice := identity.SNSSAI{SST: 1, SD: 0x010203}
		acc := &nas.PDUSessionEstablishmentAccept{
			SMHeader:       nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI()},
			PDUSessionType: nas.PDUSessionTypeIPv4, SSCMode: nas.SSCMode1,
			QoSRules: []nas.QoSRule{{ID: 1, Operation: nas.QoSRuleCreate, Default: true, Precedence: 255, QFI: s.qfi,
				Filters: []nas.PacketFilter{{ID: 1, Direction: nas.FilterBidirectional, MatchAll: true}}}},
			SessionAMBR: nas.SessionAMBR{DL: 1e9, UL: 1e9},
			PDUAddress:  &nas.PDUAddress{Type: nas.PDUSessionTypeIPv4, IPv4: s.ueIP},
			SNSSAI:      &slice, DNN: m.DNN,
		}
		tr, err := ngap.EncodeSetupRequestTransfer(&ngap.PDUSessionResourceSetupRequestTransfer{
			ULTunnel:       ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: s.ulTEID},
			PDUSessionType: ngap.PDUSessionTypeIPv4,
			QoSFlows:       []ngap.QoSFlowSetupRequestItem{{QFI: s.qfi, FiveQI: 9, PriorityLevelARP: 8}},
		})
		if err != nil {
			c.fail(err)
			return
		}
		send(u.stream, &ngap.PDUSessionResourceSetupRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
			Items: []ngap.PDUSessionResourceSetupItemSUReq{{ID: sm.PDUSessionID(), NASPDU: c.protectedSM(u, acc, 0), SNSSAI: slice, Transfer: tr}}})
	case *nas.PDUSessionReleaseRequest:
		cmd := &nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: sm.PDUSessionID(), TransactionID: sm.PTI()}, Cause: nas.CauseRegularDeactivation}
		rct, err := ngap.EncodeReleaseCommandTransfer(&ngap.PDUSessionResourceReleaseCommandTransfer{Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease}})
		if err != nil {
			c.fail(err)
			return
		}
		send(u.stream, &ngap.PDUSessionResourceReleaseCommand{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
			NASPDU: c.protectedSM(u, cmd, 0), Items: []ngap.PDUSessionResourceItem{{ID: sm.PDUSessionID(), Transfer: rct}}})
	case *nas.PDUSessionReleaseComplete:
		c.upf.mu.Lock()
		if s := c.upf.sessions[key]; s != nil {
			delete(c.upf.byTEID, s.ulTEID)
			delete(c.upf.sessions, key)
		}
		c.upf.mu.Unlock()
	default:
		c.fail(fmt.Errorf("unexpected 5GSM %s", sm.MessageType()))
	}
}

// setDownlink stores the gNB's DL tunnels of the items (c.mu held).
func (c *testCore) setDownlink(amfID int64, items []ngap.PDUSessionResourceItem) {
	u := c.ues[amfID]
	if u == nil || c.upf == nil {
		return
	}
	for _, it := range items {
		t, err := ngap.DecodeSetupResponseTransfer(it.Transfer)
		if err != nil {
			c.fail(err)
			continue
		}
		c.upf.mu.Lock()
		if s := c.upf.sessions[sessKey{u.supi, it.ID}]; s != nil {
			s.dlTEID = t.DLTunnel.TEID
		}
		c.upf.mu.Unlock()
	}
}

// n2Response takes the gNB's PDU session resource responses (c.mu held).
func (c *testCore) n2Response(m ngap.Message) {
	switch m := m.(type) {
	case *ngap.PDUSessionResourceSetupResponse:
		if len(m.Failed) > 0 {
			c.fail(fmt.Errorf("gNB failed %d sessions", len(m.Failed)))
		}
		c.setDownlink(m.AMFUENGAPID, m.Setup)
	case *ngap.InitialContextSetupResponse:
		if len(m.PDUSessionResourceFailedItems) > 0 {
			c.fail(fmt.Errorf("gNB failed %d sessions in the context setup", len(m.PDUSessionResourceFailedItems)))
		}
		c.setDownlink(m.AMFUENGAPID, m.PDUSessionResourceSetupItems)
	case *ngap.PDUSessionResourceReleaseResponse:
	}
}

func sessionConfig(c *testCore, upf *testUPF) Config {
	cfg := testConfig(c)
	cfg.N3PeerPort = upf.port()
	cfg.PingCount, cfg.PingInterval, cfg.PingTimeout = 6, time.Millisecond, 300*time.Millisecond
	cfg.TransferBytes, cfg.TransferSize, cfg.TransferEcho = 24_000, 1200, true
	// A DN host outside the test UPF's pools, which hand out .1 too.
	cfg.DataTarget = netip.MustParseAddr("10.100.6.2")
	return cfg
}

func TestRunSessionsAndData(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.UEs, cfg.GNBs, cfg.Concurrency = 6, 2, 3
	cfg.DNNs = []string{"internet", "ims"}
	cfg.Scenario, _ = ParseScenario("session+data")
	var mu sync.Mutex
	reported := 0
	cfg.OnSession = func(supi string, s SessionOutcome) {
		mu.Lock()
		defer mu.Unlock()
		if supi != "" && s.Address != "" && s.DNN != "" {
			reported++
		}
	}
	res := run(t, cfg)
	if reported != 12 {
		t.Errorf("OnSession told of %d sessions, want 12", reported)
	}
	for p, want := range map[string]int{ue.ProcRegistration: 6, ue.ProcPDUSession: 12, ProcPing: 12 * 6,
		ProcTransfer: 12, ue.ProcPDURelease: 12, ue.ProcDeregistration: 6} {
		if n, f := summary(t, res, p); n != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d ok", p, n, f, want)
		}
	}
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	dr := res.Data
	if dr.Sessions != 12 || dr.PingSent != 72 || dr.PingReceived != 72 || dr.PingLost != 0 ||
		dr.TransferSessions != 12 || dr.TransferPacketsSent != 12*20 || dr.TransferPacketsReceived != 12*20 ||
		dr.TransferLost != 0 || dr.TransferBps <= 0 {
		t.Fatalf("data %+v", dr)
	}
	seen := map[string]bool{}
	for _, u := range res.UEs {
		if len(u.Sessions) != 2 || u.Sessions[0].DNN != "internet" || u.Sessions[1].DNN != "ims" || u.Sessions[1].QFI != 5 {
			t.Fatalf("UE sessions %+v", u.Sessions)
		}
		for _, s := range u.Sessions {
			if seen[s.Address] {
				t.Fatalf("address %s given twice", s.Address)
			}
			seen[s.Address] = true
		}
	}
	if n, up, _, badQFI := upf.count(); n != 0 || up != 12*(6+20) || badQFI != 0 {
		t.Fatalf("UPF: %d sessions left, %d uplink packets, %d with a wrong QFI/container", n, up, badQFI)
	}
}

func TestRunCountsLostPackets(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(3) // every third uplink packet is lost
	cfg := sessionConfig(core, upf)
	cfg.UEs = 1
	cfg.Scenario, _ = ParseScenario("register,session,ping,transfer,release")
	res := run(t, cfg)
	// 6 pings: packets 3 and 6 lost; then 20 datagrams (packets 7..26):
	// 9, 12, ..., 24 lost (6).
	if n, f := summary(t, res, ProcPing); n != 4 || f != 2 {
		t.Errorf("ping: %d ok, %d failed", n, f)
	}
	if n, f := summary(t, res, ProcTransfer); n != 0 || f != 1 {
		t.Errorf("transfer: %d ok, %d failed", n, f)
	}
	dr := res.Data
	if dr.PingLost != 2 || dr.PingReceived != 4 || dr.TransferLost != 6 || dr.TransferPacketsReceived != 14 {
		t.Fatalf("data %+v", dr)
	}
	// Losses are counted, but a step fails only without any reply: the
	// release still ran.
	if n, f := summary(t, res, ue.ProcPDURelease); n != 1 || f != 0 {
		t.Errorf("release: %d ok, %d failed (steps %+v)", n, f, res.Steps)
	}
}

// TestFailedStepCleansUp: a UE whose ping step fails skips the release
// and deregister steps, so the run deregisters it at once (releasing its
// sessions in the core) without counting that in the scenario's figures.
func TestFailedStepCleansUp(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(1) // every uplink packet is lost
	cfg := sessionConfig(core, upf)
	cfg.UEs, cfg.Concurrency = 3, 3
	cfg.PingCount, cfg.PingTimeout = 2, 100*time.Millisecond
	cfg.Scenario, _ = ParseScenario("session+ping")
	res := run(t, cfg)
	if st := res.Steps[2]; st.Step != StepPing || st.Failed != 3 || res.Steps[3].Skipped != 3 || res.Steps[4].Skipped != 3 {
		t.Fatalf("steps %+v", res.Steps)
	}
	for _, u := range res.UEs {
		if u.FailedStep != StepPing || u.Registered {
			t.Errorf("UE %s: failed at %q, registered %v; want failed at ping and deregistered", u.SUPI, u.FailedStep, u.Registered)
		}
	}
	if n, f := summary(t, res, ue.ProcDeregistration); n != 0 || f != 0 {
		t.Errorf("deregistration: %d ok, %d failed recorded; the clean-up is not the scenario's", n, f)
	}
	core.mu.Lock()
	left := len(core.ues)
	core.mu.Unlock()
	if left != 0 {
		t.Errorf("test core: %d UE contexts left", left)
	}
}

func TestRunSessionRejected(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.UEs = 2
	cfg.DNNs = []string{"nope"}
	cfg.Scenario, _ = ParseScenario("session+ping")
	res := run(t, cfg)
	if n, f := summary(t, res, ue.ProcPDUSession); n != 0 || f != 2 {
		t.Errorf("pdu-session: %d ok, %d failed", n, f)
	}
	if res.Steps[1].Failed != 2 || res.Steps[2].Skipped != 2 {
		t.Fatalf("steps %+v", res.Steps)
	}
	for _, u := range res.UEs {
		if u.FailedStep != StepSession || u.Err == "" {
			t.Fatalf("UE %+v", u)
		}
	}
}

func TestScenarioAndConfigForSessions(t *testing.T) {
	sc, err := ParseScenario("register,session,ping,transfer,release,deregister")
	if err != nil || len(sc) != 6 || sc[1] != StepSession {
		t.Fatalf("%v %v", sc, err)
	}
	cfg := DefaultConfig()
	cfg.GNBs, cfg.N3Addrs = 2, []string{"10.100.3.1:2152"}
	if err := cfg.withDefaults().validate(); err == nil {
		t.Error("two gNBs sharing a fixed N3 port accepted")
	}
	cfg.N3Addrs = []string{"0.0.0.0:0"}
	if err := cfg.withDefaults().validate(); err == nil {
		t.Error("unspecified N3 address accepted")
	}
	cfg.N3Addrs = nil
	c := cfg.withDefaults()
	if err := c.validate(); err != nil || c.DNNs[0] != "internet" || c.DataTarget.String() != DefaultDataTarget || c.TransferPort != 9 {
		t.Fatalf("defaults %+v: %v", c, err)
	}
}

func TestRunTUNMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN devices and policy routing")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("needs /dev/net/tun")
	}
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.TUN, cfg.TUNPrefix, cfg.TUNTable = true, "ternsimt", 31000
	cfg.Scenario, _ = ParseScenario("register,session,ping,release")
	var tunErr error
	cfg.AfterStep = func(sr StepResult) {
		if sr.Step != StepSession {
			return
		}
		// A socket bound to the session address goes through the TUN, the
		// gNB, the UPF's UDP echo and back.
		tunErr = func() error {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 60, 0, 1)})
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.WriteToUDP([]byte("through the tunnel"), &net.UDPAddr{IP: cfg.DataTarget.AsSlice(), Port: 7}); err != nil {
				return err
			}
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 100)
			n, err := c.Read(buf)
			if err != nil {
				return err
			}
			if string(buf[:n]) != "through the tunnel" {
				return fmt.Errorf("echo %q", buf[:n])
			}
			return nil
		}()
	}
	res := run(t, cfg)
	if tunErr != nil {
		t.Fatalf("over the TUN: %v", tunErr)
	}
	if res.Failures() != 0 || len(res.UEs[0].Sessions) != 1 || res.UEs[0].Sessions[0].TUN != "ternsimt0" {
		t.Fatalf("steps %+v UEs %+v", res.Steps, res.UEs)
	}
	if _, err := net.InterfaceByName("ternsimt0"); err == nil {
		t.Fatal("TUN left behind after the release")
	}
}

// TestNoDownlinkChecksUplink: with Config.NoDownlink (a UPF without N6)
// the ping step passes on the uplink alone and records no lost requests;
// the sessions are then released as usual.
func TestNoDownlinkChecksUplink(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(1) // nothing comes back
	cfg := sessionConfig(core, upf)
	cfg.UEs = 2
	cfg.NoDownlink = "the test UPF has no data network"
	cfg.Scenario, _ = ParseScenario("session+ping")
	res := run(t, cfg)
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	if dr := res.Data; dr.PingSent != 2*cfg.PingCount || dr.PingReceived != 0 {
		t.Fatalf("data %+v", dr)
	}
	if n, f := summary(t, res, ue.ProcPDURelease); n != 2 || f != 0 {
		t.Errorf("release: %d ok, %d failed", n, f)
	}
}
