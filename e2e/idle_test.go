package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/usim"
)

// Idle mode against the real core: the service request, network-initiated
// deregistration, Service Reject #9 and paging. The core's UPF runs
// without N6 (startCore), so uplink is counted at the UPF and dropped
// there; downlink from the data network needs injection (downlinkInjector).

// downlinkInjector returns a function that delivers an IPv4/UDP packet with
// the given payload from the data network to the UE address dst through
// c's UPF (as if it had come in on N6), or nil while the UPF cannot take
// injected downlink; the paging test is skipped then.
var downlinkInjector = func(c *testCore) func(dst netip.Addr, payload []byte) {
	dn := netip.MustParseAddr("10.100.6.2")
	return func(dst netip.Addr, p []byte) {
		// An error means a UPF not started: the packets then never arrive,
		// which the test sees.
		_ = c.UPF.InjectDownlink(ipv4pkt.AppendUDP(nil, dn, dst, 9, 40000, p))
	}
}

// idleGNB is a gNB that keeps every NGAP message the AMF sent it.
type idleGNB struct {
	*gnb.GNB
	mu   sync.Mutex
	msgs []ngap.Message
}

// dialIdleGNB connects gNB id (1..9) to c. Its N3 is on port 2152 (where
// the UPF sends downlink) of an address of 127/8 of this process's own,
// and it sends uplink to the UPF's N3 port.
func dialIdleGNB(t *testing.T, c *testCore, id uint32) *idleGNB {
	t.Helper()
	ig := &idleGNB{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n3 := netip.AddrPortFrom(loopbackAddr(byte(80+id)), gtpu.Port)
	g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: c.N2Addr(), Transport: c.transport(), GNBID: id, PLMN: plmn, TAC: 1, Slices: slices,
		N3Addr: n3.String(), N3PeerPort: c.UPF.N3Addr().Port(),
		OnMessage: func(m ngap.Message) {
			ig.mu.Lock()
			ig.msgs = append(ig.msgs, m)
			ig.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ig.GNB = g
	return ig
}

// contextSetups returns the Initial Context Setup Requests received so far.
func (g *idleGNB) contextSetups() []*ngap.InitialContextSetupRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*ngap.InitialContextSetupRequest
	for _, m := range g.msgs {
		if ics, ok := m.(*ngap.InitialContextSetupRequest); ok {
			out = append(out, ics)
		}
	}
	return out
}

// observedUE is a demo subscriber's UE attached to g, with a recorder.
func observedUE(t *testing.T, g *gnb.GNB, msin string) (*ue.UE, *gnb.Port, *report.Recorder) {
	t.Helper()
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: msin, K: demoK, OPc: demoOP, AMF: []byte{0x80, 0}})
	if err != nil {
		t.Fatal(err)
	}
	rec := report.NewRecorder()
	u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, Timeout: 10 * time.Second, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	p := g.NewPort(u)
	u.Attach(p)
	return u, p, rec
}

// waitUntil polls cond for 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitExplained(t, what, cond, nil)
}

