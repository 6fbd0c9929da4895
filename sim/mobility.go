package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

// Mobility: the handover steps move every UE to the next gNB (round robin
// over Config.GNBs, which are each other's neighbours), and with
// Config.HandoverEvery a background mover hands one UE after another to
// its next gNB while the scenario runs.

// Handover kinds of Config.HandoverKind.
const (
	HandoverKindXn     = "xn"
	HandoverKindN2     = "n2"
	HandoverKindRandom = "random" // Xn or N2, at random for each move
)

// MobilityResult counts the background mover's work (Config.HandoverEvery).
type MobilityResult struct {
	Attempted int // handovers started
	Moved     int // of those: the UE is at the target
	Failed    int // of those: the handover failed (the procedure's Fail is recorded too)
	// Skipped: ticks whose UE was busy with a step, not connected or
	// without a PDU session.
	Skipped int
	Xn, N2  int // handovers started of each kind
}

// GNBOutcome is one gNB at the end of the run.
type GNBOutcome struct {
	ID       uint32
	TAC      uint32
	Counters gnb.Counters
	N3       gnb.N3Counters
}

// nextGNB returns the gNB after the one serving su (round robin).
func (r *runner) nextGNB(su *simUE) *gnb.GNB {
	cur := su.port.GNB()
	for i, g := range r.gnbs {
		if g == cur {
			return r.gnbs[(i+1)%len(r.gnbs)]
		}
	}
	return r.gnbs[0]
}

// handover moves su to the next gNB.
func (r *runner) handover(ctx context.Context, su *simUE, kind ue.HandoverKind) error {
	if len(r.gnbs) < 2 {
		return errors.New("sim: handover needs at least 2 gNBs")
	}
	tg := r.nextGNB(su)
	err := su.u.Handover(ctx, kind, tg.ID())
	su.gnb.Store(su.port.GNB().ID())
	return err
}

// mover is the background mobility of Config.HandoverEvery.
type mover struct {
	r    *runner
	stop chan struct{}
	done chan struct{}
	next int

	mu  sync.Mutex
	res MobilityResult
}

func (r *runner) startMover(ctx context.Context) *mover {
	m := &mover{r: r, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run(ctx)
	return m
}

// end stops the mover and returns its counts.
func (m *mover) end() MobilityResult {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.res
}

func (m *mover) run(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(m.r.cfg.HandoverEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.moveOne(ctx)
	}
}

// moveOne hands the next UE (round robin) to its next gNB, if it is
// connected, has a session and is not in a step's procedure.
func (m *mover) moveOne(ctx context.Context) {
	r := m.r
	if len(r.ues) == 0 {
		return
	}
	su := r.ues[m.next%len(r.ues)]
	m.next++
	if !su.mu.TryLock() {
		m.count(func(res *MobilityResult) { res.Skipped++ })
		return
	}
	defer su.mu.Unlock()
	u := su.u
	if !u.Connected() || !u.Registered() || !hasUserPlane(u) {
		m.count(func(res *MobilityResult) { res.Skipped++ })
		return
	}
	kind := ue.HandoverXn
	switch r.cfg.HandoverKind {
	case HandoverKindN2:
		kind = ue.HandoverN2
	case HandoverKindRandom:
		if rand.IntN(2) == 1 {
			kind = ue.HandoverN2
		}
	}
	err := r.handover(ctx, su, kind)
	m.count(func(res *MobilityResult) {
		res.Attempted++
		if kind == ue.HandoverXn {
			res.Xn++
		} else {
			res.N2++
		}
		if err != nil {
			res.Failed++
		} else {
			res.Moved++
		}
	})
	if err != nil {
		r.log.Info("background handover failed", "supi", u.SUPI(), "kind", kind, "err", err)
	}
}

func (m *mover) count(f func(*MobilityResult)) {
	m.mu.Lock()
	f(&m.res)
	m.mu.Unlock()
}

// hasUserPlane reports whether u has a PDU session with a user plane.
func hasUserPlane(u *ue.UE) bool {
	for _, s := range u.Sessions() {
		if s.UserPlane {
			return true
		}
	}
	return false
}

// tac returns the TAC of gNB i.
func (c Config) tac(i int) uint32 {
	if len(c.TACs) > 0 {
		return c.TACs[i%len(c.TACs)]
	}
	return c.TAC + uint32(i)*c.TACStep
}

func validHandoverKind(k string) error {
	switch k {
	case HandoverKindXn, HandoverKindN2, HandoverKindRandom:
		return nil
	}
	return fmt.Errorf("sim: handover kind %q: want %s, %s or %s", k, HandoverKindXn, HandoverKindN2, HandoverKindRandom)
}
