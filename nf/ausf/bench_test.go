package ausf

import (
	"context"
	"testing"

	"github.com/free5gc/openapi/models"
)

// BenchmarkAuthenticate is one 5G-AKA round (Authenticate + Confirm5gAka)
// through the real UDM, UDR and store, as the AMF drives it for a null-scheme
// SUCI. The wrong RES* is deliberate: confirmation costs the same either way.
func BenchmarkAuthenticate(b *testing.B) {
	t := &testing.T{}
	c := newCore(t)
	ctx := context.Background()
	suci := "suci-0-208-93-0000-0-0-0000000001"
	wrong := "00000000000000000000000000000000"
	b.ReportAllocs()
	for b.Loop() {
		id, _, err := c.ausf.Authenticate(ctx, &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: suci, ServingNetworkName: c.snn})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.ausf.Confirm5gAka(ctx, id, &models.Ausf_UEAU_ConfirmationData{ResStar: &wrong}); err != nil {
			b.Fatal(err)
		}
	}
}
