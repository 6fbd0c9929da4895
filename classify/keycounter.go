package classify

// keyCounter counts distinct keys: their numbers in an open-addressed
// table whose reset is a generation bump, not a clear, and each number's
// key (first seen first) and count. The small index build counts rule
// keys with it, and the grid model (ranked_grid.go) key hashes.
type keyCounter[K comparable] struct {
	slots  []counterSlot[K]
	shift  uint8 // 64 - log2(len(slots)): the hash's top bits pick the slot
	gen    uint32
	keys   []K
	counts []int
}

type counterSlot[K comparable] struct {
	k   K
	gen uint32
	i   int32
}

// reset empties t for up to n distinct keys.
func (t *keyCounter[K]) reset(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t.gen++
	if len(t.slots) < size || t.gen == 0 {
		t.slots = make([]counterSlot[K], max(size, len(t.slots)))
		t.shift = uint8(64 - bitsOf(len(t.slots)))
		t.gen = 1
	}
	t.keys, t.counts = t.keys[:0], t.counts[:0]
}

// add counts k (h: its hash) and returns its number. The table must have
// room (reset's n).
func (t *keyCounter[K]) add(k K, h uint64) int32 {
	m := uint64(len(t.slots) - 1)
	for j := h >> t.shift; ; j = (j + 1) & m {
		s := &t.slots[j]
		if s.gen != t.gen {
			i := int32(len(t.keys))
			*s = counterSlot[K]{k: k, gen: t.gen, i: i}
			t.keys, t.counts = append(t.keys, k), append(t.counts, 1)
			return i
		}
		if s.k == k {
			t.counts[s.i]++
			return s.i
		}
	}
}
