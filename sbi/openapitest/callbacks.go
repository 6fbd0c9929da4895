package openapitest

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// Notifications (SmContextStatusNotify, N1N2 transfer failure, UECM
// deregistration, SDM data change, NF status notify, SM policy update...)
// go to a URI the consumer chose, so the path says nothing about which
// operation describes them. 3GPP describes them as callbacks of the
// operation that carried the URI, keyed by a runtime expression such as
// '{$request.body#/smContextStatusUri}'. The Validator therefore learns
// them: whenever it checks a request whose operation has callbacks, it
// evaluates each key against the request body and remembers the URI it
// yields. A later request to exactly that URI (scheme and query ignored) is
// checked as that callback. ExpectCallback covers the cases learning cannot:
// a test that sends a notification without the subscription passing through
// the Validator, or an expression that cannot be evaluated (see
// expandCallbackKey).

// callbackRoute says which callback requests to a URI are.
type callbackRoute struct {
	uri     string // host+path, or a path when it starts with "/"
	service string
	parent  string // operationId of the operation that defines the callback
	name    string
	cb      *openapi3.Callback
	key     string // the one key a learned URI came from; "" to choose by suffix
}

// ExpectCallback tells the Validator that requests to URIs starting with
// urlPrefix are the callback callbackName of the API of service (the path's
// service name, e.g. "nsmf-pdusession"). urlPrefix is "host:port/path" or
// "http://host:port/path" (the scheme is ignored), or a bare "/path" to match
// any host. callbackName is the key under the operation's callbacks (e.g.
// "smContextStatusNotification"), or "OperationId/name" where several
// operations define one by that name with different content. It fails if
// the API has no such callback.
//
// A callback URI carried in a request body the Validator has checked is
// learned without this (see the package documentation).
func (v *Validator) ExpectCallback(urlPrefix, service, callbackName string) error {
	a, err := v.api(service)
	if err != nil {
		return fmt.Errorf("openapitest: ExpectCallback: %w", err)
	}
	parent, cb, err := a.findCallback(callbackName)
	if err != nil {
		return fmt.Errorf("openapitest: ExpectCallback: %w", err)
	}
	_, name, _ := strings.Cut(callbackName, "/")
	if name == "" {
		name = callbackName
	}
	r := &callbackRoute{uri: normalizeURI(urlPrefix), service: service, parent: parent, name: name, cb: cb}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.prefixes = slices.DeleteFunc(v.prefixes, func(c *callbackRoute) bool { return c.uri == r.uri })
	v.prefixes = append(v.prefixes, r)
	return nil
}

// findCallback looks a callback up by name, or by "OperationId/name". Where
// several operations define one by that name (Nudm_UECM's
// deregistrationNotification under each registration), the first in path
// then method order is taken, so the choice is stable.
func (a *api) findCallback(qualified string) (parent string, cb *openapi3.Callback, err error) {
	wantParent, name, ok := strings.Cut(qualified, "/")
	if !ok {
		wantParent, name = "", qualified
	}
	var all []string
	for _, p := range slices.Sorted(slices.Values(a.doc.Paths.Keys())) {
		item := a.doc.Paths.Value(p)
		ops := item.Operations()
		for _, m := range slices.Sorted(maps.Keys(ops)) {
			op := ops[m]
			for _, n := range slices.Sorted(maps.Keys(op.Callbacks)) {
				all = append(all, op.OperationID+"/"+n)
				ref := op.Callbacks[n]
				if n != name || (wantParent != "" && wantParent != op.OperationID) || ref == nil || ref.Value == nil {
					continue
				}
				if cb == nil {
					parent, cb = op.OperationID, ref.Value
				}
			}
		}
	}
	if cb == nil {
		return "", nil, fmt.Errorf("%s has no callback %q (it has: %s)", a.file, qualified, strings.Join(all, ", "))
	}
	return parent, cb, nil
}

