package store

import (
	"errors"
	"slices"
	"testing"
)

// TestImportAllOrNothing: ImportAll writes every subscriber or none; an
// IMSI already stored fails the whole import, naming it, unless replace.
func TestImportAllOrNothing(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
		subs := DefaultSubscribers(4)
		if n, err := s.ImportAll(subs[:2], false); err != nil || n != 2 {
			t.Fatalf("ImportAll = %d, %v; want 2", n, err)
		}
		if _, err := s.IncrementSQN(subs[1].SUPI); err != nil {
			t.Fatal(err)
		}
		// subs[1] is there: nothing of this import may be written, not even
		// subs[2] and subs[3], which come before and after it.
		batch := []Subscriber{subs[2], subs[1], subs[3], subs[0]}
		n, err := s.ImportAll(batch, false)
		var exist *ExistError
		if !errors.As(err, &exist) || n != 0 || !slices.Equal(exist.SUPIs, []string{subs[1].SUPI, subs[0].SUPI}) {
			t.Fatalf("ImportAll over existing = %d, %v; want an ExistError naming %s and %s", n, err, subs[1].SUPI, subs[0].SUPI)
		}
		if got := lenT(t, s); got != 2 {
			t.Fatalf("%d subscribers after a refused import, want the 2 there before", got)
		}
		if got, _ := s.Get(subs[1].SUPI); got.SQN != 1 {
			t.Fatalf("refused import changed %s: sqn %d", subs[1].SUPI, got.SQN)
		}
		// An invalid record anywhere: nothing written either.
		bad := subs[3].Clone()
		bad.K = bad.K[:3]
		if _, err := s.ImportAll([]Subscriber{subs[2], bad}, false); err == nil {
			t.Fatal("invalid subscriber imported")
		}
		if got := lenT(t, s); got != 2 {
			t.Fatalf("%d subscribers after an invalid import, want 2", got)
		}
		// replace overwrites, SQN included.
		if n, err := s.ImportAll(batch, true); err != nil || n != 4 {
			t.Fatalf("ImportAll replace = %d, %v; want 4", n, err)
		}
		if got, _ := s.Get(subs[1].SUPI); got.SQN != 0 {
			t.Fatalf("replaced %s keeps sqn %d, want the imported 0", subs[1].SUPI, got.SQN)
		}
		if got := lenT(t, s); got != 4 {
			t.Fatalf("%d subscribers, want 4", got)
		}
	})
}
