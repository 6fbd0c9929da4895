package classify_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tern5g/tern/classify"
)

// sessGen makes PDR tables like a UPF's global one, on few sessions so
// that buckets grow past the session engine's limit and shrink again:
// rules keyed on TEID or on an exact UE address (IPv4 or IPv6), with and
// without source interface; PDRs that name no session exactly (UE
// prefixes, source interface or network instance alone); and SDF-only
// rules. Precedences come from a small set, so ties are common.
type sessGen struct{ r *rand.Rand }

func (g sessGen) ue() classify.Addr {
	if g.r.IntN(2) == 0 {
		return classify.AddrFrom4(0x0a000000 | uint32(g.r.IntN(4)))
	}
	return classify.Addr{Hi: 0x20010db8_00000000 | uint64(g.r.IntN(2)), Lo: uint64(g.r.IntN(3))}
}

func (g sessGen) server() classify.Prefix {
	if g.r.IntN(3) == 0 {
		return classify.Prefix{}
	}
	return classify.PrefixFrom4(0xc0a80000|uint32(g.r.IntN(4)), []int{16, 24, 32}[g.r.IntN(3)])
}

func (g sessGen) rule(id uint32) classify.Rule {
	r := classify.Rule{ID: id, Precedence: uint32(g.r.IntN(6))}
	switch g.r.IntN(10) {
	case 0, 1, 2: // uplink: TEID
		r.Has |= classify.FieldTEID
		r.TEID = uint32(g.r.IntN(6))
		if g.r.IntN(2) == 0 {
			r.UEIP = classify.Prefix{Addr: g.ue(), Len: 128}
		}
	case 3, 4, 5: // downlink: UE address
		r.UEIP = classify.Prefix{Addr: g.ue(), Len: 128}
	case 6: // a UE prefix, no session named
		if g.r.IntN(2) == 0 {
			r.UEIP = classify.PrefixFrom4(0x0a000000, 30)
		} else {
			r.UEIP = classify.Prefix{Addr: classify.Addr{Hi: 0x20010db8_00000000}, Len: 64}
		}
	case 7: // network instance only
		r.Has |= classify.FieldNetworkInstance
		r.NetworkInstance = uint32(g.r.IntN(2))
	case 8: // source interface only
		r.Has |= classify.FieldSourceInterface
	default: // SDF only
		r.SrcIP, r.DstIP = g.server(), g.server()
	}
	if g.r.IntN(4) != 0 {
		r.Has |= classify.FieldSourceInterface
		r.SourceInterface = uint8(g.r.IntN(2))
	}
	g.sdf(&r)
	return r
}

// sdf adds SDF filter fields, and now and then a network instance.
func (g sessGen) sdf(r *classify.Rule) {
	if g.r.IntN(2) == 0 {
		return
	}
	switch g.r.IntN(3) {
	case 0:
		r.Has |= classify.FieldDstPort | classify.FieldProto
		r.DstPort, r.Proto = classify.PortRange{Lo: 80, Hi: 80 + uint16(g.r.IntN(2))}, []uint8{6, 17}[g.r.IntN(2)]
		r.DstIP = g.server()
	case 1:
		r.Has |= classify.FieldSrcPort | classify.FieldToS
		r.SrcPort, r.ToS, r.ToSMask = classify.PortRange{Lo: 443, Hi: 443}, uint8(g.r.IntN(2))<<2, 0xfc
		r.SrcIP = g.server()
	default:
		r.Has |= classify.FieldQFI
		r.QFI = uint8(1 + g.r.IntN(2))
	}
	if g.r.IntN(5) == 0 {
		r.Has |= classify.FieldNetworkInstance
		r.NetworkInstance = uint32(g.r.IntN(2))
	}
}