// learnCallbacks remembers the callback URIs that body, the request of ex,
// announces.
func (v *Validator) learnCallbacks(ex *exchange, body any) {
	op := ex.route.Operation
	if len(op.Callbacks) == 0 {
		return
	}
	var learned []*callbackRoute
	for _, name := range slices.Sorted(maps.Keys(op.Callbacks)) {
		ref := op.Callbacks[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		for _, key := range ref.Value.Keys() {
			uri, ok := expandCallbackKey(key, body)
			if !ok {
				continue
			}
			learned = append(learned, &callbackRoute{
				uri: normalizeURI(uri), service: ex.service, parent: ex.operationID,
				name: name, cb: ref.Value, key: key,
			})
		}
	}
	if len(learned) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.learned == nil {
		v.learned = map[string]*callbackRoute{}
	}
	for _, r := range learned {
		// The latest announcement of a URI wins: a URI reused for another
		// purpose (a new subscription) means what it was last said to mean.
		v.learned[r.uri] = r
	}
}

// expandCallbackKey evaluates a callback key against a request body:
// '{$request.body#/notificationUri}/update' with notificationUri
// "http://smf/cb/1" gives "http://smf/cb/1/update".
//
// Quirks: Nudm_UEAU, Nudm_SDM and Nudm_UECM write the expression without
// its "$" ('{request.body#/callbackReference}'), accepted here as meant;
// Nudr_DR writes '{dataRestorationCallbackUri}', which is no runtime
// expression at all (the URI comes from the NRF), so it cannot be learned
// and needs ExpectCallback.
func expandCallbackKey(key string, body any) (string, bool) {
	open := strings.Index(key, "{")
	end := strings.Index(key, "}")
	if open < 0 || end < open {
		return "", false
	}
	expr := strings.TrimPrefix(key[open+1:end], "$")
	ptr, ok := strings.CutPrefix(expr, "request.body#")
	if !ok {
		return "", false
	}
	val, ok := jsonPointer(body, ptr)
	if !ok {
		return "", false
	}
	s, ok := val.(string)
	if !ok || !(strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) {
		// Only an HTTP URI can be the target of a request (tern's
		// in-process NFs use URNs such as "urn:tern:amf:...").
		return "", false
	}
	return key[:open] + s + key[end+1:], true
}

// jsonPointer evaluates an RFC 6901 pointer on a decoded JSON value.
func jsonPointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// normalizeURI reduces a URI to host+path: the scheme is dropped because
// a binding may reach an "https" callback URI over h2c in tests, and the
// query because callbacks take none. A bare path stays a path.
func normalizeURI(s string) string {
	if strings.HasPrefix(s, "/") {
		return s
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Host + u.EscapedPath()
}

// matchCallback finds the callback a request is, if any: an exact learned
// URI first, else the longest ExpectCallback prefix.
func (v *Validator) matchCallback(req *http.Request) (*exchange, error) {
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	path := req.URL.EscapedPath()
	full := host + path
	v.mu.Lock()
	best := v.learned[full]
	if best == nil {
		for _, c := range v.prefixes {
			target := full
			if strings.HasPrefix(c.uri, "/") {
				target = path
			}
			if strings.HasPrefix(target, c.uri) && (best == nil || len(c.uri) > len(best.uri)) {
				best = c
			}
		}
	}
	v.mu.Unlock()
	if best == nil {
		return nil, nil
	}
	a, err := v.api(best.service)
	if err != nil {
		return nil, err
	}
	key := best.key
	if key == "" {
		// Choose among the callback's keys by what follows the
		// expression: SM policy control has '.../update' and
		// '.../terminate'.
		bestSuffix := -1
		for _, k := range best.cb.Keys() {
			suffix := k[strings.LastIndex(k, "}")+1:]
			if strings.HasSuffix(path, suffix) && len(suffix) > bestSuffix {
				key, bestSuffix = k, len(suffix)
			}
		}
		if key == "" {
			return nil, fmt.Errorf("%s %s: callback %s/%s has no URI template that fits (%s)", req.Method, path, best.parent, best.name, strings.Join(best.cb.Keys(), ", "))
		}
	}
	item := best.cb.Value(key)
	id := best.parent + "/" + best.name
	op := item.GetOperation(req.Method)
	if op == nil {
		return nil, fmt.Errorf("%s %s: callback %s (%s) defines no %s", req.Method, path, id, a.file, req.Method)
	}
	if op.OperationID != "" {
		// Some callbacks have one (N1N2TransferFailureNotification).
		id = op.OperationID
	}
	return &exchange{
		api:         a,
		route:       &routers.Route{Spec: a.doc, Path: key, PathItem: item, Method: req.Method, Operation: op},
		pathParams:  map[string]string{},
		operationID: id,
		service:     best.service,
	}, nil
}
