// Package e2e runs the whole core unit against the simulator over real
// NGAP/NAS on userspace SCTP (SCTP over UDP on loopback), checking the
// behaviour the issues ask for end to end.
package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/usim"
	"github.com/tern5g/tern/store"
)

var (
	plmn   = identity.PLMN{MCC: "208", MNC: "93"}
	slices = []identity.SNSSAI{{SST: 1, SD: 0x010203}}
	demoK  = mustHex("8baf473f2f8fd09487cccbd7097c6862")
	demoOP = mustHex("8e27b6af0e692e750f32667a3b14605d")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// testCore is a running core unit with its own store and UDP port.
type testCore struct {
	*core.Core
	cfg config.Config
}

// transport is the SCTP configuration a simulated gNB uses to reach it.
func (c *testCore) transport() sctp.Config {
	return sctp.Config{Transport: sctp.TransportUDP, UDPPort: c.cfg.AMF.SCTP.UDPPort}
}

func startCore(t *testing.T, subscribers int, mutate func(*config.Config), opts ...core.Option) *testCore {
	t.Helper()
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	cfg.Store.DemoSubscribers = subscribers
	cfg.AMF.SCTP.Transport = sctp.TransportUDP
	cfg.AMF.SCTP.UDPPort = freeUDPPort(t)
	// Tests run in parallel with other packages' cores: an ephemeral N3
	// port, and no TUN (host-wide names and routes). User-plane tests use
	// their own namespaces (lab_test.go).
	cfg.UPF.N3Addr = "127.0.0.1:0"
	cfg.UPF.NoN6 = true
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := core.New(cfg, nil, opts...)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("core close: %v", err)
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("core start: %v", err)
	}
	return &testCore{Core: c, cfg: cfg}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func dialGNB(t *testing.T, c *testCore, id uint32, p identity.PLMN) (*gnb.GNB, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: c.N2Addr(), Transport: c.transport(), GNBID: id, PLMN: p, TAC: 1, Slices: slices})
	if err == nil {
		t.Cleanup(func() { g.Close() })
	}
	return g, err
}

func newUE(t *testing.T, msin string, k []byte, sqn uint64) *ue.UE {
	t.Helper()
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: msin, K: k, OPc: demoOP, AMF: []byte{0x80, 0}, SQN: sqn})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, EA: 0xF0, IA: 0xF0, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// registeredUE attaches a demo subscriber's UE to g and registers it.
func registeredUE(t *testing.T, g *gnb.GNB, msin string) *ue.UE {
	t.Helper()
	u := newUE(t, msin, demoK, 0)
	u.Attach(g.NewPort(u))
	if err := u.Register(context.Background()); err != nil {
		t.Fatalf("registration of %s: %v", msin, err)
	}
	return u
}

// TestRegisterDeregister100UEsTwoGNBs is the main end-to-end check:
// 100 UEs register and deregister through two gNBs over userspace SCTP.
func TestRegisterDeregister100UEsTwoGNBs(t *testing.T) {
	c := startCore(t, 100, nil)
	cfg := sim.DefaultConfig()
	cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
	cfg.GNBs, cfg.UEs, cfg.Concurrency = 2, 100, 16
	cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepDeregister}
	cfg.Timeout = 20 * time.Second
	res, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim.Run: %v", err)
	}
	for _, s := range res.Steps {
		if s.OK != 100 || s.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed", s.Step, s.OK, s.Failed)
		}
	}
	gnbsUsed := map[uint32]int{}
	for _, o := range res.UEs {
		gnbsUsed[o.GNB]++
		if o.Err != "" {
			t.Errorf("%s: %s", o.SUPI, o.Err)
		}
	}
	if len(gnbsUsed) != 2 {
		t.Errorf("UEs spread over %d gNBs, want 2", len(gnbsUsed))
	}
	st := c.Stats().AMF
	if st.Registrations != 100 || st.RegisteredUEs != 0 {
		t.Errorf("AMF: %d registrations, %d still registered; want 100 and 0", st.Registrations, st.RegisteredUEs)
	}
}

// TestSUCIProfiles registers UEs that conceal their SUPI with ECIES profile
// A and profile B against the UDM's default home-network keys.
func TestSUCIProfiles(t *testing.T) {
	c := startCore(t, 4, nil)
	for _, hn := range c.cfg.UDM.HomeNetworkKeys {
		t.Run(hn.Scheme, func(t *testing.T) {
			scheme, pub := homeNetworkPublic(t, hn.Scheme, hn.PrivateKey)
			cfg := sim.DefaultConfig()
			cfg.AMFAddr, cfg.Transport = c.N2Addr(), c.transport()
			cfg.UEs, cfg.Concurrency = 2, 2
			cfg.SUCIScheme, cfg.HNKeyID, cfg.HNPublicKey = scheme, hn.ID, pub
			cfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepDeregister}
			res, err := sim.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := res.Failures(); n != 0 {
				t.Fatalf("%d failures: %+v", n, res.UEs)
			}
		})
	}
}

