package upf

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tern5g/tern/report"
)

// Key names one measured series.
type Key struct {
	Variant  string
	Dir      string
	Size     int
	Sessions int
	Workers  int
}

// Sample is one timed run.
type Sample struct {
	Sent      uint64        // frames the generator made
	Delivered uint64        // stamped frames the sink counted
	Elapsed   time.Duration // the sending time
	Sink      sinkStats
	// FlowHits and FlowMisses: the xdp driver's flow cache lookups during
	// the run (only sessions with SDF filters consult it).
	FlowHits, FlowMisses uint64
}

// FlowHitRate is the flow cache's hit rate in the run; ok is false when
// nothing looked it up.
func (s Sample) FlowHitRate() (rate float64, ok bool) {
	n := s.FlowHits + s.FlowMisses
	if n == 0 {
		return 0, false
	}
	return float64(s.FlowHits) / float64(n), true
}

// PPS is delivered packets per second of sending time.
func (s Sample) PPS() float64 { return perSecond(s.Delivered, s.Elapsed) }

// OfferedPPS is what the generator made per second.
func (s Sample) OfferedPPS() float64 { return perSecond(s.Sent, s.Elapsed) }

// Loss is the fraction of the frames made that did not arrive.
func (s Sample) Loss() float64 {
	if s.Sent == 0 || s.Delivered >= s.Sent {
		return 0
	}
	return float64(s.Sent-s.Delivered) / float64(s.Sent)
}

func perSecond(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// InstallSample is one installation of a variant's sessions.
type InstallSample struct {
	Sessions   int
	Installed  time.Duration // first establishment sent -> last answered
	Forwarding time.Duration // first establishment sent -> the sink has seen every session
}

// EstablishRate is PFCP session establishments per second over the
// install loop.
func (s InstallSample) EstablishRate() float64 { return perSecond(uint64(s.Sessions), s.Installed) }

// ForwardRate is sessions per second until the fast path forwards all.
func (s InstallSample) ForwardRate() float64 { return perSecond(uint64(s.Sessions), s.Forwarding) }

// LatencyPoint is one step of the latency sweep.
type LatencyPoint struct {
	Key
	Target, Offered, Delivered float64 // pps
	Loss                       float64
	P50, P90, P99, P999, Max   float64 // µs
	Mean, Jitter               float64 // µs; jitter: mean |latency - previous latency| (RFC 3393 IPDV)
}

func latencyPoint(k Key, target float64, s Sample) LatencyPoint {
	h := s.Sink.Hist
	p := LatencyPoint{Key: k, Target: target, Offered: s.OfferedPPS(), Delivered: s.PPS(), Loss: s.Loss(),
		P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99), P999: h.Quantile(0.999), Max: h.Max()}
	if s.Delivered > 0 {
		p.Mean = float64(s.Sink.LatSum) / float64(s.Delivered) / 1e3
	}
	if s.Sink.IPDVN > 0 {
		p.Jitter = float64(s.Sink.IPDVSum) / float64(s.Sink.IPDVN) / 1e3
	}
	return p
}

// Report is what a run measured.
type Report struct {
	cfg        Config
	Throughput map[Key][]Sample
	Scaling    map[Key][]Sample
	Install    map[Key][]InstallSample
	Latency    []LatencyPoint
	Profile    map[Key]map[string]ProgCost // program name -> cost (Config.Profile)
	Skipped    map[string]string           // variant -> why it did not run
	// Generator is the generator that sent every variant's frames
	// (GenLive, GenAFXDP, GenPacket), and GeneratorWhy why the ones
	// GenAuto tries first did not.
	Generator, GeneratorWhy string
}

func newReport(cfg Config) *Report {
	return &Report{cfg: cfg, Throughput: map[Key][]Sample{}, Scaling: map[Key][]Sample{},
		Install: map[Key][]InstallSample{}, Profile: map[Key]map[string]ProgCost{}, Skipped: map[string]string{}}
}

