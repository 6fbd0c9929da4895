package classify

// SmallShape describes a ForTable classifier's small index: the inner
// nodes on its longest path, its leaves, and the rule copies they hold
// (-1s once indexed by RankedTuple).
func (a *Auto) SmallShape() (depth, leaves, entries int) {
	x := a.small.Load()
	if x == nil {
		return -1, -1, -1
	}
	for i := range x.nodes {
		if x.nodes[i].kind == keyLeaf {
			leaves++
		}
	}
	return x.depth(), leaves, len(x.lists)
}

// SmallCost returns the inner nodes a lookup of h passes and the rules it
// tests (-1s once indexed by RankedTuple).
func (a *Auto) SmallCost(h *Header) (nodes, tested int) {
	x := a.small.Load()
	if x == nil {
		return -1, -1
	}
	x.cost(0, h, packWord(h), noRank, &nodes, &tested)
	return nodes, tested
}

// cost follows search, counting.
func (x *smallIndex) cost(ni uint32, h *Header, hw uint64, bound uint64, nodes, tested *int) uint64 {
	n := x.descend(ni, h, hw, maxDepth)
	for s := 0; x.descend(ni, h, hw, s) != n; s++ {
		*nodes++
	}
	if n.kind == keyUnion {
		*nodes++
		for _, p := range x.parts[n.from:n.to] {
			if p.min >= bound {
				break
			}
			bound = x.cost(p.node, h, hw, bound, nodes, tested)
		}
		return bound
	}
	for _, i := range x.lists[n.from:n.to] {
		r := &x.rules[i]
		if r.rank >= bound {
			break
		}
		*tested++
		if (hw^r.w)&r.wm == 0 && r.matches(h) {
			return r.rank
		}
	}
	return bound
}

// SmallBuildWork is the build step budget of the small index.
const SmallBuildWork = buildWork

// SmallWork returns the build steps the current small index took (-1 once
// indexed by RankedTuple).
func (a *Auto) SmallWork() int {
	x := a.small.Load()
	if x == nil {
		return -1
	}
	return x.work
}
