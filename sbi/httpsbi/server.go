package httpsbi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// route is one served operation.
type route struct {
	op       *ops.Op
	producer any
	segs     []string // path split on "/"; "{x}" segments are parameters
}

// Handler serves the operations its producers implement.
type Handler struct {
	routes    []route
	callbacks []route // by prefix
	log       *slog.Logger
	verifier  Verifier // nil: no token required
	observe   Observer // nil: nothing recorded
}

// Observer records each served operation: its answer's status and how
// long it took (metrics).
type Observer func(op *ops.Op, status int, d time.Duration)

// Observe makes h report every request to an operation to o.
func (h *Handler) Observe(o Observer) *Handler {
	h.observe = o
	return h
}

// statusWriter remembers the status an answer was given.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Verifier checks the bearer token of a request for a service
// (nrfclient.TokenVerifier); it returns an *sbi.OAuth2Error.
type Verifier interface {
	Verify(token, service string) error
}

// RequireTokens makes h refuse a request without a valid access token for
// its service (TS 33.501 §13.4.1.1 step 3; RFC 6750 §3): 401
// invalid_token, 403 insufficient_scope. The NRF's services and callbacks
// are exempt.
func (h *Handler) RequireTokens(v Verifier) *Handler {
	h.verifier = v
	return h
}

// NewHandler returns a handler serving every operation of ops.All that one
// of producers implements (the first that does serves it). Typically the
// producers are one NF: the SMF serves Nsmf_PDUSession and the callbacks
// addressed to it.
func NewHandler(log *slog.Logger, producers ...any) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{log: log}
	for _, op := range ops.All {
		for _, p := range producers {
			if !op.Serves(p) {
				continue
			}
			r := route{op: op, producer: p}
			if op.Path == "" {
				h.callbacks = append(h.callbacks, r)
			} else {
				r.segs = strings.Split(op.Path, "/")
				h.routes = append(h.routes, r)
			}
			break
		}
	}
	return h
}

// Operations lists the operations h serves.
func (h *Handler) Operations() []*ops.Op {
	var out []*ops.Op
	for _, r := range h.routes {
		out = append(out, r.op)
	}
	for _, r := range h.callbacks {
		out = append(out, r.op)
	}
	return out
}

