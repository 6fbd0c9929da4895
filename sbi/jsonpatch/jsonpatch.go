// Package jsonpatch applies a JSON Patch (RFC 6902), as the 3GPP APIs
// carry it (application/json-patch+json, an array of TS 29.571 PatchItem),
// to a JSON document: github.com/evanphx/json-patch does the work, this
// package adds what it leaves to its caller (the op names, the JSON
// Pointer syntax of RFC 6901, no negative indices, a bound on growth).
package jsonpatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/free5gc/openapi/models"
)

// MaxGrowth bounds how many bytes the copy operations of one patch may add
// to a document: a handful of copies of the whole document would otherwise
// double it each time.
const MaxGrowth = 1 << 20

// Apply applies patch to the JSON document doc (RFC 6902 §4-5): the
// operations in order, stopping at the first that fails, in which case the
// error names it and doc is not changed. PatchItem has lost the
// difference between an absent value member and "value": null; both are
// taken as null.
func Apply(doc []byte, patch []models.PatchItem) ([]byte, error) {
	return ApplyWith(doc, patch, Options{})
}

// Options are departures from RFC 6902 that a resource may choose.
type Options struct {
	// ReplaceAbsent applies a replace whose target is a member missing
	// from an object as an add of that member. RFC 6902 §4.3 requires the
	// target to exist, but deployed 3GPP consumers replace members a
	// resource may lack (free5GC's UDM patches /pei of an AMF
	// registration that has none), and an encoder that leaves out empty
	// members makes "absent" and "empty" the same resource. A replace of
	// a missing array element, or under a missing parent, still fails.
	ReplaceAbsent bool
}

// ApplyWith is Apply with the departures o allows.
func ApplyWith(doc []byte, patch []models.PatchItem, o Options) ([]byte, error) {
	ops := make(jsonpatch.Patch, 0, len(patch))
	for i, it := range patch {
		op, err := operation(it)
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		ops = append(ops, op)
	}
	opts := jsonpatch.NewApplyOptions()
	opts.SupportNegativeIndices = false // RFC 6901 §4: an index is digits, "-" only where §4.1 allows it
	opts.AllowMissingPathOnRemove = false
	opts.EnsurePathExistsOnAdd = false
	opts.AccumulatedCopySizeLimit = MaxGrowth
	if !o.ReplaceAbsent || !slices.ContainsFunc(patch, func(it models.PatchItem) bool { return it.Op == models.PatchOperation_REPLACE }) {
		return ops.ApplyWithOptions(doc, opts) // a new document; doc is left as it was
	}
	// One operation at a time, each replace judged against the document
	// the operations before it made. The library copies before it
	// changes, so doc is left as it was whatever fails.
	for i, op := range ops {
		if patch[i].Op == models.PatchOperation_REPLACE && absentMember(doc, patch[i].Path) {
			add, err := operation(models.PatchItem{Op: models.PatchOperation_ADD, Path: patch[i].Path, Value: patch[i].Value})
			if err != nil {
				return nil, fmt.Errorf("operation %d: %w", i, err)
			}
			op = add
		}
		next, err := jsonpatch.Patch{op}.ApplyWithOptions(doc, opts)
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		doc = next
	}
	return doc, nil
}

// absentMember reports whether pointer names a member missing from an
// object that doc has (RFC 6901 evaluation up to the last token).
func absentMember(doc []byte, pointer string) bool {
	if pointer == "" {
		return false
	}
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return false
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, tok := range tokens {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~") // RFC 6901 §4: ~1 first
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return i == len(tokens)-1
			}
			v = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return false
			}
			v = c[n]
		default:
			return false
		}
	}
	return false
}

// operation converts one PatchItem to the library's operation, checking
// what the library leaves to its caller: the op and the JSON Pointers.
func operation(it models.PatchItem) (jsonpatch.Operation, error) {
	op := jsonpatch.Operation{}
	set := func(member string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", member, err)
		}
		m := json.RawMessage(raw)
		op[member] = &m
		return nil
	}
	if err := checkPointer(it.Path); err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if err := set("op", it.Op); err != nil {
		return nil, err
	}
	if err := set("path", it.Path); err != nil {
		return nil, err
	}
	switch it.Op {
	case models.PatchOperation_ADD, models.PatchOperation_REPLACE, models.PatchOperation_TEST:
		if err := set("value", it.Value); err != nil {
			return nil, err
		}
	case models.PatchOperation_MOVE, models.PatchOperation_COPY:
		if err := checkPointer(it.From); err != nil {
			return nil, fmt.Errorf("from: %w", err)
		}
		if err := set("from", it.From); err != nil {
			return nil, err
		}
	case models.PatchOperation_REMOVE:
	default:
		return nil, fmt.Errorf("op %q is none of add, remove, replace, move, copy, test (RFC 6902 §4)", it.Op)
	}
	return op, nil
}

// checkPointer checks the syntax of a JSON Pointer (RFC 6901 §3): empty
// (the whole document) or "/"-separated reference tokens in which "~" is
// only the start of the escapes "~0" and "~1".
func checkPointer(p string) error {
	if p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not a JSON Pointer: it does not start with /", p)
	}
	for i := strings.IndexByte(p, '~'); i >= 0; {
		if i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Errorf("%q is not a JSON Pointer: ~ not followed by 0 or 1", p)
		}
		j := strings.IndexByte(p[i+2:], '~')
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return nil
}
