package upf

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/report"
)

// TestSmoke runs a very short benchmark: generator, bare-xdp,
// bare-xdp-lookup, kernel and portable (and bare-xdp-cpu with 2 CPUs),
// 3 sessions, 64 B both ways, with the per-program profile.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds namespaces; skipped with -short")
	}
	if err := Check(); err != nil {
		t.Skip(err)
	}
	if err := lab.Check(); err != nil {
		t.Skip(err)
	}
	out := io.Discard
	if testing.Verbose() {
		out = os.Stdout
	}
	cfg := Config{
		Duration: 200 * time.Millisecond, Sizes: []int{64}, Sessions: []int{3}, Directions: []string{Uplink, Downlink},
		Drivers: []string{BareXDP, BareXDPLookup, Kernel, "portable"}, Repeat: 1, Sweep: 5, SweepDuration: 50 * time.Millisecond,
		Drain: 50 * time.Millisecond, Profile: true, Out: out,
	}
	if runtime.NumCPU() > 1 {
		cfg.Drivers, cfg.XDPCPUs = append(cfg.Drivers, BareXDPCPU), "1"
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteTable(out)
	b, err := json.Marshal(rep.Results())
	if err != nil {
		t.Fatal(err)
	}
	var rows []report.Result
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Result{}
	for _, r := range rows {
		if _, ok := got[r.Name+"/"+r.Variant]; !ok {
			got[r.Name+"/"+r.Variant] = r
		}
	}
	gen, ok := got["upf/"+Generator]
	if !ok || gen.Extra["offered_pps"].(float64) <= 0 {
		t.Fatalf("generator offered nothing: %+v", gen)
	}
	if bare := got["upf/"+BareXDP]; bare.Median <= 0 {
		t.Fatalf("bare-xdp delivered nothing: %+v", bare)
	}
	// The first sweep step is a fifth of bare-xdp's own throughput.
	low := got["upf-latency/"+BareXDP]
	if low.Extra == nil || low.Extra["delivered_pps"].(float64) <= 0 || low.Extra["loss"].(float64) >= 0.01 {
		t.Fatalf("bare-xdp at a low paced rate: %+v", low)
	}
	for _, v := range []string{Kernel, "portable"} {
		if _, ok := got["upf/"+v]; !ok {
			t.Errorf("no row for %s", v)
		}
	}
	if pr := got["upf-profile/"+BareXDP]; pr.Median <= 0 || pr.Extra["program"] != "xdp_fwd" {
		t.Errorf("no cost of xdp_fwd: %+v", pr)
	}
	// bare-xdp-lookup forwards only the frames whose session it finds
	// (others go to the kernel, and no sink counts them): a rate both ways
	// shows it found them by TEID and by UE address.
	for _, r := range rows {
		if r.Name == "upf" && r.Variant == BareXDPLookup && (r.Median <= 0 || r.Extra["ratio_bare_xdp"] == nil) {
			t.Errorf("bare-xdp-lookup %s: %+v", r.Extra["direction"], r)
		}
	}
	if pr := got["upf-profile/"+BareXDPLookup]; pr.Median <= 0 || pr.Extra["program"] != "xdp_fwd_lookup" {
		t.Errorf("no cost of xdp_fwd_lookup: %+v", pr)
	}
	if runtime.NumCPU() > 1 {
		if r := got["upf/"+BareXDPCPU]; r.Median <= 0 {
			t.Errorf("bare-xdp-cpu delivered nothing: %+v", r)
		}
	}
	if _, ok := got["upf-install/portable"]; !ok && rep.Skipped["portable"] == "" {
		t.Error("no install row for portable")
	}
}