// match finds the route for method and path, filling params. When no
// route has the method but some serve the path under others, allowed
// lists those methods.
func (h *Handler) match(method, path string, params map[string]string) (r *route, allowed []string) {
	segs := strings.Split(path, "/")
	for i := range h.routes {
		rt := &h.routes[i]
		if len(rt.segs) != len(segs) {
			continue
		}
		ok := true
		for j, s := range rt.segs {
			if strings.HasPrefix(s, "{") {
				if segs[j] == "" {
					ok = false
					break
				}
				continue
			}
			if s != segs[j] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if rt.op.Method != method {
			allowed = appendMethod(allowed, rt.op.Method)
			continue
		}
		for j, s := range rt.segs {
			if strings.HasPrefix(s, "{") {
				v, err := url.PathUnescape(segs[j])
				if err != nil {
					v = segs[j]
				}
				params[s[1:len(s)-1]] = v
			}
		}
		return rt, nil
	}
	for i := range h.callbacks {
		rt := &h.callbacks[i]
		if strings.HasPrefix(path, rt.op.Callback) && strings.HasSuffix(path, rt.op.CallbackSuffix) {
			if rt.op.Method != method {
				allowed = appendMethod(allowed, rt.op.Method)
				continue
			}
			return rt, nil
		}
	}
	return nil, allowed
}

func appendMethod(ms []string, m string) []string {
	if slices.Contains(ms, m) {
		return ms
	}
	return append(ms, m)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	params := make(map[string]string, 2)
	rt, allowed := h.match(r.Method, r.URL.EscapedPath(), params)
	if rt == nil {
		if len(allowed) > 0 {
			// RFC 9110 §15.5.6: a 405 lists the methods the resource
			// has. TS 29.500 Table 5.2.7.2-1 defines no cause for it
			// (the resource exists, so no 404 cause fits): none is given.
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeProblem(w, sbi.NewProblem(http.StatusMethodNotAllowed, "", "%s not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
			return
		}
		writeProblem(w, sbi.NewProblem(http.StatusNotFound, sbi.CauseResourceURIStructureNotFound, "no operation at %s", r.URL.Path))
		return
	}
	op := rt.op
	if op.NoStore {
		// Set before any answer, so that errors carry it too.
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
	}
	if h.observe != nil {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer func() { h.observe(op, sw.status, time.Since(start)) }()
		w = sw
	}
	if h.verifier != nil && needsToken(op) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		err := error(sbi.NewOAuth2Error(http.StatusUnauthorized, sbi.OAuth2InvalidToken, "no bearer token"))
		if ok {
			err = h.verifier.Verify(tok, op.Service())
		}
		if err != nil {
			writeTokenError(w, err)
			return
		}
	}
	req := op.NewRequest()
	v := reflect.ValueOf(req).Elem()
	p, err := planOf(v.Type())
	if err != nil {
		writeError(w, op, err)
		return
	}
	for _, f := range p.fields {
		switch f.Kind {
		case "path":
			v.Field(f.Index).SetString(params[f.Name])
		case "uri":
			v.Field(f.Index).SetString(r.URL.Path)
		}
	}
	if err := decodeQuery(p, req, v, r.URL.Query()); err != nil {
		writeError(w, op, err)
		return
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		writeError(w, op, badBody("reading the body: %v", err))
		return
	}
	if len(body) > maxBody {
		writeProblem(w, sbi.NewProblem(http.StatusRequestEntityTooLarge, "", "body over %d bytes", maxBody))
		return
	}
	if len(body) > 0 {
		if want, ok := requestMediaOK(op, p, r.Header.Get("Content-Type")); !ok {
			// RFC 9110 §15.5.16 (with Accept, §12.5.1) and RFC 5789
			// §2.2 (Accept-Patch): say what the operation takes. TS
			// 29.500 Table 5.2.7.2-1 has no cause for 415.
			w.Header().Set("Accept", strings.Join(want, ", "))
			if op.Method == http.MethodPatch {
				w.Header().Set("Accept-Patch", strings.Join(want, ", "))
			}
			writeProblem(w, sbi.NewProblem(http.StatusUnsupportedMediaType, "", "%s takes %s, not %q", op.Name, strings.Join(want, " or "), r.Header.Get("Content-Type")))
			return
		}
	}
	if err := decodeBody(p, v, r.Header.Get("Content-Type"), body); err != nil {
		writeError(w, op, err)
		return
	}
	if p.body >= 0 && len(body) == 0 && op.Method != http.MethodGet && op.Method != http.MethodDelete && !op.OptionalBody {
		writeProblem(w, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "%s needs a body", op.Name))
		return
	}
	resp := op.NewResponse()
	if err := op.Serve(r.Context(), rt.producer, req, resp); err != nil {
		if !errors.Is(err, context.Canceled) {
			h.log.Debug("SBI operation failed", "op", op.Name, "err", err)
		}
		writeError(w, op, err)
		return
	}
	writeResponse(w, r, op, resp)
}

func writeResponse(w http.ResponseWriter, r *http.Request, op *ops.Op, resp any) {
	v := reflect.ValueOf(resp).Elem()
	p, err := planOf(v.Type())
	if err != nil {
		writeError(w, op, err)
		return
	}
	status := op.Status
	if s, ok := resp.(ops.Statuser); ok {
		status = s.SuccessStatus()
	}
	for _, f := range p.fields {
		if f.Kind == "location" {
			if id := v.Field(f.Index).String(); id != "" {
				w.Header().Set("Location", locationOf(r, id))
			}
		}
	}
	if op.LocationSelf && status == http.StatusCreated {
		w.Header().Set("Location", locationOf(r, ""))
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	pl, err := encodeBody(p, v, op.ResponseMedia)
	if err != nil {
		writeError(w, op, err)
		return
	}
	writeBody(w, status, pl.contentType, pl.body)
}

// locationOf is the URI of a created resource: the request's collection
// followed by the new resource's ID (TS 29.501 §4.4.1).
func locationOf(r *http.Request, id string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	loc := scheme + "://" + r.Host + strings.TrimSuffix(r.URL.Path, "/")
	if id != "" {
		loc += "/" + url.PathEscape(id)
	}
	return loc
}

// writeError answers err: a decoding failure as 400/415, a
// *sbi.SMContextError as the operation's error body with its binary
// parts, a *sbi.ProblemDetails as itself, anything else as 500.
func writeError(w http.ResponseWriter, op *ops.Op, err error) {
	var de *decodeError
	if errors.As(err, &de) {
		cause := sbi.CauseMandatoryIEIncorrect
		writeProblem(w, sbi.NewProblem(de.status, cause, "%v", de.err))
		return
	}
	var oe *sbi.OAuth2Error
	if op.OAuth2 && errors.As(err, &oe) {
		b, _ := json.Marshal(oe.Model())
		writeBody(w, oe.Status, contentJSON, b)
		return
	}
	var se *sbi.SMContextError
	if op.SMError && errors.As(err, &se) && se.Problem != nil {
		writeSMError(w, se)
		return
	}
	var pd *sbi.ProblemDetails
	if errors.As(err, &pd) {
		writeProblem(w, pd)
		return
	}
	writeProblem(w, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err))
}

func writeProblem(w http.ResponseWriter, p *sbi.ProblemDetails) {
	b, _ := json.Marshal(p.Model())
	writeBody(w, p.Status, contentProblem, b)
}

// smErrorBody is SmContextCreateError / SmContextUpdateError (TS 29.502
// §6.1.6.2.6-7): the same JSON shape for both.
type smErrorBody struct {
	Body     *models.Smf_PDUSess_SmContextCreateError `sbi:"body"`
	N1SmMsg  []byte                                   `sbi:"part=n1SmMsg"`
	N2SmInfo []byte                                   `sbi:"part=n2SmInfo"`
}

func writeSMError(w http.ResponseWriter, se *sbi.SMContextError) {
	m := se.Problem.Model()
	e := &models.Smf_PDUSess_SmContextCreateError{
		Error:        &models.Smf_PDUSess_ExtProblemDetails{Title: m.Title, Status: m.Status, Detail: m.Detail, Cause: m.Cause},
		N2SmInfoType: se.N2SmInfoType,
	}
	if len(se.N1SmMsg) > 0 {
		e.N1SmMsg = &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}
	}
	if len(se.N2SmInfo) > 0 {
		e.N2SmInfo = &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}
	}
	msg := &smErrorBody{Body: e, N1SmMsg: se.N1SmMsg, N2SmInfo: se.N2SmInfo}
	v := reflect.ValueOf(msg).Elem()
	p, _ := planOf(v.Type())
	pl, err := encodeBody(p, v, "")
	if err != nil {
		writeProblem(w, se.Problem)
		return
	}
	writeBody(w, se.Problem.Status, pl.contentType, pl.body)
}

// NewServer returns an http.Server for h that speaks HTTP/2 over TLS (when
// tlsConf is set) or h2c with prior knowledge, and HTTP/1.1 for operators'
// tools (curl). Serve it with Serve or ServeTLS(ln, "", "").
func NewServer(h http.Handler, tlsConf *tls.Config) *http.Server {
	s := &http.Server{Handler: h, TLSConfig: tlsConf, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	s.Protocols.SetHTTP2(true)
	s.Protocols.SetUnencryptedHTTP2(true)
	return s
}

// writeBody answers status with body. Content-Length lets HTTP/2 end the
// stream with the body's last DATA frame instead of an empty one after it.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeTokenError refuses a request for its token (RFC 6750 §3): the
// WWW-Authenticate challenge says why; the body is a ProblemDetails.
func writeTokenError(w http.ResponseWriter, err error) {
	oe := sbi.NewOAuth2Error(http.StatusUnauthorized, sbi.OAuth2InvalidToken, "%v", err)
	errors.As(err, &oe)
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer error=%q, error_description=%q", oe.Code, oe.Description))
	writeProblem(w, sbi.NewProblem(oe.Status, "", "%s: %s", oe.Code, oe.Description))
}
