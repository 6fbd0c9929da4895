package classify_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

// TestRankedTupleEveryGridAgrees checks each grid a build may choose
// against the reference, through random tables and churn: the choice
// must change only speed.
func TestRankedTupleEveryGridAgrees(t *testing.T) {
	for gi := range classify.GridChoices {
		for seed := range uint64(3) {
			g := gen{rand.New(rand.NewPCG(seed, uint64(gi)))}
			rules := make([]classify.Rule, 300)
			for i := range rules {
				rules[i] = g.rule(uint32(i))
			}
			c, err := classify.NewRankedTupleGrid(rules, gi)
			if err != nil {
				t.Fatal(err)
			}
			ref := &reference{rules: slices.Clone(rules)}
			ref.sort()
			in := map[uint32]bool{}
			for _, r := range rules {
				in[r.ID] = true
			}
			next := uint32(len(rules))
			for step := range 3000 {
				if step%3 == 0 {
					r := g.rule(next)
					next++
					if err := c.Insert(r); err != nil {
						t.Fatal(err)
					}
					ref.rules = append(ref.rules, r)
					ref.sort()
				} else if step%3 == 1 && len(ref.rules) > 0 {
					id := ref.rules[g.r.IntN(len(ref.rules))].ID
					if err := c.Delete(id); err != nil {
						t.Fatal(err)
					}
					ref.delete(id)
				}
				h := g.header(ref.rules)
				if got, want := result(c.Lookup(&h)), result(ref.lookup(&h)); got != want {
					t.Fatalf("grid %v seed %d step %d: got %d, want %d for %+v", c.Grid(), seed, step, got, want, h)
				}
			}
		}
	}
}

// TestChooseGridSeparatesHosts: hosts of one /16 all share a key on the
// default grid (/0, /8, /16), which sends every lookup through a long
// chain or a port split; the build must choose a grid that keys /32.
func TestChooseGridSeparatesHosts(t *testing.T) {
	var rules []classify.Rule
	for i := range 300 {
		rules = append(rules, classify.Rule{ID: uint32(i), Precedence: uint32(i),
			SrcIP: classify.PrefixFromNetip(netipPrefix(classify.AddrFrom4(0x0a010000|uint32(i)), 128)),
			Has:   classify.FieldDstPort, DstPort: classify.PortRange{Lo: 80, Hi: 80}})
	}
	c, err := classify.NewRankedTuple(rules)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Grid(), "32") {
		t.Fatalf("grid %v: hosts of one /16 should be keyed on /32", c.Grid())
	}
	for i := range 300 {
		h := classify.Header{SrcIP: classify.AddrFrom4(0x0a010000 | uint32(i)), DstPort: 80}
		if id, ok := c.Lookup(&h); !ok || id != uint32(i) {
			t.Fatalf("host %d: got %d %v", i, id, ok)
		}
	}
}

// TestChooseGridSavesWork compares the chosen grid with every other on
// ClassBench sets, in lookup work counted on their traces (tuples
// probed, slots verified, splits entered, weighted as the model weighs
// them; not time): the model's choice must be within 10% of the best
// grid's work.
func TestChooseGridSavesWork(t *testing.T) {
	for _, name := range []string{"acl1_1k", "fw1_1k", "ipc1_1k", "acl1_10k"} {
		set, err := classbench.Load(setsDir(), name)
		if err != nil {
			t.Skipf("ClassBench sets: %v", err)
		}
		trace := set.Trace[:min(len(set.Trace), 20000)]
		work := func(c *classify.RankedTuple) float64 {
			var tu, sl, sp int
			for i := range trace {
				a, b, c, _ := c.LookupStats(&trace[i].Header)
				tu, sl, sp = tu+a, sl+b, sp+c
			}
			n := float64(len(trace))
			w := (float64(tu) + classify.CostSlot*float64(sl) + classify.CostSplit*float64(sp)) / n
			t.Logf("%s: grid %v: work %.2f a lookup (tuples %.2f, slots %.2f, splits %.2f)",
				name, c.Grid(), w, float64(tu)/n, float64(sl)/n, float64(sp)/n)
			return w
		}
		c, err := classify.NewRankedTuple(set.Rules)
		if err != nil {
			t.Fatal(err)
		}
		chosen, best := work(c), 0.0
		for gi := range classify.GridChoices {
			g, err := classify.NewRankedTupleGrid(set.Rules, gi)
			if err != nil {
				t.Fatal(err)
			}
			if w := work(g); gi == 0 || w < best {
				best = w
			}
		}
		if chosen > best*1.1 {
			t.Errorf("%s: chosen grid %v does %.2f work a lookup, the best %.2f", name, c.Grid(), chosen, best)
		}
	}
}

