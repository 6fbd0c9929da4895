package smf

import "sync"

// shards is the number of shards of every table; a power of two.
const shards = 64

// shardedMap is a map split into independently locked shards, so that
// procedures of different UEs do not contend on one lock.
type shardedMap[K comparable, V any] struct {
	hash   func(K) uint32
	shards [shards]struct {
		mu sync.Mutex
		m  map[K]V
	}
}

func newShardedMap[K comparable, V any](hash func(K) uint32) *shardedMap[K, V] {
	t := &shardedMap[K, V]{hash: hash}
	for i := range t.shards {
		t.shards[i].m = make(map[K]V)
	}
	return t
}

func (t *shardedMap[K, V]) get(k K) (V, bool) {
	s := &t.shards[t.hash(k)&(shards-1)]
	s.mu.Lock()
	v, ok := s.m[k]
	s.mu.Unlock()
	return v, ok
}

func (t *shardedMap[K, V]) put(k K, v V) {
	s := &t.shards[t.hash(k)&(shards-1)]
	s.mu.Lock()
	s.m[k] = v
	s.mu.Unlock()
}

func (t *shardedMap[K, V]) delete(k K) {
	s := &t.shards[t.hash(k)&(shards-1)]
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// getOrCreate returns the value under k, storing mk() first if there is none.
func (t *shardedMap[K, V]) getOrCreate(k K, mk func() V) V {
	s := &t.shards[t.hash(k)&(shards-1)]
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		v = mk()
		s.m[k] = v
	}
	return v
}

// deleteIf removes k when keep(v) is false, under the shard lock.
func (t *shardedMap[K, V]) deleteIf(k K, drop func(V) bool) {
	s := &t.shards[t.hash(k)&(shards-1)]
	s.mu.Lock()
	if v, ok := s.m[k]; ok && drop(v) {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

func (t *shardedMap[K, V]) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

func hashString(s string) uint32 { // FNV-1a
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func hashUint64(v uint64) uint32 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	return uint32(v)
}
