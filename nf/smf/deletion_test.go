package smf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// A release of many sessions at once sends at most deleteWindow PFCP
// deletions to the UPF at a time; the others wait their turn, and all
// end.
func TestDeletionsBounded(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	const n = deleteWindow + 36
	refs := make([]string, n)
	for i := range n {
		refs[i], _, _ = h.establish(t, fmt.Sprintf("imsi-208930000001%03d", i), 1, "internet")
	}
	h.upf.mu.Lock()
	h.upf.holdDeletes = true
	h.upf.gate = make(chan struct{})
	h.upf.mu.Unlock()
	for _, ref := range refs {
		if err := h.smf.ReleaseSMContext(context.Background(), ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a window of deletions at the UPF", func() bool { return h.upf.holds() == deleteWindow })
	time.Sleep(50 * time.Millisecond)
	if held, st := h.upf.holds(), h.smf.Stats(); held != deleteWindow || st.N4Deleting != n {
		t.Errorf("%d deletions at the UPF at once (want %d), %d pending at the SMF (want %d)", held, deleteWindow, st.N4Deleting, n)
	}
	close(h.upf.gate)
	h.empty(t)
	h.upf.mu.Lock()
	most := h.upf.maxDeleting
	h.upf.mu.Unlock()
	if most > deleteWindow {
		t.Errorf("%d deletions at the UPF at once, want at most %d", most, deleteWindow)
	}
}

// A session's UE address goes back to its pool once the UPF has deleted
// the session or answered that it has none; while the UPF may still route
// it to the deleted session (it refused the deletion), the address is held
// back, until the UPF restarts.
func TestRefusedDeletionQuarantinesAddress(t *testing.T) {
	h := newHarness(t, fastSupervision(testConfig()), pcf.Config{})
	ctx := context.Background()
	release := func(supi string, cause pfcp.Cause) {
		t.Helper()
		ref, _, _ := h.establish(t, supi, 1, "internet")
		h.upf.mu.Lock()
		h.upf.deleteCause = cause
		h.upf.mu.Unlock()
		if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{Data: &models.Smf_PDUSess_SmContextReleaseData{}}); err != nil {
			t.Fatal(err)
		}
		h.settle(t)
	}
	release("imsi-208930000000001", pfcp.CauseSessionContextNotFound)
	if st := h.smf.Stats(); st.IPs["internet"] != 0 || st.QuarantinedIPs != 0 {
		t.Errorf("after a deletion the UPF had no session for: %d addresses allocated, %d held back", st.IPs["internet"], st.QuarantinedIPs)
	}
	release("imsi-208930000000002", pfcp.CauseRequestRejected)
	if st := h.smf.Stats(); st.IPs["internet"] != 1 || st.QuarantinedIPs != 1 {
		t.Errorf("after a refused deletion: %d addresses allocated, %d held back; want both 1", st.IPs["internet"], st.QuarantinedIPs)
	}
	h.upf.mu.Lock()
	h.upf.deleteCause = 0
	h.upf.mu.Unlock()
	h.upf.restart()
	waitFor(t, "the address back", func() bool { return h.smf.Stats().IPs["internet"] == 0 })
	if st := h.smf.Stats(); st.QuarantinedIPs != 0 {
		t.Errorf("%d addresses held back after the UPF restarted", st.QuarantinedIPs)
	}
}
