package classify

import (
	"fmt"
	"sync"
)

// TSS is classic tuple space search (Srinivasan et al., SIGCOMM 1999),
// the L25GC paper's PDR-TSS: one hash table per distinct combination of
// field prefix lengths (ports as the prefix their range shares), every
// table probed for every packet, the best match kept. Its engine
// (tssCore) keeps lock-free bucket lists behind atomic slot pointers, as
// RankedTuple did before issue 4; relaxation, splitting, best-first early
// termination and the presence filter are left out on purpose so that
// TSS stays the classic baseline.
type TSS struct {
	mu    sync.Mutex
	sp    *space
	locs  map[uint32]loc
	inner tssCore // bookkeeping helpers (insertIn/removed) over sp
}

// NewTSS builds a TSS classifier.
func NewTSS(rules []Rule) (*TSS, error) {
	sorted, err := checkRules(rules)
	if err != nil {
		return nil, fmt.Errorf("tss: %w", err)
	}
	c := &TSS{sp: newSpace(2, nil, 0), locs: make(map[uint32]loc, len(sorted))}
	c.inner.top, c.inner.locs = c.sp, c.locs
	for i := range sorted {
		c.inner.insertIn(c.sp, compile(&sorted[i]))
	}
	return c, nil
}

// Lookup implements Classifier.
func (c *TSS) Lookup(h *Header) (uint32, bool) {
	best := noRank
	list := *c.sp.list.Load()
	for i := range list {
		t := list[i].t
		fp := t.hash(h)
		tab := t.tab.Load()
		for j := fp & tab.mask; ; j = (j + 1) & tab.mask {
			sl := &tab.slots[j]
			n := sl.n.Load()
			if n == nil {
				break
			}
			if sl.fp != fp {
				continue
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
	if best == noRank {
		return 0, false
	}
	return uint32(best), true
}

// Insert implements Classifier.
func (c *TSS) Insert(r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.locs[r.ID]; dup {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	c.inner.insertIn(c.sp, compile(&r))
	return nil
}

// Delete implements Classifier.
func (c *TSS) Delete(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.inner.deleteLocked(id); err != nil {
		return fmt.Errorf("tss: %w", err)
	}
	return nil
}

// Len implements Classifier.
func (c *TSS) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.locs)
}

// MemoryBytes implements Classifier.
func (c *TSS) MemoryBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sp.memory() + 24*len(c.locs)
}

// Name implements Classifier.
func (c *TSS) Name() string { return string(KindTSS) }
