package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// validateBody checks a request or response body against the content the
// spec allows. It returns the decoded JSON (the root part's, for
// multipart/related) so callback URIs can be learned from it.
//
// Bodies are validated here rather than by openapi3filter because two of
// the forms 3GPP uses are beyond its decoders: multipart/related (N1/N2
// containers; kin-openapi knows multipart/form-data only, and registering a
// decoder would change a process-wide table) and the token request's
// x-www-form-urlencoded body, whose properties are JSON objects and arrays
// of objects (openapi3filter rejects that schema outright).
func validateBody(content openapi3.Content, header http.Header, body []byte, request bool) (any, []error) {
	ct := header.Get("Content-Type")
	if ct == "" {
		return nil, []error{fmt.Errorf("no Content-Type (allowed: %s)", allowed(content))}
	}
	mt := content.Get(ct)
	if mt == nil {
		return nil, []error{fmt.Errorf("Content-Type %q not allowed (allowed: %s)", ct, allowed(content))}
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, []error{fmt.Errorf("Content-Type %q: %w", ct, err)}
	}
	switch {
	case media == "multipart/related":
		return validateMultipart(mt, params, body, request)
	case media == "application/x-www-form-urlencoded":
		v, err := decodeForm(mt, body)
		if err != nil {
			return nil, []error{err}
		}
		return v, append(visit(mt.Schema, v, request), undefinedFields(mt.Schema, v)...)
	case media == "application/json" || strings.HasSuffix(media, "+json"):
		// +json covers problem+json, merge-patch+json and json-patch+json.
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, []error{fmt.Errorf("not JSON: %w", err)}
		}
		return v, append(visit(mt.Schema, v, request), undefinedFields(mt.Schema, v)...)
	}
	// Anything else (e.g. a bare application/vnd.3gpp.5gnas) is opaque.
	return nil, nil
}

func allowed(content openapi3.Content) string {
	return strings.Join(slices.Sorted(maps.Keys(content)), ", ")
}

// visit validates a decoded value against a schema, reporting every
// violation rather than the first.
func visit(schema *openapi3.SchemaRef, v any, request bool) []error {
	if schema == nil || schema.Value == nil {
		return nil
	}
	opts := append(schemaOptions(), openapi3.MultiErrors())
	if request {
		opts = append(opts, openapi3.VisitAsRequest())
	} else {
		opts = append(opts, openapi3.VisitAsResponse())
	}
	err := schema.Value.VisitJSON(v, opts...)
	if err == nil {
		return nil
	}
	if me, ok := err.(openapi3.MultiError); ok {
		return []error(me)
	}
	return []error{err}
}