func pps(ss []Sample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = s.PPS()
	}
	return out
}

// quantile is the nearest-rank quantile of xs (the mean of the middle two
// for the median of an even count; 0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// ratioRefs are the references a row is quoted against, as its JSON
// field and its table column: bare-xdp for every other variant, the others
// for tern's drivers. A ratio is given only where its reference ran.
var ratioRefs = []struct {
	variant, field, column string
	ternOnly               bool
}{
	{BareXDP, "ratio_bare_xdp", "/bare", false},
	{Kernel, "ratio_kernel", "/kernel", true},
	{BareXDPCPU, "ratio_bare_xdp_cpu", "/bare-cpu", true},
	{BareXDPLookup, "ratio_bare_xdp_lookup", "/lookup", true},
}

// variantsOf lists the variants with samples in m, in the run's order.
func (r *Report) order() []string { return append([]string{Generator}, r.cfg.Drivers...) }

// ppsResult is one "upf" or "upf-scaling" row.
func (r *Report) ppsResult(name string, k Key, ss []Sample) report.Result {
	ps := pps(ss)
	var offered, losses []float64
	var sent, got []uint64
	failures := 0
	for _, s := range ss {
		offered = append(offered, s.OfferedPPS())
		losses = append(losses, s.Loss())
		sent = append(sent, s.Sent)
		got = append(got, s.Delivered)
		if s.Delivered == 0 {
			failures++
		}
	}
	m := median(ps)
	ref := func(v string) float64 {
		rk := k
		rk.Variant, rk.Workers = v, r.cfg.Workers
		return median(pps(r.Throughput[rk]))
	}
	extra := map[string]any{"size": k.Size, "direction": k.Dir, "sessions": k.Sessions, "workers": k.Workers,
		"loss": median(losses), "offered_pps": median(offered), "sent": sent, "delivered": got,
		"mbps": m * float64(k.Size) * 8 / 1e6}
	if r.Generator != "" {
		extra["generator"] = r.Generator
	}
	for _, rr := range ratioRefs {
		if k.Variant == rr.variant || k.Variant == Generator || rr.ternOnly && !isTern(k.Variant) {
			continue
		}
		if base := ref(rr.variant); base > 0 {
			extra[rr.field] = m / base
		}
	}
	var hits []float64
	for _, s := range ss {
		if h, ok := s.FlowHitRate(); ok {
			hits = append(hits, h)
		}
	}
	if len(hits) > 0 {
		extra["flow_cache_hit_rate"] = median(hits)
	}
	return report.Result{Name: name, Variant: k.Variant, Unit: "pps", Count: len(ss), Failures: failures,
		Median: m, P90: quantile(ps, 0.9), P99: quantile(ps, 0.99), Max: quantile(ps, 1), Samples: ps, Extra: extra}
}

func sortedKeys[V any](m map[Key]V, order []string) []Key {
	ks := make([]Key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	rank := func(v string) int {
		if i := slices.Index(order, v); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		switch {
		case a.Sessions != b.Sessions:
			return a.Sessions < b.Sessions
		case a.Size != b.Size:
			return a.Size < b.Size
		case a.Dir != b.Dir:
			return a.Dir > b.Dir // uplink first
		case a.Workers != b.Workers:
			return a.Workers < b.Workers
		}
		return rank(a.Variant) < rank(b.Variant)
	})
	return ks
}

