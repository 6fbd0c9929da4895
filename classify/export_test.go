package classify

import "math/bits"

// LookupStats counts the work of one RankedTuple lookup: tuples probed
// (both levels), slots verified, splits entered and control words read.
func (c *RankedTuple) LookupStats(h *Header) (tuples, slots, splits, words int) {
	p := prep(h)
	var walk func(s *rtSpace, best uint64) uint64
	walk = func(s *rtSpace, best uint64) uint64 {
		for _, e := range *s.list.Load() {
			final := false
			if e.best >= best {
				break
			}
			if is4(e.kind) && (p.n4s&e.ms)|(p.n4d&e.md) != 0 {
				continue
			}
			tuples++
			tab := e.tab
			x := rtMix(e.t.hkey(h))
			g, _ := bits.Mul64(x, tab.ng)
			pat := rtH2(x) * ctrlLSB
			for {
				words++
				cw := tab.ctrl[g]
				v := cw ^ pat
				for m := (v - ctrlLSB) &^ v &^ cw & ctrlMSB; m != 0; m &= m - 1 {
					sl := &tab.slots[g*8+uint64(bits.TrailingZeros64(m)>>3)]
					if sl.rank >= best {
						continue
					}
					slots++
					if sl.miss(p.src, p.dst, p.n4s, p.n4d, p.sport, p.dport, p.proto) != 0 {
						continue
					}
					a := tab.auxOf(sl)
					switch {
					case a == nil:
						best = sl.rank
						final = s.level == 0 && sl.aux == slotFinal && uint32(best>>32) < e.fin
					case a.sub == nil:
						if a.c.match(h) {
							best = sl.rank
						}
					case (a.c == nil || a.c.match(h)) && a.sub.best.Load() < best:
						splits++
						best = walk(a.sub, best)
					}
				}
				if cw&^(cw<<6)&ctrlMSB != 0 {
					break
				}
				if g++; g == tab.ng {
					g = 0
				}
			}
			if final {
				break
			}
		}
		return best
	}
	walk(c.top.Load(), noRank)
	return
}

// Shape lists the top level's tuples: kind and lengths, live slots, table
// slots, bound, and splits.
func (c *RankedTuple) Shape() (keys [][5]uint8, counts, sizes []int, bests []uint64, subs int) {
	for _, e := range *c.top.Load().list.Load() {
		k := e.t.key
		keys = append(keys, [5]uint8{k.kind, k.l[0], k.l[1], k.l[2], k.l[3]})
		counts = append(counts, e.t.count)
		tab := e.tab
		sizes = append(sizes, len(tab.slots))
		bests = append(bests, e.best)
		for _, a := range *tab.aux.Load() {
			if a.sub != nil {
				subs++
			}
		}
	}
	return
}

// GridChoices is the number of grids a RankedTuple build chooses from:
// the second half are the first with gridPorts (withPorts).
var GridChoices = len(gridChoices)

// CostSlot and CostSplit are chooseGrid's weights, in tuple probes.
const CostSlot, CostSplit = costSlot, costSplit

// NewRankedTupleGrid builds a RankedTuple on the i-th grid choice,
// whatever the rules (until they double, or fall to a quarter, and the
// grid is chosen again).
func NewRankedTupleGrid(rules []Rule, i int) (*RankedTuple, error) {
	return newRankedTuple(rules, func([]rslot) grid4 { return gridChoices[i] })
}

// Grid lists the IPv4 prefix lengths c keys its tuples on, and "ports"
// if it keys single-port rules on their port.
func (c *RankedTuple) Grid() string {
	return c.grid.String()
}

// Rebuilds is the number of times c moved its rules to a new grid.
func (c *RankedTuple) Rebuilds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.moves
}

// hdr4 is what slots test, as the probe loops compute it: the IPv4 addresses,
// and all ones in n4s/n4d where the address is not IPv4 (so that any
// IPv4 prefix but /0 fails).
type hdr4 struct {
	src, dst, n4s, n4d uint32
	sport, dport       uint16
	proto              uint8
}

func prep(h *Header) hdr4 {
	p := hdr4{src: uint32(h.SrcIP.Lo), dst: uint32(h.DstIP.Lo), sport: h.SrcPort, dport: h.DstPort, proto: h.Proto}
	if !h.SrcIP.Is4() {
		p.n4s = ^uint32(0)
	}
	if !h.DstIP.Is4() {
		p.n4d = ^uint32(0)
	}
	return p
}

// SessionStats reports the session engine's live buckets and the
// sessions it moved to tssCore.
func SessionStats(c *RankedTuple) (buckets, spilled int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.tab.Load().live, len(c.sess.spilled)
}

// TopLookup4 runs one IPv4 probe loop over the top space's tuples from
// bound best: lookup4Go if goLoop, else lookup4 (assembly on amd64).
func (c *RankedTuple) TopLookup4(h *Header, best uint64, goLoop bool) (uint64, int) {
	list := *c.top.Load().list.Load()
	if goLoop {
		return lookup4Go(list, h, best)
	}
	return lookup4(list, h, best)
}

// KPort is the odd constant portKey multiplies a port by.
const KPort = kPort
