package udr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/jsonpatch"
	"github.com/tern5g/tern/sbi/openapitest"
	"github.com/tern5g/tern/store"
)

// peer is an NF that is not tern's talking to the UDR over HTTP/2 (h2c):
// it sends what free5GC's and Open5GS's UDMs send.
type peer struct {
	t    *testing.T
	root string
	hc   *http.Client
}

// serveUDR serves u over h2c. With a non-nil transport wrapper the peer's
// requests go through it (the OpenAPI validator).
func serveUDR(t *testing.T, u *UDR, wrap func(http.RoundTripper) http.RoundTripper) *peer {
	t.Helper()
	h := httpsbi.NewHandler(nil, u)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = httpsbi.NewServer(h, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	hc := httpsbi.NewClient(nil)
	if wrap != nil {
		hc.Transport = wrap(hc.Transport)
	}
	return &peer{t: t, root: srv.URL, hc: hc}
}

// do sends a request and returns the status, the headers and the body.
func (p *peer) do(method, path, ct, body string) (int, http.Header, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.root+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

func authSubsPath(supi string) string {
	return "/nudr-dr/v2/subscription-data/" + supi + "/authentication-data/authentication-subscription"
}

// readSQN is a standard UDM's read of authentication-subscription: the SQN
// it then puts in its vector (free5GC's and Open5GS's UDMs both do).
func (p *peer) readSQN(supi string) uint64 {
	p.t.Helper()
	st, _, b := p.do("GET", authSubsPath(supi), "", "")
	var a models.Udr_DR_AuthenticationSubscription
	if st != 200 || json.Unmarshal(b, &a) != nil || a.SequenceNumber == nil || a.EncPermanentKey == "" || a.EncOpcKey == "" ||
		a.AuthenticationManagementField == "" || a.AuthenticationMethod != models.Udr_DR_AuthMethod_5_G_AKA {
		p.t.Fatalf("GET authentication-subscription: %d %s", st, b)
	}
	v, err := parseSQN(a.SequenceNumber.Sqn)
	if err != nil {
		p.t.Fatalf("sequenceNumber %+v: %v", a.SequenceNumber, err)
	}
	return v
}

// patch sends a JSON Patch and returns the status and the problem, if any.
func (p *peer) patch(path, patch string) (int, models.ProblemDetails) {
	p.t.Helper()
	st, _, b := p.do("PATCH", path, "application/json-patch+json", patch)
	var pd models.ProblemDetails
	if st >= 400 {
		json.Unmarshal(b, &pd)
	}
	return st, pd
}

// free5GC's UDM on free5gc/openapi's Release 17 models (the TS 29.505
// AuthenticationSubscription this UDR serves) writes SQN+1 back as an
// object at /sequenceNumber; Open5GS's (after a resynchronisation) a
// string at /sequenceNumber/sqn. Those are the UDMs these fixtures cover.
// An older free5GC UDM, on free5GC's earlier models, patches a string at
// /sequenceNumber, which is refused (TestModifyAuthenticationSubscriptionErrors),
// but it cannot authenticate with this UDR in the first place: it reads K
// from permanentKey.permanentKeyValue and OPc from opc.opcValue, where TS
// 29.505 has encPermanentKey and encOpcKey, and rejects the UE before any
// write-back.
func free5GCPatch(sqn uint64) string {
	return fmt.Sprintf(`[{"op":"replace","path":"/sequenceNumber","value":{"sqn":"%012x"}}]`, sqn)
}

func open5GSPatch(sqn uint64) string {
	return fmt.Sprintf(`[{"op":"replace","path":"/sequenceNumber/sqn","value":"%012x"}]`, sqn)
}

// TestStandardUDMNeverReusesSQN: TS 29.505 ModifyAuthenticationSubscription
// served, with TS 33.102 Annex C's fresh SQN per vector kept whoever asks:
// free5GC's UDM (read, use, write SQN+1 back), Open5GS's (read, use) and
// tern's own (AllocateSQN), interleaved and concurrent, never get the same
// SQN; a write-back at or below what was handed out moves nothing back,
// and one beyond the reservation survives a crash.
func TestStandardUDMNeverReusesSQN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	u, _ := newDurableUDR(t, Config{}, path)
	p := serveUDR(t, u, nil)
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	var issued []uint64
	tern := func() uint64 {
		s, err := u.AllocateSQN(ctx, supi, "")
		if err != nil {
			t.Fatal(err)
		}
		return sqnValue(t, s.Sqn)
	}

	// Interleaved: free5GC reads s, tern's UDM allocates, Open5GS reads,
	// free5GC writes s+1 back (below what was handed out since: no-op).
	s := p.readSQN(supi)
	issued = append(issued, s, tern(), p.readSQN(supi))
	if st, pd := p.patch(authSubsPath(supi), free5GCPatch(s+1)); st != http.StatusNoContent {
		t.Fatalf("free5GC's write-back: %d %+v", st, pd)
	}
	issued = append(issued, tern(), p.readSQN(supi))
	// A write-back far below, and one inside what was handed out: nothing
	// goes back.
	for _, v := range []uint64{0, issued[1]} {
		if st, pd := p.patch(authSubsPath(supi), open5GSPatch(v)); st != http.StatusNoContent {
			t.Fatalf("write-back of %#x: %d %+v", v, st, pd)
		}
		issued = append(issued, p.readSQN(supi))
	}
	for i := 1; i < len(issued); i++ {
		if issued[i] <= issued[i-1] {
			t.Fatalf("SQNs handed out %#x: %#x after %#x", issued, issued[i], issued[i-1])
		}
	}

	// Concurrent: 8 free5GC-like UDMs and tern's, 25 vectors each.
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	for w := range 9 {
		wg.Go(func() {
			for range 25 {
				var v uint64
				if w == 8 {
					v = tern()
				} else {
					v = p.readSQN(supi)
					if st, pd := p.patch(authSubsPath(supi), free5GCPatch(v+1)); st != http.StatusNoContent {
						t.Errorf("write-back: %d %+v", st, pd)
					}
				}
				mu.Lock()
				seen[v]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for v, n := range seen {
		if n > 1 {
			t.Errorf("SQN %#x handed out %d times", v, n)
		}
	}
	if len(seen) != 9*25 {
		t.Errorf("%d SQNs for %d vectors", len(seen), 9*25)
	}

	// A write-back past the durable reservation (an SQN_MS+33 after a
	// resynchronisation) is durable before the answer.
	const far = 0x0000f0000000
	if st, pd := p.patch(authSubsPath(supi), open5GSPatch(far)); st != http.StatusNoContent {
		t.Fatalf("write-back of %#x: %d %+v", uint64(far), st, pd)
	}
	r, _ := crashCopy(t, Config{}, path)
	next, err := r.AllocateSQN(ctx, supi, "")
	if err != nil {
		t.Fatal(err)
	}
	if v := sqnValue(t, next.Sqn); v <= far {
		t.Fatalf("SQN after a crash %#x, not above the %#x written back", v, uint64(far))
	}
}

// TestModifyAuthenticationSubscriptionErrors: only the SQN is a UDM's to
// write (403 MODIFICATION_NOT_ALLOWED naming the member otherwise); a
// patch that does not apply is 400 INVALID_MSG_FORMAT; an SQN that is no 12 hex digits 400 MANDATORY_IE_INCORRECT
// (TS 29.500 §5.2.7.2). Methods and media types are checked (405 with
// Allow, 415).
func TestModifyAuthenticationSubscriptionErrors(t *testing.T) {
	u, st := newUDR(t, Config{})
	p := serveUDR(t, u, nil)
	supi := store.DemoSUPI(1)
	before, _ := st.Get(supi)
	for _, tc := range []struct {
		name, patch   string
		status        int
		cause, param  string
		contentType   string
		allowOrAccept string
	}{
		{"the key", `[{"op":"replace","path":"/encPermanentKey","value":"00000000000000000000000000000000"}]`, 403, sbi.CauseModificationNotAllowed, "/encPermanentKey", "", ""},
		{"a new member", `[{"op":"add","path":"/vectorGenerationInHss","value":true}]`, 403, sbi.CauseModificationNotAllowed, "/vectorGenerationInHss", "", ""},
		{"sequenceNumber removed", `[{"op":"remove","path":"/sequenceNumber"}]`, 403, sbi.CauseModificationNotAllowed, "/sequenceNumber", "", ""},
		{"bogus op", `[{"op":"replace","path":"/sequenceNumber/sqn","value":"000000000100"},{"op":"bogus","path":"/x"}]`, 400, sbi.CauseInvalidMsgFormat, "", "", ""},
		{"missing path", `[{"op":"replace","path":"/nothing/sqn","value":"000000000100"}]`, 400, sbi.CauseInvalidMsgFormat, "", "", ""},
		{"failed test", `[{"op":"test","path":"/sequenceNumber/sqn","value":"ffffffffffff"},{"op":"replace","path":"/sequenceNumber/sqn","value":"000000000100"}]`, 400, sbi.CauseInvalidMsgFormat, "", "", ""},
		{"sqn not hex", open5GSPatch(0)[:len(open5GSPatch(0))-16] + `"00000000zz00"}]`, 400, sbi.CauseMandatoryIEIncorrect, "/sequenceNumber/sqn", "", ""},
		{"older free5GC's string", `[{"op":"replace","path":"/sequenceNumber","value":"000000000100"}]`, 400, sbi.CauseMandatoryIEIncorrect, "/sequenceNumber", "", ""},
		{"plain JSON", free5GCPatch(0x100), 415, "", "", "application/json", "application/json-patch+json"},
	} {
		ct := "application/json-patch+json"
		if tc.contentType != "" {
			ct = tc.contentType
		}
		status, hdr, b := p.do("PATCH", authSubsPath(supi), ct, tc.patch)
		var pd models.ProblemDetails
		json.Unmarshal(b, &pd)
		if status != tc.status || pd.Cause != tc.cause {
			t.Errorf("%s: %d %s (%s), want %d %s", tc.name, status, pd.Cause, pd.Detail, tc.status, tc.cause)
			continue
		}
		if tc.param != "" && (len(pd.InvalidParams) == 0 || pd.InvalidParams[0].Param != tc.param) {
			t.Errorf("%s: invalidParams %+v, want %s named", tc.name, pd.InvalidParams, tc.param)
		}
		if tc.allowOrAccept != "" && hdr.Get("Accept-Patch") != tc.allowOrAccept {
			t.Errorf("%s: Accept-Patch %q", tc.name, hdr.Get("Accept-Patch"))
		}
	}
	if after, _ := st.Get(supi); !bytes.Equal(after.K, before.K) || after.SQN != before.SQN {
		t.Errorf("a refused patch changed the subscriber: K %x SQN %#x, was %x %#x", after.K, after.SQN, before.K, before.SQN)
	}
	if status, _ := p.patch(authSubsPath("imsi-208930000000077"), free5GCPatch(1)); status != 404 {
		t.Errorf("unknown subscriber: %d", status)
	}
	// RFC 9110 §15.5.6: the resource's methods in Allow.
	if status, hdr, _ := p.do("DELETE", authSubsPath(supi), "", ""); status != 405 || hdr.Get("Allow") != "GET, PATCH" {
		t.Errorf("DELETE: %d, Allow %q; want 405, Allow GET, PATCH", status, hdr.Get("Allow"))
	}
}

// TestAuthStatusAndAMFContext: TS 29.505 CreateAuthenticationStatus /
// QueryAuthenticationStatus and CreateAmfContext3gpp / AmfContext3gpp /
// QueryAmfContext3gpp as a standard UDM uses them: PUT creates (201 with
// Location) or replaces (204), PATCH applies a JSON Patch (free5GC's
// purge: replace guami, add purgeFlag), GET reads; 404 DATA_NOT_FOUND
// before, USER_NOT_FOUND for an unknown subscriber; a deleted subscriber's
// context goes with it.
func TestAuthStatusAndAMFContext(t *testing.T) {
	u, st := newUDR(t, Config{})
	p := serveUDR(t, u, nil)
	supi := store.DemoSUPI(1)
	statusPath := "/nudr-dr/v2/subscription-data/" + supi + "/authentication-data/authentication-status"
	ctxPath := "/nudr-dr/v2/subscription-data/" + supi + "/context-data/amf-3gpp-access"
	problem := func(method, path, ct, body string, status int, cause string) {
		t.Helper()
		got, _, b := p.do(method, path, ct, body)
		var pd models.ProblemDetails
		json.Unmarshal(b, &pd)
		if got != status || pd.Cause != cause {
			t.Errorf("%s %s: %d %s, want %d %s", method, path, got, pd.Cause, status, cause)
		}
	}

	problem("GET", statusPath, "", "", 404, sbi.CauseDataNotFound)
	problem("GET", strings.Replace(statusPath, supi, "imsi-208930000000077", 1), "", "", 404, sbi.CauseUserNotFound)
	ev := `{"nfInstanceId":"6f1c0b0e-0000-4000-8000-000000000003","success":true,"timeStamp":"2026-01-02T03:04:05Z","authType":"5G_AKA","servingNetworkName":"5G:mnc093.mcc208.3gppnetwork.org"}`
	if status, _, b := p.do("PUT", statusPath, "application/json", ev); status != 204 {
		t.Fatalf("PUT authentication-status: %d %s", status, b)
	}
	problem("PUT", strings.Replace(statusPath, supi, "imsi-208930000000077", 1), "application/json", ev, 404, sbi.CauseUserNotFound)
	if status, _, b := p.do("GET", statusPath, "", ""); status != 200 || !strings.Contains(string(b), `"success":true`) {
		t.Fatalf("GET authentication-status: %d %s", status, b)
	}

	problem("GET", ctxPath, "", "", 404, sbi.CauseDataNotFound)
	problem("PATCH", ctxPath, "application/json-patch+json", `[{"op":"add","path":"/purgeFlag","value":true}]`, 404, sbi.CauseDataNotFound)
	reg := `{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","deregCallbackUri":"http://amf.example/dereg",` +
		`"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"},"ratType":"NR"}`
	status, hdr, _ := p.do("PUT", ctxPath, "application/json", reg)
	if status != 201 || hdr.Get("Location") != p.root+ctxPath {
		t.Fatalf("PUT amf-3gpp-access: %d, Location %q", status, hdr.Get("Location"))
	}
	if status, _, _ := p.do("PUT", ctxPath, "application/json", reg); status != 204 {
		t.Fatalf("PUT amf-3gpp-access again: %d, want 204", status)
	}
	problem("PUT", ctxPath, "application/json", `{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001"}`, 400, sbi.CauseMandatoryIEMissing)
	// free5GC's UDM replaces /pei of a registration that has none
	// (jsonpatch.Options.ReplaceAbsent).
	if st, pd := p.patch(ctxPath, `[{"op":"replace","path":"/pei","value":"imeisv-4370816125816150"}]`); st != 204 {
		t.Fatalf("PATCH replacing the absent pei: %d %+v", st, pd)
	}
	purge := `[{"op":"replace","path":"/guami","value":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"}},` +
		`{"op":"add","path":"/purgeFlag","value":true},{"op":"add","path":"/pei","value":"imeisv-4370816125816151"}]`
	if st, pd := p.patch(ctxPath, purge); st != 204 {
		t.Fatalf("PATCH amf-3gpp-access: %d %+v", st, pd)
	}
	problem("PATCH", ctxPath, "application/json-patch+json", `[{"op":"remove","path":"/amfInstanceId"}]`, 400, sbi.CauseMandatoryIEMissing)
	problem("PATCH", ctxPath, "application/json-patch+json", `[{"op":"remove","path":"/nothing"}]`, 400, sbi.CauseInvalidMsgFormat)
	_, _, b := p.do("GET", ctxPath, "", "")
	var got models.Udr_DR_Amf3GppAccessRegistration
	if err := json.Unmarshal(b, &got); err != nil || !got.PurgeFlag || got.Pei != "imeisv-4370816125816151" || got.AmfInstanceId != "6f1c0b0e-0000-4000-8000-000000000001" {
		t.Fatalf("after the PATCH: %s (%v)", b, err)
	}

	// The subscriber deleted by another process: its context goes.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.Follow(ctx, st, 5*time.Millisecond, func(string, bool) {}) }()
	time.Sleep(20 * time.Millisecond) // Follow has read where the feed starts
	if err := st.Delete(supi); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := u.QueryAmfContext3gpp(ctx, supi); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a deleted subscriber's amf-3gpp-access is still there")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := u.QueryAuthenticationStatus(ctx, supi); err == nil {
		t.Error("a deleted subscriber's authentication-status is still there")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestPatchBounds: a JSON Patch over sbi/jsonpatch's bounds (the NRF's
// too) is 400 INVALID_MSG_FORMAT on both resources a UDM patches, and
// changes nothing: one operation more than jsonpatch.MaxOperations, and a
// registration grown past jsonpatch.MaxDocument.
func TestPatchBounds(t *testing.T) {
	u, st := newUDR(t, Config{})
	p := serveUDR(t, u, nil)
	supi := store.DemoSUPI(1)
	before, _ := st.Get(supi)
	many := func(op string) string {
		return "[" + strings.Repeat(op+",", jsonpatch.MaxOperations) + op + "]"
	}
	if status, pd := p.patch(authSubsPath(supi), many(`{"op":"replace","path":"/sequenceNumber/sqn","value":"000000000fff"}`)); status != 400 || pd.Cause != sbi.CauseInvalidMsgFormat {
		t.Errorf("authentication-subscription, %d operations: %d %s (%s)", jsonpatch.MaxOperations+1, status, pd.Cause, pd.Detail)
	}
	if after, _ := st.Get(supi); after.SQN != before.SQN {
		t.Errorf("SQN_HE %#x after a refused patch, was %#x", after.SQN, before.SQN)
	}
	ctxPath := "/nudr-dr/v2/subscription-data/" + supi + "/context-data/amf-3gpp-access"
	reg := `{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","deregCallbackUri":"http://amf.example/dereg",` +
		`"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"},"ratType":"NR"}`
	if status, _, b := p.do("PUT", ctxPath, "application/json", reg); status != 201 {
		t.Fatalf("PUT amf-3gpp-access: %d %s", status, b)
	}
	half := strings.Repeat("0", jsonpatch.MaxDocument/2)
	for name, patch := range map[string]string{
		"too many operations": many(`{"op":"replace","path":"/pei","value":"imeisv-4370816125816151"}`),
		"too large":           `[{"op":"add","path":"/supportedFeatures","value":"` + half + `"},{"op":"copy","from":"/supportedFeatures","path":"/amfEeSubscriptionId"}]`,
	} {
		if status, pd := p.patch(ctxPath, patch); status != 400 || pd.Cause != sbi.CauseInvalidMsgFormat {
			t.Errorf("amf-3gpp-access, %s: %d %s (%s)", name, status, pd.Cause, pd.Detail)
		}
	}
	got, err := u.QueryAmfContext3gpp(context.Background(), supi)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pei != "" || got.SupportedFeatures != "" {
		t.Errorf("after refused patches: pei %q, supportedFeatures of %d bytes", got.Pei, len(got.SupportedFeatures))
	}
}

// TestStandardUDMExchangesConform validates what the UDR answers a
// standard UDM, errors included, against the 3GPP OpenAPI files
// (../shared/openapi; skipped without them).
func TestStandardUDMExchangesConform(t *testing.T) {
	v, err := openapitest.Load(openapitest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := newUDR(t, Config{})
	var rec *openapitest.Recorder
	p := serveUDR(t, u, func(base http.RoundTripper) http.RoundTripper {
		rec = v.Transport(t, base)
		return rec
	})
	supi := store.DemoSUPI(1)
	s := p.readSQN(supi)
	p.patch(authSubsPath(supi), free5GCPatch(s+1))
	p.patch(authSubsPath(supi), `[{"op":"replace","path":"/encOpcKey","value":"00000000000000000000000000000000"}]`)
	p.patch(authSubsPath(supi), `[{"op":"remove","path":"/nothing"}]`)
	p.patch(authSubsPath("imsi-208930000000077"), free5GCPatch(s+1))
	statusPath := "/nudr-dr/v2/subscription-data/" + supi + "/authentication-data/authentication-status"
	p.do("GET", statusPath, "", "")
	p.do("PUT", statusPath, "application/json", `{"nfInstanceId":"6f1c0b0e-0000-4000-8000-000000000003","success":true,"timeStamp":"2026-01-02T03:04:05Z","authType":"5G_AKA","servingNetworkName":"5G:mnc093.mcc208.3gppnetwork.org"}`)
	p.do("GET", statusPath, "", "")
	ctxPath := "/nudr-dr/v2/subscription-data/" + supi + "/context-data/amf-3gpp-access"
	p.do("GET", ctxPath, "", "")
	reg := `{"amfInstanceId":"6f1c0b0e-0000-4000-8000-000000000001","deregCallbackUri":"http://amf.example/dereg",` +
		`"guami":{"plmnId":{"mcc":"208","mnc":"93"},"amfId":"cafe00"},"ratType":"NR"}`
	p.do("PUT", ctxPath, "application/json", reg)
	p.do("PUT", ctxPath, "application/json", reg)
	p.patch(ctxPath, `[{"op":"add","path":"/purgeFlag","value":true}]`)
	p.do("GET", ctxPath, "", "")
	want := map[string]bool{"QueryAuthSubsData": true, "ModifyAuthenticationSubscription": true, "CreateAuthenticationStatus": true,
		"QueryAuthenticationStatus": true, "QueryAmfContext3gpp": true, "CreateAmfContext3gpp": true, "AmfContext3gpp": true}
	for _, op := range rec.Operations() {
		delete(want, op)
	}
	if len(want) > 0 {
		t.Errorf("not exercised: %v (validated %v)", want, rec.Operations())
	}
}
