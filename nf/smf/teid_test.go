package smf

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// doubleConfig is the SMF configuration for tests against upfDouble: one
// UPF over PFCP/UDP on loopback, supervised quickly.
func doubleConfig() Config {
	cfg := testConfig()
	cfg.Timers.Heartbeat = 50 * time.Millisecond
	cfg.Timers.HeartbeatTimeout = 40 * time.Millisecond
	cfg.Timers.HeartbeatRetries = 3
	cfg.Timers.PFCPTimeout = 800 * time.Millisecond
	return cfg
}

// newDoubleHarness starts an SMF whose UPF "upf1" is d, reached through
// tern's PFCP endpoint.
func newDoubleHarness(t *testing.T, cfg Config, d *upfDouble) *harness {
	t.Helper()
	h := buildHarnessOn(t, cfg, pcf.Config{}, nil)
	ep, err := pfcp.Listen(pfcp.EndpointConfig{Addr: "127.0.0.1:0", NodeID: pfcp.NodeID{IP: netip.MustParseAddr(DefaultNodeID)},
		CP: h.smf, T1: 100 * time.Millisecond, N1: 5, RecoveryTime: h.smf.RecoveryTime()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	if err := h.smf.SetUserPlane("upf1", ep.UserPlane(d.addr())); err != nil {
		t.Fatal(err)
	}
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "association", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
	return h
}

// ueView is what the gNB and the UE of one PDU session hold.
type ueView struct {
	ref string
	ip  netip.Addr // the UE's address
	ul  uint32     // the gNB's uplink TEID
}

// establishViewed establishes supi's session 1 and notes what its gNB and
// UE hold (the fake AMF answers the setup itself).
func (h *harness) establishViewed(t *testing.T, supi string, views map[string]*ueView) {
	t.Helper()
	ref, acc, tr := h.establish(t, supi, 1, "internet")
	st, err := ngap.DecodeSetupRequestTransfer(tr.n2)
	if err != nil {
		t.Fatal(err)
	}
	views[supi] = &ueView{ref: ref, ip: acc.PDUAddress.IPv4, ul: st.ULTunnel.TEID}
}

// TS 23.527 §4.3.2, TS 29.244 §5.5.1: a UPF that allocates its TEIDs
// itself restarts, its allocator counting from 1 again. Restored with
// RESTI where it takes it, else with CHOOSE and the gNB told of the new
// tunnel with a PDU Session Resource Modify Request, afterwards every TEID
// a gNB sends on reaches its own session: restored UEs keep their uplink,
// new sessions get TEIDs no restored one has, and every session is
// deleted at the UPF, each release without waiting. The per-UPF decision
// (UPFConfig.Restoration):
//   - auto at a UPF that advertises FTUP and honours RESTI: RESTI;
//   - choose at a UPF that advertises FTUP but ignores RESTI (Rel-15: the
//     old F-TEID with RESTI would be taken as the SMF's own choice, which
//     its allocator hands to the next new session);
//   - auto at a UPF that allocates on CHOOSE without advertising FTUP:
//     CHOOSE (it does not claim to know RESTI).
func TestRestorationWithUPFAllocatedTEIDs(t *testing.T) {
	for _, c := range []struct {
		name        string
		ftup, resti bool
		restoration string
		withRESTI   bool
	}{
		{"FTUP honouring RESTI, auto: RESTI", true, true, "", true},
		{"FTUP ignoring RESTI, choose: CHOOSE", true, false, RestorationChoose, false},
		{"no FTUP yet allocating, auto: CHOOSE", false, false, RestorationAuto, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newUPFDouble(t, c.ftup, c.resti)
			cfg := doubleConfig()
			cfg.UPFs[0].Restoration = c.restoration
			h := newDoubleHarness(t, cfg, d)
			h.amf.auto = true
			views := map[string]*ueView{}
			const restored, fresh = 3, 3
			for i := range restored + 2 {
				h.establishViewed(t, fmt.Sprintf("imsi-2089300000001%02d", i), views)
			}
			// The first two go before the restart: the sessions restored
			// hold TEIDs 3 to 5, and an allocator counting from 1 again
			// hands out 1, 2 and then 3.
			for i := range 2 {
				supi := fmt.Sprintf("imsi-2089300000001%02d", i)
				if err := h.smf.ReleaseSMContext(context.Background(), views[supi].ref, &sbi.SMContextRelease{}); err != nil {
					t.Fatal(err)
				}
				delete(views, supi)
			}
			h.settle(t)

			d.restart()
			waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == restored })
			waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })
			d.mu.Lock()
			restis := d.restis
			d.mu.Unlock()
			if c.withRESTI {
				h.amf.noTransfer(t)
				if st := h.smf.Stats(); st.RestoredSameTEID != restored || st.UplinksMoved != 0 || restis != restored {
					t.Errorf("stats %+v, %d RESTI at the UPF", st, restis)
				}
			} else {
				// The sessions whose new TEID differs from the old (at least
				// two: three sessions on TEIDs 1 to 3 that were on 3 to 5).
				st := h.smf.Stats()
				moved := st.UplinksMoved
				if moved < 2 || moved > restored || st.RestoredSameTEID+moved != restored || restis != 0 {
					t.Fatalf("%d uplinks moved, stats %+v, %d RESTI at the UPF", moved, st, restis)
				}
				for range moved {
					tr := h.amf.next(t)
					if tr.n1 != nil || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
						t.Fatalf("transfer %+v, want an N2-only PDU Session Resource Modify Request", tr)
					}
					m, err := ngap.DecodeModifyRequestTransfer(tr.n2)
					if err != nil {
						t.Fatal(err)
					}
					want := ngap.GTPTunnel{Addr: gnbN3, TEID: 0xA001} // the gNB's end, as the setup response gave it
					if len(m.ULTunnels) != 1 || m.ULTunnels[0].DL != want || m.ULTunnels[0].UL.Addr != upfN3 {
						t.Fatalf("%s: UL NG-U UP TNL Modify List %+v", tr.supi, m.ULTunnels)
					}
					views[tr.supi].ul = m.ULTunnels[0].UL.TEID // what the gNB does (TS 38.413 §8.2.3.2)
				}
				h.amf.noTransfer(t)
			}
			for i := range fresh {
				h.establishViewed(t, fmt.Sprintf("imsi-2089300000002%02d", i), views)
			}

			owner := map[uint32]string{}
			for supi, v := range views {
				if other, dup := owner[v.ul]; dup {
					t.Errorf("%s and %s both send on TEID %#x", supi, other, v.ul)
				}
				owner[v.ul] = supi
				if got, ok := d.uplink(v.ul); !ok || got != v.ip {
					t.Errorf("%s: uplink on TEID %#x reaches the session of %v (%v), want its own, %v", supi, v.ul, got, ok, v.ip)
				}
			}
			for supi, v := range views {
				start := time.Now()
				if err := h.smf.ReleaseSMContext(context.Background(), v.ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > 200*time.Millisecond {
					t.Errorf("releasing %s took %v", supi, took)
				}
			}
			h.empty(t)
			d.mu.Lock()
			ok, lost := d.deletesOK, d.deletesLost
			d.mu.Unlock()
			if st := h.smf.Stats(); ok != restored+fresh+2 || lost != 0 || st.N4Failures != 0 {
				t.Errorf("%d deletions done and %d failed at the UPF, SMF %+v", ok, lost, st)
			}
		})
	}
}