// header draws a packet near a rule, or at random.
func (g sessGen) header(rules []classify.Rule) classify.Header {
	h := classify.Header{
		SrcIP: classify.AddrFrom4(0xc0a80000 | uint32(g.r.IntN(4))<<8 | uint32(g.r.IntN(2))), DstIP: classify.AddrFrom4(0xc0a80000 | uint32(g.r.IntN(4))),
		UEIP: g.ue(), TEID: uint32(g.r.IntN(6)), SourceInterface: uint8(g.r.IntN(2)), NetworkInstance: uint32(g.r.IntN(2)),
		SrcPort: []uint16{443, 1000}[g.r.IntN(2)], DstPort: uint16(79 + g.r.IntN(3)), Proto: []uint8{6, 17}[g.r.IntN(2)],
		ToS: uint8(g.r.IntN(2)) << 2, QFI: uint8(g.r.IntN(3)),
	}
	if len(rules) == 0 || g.r.IntN(4) == 0 {
		return h
	}
	r := &rules[g.r.IntN(len(rules))]
	if r.UEIP.Len > 0 {
		h.UEIP = r.UEIP.Addr
	}
	if r.Has&classify.FieldTEID != 0 {
		h.TEID = r.TEID
	}
	if r.Has&classify.FieldSourceInterface != 0 {
		h.SourceInterface = r.SourceInterface
	}
	return h
}

// TestSessionEngineChurnAgrees runs random inserts and deletes of
// session-keyed, other PDR and SDF-only rules through RankedTuple and
// checks it against Linear and the reference after every update.
func TestSessionEngineChurnAgrees(t *testing.T) {
	steps := 8000
	if testing.Short() {
		steps = 2000
	}
	for seed := range uint64(6) {
		g := sessGen{rand.New(rand.NewPCG(seed, 17))}
		var rules []classify.Rule
		for i := range 100 {
			rules = append(rules, g.rule(uint32(i)))
		}
		rt, err := classify.NewRankedTuple(rules)
		if err != nil {
			t.Fatal(err)
		}
		lin, err := classify.NewLinear(rules)
		if err != nil {
			t.Fatal(err)
		}
		ref := &reference{rules: slices.Clone(rules)}
		ref.sort()
		next := uint32(len(rules))
		for step := range steps {
			// Drift between growing and shrinking, so that sessions cross
			// the bucket limit both ways and empty out.
			grow := step/1000%2 == 0
			if len(ref.rules) > 0 && (g.r.IntN(3) == 0) == grow || len(ref.rules) > 400 {
				id := ref.rules[g.r.IntN(len(ref.rules))].ID
				ref.delete(id)
				for _, c := range []classify.Classifier{rt, lin} {
					if err := c.Delete(id); err != nil {
						t.Fatalf("%s delete %d: %v", c.Name(), id, err)
					}
				}
			} else {
				r := g.rule(next)
				next++
				ref.rules = append(ref.rules, r)
				ref.sort()
				for _, c := range []classify.Classifier{rt, lin} {
					if err := c.Insert(r); err != nil {
						t.Fatalf("%s insert: %v", c.Name(), err)
					}
				}
			}
			for range 8 {
				h := g.header(ref.rules)
				want := result(ref.lookup(&h))
				if l := result(lin.Lookup(&h)); l != want {
					t.Fatalf("seed %d step %d: linear %d, reference %d", seed, step, l, want)
				}
				if got := result(rt.Lookup(&h)); got != want {
					t.Fatalf("seed %d step %d: rankedtuple %d, want %d for %+v", seed, step, got, want, h)
				}
			}
			if rt.Len() != len(ref.rules) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, rt.Len(), len(ref.rules))
			}
		}
		for _, r := range ref.rules {
			if err := rt.Delete(r.ID); err != nil {
				t.Fatal(err)
			}
		}
		if buckets, spilled := classify.SessionStats(rt); buckets != 0 || spilled != 0 || rt.Len() != 0 {
			t.Errorf("seed %d: emptied table keeps %d buckets, %d spilled sessions, %d rules", seed, buckets, spilled, rt.Len())
		}
	}
}

