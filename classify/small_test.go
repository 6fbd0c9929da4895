package classify_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/workload"
)

// TestForTableRandomAgree checks ForTable's small index against the
// reference across random tables at sizes around its thresholds (the
// plain-scan leaf, the first splits, the switch to RankedTuple).
func TestForTableRandomAgree(t *testing.T) {
	for seed := range uint64(24) {
		g := gen{rand.New(rand.NewPCG(seed, 17))}
		n := []int{0, 5, 6, 7, 8, 12, 33, 64, 100, 127, 128, 129}[seed%12]
		rules := make([]classify.Rule, n)
		for i := range rules {
			rules[i] = g.rule(uint32(i * 5))
		}
		ref := &reference{rules: slices.Clone(rules)}
		ref.sort()
		c, err := classify.ForTable(rules, classify.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			h := g.header(rules)
			if got, want := result(c.Lookup(&h)), result(ref.lookup(&h)); got != want {
				t.Fatalf("seed %d n %d: got %d, want %d for %+v", seed, n, got, want, h)
			}
		}
	}
}

// TestForTableWorkloadsAgree checks the 5G tables, whose shapes the index
// is tuned for, against Linear on their traces.
func TestForTableWorkloadsAgree(t *testing.T) {
	var ws []workload.Workload
	for _, n := range []int{2, 4, 8, 16, 32, 64, 100, 128} {
		ws = append(ws, workload.Session(n, uint64(n)+100))
	}
	ws = append(ws, workload.HomeGateway(120, 3), workload.Sessions(60, 4))
	for _, w := range ws {
		lin, err := classify.NewLinear(w.Rules)
		if err != nil {
			t.Fatal(err)
		}
		c, err := classify.ForTable(w.Rules, classify.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range w.Trace[:5000] {
			h := w.Trace[i]
			if i%2 == 1 { // also near misses: another port, QFI, TEID
				h.DstPort++
				h.QFI ^= 1
				h.TEID ^= uint32(i & 1)
			}
			if got, want := result(c.Lookup(&h)), result(lin.Lookup(&h)); got != want {
				t.Fatalf("%s header %d: got %d, linear %d", w.Name, i, got, want)
			}
		}
	}
}

// TestForTableChurnAgree grows tables from empty past the switch to
// RankedTuple and shrinks them again, checking lookups after every step.
func TestForTableChurnAgree(t *testing.T) {
	for seed := range uint64(2) {
		g := gen{rand.New(rand.NewPCG(seed, 23))}
		c, err := classify.ForTable(nil, classify.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		ref := &reference{}
		next := uint32(0)
		for step := range 400 {
			grow := step < 200 && g.r.IntN(3) != 0 || step >= 200 && g.r.IntN(4) == 0
			if !grow && len(ref.rules) > 0 {
				id := ref.rules[g.r.IntN(len(ref.rules))].ID
				ref.delete(id)
				if err := c.Delete(id); err != nil {
					t.Fatalf("delete %d: %v", id, err)
				}
			} else {
				r := g.rule(next)
				next++
				ref.rules = append(ref.rules, r)
				ref.sort()
				if err := c.Insert(r); err != nil {
					t.Fatalf("insert: %v", err)
				}
			}
			for range 6 {
				h := g.header(ref.rules)
				if got, want := result(c.Lookup(&h)), result(ref.lookup(&h)); got != want {
					t.Fatalf("seed %d step %d (%d rules, %s): got %d, want %d", seed, step, len(ref.rules), c.Name(), got, want)
				}
			}
			if c.Len() != len(ref.rules) {
				t.Fatalf("Len %d, want %d", c.Len(), len(ref.rules))
			}
		}
	}
}

// TestForTableSessionChurnAgree adds and removes SDF PDRs of a session
// the way a UPF does on PFCP session modification.
func TestForTableSessionChurnAgree(t *testing.T) {
	w := workload.Session(100, 9)
	base := w.Rules[len(w.Rules)-2:] // the defaults
	c, err := classify.ForTable(base, classify.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	in := map[uint32]bool{}
	rng := rand.New(rand.NewPCG(1, 1))
	for step := range 400 {
		r := w.Rules[rng.IntN(len(w.Rules)-2)]
		toggle(t, c, in, r)
		cur := slices.Clone(base)
		for _, x := range w.Rules {
			if in[x.ID] {
				cur = append(cur, x)
			}
		}
		lin, err := classify.NewLinear(cur)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			h := &w.Trace[(step*50+i)%len(w.Trace)]
			if got, want := result(c.Lookup(h)), result(lin.Lookup(h)); got != want {
				t.Fatalf("step %d (%d rules): got %d, linear %d", step, len(cur), got, want)
			}
		}
	}
}

func TestForTableSmallShape(t *testing.T) {
	for _, n := range []int{2, 4} {
		c, _ := classify.ForTable(workload.Session(n, 1).Rules, classify.Hints{})
		if d, _, _ := c.(*classify.Auto).SmallShape(); d != 0 {
			t.Errorf("session of %d PDRs: index depth %d, want the plain scan", n, d)
		}
	}
	w := workload.Session(100, 1)
	c, _ := classify.ForTable(w.Rules, classify.Hints{})
	tested := 0
	for i := range w.Trace[:2000] {
		_, k := c.(*classify.Auto).SmallCost(&w.Trace[i])
		tested += k
	}
	// A scan tests about half the table; the index must narrow it down.
	if mean := float64(tested) / 2000; mean > 8 {
		t.Errorf("session of 100 PDRs: %.1f rules tested per lookup", mean)
	}
}

func TestForTableLookupDoesNotAllocate(t *testing.T) {
	for _, n := range []int{4, 32, 100} {
		w := workload.Session(n, 3)
		c, _ := classify.ForTable(w.Rules, classify.Hints{})
		i := 0
		if a := testing.AllocsPerRun(1000, func() { c.Lookup(&w.Trace[i%64]); i++ }); a != 0 {
			t.Errorf("session %d: %v allocations per lookup", n, a)
		}
	}
}

// TestForTableConcurrentUpdates checks ForTable's small tables under the
// concurrency guarantee of TestConcurrentUpdates, crossing the switch to
// RankedTuple as churn grows the table.
func TestForTableConcurrentUpdates(t *testing.T) {
	for _, sizes := range [][2]int{{6, 8}, {40, 40}, {110, 30}} {
		t.Run(fmt.Sprintf("%d+%d", sizes[0], sizes[1]), func(t *testing.T) {
			cc := newConcurrentCase(gen{rand.New(rand.NewPCG(uint64(sizes[0]), 5))}, sizes[0], sizes[1])
			c, err := classify.ForTable(cc.stable, classify.Hints{})
			if err != nil {
				t.Fatal(err)
			}
			cc.run(t, c.Name(), c, 60)
		})
	}
}

// Every update rebuilds the small index, so its build work is bounded
// whatever the rules (an SMF may send any): adversarial random tables stop
// splitting at the budget (overshooting by at most one evaluation), and
// still agree with the reference; real PDR tables never reach it.
func TestForTableBuildWorkBounded(t *testing.T) {
	const maxRules = 128
	slack := 2*maxRules + maxRules*maxRules // one evaluation: a pass over the rules, one agreement test per key
	for _, n := range []int{40, 64, 100, maxRules} {
		most := 0
		for seed := range 10 {
			g := gen{rand.New(rand.NewPCG(uint64(seed), uint64(n)))}
			rules := make([]classify.Rule, n)
			for i := range rules {
				rules[i] = g.rule(uint32(i))
			}
			c, err := classify.ForTable(rules, classify.Hints{})
			if err != nil {
				t.Fatal(err)
			}
			a := c.(*classify.Auto)
			w := a.SmallWork()
			if w > classify.SmallBuildWork+slack {
				t.Fatalf("%d rules, seed %d: build took %d steps, budget %d", n, seed, w, classify.SmallBuildWork)
			}
			most = max(most, w)
			ref := &reference{rules: slices.Clone(rules)}
			ref.sort()
			for range 200 {
				h := g.header(rules)
				if id, ok := c.Lookup(&h); result(id, ok) != result(ref.lookup(&h)) {
					t.Fatalf("%d rules, seed %d: lookup %+v = %d, want %d", n, seed, h, result(id, ok), result(ref.lookup(&h)))
				}
			}
		}
		t.Logf("random tables of %d rules: at most %d build steps (budget %d)", n, most, classify.SmallBuildWork)
	}
	for _, n := range []int{64, 100} {
		w := workload.Session(n, uint64(n))
		c, err := classify.ForTable(w.Rules, classify.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		a := c.(*classify.Auto)
		work := a.SmallWork()
		if work >= classify.SmallBuildWork {
			t.Errorf("session table of %d PDRs used the whole build budget (%d steps)", n, work)
		}
		t.Logf("session table of %d PDRs: %d build steps", n, work)
		if depth, _, _ := a.SmallShape(); depth < 1 {
			t.Errorf("session table of %d PDRs not indexed (depth %d)", n, depth)
		}
	}
}

// TestHomeGatewayChurnAgree runs home-gateway tables, whose long port
// buckets split down to exact field lengths (tssCore level 2), through
// RankedTuple while half their rules are deleted and put back, checking
// every lookup against Linear.
func TestHomeGatewayChurnAgree(t *testing.T) {
	for _, n := range []int{300, 1000} {
		w := workload.HomeGateway(n, uint64(n)+7)
		c, err := classify.NewRankedTuple(w.Rules)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(n), 9))
		live := slices.Clone(w.Rules)
		check := func(stage string) {
			lin, err := classify.NewLinear(live)
			if err != nil {
				t.Fatal(err)
			}
			for i := range w.Trace[:3000] {
				h := w.Trace[i]
				if i%2 == 1 {
					h.DstPort++
					h.SrcIP.Lo ^= uint64(i & 0xff)
				}
				if got, want := result(c.Lookup(&h)), result(lin.Lookup(&h)); got != want {
					t.Fatalf("%s %s header %d: got %d, linear %d", w.Name, stage, i, got, want)
				}
			}
		}
		check("built")
		var out []classify.Rule
		for range len(live) / 2 {
			i := r.IntN(len(live))
			if err := c.Delete(live[i].ID); err != nil {
				t.Fatal(err)
			}
			out = append(out, live[i])
			live = slices.Delete(live, i, i+1)
		}
		check("halved")
		for _, x := range out[:len(out)/2] {
			if err := c.Insert(x); err != nil {
				t.Fatal(err)
			}
			live = append(live, x)
		}
		check("refilled")
	}
}
