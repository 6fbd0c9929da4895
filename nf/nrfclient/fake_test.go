package nrfclient_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/sbi"
)

// errUnreachable is what a binding returns when it cannot reach the NRF.
var errUnreachable = errors.New("dial tcp 10.0.0.9:8000: connect: connection refused")

// fakeNRF puts a real, replaceable NRF behind the sbi interfaces: down
// makes every call fail as an unreachable NRF would, restart swaps in an
// empty NRF, and the counters tell what the client sent.
type fakeNRF struct {
	mu   sync.Mutex
	nrf  *nrf.NRF
	down bool

	registers, heartbeats, discovers atomic.Int32
}

func newFake(t *testing.T, cfg nrf.Config) *fakeNRF {
	t.Helper()
	f := &fakeNRF{}
	f.restart(t, cfg)
	return f
}

func (f *fakeNRF) restart(t *testing.T, cfg nrf.Config) *nrf.NRF {
	t.Helper()
	n, err := nrf.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	f.mu.Lock()
	f.nrf = n
	f.mu.Unlock()
	return n
}

func (f *fakeNRF) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeNRF) get() (*nrf.NRF, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errUnreachable
	}
	return f.nrf, nil
}

func (f *fakeNRF) Register(ctx context.Context, p *models.Nrf_NFMgmt_NFProfile) (*models.Nrf_NFMgmt_NFProfile, bool, error) {
	f.registers.Add(1)
	n, err := f.get()
	if err != nil {
		return nil, false, err
	}
	return n.Register(ctx, p)
}

func (f *fakeNRF) Update(ctx context.Context, id string, patch []models.PatchItem) (*models.Nrf_NFMgmt_NFProfile, error) {
	f.heartbeats.Add(1)
	n, err := f.get()
	if err != nil {
		return nil, err
	}
	return n.Update(ctx, id, patch)
}

func (f *fakeNRF) Deregister(ctx context.Context, id string) error {
	n, err := f.get()
	if err != nil {
		return err
	}
	return n.Deregister(ctx, id)
}

func (f *fakeNRF) GetProfile(ctx context.Context, id string) (*models.Nrf_NFMgmt_NFProfile, error) {
	n, err := f.get()
	if err != nil {
		return nil, err
	}
	return n.GetProfile(ctx, id)
}

func (f *fakeNRF) Subscribe(ctx context.Context, s *models.Nrf_NFMgmt_SubscriptionData) (*models.Nrf_NFMgmt_SubscriptionData, error) {
	n, err := f.get()
	if err != nil {
		return nil, err
	}
	return n.Subscribe(ctx, s)
}

func (f *fakeNRF) Unsubscribe(ctx context.Context, id string) error {
	n, err := f.get()
	if err != nil {
		return err
	}
	return n.Unsubscribe(ctx, id)
}

func (f *fakeNRF) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	f.discovers.Add(1)
	n, err := f.get()
	if err != nil {
		return nil, err
	}
	return n.Discover(ctx, target, q)
}

var (
	_ sbi.NFManagement = (*fakeNRF)(nil)
	_ sbi.NFDiscovery  = (*fakeNRF)(nil)
)

// eventually fails the test unless cond holds within 3s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
