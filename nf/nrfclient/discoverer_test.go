package nrfclient_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/sbi"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func register(t *testing.T, m sbi.NFManagement, typ sbi.NFType, id, apiRoot string, services ...models.Nrf_NFMgmt_ServiceName) {
	t.Helper()
	p, err := nrfclient.ProfileFor(typ, id, apiRoot, services...)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Register(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func instanceIDs(r *models.Nrf_NFDisc_SearchResult) []string {
	var out []string
	for _, p := range r.NfInstances {
		out = append(out, p.NfInstanceId)
	}
	return out
}

func newDiscoverer(t *testing.T, f sbi.NFDiscovery, clk *clock) *nrfclient.Discoverer {
	t.Helper()
	d, err := nrfclient.NewDiscoverer(nrfclient.DiscovererConfig{NRF: f, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDiscovererCachesForValidityPeriod(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, nrf.Config{ValidityPeriod: time.Minute})
	register(t, f, sbi.NFTypeUDM, "udm-1", "http://10.0.0.2:8000", models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
	clk := &clock{t: time.Now()}
	d := newDiscoverer(t, f, clk)
	q := sbi.DiscoveryQuery{ServiceNames: []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NUDM_SDM, models.Nrf_NFMgmt_ServiceName_NUDM_UECM},
		SNSSAIs: []identity.SNSSAI{{SST: 1, SD: 1}, {SST: 2, SD: identity.NoSD}}}
	for range 3 {
		r, err := d.Discover(ctx, sbi.NFTypeUDM, q)
		if err != nil || !slices.Equal(instanceIDs(r), []string{"udm-1"}) {
			t.Fatalf("Discover = %v, %v", instanceIDs(r), err)
		}
		r.NfInstances[0] = models.Nrf_NFDisc_NFProfile{} // callers may reorder their copy
	}
	// The same query with its lists in another order is the same entry.
	q2 := q
	q2.ServiceNames = []models.Nrf_NFMgmt_ServiceName{q.ServiceNames[1], q.ServiceNames[0]}
	q2.SNSSAIs = []identity.SNSSAI{q.SNSSAIs[1], q.SNSSAIs[0]}
	if _, err := d.Discover(ctx, sbi.NFTypeUDM, q2); err != nil {
		t.Fatal(err)
	}
	if n := f.discovers.Load(); n != 1 {
		t.Fatalf("%d NRF requests for one fresh query, want 1", n)
	}
	register(t, f, sbi.NFTypeUDM, "udm-2", "http://10.0.0.3:8000", models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
	clk.Advance(time.Minute)
	r, err := d.Discover(ctx, sbi.NFTypeUDM, q)
	if err != nil || !slices.Equal(instanceIDs(r), []string{"udm-1", "udm-2"}) || f.discovers.Load() != 2 {
		t.Fatalf("after validityPeriod: %v, %v, %d requests", instanceIDs(r), err, f.discovers.Load())
	}
}

func TestDiscovererServesStaleWhenNRFDown(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, nrf.Config{ValidityPeriod: time.Second})
	register(t, f, sbi.NFTypeAUSF, "ausf-1", "http://10.0.0.4:8000", models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH)
	clk := &clock{t: time.Now()}
	d := newDiscoverer(t, f, clk)
	if _, err := d.Discover(ctx, sbi.NFTypeAUSF, sbi.DiscoveryQuery{}); err != nil {
		t.Fatal(err)
	}
	f.setDown(true)
	clk.Advance(time.Hour)
	for range 2 {
		r, err := d.Discover(ctx, sbi.NFTypeAUSF, sbi.DiscoveryQuery{})
		if err != nil || !slices.Equal(instanceIDs(r), []string{"ausf-1"}) {
			t.Fatalf("NRF down: %v, %v; want the cached AUSF", instanceIDs(r), err)
		}
	}
	if f.discovers.Load() != 3 {
		t.Fatalf("%d requests: a stale entry must still ask the NRF first", f.discovers.Load())
	}
	// A query never answered has nothing to fall back on.
	if _, err := d.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{}); !errors.Is(err, errUnreachable) {
		t.Fatalf("uncached query with the NRF down: %v", err)
	}
	// An answer of the NRF is not masked by the cache.
	f.setDown(false)
	if _, err := d.Discover(ctx, "", sbi.DiscoveryQuery{}); sbi.CauseOf(err) != sbi.CauseMandatoryIEMissing {
		t.Fatalf("400 from the NRF: %v", err)
	}
}

func TestDiscovererInvalidateAndNotifications(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, nrf.Config{ValidityPeriod: time.Hour, APIRoot: "http://nrf:8000"})
	register(t, f, sbi.NFTypeSMF, "smf-1", "http://10.0.0.5:8000", models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	register(t, f, sbi.NFTypeSMF, "smf-2", "http://10.0.0.6:8000", models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	clk := &clock{t: time.Now()}
	d := newDiscoverer(t, f, clk)
	discover := func() []string {
		t.Helper()
		r, err := d.Discover(ctx, sbi.NFTypeSMF, sbi.DiscoveryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return instanceIDs(r)
	}
	discover()

	// A failed call: the instance leaves the cache, the NRF is not asked.
	d.Invalidate("smf-1")
	if got := discover(); !slices.Equal(got, []string{"smf-2"}) || f.discovers.Load() != 1 {
		t.Fatalf("after Invalidate: %v (%d requests)", got, f.discovers.Load())
	}
	d.Invalidate("smf-2") // empty: the next Discover asks again
	if got := discover(); len(got) != 2 || f.discovers.Load() != 2 {
		t.Fatalf("after emptying: %v (%d requests)", got, f.discovers.Load())
	}

	// Subscribed to the real NRF, the discoverer follows the registry.
	f.nrf.SetNotifier(d)
	if _, err := f.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "http://amf/nrf-notify",
		SubscrCond: &models.Nrf_NFMgmt_SubscrCond{NfType: string(sbi.NFTypeSMF)}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(ctx, "smf-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "NF_DEREGISTERED removes smf-1", func() bool { return slices.Equal(discover(), []string{"smf-2"}) })
	requests := f.discovers.Load()
	register(t, f, sbi.NFTypeSMF, "smf-3", "http://10.0.0.7:8000", models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	eventually(t, "NF_REGISTERED brings smf-3", func() bool { return slices.Equal(discover(), []string{"smf-2", "smf-3"}) })
	if f.discovers.Load() <= requests {
		t.Fatal("a new SMF was found without asking the NRF")
	}

	if err := d.NFStatusNotify(ctx, "u", &models.Nrf_NFMgmt_NotificationData{Event: "NF_EXPLODED", NfInstanceUri: "http://nrf:8000/nnrf-nfm/v1/nf-instances/x"}); err == nil {
		t.Fatal("unknown event accepted")
	}
	if id := nrfclient.InstanceIDOf(&models.Nrf_NFMgmt_NotificationData{NfInstanceUri: "http://nrf:8000/nnrf-nfm/v1/nf-instances/smf-9"}); id != "smf-9" {
		t.Fatalf("InstanceIDOf = %q", id)
	}
}

func TestDiscovererBoundsItsCache(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, nrf.Config{})
	register(t, f, sbi.NFTypeUDM, "udm-1", "http://10.0.0.2:8000", models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
	clk := &clock{t: time.Now()}
	d, err := nrfclient.NewDiscoverer(nrfclient.DiscovererConfig{NRF: f, Now: clk.Now, MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, supi := range []string{"imsi-1", "imsi-2", "imsi-3"} {
		clk.Advance(time.Millisecond)
		if _, err := d.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{SUPI: supi}); err != nil {
			t.Fatal(err)
		}
	}
	// imsi-1, fetched first, was evicted; imsi-3 is still cached.
	d.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{SUPI: "imsi-3"})
	if f.discovers.Load() != 3 {
		t.Fatalf("%d requests", f.discovers.Load())
	}
	d.Discover(ctx, sbi.NFTypeUDM, sbi.DiscoveryQuery{SUPI: "imsi-1"})
	if f.discovers.Load() != 4 {
		t.Fatalf("%d requests: imsi-1 was not evicted", f.discovers.Load())
	}
}
