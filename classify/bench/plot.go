package bench

import (
	"fmt"
	"image/color"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tern5g/tern/report"
)

// WritePNG draws lookup latency (a) and throughput (b) against the number
// of rules for each classifier, like L25GC's Fig. 11: ClassBench acl1
// (first-N prefixes and the full sets) solid, 5G per-session tables dashed.
func WritePNG(path string, rows []Row) error {
	lat := plot.New()
	lat.Title.Text = "(a) PDR lookup latency"
	lat.X.Label.Text = "rules"
	lat.Y.Label.Text = "ns / packet"
	lat.X.Scale, lat.Y.Scale = plot.LogScale{}, plot.LogScale{}
	lat.X.Tick.Marker, lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	thr := plot.New()
	thr.Title.Text = "(b) lookup throughput, one core"
	thr.X.Label.Text = "rules"
	thr.Y.Label.Text = "Mpps"
	thr.X.Scale, thr.Y.Scale = plot.LogScale{}, plot.LogScale{}
	thr.X.Tick.Marker, thr.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}

	type key struct{ kind, family string }
	series := map[key]plotter.XYs{}
	for i := range rows {
		r := &rows[i]
		fam := ""
		switch {
		case strings.HasPrefix(r.Workload, "acl1_"):
			fam = "acl1"
		case strings.HasPrefix(r.Workload, "session_"):
			fam = "5G session"
		default:
			continue
		}
		m := r.Median()
		if m <= 0 {
			continue
		}
		k := key{string(r.Kind), fam}
		series[k] = append(series[k], plotter.XY{X: float64(r.Rules), Y: m})
	}
	keys := make([]key, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].family != keys[j].family {
			return keys[i].family < keys[j].family
		}
		return keys[i].kind < keys[j].kind
	})
	colors := map[string]color.Color{
		"linear": color.RGBA{200, 30, 30, 255}, "tss": color.RGBA{30, 120, 200, 255},
		"partitionsort": color.RGBA{230, 140, 0, 255}, "rankedtuple": color.RGBA{20, 150, 60, 255},
		"fortable": color.RGBA{130, 50, 170, 255},
	}
	for _, k := range keys {
		pts := series[k]
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		tp := make(plotter.XYs, len(pts))
		for i, p := range pts {
			tp[i] = plotter.XY{X: p.X, Y: 1e3 / p.Y}
		}
		for _, pl := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{lat, pts}, {thr, tp}} {
			line, points, err := plotter.NewLinePoints(pl.xys)
			if err != nil {
				return fmt.Errorf("bench: plot: %w", err)
			}
			c := colors[k.kind]
			if c == nil {
				c = color.Black
			}
			line.Color, points.Color = c, c
			if k.family != "acl1" {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				points.Shape = draw.CrossGlyph{}
			}
			pl.p.Add(line, points)
			pl.p.Legend.Add(k.kind+" ("+k.family+")", line, points)
		}
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	thr.Legend.Top = true
	return report.WritePNG(path, vg.Points(550), vg.Points(450), lat, thr)
}
