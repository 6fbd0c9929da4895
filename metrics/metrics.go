// Package metrics exposes a tern process to Prometheus: collectors that
// read the NFs' Stats snapshots at scrape time (so the data paths pay
// nothing between scrapes), latency histograms of UE procedures fed by the
// AMF's and the SMF's Observer hooks, and one HTTP server with /metrics,
// /healthz and /readyz.
//
// Every process builds its own prometheus.Registry (NewRegistry): nothing
// here registers with the client library's global default.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// namespace prefixes every tern metric name.
const namespace = "tern"

// NewRegistry returns a registry with the Go runtime and process
// collectors (goroutines, heap, GC, CPU, resident memory, open files), the
// part of a scrape that is the same for every tern process.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// stat is one metric family without labels read from a snapshot S.
type stat[S any] struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*S) float64
}

func counter[S any](subsystem, name, help string, val func(*S) float64) stat[S] {
	return stat[S]{prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, nil, nil), prometheus.CounterValue, val}
}

func gauge[S any](subsystem, name, help string, val func(*S) float64) stat[S] {
	return stat[S]{prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, nil, nil), prometheus.GaugeValue, val}
}

func describe[S any](ch chan<- *prometheus.Desc, stats []stat[S]) {
	for _, s := range stats {
		ch <- s.desc
	}
}

func collect[S any](ch chan<- prometheus.Metric, stats []stat[S], snap *S) {
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.val(snap))
	}
}

func desc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

// u converts a counter for MustNewConstMetric.
func u[T ~uint64 | ~int64 | ~int](v T) float64 { return float64(v) }
