package wire_test

import (
	"sync"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// TestAppendDoesNotAllocate: encoding into a buffer with room walks the
// plan without allocating, maps and times included. (Only a registered
// type of one non-pointer word in an interface is copied.)
func TestAppendDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	c := newCodec(t, wire.SBITypes()...)
	vals := map[string]any{}
	for _, s := range wiretest.Samples() {
		vals[s.Name] = s.Value
	}
	var full models.Smf_PDUSess_SmContextCreateData // maps, times, everything
	wiretest.Fill(&full)
	vals["filled SmContextCreateData"] = &full
	var sm []models.Udm_SDM_SessionManagementSubscriptionData // maps of structs
	wiretest.Fill(&sm)
	vals["filled []SessionManagementSubscriptionData"] = &sm
	var ctx models.Ausf_UEAU_UEAuthenticationCtx
	fillSBI(&ctx)
	vals["UEAuthenticationCtx with Av5gAka"] = &ctx

	buf := make([]byte, 0, 1<<20)
	for name, v := range vals {
		var err error
		allocs := testing.AllocsPerRun(200, func() {
			buf, err = c.Append(buf[:0], v)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Append", name, allocs)
		}
	}
}

// TestConcurrentUse shares one Codec (plan cache, map scratch pools)
// between goroutines; run it with -race.
func TestConcurrentUse(t *testing.T) {
	c := newCodec(t, wire.SBITypes()...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var buf []byte
			for i := range 50 {
				v := sbiValues()[(g+i)%len(sbiValues())]
				fillSBI(v)
				var err error
				if buf, err = c.Append(buf[:0], v); err != nil {
					t.Error(err)
					return
				}
				if err := c.Decode(buf, newOf(v)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