// A UPF that never answers a deletion (it failed it, or it is gone)
// costs each deletion one PFCP deadline beside the UE's executor:
// releasing a session does not wait for it, and the failures are counted.
// The UE addresses are held back, since the UPF may still route them to
// the sessions, until the UPF restarts and so forgets them.
func TestUnansweredDeletionDoesNotStall(t *testing.T) {
	cfg := doubleConfig()
	cfg.Timers.PFCPTimeout = time.Second
	d := newUPFDouble(t, true, true)
	h := newDoubleHarness(t, cfg, d)
	h.amf.auto = true
	views := map[string]*ueView{}
	const n = 5
	for i := range n {
		h.establishViewed(t, fmt.Sprintf("imsi-2089300000001%02d", i), views)
	}
	d.mu.Lock()
	d.dropDeletes = true
	d.mu.Unlock()
	start := time.Now()
	for supi, v := range views {
		if err := h.smf.ReleaseSMContext(context.Background(), v.ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > cfg.Timers.PFCPTimeout/2 {
			t.Fatalf("releases up to %s took %v, with a PFCP deadline of %v", supi, took, cfg.Timers.PFCPTimeout)
		}
	}
	if st := h.smf.Stats(); st.N4Deleting != n || st.N4Sessions != 0 || st.IPs["internet"] != n {
		t.Errorf("while the deletions wait: %+v", st)
	}
	h.settle(t)
	if took := time.Since(start); took > cfg.Timers.PFCPTimeout+500*time.Millisecond {
		t.Errorf("the deletions ended %v after the releases, with a PFCP deadline of %v", took, cfg.Timers.PFCPTimeout)
	}
	if st := h.smf.Stats(); st.N4Failures != n || st.IPs["internet"] != n || st.QuarantinedIPs != n {
		t.Errorf("after the deadlines, %d N4 failures counted (want %d), %d addresses allocated and %d held back (want %d)",
			st.N4Failures, n, st.IPs["internet"], st.QuarantinedIPs, n)
	}
	d.restart()
	waitFor(t, "the addresses to come back", func() bool { return h.smf.Stats().IPs["internet"] == 0 })
	h.empty(t)
	if st := h.smf.Stats(); st.QuarantinedIPs != 0 {
		t.Errorf("%d addresses still held back after the UPF restarted", st.QuarantinedIPs)
	}
}
