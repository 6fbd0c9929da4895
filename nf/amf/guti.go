package amf

import (
	"crypto/sha256"
	"encoding/binary"

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
//
// The draws are a keyed pseudo-random function of (the context's ID, its
// count of draws) under the AMF's secret key, not a random generator's
// output: a replay of the same steps from a checkpoint (which carries the
// key, and each context's count in its record) draws the same 5G-TMSIs
// (issue 36 §1), while to anyone without the key they are as unguessable
// as random ones. A draw taken by another context is skipped, as a random
// one would be.
func (t *gutiTable) allocate(u *ue, key *[32]byte) uint32 {
	for {
		u.tmsiDraws++
		tmsi := drawTMSI(key, u.id, u.tmsiDraws)
		if tmsi != 0xFFFFFFFF && t.InsertNew(tmsi, u) {
			return tmsi
		}
	}
}

// drawTMSI is the n-th 5G-TMSI draw of context id: the first 32 bits of
// SHA-256(key || id || n). The input has a fixed length, so the key prefix
// makes a PRF (no length extension to fear) at the cost of one compression
// more than the message and no allocation, which HMAC's would add.
func drawTMSI(key *[32]byte, id uint64, n uint32) uint32 {
	var b [32 + 8 + 4]byte
	copy(b[:32], key[:])
	binary.BigEndian.PutUint64(b[32:], id)
	binary.BigEndian.PutUint32(b[40:], n)
	h := sha256.Sum256(b[:])
	return binary.BigEndian.Uint32(h[:4])
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
