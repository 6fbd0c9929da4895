package store

import "testing"

// BenchmarkUpdateSQN measures one SQN allocation within the reservation
// (the common case: no fsync on SQLite) on each engine, from one goroutine.
func BenchmarkUpdateSQN(b *testing.B) {
	for _, e := range []engine{sqliteEngine(), postgresEngine()} {
		b.Run(e.name, func(b *testing.B) {
			s, _ := e.open(b)
			sub := DefaultSubscribers(1)[0]
			if err := s.Put(sub); err != nil {
				b.Fatal(err)
			}
			before := s.Syncs()
			for b.Loop() {
				if _, err := s.UpdateSQN(sub.SUPI, 1<<15, plusOne); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Syncs()-before)/float64(b.N), "fsyncs/op")
		})
	}
}

// BenchmarkGet measures reading one subscriber (what the UDR does at each
// authentication) on each engine, from one goroutine.
func BenchmarkGet(b *testing.B) {
	for _, e := range []engine{sqliteEngine(), postgresEngine()} {
		b.Run(e.name, func(b *testing.B) {
			s, _ := e.open(b)
			subs := DefaultSubscribers(1000)
			if _, err := s.PutAll(subs, false); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if _, err := s.Get(subs[i%len(subs)].SUPI); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
