package sim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sim/ue"
)

// The test core's handover (an AMF and SMF in miniature, continued): Path
// Switch Request (the UPF's downlink switched, with an End Marker on the
// old tunnel), N2 handover without indirect forwarding (Handover Required,
// Request, Acknowledge, Command, Notify, the source released), Handover
// Cancel, and the mobility registration update over a connection.

// hoCore is what the test core keeps for handover (c.mu).
type hoCore struct {
	gnbs        map[uint32]sendFunc  // by gNB ID
	pending     map[int64]*hoPending // N2 targets by their AMF UE NGAP ID
	pathSwitch  int                  // acknowledged
	n2Done      int                  // Handover Notify taken
	updates     int                  // mobility registration updates accepted
	refuseXn    bool                 // answer Path Switch Request Failure
	lastUpdates []identity.TAI       // the last visited TAIs of the updates
}

// hoPending is an N2 handover between Handover Request and Notify.
type hoPending struct {
	src            *coreUE
	amfID, ranID   int64
	send           sendFunc
	stream         uint16
	dl             map[uint8]ngap.GTPTunnel
	srcAMF, srcRAN int64
}

// handover handles the handover messages (c.mu held); false: not one.
func (c *testCore) handover(m ngap.Message, stream uint16, send sendFunc) bool {
	switch m := m.(type) {
	case *ngap.PathSwitchRequest:
		u := c.ues[m.SourceAMFUENGAPID]
		if u == nil {
			c.fail(errors.New("path switch request for an unknown UE"))
			return true
		}
		delete(c.ues, u.amfID)
		u.amfID, u.ranID, u.stream, u.send, u.tai = c.nextAMF, m.RANUENGAPID, stream, send, m.UserLocation.TAI
		c.nextAMF++
		c.ues[u.amfID] = u
		ack := &ngap.PathSwitchRequestAcknowledge{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
			SecurityContext: ngap.SecurityContext{NextHopChainingCount: 2}, AllowedNSSAI: []identity.SNSSAI{{SST: 1, SD: 0x010203}}}
		for _, it := range m.ToBeSwitched {
			t, err := ngap.DecodePathSwitchRequestTransfer(it.Transfer)
			if err != nil {
				c.fail(err)
				continue
			}
			ul := c.switchDownlink(u.supi, it.ID, t.DLTunnel)
			b, _ := ngap.EncodePathSwitchRequestAcknowledgeTransfer(&ngap.PathSwitchRequestAcknowledgeTransfer{ULTunnel: &ul})
			ack.Switched = append(ack.Switched, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: b})
		}
		send(stream, ack)
		c.ho.pathSwitch++
	case *ngap.HandoverRequired:
		u := c.ues[m.AMFUENGAPID]
		target := c.ho.gnbs[m.TargetID.GlobalGNBID.GNBID]
		if u == nil || target == nil {
			send(stream, &ngap.HandoverPreparationFailure{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID,
				Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownTargetID}})
			return true
		}
		h := &hoPending{src: u, amfID: c.nextAMF, srcAMF: u.amfID, srcRAN: u.ranID, dl: map[uint8]ngap.GTPTunnel{}}
		c.nextAMF++
		c.ho.pending[h.amfID] = h
		req := &ngap.HandoverRequest{AMFUENGAPID: h.amfID, HandoverType: m.HandoverType, Cause: m.Cause,
			UEAggregateMaxBitRate:              ngap.AMBR{UL: 1e9, DL: 1e9},
			UESecurityCapabilities:             ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
			SecurityContext:                    ngap.SecurityContext{NextHopChainingCount: 1},
			AllowedNSSAI:                       []identity.SNSSAI{{SST: 1, SD: 0x010203}},
			SourceToTargetTransparentContainer: m.SourceToTargetTransparentContainer, GUAMI: c.guami}
		for _, it := range m.Sessions {
			s := c.upfSession(u.supi, it.ID)
			if s == nil {
				continue
			}
			tr, _ := ngap.EncodeSetupRequestTransfer(&ngap.PDUSessionResourceSetupRequestTransfer{
				ULTunnel: ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: s.ulTEID}, PDUSessionType: ngap.PDUSessionTypeIPv4,
				QoSFlows: []ngap.QoSFlowSetupRequestItem{{QFI: s.qfi, FiveQI: 9, PriorityLevelARP: 8}}})
			req.Sessions = append(req.Sessions, ngap.PDUSessionResourceSetupItemHOReq{ID: it.ID, SNSSAI: identity.SNSSAI{SST: 1, SD: 0x010203}, Transfer: tr})
		}
		target(1, req)
	case *ngap.HandoverRequestAcknowledge:
		h := c.ho.pending[m.AMFUENGAPID]
		if h == nil {
			c.fail(errors.New("handover request acknowledge for no handover"))
			return true
		}
		h.ranID, h.send, h.stream = m.RANUENGAPID, send, stream
		cmd := &ngap.HandoverCommand{AMFUENGAPID: h.srcAMF, RANUENGAPID: h.srcRAN, HandoverType: ngap.HandoverIntra5GS,
			TargetToSourceTransparentContainer: m.TargetToSourceTransparentContainer}
		for _, it := range m.Admitted {
			t, err := ngap.DecodeHandoverRequestAcknowledgeTransfer(it.Transfer)
			if err != nil || t.DLForwardingTunnel == nil {
				c.fail(fmt.Errorf("handover request acknowledge transfer %+v: %v", t, err))
				continue
			}
			h.dl[it.ID] = t.DLTunnel
			// No indirect forwarding: the command has no forwarding tunnel.
			b, _ := ngap.EncodeHandoverCommandTransfer(&ngap.HandoverCommandTransfer{})
			cmd.Handover = append(cmd.Handover, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: b})
		}
		h.src.send(h.src.stream, cmd)
	case *ngap.HandoverFailure:
		h := c.ho.pending[m.AMFUENGAPID]
		if h != nil {
			delete(c.ho.pending, m.AMFUENGAPID)
			h.src.send(h.src.stream, &ngap.HandoverPreparationFailure{AMFUENGAPID: h.srcAMF, RANUENGAPID: h.srcRAN, Cause: m.Cause})
		}
	case *ngap.UplinkRANStatusTransfer:
		c.fail(errors.New("uplink RAN status transfer without forwarding"))
	case *ngap.HandoverCancel:
		send(stream, &ngap.HandoverCancelAcknowledge{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID})
		for id, h := range c.ho.pending {
			if h.srcAMF == m.AMFUENGAPID {
				delete(c.ho.pending, id)
				h.send(h.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: h.amfID, RANUENGAPID: h.ranID,
					Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverCancelled}})
			}
		}
	case *ngap.HandoverNotify:
		h := c.ho.pending[m.AMFUENGAPID]
		if h == nil {
			c.fail(errors.New("handover notify for no handover"))
			return true
		}
		delete(c.ho.pending, m.AMFUENGAPID)
		u := h.src
		u.send(u.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
			Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkSuccessfulHandover}})
		delete(c.ues, u.amfID)
		u.amfID, u.ranID, u.send, u.stream, u.tai = h.amfID, h.ranID, h.send, h.stream, m.UserLocation.TAI
		c.ues[u.amfID] = u
		for id, dl := range h.dl {
			c.switchDownlink(u.supi, id, dl)
		}
		c.ho.n2Done++
	default:
		return false
	}
	return true
}

