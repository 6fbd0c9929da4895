package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// services maps the first path segment of a request (the service name of
// TS 29.501 §4.4.1, or "oauth2" for the NRF's token endpoint) to the file
// that describes it.
var services = map[string]string{
	"nnrf-nfm":             "TS29510_Nnrf_NFManagement.yaml",
	"nnrf-disc":            "TS29510_Nnrf_NFDiscovery.yaml",
	"oauth2":               "TS29510_Nnrf_AccessToken.yaml",
	"nausf-auth":           "TS29509_Nausf_UEAuthentication.yaml",
	"nudm-ueau":            "TS29503_Nudm_UEAU.yaml",
	"nudm-sdm":             "TS29503_Nudm_SDM.yaml",
	"nudm-uecm":            "TS29503_Nudm_UECM.yaml",
	"nudr-dr":              "TS29504_Nudr_DR.yaml",
	"namf-comm":            "TS29518_Namf_Communication.yaml",
	"nsmf-pdusession":      "TS29502_Nsmf_PDUSession.yaml",
	"npcf-smpolicycontrol": "TS29512_Npcf_SMPolicyControl.yaml",
	"nnssf-nsselection":    "TS29531_Nnssf_NSSelection.yaml",
}

// Dir returns the directory of the 3GPP OpenAPI files: ../shared/openapi
// from the module root, found by walking up from the working directory (a
// test's is its package directory) to go.mod. It calls t.Skip when the
// directory is absent, as in a plain clone; CI always has it.
func Dir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Skipf("openapitest: cannot find the 3GPP OpenAPI files: working directory: %v", err)
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(filepath.Dir(d), "shared", "openapi")
			if _, err := os.Stat(filepath.Join(dir, services["nnrf-nfm"])); err != nil {
				t.Skipf("openapitest: 3GPP OpenAPI files absent (%v); they live in ../shared/openapi beside the repository, which CI provides and a plain clone lacks", err)
			}
			return dir
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Skipf("openapitest: cannot find the 3GPP OpenAPI files: no go.mod above %s", wd)
		}
		d = parent
	}
}

// Validator checks SBI exchanges against the 3GPP OpenAPI files in one
// directory. It is safe for concurrent use. Its state is the callback URIs it
// has learned or been told (see ExpectCallback); the parsed files are shared
// by every Validator in the process.
type Validator struct {
	dir string

	mu       sync.Mutex
	learned  map[string]*callbackRoute // by exact URI (host+path)
	prefixes []*callbackRoute          // from ExpectCallback
}

// Load returns a validator reading the files in dir. Each API file is read
// and prepared on first use and cached for the life of the process, so a
// Load per test costs nothing after the first.
func Load(dir string) (*Validator, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	for _, f := range services {
		if _, err := os.Stat(filepath.Join(abs, f)); err != nil {
			return nil, fmt.Errorf("openapitest: OpenAPI directory %s: %w", abs, err)
		}
	}
	return &Validator{dir: abs}, nil
}

// api is one API file, bundled, loaded and routed.
type api struct {
	file   string
	doc    *openapi3.T
	router routers.Router
	stubs  []string // components missing from the files, validated as "anything"
	// defects are the paths the spec itself gets wrong, with what is wrong.
	defects map[string]error
	// problem is CommonData's ProblemDetails when the API refers to it,
	// used for error responses that only the "default" response covers.
	problem *openapi3.SchemaRef
}

// apiCache holds each prepared API file, keyed by absolute path: with
// yamlCache, the package's per-process file cache.
var apiCache sync.Map // string -> *apiEntry

type apiEntry struct {
	once sync.Once
	api  *api
	err  error
}

func (v *Validator) api(service string) (*api, error) {
	file, ok := services[service]
	if !ok {
		return nil, fmt.Errorf("no 3GPP API known for service %q (known: %s)", service, strings.Join(slices.Sorted(maps.Keys(services)), ", "))
	}
	e, _ := apiCache.LoadOrStore(filepath.Join(v.dir, file), &apiEntry{})
	ent := e.(*apiEntry)
	ent.once.Do(func() { ent.api, ent.err = loadAPI(v.dir, file) })
	return ent.api, ent.err
}

