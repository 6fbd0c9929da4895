package classify

import (
	"math/rand/v2"
	"testing"
)

// TestIDIndexMatchesMap runs random puts and deletes, with clustered and
// spread IDs, against a Go map, checking every ID's presence and value
// (backward-shift deletion must keep every remaining entry reachable)
// and that the table grows and shrinks within its bounds.
func TestIDIndexMatchesMap(t *testing.T) {
	for _, spread := range []uint32{64, 4096, 1 << 31} {
		r := rand.New(rand.NewPCG(uint64(spread), 7))
		x := newIDIndex[uint64](0)
		ref := map[uint32]uint64{}
		for step := 0; step < 40000; step++ {
			id := r.Uint32N(spread)
			// Phases of growth, then of shrinking.
			grow := step%10000 < 6000
			if r.IntN(3) > 0 == grow {
				v := r.Uint64()
				x.put(id, v)
				ref[id] = v
			} else {
				got, ok := x.del(id)
				want, wok := ref[id]
				if ok != wok || got != want {
					t.Fatalf("spread %d step %d: del(%d) = %d, %v; want %d, %v", spread, step, id, got, ok, want, wok)
				}
				delete(ref, id)
			}
			if x.len() != len(ref) {
				t.Fatalf("spread %d step %d: len %d, want %d", spread, step, x.len(), len(ref))
			}
			if n := len(x.ents); n > idMinSize+8*len(ref)+8 || x.len()*4 > n*3 {
				t.Fatalf("spread %d step %d: %d entries in a table of %d", spread, step, x.len(), n)
			}
			if step%997 == 0 {
				for id, want := range ref {
					if i := x.find(id); i < 0 || x.ents[i].v != want {
						t.Fatalf("spread %d step %d: id %d at entry %d, want value %d", spread, step, id, i, want)
					}
					if got, ok := x.get(id); !ok || got != want {
						t.Fatalf("spread %d step %d: get(%d) = %d, %v; want %d", spread, step, id, got, ok, want)
					}
				}
				if _, ok := x.get(spread); ok { // IDs are below spread
					t.Fatalf("spread %d step %d: get of an absent ID found it", spread, step)
				}
				full := 0
				for _, e := range x.ents {
					if e.full {
						full++
					}
				}
				if full != len(ref) {
					t.Fatalf("spread %d step %d: %d full entries, want %d", spread, step, full, len(ref))
				}
			}
		}
	}
}
