// Package httpsbi is the HTTP/2 binding of tern's service-based interface
// (TS 29.500, TS 29.501): the operations of package sbi/ops served and
// consumed over HTTP/2, cleartext (h2c, prior knowledge) or TLS, with Go's
// net/http.
//
// Nothing here knows an operation by name: the server routes a request to
// the operation whose method and path (or callback prefix) it matches and
// decodes it into the operation's request message by the message's field
// tags; the client does the reverse. Bodies are the 3GPP JSON of the
// free5gc models; N1 and N2 contents travel as the binary parts of a
// multipart/related body whose JSON root names them by Content-ID
// (TS 29.500 §6.1.2.2, TS 29.502 §6.1.2.4); errors are
// application/problem+json (TS 29.500 §5.2.7.2).
package httpsbi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// Content types (TS 29.500 §5.4, TS 29.502 §6.1.2.4).
const (
	contentJSON      = "application/json"
	contentProblem   = "application/problem+json"
	contentMultipart = "multipart/related"
	contentNAS       = "application/vnd.3gpp.5gnas"
	contentNGAP      = "application/vnd.3gpp.ngap"
	contentForm      = "application/x-www-form-urlencoded"
)

// maxBody bounds a body the binding reads (requests and answers alike).
const maxBody = 4 << 20

// plan is a message type's tagged fields, parsed once.
type plan struct {
	fields []ops.Field
	body   int // index in fields of the body field, -1 for none
}

var plans sync.Map // reflect.Type → *plan

func planOf(t reflect.Type) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*plan), nil
	}
	fs, err := ops.Fields(t)
	if err != nil {
		return nil, err
	}
	p := &plan{fields: fs, body: -1}
	for i, f := range fs {
		if f.Kind == "body" {
			p.body = i
		}
	}
	plans.Store(t, p)
	return p, nil
}

// partContentType is the content type of a binary part, by its ID: N1
// contents are 5GS NAS, N2 contents NGAP.
func partContentType(id string) string {
	if strings.HasPrefix(id, "n1") {
		return contentNAS
	}
	return contentNGAP
}

// payload is an encoded body.
type payload struct {
	contentType string
	body        []byte
}

// encodeBody writes the body field and the binary parts of msg (a
// pointer to a message): JSON alone, or multipart/related when a part is
// present. It returns an empty payload for a message with nothing to send.
func encodeBody(p *plan, v reflect.Value, media string) (payload, error) {
	if media == "" {
		media = contentJSON
	}
	var root []byte
	if p.body >= 0 {
		f := v.Field(p.fields[p.body].Index)
		if !f.IsZero() {
			b, err := json.Marshal(f.Interface())
			if err != nil {
				return payload{}, fmt.Errorf("encode %s: %w", v.Type(), err)
			}
			root = b
		}
	}
	var parts []ops.Field
	for _, f := range p.fields {
		if f.Kind == "part" && v.Field(f.Index).Len() > 0 {
			parts = append(parts, f)
		}
	}
	if len(parts) == 0 {
		if root == nil {
			return payload{}, nil
		}
		if media == contentForm {
			form, err := jsonToForm(root)
			if err != nil {
				return payload{}, fmt.Errorf("encode %s: %w", v.Type(), err)
			}
			return payload{contentType: contentForm, body: []byte(form)}, nil
		}
		return payload{contentType: media, body: root}, nil
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if root != nil {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {contentJSON}})
		if err != nil {
			return payload{}, err
		}
		pw.Write(root)
	}
	for _, f := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {partContentType(f.Name)}, "Content-Id": {f.Name}})
		if err != nil {
			return payload{}, err
		}
		pw.Write(v.Field(f.Index).Bytes())
	}
	if err := w.Close(); err != nil {
		return payload{}, err
	}
	ct := mime.FormatMediaType(contentMultipart, map[string]string{"boundary": w.Boundary(), "type": contentJSON})
	return payload{contentType: ct, body: buf.Bytes()}, nil
}

// errBadBody and errBadType classify decoding failures: a server answers
// them with 400 and 415.
type decodeError struct {
	status int
	err    error
}

func (e *decodeError) Error() string { return e.err.Error() }

func badBody(format string, a ...any) error {
	return &decodeError{http.StatusBadRequest, fmt.Errorf(format, a...)}
}

