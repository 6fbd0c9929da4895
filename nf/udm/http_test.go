package udm

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/store"
)

// serveH2C serves h over h2c and returns its apiRoot.
func serveH2C(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config = httpsbi.NewServer(h, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// httpUDM is a UDM reading a UDR over the HTTP binding, both served over
// h2c as in a core with sbi.binding http; it returns the UDM's apiRoot.
// With udrDown the UDR's server is closed before the UDM uses it.
func httpUDM(t *testing.T, udrDown bool) string {
	t.Helper()
	st, err := store.OpenOptions(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.PutAll(store.DefaultSubscribers(1), false); err != nil {
		t.Fatal(err)
	}
	r, err := udr.New(udr.Config{}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = httpsbi.NewServer(httpsbi.NewHandler(nil, r), nil)
	srv.Start()
	udrRoot := srv.URL
	if udrDown {
		srv.Close()
	} else {
		t.Cleanup(srv.Close)
	}
	u, err := New(Config{}, ops.NewClient(httpsbi.NewCaller(httpsbi.NewClient(nil), udrRoot), "6f1c0b0e-0000-4000-8000-000000000005"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return serveH2C(t, httpsbi.NewHandler(nil, u))
}

// TestInputChecksOverHTTP: the UDM checks its input first (TS 29.500
// §5.2.7.2): a malformed SUPI in the URI is 400 MANDATORY_IE_INCORRECT and
// a missing mandatory member 400 MANDATORY_IE_MISSING, each naming the
// parameter in invalidParams, on every service; never a 404 carrying the
// UDR's resource path. A UDR that fails is the UDM's 500, with the UDR's
// addresses kept out of the answer.
func TestInputChecksOverHTTP(t *testing.T) {
	root := httpUDM(t, false)
	supi := store.DemoSUPI(1)
	snn := `"servingNetworkName":"5G:mnc093.mcc208.3gppnetwork.org"`
	guami := `"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"}`
	for _, tc := range []struct {
		method, path, ct, body string
		status                 int
		cause, param           string
	}{
		{"GET", "/nudm-sdm/v2/imsi-bad/am-data", "", "", 400, sbi.CauseMandatoryIEIncorrect, "{supi}"},
		{"GET", "/nudm-sdm/v2/garbage/nssai", "", "", 400, sbi.CauseMandatoryIEIncorrect, "{supi}"},
		{"GET", "/nudm-sdm/v2/imsi-12/sm-data", "", "", 400, sbi.CauseMandatoryIEIncorrect, "{supi}"},
		{"GET", "/nudm-sdm/v2/garbage/smf-select-data", "", "", 400, sbi.CauseMandatoryIEIncorrect, "{supi}"},
		{"GET", "/nudm-sdm/v2/imsi-208930000000077/am-data", "", "", 404, sbi.CauseUserNotFound, ""},
		{"PUT", "/nudm-uecm/v1/garbage/registrations/amf-3gpp-access", "application/json",
			`{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","deregCallbackUri":"http://amf/x",` + guami + `,"ratType":"NR"}`, 400, sbi.CauseMandatoryIEIncorrect, "{ueId}"},
		{"PUT", "/nudm-uecm/v1/" + supi + "/registrations/amf-3gpp-access", "application/json",
			`{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","ratType":"NR"}`, 400, sbi.CauseMandatoryIEMissing, "/deregCallbackUri"},
		{"PATCH", "/nudm-uecm/v1/garbage/registrations/amf-3gpp-access", "application/merge-patch+json", `{` + guami + `}`, 400, sbi.CauseMandatoryIEIncorrect, "{ueId}"},
		{"PATCH", "/nudm-uecm/v1/" + supi + "/registrations/amf-3gpp-access", "application/merge-patch+json", `{"purgeFlag":true}`, 400, sbi.CauseMandatoryIEMissing, "/guami"},
		{"GET", "/nudm-uecm/v1/imsi-x/registrations/amf-3gpp-access", "", "", 400, sbi.CauseMandatoryIEIncorrect, "{ueId}"},
		{"POST", "/nudm-ueau/v1/garbage/security-information/generate-auth-data", "application/json",
			`{` + snn + `,"ausfInstanceId":"6f1c0b0e-0000-4000-8000-000000000003"}`, 400, sbi.CauseMandatoryIEIncorrect, "{supiOrSuci}"},
		{"POST", "/nudm-ueau/v1/" + supi + "/security-information/generate-auth-data", "application/json", `{` + snn + `}`, 400, sbi.CauseMandatoryIEMissing, "/ausfInstanceId"},
		{"POST", "/nudm-ueau/v1/" + supi + "/security-information/generate-auth-data", "application/json",
			`{"servingNetworkName":"5G:x","ausfInstanceId":"6f1c0b0e-0000-4000-8000-000000000003"}`, 400, sbi.CauseMandatoryIEIncorrect, "/servingNetworkName"},
		{"POST", "/nudm-ueau/v1/garbage/auth-events", "application/json",
			`{"nfInstanceId":"6f1c0b0e-0000-4000-8000-000000000003","success":true,"timeStamp":"2026-01-01T00:00:00Z","authType":"5G_AKA",` + snn + `}`, 400, sbi.CauseMandatoryIEIncorrect, "{supi}"},
		{"POST", "/nudm-ueau/v1/" + supi + "/auth-events", "application/json", `{"success":true,"authType":"5G_AKA",` + snn + `}`, 400, sbi.CauseMandatoryIEMissing, "/nfInstanceId"},
	} {
		pd := do(t, root, tc.method, tc.path, tc.ct, tc.body)
		if int(pd.Status) != tc.status || pd.Cause != tc.cause {
			t.Errorf("%s %s: %d %s, want %d %s (%s)", tc.method, tc.path, pd.Status, pd.Cause, tc.status, tc.cause, pd.Detail)
			continue
		}
		if tc.param != "" && (len(pd.InvalidParams) == 0 || pd.InvalidParams[0].Param != tc.param) {
			t.Errorf("%s %s: invalidParams %+v, want %s named", tc.method, tc.path, pd.InvalidParams, tc.param)
		}
		if strings.Contains(pd.Detail, "nudr") {
			t.Errorf("%s %s: the UDR's resource in the UDM's answer: %q", tc.method, tc.path, pd.Detail)
		}
	}

	down := httpUDM(t, true)
	pd := do(t, down, "GET", "/nudm-sdm/v2/"+supi+"/am-data", "", "")
	if pd.Status != 500 || pd.Cause != sbi.CauseSystemFailure || strings.Contains(pd.Detail, "nudr") || strings.Contains(pd.Detail, "127.0.0.1") {
		t.Errorf("UDR down: %+v, want 500 SYSTEM_FAILURE without the UDR's address", pd)
	}
}

// do sends a request and decodes the ProblemDetails of its answer (a
// success leaves Status at the HTTP status and nothing else set).
func do(t *testing.T, root, method, path, ct, body string) models.ProblemDetails {
	t.Helper()
	req, _ := http.NewRequest(method, root+path, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := httpsbi.NewClient(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var pd models.ProblemDetails
	if res.StatusCode >= 400 {
		if err := json.NewDecoder(res.Body).Decode(&pd); err != nil {
			t.Fatalf("%s %s: %d without a problem: %v", method, path, res.StatusCode, err)
		}
	}
	pd.Status = int32(res.StatusCode)
	return pd
}

// TestUECMUpdateOverHTTP: TS 29.503 §5.3.2.4, the PATCH of the AMF's
// registration. A modification carrying guami and pei (no purgeFlag)
// updates the registration and keeps it; another AMF's GUAMI is 403
// INVALID_GUAMI; only purgeFlag removes it (the AMF's deregistration).
func TestUECMUpdateOverHTTP(t *testing.T) {
	root := httpUDM(t, false)
	path := "/nudm-uecm/v1/" + store.DemoSUPI(1) + "/registrations/amf-3gpp-access"
	guami := `"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"}`
	reg := `{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","deregCallbackUri":"http://amf.example/dereg",` + guami + `,"ratType":"NR"}`
	if pd := do(t, root, "PUT", path, "application/json", reg); pd.Status != http.StatusCreated {
		t.Fatalf("registration: %+v", pd)
	}
	// The same PUT again replaces the registration: 200 OK, not 201 (TS
	// 29.503 §5.3.2.2.2, 3GppRegistration's responses).
	if pd := do(t, root, "PUT", path, "application/json", reg); pd.Status != http.StatusOK {
		t.Fatalf("registration replaced: %+v, want 200", pd)
	}
	if pd := do(t, root, "PATCH", path, "application/merge-patch+json", `{`+guami+`,"pei":"imeisv-4370816125816151"}`); pd.Status != http.StatusNoContent {
		t.Fatalf("update: %+v", pd)
	}
	got := get3GPPRegistration(t, root, path)
	if got == nil || got.Pei != "imeisv-4370816125816151" || got.AmfInstanceId != "6f1c0b0e-0000-4000-8000-000000000001" {
		t.Fatalf("after the update without purgeFlag: %+v, want the registration kept with the new pei", got)
	}
	other := `{"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe01"},"purgeFlag":true}`
	if pd := do(t, root, "PATCH", path, "application/merge-patch+json", other); pd.Status != http.StatusForbidden || pd.Cause != sbi.CauseInvalidGUAMI {
		t.Fatalf("purge by another AMF: %+v, want 403 INVALID_GUAMI", pd)
	}
	if get3GPPRegistration(t, root, path) == nil {
		t.Fatal("another AMF's purge removed the registration")
	}
	if pd := do(t, root, "PATCH", path, "application/merge-patch+json", `{`+guami+`,"purgeFlag":true}`); pd.Status != http.StatusNoContent {
		t.Fatalf("purge: %+v", pd)
	}
	if got := get3GPPRegistration(t, root, path); got != nil {
		t.Fatalf("after the purge: %+v, want none", got)
	}
}

// get3GPPRegistration reads the registration at path (Nudm_UECM_Get), nil
// when there is none (404 CONTEXT_NOT_FOUND).
func get3GPPRegistration(t *testing.T, root, path string) *models.Udm_UECM_Amf3GppAccessRegistration {
	t.Helper()
	res, err := httpsbi.NewClient(nil).Get(root + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return nil
	}
	var reg models.Udm_UECM_Amf3GppAccessRegistration
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&reg) != nil {
		t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	return &reg
}
