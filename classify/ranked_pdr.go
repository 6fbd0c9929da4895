package classify

// PDRs that carry PDI fields beyond the SDF filter (source interface,
// TEID, UE IP, network instance, application, SPI, flow label) do not fit
// RankedTuple's 32-byte slots, and probing them through a slot, its aux
// entry and a separate full rule cost two to three cache misses more than
// the pre-issue-4 engine. Those that name their session exactly go to
// the session engine (ranked_sess.go); the others, and sessions of more
// than sessMax rules, live in that older engine (tssCore, levels 0 and
// 1): level 0 keys a PDR on its session (TEID and/or UE IP), so a bucket
// is one session's PDRs, whole rules inline in its nodes; buckets of more
// than splitAt rules split by ports, protocol and QFI, and such buckets
// by exact field lengths. ClassBench-style
// rules keep the slot tables.

// lookup is the best-first search of a level-0 or level-1 space: tuples
// in bound order, stopping once none can beat best; the presence filter
// answers most misses from cache.
func (s *space) lookup(h *Header, best uint64) uint64 {
	return lookupIn(*s.list.Load(), h, best)
}

// lookupIn searches a space's published tuple list.
func lookupIn(list []tupleRef, h *Header, best uint64) uint64 {
	for i := range list {
		if list[i].best >= best {
			break
		}
		t := list[i].t
		fp := t.hash(h)
		tab := t.tab.Load()
		if !tab.mayHave(fp) {
			continue
		}
		for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
			sl := &tab.slots[j]
			n := sl.n.Load()
			if n == nil {
				break
			}
			if sl.fp != fp {
				continue
			}
			if n.sub != nil {
				// A fingerprint collision may enter a foreign split:
				// harmless, its rules are verified whole.
				if n.r.rank < best {
					best = n.sub.lookup(h, best)
				}
				break
			}
			for ; n != nil && n.r.rank < best; n = n.next {
				if n.r.match(h) {
					best = n.r.rank
					break
				}
			}
			break
		}
	}
	return best
}

// isPDR reports whether a compiled rule goes to the PDR engine.
func isPDR(c *crule) bool { return c.ext != nil }
