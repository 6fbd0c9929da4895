package classify

import (
	"math/bits"
	"unsafe"
)

// idIndex maps rule IDs to where their rules live, for Delete and for
// Insert's duplicate check (writer only). It is an open-addressing table
// with linear probing and entries inline, so an operation on a large
// table reads about one cache line. A Go map reads two or three (its
// directory's table, a control word, then the slot), and at 100,000
// rules each of them is a cache miss that every timed update pays.
// Deletes shift later entries back instead of leaving tombstones, so
// probes stay short however many updates a table has seen.
type idIndex[V any] struct {
	ents []idEntry[V]
	n    int
}

type idEntry[V any] struct {
	v    V
	id   uint32
	full bool
}

// Sizes: a table is made 3/5 full (a Go map of the same entries is
// about as big); once 3/4 full it grows to hold twice its entries 3/5
// full, and below 1/8 full it shrinks to 3/5, so growth copies each entry
// O(1) times and a table of n entries has at most 8n slots (plus
// idMinSize).
const idMinSize = 8

func newIDIndex[V any](n int) idIndex[V] {
	var x idIndex[V]
	x.resize(n)
	return x
}

// resize makes a table that holds n entries 3/5 full and moves the
// entries there.
func (x *idIndex[V]) resize(n int) {
	old := x.ents
	x.ents = make([]idEntry[V], idMinSize+n*5/3)
	for i := range old {
		if old[i].full {
			x.ents[x.free(old[i].id)] = old[i]
		}
	}
}

// home is the entry where id's probe starts: a multiplicative hash (rule
// IDs are often consecutive) reduced to the table by multiply-shift, so
// sizes need not be powers of two.
func (x *idIndex[V]) home(id uint32) int {
	h, _ := bits.Mul64(uint64(id)*0x9e3779b97f4a7c15, uint64(len(x.ents)))
	return int(h)
}

// next is the entry after i, wrapping.
func (x *idIndex[V]) next(i int) int {
	if i++; i == len(x.ents) {
		return 0
	}
	return i
}

// find returns id's entry, or -1.
func (x *idIndex[V]) find(id uint32) int {
	for i := x.home(id); ; i = x.next(i) {
		e := &x.ents[i]
		if !e.full {
			return -1
		}
		if e.id == id {
			return i
		}
	}
}

// free returns the first empty entry of id's probe (id absent).
func (x *idIndex[V]) free(id uint32) int {
	i := x.home(id)
	for x.ents[i].full {
		i = x.next(i)
	}
	return i
}

func (x *idIndex[V]) len() int { return x.n }

// prefetch asks for the entry where id's probe starts (see prefetch).
func (x *idIndex[V]) prefetch(id uint32) {
	if len(x.ents) > 0 {
		prefetch(unsafe.Pointer(&x.ents[x.home(id)]))
	}
}

// get returns id's value.
func (x *idIndex[V]) get(id uint32) (V, bool) {
	if i := x.find(id); i >= 0 {
		return x.ents[i].v, true
	}
	var zero V
	return zero, false
}

// has reports whether id is present.
func (x *idIndex[V]) has(id uint32) bool { return x.find(id) >= 0 }

// put sets id's value.
func (x *idIndex[V]) put(id uint32, v V) {
	if i := x.find(id); i >= 0 {
		x.ents[i].v = v
		return
	}
	if (x.n+1)*4 > len(x.ents)*3 {
		x.resize(2 * (x.n + 1))
	}
	x.ents[x.free(id)] = idEntry[V]{v: v, id: id, full: true}
	x.n++
}

// del removes id and returns its value.
func (x *idIndex[V]) del(id uint32) (V, bool) {
	i := x.find(id)
	if i < 0 {
		var zero V
		return zero, false
	}
	v := x.ents[i].v
	// Backward-shift deletion: move up every later entry of the run whose
	// probe would otherwise pass the hole.
	size := len(x.ents)
	dist := func(from, to int) int { return (to - from + size) % size }
	for j := x.next(i); x.ents[j].full; j = x.next(j) {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if dist(x.home(x.ents[j].id), j) >= dist(i, j) {
			x.ents[i] = x.ents[j]
			i = j
		}
	}
	x.ents[i] = idEntry[V]{}
	x.n--
	if x.n*8 < len(x.ents) && len(x.ents) > idMinSize {
		x.resize(x.n)
	}
	return v, true
}

// bytes is the table's memory.
func (x *idIndex[V]) bytes() int {
	return len(x.ents) * int(unsafe.Sizeof(idEntry[V]{}))
}
