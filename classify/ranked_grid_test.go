package classify_test

import (
	"math/rand/v2"
	"slices"
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
	if !slices.Contains(c.Grid(), 32) {
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
// probed, slots verified, splits entered; not time): the model's choice
// must be within 10% of the best grid's work.
func TestChooseGridSavesWork(t *testing.T) {
	for _, name := range []string{"acl1_1k", "fw1_1k", "ipc1_1k", "acl1_10k"} {
		set, err := classbench.Load(classbench.DefaultDir(), name)
		if err != nil {
			t.Skipf("ClassBench sets: %v", err)
		}
		trace := set.Trace[:min(len(set.Trace), 20000)]
		work := func(c *classify.RankedTuple) float64 {
			var w float64
			for i := range trace {
				tu, sl, sp, _ := c.LookupStats(&trace[i].Header)
				w += float64(tu) + float64(sl)/2 + 3*float64(sp)
			}
			return w / float64(len(trace))
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
		t.Logf("%s: grid %v, work %.2f a lookup (best grid %.2f)", name, c.Grid(), chosen, best)
		if chosen > best*1.1 {
			t.Errorf("%s: chosen grid %v does %.2f work a lookup, the best %.2f", name, c.Grid(), chosen, best)
		}
	}
}