// TestRankedTupleRegridsWhenFilled: a RankedTuple filled by inserts (as a
// UPF's global table is) chooses its grid again each time its IPv4 rules
// double, and then has the grid a bulk build of the same rules chooses.
func TestRankedTupleRegridsWhenFilled(t *testing.T) {
	set, err := classbench.Load(setsDir(), "acl1_1k")
	if err != nil {
		t.Skipf("ClassBench sets: %v", err)
	}
	c, err := classify.NewRankedTuple(nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 512 // a doubling of regridMin (64): the grid is chosen at this insert
	rules := slices.Clone(set.Rules)
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(rules), func(i, j int) { rules[i], rules[j] = rules[j], rules[i] })
	for _, r := range rules[:n] {
		if err := c.Insert(r); err != nil {
			t.Fatal(err)
		}
	}
	bulk, err := classify.NewRankedTuple(rules[:n])
	if err != nil {
		t.Fatal(err)
	}
	if c.Grid() != bulk.Grid() {
		t.Fatalf("filled by inserts: grid %v; a bulk build of the same rules: %v", c.Grid(), bulk.Grid())
	}
	if c.Grid() == "[0 8 16]" {
		t.Fatalf("acl1 rules keep the default grid %v: the test needs a set whose choice differs", c.Grid())
	}
	ref := &reference{rules: slices.Clone(rules[:n])}
	ref.sort()
	for i := range min(len(set.Trace), 20000) {
		h := &set.Trace[i].Header
		if got, want := result(c.Lookup(h)), result(ref.lookup(h)); got != want {
			t.Fatalf("header %d: got %d, want %d", i, got, want)
		}
	}
}

// TestRankedTupleRegridUnderLookups: lookups running while inserts and
// deletes make the table choose its grid again (and rebuild) still see
// every stable rule.
func TestRankedTupleRegridUnderLookups(t *testing.T) {
	set, err := classbench.Load(setsDir(), "acl1_1k")
	if err != nil {
		t.Skipf("ClassBench sets: %v", err)
	}
	cc := &concurrentCase{stable: set.Rules[:20], churn: set.Rules[20:620], byID: map[uint32]classify.Rule{}}
	for _, r := range cc.churn {
		cc.byID[r.ID] = r
	}
	cc.ref = &reference{rules: slices.Clone(cc.stable)}
	cc.ref.sort()
	for i := range 512 {
		cc.hs = append(cc.hs, set.Trace[i*7%len(set.Trace)].Header)
	}
	// Built on the default grid, which acl1 rules do not choose, so that
	// the first regrid moves every rule.
	c, err := classify.NewRankedTupleGrid(cc.stable, 0)
	if err != nil {
		t.Fatal(err)
	}
	cc.run(t, "rankedtuple", c, 6000)
	if c.Rebuilds() == 0 {
		t.Fatalf("no rebuild happened (grid %v): the test did not exercise one", c.Grid())
	}
	t.Logf("%d rebuilds, grid %v", c.Rebuilds(), c.Grid())
}

// BenchmarkFilledByInserts compares lookups in a RankedTuple bulk-built
// from a ClassBench set with one filled by inserting the same rules one
// at a time (which chooses its grid again as it grows).
func BenchmarkFilledByInserts(b *testing.B) {
	for _, name := range []string{"acl1_1k", "ipc1_1k", "acl1_10k", "ipc1_10k"} {
		set, err := classbench.Load(setsDir(), name)
		if err != nil {
			b.Skipf("ClassBench sets: %v", err)
		}
		bulk, err := classify.NewRankedTuple(set.Rules)
		if err != nil {
			b.Fatal(err)
		}
		filled, err := classify.NewRankedTuple(nil)
		if err != nil {
			b.Fatal(err)
		}
		rules := slices.Clone(set.Rules)
		rand.New(rand.NewPCG(4, 4)).Shuffle(len(rules), func(i, j int) { rules[i], rules[j] = rules[j], rules[i] })
		for _, r := range rules {
			if err := filled.Insert(r); err != nil {
				b.Fatal(err)
			}
		}
		trace := set.Trace[:min(len(set.Trace), 1<<14)]
		for _, v := range []struct {
			name string
			c    *classify.RankedTuple
		}{{"bulk", bulk}, {"inserts", filled}} {
			b.Run(name+"/"+v.name, func(b *testing.B) {
				var sink uint32
				for i := 0; b.Loop(); i++ {
					id, _ := v.c.Lookup(&trace[i&(len(trace)-1)].Header)
					sink += id
				}
				_ = sink
			})
		}
	}
}
