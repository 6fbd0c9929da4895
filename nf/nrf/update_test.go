package nrf

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/jsonpatch"
)

func patchOf(t *testing.T, s string) []models.PatchItem {
	t.Helper()
	var p []models.PatchItem
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// NFUpdate applies the patch: discovery sees the new profile and
// subscribers get NF_PROFILE_CHANGED; a heart-beat changes nothing and
// gets 204.
func TestUpdateAppliesPatch(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{HeartBeatTimer: 7e9})
	rec := newRecorder()
	n.SetNotifier(rec)
	if _, err := n.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "amf"}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, n, profile("smf-1", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION))

	if p, err := heartbeat(n, "smf-1"); err != nil || p != nil {
		t.Fatalf("heart-beat = %+v, %v; want 204", p, err)
	}
	withEvent := sbi.DiscoveryQuery{ServiceNames: []models.Nrf_NFMgmt_ServiceName{models.Nrf_NFMgmt_ServiceName_NSMF_EVENT_EXPOSURE}}
	if r, _ := n.Discover(ctx, sbi.NFTypeSMF, withEvent); len(r.NfInstances) != 0 {
		t.Fatal("nsmf-event-exposure found before the update")
	}

	got, err := n.Update(ctx, "smf-1", patchOf(t, `[
		{"op":"test","path":"/nfServices/0/serviceName","value":"nsmf-pdusession"},
		{"op":"add","path":"/nfServices/-","value":{"serviceInstanceId":"ee","serviceName":"nsmf-event-exposure","scheme":"http","nfServiceStatus":"REGISTERED","versions":[{"apiVersionInUri":"v1","apiFullVersion":"1.2.0"}]}},
		{"op":"replace","path":"/ipv4Addresses/0","value":"10.0.0.7"},
		{"op":"add","path":"/capacity","value":200},
		{"op":"copy","from":"/ipv4Addresses","path":"/ipv6Addresses"},
		{"op":"remove","path":"/ipv6Addresses"},
		{"op":"move","from":"/capacity","path":"/priority"}]`))
	if err != nil || got == nil {
		t.Fatalf("update = %+v, %v; want 200 with the profile", got, err)
	}
	if len(got.NfServices) != 2 || got.NfServices[1].ServiceName != models.Nrf_NFMgmt_ServiceName_NSMF_EVENT_EXPOSURE ||
		got.Ipv4Addresses[0] != "10.0.0.7" || got.Priority != 200 || got.Capacity != 0 || got.Ipv6Addresses != nil || got.HeartBeatTimer != 7 {
		t.Fatalf("updated profile %+v", got)
	}
	r, _ := n.Discover(ctx, sbi.NFTypeSMF, withEvent)
	if len(r.NfInstances) != 1 || r.NfInstances[0].Ipv4Addresses[0] != "10.0.0.7" {
		t.Fatalf("discovery after the update: %+v", r.NfInstances)
	}
	if stored, _ := n.GetProfile(ctx, "smf-1"); !sameProfile(stored, got) {
		t.Fatalf("stored %+v, answered %+v", stored, got)
	}

	// The NRF keeps its heartBeatTimer (TS 29.510 §5.2.2.2.2) and says so
	// with a 200, though the profile did not change.
	got, err = n.Update(ctx, "smf-1", patchOf(t, `[{"op":"replace","path":"/heartBeatTimer","value":60}]`))
	if err != nil || got == nil || got.HeartBeatTimer != 7 {
		t.Fatalf("heartBeatTimer update = %+v, %v; want 200 with heartBeatTimer 7", got, err)
	}
	ev := rec.wait(t, "amf", 2)
	if want := []string{"NF_REGISTERED smf-1 REGISTERED", "NF_PROFILE_CHANGED smf-1 REGISTERED"}; !slices.Equal(ev, want) {
		t.Fatalf("notifications %q, want %q", ev, want)
	}
}

