package classify

import (
	"fmt"
	"slices"
)

// Classifier finds the highest-precedence rule matching a header.
//
// Lookup may be called from any number of goroutines, concurrently with
// Insert and Delete, and neither blocks nor allocates. A lookup that runs
// while updates happen sees each update whole: every rule present for the
// whole lookup is considered, and no rule deleted before it began is
// returned.
type Classifier interface {
	// Lookup returns the ID of the best matching rule, or ok == false.
	Lookup(h *Header) (id uint32, ok bool)
	// Insert adds a rule; its ID must not be present.
	Insert(r Rule) error
	// Delete removes the rule with this ID.
	Delete(id uint32) error
	// Len is the number of rules.
	Len() int
	// MemoryBytes estimates the bytes the index holds (rules included).
	MemoryBytes() int
	// Name is the classifier's short name, as used in benchmarks.
	Name() string
}

// Kind names a classifier implementation.
type Kind string

// The implementations.
const (
	KindLinear        Kind = "linear"        // 3GPP baseline: precedence-ordered list, first match
	KindTSS           Kind = "tss"           // tuple space search (PDR-TSS)
	KindPartitionSort Kind = "partitionsort" // PartitionSort (PDR-PS), as chosen by L25GC
	KindRankedTuple   Kind = "rankedtuple"   // ours: ranked, merged two-level tuple space
	// KindForTable is not an implementation but ForTable's choice for a
	// table (a small index up to smallTable rules, RankedTuple above): what
	// the UPF runs for per-session tables.
	KindForTable Kind = "fortable"
)

// Kinds lists every implementation, baseline first.
var Kinds = []Kind{KindLinear, KindTSS, KindPartitionSort, KindRankedTuple}

// Build creates a classifier of the given kind holding rules.
func Build(kind Kind, rules []Rule) (Classifier, error) {
	switch kind {
	case KindLinear:
		return NewLinear(rules)
	case KindTSS:
		return NewTSS(rules)
	case KindPartitionSort:
		return NewPartitionSort(rules)
	case KindRankedTuple:
		return NewRankedTuple(rules)
	case KindForTable:
		return ForTable(rules, Hints{})
	}
	return nil, fmt.Errorf("classify: unknown classifier %q", kind)
}

// checkRules validates rules and their IDs' uniqueness, and returns them
// in rank order (the order bulk builds insert in).
func checkRules(rules []Rule) ([]Rule, error) {
	seen := make(map[uint32]struct{}, len(rules))
	for i := range rules {
		if err := rules[i].Validate(); err != nil {
			return nil, err
		}
		if _, dup := seen[rules[i].ID]; dup {
			return nil, fmt.Errorf("%w: %d", ErrDuplicateID, rules[i].ID)
		}
		seen[rules[i].ID] = struct{}{}
	}
	sorted := slices.Clone(rules)
	slices.SortFunc(sorted, func(a, b Rule) int {
		ra, rb := a.rank(), b.rank()
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	return sorted, nil
}
