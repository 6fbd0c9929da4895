package mobility

import (
	"context"
	"fmt"
	"time"

	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

// Handover modes the experiment compares, each on a core of its own.
const (
	// ModeXn: Xn handover (the target sends Path Switch Request; the
	// source forwards over Xn-U until the UPF's End Marker).
	ModeXn = "xn"
	// ModeN2Forwarding: N2 handover with the 3GPP indirect data forwarding
	// through the UPF (TS 23.502 §4.9.1.3.3).
	ModeN2Forwarding = "n2-forwarding"
	// ModeN2Smart: N2 handover with L25GC's smart buffering: the UPF
	// holds the downlink from Handover Command to Handover Notify, no
	// forwarding tunnel.
	ModeN2Smart = "n2-smart"
)

// HandoverModes are every mode, in the order they run.
var HandoverModes = []string{ModeXn, ModeN2Forwarding, ModeN2Smart}

// HandoverConfig is the handover experiment (L25GC §5.3, Fig 14).
type HandoverConfig struct {
	Setup // Trials: handovers per mode, the UE going back and forth between two gNBs in different TAs
	// Modes lists the modes to run (default HandoverModes).
	Modes []string
}

func (c *HandoverConfig) defaults() {
	c.Setup.defaults()
	if len(c.Modes) == 0 {
		c.Modes = HandoverModes
	}
}

// HandoverResult is what the experiment measured, per mode.
type HandoverResult struct {
	PPS   int
	Modes []*HandoverMode
}

// HandoverMode is one mode's measurements.
type HandoverMode struct {
	Mode string
	// Window is each handover's window: for N2, Handover Required -> the
	// UE's Registration Complete at the target (benchmarks.md, without
	// L25GC's fixed 10 ms sleep); for Xn, Path Switch Request -> the
	// Registration Complete.
	Window []time.Duration
	// Baseline is the stream's median one-way delay with the UE connected
	// and nothing happening, measured on this mode's core before the
	// handovers; Threshold the delay above which a packet counts as
	// delayed.
	Baseline, Threshold time.Duration
	// DL counts the stream's packets from 20 ms before the first handover
	// to 50 ms after the last one; Loss says where the lost ones went.
	DL   Window
	Loss Loss
	// Trace is the first handover's per-packet delays with the stream
	// clock's instants of its start and end.
	Trace                []Delay
	TraceStart, TraceEnd int64
	Failures             int
}

// Handover runs the experiment, one mode after another.
func Handover(ctx context.Context, c HandoverConfig) (*HandoverResult, error) {
	c.defaults()
	if err := c.Setup.check(); err != nil {
		return nil, err
	}
	res := &HandoverResult{PPS: c.PPS}
	for _, mode := range c.Modes {
		m, err := handoverMode(ctx, c, mode)
		if err != nil {
			return nil, fmt.Errorf("handover %s: %w", mode, err)
		}
		res.Modes = append(res.Modes, m)
	}
	return res, nil
}

// Failures sums every mode's failures.
func (r *HandoverResult) Failures() int {
	n := 0
	for _, m := range r.Modes {
		n += m.Failures
	}
	return n
}

func handoverMode(ctx context.Context, c HandoverConfig, mode string) (*HandoverMode, error) {
	kind, data := ue.HandoverN2, "forwarding"
	proc := ue.ProcHandoverN2
	switch mode {
	case ModeXn:
		kind, proc = ue.HandoverXn, ue.ProcHandoverXn
	case ModeN2Forwarding:
	case ModeN2Smart:
		data = "smart"
	default:
		return nil, fmt.Errorf("unknown mode %q (want %s, %s or %s)", mode, ModeXn, ModeN2Forwarding, ModeN2Smart)
	}
	b, err := newBed(ctx, bedConfig{UEs: 1, GNBs: 2, HandoverData: data, N3ReadBuffer: c.GNBReadBuffer})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	gnb.Neighbours(b.gnbs...)
	if err := b.connect(ctx, c.PPS, c.Size); err != nil {
		return nil, err
	}
	bu := b.ues[0]
	s := bu.stream
	m := &HandoverMode{Mode: mode}
	m.Baseline, m.Threshold = measureBaseline(ctx, s)
	c.Log("handover %s: baseline one-way delay %v at %d pps; delayed means above %v", mode, m.Baseline, c.PPS, m.Threshold)

	// The window is every packet of this run of the stream: the counters
	// that attribute its losses start with it.
	counters := b.lossCounters(bu)
	from := s.Mark()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(sctx) }()
	time.Sleep(20 * time.Millisecond)
	for trial := range c.Trials {
		target := b.gnbs[0]
		if bu.port.GNB() == target {
			target = b.gnbs[1]
		}
		start := s.Mark()
		err := bu.u.Handover(ctx, kind, target.ID())
		end := s.Mark()
		if err != nil {
			m.Failures++
			c.Log("handover %s, trial %d: %v", mode, trial, err)
		}
		if trial == 0 {
			m.TraceStart, m.TraceEnd = start, end
		}
		// The old path's forwarding ends (End Marker, the SMF's forwarding
		// hold) before the next move, as between two real handovers.
		time.Sleep(50 * time.Millisecond)
	}
	to := s.Mark()
	stop()
	<-done
	time.Sleep(20 * time.Millisecond) // in-flight packets land
	m.DL = s.Analyze(from, to, m.Threshold)
	first := s.Analyze(m.TraceStart-int64(5*time.Millisecond), m.TraceEnd+int64(10*time.Millisecond), m.Threshold)
	m.Trace = first.Delays
	m.Window = b.rec.Samples(proc)
	m.DL, m.Loss = b.attributeLoss(ctx, bu, counters, m.DL, from, to, m.Threshold)
	m.DL.Delays = nil
	c.Log("handover %s: %d trials, window median %v; downlink %d sent, %d lost, %d late (delivered), %d reordered, %d delayed",
		mode, c.Trials, median(m.Window), m.DL.Sent, m.DL.Lost, m.DL.Late, m.DL.Reordered, m.DL.Delayed)
	if m.Loss.Lost > 0 {
		c.Log("handover %s: %s", mode, m.Loss)
	}
	return m, nil
}
