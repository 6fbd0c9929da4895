package failover

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

// ran is the simulated RAN of a drill: gNBs connected to the core's N2
// address and UEs spread over them, with one observer for all.
type ran struct {
	sc   sim.Config
	gnbs []*gnb.GNB
	ues  []*ue.UE
	obs  *observer
	conc int
}

// observer hands every UE's procedure outcomes to the recorder of the
// drill's phase, and to a hook (the kill at a chosen point).
type observer struct {
	mu   sync.Mutex
	rec  *report.Recorder
	hook func(proc string, ok bool)
}

func (o *observer) Observe(proc string, d time.Duration) {
	o.mu.Lock()
	rec, hook := o.rec, o.hook
	o.mu.Unlock()
	rec.Observe(proc, d)
	if hook != nil {
		hook(proc, true)
	}
}

func (o *observer) Fail(proc string) {
	o.mu.Lock()
	rec, hook := o.rec, o.hook
	o.mu.Unlock()
	rec.Fail(proc)
	if hook != nil {
		hook(proc, false)
	}
}

// phase starts recording into a new recorder, with hook (nil: none).
func (o *observer) phase(hook func(proc string, ok bool)) *report.Recorder {
	rec := report.NewRecorder()
	o.mu.Lock()
	o.rec, o.hook = rec, hook
	o.mu.Unlock()
	return rec
}

// newRAN connects c.GNBs gNBs to addr (neighbours of each other, one TA)
// and makes c.UEs UEs of the demo subscribers. onExecution, if set, is
// every gNB's OnHandoverExecution.
func newRAN(ctx context.Context, c Config, addr string, transport sctp.Config, onExecution func()) (*ran, error) {
	sc := sim.DefaultConfig()
	sc.Transport = transport
	sc.Timeout = 10 * time.Second
	r := &ran{sc: sc, obs: &observer{rec: report.NewRecorder()}, conc: c.Concurrency}
	for i := range c.GNBs {
		g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: addr, Transport: sc.Transport, GNBID: sc.GNBID + uint32(i),
			PLMN: sc.PLMN, TAC: sc.TAC, Slices: sc.Slices, N3Addr: "127.0.0.1:0",
			HandoverInterruption: c.HandoverInterruption, OnHandoverExecution: onExecution, Logger: c.Logger})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("gNB %d: %w", i, err)
		}
		r.gnbs = append(r.gnbs, g)
	}
	gnb.Neighbours(r.gnbs...)
	for i := range c.UEs {
		u, err := sc.NewUE(i, r.obs, c.Logger)
		if err != nil {
			r.Close()
			return nil, err
		}
		u.Attach(r.gnbs[i%len(r.gnbs)].NewPort(u))
		r.ues = append(r.ues, u)
	}
	return r, nil
}

func (r *ran) Close() {
	for _, g := range r.gnbs {
		g.Close()
	}
}

// each runs fn for every UE, r.conc at a time, and returns each UE's
// error (nil where fn succeeded).
func (r *ran) each(ctx context.Context, fn func(i int, u *ue.UE) error) []error {
	errs := make([]error, len(r.ues))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.conc, len(r.ues)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(r.ues) {
					return
				}
				errs[i] = fn(i, r.ues[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// setup runs fn for every UE and fails on the first UE that fails: the
// drill's starting state must be complete.
func (r *ran) setup(ctx context.Context, what string, fn func(i int, u *ue.UE) error) error {
	r.obs.phase(nil)
	for i, err := range r.each(ctx, fn) {
		if err != nil {
			return fmt.Errorf("%s: UE %d: %w", what, i, err)
		}
	}
	return ctx.Err()
}

// register registers u.
func register(ctx context.Context, u *ue.UE) error { return u.Register(ctx) }

// establish sets up a PDU session on the internet DNN.
func establish(ctx context.Context, u *ue.UE) error {
	_, err := u.EstablishSession(ctx, ue.SessionRequest{DNN: "internet"})
	return err
}

// releaseAll releases u's PDU sessions.
func releaseAll(ctx context.Context, u *ue.UE) error {
	for _, s := range u.Sessions() {
		if err := u.ReleaseSession(ctx, s.ID); err != nil {
			return err
		}
	}
	return nil
}

// finish releases u's sessions and deregisters it, where it is still
// registered (a UE that failed earlier may not be).
func finish(ctx context.Context, u *ue.UE) error {
	if !u.Registered() {
		return nil
	}
	if err := releaseAll(ctx, u); err != nil {
		return err
	}
	return u.Deregister(ctx, false)
}

// tally fills in res's failures and re-registrations from a drill's
// recorder: planned is the registrations the drill itself runs.
func tally(rec *report.Recorder, planned int, res *Result) {
	res.Failures = map[string]int{}
	attempts := 0
	for _, s := range rec.Summaries() {
		if s.Failures > 0 {
			res.Failures[s.Procedure] = s.Failures
			res.Failed += s.Failures
		}
		switch s.Procedure {
		case ue.ProcRegistration, ue.ProcReregistration, ue.ProcPeriodicRegistration:
			attempts += s.Count + s.Failures
		}
	}
	res.Reregistered = max(0, attempts-planned)
}

// killOnce calls kill the first time it is called, from any goroutine,
// and remembers when and whether it worked.
type killOnce struct {
	once sync.Once
	kill func() (time.Time, error)
	at   time.Time
	err  error
	done chan struct{}
}

func newKillOnce(kill func() (time.Time, error)) *killOnce {
	return &killOnce{kill: kill, done: make(chan struct{})}
}

func (k *killOnce) fire() {
	k.once.Do(func() {
		k.at, k.err = k.kill()
		close(k.done)
	})
}

// wait returns the kill's time once it happened.
func (k *killOnce) wait() (time.Time, error) {
	select {
	case <-k.done:
		return k.at, k.err
	default:
		return time.Time{}, fmt.Errorf("the kill's trigger was never reached")
	}
}
