package classify_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

// reference is the definition: the best-ranked rule whose Matches holds.
type reference struct{ rules []classify.Rule }

func (r *reference) sort() {
	slices.SortFunc(r.rules, func(a, b classify.Rule) int {
		if a.Precedence != b.Precedence {
			return cmp(a.Precedence, b.Precedence)
		}
		return cmp(a.ID, b.ID)
	})
}

func cmp(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r *reference) lookup(h *classify.Header) (uint32, bool) {
	for i := range r.rules {
		if r.rules[i].Matches(h) {
			return r.rules[i].ID, true
		}
	}
	return 0, false
}

func (r *reference) delete(id uint32) {
	r.rules = slices.DeleteFunc(r.rules, func(x classify.Rule) bool { return x.ID == id })
}

func buildAll(t testing.TB, rules []classify.Rule) []classify.Classifier {
	t.Helper()
	var cs []classify.Classifier
	for _, k := range classify.Kinds {
		c, err := classify.Build(k, rules)
		if err != nil {
			t.Fatalf("build %s: %v", k, err)
		}
		if c.Len() != len(rules) {
			t.Fatalf("%s: Len %d, want %d", k, c.Len(), len(rules))
		}
		cs = append(cs, c)
	}
	auto, err := classify.ForTable(rules, classify.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	cs = append(cs, auto)
	return cs
}

func TestClassBenchAgreesWithLinear(t *testing.T) {
	dir := setsDir()
	if err := classbench.Available(dir, classbench.Sets[0]); err != nil {
		t.Skip(err)
	}
	long := os.Getenv("TERN_CLASSIFY_LONG") != ""
	for _, name := range classbench.Sets {
		t.Run(name, func(t *testing.T) {
			big := len(name) > 4 && name[len(name)-4:] == "100k"
			if big && testing.Short() {
				t.Skip("100k sets in -short mode")
			}
			set, err := classbench.Load(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			trace := set.Trace
			if big && !long {
				trace = sample(trace, 1500) // TERN_CLASSIFY_LONG=1 runs every header
			}
			lin, err := classify.NewLinear(set.Rules)
			if err != nil {
				t.Fatal(err)
			}
			// Linear itself against the field-by-field definition.
			ref := &reference{rules: slices.Clone(set.Rules)}
			ref.sort()
			for _, p := range sample(trace, 300) {
				wid, wok := ref.lookup(&p.Header)
				gid, gok := lin.Lookup(&p.Header)
				if wid != gid || wok != gok {
					t.Fatalf("linear %d,%v; reference %d,%v", gid, gok, wid, wok)
				}
			}
			want := make([]int64, len(trace))
			for i := range trace {
				want[i] = result(lin.Lookup(&trace[i].Header))
			}
			for _, c := range buildAll(t, set.Rules)[1:] {
				for i := range trace {
					if got := result(c.Lookup(&trace[i].Header)); got != want[i] {
						t.Fatalf("%s header %d %+v: got %d, linear %d", c.Name(), i, trace[i].Header, got, want[i])
					}
				}
			}
		})
	}
}

func result(id uint32, ok bool) int64 {
	if !ok {
		return -1
	}
	return int64(id)
}

func sample[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	out := make([]T, 0, n)
	step := len(s) / n
	for i := 0; i < len(s) && len(out) < n; i += step {
		out = append(out, s[i])
	}
	return out
}

// gen makes random rules over every field, IPv4 and IPv6, with small
// value domains so that rules overlap and headers hit them.
type gen struct{ r *rand.Rand }

func (g gen) addr(v6 bool) classify.Addr {
	if v6 {
		return classify.Addr{Hi: 0x20010db8<<32 | uint64(g.r.IntN(4))<<16, Lo: uint64(g.r.IntN(8))}
	}
	return classify.AddrFrom4(0x0a000000 | uint32(g.r.IntN(4))<<16 | uint32(g.r.IntN(8)))
}

func (g gen) prefix(v6 bool) classify.Prefix {
	a := g.addr(v6)
	var l int
	if v6 {
		l = []int{0, 32, 48, 64, 120, 128}[g.r.IntN(6)]
	} else {
		l = []int{0, 8, 14, 16, 24, 29, 32}[g.r.IntN(7)]
		if l > 0 {
			l += 96
		}
	}
	return classify.PrefixFromNetip(netipPrefix(a, l))
}

func (g gen) rule(id uint32) classify.Rule {
	v6 := g.r.IntN(3) == 0
	r := classify.Rule{ID: id, Precedence: uint32(g.r.IntN(50))}
	if g.r.IntN(2) == 0 {
		r.SrcIP = g.prefix(v6)
	}
	if g.r.IntN(2) == 0 {
		r.DstIP = g.prefix(v6)
	}
	if g.r.IntN(3) == 0 {
		r.UEIP = g.prefix(v6)
	}
	pr := func() classify.PortRange {
		switch g.r.IntN(3) {
		case 0:
			p := uint16(g.r.IntN(6))
			return classify.PortRange{Lo: p, Hi: p}
		case 1:
			lo := uint16(g.r.IntN(6))
			return classify.PortRange{Lo: lo, Hi: lo + uint16(g.r.IntN(300))}
		}
		return classify.PortRange{Lo: 1024, Hi: 65535}
	}
	flip := func(f classify.Field) bool {
		if g.r.IntN(3) == 0 {
			r.Has |= f
			return true
		}
		return false
	}
	if flip(classify.FieldSrcPort) {
		r.SrcPort = pr()
	}
	if flip(classify.FieldDstPort) {
		r.DstPort = pr()
	}
	if flip(classify.FieldProto) {
		r.Proto = []uint8{6, 17, 50}[g.r.IntN(3)]
	}
	if flip(classify.FieldTEID) {
		r.TEID = uint32(g.r.IntN(4))
	}
	if flip(classify.FieldQFI) {
		r.QFI = uint8(g.r.IntN(3))
	}
	if flip(classify.FieldToS) {
		r.ToS, r.ToSMask = uint8(g.r.IntN(4))<<2, []uint8{0xfc, 0x0c, 0xff}[g.r.IntN(3)]
	}
	if flip(classify.FieldSourceInterface) {
		r.SourceInterface = uint8(g.r.IntN(2))
	}
	if flip(classify.FieldNetworkInstance) {
		r.NetworkInstance = uint32(g.r.IntN(2))
	}
	if flip(classify.FieldAppID) {
		r.AppID = uint32(g.r.IntN(2))
	}
	if flip(classify.FieldSPI) {
		r.SPI = uint32(g.r.IntN(2))
	}
	if flip(classify.FieldFlowLabel) {
		r.FlowLabel = uint32(g.r.IntN(2))
	}
	return r
}

// header draws a header near a rule (so it often matches), or at random.
func (g gen) header(rules []classify.Rule) classify.Header {
	v6 := g.r.IntN(3) == 0
	h := classify.Header{
		SrcIP: g.addr(v6), DstIP: g.addr(v6), UEIP: g.addr(v6),
		SrcPort: uint16(g.r.IntN(8)), DstPort: uint16(g.r.IntN(400)), Proto: []uint8{6, 17, 50}[g.r.IntN(3)],
		TEID: uint32(g.r.IntN(4)), QFI: uint8(g.r.IntN(3)), ToS: uint8(g.r.IntN(16)) << 2,
		SourceInterface: uint8(g.r.IntN(2)), NetworkInstance: uint32(g.r.IntN(2)), AppID: uint32(g.r.IntN(2)),
		SPI: uint32(g.r.IntN(2)), FlowLabel: uint32(g.r.IntN(2)),
	}
	if len(rules) > 0 && g.r.IntN(4) != 0 {
		r := rules[g.r.IntN(len(rules))]
		if r.SrcIP.Len > 0 {
			h.SrcIP = r.SrcIP.Addr
		}
		if r.DstIP.Len > 0 {
			h.DstIP = r.DstIP.Addr
		}
		if r.UEIP.Len > 0 {
			h.UEIP = r.UEIP.Addr
		}
		if r.Has&classify.FieldSrcPort != 0 {
			h.SrcPort = r.SrcPort.Lo
		}
		if r.Has&classify.FieldDstPort != 0 {
			h.DstPort = r.DstPort.Hi
		}
		if r.Has&classify.FieldProto != 0 {
			h.Proto = r.Proto
		}
		if r.Has&classify.FieldTEID != 0 {
			h.TEID = r.TEID
		}
		if r.Has&classify.FieldQFI != 0 {
			h.QFI = r.QFI
		}
	}
	return h
}

func TestRandomAgree(t *testing.T) {
	for seed := range uint64(20) {
		g := gen{rand.New(rand.NewPCG(seed, 7))}
		n := []int{1, 3, 17, 100, 600}[seed%5]
		rules := make([]classify.Rule, n)
		for i := range rules {
			rules[i] = g.rule(uint32(i * 3))
		}
		ref := &reference{rules: slices.Clone(rules)}
		ref.sort()
		cs := buildAll(t, rules)
		for range 2000 {
			h := g.header(rules)
			want := result(ref.lookup(&h))
			for _, c := range cs {
				if got := result(c.Lookup(&h)); got != want {
					t.Fatalf("seed %d n %d: %s got %d, want %d for %+v", seed, n, c.Name(), got, want, h)
				}
			}
		}
	}
}

// TestLookup4AgreesWithGo: the IPv4 probe loop (assembly on amd64) returns
// what its Go form returns, the best rank and the tuple it stopped at,
// from any starting bound: over mostly plain IPv4 5-tuple rules, with
// keys long enough to split and, in some sets, rules the slots cannot
// hold whole.
func TestLookup4AgreesWithGo(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("lookup4 is lookup4Go itself off amd64: there is no assembly to compare")
	}
	for seed := range uint64(12) {
		g := gen{rand.New(rand.NewPCG(seed, 11))}
		n := []int{5, 40, 300, 2000}[seed%4]
		rules := make([]classify.Rule, n)
		for i := range rules {
			r := g.rule(uint32(i))
			if seed%3 != 0 || g.r.IntN(8) != 0 {
				r = classify.Rule{ID: r.ID, Precedence: r.Precedence, Has: r.Has & (classify.FieldSrcPort | classify.FieldDstPort | classify.FieldProto),
					SrcPort: r.SrcPort, DstPort: r.DstPort, Proto: r.Proto}
				if g.r.IntN(4) != 0 {
					r.SrcIP = g.prefix(false)
				}
				if g.r.IntN(4) != 0 {
					r.DstIP = g.prefix(false)
				}
			}
			rules[i] = r
		}
		// The grid the rules choose, and every grid that keys single-port
		// rules on their port (kindAddr4P tuples), in turn.
		var c *classify.RankedTuple
		var err error
		if seed%2 == 0 {
			c, err = classify.NewRankedTuple(rules)
		} else {
			c, err = classify.NewRankedTupleGrid(rules, classify.GridChoices/2+int(seed/2)%(classify.GridChoices/2))
		}
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			h := g.header(rules)
			if !h.SrcIP.Is4() {
				h.SrcIP = g.addr(false)
			}
			if !h.DstIP.Is4() {
				h.DstIP = g.addr(false)
			}
			if g.r.IntN(4) == 0 {
				h.Proto = uint8(g.r.IntN(256)) // other bits than the rules' protocols
			}
			for _, best := range []uint64{^uint64(0), uint64(g.r.IntN(50))<<32 | uint64(g.r.IntN(n))} {
				ab, ai := c.TopLookup4(&h, best, false)
				gb, gi := c.TopLookup4(&h, best, true)
				if ab != gb || ai != gi {
					t.Fatalf("seed %d, %d rules, bound %#x: lookup4 gives %#x at tuple %d, lookup4Go %#x at %d, for %+v", seed, n, best, ab, ai, gb, gi, h)
				}
			}
		}
	}
}

