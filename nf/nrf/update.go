package nrf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/jsonpatch"
)

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
// Departure: a replace of a member the stored profile lacks adds it
// (jsonpatch.Options.ReplaceAbsent), where RFC 6902 §4.3 fails the patch.
// The profile is stored in the free5GC model and encoded again for the
// patch, which leaves out members at their zero value (load, priority,
// capacity 0): an NF that registered "load": 0 and sends it in its
// heart-beat ([replace /nfStatus, replace /load]) would otherwise get 400.
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
	doc, err = jsonpatch.ApplyWith(doc, patch, jsonpatch.Options{ReplaceAbsent: true})
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseInvalidMsgFormat, "JSON Patch: %v", err)
	}
	var asked models.Nrf_NFMgmt_NFProfile
	if err := json.Unmarshal(doc, &asked); err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "the patched profile: %v", err)
	}
	if !strings.EqualFold(asked.NfInstanceId, nfInstanceID) {
		return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseModificationNotAllowed, "nfInstanceId %q: the instance is %q", asked.NfInstanceId, nfInstanceID)
	}
	// The same UUID, the case of its hex digits aside (RFC 4122 §3): the
	// instance keeps the ID it is registered under.
	asked.NfInstanceId = nfInstanceID
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
