// Package failover runs the drills of `tern bench failover` (issue 36
// §6, L25GC §5.5): a replicated core (resiliency.mode local: package
// failover's supervisor, its units processes of their own) serves
// simulated gNBs and UEs (sim/gnb, sim/ue), the active unit is SIGKILLed
// at a chosen point, and each drill counts what the UEs saw: procedures
// that failed, UEs that had to register again (goal 0 for both), and how
// long the standby took to see the death (detect, against the
// supervisor's own wait4 of the same death) and to serve (takeover).
//
// Drills (names are the JSON rows' names):
//
//   - idle (drill a): every UE registered with a PDU session and idle;
//     the kill; then a service request, a session release and a
//     deregistration per UE. Its reattach variant is the 3GPP baseline in
//     the same run: a core with resiliency.mode off, closed and started
//     again on the same addresses and subscriber store; the gNBs set up
//     their associations again, each UE's service request is rejected
//     (#9, TS 24.501 §5.6.1.5) and it registers and sets its session up
//     again. served is from the kill until every UE has its session's user
//     plane back.
//   - storm (drill b): every UE registers, Concurrency at a time; the kill
//     after half of them completed. A UE whose registration failed tries
//     once more (a UE would after T3511); then each sets up a session,
//     releases it and deregisters.
//   - handover (drill c): every UE registered with a session, connected;
//     an N2 handover per UE to the next gNB, and the kill when half of
//     them are inside the execution window (Handover Command received,
//     Handover Notify not yet sent: gnb.Config.OnHandoverExecution). The
//     windows of the handovers in flight at the kill against those of the
//     run's others.
//   - session (drill d): every UE registered; a PDU session establishment
//     per UE and the kill after half of them completed.
//
// What today's local mode does not cover (docs/resiliency.md, "Output
// commit"): requests a step awaits (PFCP, the AMF's SBI calls) are not
// held for the replica, so a procedure in flight at the kill may fail;
// the drills count such failures instead of hiding them. Packet loss is
// not measured: the units' UPF runs without N6 devices here, so there is
// no downlink to lose (bench/restore's uplink counting needs the UPF's
// Error Indications, which a control-plane failure does not cause).
package failover

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/tern5g/tern/failover"
	"github.com/tern5g/tern/report"
)

// Drill names (the JSON rows' names).
const (
	DrillIdle     = "idle"
	DrillStorm    = "storm"
	DrillHandover = "handover"
	DrillSession  = "session"
	// Cost is the price of replication: registration and PDU session
	// windows with resiliency.mode local against off.
	Cost = "replication-cost"
)

// Drills is every drill, in the order they run.
var Drills = []string{DrillIdle, DrillStorm, DrillHandover, DrillSession}

// Variants (the JSON rows' variants): the core's resiliency mode.
const (
	VariantLocal    = "local"
	VariantReattach = "reattach" // resiliency.mode off, the core restarted: 3GPP's re-attach
	// VariantOff is replication-cost's reference: resiliency off on the
	// local mode's process layout (the N2 front end in this process, a
	// unit process behind it, its standby), the unit recording nothing
	// (failover.RecordNone), so that the ratio prices the replication
	// alone.
	VariantOff = "off"
	// VariantOffInProcess is resiliency.mode off as tern up runs it, the
	// core in this process with no front end: against VariantOff, the
	// price of the front end's hop and of the unit's process.
	VariantOffInProcess = "off-in-process"
	// VariantNoStore is local mode with the unit's records encoded and
	// dropped (failover.RecordDiscard): against VariantOff, the price of
	// the record path (capture, encoding, output commit's holding);
	// VariantLocal against it, the store's.
	VariantNoStore = "local-no-store"
)

// CostVariants are the replication cost's variants, in the order they
// run.
var CostVariants = []string{VariantOffInProcess, VariantOff, VariantNoStore, VariantLocal}

