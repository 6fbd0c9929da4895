package httpsbi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/openapitest"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
)

// protoCheck counts answers that did not come over HTTP/2.
type protoCheck struct {
	base  http.RoundTripper
	notH2 atomic.Int64
	n     atomic.Int64
}

func (p *protoCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := p.base.RoundTrip(r)
	if err == nil {
		p.n.Add(1)
		if res.ProtoMajor != 2 {
			p.notH2.Add(1)
		}
	}
	return res, err
}

// startH2C serves h over h2c; startTLS over HTTP/2 with TLS. Both return
// the apiRoot and an HTTP/2-only client.
func startH2C(t *testing.T, h http.Handler) (string, *http.Client) {
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer(h, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, NewClient(nil)
}

func startTLS(t *testing.T, h http.Handler) (string, *http.Client) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv.URL, NewClient(&tls.Config{RootCAs: pool})
}

// transports are the two ways the binding runs: h2c and TLS.
var transports = []struct {
	name  string
	start func(*testing.T, http.Handler) (string, *http.Client)
}{{"h2c", startH2C}, {"tls", startTLS}}

func TestRoundTrip(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			p := opstest.NewProducer()
			h := NewHandler(nil, p)
			if n := len(h.Operations()); n != len(ops.All) {
				t.Fatalf("serving %d operations of %d", n, len(ops.All))
			}
			root, hc := tc.start(t, h)
			pc := &protoCheck{base: hc.Transport}
			hc.Transport = pc
			opstest.Run(t, ops.NewClient(NewCaller(hc, root), "6f1c0b0e-0000-4000-8000-000000000002"), p, root)
			if pc.n.Load() == 0 || pc.notH2.Load() != 0 {
				t.Errorf("%d of %d answers not over HTTP/2", pc.notH2.Load(), pc.n.Load())
			}
		})
	}
}

// Bad requests get a ProblemDetails with the right status, never a crash.
func TestBadRequests(t *testing.T) {
	root, hc := startH2C(t, NewHandler(nil, opstest.NewProducer()))
	for _, tc := range []struct {
		method, path, ct, body string
		status                 int
	}{
		{"GET", "/nothing/here", "", "", 404},
		{"DELETE", "/nausf-auth/v1/ue-authentications", "", "", 405},
		{"POST", "/nausf-auth/v1/ue-authentications", "application/json", "{not json", 400},
		{"POST", "/nausf-auth/v1/ue-authentications", "text/plain", "hello", 415},
		{"POST", "/nausf-auth/v1/ue-authentications", "application/json", "", 400},
		{"POST", "/nsmf-pdusession/v1/sm-contexts", "multipart/related; boundary=x", "--x\r\nbroken", 400},
		{"GET", "/nudm-sdm/v2/imsi-001010000000001/am-data?plmn-id=%7Bbad", "", "", 400},
		{"GET", "/nnrf-disc/v1/nf-instances", "", "", 400},
		{"GET", "/nnssf-nsselection/v2/network-slice-information?nf-type=AMF&nf-id=x&slice-info-request-for-registration=%5B", "", "", 400},
	} {
		req, _ := http.NewRequest(tc.method, root+tc.path, strings.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("Content-Type") != contentProblem {
			t.Errorf("%s %s: %d %s, want %d problem+json", tc.method, tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.status)
		}
	}
}

// TestMethodNotAllowed: a method the resource does not have is 405 with
// the methods it has in Allow (RFC 9110 §15.5.6) and no 404 cause: the
// resource exists (TS 29.500 Table 5.2.7.2-1 has no cause for 405).
func TestMethodNotAllowed(t *testing.T) {
	root, hc := startH2C(t, NewHandler(nil, opstest.NewProducer()))
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/nausf-auth/v1/ue-authentications", "POST"},
		{"POST", "/nudm-uecm/v1/imsi-001010000000001/registrations/amf-3gpp-access", "PUT, PATCH, GET"},
		{"PUT", "/nnrf-nfm/v1/subscriptions/sub1", "DELETE"},
		{"GET", sbi.CallbackSMContextStatus + "imsi-001010000000001/1/1", "POST"},
	} {
		req, _ := http.NewRequest(tc.method, root+tc.path, nil)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var pd models.ProblemDetails
		err = json.NewDecoder(res.Body).Decode(&pd)
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, res.StatusCode, res.Header.Get("Allow"), tc.allow)
		}
		if err != nil || pd.Status != http.StatusMethodNotAllowed || pd.Cause == sbi.CauseResourceURIStructureNotFound {
			t.Errorf("%s %s: problem %+v (%v)", tc.method, tc.path, pd, err)
		}
	}
}