// validateMultipart checks a multipart/related body (TS 29.500 §6.1.2.4,
// TS 29.502/29.518 N1/N2 containers): the root part is JSON and must match
// the schema of the property encoded as application/json (jsonData); every
// other part is binary, must carry a Content-ID that the JSON refers to
// (RefToBinaryData.contentId) and a Content-Type the encoding allows; and
// every contentId the JSON names must have its part.
func validateMultipart(mt *openapi3.MediaType, params map[string]string, body []byte, request bool) (any, []error) {
	if mt.Schema == nil || mt.Schema.Value == nil {
		return nil, []error{errors.New("multipart/related: spec gives no schema")}
	}
	schema := mt.Schema.Value
	boundary := params["boundary"]
	if boundary == "" {
		return nil, []error{errors.New("multipart/related: Content-Type has no boundary")}
	}
	// The property that holds the JSON, and the content types binary parts
	// may have.
	jsonProp := ""
	binaryTypes := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		// OpenAPI's default for a part without an encoding: JSON, unless
		// the property is binary (then any media type will do).
		ct := "application/json"
		if p := schema.Properties[name]; p != nil && p.Value != nil && p.Value.Format == "binary" {
			ct = "*/*"
		}
		if enc := mt.Encoding[name]; enc != nil && enc.ContentType != "" {
			ct = enc.ContentType
		}
		if ct == "application/json" {
			if jsonProp == "" {
				jsonProp = name
			}
			continue
		}
		for _, c := range strings.Split(ct, ",") {
			binaryTypes[strings.ToLower(strings.TrimSpace(c))] = true
		}
	}
	if jsonProp == "" {
		return nil, []error{errors.New("multipart/related: spec has no JSON part")}
	}

	type part struct {
		ct, id string
		data   []byte
	}
	var parts []part
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, []error{fmt.Errorf("multipart/related: part %d: %w", len(parts)+1, err)}
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, []error{fmt.Errorf("multipart/related: part %d: %w", len(parts)+1, err)}
		}
		parts = append(parts, part{ct: p.Header.Get("Content-Type"), id: trimID(p.Header.Get("Content-Id")), data: data})
	}
	if len(parts) == 0 {
		return nil, []error{errors.New("multipart/related: no parts")}
	}

	// RFC 2387: the root is the part the "start" parameter names, or the
	// first.
	rootIdx := 0
	if start := trimID(params["start"]); start != "" {
		rootIdx = slices.IndexFunc(parts, func(p part) bool { return p.id == start })
		if rootIdx < 0 {
			return nil, []error{fmt.Errorf("multipart/related: start %q names no part", start)}
		}
	}
	var errs []error
	root := parts[rootIdx]
	if m, _, _ := mime.ParseMediaType(root.ct); m != "application/json" {
		return nil, []error{fmt.Errorf("multipart/related: root part has Content-Type %q, want application/json", root.ct)}
	}
	var v any
	if err := json.Unmarshal(root.data, &v); err != nil {
		return nil, []error{fmt.Errorf("multipart/related: root part is not JSON: %w", err)}
	}
	for _, e := range append(visit(schema.Properties[jsonProp], v, request), undefinedFields(schema.Properties[jsonProp], v)...) {
		errs = append(errs, fmt.Errorf("%s: %w", jsonProp, e))
	}

	refs := map[string]bool{}
	contentIDs(v, refs)
	have := map[string]bool{}
	for i, p := range parts {
		if i == rootIdx {
			continue
		}
		n := i + 1
		if p.id == "" {
			errs = append(errs, fmt.Errorf("multipart/related: part %d has no Content-ID", n))
		} else if !refs[p.id] {
			errs = append(errs, fmt.Errorf("multipart/related: part %d (Content-ID %q) is not referred to by any contentId in the JSON part", n, p.id))
		}
		have[p.id] = true
		if m, _, _ := mime.ParseMediaType(p.ct); !binaryTypes[m] && !binaryTypes["*/*"] {
			errs = append(errs, fmt.Errorf("multipart/related: part %d has Content-Type %q (allowed: %s)", n, p.ct, strings.Join(slices.Sorted(maps.Keys(binaryTypes)), ", ")))
		}
		if len(p.data) == 0 {
			errs = append(errs, fmt.Errorf("multipart/related: part %d (Content-ID %q) is empty", n, p.id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(refs)) {
		if !have[id] {
			errs = append(errs, fmt.Errorf("multipart/related: the JSON part refers to contentId %q, but no part has that Content-ID", id))
		}
	}
	return v, errs
}

// trimID strips the angle brackets RFC 2392 puts round a Content-ID; 3GPP
// examples send it bare.
func trimID(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<"), ">")
}

// contentIDs collects every RefToBinaryData ({"contentId": "..."}) in v.
func contentIDs(v any, into map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if id, ok := t["contentId"].(string); ok && len(t) == 1 {
			into[trimID(id)] = true
		}
		for _, x := range t {
			contentIDs(x, into)
		}
	case []any:
		for _, x := range t {
			contentIDs(x, into)
		}
	}
}

// decodeForm turns an x-www-form-urlencoded body (the NRF token request,
// TS 29.510 §6.3.5.2.2) into the object its schema describes. A property
// whose encoding is application/json holds JSON (requesterPlmn); for an
// array of those, each value is one item, or one value holds the whole
// JSON array: the spec does not say which, so both are accepted. Other
// properties are strings, or numbers and booleans as their schema says.
func decodeForm(mt *openapi3.MediaType, body []byte) (any, error) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("form: %w", err)
	}
	var props openapi3.Schemas
	if mt.Schema != nil && mt.Schema.Value != nil {
		props = mt.Schema.Value.Properties
	}
	obj := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		vals := values[name]
		isJSON := false
		if enc := mt.Encoding[name]; enc != nil && enc.ContentType == "application/json" {
			isJSON = true
		}
		var schema *openapi3.Schema
		if p := props[name]; p != nil {
			schema = p.Value
		}
		if schema != nil && schema.Type.Is("array") {
			if isJSON && len(vals) == 1 && strings.HasPrefix(strings.TrimSpace(vals[0]), "[") {
				var a any
				if err := json.Unmarshal([]byte(vals[0]), &a); err != nil {
					return nil, fmt.Errorf("form: %s: %w", name, err)
				}
				obj[name] = a
				continue
			}
			var items *openapi3.Schema
			if schema.Items != nil {
				items = schema.Items.Value
			}
			a := make([]any, 0, len(vals))
			for _, s := range vals {
				x, err := formScalar(s, items, isJSON)
				if err != nil {
					return nil, fmt.Errorf("form: %s: %w", name, err)
				}
				a = append(a, x)
			}
			obj[name] = a
			continue
		}
		if len(vals) > 1 {
			return nil, fmt.Errorf("form: %s: %d values for a single-valued field", name, len(vals))
		}
		x, err := formScalar(vals[0], schema, isJSON)
		if err != nil {
			return nil, fmt.Errorf("form: %s: %w", name, err)
		}
		obj[name] = x
	}
	return obj, nil
}

