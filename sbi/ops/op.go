// Package ops is the one description of tern's service operations that every
// SBI binding reads: for each operation, its 3GPP name, the HTTP method and
// resource path of its OpenAPI (TS 29.5xx), its success status, the Go
// message that carries its request and its response, and how a producer
// serves it. The bindings are mechanical readers of this table:
//
//   - the in-process binding does not use it (a consumer holds the producer
//     and makes a Go call);
//   - the HTTP/2 binding (package sbi/httpsbi) maps each message field to a
//     path parameter, a query parameter, the JSON body, a multipart/related
//     binary part or a header, as the field's tags say;
//   - the shared-memory binding (package sbi/shmsbi) sends the same messages
//     in a fixed binary layout, naming the operation by its ID.
//
// Client is the consumer side: one value that implements every sbi
// interface by calling a Caller (a binding) with the operation and its
// messages. Serve is the producer side: it finds the producer that
// implements an operation's interface and calls it.
//
// Message field tags (read by the HTTP binding; the shm binding ignores
// them and sends every exported field):
//
//	sbi:"path=NAME"        a path parameter ({NAME} in Op.Path)
//	sbi:"query=NAME"       a query parameter (string; empty is omitted)
//	sbi:"query=NAME,json"  a query parameter holding JSON (nil is omitted)
//	sbi:"body"             the JSON body (a model pointer or slice)
//	sbi:"part=ID"          a binary part of a multipart/related body, the
//	                       JSON body's RefToBinaryData naming it by ID
//	sbi:"location"         in a response, the last segment of Location
//	sbi:"created"          in a response, true when the answer was 201
//	sbi:"uri"              the absolute URI a callback is sent to
//
// A message may instead carry its query itself by implementing QueryCodec.
package ops

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"github.com/tern5g/tern/sbi"
)

// Op is one service operation.
type Op struct {
	// ID names the operation on bindings without paths (shm). It is the
	// operation's index in All, starting at 1; never reuse one.
	ID uint16
	// Name is the 3GPP operation name ("Nausf_UEAuthentication_Authenticate"),
	// used in logs and metrics.
	Name sbi.Operation
	// OperationID is the OpenAPI operationId the conformance tests expect
	// (empty for tern's own operations, which no 3GPP file describes).
	OperationID string
	// Method and Path locate the resource, Path relative to the apiRoot and
	// starting with the API name and version ("/nausf-auth/v1/..."). A
	// callback has an empty Path: its request goes to the URI field.
	Method, Path string
	// Status is the success status; Statuser on the response may choose
	// another 2xx.
	Status int
	// RequestMedia and ResponseMedia are the JSON media types of the bodies
	// when not application/json (the 3GPP variants: merge-patch+json,
	// 3gppHal+json).
	RequestMedia, ResponseMedia string
	// OptionalBody: the request's body may be left out (every other
	// operation with a body field requires it).
	OptionalBody bool
	// LocationSelf: a 201 answer's Location is the request's own URI (a
	// resource created by PUT at its final address).
	LocationSelf bool
	// Callback is, for an operation without Path, the path prefix of the
	// URIs it is sent to (sbi.Callback*): a server routes on it.
	Callback string
	// CallbackSuffix, when set, is how those URIs end (two callbacks
	// share a prefix: {notificationUri}/update and /terminate).
	CallbackSuffix string
	// OAuth2 marks the token endpoint: its errors are OAuth2 errors
	// (sbi.OAuth2Error).
	OAuth2 bool
	// NoStore: no cache may store an answer of the operation, errors
	// included (Cache-Control: no-store, RFC 9111 §5.2.2.5, and Pragma:
	// no-cache for HTTP/1.0 caches, §5.4). TS 29.500 §5.2.2 has the SBI
	// use Cache-Control as HTTP defines it; these answers carry secrets
	// or hand something out that must not be handed out twice: the
	// access token (RFC 6749 §5.1) and the reads that allocate an SQN
	// (UDRQueryAuthSubscription, a GET, which a cache could otherwise
	// replay with its SQN, K and OPc to another UDM).
	NoStore bool
	// SMError marks operations whose errors carry binary parts
	// (sbi.SMContextError, TS 29.502 SmContextCreateError/UpdateError).
	SMError bool

	req, resp reflect.Type
	serves    func(producer any) bool
	serve     func(ctx context.Context, producer any, req, resp any) error
}