// TestMediaTypes: each operation takes the media type its OpenAPI names
// (TS 29.500 §5.4): JSON where JSON is required, merge-patch+json and
// json-patch+json where those are, a form for the token request; anything
// else is 415, saying what is accepted (RFC 9110 §15.5.16, RFC 5789 §2.2).
func TestMediaTypes(t *testing.T) {
	p := opstest.NewProducer()
	root, hc := startH2C(t, NewHandler(nil, p))
	const ueau = "/nudm-ueau/v1/imsi-001010000000001/security-information/generate-auth-data"
	const uecm = "/nudm-uecm/v1/imsi-001010000000001/registrations/amf-3gpp-access"
	const nfm = "/nnrf-nfm/v1/nf-instances/" + opstest.NFID
	for _, tc := range []struct {
		method, path, ct, body string
		status                 int
		accept                 string
	}{
		{"POST", ueau, "application/x-www-form-urlencoded", "servingNetworkName=5G%3Amnc001.mcc001.3gppnetwork.org&ausfInstanceId=x", 415, "application/json"},
		{"POST", ueau, "application/merge-patch+json", `{"servingNetworkName":"5G:mnc001.mcc001.3gppnetwork.org"}`, 415, "application/json"},
		{"POST", ueau, "application/json; charset=utf-8", `{"servingNetworkName":"5G:mnc001.mcc001.3gppnetwork.org","ausfInstanceId":"x"}`, 200, ""},
		{"PATCH", uecm, "application/json", `{"guami":{"plmnId":{"mcc":"001","mnc":"01"},"amfId":"010041"},"purgeFlag":true}`, 415, "application/merge-patch+json"},
		{"PATCH", uecm, "application/merge-patch+json", `{"guami":{"plmnId":{"mcc":"001","mnc":"01"},"amfId":"010041"},"purgeFlag":true}`, 204, ""},
		{"PATCH", nfm, "application/json", `[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]`, 415, "application/json-patch+json"},
		{"PATCH", nfm, "application/merge-patch+json", `[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]`, 415, "application/json-patch+json"},
		{"POST", "/oauth2/token", "application/json", `{"grant_type":"client_credentials"}`, 415, "application/x-www-form-urlencoded"},
		{"POST", "/nsmf-pdusession/v1/sm-contexts", "text/plain", "x", 415, "application/json, multipart/related"},
	} {
		req, _ := http.NewRequest(tc.method, root+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ct)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("%s %s as %s: %d, want %d", tc.method, tc.path, tc.ct, res.StatusCode, tc.status)
			continue
		}
		if tc.status != 415 {
			continue
		}
		if got := res.Header.Get("Accept"); got != tc.accept || res.Header.Get("Content-Type") != contentProblem {
			t.Errorf("%s %s as %s: Accept %q, %s; want Accept %q, problem+json", tc.method, tc.path, tc.ct, got, res.Header.Get("Content-Type"), tc.accept)
		}
		if got := res.Header.Get("Accept-Patch"); tc.method == "PATCH" && got != tc.accept {
			t.Errorf("%s %s: Accept-Patch %q, want %q", tc.method, tc.path, got, tc.accept)
		}
	}
	// What tern's own client sends is what each operation declares: the
	// round trip of every operation (TestRoundTrip) passes this check.
}