func formScalar(s string, schema *openapi3.Schema, isJSON bool) (any, error) {
	if isJSON {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		return v, nil
	}
	if schema != nil {
		switch {
		case schema.Type.Is("integer"), schema.Type.Is("number"):
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number", s)
			}
			return f, nil
		case schema.Type.Is("boolean"):
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a boolean", s)
			}
			return b, nil
		}
	}
	return s, nil
}

// undefinedFields reports the object members of v that its schema does not
// define. OpenAPI lets any object carry extra members unless
// additionalProperties says otherwise, and 3GPP rarely says so (receivers
// ignore what they do not know, TS 29.501 §5.2.3.1), so kin-openapi accepts
// them. A sender that emits them, though, has either misspelt a name
// ("smContextStatusURI") or filled a field that Release 17 does not have
// (free5gc's models follow a later release in places), and either is worth
// a failing test.
//
// A value may be described by several schemas at once (allOf, and the
// alternatives of oneOf and anyOf, whichever matched), so a member is
// defined if any of them defines it; an object is open if any of them is
// (additionalProperties true or a schema, or no properties at all, as for
// free-form data such as ChangeItem.newValue).
func undefinedFields(schema *openapi3.SchemaRef, v any) []error {
	if schema == nil || schema.Value == nil {
		return nil
	}
	var errs []error
	walkUndefined([]*openapi3.Schema{schema.Value}, v, "", &errs)
	return errs
}

func walkUndefined(candidates []*openapi3.Schema, v any, at string, errs *[]error) {
	all := expand(candidates)
	switch t := v.(type) {
	case map[string]any:
		props := map[string][]*openapi3.Schema{}
		var additional []*openapi3.Schema
		open := false
		for _, s := range all {
			ap := s.AdditionalProperties
			switch {
			case ap.Schema != nil && ap.Schema.Value != nil:
				additional = append(additional, ap.Schema.Value)
				open = true
			case ap.Has != nil && *ap.Has:
				open = true
			}
			for name, p := range s.Properties {
				if p != nil && p.Value != nil {
					props[name] = append(props[name], p.Value)
				}
			}
		}
		if len(props) == 0 && len(additional) == 0 {
			return // free-form
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch {
			case props[k] != nil:
				walkUndefined(props[k], t[k], at+"/"+k, errs)
			case additional != nil:
				walkUndefined(additional, t[k], at+"/"+k, errs)
			case !open:
				*errs = append(*errs, fmt.Errorf("Error at %q: property %q is not defined by the schema", at+"/"+k, k))
			}
		}
	case []any:
		var items []*openapi3.Schema
		for _, s := range all {
			if s.Items != nil && s.Items.Value != nil {
				items = append(items, s.Items.Value)
			}
		}
		if len(items) == 0 {
			return
		}
		for i, x := range t {
			walkUndefined(items, x, fmt.Sprintf("%s/%d", at, i), errs)
		}
	}
}

// expand adds the subschemas of allOf, oneOf and anyOf, recursively. An
// empty schema among them ({} or a stub) accepts anything, which makes
// expand return nil: nothing can be called undefined beneath it.
func expand(candidates []*openapi3.Schema) []*openapi3.Schema {
	var out []*openapi3.Schema
	seen := map[*openapi3.Schema]bool{}
	var add func(s *openapi3.Schema) bool
	add = func(s *openapi3.Schema) bool {
		if s == nil || seen[s] {
			return true
		}
		seen[s] = true
		if s.Type == nil && len(s.Properties) == 0 && s.Items == nil && len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) == 0 &&
			s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil && len(s.Enum) == 0 {
			return false
		}
		out = append(out, s)
		for _, refs := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
			for _, r := range refs {
				if r != nil && !add(r.Value) {
					return false
				}
			}
		}
		return true
	}
	for _, s := range candidates {
		if !add(s) {
			return nil
		}
	}
	return out
}