// TestChurnAgree runs long random insert/delete sequences, checking every
// classifier against the reference as it goes.
func TestChurnAgree(t *testing.T) {
	steps := 6000
	if testing.Short() {
		steps = 2000
	}
	for seed := range uint64(4) {
		g := gen{rand.New(rand.NewPCG(seed, 99))}
		var rules []classify.Rule
		for i := range 200 {
			rules = append(rules, g.rule(uint32(i)))
		}
		cs := buildAll(t, rules)
		ref := &reference{rules: slices.Clone(rules)}
		ref.sort()
		next := uint32(len(rules))
		for step := range steps {
			if g.r.IntN(2) == 0 && len(ref.rules) > 0 {
				id := ref.rules[g.r.IntN(len(ref.rules))].ID
				ref.delete(id)
				for _, c := range cs {
					if err := c.Delete(id); err != nil {
						t.Fatalf("%s delete %d: %v", c.Name(), id, err)
					}
				}
			} else {
				r := g.rule(next)
				next++
				ref.rules = append(ref.rules, r)
				ref.sort()
				for _, c := range cs {
					if err := c.Insert(r); err != nil {
						t.Fatalf("%s insert: %v", c.Name(), err)
					}
				}
			}
			for range 4 {
				h := g.header(ref.rules)
				want := result(ref.lookup(&h))
				for _, c := range cs {
					if got := result(c.Lookup(&h)); got != want {
						t.Fatalf("seed %d step %d: %s got %d, want %d", seed, step, c.Name(), got, want)
					}
				}
			}
		}
		for _, c := range cs {
			if c.Len() != len(ref.rules) {
				t.Fatalf("%s Len %d, want %d", c.Name(), c.Len(), len(ref.rules))
			}
		}
	}
}

