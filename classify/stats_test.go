package classify_test

import (
	"os"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

func TestRankedShape(t *testing.T) {
	name := os.Getenv("TERN_CLASSIFY_SHAPE")
	if name == "" {
		t.Skip("diagnostic: set TERN_CLASSIFY_SHAPE=<set>")
	}
	set, err := classbench.Load(classbench.DefaultDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := classify.NewRankedTuple(set.Rules)
	if err != nil {
		t.Fatal(err)
	}
	keys, counts, subs := c.Shape()
	for i := range keys {
		t.Logf("tuple %v: %d rules", keys[i][:2], counts[i])
	}
	var tu, bu, ru, pr int
	n := min(len(set.Trace), 20000)
	for i := 0; i < n; i++ {
		a, b, r, p := c.LookupStats(&set.Trace[i].Header)
		tu, bu, ru, pr = tu+a, bu+b, ru+r, pr+p
	}
	t.Logf("%s: %d tuples, %d split buckets; per lookup: %.1f tuples, %.1f buckets, %.1f rules, %.1f slot probes",
		name, len(keys), subs, float64(tu)/float64(n), float64(bu)/float64(n), float64(ru)/float64(n), float64(pr)/float64(n))
}
