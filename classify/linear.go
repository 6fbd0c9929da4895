package classify

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Linear is the 3GPP baseline (TS 29.244 §5.2.1): rules in precedence
// order, the first match wins. Updates copy the list and publish the copy,
// so they cost O(n); for the handful of PDRs of a typical session that is
// cheaper than any index, and the scan is the fastest lookup there.
type Linear struct {
	mu    sync.Mutex // serializes writers
	rules atomic.Pointer[[]crule]
}

// NewLinear builds a Linear classifier.
func NewLinear(rules []Rule) (*Linear, error) {
	sorted, err := checkRules(rules)
	if err != nil {
		return nil, fmt.Errorf("linear: %w", err)
	}
	cs := make([]crule, len(sorted))
	for i := range sorted {
		cs[i] = compile(&sorted[i])
	}
	l := &Linear{}
	l.rules.Store(&cs)
	return l, nil
}

// Lookup implements Classifier.
func (l *Linear) Lookup(h *Header) (uint32, bool) {
	rs := *l.rules.Load()
	for i := range rs {
		if rs[i].match(h) {
			return uint32(rs[i].rank), true
		}
	}
	return 0, false
}

// Insert implements Classifier.
func (l *Linear) Insert(r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.rules.Load()
	if l.indexOf(old, r.ID) >= 0 {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	c := compile(&r)
	at, _ := slices.BinarySearchFunc(old, c.rank, func(x crule, k uint64) int { return cmpU64(x.rank, k) })
	next := make([]crule, 0, len(old)+1)
	next = append(append(append(next, old[:at]...), c), old[at:]...)
	l.rules.Store(&next)
	return nil
}

// Delete implements Classifier.
func (l *Linear) Delete(id uint32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.rules.Load()
	i := l.indexOf(old, id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	next := make([]crule, 0, len(old)-1)
	next = append(append(next, old[:i]...), old[i+1:]...)
	l.rules.Store(&next)
	return nil
}

func (l *Linear) indexOf(rs []crule, id uint32) int {
	for i := range rs {
		if uint32(rs[i].rank) == id {
			return i
		}
	}
	return -1
}

// Len implements Classifier.
func (l *Linear) Len() int { return len(*l.rules.Load()) }

// MemoryBytes implements Classifier.
func (l *Linear) MemoryBytes() int {
	n := 0
	for _, c := range *l.rules.Load() {
		n += ruleBytes(&c)
	}
	return n
}

// Name implements Classifier.
func (l *Linear) Name() string { return string(KindLinear) }

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