// Results are the report's rows (benchmarks.md format).
func (r *Report) Results() []report.Result {
	var out []report.Result
	for _, k := range sortedKeys(r.Throughput, r.order()) {
		out = append(out, r.ppsResult("upf", k, r.Throughput[k]))
	}
	for _, p := range r.Latency {
		out = append(out, report.Result{Name: "upf-latency", Variant: p.Variant, Unit: "us", Count: 1,
			Median: p.P50, P90: p.P90, P99: p.P99, Max: p.Max,
			Extra: map[string]any{"size": p.Size, "direction": p.Dir, "sessions": p.Sessions, "workers": p.Workers,
				"target_pps": p.Target, "offered_pps": p.Offered, "delivered_pps": p.Delivered, "loss": p.Loss,
				"p999_us": p.P999, "mean_us": p.Mean, "jitter_us": p.Jitter, "generator": r.Generator}})
	}
	for _, k := range sortedKeys(r.Install, r.order()) {
		ss := r.Install[k]
		var fwd, est, fwdRate []float64
		for _, s := range ss {
			fwd = append(fwd, float64(s.Forwarding)/float64(time.Millisecond))
			est = append(est, s.EstablishRate())
			fwdRate = append(fwdRate, s.ForwardRate())
		}
		out = append(out, report.Result{Name: "upf-install", Variant: k.Variant, Unit: "ms", Count: len(ss),
			Median: median(fwd), P90: quantile(fwd, 0.9), P99: quantile(fwd, 0.99), Max: quantile(fwd, 1), Samples: fwd,
			Extra: map[string]any{"sessions": k.Sessions, "workers": k.Workers, "sdf_every": r.cfg.SDFEvery,
				"establishments_per_s": median(est), "forwarding_sessions_per_s": median(fwdRate),
				"window": "first establishment sent -> the sink has seen uplink of every session"}})
	}
	for _, k := range sortedKeys(r.Scaling, r.order()) {
		out = append(out, r.ppsResult("upf-scaling", k, r.Scaling[k]))
	}
	for _, k := range sortedKeys(r.Profile, r.order()) {
		for _, name := range profiled {
			c, ok := r.Profile[k][name]
			if !ok {
				continue
			}
			ns := c.NsPerRun()
			out = append(out, report.Result{Name: "upf-profile", Variant: k.Variant, Unit: "ns", Count: 1,
				Median: ns, P90: ns, P99: ns, Max: ns,
				Extra: map[string]any{"program": name, "runs": c.Runs, "size": k.Size, "direction": k.Dir,
					"sessions": k.Sessions, "workers": k.Workers}})
		}
	}
	for _, v := range r.order() {
		if why, ok := r.Skipped[v]; ok {
			out = append(out, report.Result{Name: "upf", Variant: v, Unit: "pps", Extra: map[string]any{"skipped": why}})
		}
	}
	return out
}

