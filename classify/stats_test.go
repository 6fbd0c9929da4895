package classify_test

import (
	"os"
	"testing"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

func TestRankedShape(t *testing.T) {
	name := os.Getenv("TERN_CLASSIFY_SHAPE")
	if name == "" {
		t.Skip("diagnostic: set TERN_CLASSIFY_SHAPE=<set>")
	}
	set, err := classbench.Load(setsDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := classify.NewRankedTuple(set.Rules)
	if err != nil {
		t.Fatal(err)
	}
	keys, counts, sizes, bests, subs := c.Shape()
	for i := range keys {
		t.Logf("tuple %v: %d slots live of %d, bound %d", keys[i], counts[i], sizes[i], uint32(bests[i]))
	}
	var tu, sl, sp, wo int
	n := min(len(set.Trace), 20000)
	for i := 0; i < n; i++ {
		a, b, s, w := c.LookupStats(&set.Trace[i].Header)
		tu, sl, sp, wo = tu+a, sl+b, sp+s, wo+w
	}
	t.Logf("%s: %d tuples, %d splits, memory %.2f MB; per lookup: %.2f tuples, %.2f slots, %.2f splits, %.2f control words",
		name, len(keys), subs, float64(c.MemoryBytes())/1e6, float64(tu)/float64(n), float64(sl)/float64(n), float64(sp)/float64(n), float64(wo)/float64(n))
	hs := make([]classify.Header, len(set.Trace))
	for i := range hs {
		hs[i] = set.Trace[i].Header
	}
	var best time.Duration
	for range 3 {
		start := time.Now()
		for i := range hs {
			c.Lookup(&hs[i])
		}
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	t.Logf("lookup %.1f ns (best of 3 passes)", float64(best)/float64(len(hs)))
}