func (c *testCore) upfSession(supi string, psi uint8) *upfSession {
	if c.upf == nil {
		return nil
	}
	c.upf.mu.Lock()
	defer c.upf.mu.Unlock()
	return c.upf.sessions[sessKey{supi, psi}]
}

// switchDownlink points session psi's downlink at dl, with an End Marker
// on the old tunnel (TS 29.281 §7.3.2), and returns its UL tunnel.
func (c *testCore) switchDownlink(supi string, psi uint8, dl ngap.GTPTunnel) ngap.GTPTunnel {
	up := c.upf
	up.mu.Lock()
	defer up.mu.Unlock()
	s := up.sessions[sessKey{supi, psi}]
	if s == nil {
		return ngap.GTPTunnel{}
	}
	old, oldTEID := s.dlPeer, s.dlTEID
	if !old.IsValid() {
		// Before the first move the downlink went where the uplink came
		// from: the source's address (127.0.0.x) with its learnt port.
		for a, p := range up.ports {
			if a != dl.Addr {
				old = netip.AddrPortFrom(a, p)
			}
		}
	}
	s.dlTEID, s.dlPeer = dl.TEID, netip.AddrPortFrom(dl.Addr, up.ports[dl.Addr])
	if old.IsValid() && oldTEID != 0 {
		up.conn.WriteToUDPAddrPort(gtpu.AppendEndMarker(nil, oldTEID), old)
	}
	return ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: s.ulTEID}
}

