package failover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/failover"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim/ue"
)

// localBed is a replicated core and its RAN.
type localBed struct {
	dir  string
	core *replicated
	ran  *ran
}

func newLocalBed(ctx context.Context, c Config, onExecution func()) (*localBed, error) {
	dir, err := workDir()
	if err != nil {
		return nil, err
	}
	b := &localBed{dir: dir}
	cfg, err := coreConfig(dir, c.UEs, config.ResiliencyLocal)
	if err != nil {
		b.Close()
		return nil, err
	}
	if b.core, err = startReplicated(ctx, c, cfg); err != nil {
		b.Close()
		return nil, err
	}
	if b.ran, err = newRAN(ctx, c, b.core.N2Addr(), cfg.AMF.SCTP, onExecution); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *localBed) Close() {
	if b.ran != nil {
		b.ran.Close()
	}
	if b.core != nil {
		b.core.Close()
	}
	os.RemoveAll(b.dir)
}

// registeredIdle registers u, sets up its session and releases its
// signalling connection (CM-IDLE): the idle drill's starting state.
func registeredIdle(ctx context.Context) func(int, *ue.UE) error {
	return func(_ int, u *ue.UE) error {
		if err := register(ctx, u); err != nil {
			return err
		}
		if err := establish(ctx, u); err != nil {
			return err
		}
		return u.Release(ctx)
	}
}

