package nrf

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// fakeClock is the NRF's injected clock: tests move time by hand and call
// expire themselves, so validity tests take no real time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// newNRF returns an NRF on a fake clock, stopped at the end of the test.
func newNRF(t *testing.T, cfg Config, opts ...Option) (*NRF, *fakeClock) {
	t.Helper()
	clk := newClock()
	n, err := New(cfg, nil, append([]Option{WithClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n, clk
}

// heartbeat sends the NF heart-beat (TS 29.510 §5.2.2.3.2) of an instance
// registered REGISTERED.
func heartbeat(n *NRF, id string) (*models.Nrf_NFMgmt_NFProfile, error) {
	return n.Update(context.Background(), id, sbi.HeartbeatPatch(""))
}

func mustRegister(t *testing.T, n *NRF, p *models.Nrf_NFMgmt_NFProfile) *models.Nrf_NFMgmt_NFProfile {
	t.Helper()
	out, _, err := n.Register(context.Background(), p)
	if err != nil {
		t.Fatalf("register %s: %v", p.NfInstanceId, err)
	}
	return out
}

// recorder is an sbi.NFStatusNotifier that keeps what it receives, per
// notification URI, as "EVENT instance [status]".
type recorder struct {
	mu  sync.Mutex
	got map[string][]string
}

func newRecorder() *recorder { return &recorder{got: map[string][]string{}} }

func (r *recorder) NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error {
	s := fmt.Sprintf("%s %s", n.Event, n.NfInstanceUri[len("/nnrf-nfm/v1/nf-instances/"):])
	if n.NfProfile != nil {
		s += " " + string(n.NfProfile.NfStatus)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[uri] = append(r.got[uri], s)
	return nil
}

func (r *recorder) events(uri string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got[uri]...)
}

// wait returns the notifications of uri once there are want of them,
// after a short settle that lets unexpected extra ones show up.
func (r *recorder) wait(t *testing.T, uri string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for len(r.events(uri)) < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	return r.events(uri)
}
