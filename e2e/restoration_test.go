package e2e

import (
	"context"
	"testing"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

// restorationUE is a registered UE with one session, on an idle test gNB.
type restorationUE struct {
	*ue.UE
	port *gnb.Port
	s    ue.Session
	seq  int
}

// uplinkFlows sends n uplink packets from a UE that the restoration left
// in CM-IDLE: the first starts a Service Request by itself (TS 24.501
// §5.6.1.2.1), the packets wait for the user plane and all reach the UPF.
func (r *restorationUE) uplinkFlows(t *testing.T, c *testCore, n int) {
	t.Helper()
	if r.Connected() {
		t.Fatalf("%s still connected after the restoration", r.SUPI())
	}
	if cur, _ := r.Session(r.s.ID); cur.UserPlane {
		t.Fatalf("%s: session %d still has its user plane", r.SUPI(), r.s.ID)
	}
	srs := c.AMF.Stats().ServiceRequests
	ul := c.Stats().UPF.Pipeline.ULPackets
	for range n {
		if err := r.SendData(r.s.ID, udpTo(r.s, r.seq)); err != nil {
			t.Fatalf("%s: uplink %d in CM-IDLE: %v", r.SUPI(), r.seq, err)
		}
		r.seq++
	}
	waitUntil(t, r.SUPI()+"'s uplink at the UPF", func() bool { return c.Stats().UPF.Pipeline.ULPackets >= ul+uint64(n) })
	waitUntil(t, "the AMF to count the service request", func() bool { return c.AMF.Stats().ServiceRequests > srs })
	if cur, _ := r.Session(r.s.ID); !cur.UserPlane || !r.Connected() || !r.Registered() {
		t.Fatalf("%s after the service request: session %+v, connected %v", r.SUPI(), cur, r.Connected())
	}
}

// TestN2RestorationKeepsUEsRegistered drives the restoration paths of N2
// against the real core: a gNB-initiated NG Reset of the whole interface
// and of one UE, a Reconnect (a new association and NG Setup) and an
// AMF-initiated NG Reset (TS 38.413 §8.7.4, §8.7.1.2). Each time the UEs
// concerned lose their connection, stay registered, and their next uplink
// brings a Service Request after which the traffic flows; nobody
// registers or authenticates again.
func TestN2RestorationKeepsUEsRegistered(t *testing.T) {
	c := startCore(t, 2, nil)
	g := dialIdleGNB(t, c, 1)
	ctx := context.Background()
	var ues []*restorationUE
	for _, msin := range []string{"0000000001", "0000000002"} {
		u, port, _ := observedUE(t, g.GNB, msin)
		if err := u.Register(ctx); err != nil {
			t.Fatal(err)
		}
		ues = append(ues, &restorationUE{UE: u, port: port, s: establish(t, u)})
	}
	waitUntil(t, "both UEs registered", func() bool { return c.AMF.Stats().RegisteredUEs == 2 })
	u1, u2 := ues[0], ues[1]
	idle := func(what string, n int64) {
		t.Helper()
		waitUntil(t, what, func() bool { s := c.AMF.Stats(); return s.ConnectedUEs == n && s.RegisteredUEs == 2 })
	}

	// The gNB resets the whole NG interface.
	if err := g.Reset(ctx); err != nil {
		t.Fatalf("NG Reset: %v", err)
	}
	idle("the AMF to see both UEs idle", 0)
	u1.uplinkFlows(t, c, 5)
	u2.uplinkFlows(t, c, 5)

	// The gNB resets u1's connection only.
	if err := g.Reset(ctx, u1.port); err != nil {
		t.Fatalf("partial NG Reset: %v", err)
	}
	idle("the AMF to see u1 idle", 1)
	if !u2.Connected() {
		t.Fatal("u2 lost its connection in u1's reset")
	}
	u1.uplinkFlows(t, c, 3)

	// The gNB drops its association and sets up a new one.
	if err := g.Reconnect(ctx); err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	idle("the AMF to see both UEs idle after the reconnect", 0)
	if s := c.AMF.Stats(); s.GNBs != 1 {
		t.Errorf("AMF counts %d gNBs after the reconnect", s.GNBs)
	}
	u1.uplinkFlows(t, c, 4)
	u2.uplinkFlows(t, c, 4)

	// The AMF resets the gNB's whole interface (an operator's action).
	if err := c.AMF.ResetGNB(ctx, ngap.GlobalGNBID{PLMN: plmn, GNBID: 1, BitLen: 22},
		ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscOMIntervention}); err != nil {
		t.Fatalf("AMF-initiated NG Reset: %v", err)
	}
	idle("the AMF to see both UEs idle after its own reset", 0)
	waitUntil(t, "the UEs idle at the gNB", func() bool { return !u1.Connected() && !u2.Connected() })
	u1.uplinkFlows(t, c, 2)
	u2.uplinkFlows(t, c, 2)

	st := c.AMF.Stats()
	if st.Registrations != 2 || st.Authentications != 2 || st.NGResets != 3 || st.ServiceRejects != 0 {
		t.Errorf("AMF: %d registrations, %d authentications, %d NG Resets, %d service rejects; want 2, 2, 3, 0",
			st.Registrations, st.Authentications, st.NGResets, st.ServiceRejects)
	}
	if gc := g.Counters(); gc.Resets != 3 || gc.Reconnects != 1 || gc.ErrorIndications != 0 {
		t.Errorf("gNB counters %+v", gc)
	}
	for _, u := range ues {
		if err := u.Deregister(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, c.Core)
}