// lastOf is the latest of ts, the zero time for none.
func lastOf(ts []time.Time) time.Time {
	var last time.Time
	for _, t := range ts {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// idleLocal is drill (a) on a replicated core: the UEs act right after
// the kill, as they would not know of it; the front end holds what they
// send until the standby serves.
func idleLocal(ctx context.Context, c Config) (Result, error) {
	res := Result{Drill: DrillIdle, Variant: VariantLocal, UEs: c.UEs}
	b, err := newLocalBed(ctx, c, nil)
	if err != nil {
		return res, err
	}
	defer b.Close()
	if err := b.ran.setup(ctx, "register, session, idle", registeredIdle(ctx)); err != nil {
		return res, err
	}
	rec := b.ran.obs.phase(nil)
	killed, err := b.core.kill()
	if err != nil {
		return res, err
	}
	served := make([]time.Time, c.UEs)
	res.noteErrors(b.ran.each(ctx, func(i int, u *ue.UE) error {
		if err := u.ServiceRequest(ctx, nas.ServiceData); err != nil {
			return err
		}
		served[i] = time.Now()
		return finish(ctx, u)
	}))
	if err := b.core.takeover(killed, &res); err != nil {
		return res, err
	}
	if last := lastOf(served); !last.IsZero() {
		res.Served = last.Sub(killed)
	}
	tally(rec, 0, &res)
	return res, ctx.Err()
}

// idleReattach is drill (a)'s 3GPP baseline: a core with resiliency.mode
// off is stopped and started again; the gNBs set up new associations
// (NG Setup) and every UE, its service request rejected (#9: the new AMF
// knows no 5G-S-TMSI), registers by itself (TS 24.501 §5.6.1.5) and sets
// its session up again.
func idleReattach(ctx context.Context, c Config) (Result, error) {
	res := Result{Drill: DrillIdle, Variant: VariantReattach, UEs: c.UEs}
	dir, err := workDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	cfg, err := coreConfig(dir, c.UEs, config.ResiliencyOff)
	if err != nil {
		return res, err
	}
	p, err := startPlain(ctx, c, cfg)
	if err != nil {
		return res, err
	}
	defer p.Close()
	r, err := newRAN(ctx, c, p.N2Addr(), cfg.AMF.SCTP, nil)
	if err != nil {
		return res, err
	}
	defer r.Close()
	if err := r.setup(ctx, "register, session, idle", registeredIdle(ctx)); err != nil {
		return res, err
	}
	rec := r.obs.phase(nil)
	killed := time.Now()
	if err := p.restart(ctx); err != nil {
		return res, err
	}
	for _, g := range r.gnbs {
		if err := g.Reconnect(ctx); err != nil {
			return res, err
		}
	}
	res.Takeover = time.Since(killed)
	served := make([]time.Time, c.UEs)
	errs := r.each(ctx, func(i int, u *ue.UE) error {
		err := u.ServiceRequest(ctx, nas.ServiceData)
		var rej *ue.ServiceRejectError
		switch {
		case err == nil:
		case errors.As(err, &rej):
			// The UE registers by itself once released; the session
			// request waits for that registration.
			if err := establish(ctx, u); err != nil {
				return err
			}
		default:
			return err
		}
		served[i] = time.Now()
		return finish(ctx, u)
	})
	res.noteErrors(errs)
	if last := lastOf(served); !last.IsZero() {
		res.Served = last.Sub(killed)
	}
	tally(rec, 0, &res)
	return res, ctx.Err()
}

// storm is drill (b): the kill once half of the UEs registered, while
// the others' registrations run.
func storm(ctx context.Context, c Config) (Result, error) {
	res := Result{Drill: DrillStorm, Variant: VariantLocal, UEs: c.UEs}
	b, err := newLocalBed(ctx, c, nil)
	if err != nil {
		return res, err
	}
	defer b.Close()
	k := newKillOnce(b.core.kill)
	var registered atomic.Int64
	half := int64(max(1, c.UEs/2))
	rec := b.ran.obs.phase(func(proc string, ok bool) {
		if ok && proc == ue.ProcRegistration && registered.Add(1) == half {
			k.fire()
		}
	})
	errs := b.ran.each(ctx, func(_ int, u *ue.UE) error { return register(ctx, u) })
	res.noteErrors(errs)
	killed, err := k.wait()
	if err != nil {
		return res, err
	}
	// A UE whose registration failed tries again (after T3511, TS 24.501
	// §5.5.1.2.7; at once here).
	res.noteErrors(b.ran.each(ctx, func(i int, u *ue.UE) error {
		if errs[i] == nil || u.Registered() {
			return nil
		}
		return register(ctx, u)
	}))
	res.noteErrors(b.ran.each(ctx, func(_ int, u *ue.UE) error {
		if !u.Registered() {
			return nil
		}
		if err := establish(ctx, u); err != nil {
			return err
		}
		return finish(ctx, u)
	}))
	if err := b.core.takeover(killed, &res); err != nil {
		return res, err
	}
	tally(rec, c.UEs, &res)
	return res, ctx.Err()
}

// handover is drill (c): an N2 handover per UE, the kill when half of
// them have reached the execution window (after the Handover Command,
// before the Handover Notify).
func handover(ctx context.Context, c Config) (Result, error) {
	res := Result{Drill: DrillHandover, Variant: VariantLocal, UEs: c.UEs}
	var k *killOnce
	var executing atomic.Int64
	half := int64(max(1, c.UEs/2))
	b, err := newLocalBed(ctx, c, func() {
		if executing.Add(1) == half {
			k.fire()
		}
	})
	if err != nil {
		return res, err
	}
	defer b.Close()
	k = newKillOnce(b.core.kill)
	if err := b.ran.setup(ctx, "register, session", func(_ int, u *ue.UE) error {
		if err := register(ctx, u); err != nil {
			return err
		}
		return establish(ctx, u)
	}); err != nil {
		return res, err
	}
	rec := b.ran.obs.phase(nil)
	type span struct {
		start, end time.Time
		window     time.Duration
		ok         bool
	}
	spans := make([]span, c.UEs)
	gnbs := b.ran.gnbs
	res.noteErrors(b.ran.each(ctx, func(i int, u *ue.UE) error {
		target := gnbs[(i+1)%len(gnbs)].ID()
		start := time.Now()
		err := u.Handover(ctx, ue.HandoverN2, target)
		spans[i] = span{start: start, end: time.Now(), ok: err == nil}
		if err == nil {
			spans[i].window = u.LastWindow()
		}
		return err
	}))
	killed, err := k.wait()
	if err != nil {
		return res, err
	}
	var with, without []time.Duration
	for _, s := range spans {
		inFlight := !s.start.After(killed) && !s.end.Before(killed)
		if inFlight {
			res.InFlight++
			if !s.ok {
				res.InFlightFailed++
			}
		}
		switch {
		case !s.ok:
		case inFlight:
			with = append(with, s.window)
		default:
			without = append(without, s.window)
		}
	}
	res.Window, res.WindowRef = median(with), median(without)
	res.noteErrors(b.ran.each(ctx, func(_ int, u *ue.UE) error { return finish(ctx, u) }))
	if err := b.core.takeover(killed, &res); err != nil {
		return res, err
	}
	tally(rec, 0, &res)
	return res, ctx.Err()
}

// session is drill (d): a PDU session establishment per UE, the kill
// once half of them completed.
func session(ctx context.Context, c Config) (Result, error) {
	res := Result{Drill: DrillSession, Variant: VariantLocal, UEs: c.UEs}
	b, err := newLocalBed(ctx, c, nil)
	if err != nil {
		return res, err
	}
	defer b.Close()
	if err := b.ran.setup(ctx, "register", func(_ int, u *ue.UE) error { return register(ctx, u) }); err != nil {
		return res, err
	}
	k := newKillOnce(b.core.kill)
	var established atomic.Int64
	half := int64(max(1, c.UEs/2))
	rec := b.ran.obs.phase(func(proc string, ok bool) {
		if ok && proc == ue.ProcPDUSession && established.Add(1) == half {
			k.fire()
		}
	})
	res.noteErrors(b.ran.each(ctx, func(_ int, u *ue.UE) error { return establish(ctx, u) }))
	killed, err := k.wait()
	if err != nil {
		return res, err
	}
	res.noteErrors(b.ran.each(ctx, func(_ int, u *ue.UE) error { return finish(ctx, u) }))
	if err := b.core.takeover(killed, &res); err != nil {
		return res, err
	}
	tally(rec, 0, &res)
	return res, ctx.Err()
}

// costRounds is how many rounds the replication cost's UEs are run in.
const costRounds = 10

// replicationCost measures the registration and PDU session windows,
// one UE at a time, on a core of each of CostVariants, in this run. The
// cores are all up at once and take turns, a round of CostUEs/costRounds
// UEs each, in an order that rotates from round to round: what else the
// machine does in the meantime falls on every variant alike.
func replicationCost(ctx context.Context, c Config) (*CostResult, error) {
	cost := &CostResult{UEs: c.CostUEs, Registration: map[string]time.Duration{}, PDUSession: map[string]time.Duration{},
		RegistrationFailed: map[string]int{}, PDUSessionFailed: map[string]int{}}
	cc := c
	cc.UEs, cc.Concurrency = c.CostUEs, 1
	rans := make([]*ran, len(CostVariants))
	recs := make([]*report.Recorder, len(CostVariants))
	for i, v := range CostVariants {
		r, closeBed, err := costBed(ctx, cc, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		defer closeBed()
		rans[i], recs[i] = r, r.obs.phase(nil)
	}
	cycle := func(u *ue.UE) error {
		if err := register(ctx, u); err != nil {
			return err
		}
		if err := establish(ctx, u); err != nil {
			return err
		}
		return finish(ctx, u)
	}
	per := (cc.UEs + costRounds - 1) / costRounds
	for round := 0; round*per < cc.UEs; round++ {
		for k := range CostVariants {
			r := rans[(round+k)%len(rans)]
			for i := round * per; i < min((round+1)*per, cc.UEs) && ctx.Err() == nil; i++ {
				cycle(r.ues[i]) // a failure is counted by the observer
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, v := range CostVariants {
		reg, pdu := recs[i].Summary(ue.ProcRegistration), recs[i].Summary(ue.ProcPDUSession)
		cost.Registration[v], cost.PDUSession[v] = reg.Median, pdu.Median
		cost.RegistrationFailed[v], cost.PDUSessionFailed[v] = reg.Failures, pdu.Failures
		c.Log("%s (%s): registration %v, pdu-session %v (medians, %d UEs)", Cost, v, reg.Median, pdu.Median, c.CostUEs)
	}
	return cost, nil
}

// recording is what the units of a replication cost variant do with
// their records.
var recording = map[string]failover.Recording{
	VariantOff:     failover.RecordNone,
	VariantNoStore: failover.RecordDiscard,
	VariantLocal:   failover.RecordShm,
}

// withRecording has spawn start units that do r with their records.
func withRecording(spawn failover.Spawn, r failover.Recording) failover.Spawn {
	return func(args []string) (*exec.Cmd, error) {
		return spawn(append(slices.Clip(args), "--recording", string(r)))
	}
}

// costBed starts the core of a replication cost variant and its RAN;
// closeBed stops them.
func costBed(ctx context.Context, c Config, variant string) (r *ran, closeBed func(), err error) {
	if rc, ok := recording[variant]; ok {
		if c.Spawn == nil {
			return nil, nil, errors.New("the unit variants need Config.Spawn (how to start a unit process)")
		}
		c.Spawn = withRecording(c.Spawn, rc)
		b, err := newLocalBed(ctx, c, nil)
		if err != nil {
			return nil, nil, err
		}
		return b.ran, b.Close, nil
	}
	dir, err := workDir()
	if err != nil {
		return nil, nil, err
	}
	var p *plain
	closeBed = func() {
		if r != nil {
			r.Close()
		}
		if p != nil {
			p.Close()
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			closeBed()
		}
	}()
	cfg, err := coreConfig(dir, c.UEs, config.ResiliencyOff)
	if err != nil {
		return nil, nil, err
	}
	if p, err = startPlain(ctx, c, cfg); err != nil {
		return nil, nil, err
	}
	if r, err = newRAN(ctx, c, p.N2Addr(), cfg.AMF.SCTP, nil); err != nil {
		return nil, nil, err
	}
	return r, closeBed, nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return report.Quantile(s, 0.5)
}
