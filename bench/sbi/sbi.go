// Package sbi runs `tern bench sbi`: what one service-based interface call
// costs on each binding, as L25GC measured it (Figs 6 and 9: shared memory
// 69-88 µs against HTTP/JSON 893-1,130 µs per message), beside the
// references that bound each binding on this machine, in the same run:
//
//   - one call of Nausf_UEAuthentication_Authenticate (AuthenticationInfo),
//     Nsmf_PDUSession CreateSMContext (PostSmContexts, with its N1 part) and
//     UpdateSMContext (with its N2 part), and Npcf_SMPolicyControl_Create
//     (SmPolicyContextData), per binding: inproc (a Go call), http (HTTP/2
//     cleartext on loopback), https (HTTP/2 over TLS), shm (shared memory,
//     when the caller provides it). The producer answers fixed values, so
//     the figure is the binding's: encoding, transport, decoding, dispatch.
//   - references: a raw loopback TCP request/response round trip (what
//     http cannot beat) and, from the caller, an eventfd ping-pong between
//     two processes (what shm cannot beat);
//   - serialization alone: JSON against the shared-memory layout, encode
//     plus decode of the CreateSMContext body;
//   - the registration and PDU session windows of a whole core unit over
//     each binding, with 1 and 64 UEs at once.
package sbi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/report"
	tsbi "github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim"
)

// Operation rows (JSON names that scripts read).
const (
	OpAuthenticationInfo  = "AuthenticationInfo"
	OpPostSmContexts      = "PostSmContexts"
	OpUpdateSmContext     = "UpdateSmContext"
	OpSmPolicyContextData = "SmPolicyContextData"
)

// Operations in the order they are reported.
var Operations = []string{OpAuthenticationInfo, OpPostSmContexts, OpUpdateSmContext, OpSmPolicyContextData}

// Binding is one way for a consumer to reach a producer: Dial serves
// producer and returns the consumer's client of it and what to close.
type Binding struct {
	Name string
	Dial func(producer any) (*ops.Client, func(), error)
	// Core is the sbi.binding a core unit is started with for the window
	// rows ("" to skip them).
	Core string
}

// Config is one run.
type Config struct {
	Calls    int       // calls per operation and binding
	UEs      []int     // UEs at once for the window rows (default 1, 64)
	Bindings []Binding // default: Inproc, HTTP, HTTPS
	// References are extra rows measured in the same run (the caller's
	// eventfd ping-pong), each a function returning its round-trip samples.
	References map[string]func(n int) ([]time.Duration, error)
	Log        *slog.Logger
	Dir        string // scratch directory (store files)
}

// Inproc is the in-process binding: the consumer holds the producer.
func Inproc() Binding {
	return Binding{Name: "inproc", Core: config.BindingInproc, Dial: func(p any) (*ops.Client, func(), error) {
		return ops.NewClient(direct{p}, ""), func() {}, nil
	}}
}

// direct is an ops.Caller that serves the operation in place: the
// in-process binding's cost (a Go call) with the same client code as the
// others.
type direct struct{ p any }

func (d direct) Call(ctx context.Context, op *ops.Op, req, resp any) error {
	return op.Serve(ctx, d.p, req, resp)
}

// HTTP is HTTP/2 cleartext (h2c, prior knowledge) on loopback.
func HTTP() Binding {
	return Binding{Name: "http", Core: config.BindingHTTP, Dial: func(p any) (*ops.Client, func(), error) {
		return dialHTTP(p, nil)
	}}
}

// HTTPS is HTTP/2 over TLS 1.3 on loopback, with a throwaway certificate.
func HTTPS() Binding {
	return Binding{Name: "https", Dial: func(p any) (*ops.Client, func(), error) {
		cert, pool, err := selfSigned()
		if err != nil {
			return nil, nil, err
		}
		return dialHTTP(p, &tlsPair{server: &tls.Config{Certificates: []tls.Certificate{cert}}, client: &tls.Config{RootCAs: pool}})
	}}
}

type tlsPair struct{ server, client *tls.Config }

