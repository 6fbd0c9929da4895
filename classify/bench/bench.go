// Package bench measures the classifiers on ClassBench and 5G workloads:
// lookup ns/packet (median of passes over the trace, classifiers and
// workloads interleaved), build time, insert and delete latency after building from
// half the rules, and memory. It writes the report document, a text table
// and a Fig. 11-style plot.
package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
	"github.com/tern5g/tern/classify/workload"
	"github.com/tern5g/tern/report"
)

// Config selects what to run.
type Config struct {
	ClassBenchDir string
	Sets          []string        // ClassBench set names; empty: all
	Workloads     bool            // the 5G workloads
	Sweep         bool            // first-N-rule prefixes of acl1_1k, for the plot
	Kinds         []classify.Kind // empty: all
	Passes        int             // lookup passes over each trace
	Updates       int             // timed inserts and deletes per classifier
	MaxTrace      int             // headers per pass (0: whole trace)
	// PassBudget bounds one lookup pass: a classifier whose first 2,000
	// headers show it would take longer runs on a prefix of the trace
	// (Linear at 100k rules costs ~100 us a packet). Default 0.5 s.
	PassBudget time.Duration
	// Log gets the run's progress (nil: none): each workload as it is
	// prepared, each round, and while a step lasts, every ProgressEvery
	// (default DefaultProgressEvery) a line naming it. The run writes to
	// it from two goroutines, one write at a time: it need not be safe
	// for concurrent use.
	Log           io.Writer
	ProgressEvery time.Duration
}

// Row is one classifier on one workload.
type Row struct {
	Workload   string
	Kind       classify.Kind
	Rules      int
	Headers    int       // distinct headers per lookup pass
	Walks      int       // times a pass walks them (per-session workloads replay a window)
	LookupNS   []float64 // per pass, wall time
	LookupCPU  []float64 // per pass, the thread's CPU time (ns/packet; empty where unmeasured)
	Steal      float64   // share of the job's lookup passes the hypervisor stole (-1: unknown)
	BuildMS    float64
	InsertUS   []float64
	DeleteUS   []float64
	Memory     int
	HeapBytes  int // runtime-measured growth of the live heap for the build
	Mismatches int // lookups that disagreed with Linear on the checked headers
}

// Median lookup.
func (r *Row) Median() float64 { return median(r.LookupNS) }

type job struct {
	name  string
	rules []classify.Rule
	trace []classify.Header
	// session marks a per-session table: ForTable (what the UPF runs for
	// these) joins the default classifiers, and lookups replay the first
	// sessionHeaders headers, as a UPF classifies headers it has just
	// parsed; streaming 8 MB of headers from memory would add more to
	// every lookup than a 2-PDR table costs.
	session bool
}

// sessionHeaders is the replayed window of a per-session workload's
// trace (40 KB: it stays in L1).
const sessionHeaders = 512