// mobilityUpdate accepts a mobility registration update over the
// connection: a new TAI list (the UE's TAI), no new 5G-GUTI.
func (c *testCore) mobilityUpdate(u *coreUE, m *nas.RegistrationRequest, send sendFunc) {
	if m.RegistrationType != nas.RegistrationMobilityUpdating || m.MobileIdentity.Type != nas.IdentityGUTI || m.LastVisitedTAI == nil {
		c.fail(fmt.Errorf("registration request over a connection: %+v", m))
		return
	}
	c.ho.updates++
	c.ho.lastUpdates = append(c.ho.lastUpdates, *m.LastVisitedTAI)
	c.dl(u, &nas.RegistrationAccept{Result: nas.Registered3GPP, TAIList: []identity.TAI{u.tai},
		AllowedNSSAI: []identity.SNSSAI{{SST: 1, SD: 0x010203}}}, nas.IntegrityProtectedAndCiphered, send)
}

// hoConfig: n UEs on two gNBs with their own N3 addresses (so that the
// test UPF tells them apart) in TAs 1 and 2.
func hoConfig(c *testCore, upf *testUPF, n int) Config {
	cfg := sessionConfig(c, upf)
	cfg.UEs, cfg.GNBs, cfg.Concurrency = n, 2, 2
	cfg.TACStep = 1
	cfg.N3Addrs = []string{"127.0.0.11:0", "127.0.0.12:0"}
	return cfg
}

// TestRunHandoverScenario: against the test core, every UE pings, moves to
// the other gNB by Xn, pings, moves back by N2 and pings: each move runs a
// registration update (the gNBs are in TAs 1 and 2), no ping is lost, and
// each UE ends on its first gNB.
func TestRunHandoverScenario(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	const n = 4
	cfg := hoConfig(core, upf, n)
	cfg.Scenario, _ = ParseScenario("handover+ping")
	res := run(t, cfg)
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	for p, want := range map[string]int{ue.ProcHandoverXn: n, ue.ProcHandoverN2: n, ProcPing: 3 * n * cfg.PingCount} {
		if got, f := summary(t, res, p); got != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d", p, got, f, want)
		}
	}
	if dr := res.Data; dr.PingLost != 0 || dr.PingReceived != 3*n*cfg.PingCount {
		t.Errorf("ping: %+v", dr)
	}
	core.mu.Lock()
	ho := core.ho
	core.mu.Unlock()
	if ho.pathSwitch != n || ho.n2Done != n || ho.updates != 2*n {
		t.Errorf("core: %d path switches, %d N2 handovers, %d registration updates; want %d, %d, %d", ho.pathSwitch, ho.n2Done, ho.updates, n, n, 2*n)
	}
	for i, o := range res.UEs {
		if want := cfg.GNBID + uint32(i%2); o.GNB != want {
			t.Errorf("%s ends at gNB %d, want %d", o.SUPI, o.GNB, want)
		}
	}
	var xn, n2 int64
	for _, g := range res.GNBs {
		xn += g.Counters.Handover.PathSwitchAcks
		n2 += g.Counters.Handover.N2Completed
		if g.N3.TEIDs != 0 {
			t.Errorf("gNB %d holds %d TEIDs after the release", g.ID, g.N3.TEIDs)
		}
	}
	if xn != n || n2 != n || res.GNBs[0].TAC != 1 || res.GNBs[1].TAC != 2 {
		t.Errorf("gNBs %+v", res.GNBs)
	}
}

// TestRunHandoverSameTA: gNBs that share a TA (Config.TACs): the moves need
// no registration update, and the windows end at the handover.
func TestRunHandoverSameTA(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := hoConfig(core, upf, 2)
	cfg.TACs = []uint32{1, 1}
	cfg.Scenario, _ = ParseScenario("handover")
	res := run(t, cfg)
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	core.mu.Lock()
	updates := core.ho.updates
	core.mu.Unlock()
	if updates != 0 {
		t.Errorf("%d registration updates within one TA", updates)
	}
	if n, _ := summary(t, res, ue.ProcHandoverN2); n != 2 {
		t.Errorf("%d handover-n2 samples", n)
	}
}