// Config shapes the drills.
type Config struct {
	UEs         int // per drill (default 1,000)
	GNBs        int // the UEs are spread over them (default 4)
	Concurrency int // UEs running a procedure at once (default 32)
	// Drills to run, in order (default Drills); Cost adds the replication
	// cost.
	Drills []string
	// Reattach runs the idle drill's reattach variant as well.
	Reattach bool
	// CostUEs is how many UEs, one at a time, measure the replication
	// cost per mode (default UEs).
	CostUEs int
	// HandoverInterruption is how long a UE is between gNBs in the
	// handover drill (gnb.Config.HandoverInterruption; default 0).
	HandoverInterruption time.Duration
	// Spawn starts a unit process (failover.Hooks.Spawn): tern passes
	// itself, a test its own binary. Required for the local variant.
	Spawn  failover.Spawn
	Log    func(format string, args ...any) // progress (nil: none)
	Logger *slog.Logger                     // the cores' log (nil: discarded)
}

func (c *Config) defaults() {
	if c.UEs <= 0 {
		c.UEs = 1000
	}
	if c.GNBs <= 0 {
		c.GNBs = 4
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if len(c.Drills) == 0 {
		c.Drills = Drills
	}
	if c.CostUEs <= 0 {
		c.CostUEs = c.UEs
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Result is what one drill measured in one variant.
type Result struct {
	Drill, Variant string
	UEs            int
	// Detect is from the SIGKILL to the standby seeing the death (its
	// pidfd); Reaped from the SIGKILL to the supervisor's wait4 returning
	// for the dead unit, the kernel's notice of the same death. Local
	// variant only: a restarted core detects nothing.
	Detect, Reaped time.Duration
	// Takeover is, for the local variant, from the detection to the
	// standby serving (records read, NFs restored, N2 resumed:
	// failover.Takeover.Restore); for reattach, from the kill to the
	// restarted core having answered every gNB's new NG Setup.
	Takeover time.Duration
	// Restored is the UEs the standby restored (local).
	Restored int
	// Served (idle) is from the kill until every UE had its PDU session's
	// user plane again.
	Served time.Duration
	// Reregistered counts registration attempts beyond those the drill
	// plans (goal 0): UEs that had to register again.
	Reregistered int
	// Failed counts the procedures that failed as the UEs saw them (goal
	// 0); Failures splits them by procedure name.
	Failed   int
	Failures map[string]int
	// Errors are a few of the failures' messages, distinct, as the UEs
	// saw them: what failed and why.
	Errors []string
	// Handover drill: the handovers in flight at the kill (InFlight; of
	// them InFlightFailed failed) and the median of the windows of those
	// that succeeded (Window), against the median of the run's other
	// handovers (WindowRef).
	InFlight, InFlightFailed int
	Window, WindowRef        time.Duration
}

// maxErrors is how many distinct failure messages a Result keeps.
const maxErrors = 3

// noteErrors keeps the first distinct messages of errs in r.Errors.
func (r *Result) noteErrors(errs []error) {
	for _, err := range errs {
		if err == nil || len(r.Errors) >= maxErrors {
			continue
		}
		if msg := err.Error(); !slices.Contains(r.Errors, msg) {
			r.Errors = append(r.Errors, msg)
		}
	}
}

// Outage is from the kill until the core served again: detection and
// takeover for the local variant, the restart for reattach.
func (r Result) Outage() time.Duration { return r.Detect + r.Takeover }

// CostResult is the replication cost: the windows' medians with each
// mode.
type CostResult struct {
	UEs                                  int
	Registration, PDUSession             map[string]time.Duration // by variant (CostVariants)
	RegistrationFailed, PDUSessionFailed map[string]int
}

// Run runs the drills in order, each on a core of its own, and the
// replication cost if cfg.Drills names it.
func Run(ctx context.Context, cfg Config) ([]Result, *CostResult, error) {
	cfg.defaults()
	for _, d := range cfg.Drills {
		if d != Cost && !slices.Contains(Drills, d) {
			return nil, nil, fmt.Errorf("failover: unknown drill %q (have %v and %s)", d, Drills, Cost)
		}
	}
	var out []Result
	var cost *CostResult
	for _, d := range cfg.Drills {
		if d == Cost {
			cfg.Log("%s: %d UEs one at a time per variant (%v)", Cost, cfg.CostUEs, CostVariants)
			c, err := replicationCost(ctx, cfg)
			if err != nil {
				return out, cost, fmt.Errorf("failover: %s: %w", d, err)
			}
			cost = c
			continue
		}
		variants := []string{VariantLocal}
		if d == DrillIdle && cfg.Reattach {
			variants = append(variants, VariantReattach)
		}
		for _, v := range variants {
			r, err := runDrill(ctx, cfg, d, v)
			if err != nil {
				return out, cost, fmt.Errorf("failover: %s (%s): %w", d, v, err)
			}
			cfg.Log("%s (%s): detect %v (wait4 %v), takeover %v, restored %d, re-registered %d, failed %d (%s)",
				d, v, r.Detect, r.Reaped, r.Takeover, r.Restored, r.Reregistered, r.Failed, r.FailureList())
			out = append(out, r)
		}
	}
	return out, cost, nil
}

func runDrill(ctx context.Context, cfg Config, drill, variant string) (Result, error) {
	switch drill {
	case DrillIdle:
		if variant == VariantReattach {
			return idleReattach(ctx, cfg)
		}
		return idleLocal(ctx, cfg)
	case DrillStorm:
		return storm(ctx, cfg)
	case DrillHandover:
		return handover(ctx, cfg)
	case DrillSession:
		return session(ctx, cfg)
	}
	return Result{}, fmt.Errorf("unknown drill %q (have %v and %s)", drill, Drills, Cost)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Results are the JSON rows (report.Result) of the drills: name = drill,
// variant = mode, unit ms, median = the outage (kill to serving), the
// fields scripts read in Extra (detect, reaped: the supervisor's wait4
// of the same death, takeover, reregistered, failed, failures by
// procedure; served for idle; window, window_ref, in_flight for
// handover; no lost: see the package comment); and the replication cost's rows, one per
// variant (CostVariants), with the windows' ratios to off.
func Results(rs []Result, cost *CostResult) []report.Result {
	out := make([]report.Result, 0, len(rs)+2)
	for _, r := range rs {
		o := ms(r.Outage())
		extra := map[string]any{
			"takeover": ms(r.Takeover), "reregistered": r.Reregistered, "failed": r.Failed, "failures": r.Failures,
		}
		if r.Variant == VariantLocal {
			// A restarted core (reattach) detects nothing and restores
			// nothing: no zeros that read as figures.
			extra["detect"], extra["reaped"], extra["restored"] = ms(r.Detect), ms(r.Reaped), r.Restored
		}
		if r.Drill == DrillIdle {
			extra["served"] = ms(r.Served)
		}
		if r.Drill == DrillHandover {
			extra["window"], extra["window_ref"], extra["in_flight"] = ms(r.Window), ms(r.WindowRef), r.InFlight
			extra["in_flight_failed"] = r.InFlightFailed
		}
		if len(r.Errors) > 0 {
			extra["errors"] = r.Errors
		}
		out = append(out, report.Result{Name: r.Drill, Variant: r.Variant, Unit: "ms", Count: r.UEs, Failures: r.Failed,
			Median: o, P90: o, P99: o, Max: o, Extra: extra})
	}
	if cost != nil {
		for _, mode := range CostVariants {
			reg, pdu := cost.Registration[mode], cost.PDUSession[mode]
			out = append(out, report.Result{Name: Cost, Variant: mode, Unit: "ms", Count: cost.UEs,
				Failures: cost.RegistrationFailed[mode] + cost.PDUSessionFailed[mode],
				Median:   ms(reg), P90: ms(reg), P99: ms(reg), Max: ms(reg),
				Extra: map[string]any{
					"registration": cost.Ratio(cost.Registration, mode), "pdu-session": cost.Ratio(cost.PDUSession, mode),
					"registration_ms": ms(reg), "pdu_session_ms": ms(pdu),
				}})
		}
	}
	return out
}

// Ratio is m[mode] over m[off].
func (c *CostResult) Ratio(m map[string]time.Duration, mode string) float64 {
	if m[VariantOff] == 0 {
		return 0
	}
	return float64(m[mode]) / float64(m[VariantOff])
}

// FailureList lists the failed procedures, sorted by name, as "name
// count, ..." ("-" for none).
func (r Result) FailureList() string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(r.Failures)) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, r.Failures[k])
	}
	if s == "" {
		return "-"
	}
	return s
}
