// Package shardmap is a map split into independently locked shards, so that
// the procedures of different UEs do not contend on one lock. The AMF and the
// SMF keep their per-UE and per-session tables in it.
package shardmap

import "sync"

// shards is the number of shards; a power of two.
const shards = 64

// Map maps K to V. Its zero value is ready after Init; New returns one.
type Map[K comparable, V comparable] struct {
	hash   func(K) uint32
	shards [shards]shard[K, V]
}

type shard[K comparable, V comparable] struct {
	mu sync.Mutex
	m  map[K]V
}

// New returns an empty map that spreads keys over shards by hash.
func New[K comparable, V comparable](hash func(K) uint32) *Map[K, V] {
	t := new(Map[K, V])
	t.Init(hash)
	return t
}

// Init prepares t (the zero value, or one to empty) like New.
func (t *Map[K, V]) Init(hash func(K) uint32) {
	t.hash = hash
	for i := range t.shards {
		t.shards[i].m = make(map[K]V)
	}
}

func (t *Map[K, V]) shard(k K) *shard[K, V] { return &t.shards[t.hash(k)&(shards-1)] }

// Get returns the value of k, or the zero value.
func (t *Map[K, V]) Get(k K) V {
	s := t.shard(k)
	s.mu.Lock()
	v := s.m[k]
	s.mu.Unlock()
	return v
}

// Put stores v under k.
func (t *Map[K, V]) Put(k K, v V) { t.Swap(k, v) }

// Swap stores v under k and returns the previous value (zero if none).
func (t *Map[K, V]) Swap(k K, v V) V {
	s := t.shard(k)
	s.mu.Lock()
	old := s.m[k]
	s.m[k] = v
	s.mu.Unlock()
	return old
}

// InsertNew stores v under k unless k is taken, and reports whether it did.
func (t *Map[K, V]) InsertNew(k K, v V) bool {
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.m[k]; taken {
		return false
	}
	s.m[k] = v
	return true
}

// GetOrCreate returns the value of k, storing mk() first if k is absent.
func (t *Map[K, V]) GetOrCreate(k K, mk func() V) V {
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		v = mk()
		s.m[k] = v
	}
	return v
}

// Delete removes k.
func (t *Map[K, V]) Delete(k K) {
	s := t.shard(k)
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// CompareAndDelete removes k if it still maps to v: a stale owner never
// removes a newer entry.
func (t *Map[K, V]) CompareAndDelete(k K, v V) {
	t.DeleteIf(k, func(cur V) bool { return cur == v })
}

// DeleteIf removes k if drop, called under the shard's lock, says so.
func (t *Map[K, V]) DeleteIf(k K, drop func(V) bool) {
	s := t.shard(k)
	s.mu.Lock()
	if v, ok := s.m[k]; ok && drop(v) {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

// All returns every value, in no particular order.
func (t *Map[K, V]) All() []V {
	var out []V
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, v := range s.m {
			out = append(out, v)
		}
		s.mu.Unlock()
	}
	return out
}

// Len counts the entries.
func (t *Map[K, V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// HashString is FNV-1a, for string keys such as SUPIs.
func HashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// HashUint64 mixes a 64-bit key (the MurmurHash3 finalizer's first steps),
// so sequential IDs spread over the shards.
func HashUint64(v uint64) uint32 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	return uint32(v)
}
