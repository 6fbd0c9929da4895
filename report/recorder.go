// Package report records procedure latencies and writes them the way
// docs/benchmarks.md describes: a text table for people and a JSON
// document (bench, commit, machine, params, results) for scripts.
package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Recorder collects latency samples and failure counts per procedure.
// It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	procs map[string]*series
}

type series struct {
	samples  []time.Duration
	failures int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{procs: make(map[string]*series)} }

func (r *Recorder) get(name string) *series {
	s := r.procs[name]
	if s == nil {
		s = &series{}
		r.procs[name] = s
	}
	return s
}

// Observe records one successful run of procedure that took d.
func (r *Recorder) Observe(procedure string, d time.Duration) {
	r.mu.Lock()
	s := r.get(procedure)
	s.samples = append(s.samples, d)
	r.mu.Unlock()
}

// Fail records one failed run of procedure.
func (r *Recorder) Fail(procedure string) {
	r.mu.Lock()
	r.get(procedure).failures++
	r.mu.Unlock()
}

// Summary is the distribution of procedure (a zero one, named, when it
// never ran).
func (r *Recorder) Summary(procedure string) Summary {
	r.mu.Lock()
	s := r.procs[procedure]
	if s == nil {
		r.mu.Unlock()
		return Summary{Procedure: procedure}
	}
	samples, failures := slices.Clone(s.samples), s.failures
	r.mu.Unlock()
	return Summarize(procedure, samples, failures)
}

// Samples returns a copy of the successful samples of procedure.
func (r *Recorder) Samples(procedure string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.procs[procedure]; s != nil {
		return slices.Clone(s.samples)
	}
	return nil
}

// Summary is the distribution of one procedure's latency.
type Summary struct {
	Procedure string
	Count     int // successful runs
	Failures  int
	Median    time.Duration
	P90       time.Duration
	P99       time.Duration
	Max       time.Duration
}

// Summaries returns one Summary per procedure, sorted by name.
func (r *Recorder) Summaries() []Summary {
	r.mu.Lock()
	names := make([]string, 0, len(r.procs))
	for n := range r.procs {
		names = append(names, n)
	}
	r.mu.Unlock()
	sort.Strings(names)
	out := make([]Summary, 0, len(names))
	for _, n := range names {
		r.mu.Lock()
		s := r.procs[n]
		samples := slices.Clone(s.samples)
		failures := s.failures
		r.mu.Unlock()
		out = append(out, Summarize(n, samples, failures))
	}
	return out
}

// Summarize computes the distribution of samples (which it sorts in place).
func Summarize(procedure string, samples []time.Duration, failures int) Summary {
	slices.Sort(samples)
	s := Summary{Procedure: procedure, Count: len(samples), Failures: failures}
	if len(samples) == 0 {
		return s
	}
	s.Median = Quantile(samples, 0.5)
	s.P90 = Quantile(samples, 0.9)
	s.P99 = Quantile(samples, 0.99)
	s.Max = samples[len(samples)-1]
	return s
}

// Quantile returns the q-quantile (nearest rank) of sorted samples.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// WriteTable prints summaries as an aligned table, each duration in the
// unit that suits it (Duration).
// A table with failures says so on its last line.
func WriteTable(w io.Writer, title string, sums []Summary) {
	if title != "" {
		fmt.Fprintln(w, title)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "procedure\tcount\tfailures\tmedian\tp90\tp99\tmax\t")
	failed := 0
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", s.Procedure, s.Count, s.Failures,
			Duration(s.Median), Duration(s.P90), Duration(s.P99), Duration(s.Max))
		failed += s.Failures
	}
	tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "FAILURES: %d procedure runs failed\n", failed)
	}
}

// Duration renders d for people with three or four significant digits in
// µs, ms or s ("185.7µs", "131.4ms", "2.05s"); time.Duration's own String
// gives every nanosecond ("131.370123ms").
func Duration(d time.Duration) string {
	switch a := d.Abs(); {
	case a == 0:
		return "0"
	case a < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case a < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// Counts renders named counters as "a 1, b 2" in key order, leaving out
// zeros; "none" when nothing is left (fmt's %v would print "map[]").
func Counts(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Time runs once n times after n/10 warm-up runs and returns how long each
// counted run took: the loop of a round-trip reference. It stops at the
// first error.
func Time(n int, once func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n + n/10 {
		start := time.Now()
		if err := once(); err != nil {
			return nil, fmt.Errorf("run %d: %w", i, err)
		}
		if i >= n/10 {
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}
