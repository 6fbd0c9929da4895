package nrfclient_test

import (
	"context"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/sbi"
)

// A profile built by ProfileFor, registered and discovered, gives back
// the apiRoot it was built from.
func TestProfileForRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, nrf.Config{})
	for _, root := range []string{
		"http://10.0.0.1:8000",
		"https://udm.tern.example:443/tern",
		"http://[2001:db8::1]:29503",
		"http://10.0.0.1",
	} {
		p, err := nrfclient.ProfileFor(sbi.NFTypeUDM, "udm-1", root, models.Nrf_NFMgmt_ServiceName_NUDM_SDM, models.Nrf_NFMgmt_ServiceName_NUDM_UECM)
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		if len(p.NfServices) != 2 || p.NfServices[0].Versions[0].ApiVersionInUri != "v2" || p.NfServices[1].Versions[0].ApiVersionInUri != "v1" {
			t.Fatalf("%s: services %+v", root, p.NfServices)
		}
		if _, _, err := f.Register(ctx, p); err != nil {
			t.Fatal(err)
		}
		r, err := f.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{ServiceNames: []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NUDM_UECM}})
		if err != nil || len(r.NfInstances) != 1 {
			t.Fatalf("%s: discover %v", root, err)
		}
		got, err := nrfclient.APIRoot(&r.NfInstances[0], models.Nrf_NFMgmt_ServiceName_NUDM_UECM)
		if err != nil || got != root {
			t.Errorf("APIRoot = %q, %v; want %q", got, err, root)
		}
		if _, err := nrfclient.APIRoot(&r.NfInstances[0], models.Nrf_NFMgmt_ServiceName_NUDM_UEAU); err == nil {
			t.Errorf("%s: APIRoot of a service not offered", root)
		}
	}
	for _, bad := range []string{"10.0.0.1:8000", "ftp://10.0.0.1", "http://", "http://10.0.0.1:0", "http://u@10.0.0.1", "http://10.0.0.1?x=1"} {
		if _, err := nrfclient.ProfileFor(sbi.NFTypeUDM, "udm-1", bad); err == nil {
			t.Errorf("apiRoot %q accepted", bad)
		}
	}
	if _, err := nrfclient.ProfileFor("", "udm-1", "http://10.0.0.1"); err == nil {
		t.Error("no NF type accepted")
	}
}

// A profile with addresses only at the NF level still yields an apiRoot.
func TestAPIRootFallsBackToTheProfile(t *testing.T) {
	p := &models.Nrf_NFDisc_NFProfile{NfInstanceId: "pcf-1", Ipv4Addresses: []string{"10.0.0.8"},
		NfServices: []models.Nrf_NFDisc_NFService{{ServiceName: models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL, ApiPrefix: "pcf"}}}
	if got, err := nrfclient.APIRoot(p, models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL); err != nil || got != "http://10.0.0.8/pcf" {
		t.Fatalf("APIRoot = %q, %v", got, err)
	}
	p.NfServices[0].NfServiceStatus = models.Nrf_NFMgmt_NFServiceStatus_SUSPENDED
	if _, err := nrfclient.APIRoot(p, models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL); err == nil {
		t.Fatal("a suspended service has an apiRoot")
	}
}

func TestTokenVerifierNeedsKeyAndAudience(t *testing.T) {
	if err := (&nrfclient.TokenVerifier{NFType: sbi.NFTypeUDM}).Verify("x", "nudm-sdm"); err == nil {
		t.Fatal("verified without a key")
	}
	var nilVerifier *nrfclient.TokenVerifier
	if err := nilVerifier.Verify("x", ""); err == nil {
		t.Fatal("nil verifier verified")
	}
}