func TestErrors(t *testing.T) {
	for _, k := range classify.Kinds {
		c, err := classify.Build(k, []classify.Rule{{ID: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Insert(classify.Rule{ID: 1}); err == nil {
			t.Errorf("%s: duplicate insert accepted", k)
		}
		if err := c.Delete(2); err == nil {
			t.Errorf("%s: delete of unknown ID accepted", k)
		}
		if err := c.Insert(classify.Rule{ID: 3, Has: classify.FieldDstPort, DstPort: classify.PortRange{Lo: 9, Hi: 1}}); err == nil {
			t.Errorf("%s: inverted port range accepted", k)
		}
		if _, err := classify.Build(k, []classify.Rule{{ID: 1}, {ID: 1}}); err == nil {
			t.Errorf("%s: duplicate IDs built", k)
		}
		if err := c.Delete(1); err != nil {
			t.Errorf("%s: %v", k, err)
		}
		if _, ok := c.Lookup(&classify.Header{}); ok {
			t.Errorf("%s: empty classifier matched", k)
		}
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(1, 2))}
	rules := make([]classify.Rule, 300)
	for i := range rules {
		rules[i] = g.rule(uint32(i))
	}
	hs := make([]classify.Header, 64)
	for i := range hs {
		hs[i] = g.header(rules)
	}
	for _, c := range buildAll(t, rules) {
		i := 0
		if a := testing.AllocsPerRun(1000, func() { c.Lookup(&hs[i%len(hs)]); i++ }); a != 0 {
			t.Errorf("%s: %v allocations per lookup", c.Name(), a)
		}
	}
}

// TestConcurrentUpdates checks the concurrency guarantee: rules present
// for a whole lookup are always considered, so a lookup returns the best
// stable rule or a churning rule that matches and beats it.
func TestConcurrentUpdates(t *testing.T) {
	cc := newConcurrentCase(gen{rand.New(rand.NewPCG(5, 5))}, 300, 200)
	for _, k := range classify.Kinds {
		c, err := classify.Build(k, cc.stable)
		if err != nil {
			t.Fatal(err)
		}
		cc.run(t, string(k), c, 4000)
	}
}

// concurrentCase is a stable rule set, rules that churn beside it, and
// headers over both.
type concurrentCase struct {
	stable, churn []classify.Rule
	byID          map[uint32]classify.Rule // the churning rules
	ref           *reference               // the stable rules
	hs            []classify.Header
}

func newConcurrentCase(g gen, stable, churn int) *concurrentCase {
	cc := &concurrentCase{byID: map[uint32]classify.Rule{}}
	for i := range stable {
		cc.stable = append(cc.stable, g.rule(uint32(i)))
	}
	cc.ref = &reference{rules: slices.Clone(cc.stable)}
	cc.ref.sort()
	cc.churn = make([]classify.Rule, churn)
	for i := range cc.churn {
		cc.churn[i] = g.rule(uint32(10000 + i))
		cc.byID[cc.churn[i].ID] = cc.churn[i]
	}
	cc.hs = make([]classify.Header, 256)
	for i := range cc.hs {
		cc.hs[i] = g.header(append(slices.Clone(cc.stable), cc.churn...))
	}
	return cc
}

// run looks up from two goroutines while updates churning rules are
// inserted and deleted in c (built from cc.stable), and fails on a result
// the guarantee does not allow.
func (cc *concurrentCase) run(t *testing.T, name string, c classify.Classifier, updates int) {
	t.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; !stop.Load(); i++ {
				h := &cc.hs[i%len(cc.hs)]
				id, ok := c.Lookup(h)
				wid, wok := cc.ref.lookup(h)
				if ok == wok && (id == wid || !ok) {
					continue
				}
				r, isChurn := cc.byID[id]
				if !ok || !isChurn || !r.Matches(h) || wok && rankOf(r) > rankOf(ruleByID(cc.ref, wid)) {
					bad.Store(fmt.Sprintf("%s: got %d,%v, stable best %d,%v", name, id, ok, wid, wok))
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(9, 9))
	in := map[uint32]bool{}
	for range updates {
		r := cc.churn[rng.IntN(len(cc.churn))]
		toggle(t, c, in, r)
	}
	stop.Store(true)
	wg.Wait()
	if b := bad.Load(); b != nil {
		t.Fatal(b)
	}
}

func rankOf(r classify.Rule) uint64 { return uint64(r.Precedence)<<32 | uint64(r.ID) }

func ruleByID(ref *reference, id uint32) classify.Rule {
	for _, r := range ref.rules {
		if r.ID == id {
			return r
		}
	}
	panic("no rule")
}

// toggle inserts r into c, or deletes it if in says it is there.
func toggle(t *testing.T, c classify.Classifier, in map[uint32]bool, r classify.Rule) {
	t.Helper()
	if in[r.ID] {
		if err := c.Delete(r.ID); err != nil {
			t.Fatal(err)
		}
	} else if err := c.Insert(r); err != nil {
		t.Fatal(err)
	}
	in[r.ID] = !in[r.ID]
}
