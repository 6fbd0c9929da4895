package classify

import (
	"math/bits"
	"testing"
)

// TestRtMixSpreadsPrefixKeys checks that tuple keys built from prefixes,
// whose bits sit high in each half (a /16 is d<<16), reach nearly every
// group of a table sized as a build sizes it. Spread uniformly, 65,536
// keys over 13,777 groups leave about 1% of the groups empty.
func TestRtMixSpreadsPrefixKeys(t *testing.T) {
	const ng = 13777
	cases := []struct {
		name string
		key  func(d uint64) uint64
	}{
		{"dst /16", func(d uint64) uint64 { return d << 16 }},
		{"src /16", func(d uint64) uint64 { return d << 48 }},
		{"src /8 dst /8", func(d uint64) uint64 { return (d>>8)<<56 | (d&0xff)<<24 }},
		{"dst /32", func(d uint64) uint64 { return d * 0x10001 }},
	}
	for _, c := range cases {
		hit := make([]bool, ng)
		n := 0
		for d := uint64(0); d < 1<<16; d++ {
			g, _ := bits.Mul64(rtMix(c.key(d)), ng)
			if !hit[g] {
				hit[g] = true
				n++
			}
		}
		if n < ng*95/100 {
			t.Errorf("%s: 65,536 keys reach %d of %d groups", c.name, n, ng)
		}
	}
}