// A heart-beat that carries the load the NF registered with, 0, is a
// heart-beat (204), though the stored profile's encoding leaves out
// members at their zero value; a replace of such a member sets it
// (jsonpatch.Options.ReplaceAbsent).
func TestUpdateReplacesZeroMembers(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	p := profile("amf-1", sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM)
	p.Load, p.Priority, p.Capacity = 0, 0, 0
	mustRegister(t, n, p)
	if got, err := n.Update(ctx, "amf-1", patchOf(t, `[{"op":"replace","path":"/nfStatus","value":"REGISTERED"},{"op":"replace","path":"/load","value":0}]`)); err != nil || got != nil {
		t.Fatalf("heart-beat with load 0 = %+v, %v; want 204", got, err)
	}
	got, err := n.Update(ctx, "amf-1", patchOf(t, `[{"op":"replace","path":"/nfStatus","value":"REGISTERED"},{"op":"replace","path":"/load","value":30},`+
		`{"op":"replace","path":"/priority","value":2},{"op":"replace","path":"/capacity","value":100},{"op":"replace","path":"/nfServices/0/load","value":40}]`))
	if err != nil || got == nil || got.Load != 30 || got.Priority != 2 || got.Capacity != 100 || got.NfServices[0].Load != 40 {
		t.Fatalf("update of load, priority and capacity = %+v, %v", got, err)
	}
}

// A patch that does not apply, or whose result is not a valid profile of
// the same instance, is refused and changes nothing.
func TestUpdateRefusesBadPatch(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	rec := newRecorder()
	n.SetNotifier(rec)
	if _, err := n.Subscribe(ctx, &models.Nrf_NFMgmt_SubscriptionData{NfStatusNotificationUri: "amf",
		ReqNotifEvents: []models.Nrf_NFMgmt_NotificationEventType{models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED}}); err != nil {
		t.Fatal(err)
	}
	before := mustRegister(t, n, profile("udm-1", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM))
	for _, c := range []struct {
		name, patch string
		status      int
		cause       string
	}{
		{"bogus op", `[{"op":"bogus"}]`, 400, sbi.CauseInvalidMsgFormat},
		{"no op", `[]`, 400, sbi.CauseInvalidMsgFormat},
		{"no such path", `[{"op":"replace","path":"/nfServices/3/scheme","value":"https"}]`, 400, sbi.CauseInvalidMsgFormat},
		{"not a pointer", `[{"op":"replace","path":"nfStatus","value":"REGISTERED"}]`, 400, sbi.CauseInvalidMsgFormat},
		{"failing test, after a change", `[{"op":"replace","path":"/ipv4Addresses/0","value":"10.9.9.9"},{"op":"test","path":"/nfType","value":"AMF"}]`, 400, sbi.CauseInvalidMsgFormat},
		{"new nfInstanceId", `[{"op":"replace","path":"/nfInstanceId","value":"udm-2"}]`, 403, sbi.CauseModificationNotAllowed},
		{"no nfType", `[{"op":"remove","path":"/nfType"}]`, 400, sbi.CauseMandatoryIEMissing},
		{"no nfStatus", `[{"op":"remove","path":"/nfStatus"}]`, 400, sbi.CauseMandatoryIEMissing},
		{"bad nfStatus", `[{"op":"replace","path":"/nfStatus","value":"ASLEEP"}]`, 400, sbi.CauseMandatoryIEIncorrect},
		{"mistyped attribute", `[{"op":"add","path":"/priority","value":"high"}]`, 400, sbi.CauseMandatoryIEIncorrect},
		{"bad supiRanges pattern", `[{"op":"add","path":"/udmInfo","value":{"supiRanges":[{"pattern":"(["}]}}]`, 400, sbi.CauseOptionalIEIncorrect},
		// sbi/jsonpatch's bounds, the UDR's too: one heart-beat operation
		// more than jsonpatch.MaxOperations.
		{"too many operations", "[" + strings.Repeat(`{"op":"replace","path":"/nfStatus","value":"REGISTERED"},`, jsonpatch.MaxOperations) +
			`{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]`, 400, sbi.CauseInvalidMsgFormat},
	} {
		p, err := n.Update(ctx, "udm-1", patchOf(t, c.patch))
		var pd *sbi.ProblemDetails
		if !errors.As(err, &pd) || pd.Status != c.status || pd.Cause != c.cause {
			t.Errorf("%s: %+v, %v; want %d %s", c.name, p, err, c.status, c.cause)
		}
	}
	if after, _ := n.GetProfile(ctx, "udm-1"); !sameProfile(before, after) {
		t.Fatalf("profile changed by refused patches: %+v, was %+v", after, before)
	}
	if _, err := n.Update(ctx, "nobody", sbi.HeartbeatPatch("")); !errors.Is(err, sbi.ErrNFInstanceNotFound) {
		t.Fatalf("update of an unknown instance: %v", err)
	}
	if ev := rec.wait(t, "amf", 0); len(ev) != 0 {
		t.Fatalf("notifications %q after refused patches", ev)
	}
}

