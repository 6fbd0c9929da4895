package shm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestNoLostWakeups mixes slow and quick calls from many goroutines on two
// clients, beside one long call per client that keeps its channel's leader
// busy, so that requests go through standbys that come and go. CheckInterval is long and the contexts have no deadline, so every
// sleep on either side lasts seconds unless a wake reaches it: a lost wake-up
// shows as a call far slower than its handler.
func TestNoLostWakeups(t *testing.T) {
	cfg := testConfig(t)
	cfg.CheckInterval = 3 * time.Second
	cfg.RingSlots = 4 // full rings too
	listen(t, cfg, "smf", echoHandler)
	clients := []*Client{dial(t, cfg, "smf"), dial(t, cfg, "smf")}
	const goroutines, calls = 12, 150
	limit := 400 * time.Millisecond
	if raceEnabled {
		limit = 2 * time.Second
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+len(clients))
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := c.Call(context.Background(), opSleep, sleepReq(time.Second), nil); err != nil {
				errs <- err
			}
		}()
	}
	time.Sleep(10 * time.Millisecond) // the long calls hold the leaders
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%2]
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range calls {
				op, req := uint16(opEcho), fmt.Appendf(nil, "%d/%d", g, i)
				if rng.IntN(8) == 0 {
					op, req = opSleep, sleepReq(time.Duration(rng.IntN(3000))*time.Microsecond)
				}
				t0 := time.Now()
				resp, _, err := c.Call(context.Background(), op, req, nil)
				if d := time.Since(t0); err != nil || d > limit || string(resp) != string(req) {
					errs <- fmt.Errorf("goroutine %d call %d (op %d): %v after %v", g, i, op, err, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
