package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/httpserve"
	"github.com/tern5g/tern/upf"
)

// Server is a process's one HTTP server for operations:
//
//   - /metrics: the registry in the Prometheus exposition format;
//   - /healthz: 200 while the process serves HTTP at all (liveness);
//   - /readyz: 200 when the process can do its job, 503 with the reason
//     otherwise (readiness).
type Server struct{ http *httpserve.Server }

// ReadyFunc says why the process is not ready, or nil when it is.
type ReadyFunc func() error

// Serve listens on addr (host:port; port 0 picks one) and serves r and
// ready until Close.
func Serve(addr string, r *prometheus.Registry, ready ReadyFunc, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r, promhttp.HandlerOpts{
		Registry: r, // promhttp_metric_handler_errors_total
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// A collector that fails is reported and the rest still served:
		// a partial scrape is worth more than none.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	s := &Server{http: httpserve.Start(ln, mux, log, "metrics server")}
	log.Info("metrics listening", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.http.Addr().String() }

// Close stops the server, letting requests in flight finish for a moment.
func (s *Server) Close() error { return s.http.Close() }

// CoreReady is ready for a core unit: N2 listening, and at least one UPF
// associated (smf.UPFStates), for without one no PDU session can be set up.
func CoreReady(c *core.Core) ReadyFunc {
	return func() error {
		if c.N2Addr() == "" {
			return errors.New("N2 not listening")
		}
		return UPFsReady(c.SMF.UPFStates())
	}
}

// UPFsReady is nil when one of the SMF's UPFs (name → state) is up, else
// says where each stands, in name order: "no UPF associated (upf-a down,
// upf-b restoring)".
func UPFsReady(states map[string]string) error {
	var each []string
	for _, name := range slices.Sorted(maps.Keys(states)) {
		if states[name] == "up" {
			return nil
		}
		each = append(each, name+" "+states[name])
	}
	if len(each) == 0 {
		return errors.New("no UPF associated (none configured)")
	}
	return fmt.Errorf("no UPF associated (%s)", strings.Join(each, ", "))
}

// UPFReady is ready for a UPF of its own: its PFCP endpoint serves.
func UPFReady(u *upf.UPF) ReadyFunc {
	return func() error {
		if !u.PFCPAddr().IsValid() {
			return errors.New("PFCP endpoint not serving")
		}
		return nil
	}
}

// ServeCore registers core unit c's collectors with a new registry and
// serves them, with c's readiness, on addr.
func ServeCore(addr string, c *core.Core, log *slog.Logger) (*Server, error) {
	r := NewRegistry()
	if err := RegisterCore(r, c); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return Serve(addr, r, CoreReady(c), log)
}

// ServeUPF does the same for a UPF running as its own process.
func ServeUPF(addr string, u *upf.UPF, log *slog.Logger) (*Server, error) {
	r := NewRegistry()
	if err := RegisterUPF(r, u); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return Serve(addr, r, UPFReady(u), log)
}
