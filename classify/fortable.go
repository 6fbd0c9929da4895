package classify

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Hints describe a table to ForTable.
type Hints struct {
	// Global marks one table shared by many sessions (UPF-wide lookup by
	// TEID or UE IP first); it starts indexed whatever its initial size.
	Global bool
}

// smallTable is the size up to which a precedence-ordered scan is used.
// Measured with `tern bench classify` (2 shared cores, medians of 5
// passes): on 5G per-session tables the scan beat RankedTuple at 8, 16 and
// 32 PDRs (34/62/65 ns vs 59/88/108 ns) and lost from 64 (110 vs 102 ns;
// 168 vs 121 ns at 100); on ClassBench acl1 prefixes RankedTuple wins from
// 4 rules. Session tables are the UPF's common case, so the switch is at 32.
const smallTable = 32

// ForTable returns the classifier the UPF should use for a table: a
// linear scan while the table is small, switching once (for good) to
// RankedTuple when it grows past smallTable rules or when hints.Global is
// set. The result is safe for concurrent lookups during updates.
func ForTable(rules []Rule, hints Hints) (Classifier, error) {
	a := &Auto{}
	var err error
	var c Classifier
	if hints.Global || len(rules) > smallTable {
		c, err = NewRankedTuple(rules)
		a.indexed = true
	} else {
		c, err = NewLinear(rules)
		if err == nil {
			a.pending = append([]Rule(nil), rules...)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("classify: table: %w", err)
	}
	a.cur.Store(&c)
	return a, nil
}

// Auto is the classifier ForTable returns.
type Auto struct {
	mu      sync.Mutex
	cur     atomic.Pointer[Classifier]
	indexed bool
	pending []Rule // the small table's rules, kept to build the index from
}

// Lookup implements Classifier.
func (a *Auto) Lookup(h *Header) (uint32, bool) { return (*a.cur.Load()).Lookup(h) }

// Insert implements Classifier.
func (a *Auto) Insert(r Rule) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := *a.cur.Load()
	if err := c.Insert(r); err != nil {
		return err
	}
	if a.indexed {
		return nil
	}
	a.pending = append(a.pending, r)
	if len(a.pending) <= smallTable {
		return nil
	}
	// The new index is complete before it is published, so lookups see
	// the old or the new classifier, both holding every rule.
	idx, err := NewRankedTuple(a.pending)
	if err != nil {
		return fmt.Errorf("classify: index table: %w", err)
	}
	var next Classifier = idx
	a.cur.Store(&next)
	a.indexed, a.pending = true, nil
	return nil
}

// Delete implements Classifier.
func (a *Auto) Delete(id uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := (*a.cur.Load()).Delete(id); err != nil {
		return err
	}
	for i := range a.pending {
		if a.pending[i].ID == id {
			a.pending = append(a.pending[:i], a.pending[i+1:]...)
			break
		}
	}
	return nil
}

// Len implements Classifier.
func (a *Auto) Len() int { return (*a.cur.Load()).Len() }

// MemoryBytes implements Classifier.
func (a *Auto) MemoryBytes() int { return (*a.cur.Load()).MemoryBytes() }

// Name implements Classifier.
func (a *Auto) Name() string { return "auto(" + (*a.cur.Load()).Name() + ")" }
