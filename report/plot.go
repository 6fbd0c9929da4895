package report

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePNG draws plots side by side, each panelWidth wide and height
// high, aligned on their axes, into a PNG file at path: the figures the
// benchmarks draw.
func WritePNG(path string, panelWidth, height vg.Length, plots ...*plot.Plot) error {
	img := vgimg.New(panelWidth*vg.Length(len(plots)), height)
	dc := draw.New(img)
	pad := vg.Points(5)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(10), PadLeft: pad, PadRight: pad, PadTop: pad, PadBottom: pad}
	cs := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(cs[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