// WriteTable prints the throughput table, the references' ratios, the
// install rates and what was skipped.
func (r *Report) WriteTable(w io.Writer) {
	ks := sortedKeys(r.Throughput, r.order())
	gen := ""
	if r.Generator != "" {
		gen = "; generator " + r.Generator
		if r.GeneratorWhy != "" {
			gen += " (" + r.GeneratorWhy + ")"
		}
	}
	fmt.Fprintf(w, "\nmedian of %d round(s), packets/s delivered (size = IPv4 total length of the user's packet%s)\n", r.cfg.Repeat, gen)
	fmt.Fprintf(w, "  %-8s %-8s %6s %-15s %12s %12s %7s", "sessions", "dir", "size", "variant", "offered", "delivered", "loss")
	for _, rr := range ratioRefs {
		fmt.Fprintf(w, " %*s", max(8, len(rr.column)), rr.column)
	}
	fmt.Fprintln(w)
	for _, k := range ks {
		res := r.ppsResult("upf", k, r.Throughput[k])
		fmt.Fprintf(w, "  %-8d %-8s %6d %-15s %12.0f %12.0f %6.1f%%", k.Sessions, k.Dir, k.Size, k.Variant,
			res.Extra["offered_pps"], res.Median, 100*res.Extra["loss"].(float64))
		for _, rr := range ratioRefs {
			cell := ""
			if v, ok := res.Extra[rr.field].(float64); ok {
				cell = fmt.Sprintf("%.2f", v)
			}
			fmt.Fprintf(w, " %*s", max(8, len(rr.column)), cell)
		}
		fmt.Fprintln(w)
	}
	if len(r.Install) > 0 {
		fmt.Fprintf(w, "\nsession installation (direct N4; QER + URR per session; every %d-th with SDF filters; 0 = none)\n", r.cfg.SDFEvery)
		for _, k := range sortedKeys(r.Install, r.order()) {
			var est, fwd []float64
			for _, s := range r.Install[k] {
				est = append(est, s.EstablishRate())
				fwd = append(fwd, s.ForwardRate())
			}
			workers := "" // the scaling runs' installations are rows of their own
			if k.Workers > 1 {
				workers = fmt.Sprintf(" (%d workers)", k.Workers)
			}
			fmt.Fprintf(w, "  %-9s %7d sessions: %9.0f establishments/s; all forwarding at %9.0f sessions/s%s\n", k.Variant, k.Sessions, median(est), median(fwd), workers)
		}
	}
	if len(r.Scaling) > 0 {
		fmt.Fprintf(w, "\nscaling: packets/s against UPF workers (xdp: CPUs of its own, the last ones, beside the generator's CPU 0)\n")
		for _, k := range sortedKeys(r.Scaling, r.order()) {
			fmt.Fprintf(w, "  %-9s %-8s %5d B  %d worker(s)  %10.0f pps\n", k.Variant, k.Dir, k.Size, k.Workers, median(pps(r.Scaling[k])))
		}
	}
	for _, v := range r.order() {
		if why, ok := r.Skipped[v]; ok {
			fmt.Fprintf(w, "  %s: skipped (%s)\n", v, why)
		}
	}
}

// WritePNG draws the latency sweep: p50 and p99 latency against offered
// rate, one line per variant, and loss on a second panel (for the first
// size and direction swept).
func (r *Report) WritePNG(path string) error {
	if len(r.Latency) == 0 {
		return fmt.Errorf("bench upf: no latency sweep to draw (run with -sweep)")
	}
	first := r.Latency[0].Key
	lat, loss := plot.New(), plot.New()
	lat.Title.Text = fmt.Sprintf("UPF latency, %s %d B, %d session(s)", first.Dir, first.Size, first.Sessions)
	lat.X.Label.Text, lat.Y.Label.Text = "offered rate (Mpps)", "one-way latency (µs): p50 solid, p99 dashed"
	lat.Y.Scale, lat.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	loss.Title.Text = "loss"
	loss.X.Label.Text, loss.Y.Label.Text = "offered rate (Mpps)", "loss (%)"
	for i, v := range r.order() {
		var p50, p99, ls plotter.XYs
		for _, p := range r.Latency {
			if p.Variant != v || p.Dir != first.Dir || p.Size != first.Size {
				continue
			}
			x := p.Offered / 1e6
			if p.Delivered > 0 {
				p50 = append(p50, plotter.XY{X: x, Y: max(p.P50, 0.5)})
				p99 = append(p99, plotter.XY{X: x, Y: max(p.P99, 0.5)})
			}
			ls = append(ls, plotter.XY{X: x, Y: 100 * p.Loss})
		}
		if len(ls) == 0 {
			continue
		}
		c := plotColors[i%len(plotColors)]
		for j, xy := range []plotter.XYs{p50, p99} {
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("bench upf: plot: %w", err)
			}
			l.Color = c
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			} else {
				lat.Legend.Add(v, l)
			}
			lat.Add(l)
		}
		l, err := plotter.NewLine(ls)
		if err != nil {
			return fmt.Errorf("bench upf: plot: %w", err)
		}
		l.Color = c
		loss.Add(l)
		loss.Legend.Add(v, l)
	}
	lat.Legend.Top, loss.Legend.Top, loss.Legend.Left = true, true, true
	return report.WritePNG(path, vg.Points(480), vg.Points(360), lat, loss)
}

var plotColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}
