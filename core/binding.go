package core

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/shm"
	"github.com/tern5g/tern/sbi/shmsbi"
)

// binding is how the unit's NFs reach each other: serve exposes an NF's
// producers and returns what its consumers call, root is the apiRoot an NF
// puts in the callback URIs it hands out.
type binding interface {
	root(nf string) (string, error)
	serve(nf string, producers ...any) (any, error)
	close() error
}

// Option changes how New builds the unit.
type Option func(*options)

type options struct {
	wrapSBI    func(http.RoundTripper) http.RoundTripper
	observeSBI httpsbi.Observer
	unit       *Unit
}

// Unit is how New builds one unit of a replicated core
// (resiliency.mode local, docs/resiliency.md).
type Unit struct {
	// Records is where the NFs' records go, step by step.
	Records RecordStore
	// Standby builds a unit that takes over when the active one dies
	// (Takeover) instead of starting.
	Standby bool
	// OnRecordFailure, if set, hears of each record Records refused.
	OnRecordFailure func(error)
	// Unrecorded builds a unit that records nothing (Records is then
	// nil): its NFs run as with resiliency.mode off, behind the N2 front
	// end all the same. A measurement, not a mode: it is the reference
	// that prices replication on its own (tern bench failover's
	// replication cost), since a unit's front end hop is there with or
	// without records. A standby cannot take over from it.
	Unrecorded bool
}

// WithUnit builds the core as a unit of a replicated core: no embedded
// UPF, no N2 listener (a front end holds the gNBs' associations), and
// its state recorded into u.Records.
func WithUnit(u Unit) Option {
	return func(o *options) { o.unit = &u }
}

// WithSBIObserver has the HTTP/2 binding's servers report every operation
// they serve (metrics).
func WithSBIObserver(o httpsbi.Observer) Option {
	return func(opt *options) { opt.observeSBI = o }
}

// WithSBITransport wraps the HTTP/2 binding's client transport (sbi.binding
// http), for instance to validate every exchange against the 3GPP OpenAPI
// files in a test.
func WithSBITransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.wrapSBI = wrap }
}

func newBinding(cfg config.SBI, log *slog.Logger, o options) (binding, error) {
	switch cfg.Binding {
	case config.BindingHTTP:
		b, err := newHTTPBinding(cfg, log, nil)
		if err == nil {
			b.observe = o.observeSBI
		}
		if err == nil && o.wrapSBI != nil {
			b.base = b.client.Transport
			b.client.Transport = o.wrapSBI(b.client.Transport)
		}
		return b, err
	case config.BindingShm:
		return newShmBinding(cfg, log)
	}
	return inproc{}, nil
}

// inproc is the in-process binding: a consumer holds the producer.
type inproc struct{}

func (inproc) root(string) (string, error) { return "", nil }

func (inproc) serve(_ string, producers ...any) (any, error) { return producers[0], nil }

func (inproc) close() error { return nil }

// httpBinding serves each NF on its own HTTP/2 server and hands consumers
// an ops.Client of it.
type httpBinding struct {
	cfg    config.SBI
	log    *slog.Logger
	client *http.Client
	base   http.RoundTripper // the client's own transport, when wrapped
	tls    *tls.Config
	listen map[string]string // nf → host:port; nil: a free loopback port
	// verifier, when set, is the access token check of an NF's server.
	verifier httpsbi.Verifier
	observe  httpsbi.Observer // nil: none

	mu      sync.Mutex
	lns     map[string]net.Listener
	servers []*http.Server
}

// newHTTPBinding listens where listen says (nil: free loopback ports).
func newHTTPBinding(cfg config.SBI, log *slog.Logger, listen map[string]string) (*httpBinding, error) {
	b := &httpBinding{cfg: cfg, log: log, listen: listen, lns: map[string]net.Listener{}}
	var err error
	if b.tls, err = serverTLS(cfg); err != nil {
		return nil, err
	}
	cli, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	b.client = httpsbi.NewClient(cli)
	return b, nil
}

// root listens for nf (once) and returns its apiRoot.
func (b *httpBinding) root(nf string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ln, ok := b.lns[nf]
	if !ok {
		addr := "127.0.0.1:0"
		if a := b.listen[nf]; a != "" {
			addr = a
		}
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return "", fmt.Errorf("core: sbi of %s: %w", nf, err)
		}
		b.lns[nf] = ln
	}
	return b.cfg.Scheme + "://" + ln.Addr().String(), nil
}

