package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/sbi/ops"
)

// SBI records every service operation an NF's HTTP/2 server answers, as
// one histogram by operation and HTTP status (its _count is the number of
// requests). Its Observe is the binding's httpsbi.Observer.
type SBI struct {
	hist *prometheus.HistogramVec
}

// sbiBuckets span a call answered from memory (tens of microseconds) to
// one that waits on a slow peer.
var sbiBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// NewSBI returns an empty histogram.
func NewSBI() *SBI {
	return &SBI{hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "sbi_server_duration_seconds",
		Help:      "Service operations answered by this NF over HTTP/2, by 3GPP operation and HTTP status.",
		Buckets:   sbiBuckets,
	}, []string{"operation", "status"})}
}

// Observe records one answered request.
func (s *SBI) Observe(op *ops.Op, status int, d time.Duration) {
	s.hist.WithLabelValues(string(op.Name), strconv.Itoa(status)).Observe(d.Seconds())
}

// Describe implements prometheus.Collector.
func (s *SBI) Describe(ch chan<- *prometheus.Desc) { s.hist.Describe(ch) }

// Collect implements prometheus.Collector.
func (s *SBI) Collect(ch chan<- prometheus.Metric) { s.hist.Collect(ch) }

// NFReady is ready for an NF running as its own process: registered with
// the NRF (or the NRF itself), and for an AMF, N2 listening.
func NFReady(n *core.NF) ReadyFunc {
	return func() error {
		if !n.Registered() {
			return errors.New("not registered with the NRF")
		}
		if n.Name == "amf" && n.N2Addr() == "" {
			return errors.New("N2 not listening")
		}
		return nil
	}
}

// ServeNF serves an NF process's SBI histogram s, with n's readiness, on
// addr.
func ServeNF(addr string, n *core.NF, s *SBI, log *slog.Logger) (*Server, error) {
	r := NewRegistry()
	if err := r.Register(s); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return Serve(addr, r, NFReady(n), log)
}
