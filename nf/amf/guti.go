package amf

import (
	"math/rand/v2"
	"sync"

	"github.com/tern5g/tern/identity"
)

// tmsiShards is the number of shards of the 5G-TMSI map; a power of two.
const tmsiShards = 64

// gutiTable maps the 5G-TMSI of every 5G-GUTI this AMF has assigned to the
// UE context holding it (TS 23.003 §2.10.1, TS 24.501 §5.5.1.2.4). It is
// sharded so that registrations of different UEs do not contend.
type gutiTable struct {
	shards [tmsiShards]struct {
		mu sync.Mutex
		m  map[uint32]*ue
	}
}

func newGUTITable() *gutiTable {
	t := &gutiTable{}
	for i := range t.shards {
		t.shards[i].m = make(map[uint32]*ue)
	}
	return t
}

func (t *gutiTable) shard(tmsi uint32) int { return int(tmsi>>3^tmsi) & (tmsiShards - 1) }

// allocate reserves a fresh, unpredictable 5G-TMSI for u (TS 33.501 §6.12.3:
// the 5G-TMSI should be refreshed and not guessable). 0xFFFFFFFF is avoided
// because it is the "invalid" value of the TMSI in TS 23.003 §2.4.
func (t *gutiTable) allocate(u *ue) uint32 {
	for {
		tmsi := rand.Uint32()
		if tmsi == 0xFFFFFFFF {
			continue
		}
		s := &t.shards[t.shard(tmsi)]
		s.mu.Lock()
		if _, taken := s.m[tmsi]; !taken {
			s.m[tmsi] = u
			s.mu.Unlock()
			return tmsi
		}
		s.mu.Unlock()
	}
}

func (t *gutiTable) lookup(tmsi uint32) *ue {
	s := &t.shards[t.shard(tmsi)]
	s.mu.Lock()
	u := s.m[tmsi]
	s.mu.Unlock()
	return u
}

// release frees tmsi if it is still held by u.
func (t *gutiTable) release(tmsi uint32, u *ue) {
	s := &t.shards[t.shard(tmsi)]
	s.mu.Lock()
	if s.m[tmsi] == u {
		delete(s.m, tmsi)
	}
	s.mu.Unlock()
}

// isOurs reports whether g was assigned under one of our GUAMIs.
func (c *servedConfig) isOurGUAMI(g identity.GUAMI) bool {
	for _, x := range c.guamis {
		if x == g {
			return true
		}
	}
	return false
}