// TestNoStore: the answers of an operation marked ops.Op.NoStore, errors
// included, tell every cache not to store them (RFC 9111 §5.2.2.5; Pragma
// for HTTP/1.0 caches): the read of authentication-subscription, which
// hands out an SQN with K and OPc, the SQN allocation and the token
// endpoint (RFC 6749 §5.1). Other answers say nothing of caching.
func TestNoStore(t *testing.T) {
	root, hc := startH2C(t, NewHandler(nil, opstest.NewProducer()))
	authSubs := func(supi string) string {
		return "/nudr-dr/v2/subscription-data/" + supi + "/authentication-data/authentication-subscription"
	}
	const token = "grant_type=client_credentials&nfInstanceId=%s&nfType=AMF&targetNfType=SMF&scope=nsmf-pdusession"
	for _, tc := range []struct {
		method, path, ct, body string
		status                 int
		noStore                bool
	}{
		{"GET", authSubs("imsi-001010000000001"), "", "", 200, true},
		{"GET", authSubs(opstest.FailSUPI), "", "", 404, true},
		{"POST", authSubs("imsi-001010000000001") + "/tern-allocate-sqn", "", "", 200, true},
		{"POST", "/oauth2/token", "application/x-www-form-urlencoded", fmt.Sprintf(token, "6f1c0b0e-0000-4000-8000-000000000002"), 200, true},
		{"POST", "/oauth2/token", "application/x-www-form-urlencoded", fmt.Sprintf(token, opstest.FailNF), 400, true},
		{"GET", "/nudr-dr/v2/subscription-data/imsi-001010000000001/00101/provisioned-data/am-data", "", "", 200, false},
	} {
		req, _ := http.NewRequest(tc.method, root+tc.path, strings.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		cc, pragma := res.Header.Get("Cache-Control"), res.Header.Get("Pragma")
		switch {
		case res.StatusCode != tc.status:
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
		case tc.noStore && (cc != "no-store" || pragma != "no-cache"):
			t.Errorf("%s %s: %d with Cache-Control %q, Pragma %q; want no-store, no-cache", tc.method, tc.path, res.StatusCode, cc, pragma)
		case !tc.noStore && (cc != "" || pragma != ""):
			t.Errorf("%s %s: Cache-Control %q, Pragma %q; want neither", tc.method, tc.path, cc, pragma)
		}
	}
}

// Whatever arrives, the handler answers (2xx or a problem), never panics.
func FuzzServe(f *testing.F) {
	f.Add("POST", "/nsmf-pdusession/v1/sm-contexts", "multipart/related; boundary=b", "--b\r\nContent-Type: application/json\r\n\r\n{\"supi\":\"imsi-1\"}\r\n--b\r\nContent-Id: n1SmMsg\r\n\r\n\x2e\x01\r\n--b--\r\n")
	f.Add("GET", "/nudm-sdm/v2/imsi-1/sm-data?single-nssai=%7B%22sst%22%3A1%7D&dnn=x", "", "")
	f.Add("PUT", "/nudm-uecm/v1/imsi-1/registrations/amf-3gpp-access", "application/json", `{"amfInstanceId":"a"}`)
	f.Add("POST", "/namf-callback/v1/smContextStatus/imsi-1/1/2", "application/json", `{"statusInfo":{}}`)
	h := NewHandler(nil, opstest.NewProducer())
	f.Fuzz(func(t *testing.T, method, path, ct, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://sbi"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code < 200 || w.Code > 599 {
			t.Fatalf("status %d", w.Code)
		}
		if w.Code >= 400 && w.Header().Get("Content-Type") != contentProblem {
			t.Fatalf("%d without problem+json", w.Code)
		}
	})
}

// TestConformance validates every request tern sends and every answer it
// gives, per operation, over h2c and over TLS, against the 3GPP OpenAPI
// files (shared/openapi).
func TestConformance(t *testing.T) {
	v, err := openapitest.Load(openapitest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			p := opstest.NewProducer()
			root, hc := tc.start(t, NewHandler(nil, p))
			rec := v.Transport(t, hc.Transport)
			// Callbacks at fixed paths of tern's own (departures documented
			// in the ops table) are validated as the 3GPP callback they
			// stand for.
			rec.ExpectCallback(sbi.CallbackDeregistration, "nudm-uecm", "3GppRegistration/deregistrationNotification")
			rec.ExpectCallback("/tern-udr-callback/v1/data-change", "nudr-dr", "SubscriptionDataSubscriptions/onDataChange")
			rec.ExpectCallback("/tern-sdm-callback/v1/", "nudm-sdm", "Subscribe/datachangeNotification")
			// tern's atomic SQN allocation has no 3GPP description.
			rec.Skip("/tern-allocate-sqn")
			hc.Transport = rec
			opstest.Run(t, ops.NewClient(NewCaller(hc, root), "6f1c0b0e-0000-4000-8000-000000000002"), p, root)
			// Every operation but the SQN allocation, once each.
			if got := rec.Operations(); len(got) != len(ops.All)-1 {
				t.Errorf("validated %d operations of %d: %v", len(got), len(ops.All)-1, got)
			}
		})
	}
}