func loadAPI(dir, file string) (*api, error) {
	data, stubs, err := bundle(dir, file)
	if err != nil {
		return nil, fmt.Errorf("openapitest: bundle %s: %w", file, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load %s: %w", file, err)
	}
	// Examples are documentation, and some 3GPP examples do not match their
	// own schemas. The components must be valid, which also catches a
	// bundling mistake early. A path that is not is a defect of the spec
	// (Nudr_DR, via Subscription_Data: DELETE
	// /subscription-data/group-data/{ueGroupId}/ee-subscriptions/{subsId}/hss-subscriptions
	// names its path parameter externalGroupId): the rest of the API is
	// still usable, so such a path is noted and the note is added to any
	// violation found on it.
	ctx := context.Background()
	noExamples := openapi3.DisableExamplesValidation()
	if err := doc.Components.Validate(ctx, noExamples); err != nil {
		return nil, fmt.Errorf("openapitest: %s: invalid components after bundling: %w", file, err)
	}
	defects := map[string]error{}
	for _, p := range doc.Paths.Keys() {
		one := openapi3.NewPaths(openapi3.WithPath(p, doc.Paths.Value(p)))
		if err := one.Validate(ctx, noExamples); err != nil {
			defects[p] = err
		}
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: route %s: %w", file, err)
	}
	a := &api{file: file, doc: doc, router: router, stubs: stubs, defects: defects}
	if s := doc.Components.Schemas["TS29571_CommonData.ProblemDetails"]; s != nil {
		a.problem = s
	}
	return a, nil
}

// Check validates one exchange: the request (path, method, query and header
// parameters, body) against the operation it routes to, and, when
// resp is not nil, the response (status code, headers, content type, body).
// reqBody and respBody are the full bodies, which the caller has read.
//
// The operation is found from the first path segment (the service name), or,
// for a notification, from a callback URI (see ExpectCallback). It returns
// the operationId matched and every violation, joined. An operation without
// an operationId is named "METHOD /service/version/path-template"; a
// callback without one "ParentOperationId/callbackName".
func (v *Validator) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) (operationID string, err error) {
	ex, err := v.route(req)
	if err != nil {
		return "", err
	}
	return ex.operationID, ex.check(v, req, reqBody, resp, respBody)
}

// exchange is a request matched to the operation that describes it.
type exchange struct {
	api         *api
	route       *routers.Route
	pathParams  map[string]string
	operationID string
	service     string
}

func (v *Validator) route(req *http.Request) (*exchange, error) {
	if ex, err := v.matchCallback(req); ex != nil || err != nil {
		return ex, err
	}
	p := strings.TrimPrefix(req.URL.EscapedPath(), "/")
	service, _, _ := strings.Cut(p, "/")
	a, err := v.api(service)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w; a notification to a callback URI must be announced first (ExpectCallback, or a request that carries the URI)", req.Method, req.URL.Path, err)
	}
	// The router matches on the path alone: the servers were reduced to
	// their path, and a request the binding built may lack a scheme.
	r := req.Clone(req.Context())
	r.Body = http.NoBody
	route, params, err := a.router.FindRoute(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: no operation in %s: %w", req.Method, req.URL.Path, a.file, err)
	}
	id := route.Operation.OperationID
	if id == "" {
		// Some operations have none (Nausf's POST /ue-authentications):
		// name them by method and full path template, unique across APIs.
		id = req.Method + " " + strings.TrimSuffix(a.doc.Servers[0].URL, "/") + route.Path
	}
	return &exchange{api: a, route: route, pathParams: params, operationID: id, service: service}, nil
}

// kinOptions are the openapi3filter options every check uses.
func kinOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		MultiError: true,
		// Bodies are validated by validateBody (multipart/related and the
		// token request's form need handling kin-openapi lacks).
		ExcludeRequestBody:  true,
		ExcludeResponseBody: true,
		// 3GPP secures every operation with oAuth2ClientCredentials, with
		// {} (none) as the alternative; whether tern sends tokens is not a
		// schema question.
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		SchemaValidationOptions: schemaOptions(),
	}
}

// uuidFormat is the layout of RFC 4122 (TS 29.571 NfInstanceId and the
// like: "format: uuid"), any version.
var uuidFormat = openapi3.NewRegexpFormatValidator(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// schemaOptions are the options of every schema check.
func schemaOptions() []openapi3.SchemaValidationOption {
	return []openapi3.SchemaValidationOption{
		// Values are in the messages already; the schema dump kin-openapi
		// appends would bury the reason under pages of JSON.
		openapi3.DisableSchemaErrorDetails(),
		// kin-openapi checks date and date-time by default, but not the
		// formats 3GPP leans on for identifiers and addresses. They are
		// passed per validation rather than defined globally
		// (openapi3.DefineStringFormat), which would change every other
		// user of kin-openapi in the process.
		openapi3.WithStringFormatValidator("uuid", uuidFormat),
		openapi3.WithStringFormatValidator("ipv4", openapi3.NewIPValidator(true)),
		openapi3.WithStringFormatValidator("ipv6", openapi3.NewIPValidator(false)),
	}
}

func (ex *exchange) check(v *Validator, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	var errs []error
	op := ex.route.Operation

	// Parameters (path, query, header) by kin-openapi.
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: ex.pathParams,
		Route:      ex.route,
		Options:    kinOptions(),
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		errs = append(errs, prefixed("request", err)...)
	}
	errs = append(errs, unknownQuery(ex.route, req)...)

	// Body.
	var root any
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		if len(reqBody) > 0 {
			errs = append(errs, fmt.Errorf("request: has a body (%d bytes) but the operation defines none", len(reqBody)))
		}
	} else if rb := op.RequestBody.Value; len(reqBody) == 0 {
		if rb.Required {
			errs = append(errs, errors.New("request: body is required but empty"))
		}
	} else {
		var berrs []error
		root, berrs = validateBody(op.RequestBody.Value.Content, req.Header, reqBody, true)
		errs = append(errs, prefixed("request body", berrs...)...)
	}
	if root != nil {
		v.learnCallbacks(ex, root)
	}

	if resp != nil {
		errs = append(errs, ex.checkResponse(in, resp, respBody)...)
	}
	if d := ex.api.defects[ex.route.Path]; d != nil && len(errs) > 0 {
		errs = append(errs, fmt.Errorf("note: %s is itself inconsistent on this path, which may explain the above: %w", ex.api.file, d))
	}
	return errors.Join(errs...)
}

