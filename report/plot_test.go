package report

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// TestWritePNG: two panels side by side make one PNG twice a panel wide.
func TestWritePNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.png")
	if err := WritePNG(path, vg.Points(300), vg.Points(200), plot.New(), plot.New()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width < 2*cfg.Height {
		t.Errorf("image %dx%d, want two 300x200 panels side by side", cfg.Width, cfg.Height)
	}
	if err := WritePNG(filepath.Join(t.TempDir(), "no", "such", "dir.png"), vg.Points(10), vg.Points(10), plot.New()); err == nil {
		t.Error("no error for an unwritable path")
	}
}
