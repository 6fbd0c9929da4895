package smf

import (
	"context"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/sbi"
)

// N4 requests still in flight when a UPF restarts (the PFCP endpoint
// would retransmit them, TS 29.244 §6.4) end with the UPF's life, before
// the SMF associates again and restores: a restarted UPF that counts its
// SEIDs from the start again gives a restored session the SEID of the
// deleted or modified one, and the late request would delete or modify
// that other UE's session.
func TestRestartEndsRequestsInFlight(t *testing.T) {
	const a, b = "imsi-208930000000001", "imsi-208930000000002"
	for _, c := range []struct {
		name string
		hold func(f *fakeUPF) *bool
		// send makes a's request that the UPF holds.
		send func(t *testing.T, h *harness, refA string) <-chan error
	}{
		{"deletion", func(f *fakeUPF) *bool { return &f.holdDeletes }, func(t *testing.T, h *harness, refA string) <-chan error {
			done := make(chan error, 1)
			done <- h.smf.ReleaseSMContext(context.Background(), refA, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}})
			return done
		}},
		{"modification", func(f *fakeUPF) *bool { return &f.holdMods }, func(t *testing.T, h *harness, refA string) <-chan error {
			done := make(chan error, 1)
			go func() {
				// AN release: the UPF is told to buffer a's downlink.
				_, err := h.smf.UpdateSMContext(context.Background(), refA, &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{
					UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}})
				done <- err
			}()
			return done
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
			h.upf.reuseSEIDs = true
			refA, _, _ := h.establish(t, a, 1, "internet")
			h.establish(t, b, 1, "internet")
			cpSEID := func(supi string) uint64 {
				c, err := callUE(context.Background(), h.smf, supi, func(u *ueState) (*smContext, error) { return u.sessions[1], nil })
				if err != nil || c == nil {
					t.Fatalf("%s's context: %v", supi, err)
				}
				return c.cpSEID
			}
			seidB := cpSEID(b)
			h.upf.mu.Lock()
			h.upf.mods = nil // the establishments'
			*c.hold(h.upf) = true
			h.upf.gate = make(chan struct{})
			h.upf.mu.Unlock()
			done := c.send(t, h, refA)
			waitFor(t, "a's request at the UPF", func() bool { return h.upf.holds() == 1 })

			h.upf.restart()
			// b's session is restored first or second; either way one of
			// the restored sessions has a's old SEID.
			waitFor(t, "b's session restored", func() bool { return h.upf.establishmentsOf(seidB) == 1 })
			close(h.upf.gate) // what is still held goes to the UPF now
			<-done
			h.settle(t)
			waitFor(t, "UPF up", func() bool { return h.smf.UPFStates()["upf1"] == "up" })

			h.upf.mu.Lock()
			defer h.upf.mu.Unlock()
			restoredB := false
			for _, r := range h.upf.sessions {
				restoredB = restoredB || r.CPFSEID.SEID == seidB
			}
			if !restoredB || len(h.upf.deletes) != 0 || len(h.upf.mods) != 0 {
				t.Errorf("after the restart the UPF holds b's session: %v; deletions %#x, modifications %d reached it",
					restoredB, h.upf.deletes, len(h.upf.mods))
			}
		})
	}
}
