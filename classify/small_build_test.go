package classify

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestSmallBuilderReuse builds tables of varied sizes and shapes through
// one builder, as the pool hands builders from table to table, and checks
// each index against one from a fresh builder: state left by an earlier
// build (key tables, plan buffers, rule key indexes) must not change a
// later one.
func TestSmallBuilderReuse(t *testing.T) {
	shared := &smallBuilder{}
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 300 {
		size := []int{0, 3, 7, 20, 64, 128}[n%6] + rng.IntN(5)
		rules := make([]Rule, size)
		for i := range rules {
			r := Rule{ID: uint32(i), Precedence: uint32(rng.IntN(1000))}
			switch rng.IntN(4) {
			case 0:
				r.Has |= FieldTEID
				r.TEID = uint32(rng.IntN(8))
			case 1:
				r.Has |= FieldDstPort
				lo := uint16(rng.IntN(1000))
				r.DstPort = PortRange{lo, lo + uint16(rng.IntN(3))}
			case 2:
				r.Has |= FieldQFI
				r.QFI = uint8(rng.IntN(4))
			}
			if rng.IntN(2) == 0 {
				r.Has |= FieldSourceInterface
				r.SourceInterface = uint8(rng.IntN(2))
			}
			if rng.IntN(3) == 0 {
				r.DstIP = Prefix{Addr: AddrFrom4(0x0a000000 | uint32(rng.IntN(1024))), Len: uint8(96 + 8*(2+rng.IntN(3)))}
			}
			rules[i] = r
		}
		sorted, err := checkRules(rules)
		if err != nil {
			t.Fatal(err)
		}
		got, want := shared.index(sorted), (&smallBuilder{}).index(sorted)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("table %d (%d rules): a reused builder built another index", n, size)
		}
	}
}