// waitExplained is waitUntil that adds explain's account of the state to
// the failure, for a wait that failed once and could not be reproduced.
func waitExplained(t *testing.T, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			if explain != nil {
				t.Fatalf("timed out waiting for %s: %s", what, explain())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func establish(t *testing.T, u *ue.UE) ue.Session {
	t.Helper()
	slice := slices[0]
	s, err := u.EstablishSession(context.Background(), ue.SessionRequest{DNN: "internet", SNSSAI: &slice})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// udpTo builds an uplink packet from the session to the lab's DN.
func udpTo(s ue.Session, seq int) []byte {
	return ipv4pkt.AppendUDP(nil, s.Address, netip.MustParseAddr(sim.DefaultDataTarget), 40000, 9, fmt.Appendf(nil, "ul-%03d", seq))
}

// TestServiceRequestRestoresUserPlane: a UE with a session goes idle (the
// gNB drops its tunnel) and comes back with a service request whose Uplink
// data status names the session: the Service Accept comes in an Initial
// Context Setup Request with the session's setup item, the gNB holds a
// tunnel again and the UPF counts the UE's uplink. Then uplink sent in
// CM-IDLE starts the service request by itself and gets through.
func TestServiceRequestRestoresUserPlane(t *testing.T) {
	c := startCore(t, 1, nil)
	g := dialIdleGNB(t, c, 1)
	u, port, rec := observedUE(t, g.GNB, "0000000001")
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	s := establish(t, u)
	before := port.Sessions()
	if len(before) != 1 || before[0].ID != s.ID {
		t.Fatalf("gNB sessions %+v", before)
	}
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, _ := u.Session(s.ID); cur.UserPlane || len(port.Sessions()) != 0 || u.Connected() {
		t.Fatalf("after the release: session %+v, gNB sessions %+v", cur, port.Sessions())
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	icsBefore := len(g.contextSetups())

	if err := u.ServiceRequest(ctx, nas.ServiceData); err != nil {
		t.Fatal(err)
	}
	ics := g.contextSetups()[icsBefore:]
	if len(ics) != 1 || len(ics[0].PDUSessionResourceSetupItems) != 1 || ics[0].PDUSessionResourceSetupItems[0].ID != s.ID ||
		ics[0].NASPDU == nil || ics[0].UEAggregateMaxBitRate == nil {
		t.Fatalf("Initial Context Setup Requests after the service request: %+v", ics)
	}
	after := port.Sessions()
	if len(after) != 1 || after[0].ID != s.ID || after[0].UL.TEID == 0 {
		t.Fatalf("gNB sessions after the service request %+v", after)
	}
	if cur, _ := u.Session(s.ID); !cur.UserPlane || !u.Connected() || !u.Registered() {
		t.Fatalf("session %+v connected %v", cur, u.Connected())
	}
	if n := len(rec.Samples(ue.ProcServiceRequest)); n != 1 {
		t.Fatalf("%d service-request samples", n)
	}
	// The AMF counts the accept once it is out: possibly after the UE
	// took it.
	waitUntil(t, "the AMF to count the service request", func() bool { return c.AMF.Stats().ServiceRequests == 1 })
	st := c.AMF.Stats()
	if st.ServiceRequests != 1 || st.ServiceRejects != 0 || st.Authentications != 1 {
		t.Errorf("AMF: %d service requests, %d rejects, %d authentications; want 1, 0, 1 (the context verified)",
			st.ServiceRequests, st.ServiceRejects, st.Authentications)
	}

	ul := c.Stats().UPF.Pipeline.ULPackets
	for i := range 5 {
		if err := u.SendData(s.ID, udpTo(s, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the UPF to count 5 uplink packets", func() bool { return c.Stats().UPF.Pipeline.ULPackets == ul+5 })

	// Uplink in CM-IDLE: buffered, a service request on its own, then out.
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	ul = c.Stats().UPF.Pipeline.ULPackets
	for i := range 8 {
		if err := u.SendData(s.ID, udpTo(s, 100+i)); err != nil {
			t.Fatalf("uplink %d in CM-IDLE: %v", i, err)
		}
	}
	waitExplained(t, "the buffered uplink at the UPF", func() bool { return c.Stats().UPF.Pipeline.ULPackets == ul+8 }, func() string {
		up := c.Stats().UPF.Pipeline
		cur, _ := u.Session(s.ID)
		return fmt.Sprintf("the UPF counted %d of 8 (drops %v); UE %+v, connected %v, session %+v, gNB sessions %+v, %d service-request samples",
			up.ULPackets-ul, up.Drops, u.Stats(), u.Connected(), cur, port.Sessions(), len(rec.Samples(ue.ProcServiceRequest)))
	})
	// The first packet finds the UE idle and is queued behind the service
	// request it starts; the others are queued too unless the service
	// request was done before they were sent (a test goroutine preempted
	// on a loaded machine): none is dropped either way, and the UPF
	// counted all 8 above.
	if ust := u.Stats(); ust.QueuedUplink < 1 || ust.QueuedUplink > 8 || ust.DroppedUplink != 0 {
		t.Fatalf("UE stats %+v", ust)
	}
	waitUntil(t, "the second service-request sample", func() bool { return len(rec.Samples(ue.ProcServiceRequest)) == 2 })
	if ics := g.contextSetups()[icsBefore:]; len(ics) != 2 || len(ics[1].PDUSessionResourceSetupItems) != 1 {
		t.Fatalf("Initial Context Setup Requests %+v", ics)
	}
	waitUntil(t, "the AMF to count the second service request", func() bool { return c.AMF.Stats().ServiceRequests == 2 })
	if err := u.ReleaseSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c.Core)
}

// TestServiceRequestNASContainer: a UE that sends its Service Request as
// TS 24.501 §4.4.6 says (integrity protected, the cleartext IEs and a
// ciphered NAS message container holding the complete request with the
// Uplink data status) gets its session's user plane back; so does one
// that puts those IEs outside.
func TestServiceRequestNASContainer(t *testing.T) {
	for _, outer := range []bool{false, true} {
		t.Run(fmt.Sprintf("outer=%v", outer), func(t *testing.T) { testServiceRequestNASContainer(t, outer) })
	}
}

func testServiceRequestNASContainer(t *testing.T, outer bool) {
	c := startCore(t, 1, nil)
	g := dialIdleGNB(t, c, 1)
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: "0000000001", K: demoK, OPc: demoOP, AMF: []byte{0x80, 0}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, Timeout: 10 * time.Second, OuterServiceRequestIEs: outer})
	if err != nil {
		t.Fatal(err)
	}
	port := g.NewPort(u)
	u.Attach(port)
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	s := establish(t, u)
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	n := len(g.contextSetups())
	if err := u.ServiceRequest(ctx, nas.ServiceData); err != nil {
		t.Fatal(err)
	}
	ics := g.contextSetups()[n:]
	if len(ics) != 1 || len(ics[0].PDUSessionResourceSetupItems) != 1 || ics[0].PDUSessionResourceSetupItems[0].ID != s.ID {
		var items []ngap.PDUSessionResourceSetupItemSUReq
		for _, m := range ics {
			items = append(items, m.PDUSessionResourceSetupItems...)
		}
		t.Errorf("%d Initial Context Setup Requests with setup items %+v; want one with session %d's", len(ics), items, s.ID)
	}
	if cur, _ := u.Session(s.ID); !cur.UserPlane || len(port.Sessions()) != 1 {
		t.Errorf("session %d has no user plane after the service request (gNB sessions %+v)", s.ID, port.Sessions())
	}
}

// TestNetworkDeregistration: c.AMF.Deregister on a connected UE: it
// answers, loses its session and is deregistered; with re-registration
// required it registers again by itself.
func TestNetworkDeregistration(t *testing.T) {
	c := startCore(t, 1, nil)
	g := dialIdleGNB(t, c, 1)
	u, _, rec := observedUE(t, g.GNB, "0000000001")
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	establish(t, u)
	if err := c.AMF.Deregister(ctx, u.SUPI(), 0, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the deregistration", func() bool {
		st := c.AMF.Stats()
		return !u.Registered() && !u.Connected() && st.NetworkDeregistrations == 1 && st.RegisteredUEs == 0 && st.UEContexts == 0
	})
	if len(u.Sessions()) != 0 || u.Stats().NetworkDeregistrations != 1 || u.Stats().Reregistrations != 0 {
		t.Fatalf("sessions %+v stats %+v", u.Sessions(), u.Stats())
	}
	waitIdle(t, c.Core)
	time.Sleep(50 * time.Millisecond)
	if u.Registered() || u.Connected() {
		t.Fatal("the UE came back without being asked to")
	}

	// Registered again, deregistered with "re-registration required".
	regs := c.AMF.Stats().Registrations
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	// The UE is done when it sends Registration Complete; the AMF ignores
	// a deregistration of a UE whose registration it has not completed.
	regs++
	waitUntil(t, "the AMF to complete the registration", func() bool { return c.AMF.Stats().Registrations == regs })
	if err := c.AMF.Deregister(ctx, u.SUPI(), 0, true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the re-registration", func() bool {
		st := c.AMF.Stats()
		return st.NetworkDeregistrations == 2 && st.Registrations == regs+1 && st.RegisteredUEs == 1 && u.Registered()
	})
	if st := u.Stats(); st.NetworkDeregistrations != 2 || st.Reregistrations != 1 {
		t.Fatalf("UE stats %+v", st)
	}
	// The UE kept its 5G-GUTI; the AMF had forgotten it and identified it
	// again.
	if n := len(rec.Samples(ue.ProcReregistration)); n != 1 {
		t.Errorf("%d re-registration samples", n)
	}
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// TestServiceRejectUnknownTMSI: a Service Request whose 5G-S-TMSI the AMF
// does not know gets Service Reject #9 and the UE registers again by
// itself: after the network deregistered the idle UE locally, and on a
// core that never saw the UE (as after a restart). A forged 5G-S-TMSI gets
// the reject too.
func TestServiceRejectUnknownTMSI(t *testing.T) {
	c := startCore(t, 1, nil)
	g := dialIdleGNB(t, c, 1)
	u, _, rec := observedUE(t, g.GNB, "0000000001")
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	establish(t, u)
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	// TS 23.502 §4.2.2.3.3: an idle UE is deregistered without paging.
	if err := c.AMF.Deregister(ctx, u.SUPI(), 0, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the local deregistration", func() bool { return c.AMF.Stats().RegisteredUEs == 0 })
	if !u.Registered() {
		t.Fatal("the idle UE learnt of its deregistration")
	}
	regs := c.AMF.Stats().Registrations
	err := u.ServiceRequest(ctx, nas.ServiceData)
	var rej *ue.ServiceRejectError
	if !errors.As(err, &rej) || rej.Cause != nas.CauseUEIdentityCannotBeDerived {
		t.Fatalf("service request of a forgotten UE: %v, want Service Reject #9", err)
	}
	waitUntil(t, "the registration after #9", func() bool {
		return u.Registered() && c.AMF.Stats().Registrations == regs+1
	})
	if st := c.AMF.Stats(); st.ServiceRejects != 1 || st.RegisteredUEs != 1 {
		t.Errorf("AMF: %d service rejects, %d registered", st.ServiceRejects, st.RegisteredUEs)
	}
	if len(u.Sessions()) != 0 || len(rec.Samples(ue.ProcRegistration)) != 2 {
		t.Errorf("sessions %+v, %d registration samples", u.Sessions(), len(rec.Samples(ue.ProcRegistration)))
	}

	// A core that never saw the UE.
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := startCore(t, 1, nil)
	g2 := dialIdleGNB(t, c2, 2)
	u.Attach(g2.NewPort(u))
	err = u.ServiceRequest(ctx, nas.ServiceSignalling)
	if !errors.As(err, &rej) || rej.Cause != nas.CauseUEIdentityCannotBeDerived {
		t.Fatalf("service request to another core: %v, want Service Reject #9", err)
	}
	waitUntil(t, "the registration with the second core", func() bool {
		return u.Registered() && c2.AMF.Stats().RegisteredUEs == 1
	})
	if st := c2.AMF.Stats(); st.ServiceRejects != 1 || st.Registrations != 1 {
		t.Errorf("second AMF: %d service rejects, %d registrations", st.ServiceRejects, st.Registrations)
	}
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}

	// A forged 5G-S-TMSI of the AMF's set: plain Service Reject #9, then
	// the release.
	fake := &nasRecorder{got: make(chan []byte, 4), released: make(chan struct{}, 1)}
	p := g2.NewPort(fake)
	amfID := g2.AMF().ServedGUAMIs[0].AMFID
	forged := identity.STMSI{SetID: amfID.SetID, Pointer: amfID.Pointer, TMSI: 0x0badf00d}
	sr, err := nas.Encode(&nas.ServiceRequest{ServiceType: nas.ServiceData, NgKSI: nas.NgKSI{KSI: 1}, STMSI: forged})
	if err != nil {
		t.Fatal(err)
	}
	prot := append([]byte{0x7e, byte(nas.IntegrityProtected), 1, 2, 3, 4, 0}, sr...) // a made-up MAC
	if _, err := p.SendInitial(prot, ngap.RRCMOData, &forged); err != nil {
		t.Fatal(err)
	}
	select {
	case pdu := <-fake.got:
		m, err := nas.Decode(pdu)
		if r, ok := m.(*nas.ServiceReject); err != nil || !ok || r.Cause != nas.CauseUEIdentityCannotBeDerived {
			t.Fatalf("answer to a forged 5G-S-TMSI: %T %+v %v", m, m, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a forged 5G-S-TMSI")
	}
	select {
	case <-fake.released:
	case <-time.After(10 * time.Second):
		t.Fatal("the forged request's connection was not released")
	}
}

// nasRecorder is a gnb.UE that only records.
type nasRecorder struct {
	got      chan []byte
	released chan struct{}
}

func (r *nasRecorder) HandleNAS(pdu []byte)                       { r.got <- append([]byte(nil), pdu...) }
func (r *nasRecorder) HandleRelease(time.Time)                    { r.released <- struct{}{} }
func (r *nasRecorder) HandleContextSetup(time.Time)               {}
func (r *nasRecorder) HandlePaging(time.Time)                     {}
func (r *nasRecorder) HandleSessionSetup(uint8, time.Time, error) {}
func (r *nasRecorder) HandleSessionReleased(uint8, time.Time)     {}
func (r *nasRecorder) HandleData(uint8, []byte)                   {}

// TestPeriodicRegistration: with the AMF's T3512 at 2 s and its mobile
// reachable and implicit deregistration timers short, a UE that runs
// periodic registration stays registered while one that does not is
// implicitly deregistered, gets Service Reject #9 at its next service
// request and registers again. Both go idle by the inactivity timer.
func TestPeriodicRegistration(t *testing.T) {
	c := startCore(t, 2, func(cfg *config.Config) {
		cfg.AMF.Timers.T3512 = 2 * time.Second
		cfg.AMF.Timers.MobileReachable = 2500 * time.Millisecond
		cfg.AMF.Timers.ImplicitDeregistration = 500 * time.Millisecond
	})
	g := dialIdleGNB(t, c, 1)
	newIdleUE := func(msin string, periodic bool) (*ue.UE, *report.Recorder) {
		card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: msin, K: demoK, OPc: demoOP, AMF: []byte{0x80, 0}})
		if err != nil {
			t.Fatal(err)
		}
		rec := report.NewRecorder()
		u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, Timeout: 10 * time.Second, Observer: rec,
			PeriodicRegistration: periodic, InactivityTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		u.Attach(g.NewPort(u))
		if err := u.Register(context.Background()); err != nil {
			t.Fatal(err)
		}
		return u, rec
	}
	periodic, prec := newIdleUE("0000000001", true)
	lazy, lrec := newIdleUE("0000000002", false)
	// The AMF counts an implicit deregistration before it removes the UE:
	// wait for both.
	waitUntil(t, "the implicit deregistration", func() bool {
		st := c.AMF.Stats()
		return st.ImplicitDeregistrations >= 1 && st.RegisteredUEs <= 1
	})
	st := c.AMF.Stats()
	if st.ImplicitDeregistrations != 1 || st.RegisteredUEs != 1 || len(prec.Samples(ue.ProcPeriodicRegistration)) == 0 || periodic.Stats().PeriodicRegistrations == 0 {
		t.Fatalf("AMF %d registered UEs; periodic UE: %d updates, stats %+v", st.RegisteredUEs,
			len(prec.Samples(ue.ProcPeriodicRegistration)), periodic.Stats())
	}
	if n := len(lrec.Samples(ue.ProcANRelease)); n != 1 || lazy.Connected() || !lazy.Registered() {
		t.Fatalf("UE without periodic registration: %d releases, connected %v, registered %v", n, lazy.Connected(), lazy.Registered())
	}
	var rej *ue.ServiceRejectError
	if err := lazy.ServiceRequest(context.Background(), nas.ServiceSignalling); !errors.As(err, &rej) || rej.Cause != nas.CauseUEIdentityCannotBeDerived {
		t.Fatalf("service request after the implicit deregistration: %v, want #9", err)
	}
	waitUntil(t, "the registration after #9", func() bool { return lazy.Registered() && c.AMF.Stats().RegisteredUEs == 2 })
}

// TestIdleCyclesLeaveNothingBehind: 20 UEs run register, session, idle,
// service, release, deregister 100 times each (2,000 cycles); afterwards the
// core holds no UE registration, PDU session or UPF session, and the
// goroutines are back to where they were.
func TestIdleCyclesLeaveNothingBehind(t *testing.T) {
	const ues, cycles = 20, 100
	c := startCore(t, ues, nil)
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 2, ues, 10
	cfg.Timeout = 20 * time.Second
	for range cycles {
		cfg.Scenario = append(cfg.Scenario, sim.StepRegister, sim.StepSession, sim.StepIdle, sim.StepService, sim.StepRelease, sim.StepDeregister)
	}
	goroutines := runtime.NumGoroutine()
	res := runSim(t, cfg, ues)
	for _, s := range res.Summaries {
		if s.Procedure == ue.ProcServiceRequest && (s.Count != ues*cycles || s.Failures != 0) {
			t.Errorf("service-request: %d ok, %d failed; want %d", s.Count, s.Failures, ues*cycles)
		}
	}
	st := waitIdle(t, c.Core)
	if st.AMF.ServiceRequests != ues*cycles || st.AMF.ServiceRejects != 0 || st.AMF.RegisteredUEs != 0 || st.AMF.ConnectedUEs != 0 {
		t.Errorf("AMF: %d service requests, %d rejects, %d registered, %d connected; want %d, 0, 0, 0",
			st.AMF.ServiceRequests, st.AMF.ServiceRejects, st.AMF.RegisteredUEs, st.AMF.ConnectedUEs, ues*cycles)
	}
	if st.SMF.Established != ues*cycles || st.SMF.Released != ues*cycles {
		t.Errorf("SMF: %d established, %d released; want %d each", st.SMF.Established, st.SMF.Released, ues*cycles)
	}
	// The simulator's gNBs are closed; what the core started per UE or
	// session ends too.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, %d before the run:\n%s", runtime.NumGoroutine(), goroutines, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPagingDeliversDownlink: downlink for an idle UE is buffered at the
// UPF, the AMF pages, the gNB hands the Paging to the UE, which answers
// with a service request (mobile terminated); every packet then arrives,
// in order, and later ones without paging.
func TestPagingDeliversDownlink(t *testing.T) {
	c := startCore(t, 1, nil)
	inject := downlinkInjector(c)
	if inject == nil {
		t.Skip("needs downlink injection into the UPF")
	}
	g := dialIdleGNB(t, c, 1)
	u, port, rec := observedUE(t, g.GNB, "0000000001")
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	s := establish(t, u)
	got := make(chan string, 64)
	if err := u.SetProbe(s.ID, receiverFunc(func(pkt []byte) bool {
		ip, err := ipv4pkt.ParseIPv4(pkt)
		if err != nil || ip.Dst != s.Address || ip.Protocol != ipv4pkt.ProtoUDP {
			return false
		}
		d, ok := ipv4pkt.ParseUDP(ip.Payload)
		if !ok {
			return false
		}
		got <- string(d.Payload)
		return true
	})); err != nil {
		t.Fatal(err)
	}
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })

	const buffered, after = 10, 5
	for i := range buffered {
		inject(s.Address, fmt.Appendf(nil, "dl-%03d", i))
	}
	for i := range buffered {
		select {
		case p := <-got:
			if want := fmt.Sprintf("dl-%03d", i); p != want {
				t.Fatalf("downlink %d: %q, want %q (in order)", i, p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("downlink %d never arrived (gNB %+v, UE %+v, AMF pagings %d)", i, g.Counters(), u.Stats(), c.AMF.Stats().Pagings)
		}
	}
	if gc := g.Counters(); gc.Pagings == 0 || gc.PagedUEs == 0 {
		t.Errorf("gNB counters %+v", gc)
	}
	waitUntil(t, "the paging sample", func() bool { return len(rec.Samples(ue.ProcPaging)) == 1 })
	if st := u.Stats(); st.Pagings == 0 || st.PagingsIgnored != st.Pagings-1 {
		t.Errorf("UE stats %+v: one paging answered", st)
	}
	if cur, _ := u.Session(s.ID); !cur.UserPlane || len(port.Sessions()) != 1 {
		t.Fatalf("session %+v, gNB sessions %+v", cur, port.Sessions())
	}
	pagings := c.AMF.Stats().Pagings
	for i := range after {
		inject(s.Address, fmt.Appendf(nil, "dl-%03d", buffered+i))
	}
	for i := range after {
		select {
		case p := <-got:
			if want := fmt.Sprintf("dl-%03d", buffered+i); p != want {
				t.Fatalf("downlink %d: %q, want %q", buffered+i, p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("downlink %d never arrived", buffered+i)
		}
	}
	if st := c.AMF.Stats(); st.Pagings != pagings || st.PagingFailures != 0 {
		t.Errorf("AMF: %d pagings (%d before the connected downlink), %d failures", st.Pagings, pagings, st.PagingFailures)
	}
	if n := len(rec.Samples(ue.ProcServiceRequest)); n != 0 {
		t.Errorf("%d UE-triggered service requests", n)
	}
}

type receiverFunc func([]byte) bool

func (f receiverFunc) Receive(p []byte) bool { return f(p) }
