package classify

// LookupStats counts the work of one RankedTuple lookup: tuples probed
// (both levels), buckets hit and rules verified.
func (c *RankedTuple) LookupStats(h *Header) (tuples, buckets, rules, probes int) {
	var walk func(s *space, best uint64) uint64
	walk = func(s *space, best uint64) uint64 {
		for _, e := range *s.list.Load() {
			if e.best >= best {
				break
			}
			tuples++
			fp := e.t.hash(h)
			tab := e.t.tab.Load()
			for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
				probes++
				if tab.slots[j].n.Load() == nil || tab.slots[j].fp == fp {
					break
				}
			}
			_, n := e.t.find(fp)
			if n == nil || n.r.rank >= best {
				continue
			}
			buckets++
			if n.sub != nil {
				best = walk(n.sub, best)
				continue
			}
			for ; n != nil && n.r.rank < best; n = n.next {
				rules++
				if n.r.match(h) {
					best = n.r.rank
					break
				}
			}
		}
		return best
	}
	walk(c.top, noRank)
	return
}

// Shape lists tuple keys and sizes of the top level.
func (c *RankedTuple) Shape() (keys [][8]uint8, counts []int, subs int) {
	for _, e := range *c.top.list.Load() {
		keys = append(keys, e.t.key)
		counts = append(counts, e.t.count)
		tab := e.t.tab.Load()
		for i := range tab.slots {
			if n := tab.slots[i].n.Load(); n != nil && n.sub != nil {
				subs++
			}
		}
	}
	return
}
