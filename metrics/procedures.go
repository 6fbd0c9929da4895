package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/smf"
)

// Procedures records how UE procedures end and how long they take, as one
// histogram by procedure and outcome (its _count is the number of
// procedures). It is the procedures.Observer of a core unit's AMF and SMF.
type Procedures struct {
	hist *prometheus.HistogramVec
	// known holds the histogram of every (procedure, outcome) the NFs
	// report, made up front: Procedure then costs a map read and an
	// Observe, with none of the vector's locking and hashing, on the UE's
	// executor.
	known map[[2]string]prometheus.Observer
}

var (
	_ procedures.Observer = (*Procedures)(nil)
)

// procedureBuckets span an in-process procedure (a registration takes a
// few hundred microseconds on a loaded core) to paging and handover, which
// wait on the radio side for seconds.
var procedureBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// NewProcedures returns the histogram, with a zero series for each known
// procedure and outcome so that rates exist before the first event.
func NewProcedures() *Procedures {
	p := &Procedures{
		hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "procedure_duration_seconds",
			Help:      "Duration of UE procedures from their first message to their outcome, by procedure and outcome (success, rejected, failure, timeout, aborted); _count counts the procedures.",
			Buckets:   procedureBuckets,
		}, []string{"procedure", "outcome"}),
		known: make(map[[2]string]prometheus.Observer),
	}
	amfProcs := []string{amf.ProcRegistration, amf.ProcServiceRequest, amf.ProcPaging, amf.ProcHandover,
		amf.ProcPathSwitch, amf.ProcDeregistration, amf.ProcNetworkDeregistration}
	for _, n := range amfProcs {
		for _, o := range procedures.Outcomes {
			p.known[[2]string{n, o}] = p.hist.WithLabelValues(n, o)
		}
	}
	for _, o := range []string{procedures.Success, procedures.Rejected, procedures.Aborted} {
		p.known[[2]string{smf.ProcPDUSessionEstablishment, o}] = p.hist.WithLabelValues(smf.ProcPDUSessionEstablishment, o)
	}
	return p
}

// Procedure records one procedure's outcome and duration.
func (p *Procedures) Procedure(name, outcome string, d time.Duration) {
	h, ok := p.known[[2]string{name, outcome}]
	if !ok {
		h = p.hist.WithLabelValues(name, outcome) // a name added to an NF later
	}
	h.Observe(d.Seconds())
}

// Describe implements prometheus.Collector.
func (p *Procedures) Describe(ch chan<- *prometheus.Desc) { p.hist.Describe(ch) }

// Collect implements prometheus.Collector.
func (p *Procedures) Collect(ch chan<- prometheus.Metric) { p.hist.Collect(ch) }
