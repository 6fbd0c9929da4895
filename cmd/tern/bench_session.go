package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/ue"
)

// Published PDU session figures (benchmarks.md).
const (
	l25gcSession   = 77 * time.Millisecond  // one UE
	free5gcSession = 156 * time.Millisecond // one UE
	sessionTarget  = time.Millisecond       // the target, one UE at a time
)

// l25gcPlusSessionBurst is L25GC+'s total time for N concurrent UEs.
var l25gcPlusSessionBurst = map[int]time.Duration{
	4: 30 * time.Millisecond, 8: 29 * time.Millisecond, 16: 34 * time.Millisecond,
	32: 150 * time.Millisecond, 64: 401 * time.Millisecond,
}

// sessionRun is one configuration of the PDU session benchmark. Rounds is
// how many times every UE establishes and releases its session in the run
// (a burst's total is the median over rounds).
type sessionRun struct {
	Name        string `json:"name"`
	UEs         int    `json:"ues"`
	Concurrency int    `json:"concurrency"`
	GNBs        int    `json:"gnbs"`
	Rounds      int    `json:"rounds"`
}

// benchSession measures the PDU session window of benchmarks.md (PDU
// Session Establishment Request sent -> PDU Session Resource Setup Response
// sent, at the simulated RAN) against the core unit running in this process
// with its embedded UPF in NoN6 mode: N4 rules are installed in UPF-U, no
// packet is forwarded, so the window is control plane only.
func benchSession(args []string) error {
	fs := flag.NewFlagSet("bench session", flag.ContinueOnError)
	ues := fs.Int("ues", 1000, "UEs, each establishing one PDU session")
	conc := fs.Int("concurrency", 1, "UEs running a procedure at once")
	gnbs := fs.Int("gnbs", 2, "gNBs")
	rounds := fs.Int("rounds", 1, "establish/release rounds per UE (the all-sessions total is the median over rounds)")
	burstRounds := fs.Int("burst-rounds", 5, "with --suite: rounds per burst")
	suite := fs.Bool("suite", false, "run the issue's targets: --ues one at a time, then bursts of 4, 8, 16, 32 and 64 concurrent UEs")
	logLevel := fs.String("log-level", "error", "core log level (debug, info, warn, error)")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(atLeast("ues", *ues, 1), atLeast("concurrency", *conc, 1), atLeast("gnbs", *gnbs, 1),
		atLeast("rounds", *rounds, 1), atLeast("burst-rounds", *burstRounds, 1)); err != nil {
		return err
	}
	runs := []sessionRun{{Name: "custom", UEs: *ues, Concurrency: *conc, GNBs: *gnbs, Rounds: *rounds}}
	if *suite {
		runs = []sessionRun{{Name: "one-at-a-time", UEs: *ues, Concurrency: 1, GNBs: *gnbs, Rounds: 1}}
		for _, n := range []int{4, 8, 16, 32, 64} {
			runs = append(runs, sessionRun{Name: fmt.Sprintf("burst-%d", n), UEs: n, Concurrency: n, GNBs: *gnbs, Rounds: *burstRounds})
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	const coreNote = "in-process (core unit and simulator share this process), in-process SBI, N4 direct"
	const upfNote = "embedded, NoN6: rules installed in UPF-U, no N6 devices, no packets (the window is control plane only)"
	doc := report.NewDoc("session", map[string]any{"runs": runs, "core": coreNote, "upf": upfNote,
		"n2": "SCTP over UDP (RFC 6951) on loopback", "window": "PDU Session Establishment Request sent -> PDU Session Resource Setup Response sent"})
	fmt.Printf("tern bench session on %s\n  core: %s\n  UPF:  %s\n", report.ThisMachine(), coreNote, upfNote)

	type burst struct {
		n     int
		total time.Duration
		fail  int
	}
	var one *report.Summary
	var bursts []burst
	failures := 0
	for _, r := range runs {
		out, err := runSession(ctx, r, *logLevel)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		sums := out.rec.Summaries()
		report.WriteTable(os.Stdout, fmt.Sprintf("\n%s: %d UEs, concurrency %d, %d gNBs, %d round(s)", r.Name, r.UEs, r.Concurrency, r.GNBs, r.Rounds), sums)
		for _, e := range out.ueErrs {
			fmt.Printf("  failed: %s\n", e)
		}
		extra := map[string]any{"ues": r.UEs, "concurrency": r.Concurrency, "rounds": r.Rounds}
		for _, s := range sums {
			doc.Add(withExtra(report.LatencyResult(s, r.Name, out.rec.Samples(s.Procedure)), extra))
			failures += s.Failures
			if s.Procedure == ue.ProcPDUSession && r.Concurrency == 1 {
				one = &s
			}
		}
		walls, stepFails := out.walls, out.stepFails
		total := report.Summarize("pdu-session-all", walls, stepFails)
		res2 := report.LatencyResult(total, r.Name, walls)
		res2.Unit, res2.Median, res2.P90, res2.P99, res2.Max = "ms", ms64(total.Median), ms64(total.P90), ms64(total.P99), ms64(total.Max)
		for i, w := range walls {
			res2.Samples[i] = ms64(w)
		}
		res2.Extra = extra
		if pub, ok := l25gcPlusSessionBurst[r.UEs]; ok && r.Concurrency == r.UEs {
			res2.Extra = maps.Clone(extra)
			res2.Extra["l25gc_plus_ms"] = ms64(pub)
		}
		doc.Add(res2)
		fmt.Printf("  all %d sessions established in %v (median of %d round(s): %v)\n", r.UEs, total.Median.Round(time.Microsecond), len(walls), roundAll(walls))
		if _, ok := l25gcPlusSessionBurst[r.UEs]; ok && r.Concurrency == r.UEs {
			bursts = append(bursts, burst{n: r.UEs, total: total.Median, fail: stepFails})
		}
	}

	fmt.Println("\nPDU session vs published figures (ratio: published / ours; theirs on their hardware)")
	if one != nil {
		verdict := "meets"
		if one.Median >= sessionTarget {
			verdict = "MISSES"
		}
		fmt.Printf("  one UE at a time: median %v (%s the < 1 ms target); L25GC 77 ms: %.0fx; free5GC 156 ms: %.0fx\n",
			one.Median.Round(time.Microsecond), verdict, ratio(l25gcSession, one.Median), ratio(free5gcSession, one.Median))
	}
	if len(bursts) > 0 {
		fmt.Printf("  %-10s %12s %14s %10s %8s\n", "concurrent", "total ms", "L25GC+ ms", "ratio", "failed")
		for _, b := range bursts {
			fmt.Printf("  %-10d %12.2f %14.0f %9.0fx %8d\n", b.n, ms64(b.total), ms64(l25gcPlusSessionBurst[b.n]), ratio(l25gcPlusSessionBurst[b.n], b.total), b.fail)
		}
	}
	if *jsonPath != "" {
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s\n", *jsonPath)
	}
	if failures > 0 {
		return fmt.Errorf("%d procedure runs failed", failures)
	}
	return nil
}

// sessionOutcome is one configuration's runs merged.
type sessionOutcome struct {
	rec       *report.Recorder // every procedure of every round
	walls     []time.Duration  // the session step's wall time, one per round
	stepFails int              // UEs that failed or skipped the session step
	ueErrs    []string         // distinct failure reasons, with counts
}

// runSession starts a fresh core and runs Rounds simulator runs against it,
// each register, session, release, deregister for every UE. Rounds are
// separate runs (new gNBs, UEs registering again) rather than repeated
// session/release steps in one run: a UE that re-establishes PDU session
// ID 1 right after releasing it races the AMF's cleanup of the old SM
// context (the new session is forgotten and its release answered with
// 5GMM cause #90), which would measure that race and not the window.
func runSession(ctx context.Context, r sessionRun, logLevel string) (*sessionOutcome, error) {
	dir, err := os.MkdirTemp("", "tern-bench-session-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Log.Level = logLevel
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = r.UEs
	cfg.UPF.NoN6 = true
	sctpPort, err := freeport.UDP()
	if err != nil {
		return nil, err
	}
	cfg.AMF.SCTP.UDPPort = sctpPort
	// An address of our own: another core on this host may hold 2152 on
	// 127.0.0.1 (and a second free port drawn here could be the first).
	cfg.UPF.N3Addr = netip.AddrPortFrom(freeport.Loopback(), 2152).String()

	c, err := core.New(cfg, newLogger(cfg.Log))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}

	scfg := sim.DefaultConfig()
	scfg.AMFAddr = c.N2Addr()
	scfg.Transport = cfg.AMF.SCTP
	scfg.UEs, scfg.Concurrency, scfg.GNBs = r.UEs, r.Concurrency, r.GNBs
	scfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepRelease, sim.StepDeregister}
	scfg.Timeout = 30 * time.Second
	out := &sessionOutcome{rec: report.NewRecorder()}
	errCount := map[string]int{}
	var errOrder []string
	for range r.Rounds {
		res, err := sim.Run(ctx, scfg)
		if err != nil {
			return nil, err
		}
		for _, s := range res.Summaries {
			for _, d := range res.Recorder.Samples(s.Procedure) {
				out.rec.Observe(s.Procedure, d)
			}
			for range s.Failures {
				out.rec.Fail(s.Procedure)
			}
		}
		for _, st := range res.Steps {
			if st.Step == sim.StepSession {
				out.walls = append(out.walls, st.Wall)
				out.stepFails += st.Failed + st.Skipped
			}
		}
		for _, u := range res.UEs {
			if u.Err == "" {
				continue
			}
			k := fmt.Sprintf("at %s: %s", u.FailedStep, u.Err)
			if errCount[k] == 0 {
				errOrder = append(errOrder, k)
			}
			errCount[k]++
		}
	}
	for _, k := range errOrder {
		out.ueErrs = append(out.ueErrs, fmt.Sprintf("%d UE run(s) %s", errCount[k], k))
	}
	return out, nil
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func roundAll(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	for i := range out {
		out[i] = out[i].Round(time.Microsecond)
	}
	return out
}
