package nrf

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

func profile(id string, t sbi.NFType, services ...models.Nrf_NFMgmt_ServiceName) *models.Nrf_NFMgmt_NFProfile {
	p := &models.Nrf_NFMgmt_NFProfile{NfInstanceId: id, NfType: t, Ipv4Addresses: []string{"127.0.0.1"}}
	for _, s := range services {
		p.NfServices = append(p.NfServices, models.Nrf_NFMgmt_NFService{ServiceInstanceId: id + string(s), ServiceName: s})
	}
	return p
}

func ids(r *models.Nrf_NFDisc_SearchResult) []string {
	var out []string
	for _, p := range r.NfInstances {
		out = append(out, p.NfInstanceId)
	}
	return out
}

func TestRegisterDiscoverDeregister(t *testing.T) {
	ctx := context.Background()
	n, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := profile("udm-2", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_UEAU)
	if _, _, err := n.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Ipv4Addresses[0] = "10.0.0.1" // the registry keeps its own copy
	if _, _, err := n.Register(ctx, profile("udm-1", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Register(ctx, profile("ausf-1", sbi.NFTypeAUSF)); err != nil {
		t.Fatal(err)
	}

	r, err := n.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r); len(got) != 2 || got[0] != "udm-1" || got[1] != "udm-2" {
		t.Fatalf("Discover(UDM) = %v", got)
	}
	if r.NfInstances[1].Ipv4Addresses[0] != "127.0.0.1" || r.NfInstances[1].NfStatus != models.Nrf_NFMgmt_NFStatus_REGISTERED {
		t.Fatalf("stored profile = %+v", r.NfInstances[1])
	}
	if r.ValidityPeriod != int32(DefaultValidityPeriod.Seconds()) {
		t.Fatalf("validityPeriod = %d", r.ValidityPeriod)
	}
	r, _ = n.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{ServiceNames: []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NUDM_UEAU}})
	if got := ids(r); len(got) != 1 || got[0] != "udm-2" {
		t.Fatalf("Discover(UDM, nudm-ueau) = %v", got)
	}

	if err := n.Deregister(ctx, "udm-2"); err != nil {
		t.Fatal(err)
	}
	r, _ = n.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{})
	if got := ids(r); len(got) != 1 || got[0] != "udm-1" {
		t.Fatalf("after deregister: %v", got)
	}
	if err := n.Deregister(ctx, "udm-2"); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("second deregister: %v", err)
	}
	if r, _ := n.Discover(ctx, sbi.NFTypeSMF, sbi.DiscoveryQuery{}); len(r.NfInstances) != 0 {
		t.Fatalf("Discover(SMF) = %v", ids(r))
	}
}

func TestDiscoverFilters(t *testing.T) {
	ctx := context.Background()
	n, _ := New(Config{}, nil)
	slice := profile("smf-slice", sbi.NFTypeSMF)
	slice.SNssais = []models.ExtSnssai{{Sst: 1, Sd: "0A0B0C"}}
	slice.PlmnList = []models.PlmnId{{Mcc: "208", Mnc: "93"}}
	slice.AllowedNfTypes = []sbi.NFType{sbi.NFTypeAMF}
	unrestricted := profile("smf-any", sbi.NFTypeSMF)
	suspended := profile("smf-suspended", sbi.NFTypeSMF)
	suspended.NfStatus = models.Nrf_NFMgmt_NFStatus_SUSPENDED
	for _, p := range []*models.Nrf_NFMgmt_NFProfile{slice, unrestricted, suspended} {
		if _, _, err := n.Register(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	other := identity.PLMN{MCC: "001", MNC: "01"}
	home := identity.PLMN{MCC: "208", MNC: "93"}
	for _, c := range []struct {
		name string
		q    sbi.DiscoveryQuery
		want int
	}{
		{"all", sbi.DiscoveryQuery{}, 2},
		{"matching slice", sbi.DiscoveryQuery{SNSSAIs: []identity.SNSSAI{{SST: 1, SD: 0x0a0b0c}}}, 2},
		{"other slice", sbi.DiscoveryQuery{SNSSAIs: []identity.SNSSAI{{SST: 1, SD: identity.NoSD}}}, 1},
		{"home plmn", sbi.DiscoveryQuery{PLMN: &home}, 2},
		{"other plmn", sbi.DiscoveryQuery{PLMN: &other}, 1},
		{"amf requester", sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF}, 2},
		{"pcf requester", sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypePCF}, 1},
	} {
		r, err := n.Discover(ctx, sbi.NFTypeSMF, c.q)
		if err != nil || len(r.NfInstances) != c.want {
			t.Errorf("%s: %v, %v; want %d instances", c.name, ids(r), err, c.want)
		}
	}
}

func TestRegisterValidation(t *testing.T) {
	n, _ := New(Config{}, nil)
	if _, _, err := n.Register(context.Background(), &models.Nrf_NFMgmt_NFProfile{NfType: sbi.NFTypeAMF}); !errors.Is(err, sbi.ErrMandatoryIEMissing) {
		t.Fatalf("no instance id: %v", err)
	}
	if _, _, err := n.Register(context.Background(), &models.Nrf_NFMgmt_NFProfile{NfInstanceId: "x"}); !errors.Is(err, sbi.ErrMandatoryIEMissing) {
		t.Fatalf("no type: %v", err)
	}
	if err := (&Config{ValidityPeriod: -1}).Validate(); err == nil {
		t.Fatal("negative validityPeriod accepted")
	}
}

// Discover runs concurrently with registrations and always sees a
// consistent snapshot (run with -race).
func TestConcurrentDiscover(t *testing.T) {
	ctx := context.Background()
	n, _ := New(Config{}, nil)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				r, err := n.Discover(ctx, sbi.NFTypeAMF, sbi.DiscoveryQuery{})
				if err != nil || int(r.NumNfInstComplete) != len(r.NfInstances) {
					t.Errorf("Discover: %v", err)
					return
				}
			}
		}()
	}
	for i := 0; i < 50; i++ {
		id := string(rune('a' + i%26))
		if _, _, err := n.Register(ctx, profile(id, sbi.NFTypeAMF)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	r, _ := n.Discover(ctx, sbi.NFTypeAMF, sbi.DiscoveryQuery{})
	if len(r.NfInstances) != 26 {
		t.Fatalf("%d AMFs, want 26", len(r.NfInstances))
	}
}