// decodeBody fills the body field and the parts of msg from a body of
// content type ct.
func decodeBody(p *plan, v reflect.Value, ct string, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return &decodeError{http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: %v", ct, err)}
	}
	switch {
	case isJSON(mt):
		return decodeJSON(p, v, body)
	case mt == contentForm:
		js, err := formToJSON(body)
		if err != nil {
			return badBody("form body: %v", err)
		}
		return decodeJSON(p, v, js)
	case mt == contentMultipart:
		r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			part, err := r.NextPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return badBody("multipart body: %v", err)
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return badBody("multipart part: %v", err)
			}
			pct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
			if isJSON(pct) {
				if err := decodeJSON(p, v, data); err != nil {
					return err
				}
				continue
			}
			id := strings.Trim(part.Header.Get("Content-Id"), "<>")
			for _, f := range p.fields {
				if f.Kind == "part" && f.Name == id {
					v.Field(f.Index).SetBytes(data)
				}
			}
		}
	default:
		return &decodeError{http.StatusUnsupportedMediaType, fmt.Errorf("content type %q", mt)}
	}
}

func decodeJSON(p *plan, v reflect.Value, body []byte) error {
	if p.body < 0 {
		return badBody("%s takes no body", v.Type())
	}
	f := v.Field(p.fields[p.body].Index)
	if err := json.Unmarshal(body, f.Addr().Interface()); err != nil {
		return badBody("malformed JSON: %v", err)
	}
	return nil
}

// encodeQuery writes msg's query parameters.
func encodeQuery(p *plan, msg any, v reflect.Value) (url.Values, error) {
	q := url.Values{}
	if qc, ok := msg.(ops.QueryCodec); ok {
		if err := qc.EncodeQuery(q); err != nil {
			return nil, err
		}
	}
	for _, f := range p.fields {
		if f.Kind != "query" {
			continue
		}
		fv := v.Field(f.Index)
		if fv.IsZero() {
			continue
		}
		if !f.JSON {
			q.Set(f.Name, fv.String())
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", f.Name, err)
		}
		q.Set(f.Name, string(b))
	}
	return q, nil
}

// decodeQuery fills msg's query parameters.
func decodeQuery(p *plan, msg any, v reflect.Value, q url.Values) error {
	if qc, ok := msg.(ops.QueryCodec); ok {
		if err := qc.DecodeQuery(q); err != nil {
			return err
		}
	}
	for _, f := range p.fields {
		if f.Kind != "query" || !q.Has(f.Name) {
			continue
		}
		fv := v.Field(f.Index)
		if !f.JSON {
			fv.SetString(q.Get(f.Name))
			continue
		}
		if err := json.Unmarshal([]byte(q.Get(f.Name)), fv.Addr().Interface()); err != nil {
			return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "query parameter %s: %v", f.Name, err)
		}
	}
	return nil
}

// expandPath fills the {name} parameters of op's path from msg.
func expandPath(path string, p *plan, v reflect.Value) string {
	for _, f := range p.fields {
		if f.Kind == "path" {
			path = strings.Replace(path, "{"+f.Name+"}", url.PathEscape(v.Field(f.Index).String()), 1)
		}
	}
	return path
}

// requestMediaOK reports whether a request body of content type ct is one
// op takes (TS 29.500 §5.4, §6.1.2: each operation's OpenAPI names its
// media types): its RequestMedia, or application/json, and
// multipart/related where the request has binary parts. It also returns
// those media types. An operation without a body field takes any: its
// decoding refuses the body itself.
func requestMediaOK(op *ops.Op, p *plan, ct string) (want []string, ok bool) {
	media := op.RequestMedia
	if media == "" {
		media = contentJSON
	}
	want = []string{media}
	for _, f := range p.fields {
		if f.Kind == "part" {
			want = append(want, contentMultipart)
			break
		}
	}
	if p.body < 0 && len(want) == 1 {
		return want, true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return want, err == nil && slices.Contains(want, mt)
}

// isJSON: application/json and its 3GPP and IETF variants
// (application/problem+json, merge-patch+json, 3gppHal+json).
func isJSON(mt string) bool { return mt == contentJSON || strings.HasSuffix(mt, "+json") }

// jsonToForm writes a JSON object as a form (TS 29.510 §6.3.5.2.2, the
// access token request): each member a field, strings as they are, other
// values as JSON.
func jsonToForm(js []byte) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		return "", err
	}
	f := url.Values{}
	for k, raw := range m {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			f.Set(k, s)
			continue
		}
		f.Set(k, string(raw))
	}
	return f.Encode(), nil
}

// formToJSON is the reverse: a field holding a JSON object or array is
// that value, any other a string.
func formToJSON(body []byte) ([]byte, error) {
	f, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(f))
	for k := range f {
		v := f.Get(k)
		if (strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[")) && json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
			continue
		}
		b, _ := json.Marshal(v)
		m[k] = b
	}
	return json.Marshal(m)
}

// readBody reads a body of up to maxBody bytes (one more tells the caller
// it was longer), in one allocation when its length is announced.
func readBody(r io.Reader, length int64) ([]byte, error) {
	if length < 0 || length > maxBody {
		return io.ReadAll(io.LimitReader(r, maxBody+1))
	}
	b := make([]byte, length)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