func dialHTTP(p any, t *tlsPair) (*ops.Client, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	var srvTLS, cliTLS *tls.Config
	scheme := "http"
	if t != nil {
		srvTLS, cliTLS, scheme = t.server, t.client, "https"
	}
	srv := httpsbi.NewServer(httpsbi.NewHandler(nil, p), srvTLS)
	go func() {
		if srvTLS != nil {
			srv.ServeTLS(ln, "", "")
		} else {
			srv.Serve(ln)
		}
	}()
	hc := httpsbi.NewClient(cliTLS)
	c := ops.NewClient(httpsbi.NewCaller(hc, scheme+"://"+ln.Addr().String()), "")
	return c, func() { hc.CloseIdleConnections(); srv.Close() }, nil
}

// selfSigned makes a P-256 certificate for 127.0.0.1 and a pool trusting it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tern bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: c}, pool, nil
}

// Run measures everything and returns the report.
func Run(ctx context.Context, cfg Config) (*report.Doc, error) {
	if cfg.Calls <= 0 {
		cfg.Calls = 2000
	}
	if len(cfg.UEs) == 0 {
		cfg.UEs = []int{1, 64}
	}
	if len(cfg.Bindings) == 0 {
		cfg.Bindings = []Binding{Inproc(), HTTP(), HTTPS()}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	names := make([]string, len(cfg.Bindings))
	for i, b := range cfg.Bindings {
		names[i] = b.Name
	}
	doc := report.NewDoc("sbi", map[string]any{"calls": cfg.Calls, "ues": cfg.UEs, "bindings": names,
		"producer": "fixed answers (the binding's cost alone)"})

	// One call per operation and binding, interleaved by rounds so that
	// drift in machine load hits every binding alike.
	type dialed struct {
		b     Binding
		c     *ops.Client
		close func()
		rec   *report.Recorder
	}
	var ds []*dialed
	defer func() {
		for _, d := range ds {
			d.close()
		}
	}()
	for _, b := range cfg.Bindings {
		c, closeFn, err := b.Dial(producer{})
		if err != nil {
			return nil, fmt.Errorf("bench sbi: %s: %w", b.Name, err)
		}
		ds = append(ds, &dialed{b: b, c: c, close: closeFn, rec: report.NewRecorder()})
	}
	const round = 100
	for done := 0; done < cfg.Calls; done += round {
		for _, d := range ds {
			for range min(round, cfg.Calls-done) {
				for _, op := range Operations {
					start := time.Now()
					if err := callOnce(ctx, d.c, op); err != nil {
						d.rec.Fail(op)
						continue
					}
					d.rec.Observe(op, time.Since(start))
				}
			}
		}
	}
	for _, op := range Operations {
		for _, d := range ds {
			s := d.rec.Summary(op)
			doc.Add(report.LatencyResult(s, d.b.Name, nil))
		}
	}

	// References.
	tcp, err := TCPRoundTrip(cfg.Calls)
	if err != nil {
		return nil, err
	}
	doc.Add(report.LatencyResult(report.Summarize("rtt", tcp, 0), "tcp-rtt", nil))
	h2c, err := H2CRoundTrip(cfg.Calls)
	if err != nil {
		return nil, err
	}
	doc.Add(report.LatencyResult(report.Summarize("rtt", h2c, 0), "h2c-rtt", nil))
	for name, f := range cfg.References {
		samples, err := f(cfg.Calls)
		if err != nil {
			return nil, fmt.Errorf("bench sbi: reference %s: %w", name, err)
		}
		doc.Add(report.LatencyResult(report.Summarize("rtt", samples, 0), name, nil))
	}

	// Serialization alone.
	for _, r := range serialize(cfg.Calls) {
		doc.Add(r)
	}

	// Registration and PDU session windows of a whole unit per binding.
	for _, b := range cfg.Bindings {
		if b.Core == "" {
			continue
		}
		for _, n := range cfg.UEs {
			rs, err := windows(ctx, cfg, b.Core, n)
			if err != nil {
				return nil, fmt.Errorf("bench sbi: %s windows, %d UEs: %w", b.Name, n, err)
			}
			for _, r := range rs {
				r.Variant = b.Name
				doc.Add(r)
			}
		}
	}
	return doc, nil
}

// callOnce makes one call of op with the message an AMF or SMF sends.
func callOnce(ctx context.Context, c *ops.Client, op string) error {
	var err error
	switch op {
	case OpAuthenticationInfo:
		_, _, err = c.Authenticate(ctx, wiretest.AuthenticationInfo())
	case OpPostSmContexts:
		_, err = c.CreateSMContext(ctx, &tsbi.SMContextCreate{Data: wiretest.SmContextCreateData(), N1SmMsg: n1Establishment})
	case OpUpdateSmContext:
		_, err = c.UpdateSMContext(ctx, "1", &tsbi.SMContextUpdate{Data: wiretest.SmContextUpdateData(), N2SmInfo: n2SetupResponse})
	case OpSmPolicyContextData:
		_, _, err = c.CreateSMPolicy(ctx, wiretest.SmPolicyContextData())
	}
	return err
}

// Binary parts of the size tern's messages have: a PDU Session
// Establishment Request and a PDU Session Resource Setup Response Transfer.
var (
	n1Establishment = []byte{0x2e, 0x01, 0x01, 0xc1, 0xff, 0xff, 0x91, 0xa1, 0x28, 0x01, 0x00, 0x7b, 0x00, 0x07, 0x80, 0x00, 0x0a, 0x00, 0x00, 0x0d, 0x00}
	n2SetupResponse = []byte{0x00, 0x03, 0xe0, 0x0a, 0x64, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01}
)

// producer answers every benchmarked operation with fixed values of
// realistic size.
type producer struct{}

func (producer) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	return "1", &models.Ausf_UEAU_UEAuthenticationCtx{AuthType: models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{Rand: strings.Repeat("a1", 16), Autn: strings.Repeat("b2", 16), HxresStar: strings.Repeat("c3", 16)},
		Links:         map[string][]models.Link{"5g-aka": {{Href: "/nausf-auth/v1/ue-authentications/1/5g-aka-confirmation"}}}}, nil
}

