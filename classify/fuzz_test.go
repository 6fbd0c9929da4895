package classify_test

import (
	"math/rand/v2"
	"testing"
)

// FuzzAgree drives every classifier through a byte-coded sequence of
// inserts, deletes and lookups and checks each lookup against the
// reference definition.
func FuzzAgree(f *testing.F) {
	f.Add(uint64(1), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint64(42), []byte{9, 9, 9, 1, 1, 1, 200, 201, 202, 3, 3})
	f.Add(uint64(7), make([]byte, 64))
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		g := gen{rand.New(rand.NewPCG(seed, 3))}
		cs := buildAll(t, nil)
		ref := &reference{}
		next := uint32(0)
		for _, op := range ops {
			switch {
			case op < 100: // insert
				r := g.rule(next)
				next++
				ref.rules = append(ref.rules, r)
				ref.sort()
				for _, c := range cs {
					if err := c.Insert(r); err != nil {
						t.Fatalf("%s insert: %v", c.Name(), err)
					}
				}
			case op < 150 && len(ref.rules) > 0: // delete
				id := ref.rules[int(op)%len(ref.rules)].ID
				ref.delete(id)
				for _, c := range cs {
					if err := c.Delete(id); err != nil {
						t.Fatalf("%s delete: %v", c.Name(), err)
					}
				}
			default: // lookup
				h := g.header(ref.rules)
				want := result(ref.lookup(&h))
				for _, c := range cs {
					if got := result(c.Lookup(&h)); got != want {
						t.Fatalf("%s got %d, want %d", c.Name(), got, want)
					}
				}
			}
		}
	})
}
