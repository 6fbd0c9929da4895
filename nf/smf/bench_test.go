package smf

import (
	"context"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/sbi"
)

// The SMF's procedures on the fakes of fakes_test.go (a direct UPF, the
// real PCF, an AMF that answers at once): what one costs the SMF and its
// fakes, for comparing a change of the SMF's per-step work (the records'
// Recorder off, record.go). Rerun with
//
//	go test ./nf/smf -run '^$' -bench . -benchmem -count 5

// BenchmarkEstablishRelease: a PDU session established (CreateSMContext,
// PFCP establishment, Accept, setup response, PFCP modification) and
// released by the AMF (ReleaseSMContext, PFCP deletion).
func BenchmarkEstablishRelease(b *testing.B) {
	h := newHarness(b, testConfig(), pcf.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ref, _, _ := h.establish(b, testSUPI, 1, "internet")
		if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleActive: an established session's user plane released (AN
// release: PFCP modification to buffer) and activated again (service
// request: setup request, setup response, PFCP modification to forward).
func BenchmarkIdleActive(b *testing.B) {
	h := newHarness(b, testConfig(), pcf.Config{})
	ctx := context.Background()
	ref, _, _ := h.establish(b, testSUPI, 1, "internet")
	idle := &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}
	activate := &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}}
	setup := setupResponse(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		for _, req := range []*sbi.SMContextUpdate{idle, activate, setup} {
			if _, err := h.smf.UpdateSMContext(ctx, ref, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}
