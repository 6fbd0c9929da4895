package classify_test

import (
	"testing"

	"github.com/tern5g/tern/classify"
)

// finalRules: on the default grid (/0, /8, /16), rules 1 and 2 key tuple
// /16-/16 (bound: rule 1) and rule 3 tuple /16-/0, which ranks after rule
// 2. Rule 2 (TCP only) is final: no rule of another tuple both overlaps
// it and outranks it.
func finalRules() []classify.Rule {
	p := classify.PrefixFrom4
	return []classify.Rule{
		{ID: 1, Precedence: 1, SrcIP: p(0x0a000000, 16), DstIP: p(0x1e000000, 16)},
		{ID: 2, Precedence: 10, SrcIP: p(0x0a000000, 16), DstIP: p(0x14000000, 16), Has: classify.FieldProto, Proto: 6},
		{ID: 3, Precedence: 20, SrcIP: p(0x0a000000, 16)},
	}
}

// toRule2 matches rules 2 and 3.
var toRule2 = classify.Header{SrcIP: classify.AddrFrom4(0x0a000001), DstIP: classify.AddrFrom4(0x14000001), Proto: 6}

// TestRankedTupleFinalSlotEndsLookup: a lookup that matches a final
// slot probes no other tuple; one that matches a slot some rule of a
// later tuple overlaps and outranks goes on to that tuple.
func TestRankedTupleFinalSlotEndsLookup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extra  *classify.Rule
		want   uint32
		tuples int
	}{
		{"final", nil, 2, 1},
		// Rule 4 outranks rule 2 but matches none of its headers (UDP
		// against TCP): rule 2 stays final.
		{"disjoint", &classify.Rule{ID: 4, Precedence: 5, Has: classify.FieldProto, Proto: 6 + 11, SrcIP: classify.PrefixFrom4(0x0a000000, 16)}, 2, 1},
		// Rule 4 overlaps and outranks rule 2 from the /16-/0 tuple.
		{"beaten", &classify.Rule{ID: 4, Precedence: 5, SrcIP: classify.PrefixFrom4(0x0a000000, 16)}, 4, 2},
	} {
		rules := finalRules()
		if tc.extra != nil {
			rules = append(rules, *tc.extra)
		}
		c, err := classify.NewRankedTupleGrid(rules, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := result(c.Lookup(&toRule2)); got != int64(tc.want) {
			t.Errorf("%s: lookup got %d, want %d", tc.name, got, tc.want)
		}
		if tuples, _, _, _ := c.LookupStats(&toRule2); tuples != tc.tuples {
			t.Errorf("%s: probed %d tuples, want %d", tc.name, tuples, tc.tuples)
		}
	}
}

// TestRankedTupleInsertOutranksFinalSlot: a rule inserted after the build
// that overlaps and outranks a final slot of another tuple wins, through
// lookups that would otherwise stop at the final slot.
func TestRankedTupleInsertOutranksFinalSlot(t *testing.T) {
	c, err := classify.NewRankedTupleGrid(finalRules(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Into the existing /16-/0 tuple, then into a new /8-/0 one.
	for _, r := range []classify.Rule{
		{ID: 4, Precedence: 5, SrcIP: classify.PrefixFrom4(0x0a000000, 16)},
		{ID: 5, Precedence: 3, SrcIP: classify.PrefixFrom4(0x0a000000, 8)},
	} {
		if err := c.Insert(r); err != nil {
			t.Fatal(err)
		}
		if got := result(c.Lookup(&toRule2)); got != int64(r.ID) {
			t.Fatalf("after inserting rule %d: lookup got %d", r.ID, got)
		}
	}
	// Rule 1 stays final for its own headers: nothing inserted outranks it.
	to1 := toRule2
	to1.DstIP = classify.AddrFrom4(0x1e000001)
	if got := result(c.Lookup(&to1)); got != 1 {
		t.Fatalf("lookup got %d, want 1", got)
	}
	if tuples, _, _, _ := c.LookupStats(&to1); tuples != 1 {
		t.Fatalf("probed %d tuples, want 1", tuples)
	}
}
