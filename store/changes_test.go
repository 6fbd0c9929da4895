package store

import (
	"reflect"
	"sync"
	"testing"
)

// TestChangeFeed: puts and deletes made through another handle (another
// process) appear in the feed in order, SQN updates and puts that change
// nothing do not, and concurrent writers get distinct, gapless numbers.
func TestChangeFeed(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, again := e.open(t)
		other := again.must(t)
		start, err := s.LastChange()
		if err != nil {
			t.Fatal(err)
		}
		subs := DefaultSubscribers(3)
		if _, err := other.PutAll(subs[:2], false); err != nil {
			t.Fatal(err)
		}
		if _, err := other.PutAll(subs[:2], false); err != nil { // already there: no change
			t.Fatal(err)
		}
		if _, err := other.IncrementSQN(subs[0].SUPI); err != nil {
			t.Fatal(err)
		}
		if err := other.Delete(subs[1].SUPI); err != nil {
			t.Fatal(err)
		}
		got, err := s.Changes(start, 100)
		if err != nil {
			t.Fatal(err)
		}
		want := []Change{{start + 1, subs[0].SUPI, false}, {start + 2, subs[1].SUPI, false}, {start + 3, subs[1].SUPI, true}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("changes %+v, want %+v", got, want)
		}
		if last, _ := s.LastChange(); last != start+3 {
			t.Errorf("last change %d, want %d", last, start+3)
		}
		if page, _ := s.Changes(start, 2); len(page) != 2 || page[1].Seq != start+2 {
			t.Errorf("limited page %+v", page)
		}

		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := subs[2].Clone()
				if i%2 == 0 {
					w = subs[0].Clone()
				}
				if err := other.Put(w); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, err = s.Changes(start+3, 100)
		if err != nil || len(got) != 8 {
			t.Fatalf("%d concurrent changes (%v), want 8", len(got), err)
		}
		for i, c := range got {
			if c.Seq != start+4+uint64(i) {
				t.Fatalf("change %d numbered %d: want gapless", i, c.Seq)
			}
		}
	})
}
