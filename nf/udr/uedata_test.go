package udr

import (
	"context"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi/jsonpatch"
	"github.com/tern5g/tern/store"
)

// TestModifyAmfContextOutsideLock: a PATCH of amf-3gpp-access is applied
// without the lock every UE's context shares, and a registration written
// while it is applied is not lost: the patch applies again on top of it.
func TestModifyAmfContextOutsideLock(t *testing.T) {
	u, _ := newUDR(t, Config{})
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	reg := func(amf string) *models.Udr_DR_Amf3GppAccessRegistration {
		return &models.Udr_DR_Amf3GppAccessRegistration{AmfInstanceId: amf, DeregCallbackUri: "http://amf.example/dereg",
			Guami: &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "208", Mnc: "93"}, AmfId: "cafe00"}, RatType: models.RatType_NR}
	}
	const first, second = "6f1c0b0e-0000-4000-8000-000000000001", "6f1c0b0e-0000-4000-8000-000000000002"
	if _, err := u.CreateAmfContext3gpp(ctx, supi, reg(first)); err != nil {
		t.Fatal(err)
	}
	calls := 0
	u.ueData.apply = func(doc []byte, patch []models.PatchItem, o jsonpatch.Options) ([]byte, error) {
		calls++
		if !u.ueData.mu.TryLock() {
			t.Error("the patch is applied with the UDR's lock held")
			return jsonpatch.ApplyWith(doc, patch, o)
		}
		u.ueData.mu.Unlock()
		if calls == 1 {
			// Another AMF registers while the patch is applied.
			if _, err := u.CreateAmfContext3gpp(ctx, supi, reg(second)); err != nil {
				t.Error(err)
			}
		}
		return jsonpatch.ApplyWith(doc, patch, o)
	}
	patch := []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/pei", Value: "imeisv-4370816125816151"}}
	if err := u.ModifyAmfContext3gpp(ctx, supi, patch); err != nil {
		t.Fatal(err)
	}
	got, err := u.QueryAmfContext3gpp(ctx, supi)
	if err != nil {
		t.Fatal(err)
	}
	if got.AmfInstanceId != second || got.Pei != "imeisv-4370816125816151" || calls != 2 {
		t.Errorf("amfInstanceId %s, pei %q after %d applications; want %s, the patched pei, 2", got.AmfInstanceId, got.Pei, calls, second)
	}
}
