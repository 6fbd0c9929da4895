package openapitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// load returns a Validator on the shared 3GPP files, or skips.
func load(t *testing.T) *Validator {
	t.Helper()
	v, err := Load(Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustJSON marshals v as the binding would: with encoding/json.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// request builds a request to an SBI URI; body is marshalled to JSON
// unless it is already []byte, and ct is its Content-Type.
func request(t *testing.T, method, uri string, body any, ct string) (*http.Request, []byte) {
	t.Helper()
	var b []byte
	switch x := body.(type) {
	case nil:
	case []byte:
		b = x
	default:
		b = mustJSON(t, x)
	}
	req, err := http.NewRequest(method, uri, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if b != nil {
		req.Header.Set("Content-Type", ct)
	}
	return req, b
}

// response builds a response; headers are name, value pairs.
func response(t *testing.T, status int, body any, ct string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var b []byte
	switch x := body.(type) {
	case nil:
	case []byte:
		b = x
	default:
		b = mustJSON(t, x)
	}
	resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(b))}
	if b != nil {
		resp.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		resp.Header.Set(headers[i], headers[i+1])
	}
	return resp, b
}

// wantOK fails unless the exchange validates as operation op.
func wantOK(t *testing.T, v *Validator, op string, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	got, err := v.Check(req, reqBody, resp, respBody)
	if err != nil {
		t.Errorf("%s %s: unexpected violations:\n%v", req.Method, req.URL.Path, err)
	}
	if got != op {
		t.Errorf("%s %s: operation %q, want %q", req.Method, req.URL.Path, got, op)
	}
}

// wantErr fails unless validating the exchange reports a violation
// mentioning each of the substrings.
func wantErr(t *testing.T, v *Validator, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte, substrs ...string) {
	t.Helper()
	_, err := v.Check(req, reqBody, resp, respBody)
	if err == nil {
		t.Errorf("%s %s: no violation reported, want one mentioning %q", req.Method, req.URL.Path, substrs)
		return
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s %s: violations do not mention %q:\n%v", req.Method, req.URL.Path, s, err)
		}
	}
}
