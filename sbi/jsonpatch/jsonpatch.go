// Package jsonpatch applies a JSON Patch (RFC 6902), as the 3GPP APIs
// carry it (application/json-patch+json, an array of TS 29.571 PatchItem),
// to a JSON document: github.com/evanphx/json-patch does the work, this
// package adds what it leaves to its caller (the op names, the JSON
// Pointer syntax of RFC 6901, no negative indices) and the bounds every
// resource shares (MaxOperations, MaxDocument).
package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/free5gc/openapi/models"
)

// Bounds on a patch and on the documents it works on, shared by every
// resource that takes a JSON Patch (the NRF's profiles, the UDR's
// authentication-subscription and amf-3gpp-access), so that no patch
// costs more than a few passes over a document of MaxDocument bytes.
// The 3GPP PATCHes carry a handful of operations on documents of a few
// KiB (a heartbeat: one or two; free5GC's UDM: one to three; an NF
// profile: well under 100 KiB), so no legitimate one comes near them.
const (
	// MaxOperations bounds the operations of one patch.
	MaxOperations = 64
	// MaxDocument bounds, in bytes of JSON, the document patched, the
	// result, the operations of the patch (together), and what its copy
	// operations may add: a handful of copies of the whole document
	// would otherwise double it each time.
	MaxDocument = 1 << 20
)

// ErrTooLarge is what Apply and ApplyWith return (wrapped) for a patch or
// a document over MaxOperations or MaxDocument. A resource answers it as
// it answers any patch it cannot apply: 400 INVALID_MSG_FORMAT (TS 29.500
// §5.2.7.2; Table 5.2.7.2-1 has no cause for 413, and the HTTP binding
// already answers a body over its own bound with 413).
var ErrTooLarge = errors.New("over the JSON Patch bounds")

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
	//
	// It is a rewrite of the patch, not a look at the document: a replace
	// whose last reference token cannot be an array index is an add,
	// which RFC 6902 §4.1 makes the same operation on a member that is
	// there, and which fails, as the replace would, where the parent is
	// an array or missing. A token that can be an array index (digits,
	// "-") keeps the replace of RFC 6902, on an object too: the parent's
	// kind is not known before the operations ahead of it apply.
	ReplaceAbsent bool
}

// ApplyWith is Apply with the departures o allows.
func ApplyWith(doc []byte, patch []models.PatchItem, o Options) ([]byte, error) {
	if len(patch) > MaxOperations {
		return nil, fmt.Errorf("%d operations, more than %d: %w", len(patch), MaxOperations, ErrTooLarge)
	}
	if len(doc) > MaxDocument {
		return nil, fmt.Errorf("the document has %d bytes, more than %d: %w", len(doc), MaxDocument, ErrTooLarge)
	}
	ops := make(jsonpatch.Patch, 0, len(patch))
	values := 0
	for i, it := range patch {
		if o.ReplaceAbsent && it.Op == models.PatchOperation_REPLACE && !indexToken(it.Path) {
			it.Op = models.PatchOperation_ADD
		}
		op, n, err := operation(it)
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		if values += n; values > MaxDocument {
			return nil, fmt.Errorf("operation %d: the operations add up to more than %d bytes: %w", i, MaxDocument, ErrTooLarge)
		}
		ops = append(ops, op)
	}
	opts := jsonpatch.NewApplyOptions()
	opts.SupportNegativeIndices = false // RFC 6901 §4: an index is digits, "-" only where §4.1 allows it
	opts.AllowMissingPathOnRemove = false
	opts.EnsurePathExistsOnAdd = false
	opts.AccumulatedCopySizeLimit = MaxDocument
	// One decoded document for the whole patch; the library copies
	// before it changes, so doc is left as it was whatever fails.
	out, err := ops.ApplyWithOptions(doc, opts)
	var copyErr *jsonpatch.AccumulatedCopySizeError
	if errors.As(err, &copyErr) {
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDocument {
		return nil, fmt.Errorf("the result has %d bytes, more than %d: %w", len(out), MaxDocument, ErrTooLarge)
	}
	return out, nil
}

// indexToken reports whether the last reference token of pointer could
// name an array element: "-" (RFC 6901 §4) or what the library reads as
// an index (strconv.Atoi, which also takes a sign and leading zeros).
// The root pointer "" counts as one: it names no member.
func indexToken(pointer string) bool {
	i := strings.LastIndexByte(pointer, '/')
	if i < 0 {
		return true
	}
	tok := pointer[i+1:]
	if tok == "-" {
		return true
	}
	_, err := strconv.Atoi(tok)
	return err == nil
}

// operation converts one PatchItem to the library's operation, checking
// what the library leaves to its caller: the op and the JSON Pointers.
// size is the operation's length in JSON.
func operation(it models.PatchItem) (op jsonpatch.Operation, size int, err error) {
	op = jsonpatch.Operation{}
	set := func(member string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", member, err)
		}
		m := json.RawMessage(raw)
		op[member] = &m
		size += len(raw)
		return nil
	}
	if err := checkPointer(it.Path); err != nil {
		return nil, 0, fmt.Errorf("path: %w", err)
	}
	if err := set("op", it.Op); err != nil {
		return nil, 0, err
	}
	if err := set("path", it.Path); err != nil {
		return nil, 0, err
	}
	switch it.Op {
	case models.PatchOperation_ADD, models.PatchOperation_REPLACE, models.PatchOperation_TEST:
		if err := set("value", it.Value); err != nil {
			return nil, 0, err
		}
	case models.PatchOperation_MOVE, models.PatchOperation_COPY:
		if err := checkPointer(it.From); err != nil {
			return nil, 0, fmt.Errorf("from: %w", err)
		}
		if err := set("from", it.From); err != nil {
			return nil, 0, err
		}
	case models.PatchOperation_REMOVE:
	default:
		return nil, 0, fmt.Errorf("op %q is none of add, remove, replace, move, copy, test (RFC 6902 §4)", it.Op)
	}
	return op, size, nil
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