// TestWrongKeyAuthenticationFailure: a USIM with the wrong K sees a MAC
// failure on the network's AUTN, answers Authentication Failure #20, and the
// registration fails; the core keeps serving other UEs.
func TestWrongKeyAuthenticationFailure(t *testing.T) {
	c := startCore(t, 2, nil)
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	badK := append([]byte(nil), demoK...)
	badK[0] ^= 0xff
	bad := newUE(t, "0000000001", badK, 0)
	bad.Attach(g.NewPort(bad))
	err = bad.Register(context.Background())
	var af *ue.AuthFailureError
	if !errors.As(err, &af) || af.Cause != 20 {
		t.Fatalf("Register with wrong K: %v, want Authentication Failure #20", err)
	}
	if bad.Registered() {
		t.Fatal("UE with wrong K is registered")
	}
	good := newUE(t, "0000000002", demoK, 0)
	good.Attach(g.NewPort(good))
	if err := good.Register(context.Background()); err != nil {
		t.Fatalf("a good UE after the failure: %v", err)
	}
}

// TestResynchronisation: the USIM has accepted a higher SQN than the UDM
// holds (e.g. after the HSS was restored from a backup), so it answers the
// first challenge with synch failure #21 and AUTS; the core re-synchronises
// (TS 33.102 §6.3.5) and the second challenge succeeds.
func TestResynchronisation(t *testing.T) {
	c := startCore(t, 1, nil)
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	const ahead = 1 << 20
	u := newUE(t, "0000000001", demoK, ahead)
	u.Attach(g.NewPort(u))
	if err := u.Register(context.Background()); err != nil {
		t.Fatalf("Register with SQN ahead: %v", err)
	}
	if st := c.Stats().AMF; st.Resyncs != 1 {
		t.Errorf("AMF resyncs = %d, want 1", st.Resyncs)
	}
	sub, err := c.Store().Get(store.DemoSUPI(1))
	if err != nil {
		t.Fatal(err)
	}
	if sub.SQN <= ahead {
		t.Errorf("UDR SQN %d not moved past the USIM's %d", sub.SQN, ahead)
	}
}

// TestUnknownPLMNNGSetupFailure: a gNB of a PLMN the AMF does not serve
// gets NG Setup Failure with a cause (TS 38.413 §8.7.1.4).
func TestUnknownPLMNNGSetupFailure(t *testing.T) {
	c := startCore(t, 0, nil)
	_, err := dialGNB(t, c, 7, identity.PLMN{MCC: "001", MNC: "01"})
	var sf *gnb.SetupFailureError
	if !errors.As(err, &sf) {
		t.Fatalf("NG Setup from unknown PLMN: %v, want NG Setup Failure", err)
	}
	if st := c.Stats().AMF; st.NGSetupFailures != 1 || st.GNBs != 0 {
		t.Errorf("AMF stats %+v", st)
	}
	// A gNB of the right PLMN still gets in.
	if _, err := dialGNB(t, c, 8, plmn); err != nil {
		t.Fatalf("good gNB after a failure: %v", err)
	}
}

