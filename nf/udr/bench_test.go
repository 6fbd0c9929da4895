package udr

import (
	"context"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/tern5g/tern/store"
)

// BenchmarkAllocateSQN measures AllocateSQN over a store that really
// fsyncs (the production configuration), for one subscriber from one
// goroutine, and for 10,000 fresh subscribers from 64 goroutines (the
// registration storm the core is sized for).
func BenchmarkAllocateSQN(b *testing.B) {
	var st *store.Store
	open := func(b *testing.B, n int) *UDR {
		b.Helper()
		var err error
		st, err = store.Open(filepath.Join(b.TempDir(), "db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		if _, err := st.PutAll(store.DefaultSubscribers(n), false); err != nil {
			b.Fatal(err)
		}
		u, err := New(Config{}, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	// fsyncs/op shows how far the reservations and group commit amortize
	// the log's fsyncs.
	reportSyncs := func(b *testing.B, before uint64) {
		b.ReportMetric(float64(st.Syncs()-before)/float64(b.N), "fsyncs/op")
	}
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		u := open(b, 1)
		supi := store.DemoSUPI(1)
		before := st.Syncs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := u.AllocateSQN(ctx, supi, ""); err != nil {
				b.Fatal(err)
			}
		}
		reportSyncs(b, before)
	})
	b.Run("64x10000subs", func(b *testing.B) {
		const subs = 10000
		u := open(b, subs)
		supis := make([]string, subs)
		for i := range supis {
			supis[i] = store.DemoSUPI(i + 1)
		}
		var next atomic.Uint64
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // about 64 goroutines
		before := st.Syncs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				supi := supis[next.Add(1)%subs]
				if _, err := u.AllocateSQN(ctx, supi, ""); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportSyncs(b, before)
	})
}