// TestSessionEngineTies checks equal precedences across the engines: the
// lower ID wins (TS 29.244 §5.2.1 leaves ties open; rank breaks them),
// whether the rules share a bucket, sit in two buckets (TEID and UE
// keys) or in another engine.
func TestSessionEngineTies(t *testing.T) {
	ue := classify.Prefix{Addr: classify.Addr{Hi: 0x20010db8_00000000, Lo: 7}, Len: 128}
	teid := classify.Rule{Precedence: 9, Has: classify.FieldTEID | classify.FieldSourceInterface, TEID: 5, UEIP: ue}
	byUE := classify.Rule{Precedence: 9, Has: classify.FieldSourceInterface, UEIP: ue}
	byPrefix := classify.Rule{Precedence: 9, UEIP: classify.Prefix{Addr: ue.Addr, Len: 64}}
	sdf := classify.Rule{Precedence: 9}
	h := classify.Header{UEIP: ue.Addr, TEID: 5}
	for _, order := range [][]classify.Rule{{teid, byUE, byPrefix, sdf}, {sdf, byPrefix, byUE, teid}, {byUE, teid, teid, sdf}} {
		c, err := classify.NewRankedTuple(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := []uint32{40, 30, 20, 10}
		for i, r := range order {
			r.ID = ids[i]
			if err := c.Insert(r); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []uint32{10, 20, 30, 40} {
			if id, ok := c.Lookup(&h); !ok || id != want {
				t.Fatalf("order %v: got %d,%v, want %d", order, id, ok, want)
			}
			if err := c.Delete(want); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSessionEngineSpill fills one session past the bucket limit, so
// that it moves to tssCore, and checks precedence across the move.
func TestSessionEngineSpill(t *testing.T) {
	ue := classify.PrefixFrom4(0x0a000001, 32)
	c, err := classify.NewRankedTuple(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := classify.Header{UEIP: ue.Addr, SourceInterface: 1, DstPort: 7}
	for i := range uint32(20) {
		r := classify.Rule{ID: i, Precedence: 100 - i, Has: classify.FieldSourceInterface | classify.FieldDstPort,
			SourceInterface: 1, UEIP: ue, DstPort: classify.PortRange{Lo: 7, Hi: 7}}
		if err := c.Insert(r); err != nil {
			t.Fatal(err)
		}
		if id, ok := c.Lookup(&h); !ok || id != i {
			t.Fatalf("after inserting %d: got %d,%v", i, id, ok)
		}
	}
	if buckets, spilled := classify.SessionStats(c); buckets != 0 || spilled != 1 {
		t.Errorf("20 rules of one session: %d buckets, %d spilled sessions; want 0 and 1", buckets, spilled)
	}
	for i := uint32(19); i > 0; i-- {
		if err := c.Delete(i); err != nil {
			t.Fatal(err)
		}
		if id, ok := c.Lookup(&h); !ok || id != i-1 {
			t.Fatalf("after deleting %d: got %d,%v", i, id, ok)
		}
	}
}

// TestSessionEngineConcurrentUpdates runs the concurrency check on
// session-keyed tables whose buckets change, spill and empty while
// lookups run.
func TestSessionEngineConcurrentUpdates(t *testing.T) {
	g := sessGen{rand.New(rand.NewPCG(3, 3))}
	cc := &concurrentCase{byID: map[uint32]classify.Rule{}}
	for i := range 150 {
		cc.stable = append(cc.stable, g.rule(uint32(i)))
	}
	cc.ref = &reference{rules: slices.Clone(cc.stable)}
	cc.ref.sort()
	for i := range 150 {
		r := g.rule(uint32(10000 + i))
		cc.churn = append(cc.churn, r)
		cc.byID[r.ID] = r
	}
	all := append(slices.Clone(cc.stable), cc.churn...)
	for range 256 {
		cc.hs = append(cc.hs, g.header(all))
	}
	c, err := classify.NewRankedTuple(cc.stable)
	if err != nil {
		t.Fatal(err)
	}
	cc.run(t, "rankedtuple", c, 6000)
}
