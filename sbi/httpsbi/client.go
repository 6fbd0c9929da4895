package httpsbi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// Caller is the binding's consumer side (ops.Caller): it sends each
// operation to APIRoot (or, for a callback, to the URI in the message).
type Caller struct {
	client  *http.Client
	apiRoot string // "http://10.0.0.1:8000", no trailing slash
	tokens  Tokens // nil: no Authorization header
}

// Tokens is where a Caller gets the OAuth2 bearer token of a call to a
// service (nrfclient.TokenSource).
type Tokens interface {
	Token(ctx context.Context, service string) (string, error)
	Forget(service string)
}

// WithTokens returns a Caller that sends each call to a producer with an
// access token from t (TS 33.501 §13.4.1): the NRF's own services and
// callbacks go without.
func (c *Caller) WithTokens(t Tokens) *Caller {
	k := *c
	k.tokens = t
	return &k
}

// needsToken: the NRF's services are how an NF gets its token, and
// callbacks are answered by the consumer itself.
func needsToken(op *ops.Op) bool {
	s := op.Service()
	return s != "" && s != "oauth2" && sbi.NFTypeOfService(s) != sbi.NFTypeNRF
}

var _ ops.Caller = (*Caller)(nil)

// NewCaller returns a Caller of the producer at apiRoot ("http://host:port"
// for h2c, "https://host:port" for TLS) through client; see NewClient.
func NewCaller(client *http.Client, apiRoot string) *Caller {
	return &Caller{client: client, apiRoot: strings.TrimSuffix(apiRoot, "/")}
}

// NewClient returns an HTTP client that speaks HTTP/2 only: h2c with
// prior knowledge for http:// (TS 29.500 §5.2.2 allows cleartext inside
// the operator's network), and HTTP/2 over TLS for https:// with tlsConf
// (nil: the system roots). Connections are reused across calls.
func NewClient(tlsConf *tls.Config) *http.Client {
	t := &http.Transport{
		TLSClientConfig:     tlsConf,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP2(true)
	t.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: t}
}

// Call implements ops.Caller. A call refused for its token (401) is sent
// once more with a fresh one.
func (c *Caller) Call(ctx context.Context, op *ops.Op, req, resp any) error {
	err := c.call(ctx, op, req, resp)
	if c.tokens != nil && needsToken(op) && sbi.StatusOf(err) == http.StatusUnauthorized {
		c.tokens.Forget(op.Service())
		err = c.call(ctx, op, req, resp)
	}
	return err
}

func (c *Caller) call(ctx context.Context, op *ops.Op, req, resp any) error {
	rv := reflect.ValueOf(req).Elem()
	p, err := planOf(rv.Type())
	if err != nil {
		return err
	}
	target := c.apiRoot + expandPath(op.Path, p, rv)
	if op.Path == "" {
		for _, f := range p.fields {
			if f.Kind == "uri" {
				target = rv.Field(f.Index).String()
			}
		}
		if !strings.Contains(target, "://") {
			target = c.apiRoot + target
		}
	}
	q, err := encodeQuery(p, req, rv)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	pl, err := encodeBody(p, rv, op.RequestMedia)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var body io.Reader
	if pl.body != nil {
		body = bytes.NewReader(pl.body)
	}
	hr, err := http.NewRequestWithContext(ctx, op.Method, target, body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if pl.contentType != "" {
		hr.Header.Set("Content-Type", pl.contentType)
	}
	hr.Header.Set("Accept", contentJSON+", "+contentMultipart+", "+contentProblem)
	if c.tokens != nil && needsToken(op) {
		tok, err := c.tokens.Token(ctx, op.Service())
		if err != nil {
			return sbi.NewProblem(http.StatusUnauthorized, "", "%s: no access token: %v", op, err)
		}
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := c.client.Do(hr)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer res.Body.Close()
	data, err := readBody(res.Body, res.ContentLength)
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	if len(data) > maxBody {
		return fmt.Errorf("%s: answer over %d bytes", op, maxBody)
	}
	ct := res.Header.Get("Content-Type")
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return answerError(op, res.StatusCode, ct, data)
	}
	wv := reflect.ValueOf(resp).Elem()
	wp, err := planOf(wv.Type())
	if err != nil {
		return err
	}
	for _, f := range wp.fields {
		if f.Kind == "created" {
			wv.Field(f.Index).SetBool(res.StatusCode == http.StatusCreated)
		}
		if f.Kind == "location" {
			if loc := res.Header.Get("Location"); loc != "" {
				id := path.Base(loc)
				if u, err := url.PathUnescape(id); err == nil {
					id = u
				}
				wv.Field(f.Index).SetString(id)
			}
		}
	}
	if err := decodeBody(wp, wv, ct, data); err != nil {
		return fmt.Errorf("%s: answer: %w", op, err)
	}
	return nil
}

// answerError turns an error answer into the error the in-process binding
// would have returned: *sbi.SMContextError for an SM context error body,
// *sbi.ProblemDetails otherwise.
func answerError(op *ops.Op, status int, ct string, data []byte) error {
	mt, _, _ := mime.ParseMediaType(ct)
	if op.OAuth2 && isJSON(mt) {
		var m models.Nrf_AccTok_AccessTokenErr
		if json.Unmarshal(data, &m) == nil && m.Error != "" {
			return sbi.OAuth2ErrorFromModel(status, &m)
		}
	}
	if op.SMError && (mt == contentMultipart || isJSON(mt)) {
		var msg smErrorBody
		v := reflect.ValueOf(&msg).Elem()
		p, _ := planOf(v.Type())
		if err := decodeBody(p, v, ct, data); err == nil && msg.Body != nil && msg.Body.Error != nil {
			e := msg.Body.Error
			return &sbi.SMContextError{
				Problem:      &sbi.ProblemDetails{Status: status, Cause: e.Cause, Detail: e.Detail},
				N1SmMsg:      msg.N1SmMsg,
				N2SmInfo:     msg.N2SmInfo,
				N2SmInfoType: msg.Body.N2SmInfoType,
			}
		}
	}
	var m models.ProblemDetails
	if isJSON(mt) && json.Unmarshal(data, &m) == nil && (m.Cause != "" || m.Status != 0) {
		pd := sbi.ProblemFromModel(&m)
		pd.Status = status // the status line wins over the body's copy
		return pd
	}
	return sbi.NewProblem(status, "", "%s: %s", op, strings.TrimSpace(string(data)))
}