func (producer) Confirm5gAka(context.Context, string, *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	return nil, tsbi.ErrContextNotFound
}

func (producer) CreateSMContext(ctx context.Context, req *tsbi.SMContextCreate) (*tsbi.SMContextCreated, error) {
	return &tsbi.SMContextCreated{Ref: "1", Data: &models.Smf_PDUSess_SmContextCreatedData{PduSessionId: 1,
		SNssai: req.Data.SNssai, UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATING}}, nil
}

func (producer) UpdateSMContext(ctx context.Context, ref string, req *tsbi.SMContextUpdate) (*tsbi.SMContextUpdated, error) {
	return &tsbi.SMContextUpdated{Data: &models.Smf_PDUSess_SmContextUpdatedData{UpCnxState: models.Smf_PDUSess_UpCnxState_ACTIVATED}}, nil
}

func (producer) ReleaseSMContext(context.Context, string, *tsbi.SMContextRelease) error { return nil }

func (producer) CreateSMPolicy(ctx context.Context, req *models.Pcf_SMPolCtrl_SmPolicyContextData) (string, *models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	return "1", &models.Pcf_SMPolCtrl_SmPolicyDecision{SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"1": {SessRuleId: "1",
		AuthSessAmbr: &models.Ambr{Uplink: "1 Gbps", Downlink: "1 Gbps"},
		AuthDefQos: &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: 9, Arp: &models.Arp{PriorityLevel: 8,
			PreemptCap: models.PreemptionCapability_NOT_PREEMPT, PreemptVuln: models.PreemptionVulnerability_PREEMPTABLE}}}}}, nil
}

func (producer) UpdateSMPolicy(context.Context, string, *models.Pcf_SMPolCtrl_SmPolicyUpdateContextData) (*models.Pcf_SMPolCtrl_SmPolicyDecision, error) {
	return nil, tsbi.ErrContextNotFound
}

func (producer) DeleteSMPolicy(context.Context, string, *models.Pcf_SMPolCtrl_SmPolicyDeleteData) error {
	return nil
}

