package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
)

// Published registration figures (benchmarks.md): one UE, seconds.
const (
	l25gcRegistration   = 136 * time.Millisecond
	free5gcRegistration = 240 * time.Millisecond
	l25gcPlus64UEs      = 349 * time.Millisecond // L25GC+ total for 64 concurrent UEs
)

// registerRun is one configuration of the registration benchmark.
type registerRun struct {
	Name        string `json:"name"`
	UEs         int    `json:"ues"`
	Concurrency int    `json:"concurrency"`
	GNBs        int    `json:"gnbs"`
}

// benchRegister measures the registration window against a core running in
// its own process (so that the core's memory is measured alone), with the
// simulator in this one.
func benchRegister(args []string) error {
	fs := flag.NewFlagSet("bench register", flag.ContinueOnError)
	ues := fs.Int("ues", 1000, "UEs to register")
	conc := fs.Int("concurrency", 1, "UEs registering at once")
	gnbs := fs.Int("gnbs", 2, "gNBs")
	suite := fs.Bool("suite", false, "run the issue's three targets instead: 1000 UEs one at a time, 64 at once, 10,000 with concurrency 64")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("ues", *ues, 1),
		atLeast("concurrency", *conc, 1),
		atLeast("gnbs", *gnbs, 1),
	); err != nil {
		return err
	}
	runs := []registerRun{{Name: "custom", UEs: *ues, Concurrency: *conc, GNBs: *gnbs}}
	if *suite {
		runs = []registerRun{
			{Name: "one-at-a-time", UEs: 1000, Concurrency: 1, GNBs: 2},
			{Name: "burst-64", UEs: 64, Concurrency: 64, GNBs: 2},
			{Name: "scale-10000", UEs: 10000, Concurrency: 64, GNBs: 4},
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	doc := report.NewDoc("register", map[string]any{"runs": runs, "core": "separate process, in-process SBI (unit mode)", "n2": "SCTP over UDP (RFC 6951) on loopback"})
	fmt.Printf("tern bench register on %s\n", report.ThisMachine())
	failures := 0
	for _, r := range runs {
		n, err := runRegister(ctx, r, doc)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		failures += n
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

func runRegister(ctx context.Context, r registerRun, doc *report.Doc) (failures int, err error) {
	core, err := startCoreProcess(ctx, r.UEs)
	if err != nil {
		return 0, err
	}
	defer core.stop()
	rssBefore := core.rss()

	cfg := sim.DefaultConfig()
	cfg.AMFAddr = core.n2
	cfg.Transport.UDPPort = core.udpPort
	cfg.UEs, cfg.Concurrency, cfg.GNBs = r.UEs, r.Concurrency, r.GNBs
	cfg.Scenario = sim.Scenario{sim.StepRegister}
	cfg.Timeout = 30 * time.Second
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		return 0, err
	}
	rssAfter := core.rss()

	title := fmt.Sprintf("\n%s: %d UEs, concurrency %d, %d gNBs", r.Name, r.UEs, r.Concurrency, r.GNBs)
	report.WriteTable(os.Stdout, title, res.Summaries)
	wall := res.Steps[0].Wall
	var reg report.Summary
	for _, s := range res.Summaries {
		doc.Add(withExtra(report.LatencyResult(s, r.Name, res.Recorder.Samples(s.Procedure)), map[string]any{"ues": r.UEs, "concurrency": r.Concurrency}))
		failures += s.Failures
		if s.Procedure == "registration" {
			reg = s
		}
	}
	fmt.Printf("  all %d registrations done in %v (%d ok, %d failed)\n", r.UEs, wall.Round(time.Microsecond), res.Steps[0].OK, res.Steps[0].Failed)
	doc.Add(report.Result{Name: "registration-all", Variant: r.Name, Unit: "ms", Count: 1, Failures: res.Steps[0].Failed,
		Median: float64(wall) / 1e6, P90: float64(wall) / 1e6, P99: float64(wall) / 1e6, Max: float64(wall) / 1e6})
	// The published single-UE figures compare only with one UE at a time.
	if reg.Count > 0 && r.Concurrency == 1 {
		fmt.Printf("  registration median %v: %.0fx faster than L25GC (136 ms), %.0fx faster than free5GC (240 ms) [published figures]\n",
			reg.Median.Round(time.Microsecond), float64(l25gcRegistration)/float64(reg.Median), float64(free5gcRegistration)/float64(reg.Median))
	}
	if r.Concurrency == 64 && r.UEs == 64 {
		fmt.Printf("  64 concurrent UEs in %v vs L25GC+ 349 ms [published]: %.0fx\n", wall.Round(time.Microsecond), float64(l25gcPlus64UEs)/float64(wall))
	}
	if rssBefore > 0 && rssAfter > 0 {
		registered := res.Steps[0].OK
		fmt.Printf("  core resident memory: %.1f MiB before, %.1f MiB with %d UEs registered: %s\n",
			float64(rssBefore)/(1<<20), float64(rssAfter)/(1<<20), registered, memoryPerUEs(rssBefore, rssAfter, registered))
		if per, ok := rssPerThousandUEs(rssBefore, rssAfter, registered); ok {
			doc.Add(report.Result{Name: "core-rss-per-1000-ues", Variant: r.Name, Unit: "bytes", Count: 1,
				Median: per, P90: per, P99: per, Max: per,
				Extra: map[string]any{"rss_before": rssBefore, "rss_after": rssAfter, "registered": registered}})
		}
	}
	return failures, nil
}

// minMemoryUEs is the fewest registered UEs the memory per UE is derived
// from. The core's resident size moves by a few MiB whatever the UEs
// cost (the garbage collector's heap target, pages touched once), while a
// UE costs kilobytes (docs/benchmarks.md: about 7 KiB). 1,000 UEs grow it
// by about 7 MiB, the size of that noise; 10,000 by about 70 MiB, which
// the noise moves by a few percent. Below that, scaling the growth to
// 1,000 UEs scales the noise (issue 37: 10 UEs gave a figure per 1,000).
const minMemoryUEs = 10_000

// rssPerThousandUEs is the core's resident memory growth per 1,000
// registered UEs, when enough registered to measure it.
func rssPerThousandUEs(before, after uint64, registered int) (float64, bool) {
	if registered < minMemoryUEs {
		return 0, false
	}
	return (float64(after) - float64(before)) / float64(registered) * 1000, true
}

// memoryPerUEs says what the resident memory growth is per 1,000 UEs, or
// why it is not given.
func memoryPerUEs(before, after uint64, registered int) string {
	per, ok := rssPerThousandUEs(before, after, registered)
	if !ok {
		return fmt.Sprintf("%d UEs are too few to measure memory per UE (the resident size moves by a few MiB whatever the UEs cost; at least %d are needed)",
			registered, minMemoryUEs)
	}
	return fmt.Sprintf("%.0f KiB per 1,000 registered UEs", per/1024)
}

func withExtra(r report.Result, extra map[string]any) report.Result {
	r.Extra = extra
	return r
}

// coreProcess is a `tern up` child with its own store and ports.
type coreProcess struct {
	cmd     *exec.Cmd
	dir     string
	n2      string
	udpPort int
}

func startCoreProcess(ctx context.Context, subscribers int) (*coreProcess, error) {
	dir, err := os.MkdirTemp("", "tern-bench-")
	if err != nil {
		return nil, err
	}
	port, err := freeport.UDP()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &coreProcess{dir: dir, n2: "127.0.0.1:38412", udpPort: port}
	p.cmd, err = startChild(ctx, []string{"up", "--store", filepath.Join(dir, "subscribers.db"),
		"--udp-port", strconv.Itoa(port), "--n2", p.n2, "--demo-subscribers", strconv.Itoa(subscribers), "--log-level", "error"},
		"tern core ready", 60*time.Second)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// rss is the child's resident set size in bytes, 0 if unknown.
func (p *coreProcess) rss() uint64 { return report.ResidentBytes(p.cmd.Process.Pid) }

func (p *coreProcess) stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(p.dir)
}