// TestGUTIReregistration: a registered UE registers again with its 5G-GUTI
// and stored security context, without a new authentication.
func TestGUTIReregistration(t *testing.T) {
	c := startCore(t, 1, nil)
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	u := registeredUE(t, g, "0000000001")
	ctx := context.Background()
	guti1, _ := u.GUTI()
	auths := c.Stats().AMF.Authentications
	if err := u.Reregister(ctx); err != nil {
		t.Fatalf("Reregister: %v", err)
	}
	guti2, ok := u.GUTI()
	if !ok || guti2 == guti1 {
		t.Errorf("GUTI after re-registration %v (before %v): want a new one", guti2, guti1)
	}
	if got := c.Stats().AMF.Authentications; got != auths {
		t.Errorf("re-registration with a valid context ran 5G-AKA again (%d -> %d)", auths, got)
	}
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// eventually polls the AMF's counters until cond holds (or 5 s pass) and
// returns the last reading.
func eventually(t *testing.T, c *testCore, cond func(amf.Stats) bool) amf.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := c.AMF.Stats()
		if cond(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func homeNetworkPublic(t *testing.T, scheme, privHex string) (suci.Scheme, []byte) {
	t.Helper()
	k := suci.HomeNetworkKey{Private: mustHex(privHex)}
	switch scheme {
	case "profileA":
		k.Scheme = suci.SchemeProfileA
	case "profileB":
		k.Scheme = suci.SchemeProfileB
	default:
		t.Fatalf("unknown scheme %q", scheme)
	}
	pub, err := k.Public()
	if err != nil {
		t.Fatal(err)
	}
	return k.Scheme, pub
}

// TestGarbledNGAPErrorIndication: an undecodable NGAP PDU is answered with
// Error Indication (TS 38.413 §10.2) and the association stays up.
func TestGarbledNGAPErrorIndication(t *testing.T) {
	c := startCore(t, 1, nil)
	got := make(chan ngap.Message, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: c.N2Addr(), Transport: c.transport(), GNBID: 1, PLMN: plmn, TAC: 1, Slices: slices,
		OnMessage: func(m ngap.Message) { got <- m }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, garbage := range [][]byte{{0xff, 0xff, 0xff}, {0x00, 0x15, 0x80, 0x01}, {0x40, 0x99, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x00}} {
		if err := g.SendRaw(0, garbage); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			if _, ok := m.(*ngap.ErrorIndication); !ok {
				t.Fatalf("answer to % x: %T, want ErrorIndication", garbage, m)
			}
		case <-ctx.Done():
			t.Fatalf("no Error Indication for % x", garbage)
		}
	}
	u := newUE(t, "0000000001", demoK, 0)
	u.Attach(g.NewPort(u))
	if err := u.Register(ctx); err != nil {
		t.Fatalf("registration on the same association after garbage: %v", err)
	}
}

// TestBadMACAfterSecurityMode: after security mode, a NAS message whose MAC
// does not verify is discarded (TS 24.501 §4.4.4.3) and the UE's context is
// untouched: the next correctly protected message (a deregistration) works.
func TestBadMACAfterSecurityMode(t *testing.T) {
	c := startCore(t, 1, nil)
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	u := registeredUE(t, g, "0000000001")
	ctx := context.Background()
	// Integrity protected and ciphered (type 2), a made-up MAC, SQN 9, then a
	// plain Deregistration Request (switch off) that must never take effect.
	forged := []byte{0x7e, 0x02, 0xde, 0xad, 0xbe, 0xef, 0x09, 0x7e, 0x00, 0x45, 0x09, 0x00, 0x0b, 0xf2, 0x02, 0xf8, 0x39, 0xca, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x01}
	if err := u.SendRaw(forged); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the AMF process (and discard) it
	if st := c.Stats().AMF; st.RegisteredUEs != 1 {
		t.Fatalf("after a forged message: %d registered UEs, want 1", st.RegisteredUEs)
	}
	if err := u.Deregister(ctx, false); err != nil {
		t.Fatalf("deregistration after the forged message: %v", err)
	}
	if st := c.Stats().AMF; st.RegisteredUEs != 0 {
		t.Fatalf("after deregistration: %d registered UEs", st.RegisteredUEs)
	}
}

// TestUnknownGUTIIdentityRequest: a UE registered with one core presents its
// GUTI to another core that has never seen it; that AMF asks for the SUCI
// (Identity Request, TS 24.501 §5.4.3) and registers it from scratch.
func TestUnknownGUTIIdentityRequest(t *testing.T) {
	c1 := startCore(t, 1, nil)
	c2 := startCore(t, 1, nil)
	g1, err := dialGNB(t, c1, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := dialGNB(t, c2, 2, plmn)
	if err != nil {
		t.Fatal(err)
	}
	u := registeredUE(t, g1, "0000000001")
	ctx := context.Background()
	if err := u.Deregister(ctx, true); err != nil {
		t.Fatal(err)
	}
	u.Attach(g2.NewPort(u))
	if err := u.Reregister(ctx); err != nil {
		t.Fatalf("registration with a GUTI unknown to the AMF: %v", err)
	}
	// The UE is done once it has sent Registration Complete; the AMF may
	// still be processing it.
	st := eventually(t, c2, func(st amf.Stats) bool { return st.RegisteredUEs == 1 })
	if st.Identifications != 1 || st.Authentications != 1 {
		t.Errorf("second AMF: %+v; want one identification and one authentication", st)
	}
}

// runSim runs the simulator and fails the test unless every step of every
// one of the n UEs succeeded.
func runSim(t *testing.T, cfg sim.Config, n int) *sim.Result {
	t.Helper()
	res, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim.Run: %v", err)
	}
	for _, s := range res.Steps {
		if s.OK != n || s.Failed != 0 {
			t.Errorf("step %s: %d ok, %d failed, %d skipped", s.Step, s.OK, s.Failed, s.Skipped)
		}
	}
	for _, o := range res.UEs {
		if o.Err != "" {
			t.Errorf("%s failed at %s: %s", o.SUPI, o.FailedStep, o.Err)
			break
		}
	}
	return res
}
