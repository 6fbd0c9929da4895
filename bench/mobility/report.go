package mobility

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tern5g/tern/report"
)

// Published figures (the papers, docs/benchmarks.md): L25GC and free5GC on
// their hardware, and L25GC+'s concurrent paging totals.
var (
	l25gcPaging          = 27 * time.Millisecond
	free5gcPaging        = 56 * time.Millisecond
	l25gcHandover        = 132 * time.Millisecond
	free5gcHandover      = 222 * time.Millisecond
	l25gcPlusConcurrency = map[int]time.Duration{4: 8900 * time.Microsecond, 8: 15400 * time.Microsecond,
		16: 28100 * time.Microsecond, 32: 45500 * time.Microsecond, 64: 62100 * time.Microsecond}
)

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latency is a Result of samples in unit ("us" or "ms").
func latency(name, variant, unit string, ds []time.Duration, failures int) report.Result {
	s := report.Summarize(name, ds, failures)
	r := report.LatencyResult(s, variant, ds)
	if unit == "ms" {
		r.Unit, r.Median, r.P90, r.P99, r.Max = "ms", ms(s.Median), ms(s.P90), ms(s.P99), ms(s.Max)
		for i, d := range ds {
			r.Samples[i] = ms(d)
		}
	}
	return r
}

// dlResult is the count row of a stream window (unit count; fields sent,
// received, lost, late (received after the window ended: delivered, not
// lost), reordered, delayed, and loss: where the lost packets went).
func dlResult(name, variant string, w Window, loss Loss, threshold time.Duration, failures int) report.Result {
	return report.Result{Name: name, Variant: variant, Unit: "count", Count: w.Sent, Failures: failures,
		Extra: map[string]any{"sent": w.Sent, "received": w.Received, "lost": w.Lost, "late": w.Late, "reordered": w.Reordered,
			"delayed": w.Delayed, "delayed_threshold_us": us(threshold), "loss": loss}}
}

// Results are the JSON rows of the paging experiment (names scripts
// read: paging, paging-full, paging-concurrent, paging-dl).
func (r *PagingResult) Results() []report.Result {
	out := []report.Result{
		latency("paging", "unit", "us", r.Unit, r.Failures),
		latency("paging-full", "unit", "us", r.Full, r.Failures),
		dlResult("paging-dl", "unit", r.DL, r.Loss, r.Threshold, r.Failures),
	}
	out[0].Extra = map[string]any{"baseline_delay_us": us(r.Baseline), "l25gc_ms": ms(l25gcPaging), "free5gc_ms": ms(free5gcPaging)}
	for _, n := range sortedKeys(r.Concurrent) {
		row := latency("paging-concurrent", strconv.Itoa(n), "ms", r.Concurrent[n], 0)
		if pub, ok := l25gcPlusConcurrency[n]; ok {
			row.Extra = map[string]any{"l25gc_plus_ms": ms(pub)}
		}
		out = append(out, row)
	}
	return out
}

// WriteTable prints the experiment the way the other benches do.
func (r *PagingResult) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "paging, one UE, %d trials with a %d pps downlink stream running\n", len(r.Unit), r.PPS)
	unit := report.Summarize("paging", r.Unit, r.Failures)
	report.WriteTable(w, "", []report.Summary{unit, report.Summarize("paging-full", r.Full, 0)})
	fmt.Fprintf(w, "  reference: the stream's one-way delay with the UE connected, median %.1f us\n", us(r.Baseline))
	fmt.Fprintf(w, "  downlink while idle and paged: %d sent, %d lost, %d late (delivered after the window), %d reordered, %d delayed (above %.0f us)\n",
		r.DL.Sent, r.DL.Lost, r.DL.Late, r.DL.Reordered, r.DL.Delayed, us(r.Threshold))
	if r.Loss.Lost > 0 {
		fmt.Fprintf(w, "  where they went: %s\n", r.Loss)
	}
	if m := unit.Median; m > 0 {
		fmt.Fprintf(w, "  paging window median %.0f us: L25GC 27 ms is %.0fx, free5GC 56 ms %.0fx [published figures, their hardware]\n",
			us(m), float64(l25gcPaging)/float64(m), float64(free5gcPaging)/float64(m))
	}
	if len(r.Concurrent) > 0 {
		fmt.Fprintf(w, "  %-10s %14s %14s %10s\n", "paged UEs", "all done ms", "L25GC+ ms", "ratio")
		for _, n := range sortedKeys(r.Concurrent) {
			m := median(r.Concurrent[n])
			pub, ok := l25gcPlusConcurrency[n]
			if !ok {
				fmt.Fprintf(w, "  %-10d %14.2f %14s %10s\n", n, ms(m), "-", "-")
				continue
			}
			fmt.Fprintf(w, "  %-10d %14.2f %14.1f %9.0fx\n", n, ms(m), ms(pub), float64(pub)/float64(m))
		}
	}
}

