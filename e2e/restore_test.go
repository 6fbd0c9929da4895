package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/upf"
)

// remoteUPF is a UPF reached over PFCP/UDP, as `tern nf upf` runs it.
type remoteUPF struct {
	cfg upf.Config
	*upf.UPF
}

func startRemoteUPF(t *testing.T, cfg upf.Config) *remoteUPF {
	t.Helper()
	u, err := upf.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return &remoteUPF{cfg: cfg, UPF: u}
}

// waitUPF waits for the SMF to see its UPF in state want.
func waitUPF(t *testing.T, c *testCore, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for c.SMF.UPFStates()["upf"] != want {
		if time.Since(start) > within {
			t.Fatalf("UPF %s after %v, want %s", c.SMF.UPFStates()["upf"], within, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// TestUPFRestartUnderCore: the core starts before its UPF and associates
// when the UPF appears; the UPF is then killed (no PFCP goodbye) and a new
// one started on the same addresses. The SMF notices the new Recovery Time
// Stamp within two heartbeat intervals, restores every session with its
// F-TEID, and new sessions succeed; no UE registers again (TS 23.527
// §4.3.2).
func TestUPFRestartUnderCore(t *testing.T) {
	const ues = 5
	const heartbeat = 200 * time.Millisecond
	// The SMF's and the UPF's PFCP and GTP-U are on the well-known ports of
	// addresses of their own in 127/8: parallel test binaries do not
	// collide with them, and no ephemeral socket can take the UPF's ports
	// while it restarts.
	n4, upfAddr := freeport.Loopback(), freeport.Loopback()
	ucfg := upf.DefaultConfig()
	ucfg.PFCPAddr = netip.AddrPortFrom(upfAddr, pfcp.Port).String()
	ucfg.N3Addr = netip.AddrPortFrom(upfAddr, gtpu.Port).String()
	ucfg.NoN6 = true
	c := startCore(t, ues+1, func(cfg *config.Config) {
		cfg.UPF.Embedded = false
		cfg.SMF.NodeID = n4.String()
		cfg.SMF.N4Address = n4.String()
		cfg.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: ucfg.PFCPAddr, N3: upfAddr.String(), DNNs: []string{"internet", "ims"}}}
		cfg.SMF.Timers.Heartbeat = heartbeat
		cfg.SMF.Timers.HeartbeatTimeout = heartbeat / 2
		cfg.SMF.Timers.HeartbeatRetries = 2
	})
	if st := c.SMF.UPFStates()["upf"]; st != "down" {
		t.Fatalf("UPF %s before it runs", st)
	}
	u := startRemoteUPF(t, ucfg)
	waitUPF(t, c, "up", 5*time.Second)

	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	var phones []*ue.UE
	var sessions []ue.Session
	for i := range ues {
		p := registeredUE(t, g, fmt.Sprintf("%010d", i+1))
		s, err := p.EstablishSession(context.Background(), ue.SessionRequest{DNN: "internet"})
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		phones = append(phones, p)
		sessions = append(sessions, s)
	}
	// Every session's downlink is set up at the UPF before it dies.
	for deadline := time.Now().Add(5 * time.Second); c.SMF.Stats().Established != ues; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("SMF %+v", c.SMF.Stats())
		}
	}
	before := u.Stats().Control
	if before.Sessions != ues {
		t.Fatalf("UPF holds %d sessions, want %d", before.Sessions, ues)
	}
	registrations := c.AMF.Stats().Registrations

	u.Close() // killed: no association release, sessions gone with it
	u = startRemoteUPF(t, ucfg)
	restartedAt := time.Now()
	for c.SMF.Stats().SessionsRestored < ues {
		if time.Since(restartedAt) > 2*heartbeat+time.Second {
			t.Fatalf("%d sessions restored %v after the restart (heartbeat %v): SMF %+v, UPF %s", c.SMF.Stats().SessionsRestored, time.Since(restartedAt), heartbeat, c.SMF.Stats(), c.SMF.UPFStates()["upf"])
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("restart noticed and %d sessions restored %v after the new UPF answered", ues, time.Since(restartedAt).Round(time.Millisecond))
	waitUPF(t, c, "up", time.Second)
	after := u.Stats().Control
	if after.Sessions != ues || after.TEIDs != before.TEIDs || after.PDRs != before.PDRs || after.FARs != before.FARs {
		t.Errorf("restarted UPF holds %+v, before the restart %+v", after, before)
	}
	// tern's UPF allocates F-TEIDs (FTUP): each session came back with its
	// F-TEID and RESTI, the UPF holding the TEIDs (TS 29.244 §5.5.1).
	if st := c.SMF.Stats(); st.SessionsNotRestored != 0 || st.N4Sessions != ues || st.RestoredSameTEID != ues || st.UplinksMoved != 0 {
		t.Errorf("SMF %+v", st)
	}
	if n := after.Restored; n != ues {
		t.Errorf("the UPF saw %d restorations (RESTI), want %d", n, ues)
	}
	// New sessions work, on old UEs and new ones, and nobody registered again.
	if _, err := phones[0].EstablishSession(context.Background(), ue.SessionRequest{DNN: "ims"}); err != nil {
		t.Errorf("second session after the restart: %v", err)
	}
	p := registeredUE(t, g, fmt.Sprintf("%010d", ues+1))
	if _, err := p.EstablishSession(context.Background(), ue.SessionRequest{DNN: "internet"}); err != nil {
		t.Errorf("new UE's session after the restart: %v", err)
	}
	if got := c.AMF.Stats().Registrations; got != registrations+1 {
		t.Errorf("%d registrations after the restart, want only the new UE's", got-registrations)
	}
	if n := u.Stats().Control.Sessions; n != ues+2 {
		t.Errorf("UPF holds %d sessions, want %d", n, ues+2)
	}
	// Every restored UE's uplink still reaches the UPF on the tunnel its
	// gNB has, beside the new sessions.
	ul := u.Stats().Pipeline
	for i, p := range phones {
		if err := p.SendData(sessions[i].ID, udpTo(sessions[i], i)); err != nil {
			t.Fatalf("uplink of UE %d: %v", i, err)
		}
	}
	waitUntil(t, "the restored UEs' uplink at the UPF", func() bool { return u.Stats().Pipeline.ULPackets >= ul.ULPackets+ues })
	if d := u.Stats().Pipeline.Drops["unknown-teid"]; d != ul.Drops["unknown-teid"] {
		t.Errorf("%d uplink packets on unknown TEIDs", d-ul.Drops["unknown-teid"])
	}
	// Everything restored is released cleanly: nothing left in the NFs or
	// at the restarted UPF (its TEIDs included).
	for _, p := range append(phones, p) {
		if err := p.Deregister(context.Background(), false); err != nil {
			t.Fatal(err)
		}
	}
	st := waitIdle(t, c.Core)
	st.UPF = u.Stats()
	if left := leftovers(st); left != "" {
		t.Errorf("left behind:%s", left)
	}
}