func (ex *exchange) checkResponse(in *openapi3filter.RequestValidationInput, resp *http.Response, body []byte) []error {
	op := ex.route.Operation
	code := resp.StatusCode
	what := "response " + strconv.Itoa(code)
	rr := op.Responses.Status(code)
	if rr == nil && op.Responses.Default() == nil && generalError[code] && ex.api.problem != nil {
		// TS 29.500 §5.2.7.1: the protocol errors of Table 5.2.7.1-1 apply
		// to every API, listed or not (an unknown resource is 404 even
		// where a file lists only 400). They carry ProblemDetails.
		content := openapi3.Content{"application/problem+json": &openapi3.MediaType{Schema: ex.api.problem}}
		_, berrs := validateBody(content, resp.Header, body, false)
		return prefixed(what+" body", berrs...)
	}
	if rr == nil {
		rr = op.Responses.Default()
		if rr == nil || code < 400 {
			// 3GPP puts "default" on nearly every operation for unexpected
			// errors. The letter of OpenAPI lets it cover a success or
			// redirect code too, but one that only it covers is a binding
			// bug (200 for 201, say), so it is not accepted.
			return []error{fmt.Errorf("%s: status not defined for %s (defined: %s)", what, ex.operationID, strings.Join(slices.Sorted(slices.Values(op.Responses.Keys())), ", "))}
		}
	}
	if rr.Value == nil {
		return []error{fmt.Errorf("%s: response definition not resolved", what)}
	}
	var errs []error
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 code,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                kinOptions(),
	}
	rin.Options.IncludeResponseStatus = true
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		errs = append(errs, prefixed(what, err)...)
	}
	content := rr.Value.Content
	if len(content) == 0 && rr == op.Responses.Default() && ex.api.problem != nil {
		// TS 29.500 §5.2.7.1: an error carries ProblemDetails. The
		// "default" response says nothing of a body, so hold it to that.
		content = openapi3.Content{"application/problem+json": &openapi3.MediaType{Schema: ex.api.problem}}
	}
	switch {
	case len(content) == 0:
		if len(body) > 0 {
			errs = append(errs, fmt.Errorf("%s: has a body (%d bytes, %s) but the spec defines none", what, len(body), resp.Header.Get("Content-Type")))
		}
	case len(body) == 0:
		if rr != op.Responses.Default() {
			errs = append(errs, fmt.Errorf("%s: body is empty but the spec defines one (%s)", what, strings.Join(slices.Sorted(maps.Keys(content)), ", ")))
		}
	default:
		_, berrs := validateBody(content, resp.Header, body, false)
		errs = append(errs, prefixed(what+" body", berrs...)...)
	}
	return errs
}

// generalError are the statuses of TS 29.500 Table 5.2.7.1-1, which any
// operation may answer.
var generalError = map[int]bool{400: true, 403: true, 404: true, 405: true, 406: true, 408: true, 411: true,
	413: true, 414: true, 415: true, 429: true, 500: true, 501: true, 503: true, 504: true}

// unknownQuery reports query parameters the operation does not declare:
// kin-openapi ignores them, but a misspelt name (target-nf-types) is exactly
// the mistake a binding makes, and the producer would ignore it silently.
func unknownQuery(route *routers.Route, req *http.Request) []error {
	known := map[string]bool{}
	for _, ps := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				known[p.Value.Name] = true
			}
		}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(req.URL.Query())) {
		if !known[k] {
			errs = append(errs, fmt.Errorf("request: query parameter %q is not defined for this operation", k))
		}
	}
	return errs
}

// prefixed flattens kin-openapi's MultiError and prefixes each violation.
func prefixed(what string, errs ...error) []error {
	var out []error
	for _, err := range errs {
		// Only the top level: a parameter's RequestError wraps a
		// MultiError of its own, and unwrapping that would lose the
		// parameter's name.
		if me, ok := err.(openapi3.MultiError); ok {
			for _, e := range me {
				out = append(out, prefixed(what, e)...)
			}
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", what, err))
	}
	return out
}