// TestBackgroundMobility: the mover hands UEs around every 5 ms while they
// ping; the pings and the moves succeed.
func TestBackgroundMobility(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := hoConfig(core, upf, 3)
	cfg.PingCount, cfg.PingInterval = 40, 5*time.Millisecond
	cfg.HandoverEvery, cfg.HandoverKind = 5*time.Millisecond, HandoverKindXn
	cfg.Scenario, _ = ParseScenario("session+ping")
	res := run(t, cfg)
	for _, s := range res.Steps {
		if s.Failed != 0 {
			t.Errorf("step %s: %d failed", s.Step, s.Failed)
		}
	}
	m := res.Mobility
	if m.Moved == 0 || m.Failed != 0 || m.Xn != m.Attempted || m.N2 != 0 {
		t.Fatalf("mobility %+v", m)
	}
	core.mu.Lock()
	xn := core.ho.pathSwitch
	core.mu.Unlock()
	if xn != m.Moved {
		t.Errorf("core switched %d paths, the mover moved %d", xn, m.Moved)
	}
	t.Logf("mobility %+v; ping %d sent, %d received", m, res.Data.PingSent, res.Data.PingReceived)
}

func TestHandoverConfig(t *testing.T) {
	for in, want := range map[string]string{
		"handover":                  "register,session,handover-xn,handover-n2,release,deregister",
		"handover+ping":             "register,session,ping,handover-xn,ping,handover-n2,ping,release,deregister",
		"register,handover-n2":      "register,handover-n2",
		"session, handover-xn,ping": "session,handover-xn,ping",
	} {
		if sc, err := ParseScenario(in); err != nil || sc.String() != want {
			t.Errorf("%q: %v %v, want %s", in, sc, err, want)
		}
	}
	help := ScenarioHelp()
	for _, s := range append(append([]string(nil), scenarioOrder...), "handover-xn", "handover-n2", "service", "transfer") {
		if !strings.Contains(help, s) {
			t.Errorf("scenario help lacks %q", s)
		}
	}
	c := DefaultConfig()
	c.GNBs, c.TAC, c.TACStep = 3, 7, 2
	if c.tac(0) != 7 || c.tac(2) != 11 {
		t.Errorf("tac step: %d %d", c.tac(0), c.tac(2))
	}
	c.TACs = []uint32{5, 5, 6}
	if c.tac(1) != 5 || c.tac(2) != 6 || c.tac(3) != 5 {
		t.Errorf("tacs: %d %d %d", c.tac(1), c.tac(2), c.tac(3))
	}
	bad := map[string]func(*Config){
		"kind":               func(c *Config) { c.HandoverKind = "s1" },
		"one gnb":            func(c *Config) { c.Scenario = Scenario{StepRegister, StepHandoverXn} },
		"one gnb, mover":     func(c *Config) { c.HandoverEvery = time.Second },
		"tac step":           func(c *Config) { c.GNBs, c.TAC, c.TACStep = 3, 1<<24-2, 1 },
		"tacs":               func(c *Config) { c.GNBs, c.TACs = 2, []uint32{1, 1 << 24} },
		"negative every":     func(c *Config) { c.GNBs, c.HandoverEvery = 2, -time.Second },
		"negative interrupt": func(c *Config) { c.GNBs, c.HandoverInterruption = 2, -time.Second },
	}
	for name, mod := range bad {
		cfg := DefaultConfig()
		mod(&cfg)
		if err := cfg.withDefaults().validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := DefaultConfig()
	ok.GNBs, ok.TACStep, ok.HandoverEvery, ok.HandoverKind = 2, 1, time.Second, HandoverKindRandom
	ok.Scenario, _ = ParseScenario("handover")
	if err := ok.withDefaults().validate(); err != nil {
		t.Error(err)
	}
}

// TestHandoverNeedsGNBs: a handover step on one UE without a session fails
// the step, not the run.
func TestHandoverWithoutSession(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := hoConfig(core, upf, 1)
	cfg.Scenario = Scenario{StepRegister, StepHandoverXn, StepDeregister}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps[1].Failed != 1 || !strings.Contains(res.UEs[0].Err, "no PDU session") {
		t.Fatalf("steps %+v, UE %+v", res.Steps, res.UEs[0])
	}
}