func (b *httpBinding) serve(nf string, producers ...any) (any, error) {
	root, err := b.root(nf)
	if err != nil {
		return nil, err
	}
	h := httpsbi.NewHandler(b.log.With("nf", nf, "if", "sbi"), producers...)
	if b.verifier != nil {
		h.RequireTokens(b.verifier)
	}
	if b.observe != nil {
		h.Observe(b.observe)
	}
	srv := httpsbi.NewServer(h, b.tls)
	srv.ErrorLog = slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)
	b.mu.Lock()
	ln := b.lns[nf]
	b.servers = append(b.servers, srv)
	b.mu.Unlock()
	go func() {
		var err error
		if b.tls != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("SBI server stopped", "nf", nf, "err", err)
		}
	}()
	return b.clientOf(root), nil
}

func (b *httpBinding) clientOf(root string) *ops.Client {
	return ops.NewClient(httpsbi.NewCaller(b.client, root), "")
}

func (b *httpBinding) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	// The unit's own client holds HTTP/2 connections to every server:
	// closing them first lets Shutdown find them idle.
	b.client.CloseIdleConnections()
	if ci, ok := b.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
	var errs []error
	for _, s := range b.servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, s.Close())
		}
	}
	for _, ln := range b.lns {
		ln.Close()
	}
	return errors.Join(errs...)
}

// serverTLS is the servers' TLS configuration (nil for h2c).
func serverTLS(cfg config.SBI) (*tls.Config, error) {
	if cfg.Scheme != "https" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
	if err != nil {
		return nil, fmt.Errorf("core: sbi.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// clientTLS trusts sbi.tls.ca (nil: the system roots).
func clientTLS(cfg config.SBI) (*tls.Config, error) {
	if cfg.Scheme != "https" || cfg.TLS.CA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(cfg.TLS.CA)
	if err != nil {
		return nil, fmt.Errorf("core: sbi.tls.ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("core: sbi.tls.ca %s: no certificate", cfg.TLS.CA)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// shmBinding serves each NF on a shared-memory pool of its own, in a
// directory of this process (mode 0700), and hands consumers an
// ops.Client of it. Callback URIs stay paths: every callback goes to the
// NF it was wired to.
type shmBinding struct {
	cfg     shm.Config
	log     *slog.Logger
	owned   bool // the directory is ours to remove
	mu      sync.Mutex
	servers []*shmsbi.Server
	callers []*shmsbi.Caller
}

func newShmBinding(cfg config.SBI, log *slog.Logger) (*shmBinding, error) {
	b := &shmBinding{log: log, cfg: cfg.ShmConfig()}
	if b.cfg.Dir == "" {
		// One directory per unit: two units on a host (or in one test
		// process) never share pools.
		base := os.Getenv("XDG_RUNTIME_DIR")
		if base == "" {
			base = "/dev/shm"
		}
		b.cfg.Dir = filepath.Join(base, fmt.Sprintf("tern-%d-%s", os.Getpid(), rand.Text()[:8]))
		b.owned = true
	}
	return b, nil
}

func (b *shmBinding) root(string) (string, error) { return "", nil }

func (b *shmBinding) serve(nf string, producers ...any) (any, error) {
	s, err := shmsbi.Listen(b.cfg, nf, b.log.With("nf", nf, "if", "sbi"), producers...)
	if err != nil {
		return nil, fmt.Errorf("core: sbi of %s: %w", nf, err)
	}
	k, err := shmsbi.Dial(b.cfg, nf)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("core: sbi of %s: %w", nf, err)
	}
	b.mu.Lock()
	b.servers = append(b.servers, s)
	b.callers = append(b.callers, k)
	b.mu.Unlock()
	return ops.NewClient(k, ""), nil
}

func (b *shmBinding) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, k := range b.callers {
		errs = append(errs, k.Close())
	}
	for _, s := range b.servers {
		errs = append(errs, s.Close())
	}
	if b.owned {
		errs = append(errs, os.RemoveAll(b.cfg.Dir))
	}
	return errors.Join(errs...)
}