func sortedKeys(m map[int][]time.Duration) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// series is one line of a delay plot.
type series struct {
	name   string
	delays []Delay
	start  int64 // stream clock of the procedure's start
	marks  []int64
	color  color.Color
}

// writeDelayPNG draws per-packet one-way delay against send time, one
// panel per series (L25GC Figs 13-14), with the procedure's start at 0.
func writeDelayPNG(path, title string, ss []series) error {
	var plots []*plot.Plot
	for _, s := range ss {
		p := plot.New()
		p.Title.Text = title + ": " + s.name
		p.X.Label.Text = "send time (ms, 0 = procedure start)"
		p.Y.Label.Text = "one-way delay (ms)"
		pts := make(plotter.XYs, len(s.delays))
		for i, d := range s.delays {
			pts[i] = plotter.XY{X: float64(d.SentNs-s.start) / 1e6, Y: ms(d.Delay)}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		sc.GlyphStyle.Radius = vg.Points(1.2)
		sc.GlyphStyle.Color = s.color
		p.Add(sc)
		for _, m := range s.marks {
			x := float64(m-s.start) / 1e6
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: p.Y.Max}})
			if err == nil {
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
				l.Color = color.Gray{Y: 120}
				p.Add(l)
			}
		}
		plots = append(plots, p)
	}
	return report.WritePNG(path, vg.Points(520), vg.Points(380), plots...)
}

// WritePNG draws the first trial's per-packet delays (L25GC Fig 13).
func (r *PagingResult) WritePNG(path string) error {
	return writeDelayPNG(path, "paging with a downlink stream", []series{{
		name: "one UE idle, paged, back", delays: r.Trace, start: r.TraceStart,
		marks: []int64{r.TraceConnectd}, color: color.RGBA{20, 90, 200, 255},
	}})
}

// Results are the JSON rows of the handover experiment: per mode (the
// variant), handover (us) and handover-dl (count).
func (r *HandoverResult) Results() []report.Result {
	var out []report.Result
	for _, m := range r.Modes {
		row := latency("handover", m.Mode, "us", m.Window, m.Failures)
		row.Extra = map[string]any{"baseline_delay_us": us(m.Baseline), "l25gc_ms": ms(l25gcHandover), "free5gc_ms": ms(free5gcHandover)}
		out = append(out, row, dlResult("handover-dl", m.Mode, m.DL, m.Loss, m.Threshold, m.Failures))
	}
	return out
}

// WriteTable prints the experiment the way the other benches do.
func (r *HandoverResult) WriteTable(w io.Writer) {
	if len(r.Modes) == 0 {
		return
	}
	fmt.Fprintf(w, "handover, one UE between two gNBs in different tracking areas, %d trials per mode with a %d pps downlink stream running\n",
		len(r.Modes[0].Window)+r.Modes[0].Failures, r.PPS)
	var ss []report.Summary
	for _, m := range r.Modes {
		ss = append(ss, report.Summarize("handover "+m.Mode, m.Window, m.Failures))
	}
	report.WriteTable(w, "", ss)
	fmt.Fprintf(w, "  %-15s %12s %8s %6s %6s %10s %8s %14s\n", "downlink", "baseline us", "sent", "lost", "late", "reordered", "delayed", "delayed above")
	for _, m := range r.Modes {
		fmt.Fprintf(w, "  %-15s %12.1f %8d %6d %6d %10d %8d %11.0f us\n", m.Mode, us(m.Baseline), m.DL.Sent, m.DL.Lost, m.DL.Late, m.DL.Reordered, m.DL.Delayed, us(m.Threshold))
	}
	fmt.Fprintf(w, "  (late: arrived after the window ended, delivered, not lost)\n")
	for _, m := range r.Modes {
		if m.Loss.Lost > 0 {
			fmt.Fprintf(w, "  %s: %s\n", m.Mode, m.Loss)
		}
	}
	for i, m := range r.Modes {
		if med := ss[i].Median; med > 0 && m.Mode != ModeXn {
			fmt.Fprintf(w, "  N2 handover (%s) median %.0f us: L25GC 132 ms is %.0fx, free5GC 222 ms %.0fx [published figures, their hardware, their window with a 10 ms sleep; ours without]\n",
				m.Mode, us(med), float64(l25gcHandover)/float64(med), float64(free5gcHandover)/float64(med))
		}
	}
}

// WritePNG draws each mode's first handover: per-packet delays against
// send time, the handover's start at 0 and its end marked (L25GC Fig 14).
func (r *HandoverResult) WritePNG(path string) error {
	colors := []color.Color{color.RGBA{20, 90, 200, 255}, color.RGBA{200, 80, 20, 255}, color.RGBA{30, 150, 60, 255}}
	var ss []series
	for i, m := range r.Modes {
		ss = append(ss, series{name: m.Mode, delays: m.Trace, start: m.TraceStart, marks: []int64{m.TraceEnd}, color: colors[i%len(colors)]})
	}
	return writeDelayPNG(path, "handover with a downlink stream", ss)
}
