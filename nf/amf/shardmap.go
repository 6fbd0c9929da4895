package amf

import "sync"

// shards is the number of shards of every UE table; a power of two.
const shards = 64

// shardedMap is a map split into independently locked shards, so that
// procedures of different UEs do not contend on one lock.
type shardedMap[K comparable, V comparable] struct {
	hash   func(K) uint32
	shards [shards]shard[K, V]
}

type shard[K comparable, V comparable] struct {
	mu sync.Mutex
	m  map[K]V
}

// init prepares an empty map that spreads keys over shards by hash.
func (t *shardedMap[K, V]) init(hash func(K) uint32) {
	t.hash = hash
	for i := range t.shards {
		t.shards[i].m = make(map[K]V)
	}
}

func (t *shardedMap[K, V]) shard(k K) *shard[K, V] { return &t.shards[t.hash(k)&(shards-1)] }

func (t *shardedMap[K, V]) get(k K) V {
	s := t.shard(k)
	s.mu.Lock()
	v := s.m[k]
	s.mu.Unlock()
	return v
}

// swap stores v under k and returns the previous value (zero if none).
func (t *shardedMap[K, V]) swap(k K, v V) V {
	s := t.shard(k)
	s.mu.Lock()
	old := s.m[k]
	s.m[k] = v
	s.mu.Unlock()
	return old
}

// insertNew stores v under k unless k is taken, and reports whether it did.
func (t *shardedMap[K, V]) insertNew(k K, v V) bool {
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.m[k]; taken {
		return false
	}
	s.m[k] = v
	return true
}

// delete removes k if it still maps to v: a stale owner never removes a
// newer entry.
func (t *shardedMap[K, V]) delete(k K, v V) {
	s := t.shard(k)
	s.mu.Lock()
	if s.m[k] == v {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

// all returns every value (in no particular order).
func (t *shardedMap[K, V]) all() []V {
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
