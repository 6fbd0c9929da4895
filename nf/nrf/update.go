package nrf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// maxPatchGrowth bounds how many bytes the copy operations of one patch
// may add to a profile: a handful of copies of the whole document would
// otherwise double it each time. A profile is a few kilobytes.
const maxPatchGrowth = 1 << 20

// Update implements sbi.NFManagement (NFUpdate, TS 29.510 §5.2.2.3): it
// applies the JSON Patch (RFC 6902) to the instance's profile, atomically:
// either every operation applies and the result is a valid profile of the
// same instance, or nothing changes. The patched document is the profile
// as the NF set it: while the NRF holds the instance SUSPENDED for missed
// heartbeats its nfStatus is the one the NF registered, so a heart-beat
// ([{"op":"replace","path":"/nfStatus","value":"REGISTERED"}],
// §5.2.2.3.2) reads as the NF means it.
//
// Every update counts as a heartbeat and reinstates a suspended instance.
// It answers nil (204 No Content) when the profile is unchanged, as a
// heart-beat of a healthy instance leaves it, and otherwise the whole
// profile as stored (200 OK): after a change (subscribers get
// NF_PROFILE_CHANGED, as for a replacement by NFRegister), or when the
// NRF stored something else than the patch asked (heartBeatTimer is the
// NRF's, §5.2.2.2.2), so that the NF learns what the NRF keeps.
//
// Errors: 404 CauseNFInstanceNotFound; 400 CauseInvalidMsgFormat for a
// patch that cannot apply (an unknown op, a malformed JSON Pointer, a
// path that does not exist, a failing test op); 400
// CauseMandatoryIEMissing or CauseMandatoryIEIncorrect for one whose
// result is not a valid profile; 403 CauseModificationNotAllowed for one
// that changes nfInstanceId, the resource's own ID (TS 29.500 §5.2.7.2).
func (n *NRF) Update(ctx context.Context, nfInstanceID string, patch []models.PatchItem) (*models.Nrf_NFMgmt_NFProfile, error) {
	if len(patch) == 0 { // the OpenAPI's minItems: 1
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseInvalidMsgFormat, "the JSON Patch has no operation")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	old := n.snap.Load()
	prev, ok := old.byID[nfInstanceID]
	if !ok {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseNFInstanceNotFound, "%q", nfInstanceID)
	}
	base := prev.mgmt
	base.NfStatus = prev.want
	doc, err := json.Marshal(&base)
	if err != nil {
		return nil, fmt.Errorf("nrf: update %s: %w", nfInstanceID, err)
	}
	doc, err = applyPatch(doc, patch)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseInvalidMsgFormat, "JSON Patch: %v", err)
	}
	var asked models.Nrf_NFMgmt_NFProfile
	if err := json.Unmarshal(doc, &asked); err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "the patched profile: %v", err)
	}
	if asked.NfInstanceId != nfInstanceID {
		return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseModificationNotAllowed, "nfInstanceId %q: the instance is %q", asked.NfInstanceId, nfInstanceID)
	}
	if asked.NfStatus == "" { // mandatory; NFRegister's default does not apply to a removal
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfStatus")
	}
	if err := checkProfile(&asked); err != nil {
		return nil, err
	}
	e, err := n.newEntry(&asked)
	if err != nil {
		return nil, err
	}
	n.seen[nfInstanceID] = now
	changed := !sameProfile(&prev.mgmt, &e.mgmt)
	if changed || prev.expired {
		byID := maps.Clone(old.byID)
		byID[nfInstanceID] = e
		n.publish(byID)
	}
	if changed {
		st := prev.mgmt
		st.NfStatus = e.mgmt.NfStatus
		if prev.expired && sameProfile(&st, &e.mgmt) {
			n.log.Info("NF reinstated by a heartbeat", "nfType", e.mgmt.NfType, "nfInstanceId", nfInstanceID, "nfStatus", e.mgmt.NfStatus)
		} else {
			n.log.Info("NF profile updated", "nfType", e.mgmt.NfType, "nfInstanceId", nfInstanceID, "paths", patchPaths(patch))
		}
		n.fanout(models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED, e, now)
	}
	if !changed && asked.HeartBeatTimer == e.mgmt.HeartBeatTimer {
		return nil, nil
	}
	out := e.mgmt
	return &out, nil
}

// sameProfile compares two profiles as they go on the wire: an empty list
// and an absent one are the same attribute.
func sameProfile(a, b *models.Nrf_NFMgmt_NFProfile) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// patchPaths lists the paths a patch touches, for the log.
func patchPaths(patch []models.PatchItem) []string {
	out := make([]string, len(patch))
	for i, it := range patch {
		out[i] = string(it.Op) + " " + it.Path
	}
	return out
}

// applyPatch applies patch to the JSON document doc (RFC 6902 §4-5): the
// operations in order, stopping at the first that fails, in which case the
// error names it and doc is not changed. PatchItem has lost the
// difference between an absent value member and "value": null; both are
// taken as null.
func applyPatch(doc []byte, patch []models.PatchItem) ([]byte, error) {
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
	opts.AccumulatedCopySizeLimit = maxPatchGrowth
	return ops.ApplyWithOptions(doc, opts) // a new document; doc is left as it was
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
