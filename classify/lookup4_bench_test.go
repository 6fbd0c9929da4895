package classify_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

// BenchmarkLookup4Loop compares the IPv4 probe loop's two forms, lookup4
// (assembly on amd64, which also prefetches a probe's slots) and
// lookup4Go, over the fw1_100k trace, the set that probes the most tuples
// a lookup.
func BenchmarkLookup4Loop(b *testing.B) {
	dir := setsDir()
	if _, err := os.Stat(filepath.Join(dir, "fw1_100k.rules.gz")); err != nil {
		b.Skipf("no ClassBench sets in %s: %v", dir, err)
	}
	set, err := classbench.Load(dir, "fw1_100k")
	if err != nil {
		b.Fatal(err)
	}
	c, err := classify.NewRankedTuple(set.Rules)
	if err != nil {
		b.Fatal(err)
	}
	hs := make([]classify.Header, len(set.Trace))
	for i := range hs {
		hs[i] = set.Trace[i].Header
	}
	for _, loop := range []struct {
		name   string
		goLoop bool
	}{{"asm", false}, {"go", true}} {
		b.Run(loop.name, func(b *testing.B) {
			var sink uint64
			i := 0
			for b.Loop() {
				b, _ := c.TopLookup4(&hs[i], ^uint64(0), loop.goLoop)
				sink += b
				if i++; i == len(hs) {
					i = 0
				}
			}
			_ = sink
		})
	}
}
