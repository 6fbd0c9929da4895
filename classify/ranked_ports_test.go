package classify_test

import (
	"strings"
	"testing"

	"github.com/tern5g/tern/classify"
)

// hostPairRules are n rules for one host pair that differ only in their
// destination port, as ClassBench acl1 has (19 of its first 256 rules
// share one pair), and a rule for a port range on the same pair.
func hostPairRules(n int) []classify.Rule {
	src, dst := classify.PrefixFrom4(0x0a000001, 32), classify.PrefixFrom4(0x14000001, 32)
	var rules []classify.Rule
	for i := range n {
		p := uint16(1000 + 7*i)
		rules = append(rules, classify.Rule{ID: uint32(i), Precedence: uint32(i), SrcIP: src, DstIP: dst,
			Has: classify.FieldDstPort | classify.FieldProto, DstPort: classify.PortRange{Lo: p, Hi: p}, Proto: 6})
	}
	return append(rules, classify.Rule{ID: uint32(n), Precedence: uint32(n), SrcIP: src, DstIP: dst,
		Has: classify.FieldDstPort, DstPort: classify.PortRange{Lo: 1000, Hi: 2000}})
}

// TestRankedTuplePortKeys: keyed on their port (gridPorts), rules of one
// host pair that differ in port do not share a key: the build chooses
// such a grid for them, no key splits, and a lookup verifies one slot;
// keyed on their addresses alone they split.
func TestRankedTuplePortKeys(t *testing.T) {
	rules := hostPairRules(20)
	c, err := classify.NewRankedTuple(rules)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Grid(); !strings.HasSuffix(g, " ports]") {
		t.Errorf("grid %v, want one keyed on ports", g)
	}
	plain, err := classify.NewRankedTupleGrid(rules, 2) // [0 16 32]
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c                   *classify.RankedTuple
		splits, slotsAtMost int
	}{{c, 0, 1}, {plain, 1, 20}} {
		if _, _, _, _, subs := tc.c.Shape(); subs != tc.splits {
			t.Errorf("grid %v: %d splits, want %d", tc.c.Grid(), subs, tc.splits)
		}
		for i := range 20 {
			h := classify.Header{SrcIP: classify.AddrFrom4(0x0a000001), DstIP: classify.AddrFrom4(0x14000001),
				DstPort: uint16(1000 + 7*i), Proto: 6}
			if id, ok := tc.c.Lookup(&h); !ok || id != uint32(i) {
				t.Fatalf("grid %v, port %d: got %d %v, want %d", tc.c.Grid(), h.DstPort, id, ok, i)
			}
			if _, slots, _, _ := tc.c.LookupStats(&h); slots > tc.slotsAtMost {
				t.Errorf("grid %v, port %d: verified %d slots, want at most %d", tc.c.Grid(), h.DstPort, slots, tc.slotsAtMost)
			}
		}
		h := classify.Header{SrcIP: classify.AddrFrom4(0x0a000001), DstIP: classify.AddrFrom4(0x14000001), DstPort: 1001, Proto: 17}
		if id, ok := tc.c.Lookup(&h); !ok || id != 20 {
			t.Errorf("grid %v: port range rule: got %d %v, want 20", tc.c.Grid(), id, ok)
		}
	}
}

// TestRankedTuplePortKeyCollision: two port-keyed rules whose hashed keys
// are equal (addresses chosen so that portKey collides) are still
// different keys: when one key's rules split, the other rule stays out
// of the split and keeps matching its own port.
func TestRankedTuplePortKeyCollision(t *testing.T) {
	const p1, p2 = 80, 443
	k := uint64(classify.KPort) // a variable: the products wrap
	a1 := uint64(0x0a000001)<<32 | 0x14000001
	a2 := a1 ^ p1*k ^ p2*k
	rule := func(id uint32, a uint64, port uint16, proto uint8) classify.Rule {
		return classify.Rule{ID: id, Precedence: id, SrcIP: classify.PrefixFrom4(uint32(a>>32), 32), DstIP: classify.PrefixFrom4(uint32(a), 32),
			Has: classify.FieldDstPort | classify.FieldProto, DstPort: classify.PortRange{Lo: port, Hi: port}, Proto: proto}
	}
	rules := []classify.Rule{rule(0, a2, p2, 6)}
	for i := range 12 { // enough to split, with protocols to split on
		rules = append(rules, rule(uint32(1+i), a1, p1, uint8(1+i)))
	}
	c, err := classify.NewRankedTupleGrid(rules, classify.GridChoices/2+2)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Grid(); g != "[0 16 32 ports]" {
		t.Fatalf("grid %v, want [0 16 32 ports]", g)
	}
	if _, _, _, _, subs := c.Shape(); subs != 1 {
		t.Fatalf("%d splits, want 1: the test needs the a1 rules split", subs)
	}
	h := classify.Header{SrcIP: classify.AddrFrom4(uint32(a2 >> 32)), DstIP: classify.AddrFrom4(uint32(a2)), DstPort: p2, Proto: 6}
	if id, ok := c.Lookup(&h); !ok || id != 0 {
		t.Errorf("rule 0 (colliding key): got %d %v, want 0", id, ok)
	}
	for i := range 12 {
		h := classify.Header{SrcIP: classify.AddrFrom4(uint32(a1 >> 32)), DstIP: classify.AddrFrom4(uint32(a1)), DstPort: p1, Proto: uint8(1 + i)}
		if id, ok := c.Lookup(&h); !ok || id != uint32(1+i) {
			t.Errorf("rule %d: got %d %v", 1+i, id, ok)
		}
	}
}