// NewRequest returns a new, zero request message of the operation.
func (o *Op) NewRequest() any { return reflect.New(o.req).Interface() }

// NewResponse returns a new, zero response message of the operation.
func (o *Op) NewResponse() any { return reflect.New(o.resp).Interface() }

// RequestType and ResponseType are the message types (not pointers).
func (o *Op) RequestType() reflect.Type  { return o.req }
func (o *Op) ResponseType() reflect.Type { return o.resp }

// Serves reports whether producer implements the operation's interface.
func (o *Op) Serves(producer any) bool { return o.serves(producer) }

// Serve runs the operation on producer: req and resp are pointers to the
// operation's messages.
func (o *Op) Serve(ctx context.Context, producer any, req, resp any) error {
	if !o.serves(producer) {
		return sbi.NewProblem(404, sbi.CauseResourceURIStructureNotFound, "%s is not served here", o.Name)
	}
	return o.serve(ctx, producer, req, resp)
}

func (o *Op) String() string { return string(o.Name) }

// Statuser lets a response choose its success status (for instance 202
// instead of 200, or 204 when it has no body).
type Statuser interface{ SuccessStatus() int }

// QueryCodec is implemented by request messages whose query parameters
// are not plain fields (the NRF discovery query, the NSSF's slice info).
type QueryCodec interface {
	EncodeQuery(q url.Values) error
	DecodeQuery(q url.Values) error
}

// Caller is a binding's consumer side: it carries req (a pointer to the
// operation's request message) to the producer and fills resp with the
// answer, or returns the producer's error (*sbi.ProblemDetails,
// *sbi.SMContextError) or a transport error.
type Caller interface {
	Call(ctx context.Context, op *Op, req, resp any) error
}

// define builds an Op whose producer interface is P, request Rq and
// response Rs.
func define[P, Rq, Rs any](o Op, f func(ctx context.Context, p P, req *Rq, resp *Rs) error) *Op {
	o.req = reflect.TypeFor[Rq]()
	o.resp = reflect.TypeFor[Rs]()
	o.serves = func(p any) bool { _, ok := p.(P); return ok }
	o.serve = func(ctx context.Context, p any, req, resp any) error {
		rq, ok1 := req.(*Rq)
		rs, ok2 := resp.(*Rs)
		if !ok1 || !ok2 {
			return fmt.Errorf("ops: %s: messages %T, %T", o.Name, req, resp)
		}
		return f(ctx, p.(P), rq, rs)
	}
	return &o
}

// call runs op on c with typed messages.
func call[Rq, Rs any](ctx context.Context, c Caller, op *Op, req *Rq) (*Rs, error) {
	var rs Rs
	if err := c.Call(ctx, op, req, &rs); err != nil {
		return &rs, err
	}
	return &rs, nil
}

// Field is one tagged field of a message, as a binding reads it.
type Field struct {
	Index int    // struct field index
	Kind  string // path, query, body, part, location, uri
	Name  string // parameter name or content ID
	JSON  bool   // query=NAME,json
}

// Fields parses the tags of a message type (not a pointer).
func Fields(t reflect.Type) ([]Field, error) {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("sbi")
		if !ok {
			continue
		}
		kind, rest, _ := strings.Cut(tag, "=")
		name, opt, _ := strings.Cut(rest, ",")
		f := Field{Index: i, Kind: kind, Name: name, JSON: opt == "json"}
		switch kind {
		case "path", "query", "part":
			if name == "" {
				return nil, fmt.Errorf("ops: %s.%s: tag %q names nothing", t, sf.Name, tag)
			}
		case "body", "location", "uri", "created":
		default:
			return nil, fmt.Errorf("ops: %s.%s: unknown tag %q", t, sf.Name, tag)
		}
		out = append(out, f)
	}
	return out, nil
}

// Service is the service name an operation belongs to, the first segment
// of its path ("nudm-sdm"; "oauth2" for the token endpoint; "" for a
// callback).
func (o *Op) Service() string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(o.Path, "/"), "/")
	return seg
}