// TCPRoundTrip measures n request/response round trips of 512 bytes over
// one loopback TCP connection: the floor under any HTTP/2 call.
func TCPRoundTrip(n int) ([]time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	const size = 512
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	buf := make([]byte, size)
	return report.Time(n, func() error {
		if _, err := c.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(c, buf)
		return err
	})
}

// H2CRoundTrip measures n POSTs of 700 bytes answered with 300 through
// net/http's HTTP/2 (h2c) on loopback, with no binding code at all: the
// floor of any binding built on Go's HTTP/2, between tcp-rtt and http.
func H2CRoundTrip(n int) ([]time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	answer := make([]byte, 300)
	srv := httpsbi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}), nil)
	go srv.Serve(ln)
	defer srv.Close()
	hc := httpsbi.NewClient(nil)
	defer hc.CloseIdleConnections()
	url := "http://" + ln.Addr().String() + "/x"
	body := make([]byte, 700)
	return report.Time(n, func() error {
		res, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		return res.Body.Close()
	})
}

// serialize times encode+decode of the CreateSMContext body in JSON and in
// the shared-memory layout (sbi/wire).
func serialize(n int) []report.Result {
	v := wiretest.SmContextCreateData()
	var js, sh []time.Duration
	buf := make([]byte, 0, 4096)
	for range n {
		start := time.Now()
		b, _ := json.Marshal(v)
		var out models.Smf_PDUSess_SmContextCreateData
		json.Unmarshal(b, &out)
		js = append(js, time.Since(start))

		start = time.Now()
		buf, _ = wire.Append(buf[:0], v)
		var out2 models.Smf_PDUSess_SmContextCreateData
		wire.Decode(buf, &out2)
		sh = append(sh, time.Since(start))
	}
	jr := report.LatencyResult(report.Summarize("serialize", js, 0), "json", nil)
	sr := report.LatencyResult(report.Summarize("serialize", sh, 0), "shm", nil)
	b, _ := json.Marshal(v)
	w, _ := wire.Append(nil, v)
	jr.Extra = map[string]any{"message": "SmContextCreateData", "bytes": len(b)}
	sr.Extra = map[string]any{"message": "SmContextCreateData", "bytes": len(w)}
	return []report.Result{jr, sr}
}

// windows starts a core unit over binding and measures UEs registering
// and opening a PDU session, n at once: 64 UEs in all, so that n = 1 has
// as many samples as n = 64.
func windows(ctx context.Context, cfg Config, binding string, n int) ([]report.Result, error) {
	c := config.Default()
	c.Log.Level = "error"
	c.Store.Path = filepath.Join(cfg.Dir, fmt.Sprintf("sbi-%s-%d.db", binding, n))
	const total = 64
	c.Store.DemoSubscribers = total
	c.AMF.SCTP.Transport = sctp.TransportUDP
	port, err := freeport.UDP()
	if err != nil {
		return nil, err
	}
	c.AMF.SCTP.UDPPort = port
	c.UPF.N3Addr = "127.0.0.1:0"
	c.UPF.NoN6 = true
	c.SBI.Binding = binding
	u, err := core.New(c, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer u.Close()
	if err := u.Start(ctx); err != nil {
		return nil, err
	}
	sc := sim.DefaultConfig()
	sc.AMFAddr, sc.Transport = u.N2Addr(), sctp.Config{Transport: sctp.TransportUDP, UDPPort: port}
	sc.GNBs, sc.UEs, sc.Concurrency = 1, total, n
	sc.Timeout = 20 * time.Second
	sc.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepDeregister}
	// A first run opens the connections between the NFs (TCP, HTTP/2
	// preface, TLS): a running core has them open.
	if _, err := sim.Run(ctx, sc); err != nil {
		return nil, err
	}
	res, err := sim.Run(ctx, sc)
	if err != nil {
		return nil, err
	}
	var out []report.Result
	for _, s := range res.Summaries {
		if s.Procedure != "registration" && s.Procedure != "pdu-session" {
			continue
		}
		r := report.LatencyResult(s, binding, nil)
		r.Extra = map[string]any{"ues": n}
		out = append(out, r)
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("sim reported %d of the two windows", len(out))
	}
	return out, nil
}

// Ratio is a/b rounded for printing; 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return float64(int(a/b*100+0.5)) / 100
}