// Run measures every selected workload and returns the rows.
func Run(cfg Config) ([]Row, error) {
	if cfg.Passes <= 0 {
		cfg.Passes = 5
	}
	if cfg.Updates <= 0 {
		cfg.Updates = 1000
	}
	if cfg.PassBudget <= 0 {
		cfg.PassBudget = 500 * time.Millisecond
	}
	defaultKinds := len(cfg.Kinds) == 0
	if defaultKinds {
		cfg.Kinds = classify.Kinds
	}
	var jobs []func() (job, error)
	if cfg.Sweep {
		for _, n := range []int{2, 4, 8, 16, 32, 64, 128, 256, 512} {
			jobs = append(jobs, func() (job, error) {
				set, err := classbench.Load(cfg.ClassBenchDir, "acl1_1k")
				if err != nil {
					return job{}, err
				}
				return job{name: fmt.Sprintf("acl1_first%d", n), rules: set.Rules[:n], trace: headers(set.Trace)}, nil
			})
		}
	}
	for _, name := range cfg.Sets {
		jobs = append(jobs, func() (job, error) {
			set, err := classbench.Load(cfg.ClassBenchDir, name)
			if err != nil {
				return job{}, err
			}
			return job{name: name, rules: set.Rules, trace: headers(set.Trace)}, nil
		})
	}
	if cfg.Workloads {
		for _, n := range []int{2, 4, 8, 16, 32, 64, 100} {
			jobs = append(jobs, func() (job, error) {
				w := workload.Session(n, uint64(n))
				return job{name: w.Name, rules: w.Rules, trace: w.Trace, session: true}, nil
			})
		}
		jobs = append(jobs,
			func() (job, error) {
				w := workload.HomeGateway(500, 1)
				return job{name: w.Name, rules: w.Rules, trace: w.Trace, session: true}, nil
			},
			func() (job, error) {
				w := workload.Sessions(100_000, 1)
				return job{name: w.Name, rules: w.Rules, trace: w.Trace}, nil
			},
		)
	}
	// Every workload is prepared first (built, checked against Linear,
	// its updates timed); then each round runs one lookup pass of every
	// classifier on every workload, so that a row's passes are spread
	// over the whole run. On a shared host, other tenants slow this core
	// by up to 2x in bursts of a fraction of a second to a few seconds
	// (README, Benchmarks): one workload's passes run back to back can
	// all fall in one burst, while spread out a burst lands in a minority
	// of them, which the median leaves out. The cost: every workload's
	// classifiers stay live until the rounds end (the default run peaks
	// at about 6 GB resident).
	p := startProgress(cfg.Log, cfg.ProgressEvery)
	defer p.end()
	logf := p.printf
	var ms []*measure
	for i, mk := range jobs {
		p.begin("loading workload %d of %d", i+1, len(jobs))
		j, err := mk()
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if cfg.MaxTrace > 0 && len(j.trace) > cfg.MaxTrace {
			j.trace = j.trace[:cfg.MaxTrace]
		}
		kinds := j.kinds(cfg.Kinds, defaultKinds)
		logf("%s: %d rules, %d headers (workload %d of %d)\n", j.name, len(j.rules), len(j.trace), i+1, len(jobs))
		m, err := prepare(cfg, kinds, j, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	for r := range cfg.Passes {
		p.begin("lookup round %d of %d", r+1, cfg.Passes)
		for _, m := range ms {
			m.round()
		}
		logf("round %d of %d done\n", r+1, cfg.Passes)
	}
	p.end()
	var rows []Row
	for _, m := range ms {
		rs := m.finish()
		logf("%s:\n", m.j.name)
		for _, r := range rs {
			logf("  %-14s lookup %8.1f ns  build %8.1f ms  insert %7.2f us  delete %7.2f us  mem %6.2f MB\n",
				r.Kind, r.Median(), r.BuildMS, median(r.InsertUS), median(r.DeleteUS), float64(r.Memory)/1e6)
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// kinds are the classifiers a job measures: those asked for, and by
// default ForTable too on per-session tables.
func (j job) kinds(asked []classify.Kind, byDefault bool) []classify.Kind {
	if j.session && byDefault {
		return append(slices.Clone(asked), classify.KindForTable)
	}
	return asked
}

func headers(ps []classbench.Packet) []classify.Header {
	hs := make([]classify.Header, len(ps))
	for i := range ps {
		hs[i] = ps[i].Header
	}
	return hs
}

// runJob measures one workload on its own: prepare, every round, finish.
func runJob(cfg Config, kinds []classify.Kind, j job) ([]Row, error) {
	p := startProgress(cfg.Log, cfg.ProgressEvery)
	defer p.end()
	m, err := prepare(cfg, kinds, j, p)
	if err != nil {
		return nil, err
	}
	for range cfg.Passes {
		m.round()
	}
	return m.finish(), nil
}

// measure is one workload's classifiers under measurement.
type measure struct {
	j      job
	rows   []Row
	cs     []classify.Classifier
	traces [][]classify.Header // per classifier: the headers one walk of a pass looks up
	walks  int                 // walks a pass makes
	cpus   []int               // the CPUs this thread may run on
	ticks  report.CPUTicks     // summed over the lookup passes
	stolen bool                // ticks are known
}

// prepare builds the classifiers of job j, sizes their passes, checks
// them against Linear and readies their updates, naming each step to p.
func prepare(cfg Config, kinds []classify.Kind, j job, p *progress) (*measure, error) {
	m := &measure{j: j, rows: make([]Row, len(kinds)), cs: make([]classify.Classifier, len(kinds)),
		traces: make([][]classify.Header, len(kinds)),
		cpus:   report.AffinityCPUs(), stolen: true}
	// A pass is one walk of the trace, or for a session's replayed window
	// as many walks as its whole trace has headers.
	m.walks = 1
	if j.session && len(j.trace) > sessionHeaders {
		m.walks = len(j.trace) / sessionHeaders
		j.trace = j.trace[:sessionHeaders]
	}
	for i, k := range kinds {
		p.begin("%s: building %s from %d rules", j.name, k, len(j.rules))
		before := liveHeap()
		start := time.Now()
		c, err := classify.Build(k, j.rules)
		if err != nil {
			return nil, fmt.Errorf("bench: %s on %s: %w", k, j.name, err)
		}
		build := time.Since(start)
		heap := liveHeap() - before
		m.cs[i] = c
		m.traces[i] = j.trace
		probe := j.trace[:min(len(j.trace), 2000)]
		start = time.Now()
		for h := range probe {
			c.Lookup(&probe[h])
		}
		per := time.Since(start) / time.Duration(max(len(probe), 1))
		if n := int(cfg.PassBudget / max(per, 1)); n < len(j.trace)*m.walks {
			m.traces[i] = j.trace[:max(n/m.walks, min(1000, len(j.trace)))]
		}
		m.rows[i] = Row{Workload: j.name, Kind: k, Rules: len(j.rules), Headers: len(m.traces[i]), Walks: m.walks,
			BuildMS: float64(build) / 1e6, Memory: c.MemoryBytes(), HeapBytes: heap}
	}
	// Every classifier must give Linear's answer on the headers every
	// classifier ran.
	if li := slices.Index(kinds, classify.KindLinear); li >= 0 {
		p.begin("%s: checking every classifier against linear", j.name)
		check := m.traces[li]
		for _, tr := range m.traces {
			if len(tr) < len(check) {
				check = tr
			}
		}
		for i, c := range m.cs {
			for h := range check {
				a, aok := m.cs[li].Lookup(&check[h])
				b, bok := c.Lookup(&check[h])
				if a != b || aok != bok {
					m.rows[i].Mismatches++
				}
			}
		}
	}
	// Updates: build from half the rules, then alternate timed inserts of
	// the other half and deletes of the built half (cycling through them
	// on tables smaller than the updates asked for), back to back (unlike
	// lookups, not spread over the rounds: the update path's caches would
	// start cold after every other workload's passes).
	for i, k := range kinds {
		n := cfg.Updates
		if k == classify.KindLinear && len(j.rules) > 10_000 {
			n = min(n, 200) // each Linear update copies the whole list
		}
		p.begin("%s: timing %d inserts and deletes of %s", j.name, n, k)
		ins, del, err := updates(k, j.rules, n)
		if err != nil {
			return nil, err
		}
		m.rows[i].InsertUS, m.rows[i].DeleteUS = ins, del
	}
	return m, nil
}

// round runs one lookup pass of every classifier, each timed twice: wall
// time, and the CPU time of the thread (held to it), which leaves out what
// the hypervisor or other processes took; the CPUs' steal ticks around
// the passes say how much that was. A replayed window is walked once
// untimed first, as a UPF classifies headers it has just parsed (other
// workloads' passes have since pushed it out of the caches).
func (m *measure) round() {
	runtime.LockOSThread()
	before, err := report.ReadCPUTicks(m.cpus)
	for i, c := range m.cs {
		tr := m.traces[i]
		if m.walks > 1 {
			walk(c, tr, 1)
		}
		start, cpu := time.Now(), threadCPU()
		walk(c, tr, m.walks)
		wall, cpu := time.Since(start), threadCPU()-cpu
		k := float64(m.walks * len(tr))
		m.rows[i].LookupNS = append(m.rows[i].LookupNS, float64(wall)/k)
		if cpu > 0 {
			m.rows[i].LookupCPU = append(m.rows[i].LookupCPU, float64(cpu)/k)
		}
	}
	after, err2 := report.ReadCPUTicks(m.cpus)
	runtime.UnlockOSThread()
	if err != nil || err2 != nil {
		m.stolen = false
	} else {
		m.ticks.Busy += after.Busy - before.Busy
		m.ticks.Idle += after.Idle - before.Idle
		m.ticks.Steal += after.Steal - before.Steal
	}
}

// walk looks up every header of tr, times over.
func walk(c classify.Classifier, tr []classify.Header, times int) (sink uint32) {
	for range times {
		for h := range tr {
			id, _ := c.Lookup(&tr[h])
			sink += id
		}
	}
	return sink
}

// finish returns the rows, and lets the classifiers go.
func (m *measure) finish() []Row {
	steal := -1.0
	if m.stolen {
		steal = report.StealShare(report.CPUTicks{}, m.ticks)
	}
	for i := range m.rows {
		m.rows[i].Steal = steal
	}
	m.cs = nil
	return m.rows
}

func updates(k classify.Kind, rules []classify.Rule, n int) (ins, del []float64, err error) {
	var built, rest []classify.Rule
	for i := range rules {
		if i%2 == 0 {
			built = append(built, rules[i])
		} else {
			rest = append(rest, rules[i])
		}
	}
	c, err := classify.Build(k, built)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %s: %w", k, err)
	}
	// Start the timed updates on a collected heap: with every workload's
	// classifiers live, a collection that began among them would time
	// write barriers and mark assists, not the classifier.
	runtime.GC()
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
	rng.Shuffle(len(built), func(a, b int) { built[a], built[b] = built[b], built[a] })
	// A small table has fewer rules than updates to time (a 4-PDR session
	// has two of each): once every pair has gone, the rules inserted are
	// the ones to delete, and the deleted ones go back in.
	pairs := min(len(rest), len(built))
	if pairs == 0 {
		return nil, nil, nil
	}
	for i := 0; i < n; i++ {
		j := i % pairs
		if j == 0 && i > 0 {
			rest, built = built, rest
		}
		start := time.Now()
		err := c.Insert(rest[j])
		d := time.Since(start)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: %s insert: %w", k, err)
		}
		ins = append(ins, float64(d)/1e3)
		start = time.Now()
		err = c.Delete(built[j].ID)
		d = time.Since(start)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: %s delete: %w", k, err)
		}
		del = append(del, float64(d)/1e3)
	}
	return ins, del, nil
}

func liveHeap() int {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.HeapAlloc)
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// Results turns rows into report results.
func Results(rows []Row) []report.Result {
	var out []report.Result
	dist := func(name string, r *Row, unit string, xs []float64, extra map[string]any) report.Result {
		return report.Result{Name: name + "/" + r.Workload, Variant: string(r.Kind), Unit: unit, Count: len(xs),
			Failures: r.Mismatches, Median: median(xs), P90: quantile(xs, 0.9), P99: quantile(xs, 0.99),
			Max: quantile(xs, 1), Samples: xs, Extra: extra}
	}
	for i := range rows {
		r := &rows[i]
		m := r.Median()
		out = append(out,
			dist("lookup", r, "ns", r.LookupNS, map[string]any{"rules": r.Rules, "headers": r.Headers, "walks": r.Walks, "mpps": 1e3 / m,
				"cpu_ns": median(r.LookupCPU), "cpu_samples": r.LookupCPU, "steal_share": r.Steal}),
			dist("insert", r, "us", r.InsertUS, map[string]any{"rules": r.Rules}),
			dist("delete", r, "us", r.DeleteUS, map[string]any{"rules": r.Rules}),
			report.Result{Name: "build/" + r.Workload, Variant: string(r.Kind), Unit: "ms", Count: 1, Median: r.BuildMS, Max: r.BuildMS},
			report.Result{Name: "memory/" + r.Workload, Variant: string(r.Kind), Unit: "bytes", Count: 1,
				Median: float64(r.Memory), Max: float64(r.Memory), Extra: map[string]any{"heap_bytes": r.HeapBytes}},
		)
	}
	return out
}

// WriteTable prints one line per workload and classifier, and how much
// of the lookup passes the hypervisor stole.
func WriteTable(w io.Writer, machine string, rows []Row) {
	fmt.Fprintf(w, "PDR classification (%s); lookup = median ns/packet over passes (wall; cpu: the thread's CPU time), updates = median us\n", machine)
	fmt.Fprintf(w, "%-16s %-14s %7s %10s %8s %8s %10s %9s %9s %10s %6s\n",
		"workload", "classifier", "rules", "lookup ns", "cpu ns", "Mpps", "build ms", "insert us", "delete us", "memory MB", "wrong")
	fmt.Fprintln(w, strings.Repeat("-", 117))
	lo, hi := 2.0, -1.0
	for i := range rows {
		r := &rows[i]
		m := r.Median()
		cpu := "-"
		if len(r.LookupCPU) > 0 {
			cpu = fmt.Sprintf("%.1f", median(r.LookupCPU))
		}
		fmt.Fprintf(w, "%-16s %-14s %7d %10.1f %8s %8.2f %10.1f %9.3f %9.3f %10.2f %6d\n",
			r.Workload, r.Kind, r.Rules, m, cpu, 1e3/m, r.BuildMS, median(r.InsertUS), median(r.DeleteUS), float64(r.Memory)/1e6, r.Mismatches)
		if r.Steal >= 0 {
			lo, hi = min(lo, r.Steal), max(hi, r.Steal)
		}
	}
	if hi >= 0 {
		fmt.Fprintf(w, "hypervisor steal during the lookup passes: %.1f-%.1f%% of the time (per workload)\n", 100*lo, 100*hi)
	}
}
