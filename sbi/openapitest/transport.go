package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Recorder is an http.RoundTripper that validates every exchange that passes
// through it (see Validator.Transport).
type Recorder struct {
	v    *Validator
	t    testing.TB
	base http.RoundTripper

	mu    sync.Mutex
	ops   map[string]bool
	skips []string // path suffixes passed through unchecked
	done  bool     // the test has finished: t may no longer be used
}

// Skip passes requests whose path ends with suffix through without
// validation: an operation of the implementation's own that no 3GPP file
// describes.
func (r *Recorder) Skip(suffix string) {
	r.mu.Lock()
	r.skips = append(r.skips, suffix)
	r.mu.Unlock()
}

func (r *Recorder) skipped(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.skips {
		if strings.HasSuffix(path, s) {
			return true
		}
	}
	return false
}

// Transport wraps base (http.DefaultTransport when nil) so that every
// exchange is validated with Check. A violation is reported with t.Errorf,
// naming the method, path, operationId and violation; the exchange itself
// goes on unchanged, so the code under test sees what it would have seen.
// The operationIds validated are recorded (Operations), so a test can assert
// which operations it covered.
//
// A violation found after the test has finished (a notification sent by a
// goroutine the test did not wait for) cannot be reported and is dropped.
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) *Recorder {
	if base == nil {
		base = http.DefaultTransport
	}
	r := &Recorder{v: v, t: t, base: base, ops: map[string]bool{}}
	t.Cleanup(func() {
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
	})
	return r
}

// ExpectCallback is Validator.ExpectCallback, reporting a failure with
// t.Errorf.
func (r *Recorder) ExpectCallback(urlPrefix, service, callbackName string) {
	r.t.Helper()
	if err := r.v.ExpectCallback(urlPrefix, service, callbackName); err != nil {
		r.t.Errorf("%v", err)
	}
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.skipped(req.URL.Path) {
		return r.base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read request body: %w", err)
		}
	}
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = io.NopCloser(bytes.NewReader(reqBody))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
		out.ContentLength = int64(len(reqBody))
	}
	// Learn callback URIs before sending: the notification they announce
	// may arrive before this round trip returns.
	r.v.observe(req, reqBody)

	resp, err := r.base.RoundTrip(out)
	if err != nil {
		// No response to check; the request alone still is.
		op, verr := r.v.Check(req, reqBody, nil, nil)
		r.record(req, op, verr)
		return nil, err
	}
	respBody, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if rerr != nil {
		op, verr := r.v.Check(req, reqBody, nil, nil)
		r.record(req, op, verr)
		return nil, fmt.Errorf("openapitest: read response body: %w", rerr)
	}
	op, verr := r.v.Check(req, reqBody, resp, respBody)
	r.record(req, op, verr)
	return resp, nil
}

func (r *Recorder) record(req *http.Request, op string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op != "" {
		r.ops[op] = true
	}
	if err == nil || r.done {
		return
	}
	if op == "" {
		op = "no operation"
	}
	r.t.Errorf("openapitest: %s %s (%s): %v", req.Method, req.URL.Path, op, err)
}

// Operations returns the operationIds validated so far, sorted, each once,
// whether or not they passed (named as Check names them).
func (r *Recorder) Operations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.ops))
}

// observe learns the callback URIs a request announces, before it is sent.
// Errors are left for Check to report.
func (v *Validator) observe(req *http.Request, body []byte) {
	ex, err := v.route(req)
	if err != nil || len(ex.route.Operation.Callbacks) == 0 {
		return
	}
	rb := ex.route.Operation.RequestBody
	if rb == nil || rb.Value == nil || len(body) == 0 {
		return
	}
	if root, _ := validateBody(rb.Value.Content, req.Header, body, true); root != nil {
		v.learnCallbacks(ex, root)
	}
}