// Over HTTP (TS 29.510 §6.1.3.3.3): the status codes and ProblemDetails
// an NF of another vendor sees, and NFRegister's check that the body
// names the instance of the URI (§5.2.2.2.2).
func TestUpdateAndRegisterOverHTTP(t *testing.T) {
	n, _ := newNRF(t, Config{})
	srv := httptest.NewServer(httpsbi.NewHandler(nil, n))
	t.Cleanup(srv.Close)
	const id = "5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f01"
	do := func(method, path, ctype, body string) (int, map[string]any, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
			}
		}
		return resp.StatusCode, m, resp.Header
	}
	uri := "/nnrf-nfm/v1/nf-instances/" + id
	// A free5GC-style registration whose body names another instance.
	st, body, _ := do(http.MethodPut, uri, "application/json",
		`{"nfInstanceId":"5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f02","nfType":"AUSF","nfStatus":"REGISTERED","ipv4Addresses":["10.0.0.3"]}`)
	if st != 400 || body["cause"] != sbi.CauseMandatoryIEIncorrect {
		t.Fatalf("PUT with another nfInstanceId: %d %v; want 400 MANDATORY_IE_INCORRECT", st, body)
	}
	if st, _, _ := do(http.MethodGet, "/nnrf-nfm/v1/nf-instances/5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f02", "", ""); st != 404 {
		t.Fatalf("the body's instance was registered: GET %d", st)
	}
	st, _, hdr := do(http.MethodPut, uri, "application/json", `{"nfInstanceId":"`+id+`","nfType":"AUSF","nfStatus":"REGISTERED","ipv4Addresses":["10.0.0.3"]}`)
	if st != 201 {
		t.Fatalf("PUT: %d", st)
	}
	if loc := hdr.Get("Location"); !strings.HasSuffix(loc, uri) {
		t.Fatalf("Location %q", loc)
	}
	if st, _, _ := do(http.MethodGet, uri, "", ""); st != 200 {
		t.Fatalf("GET the Location: %d", st)
	}

	const patch = "application/json-patch+json"
	if st, body, _ := do(http.MethodPatch, uri, patch, `[{"op":"bogus"}]`); st != 400 || body["cause"] != sbi.CauseInvalidMsgFormat {
		t.Fatalf("PATCH bogus: %d %v", st, body)
	}
	if st, body, _ := do(http.MethodPatch, uri, patch, `[{"op":"replace","path":"/nfInstanceId","value":"x"}]`); st != 403 || body["cause"] != sbi.CauseModificationNotAllowed {
		t.Fatalf("PATCH nfInstanceId: %d %v", st, body)
	}
	if st, body, _ := do(http.MethodPatch, uri, patch, `[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]`); st != 204 || body != nil {
		t.Fatalf("heart-beat: %d %v; want 204", st, body)
	}
	st, body, _ = do(http.MethodPatch, uri, patch, `[{"op":"add","path":"/ipv4Addresses/-","value":"10.0.0.4"}]`)
	if addrs, _ := body["ipv4Addresses"].([]any); st != 200 || len(addrs) != 2 || addrs[1] != "10.0.0.4" {
		t.Fatalf("PATCH add: %d %v; want 200 with the profile", st, body)
	}

	// A UUID is the same in either case (RFC 4122 §3): a body or a patch
	// that spells the URI's instance in upper case names it, and the
	// instance keeps the URI's spelling, which its Location has.
	const id2 = "5a2e7c1e-8d0b-4c1e-9a55-3c1b8e7d2f0a"
	uri2 := "/nnrf-nfm/v1/nf-instances/" + id2
	st, body, hdr = do(http.MethodPut, uri2, "application/json", `{"nfInstanceId":"`+strings.ToUpper(id2)+`","nfType":"AUSF","nfStatus":"REGISTERED"}`)
	if st != 201 || body["nfInstanceId"] != id2 || !strings.HasSuffix(hdr.Get("Location"), uri2) {
		t.Fatalf("PUT naming the instance in upper case: %d %v, Location %q; want 201 with nfInstanceId %s", st, body, hdr.Get("Location"), id2)
	}
	if st, body, _ := do(http.MethodGet, uri2, "", ""); st != 200 || body["nfInstanceId"] != id2 {
		t.Fatalf("GET the Location: %d %v", st, body)
	}
	if st, body, _ := do(http.MethodPatch, uri2, patch, `[{"op":"replace","path":"/nfInstanceId","value":"`+strings.ToUpper(id2)+`"}]`); st != 204 {
		t.Fatalf("PATCH nfInstanceId in upper case: %d %v; want 204", st, body)
	}
}
