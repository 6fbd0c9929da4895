package classify_test

import (
	"fmt"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/workload"
)

// traceLen headers are replayed: few enough to stay in L1, as a header a
// UPF has just parsed is.
const traceLen = 64

// BenchmarkSession measures per-session PDR tables with hot headers (the
// bench command streams 100,000 headers, 8 MB, from memory, which adds a
// memory-bandwidth cost to every lookup).
func BenchmarkSession(b *testing.B) {
	for _, n := range []int{2, 4, 16, 32, 64, 100} {
		w := workload.Session(n, uint64(n))
		tr := w.Trace[:traceLen]
		cs := map[string]classify.Classifier{}
		for _, k := range []classify.Kind{classify.KindLinear, classify.KindRankedTuple} {
			c, err := classify.Build(k, w.Rules)
			if err != nil {
				b.Fatal(err)
			}
			cs[string(k)] = c
		}
		auto, err := classify.ForTable(w.Rules, classify.Hints{})
		if err != nil {
			b.Fatal(err)
		}
		cs["fortable"] = auto
		for _, name := range []string{"linear", "rankedtuple", "fortable"} {
			c := cs[name]
			b.Run(fmt.Sprintf("%d/%s", n, name), func(b *testing.B) {
				var sink uint32
				for i := 0; b.Loop(); i++ {
					id, _ := c.Lookup(&tr[i&(traceLen-1)])
					sink += id
				}
				_ = sink
			})
		}
	}
}

// BenchmarkHomeGateway measures a session carrying a home network's
// firewall-like SDF rules, the table size where ForTable leaves the scan.
func BenchmarkHomeGateway(b *testing.B) {
	for _, n := range []int{128, 256, 500, 1000} {
		w := workload.HomeGateway(n, uint64(n))
		tr := w.Trace[:traceLen]
		rt, err := classify.NewRankedTuple(w.Rules)
		if err != nil {
			b.Fatal(err)
		}
		auto, err := classify.ForTable(w.Rules, classify.Hints{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []classify.Classifier{rt, auto} {
			b.Run(fmt.Sprintf("%d/%s", n, c.Name()), func(b *testing.B) {
				var sink uint32
				for i := 0; b.Loop(); i++ {
					id, _ := c.Lookup(&tr[i&(traceLen-1)])
					sink += id
				}
				_ = sink
			})
		}
	}
}
