package bench

import (
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
	"github.com/tern5g/tern/classify/workload"
	"github.com/tern5g/tern/internal/syncbuf"
)

// TestSessionJob: a per-session table is measured with ForTable beside
// the default classifiers, on a replayed window of its trace, and every
// classifier agrees with Linear there.
func TestSessionJob(t *testing.T) {
	w := workload.Session(6, 6)
	j := job{name: w.Name, rules: w.Rules, trace: w.Trace, session: true}
	kinds := j.kinds(classify.Kinds, true)
	if kinds[len(kinds)-1] != classify.KindForTable || len(kinds) != len(classify.Kinds)+1 {
		t.Fatalf("session kinds %v", kinds)
	}
	if got := j.kinds([]classify.Kind{classify.KindLinear}, false); !slices.Equal(got, []classify.Kind{classify.KindLinear}) {
		t.Fatalf("asked-for kinds became %v", got)
	}
	if got := (job{}).kinds(classify.Kinds, true); !slices.Equal(got, classify.Kinds) {
		t.Fatalf("ClassBench kinds %v", got)
	}
	rows, err := runJob(Config{Passes: 2, Updates: 3, PassBudget: time.Second}, kinds, j)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Headers != sessionHeaders || r.Walks != len(w.Trace)/sessionHeaders {
			t.Errorf("%s: %d headers walked %d times, want %d walked %d times", r.Kind, r.Headers, r.Walks, sessionHeaders, len(w.Trace)/sessionHeaders)
		}
		if r.Mismatches != 0 || len(r.LookupNS) != 2 || len(r.InsertUS) != 3 || len(r.DeleteUS) != 3 {
			t.Errorf("%s: %d mismatches, %d passes, %d/%d updates", r.Kind, r.Mismatches, len(r.LookupNS), len(r.InsertUS), len(r.DeleteUS))
		}
		// Linux times every pass on the thread's CPU clock too, and the
		// thread cannot run longer than the wall clock it ran in.
		if runtime.GOOS == "linux" {
			if len(r.LookupCPU) != 2 {
				t.Errorf("%s: %d CPU-time passes, want 2", r.Kind, len(r.LookupCPU))
			}
			for p := range r.LookupCPU {
				if r.LookupCPU[p] <= 0 || r.LookupCPU[p] > r.LookupNS[p]*1.01 {
					t.Errorf("%s pass %d: CPU %.1f ns against wall %.1f ns", r.Kind, p, r.LookupCPU[p], r.LookupNS[p])
				}
			}
			if r.Steal < 0 || r.Steal > 1 {
				t.Errorf("%s: steal share %v", r.Kind, r.Steal)
			}
		}
	}
}

// TestRunRounds: Run measures every workload in rounds, each row getting
// one pass a round, and the classifiers agree with Linear.
func TestRunRounds(t *testing.T) {
	dir := classbench.TestDir()
	if err := classbench.Available(dir, "acl1_1k"); err != nil {
		t.Skipf("no ClassBench sets: %v", err)
	}
	cfg := Config{ClassBenchDir: dir, Sets: []string{"acl1_1k", "fw1_1k"}, Kinds: []classify.Kind{classify.KindLinear, classify.KindRankedTuple},
		Passes: 3, Updates: 5, MaxTrace: 2000, PassBudget: time.Second}
	rows, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		if len(r.LookupNS) != 3 || r.Mismatches != 0 || len(r.InsertUS) != 5 || r.Headers != 2000 {
			t.Errorf("%s %s: %d passes, %d mismatches, %d inserts, %d headers", r.Workload, r.Kind, len(r.LookupNS), r.Mismatches, len(r.InsertUS), r.Headers)
		}
	}
}

// TestUpdatesCycle: a table with fewer rules than the updates asked for
// gets them all, cycling its rules in and out (an error would say a rule
// was inserted twice or deleted while out).
func TestUpdatesCycle(t *testing.T) {
	for _, n := range []int{2, 4, 5} {
		w := workload.Session(n, uint64(n))
		for _, k := range []classify.Kind{classify.KindForTable, classify.KindLinear, classify.KindRankedTuple} {
			ins, del, err := updates(k, w.Rules, 9)
			if err != nil {
				t.Fatalf("%d rules, %s: %v", n, k, err)
			}
			if len(ins) != 9 || len(del) != 9 {
				t.Errorf("%d rules, %s: %d inserts and %d deletes timed, want 9", n, k, len(ins), len(del))
			}
		}
	}
	if ins, del, err := updates(classify.KindLinear, workload.Session(2, 1).Rules[:1], 9); err != nil || len(ins)+len(del) != 0 {
		t.Errorf("one rule: %d inserts, %d deletes, %v; want none", len(ins), len(del), err)
	}
}

// TestProgressNamesLongSteps: a step that lasts is named on the log while
// it runs, with how long so far; a short one is not (issue 37: bench
// classify --quick was silent for 27 s while it built a classifier).
func TestProgressNamesLongSteps(t *testing.T) {
	var log syncbuf.Buffer
	p := startProgress(&log, 20*time.Millisecond)
	p.begin("building partitionsort")
	time.Sleep(120 * time.Millisecond)
	p.begin("a short step")
	p.end()
	out := log.String()
	if !strings.Contains(out, "... building partitionsort (") {
		t.Errorf("a 120 ms step with reminders every 20 ms left no line: %q", out)
	}
	if strings.Contains(out, "a short step") {
		t.Errorf("a step that ended at once was reminded of: %q", out)
	}
	// Without a log there is nothing to write to, and end still returns.
	startProgress(nil, time.Millisecond).end()
}

// overlapWriter counts the writes that began while another was under way.
type overlapWriter struct {
	busy, overlaps, writes atomic.Int32
}

func (w *overlapWriter) Write(b []byte) (int, error) {
	if w.busy.Add(1) > 1 {
		w.overlaps.Add(1)
	}
	time.Sleep(100 * time.Microsecond)
	w.busy.Add(-1)
	w.writes.Add(1)
	return len(b), nil
}

// TestProgressWritesOneAtATime: the run's own lines and the reminders,
// written from two goroutines, reach Config.Log one write at a time, so
// a writer that is not safe for concurrent use (a bytes.Buffer) is fine.
func TestProgressWritesOneAtATime(t *testing.T) {
	var w overlapWriter
	p := startProgress(&w, time.Millisecond)
	p.begin("a long step")
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) {
		p.printf("a line of the run\n")
	}
	p.end()
	if n := w.overlaps.Load(); n != 0 {
		t.Errorf("%d of %d writes began while another was under way", n, w.writes.Load())
	}
}
