package amf

import (
	"math/rand/v2"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/shardmap"
)

// gutiTable maps the 5G-TMSI of every 5G-GUTI this AMF has assigned to the
// UE context holding it (TS 23.003 §2.10.1, TS 24.501 §5.5.1.2.4).
type gutiTable struct{ shardmap.Map[uint32, *ue] }

func newGUTITable() *gutiTable {
	t := &gutiTable{}
	t.Init(func(tmsi uint32) uint32 { return tmsi>>3 ^ tmsi })
	return t
}

// allocate reserves a fresh, unpredictable 5G-TMSI for u (TS 33.501 §6.12.3:
// the 5G-TMSI should be refreshed and not guessable). 0xFFFFFFFF is avoided
// because it is the "invalid" value of the TMSI in TS 23.003 §2.4.
func (t *gutiTable) allocate(u *ue) uint32 {
	for {
		tmsi := rand.Uint32()
		if tmsi != 0xFFFFFFFF && t.InsertNew(tmsi, u) {
			return tmsi
		}
	}
}

func (t *gutiTable) lookup(tmsi uint32) *ue { return t.Get(tmsi) }

// release frees tmsi if it is still held by u.
func (t *gutiTable) release(tmsi uint32, u *ue) { t.CompareAndDelete(tmsi, u) }

// isOurs reports whether g was assigned under one of our GUAMIs.
func (c *servedConfig) isOurGUAMI(g identity.GUAMI) bool {
	for _, x := range c.guamis {
		if x == g {
			return true
		}
	}
	return false
}
