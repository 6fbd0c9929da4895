package upf

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/report"
)

func TestBucketBounds(t *testing.T) {
	for _, d := range []time.Duration{0, 999 * time.Nanosecond, time.Microsecond, 2047 * time.Microsecond,
		2048 * time.Microsecond, 3 * time.Millisecond, 1234567 * time.Microsecond, time.Hour} {
		b := Bucket(d)
		if b < 0 || b >= NBuckets {
			t.Fatalf("%v: bucket %d of %d", d, b, NBuckets)
		}
		lo, hi := bucketBounds(b)
		us := float64(d / time.Microsecond)
		if b < NBuckets-1 && (us < lo || us >= hi) {
			t.Fatalf("%v (%.0f µs) in bucket %d [%v, %v)", d, us, b, lo, hi)
		}
		if b >= linearUS && (hi-lo)/lo > 1.0/histSub+1e-9 {
			t.Fatalf("bucket %d [%v, %v) wider than 1/%d", b, lo, hi, histSub)
		}
	}
	// Buckets are ordered: a later latency never lands in an earlier bucket.
	prev := 0
	for us := 0; us < 1<<22; us += 37 {
		b := Bucket(time.Duration(us) * time.Microsecond)
		if b < prev {
			t.Fatalf("%d µs: bucket %d after %d", us, b, prev)
		}
		prev = b
	}
}

func TestHistogramQuantiles(t *testing.T) {
	h := make(Histogram, NBuckets)
	if h.Quantile(0.5) != 0 || h.Max() != 0 {
		t.Fatal("empty histogram")
	}
	// 1..1000 µs once each, plus 10 samples at 5 ms.
	for us := 1; us <= 1000; us++ {
		h.Add(time.Duration(us)*time.Microsecond + 300*time.Nanosecond)
	}
	for range 10 {
		h.Add(5 * time.Millisecond)
	}
	if n := h.Count(); n != 1010 {
		t.Fatalf("count %d", n)
	}
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.2f, want %.2f ± %.2f", name, got, want, tol)
		}
	}
	near("p50", h.Quantile(0.5), 505, 1)
	near("p90", h.Quantile(0.9), 909, 1)
	near("p99", h.Quantile(0.99), 1000, 1)
	near("p99.9", h.Quantile(0.999), 5000, 5000.0/histSub)
	if m := h.Max(); m < 5000 || m > 5000*(1+1.0/histSub) {
		t.Errorf("max %.1f", m)
	}
}

func TestRowsAndRatios(t *testing.T) {
	cfg := Config{Drivers: []string{BareXDP, BareXDPLookup, BareXDPCPU, Kernel, "portable", "xdp", "afxdp"}, Repeat: 3, Workers: 1}
	r := newReport(cfg)
	samples := func(pps ...float64) []Sample {
		var ss []Sample
		for _, p := range pps {
			ss = append(ss, Sample{Sent: uint64(2 * p), Delivered: uint64(p), Elapsed: time.Second})
		}
		return ss
	}
	k := Key{Dir: Uplink, Size: 64, Sessions: 1, Workers: 1}
	for v, pps := range map[string][]float64{
		Generator: {4e6, 4e6, 4e6}, BareXDP: {2e6, 1.9e6, 2.1e6}, BareXDPCPU: {1e6, 1e6, 1e6}, BareXDPLookup: {8e5, 8e5, 8e5},
		Kernel: {1e6, 1.2e6, 1.4e6}, "portable": {5e5, 4e5, 6e5},
	} {
		k.Variant = v
		r.Throughput[k] = samples(pps...)
	}
	k.Variant = "xdp"
	r.Throughput[k] = []Sample{{Sent: 1e6, Delivered: 9e5, Elapsed: time.Second, FlowHits: 3, FlowMisses: 1}}
	k.Variant = "portable"
	r.Install[k] = []InstallSample{{Sessions: 1000, Installed: 100 * time.Millisecond, Forwarding: 200 * time.Millisecond}}
	r.Latency = append(r.Latency, LatencyPoint{Key: k, Target: 1e5, Offered: 1e5, Delivered: 1e5, P50: 20, P99: 40, P999: 60})
	r.Skipped["afxdp"] = "upf: driver afxdp: no AF_XDP here"
	k.Variant = BareXDP
	r.Profile[k] = map[string]ProgCost{"xdp_fwd": {Runs: 4, Runtime: 300 * time.Nanosecond}}

	b, err := json.Marshal(r.Results())
	if err != nil {
		t.Fatal(err)
	}
	var rows []report.Result
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	find := func(name, variant string) report.Result {
		t.Helper()
		for _, x := range rows {
			if x.Name == name && x.Variant == variant {
				return x
			}
		}
		t.Fatalf("no row %s/%s in %s", name, variant, b)
		return report.Result{}
	}
	p := find("upf", "portable")
	if p.Median != 5e5 || p.Unit != "pps" || p.Count != 3 {
		t.Fatalf("portable row %+v", p)
	}
	if got := p.Extra["ratio_bare_xdp"].(float64); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("ratio to bare-xdp %v, want 0.25", got)
	}
	if got := p.Extra["ratio_kernel"].(float64); math.Abs(got-5e5/1.2e6) > 1e-9 {
		t.Errorf("ratio to kernel %v", got)
	}
	if got := p.Extra["ratio_bare_xdp_cpu"].(float64); got != 0.5 {
		t.Errorf("ratio to bare-xdp-cpu %v, want 0.5", got)
	}
	if _, ok := find("upf", BareXDPCPU).Extra["ratio_bare_xdp_cpu"]; ok {
		t.Error("bare-xdp-cpu quoted against itself")
	}
	if got := p.Extra["ratio_bare_xdp_lookup"].(float64); math.Abs(got-0.625) > 1e-9 {
		t.Errorf("ratio to bare-xdp-lookup %v, want 0.625", got)
	}
	lk := find("upf", BareXDPLookup)
	if _, ok := lk.Extra["ratio_bare_xdp_lookup"]; ok {
		t.Error("bare-xdp-lookup quoted against itself")
	}
	if got := lk.Extra["ratio_bare_xdp"].(float64); got != 0.4 {
		t.Errorf("bare-xdp-lookup/bare-xdp %v, want 0.4", got)
	}
	if got := p.Extra["loss"].(float64); got != 0.5 {
		t.Errorf("loss %v", got)
	}
	for _, f := range []string{"size", "direction", "sessions", "offered_pps"} {
		if _, ok := p.Extra[f]; !ok {
			t.Errorf("portable row lacks %s", f)
		}
	}
	if got := find("upf", "xdp").Extra["flow_cache_hit_rate"]; got != 0.75 {
		t.Errorf("flow cache hit rate %v, want 0.75", got)
	}
	if _, ok := p.Extra["flow_cache_hit_rate"]; ok {
		t.Error("a hit rate for a driver without a flow cache")
	}
	if _, ok := find("upf", BareXDP).Extra["ratio_bare_xdp"]; ok {
		t.Error("bare-xdp quoted against itself")
	}
	if k := find("upf", Kernel); k.Extra["ratio_bare_xdp"].(float64) != 0.6 {
		t.Errorf("kernel/bare-xdp %v", k.Extra["ratio_bare_xdp"])
	}
	if find("upf", "afxdp").Extra["skipped"] == nil {
		t.Error("skipped driver has no reason")
	}
	if l := find("upf-latency", "portable"); l.Median != 20 || l.P99 != 40 || l.Extra["p999_us"].(float64) != 60 {
		t.Errorf("latency row %+v", l)
	}
	if pr := find("upf-profile", BareXDP); pr.Median != 75 || pr.Unit != "ns" || pr.Extra["program"] != "xdp_fwd" {
		t.Errorf("profile row %+v", pr)
	}
	if in := find("upf-install", "portable"); in.Median != 200 || in.Extra["establishments_per_s"].(float64) != 10000 {
		t.Errorf("install row %+v", in)
	}

	// The table tells a scaling run's installation from the plain one's.
	k.Variant, k.Workers = "portable", 2
	r.Install[k] = []InstallSample{{Sessions: 1000, Installed: 50 * time.Millisecond, Forwarding: 100 * time.Millisecond}}
	var tb strings.Builder
	r.WriteTable(&tb)
	var installs []string
	for l := range strings.Lines(tb.String()) {
		if strings.Contains(l, "establishments/s") {
			installs = append(installs, strings.TrimSpace(l))
		}
	}
	if len(installs) != 2 || strings.Contains(installs[0], "workers") || !strings.HasSuffix(installs[1], "(2 workers)") {
		t.Errorf("installation lines %q", installs)
	}
}

// TestBareXDPCPUReference: xdp with XDPCPUs brings its reference, placed
// after bare-xdp; the reference alone needs the CPUs.
func TestBareXDPCPUReference(t *testing.T) {
	base := func(drivers ...string) Config {
		return Config{Duration: time.Second, Repeat: 1, Sizes: []int{64}, Sessions: []int{1},
			Directions: []string{Uplink}, Drivers: drivers}
	}
	c := base(BareXDP, Kernel, "xdp")
	c.XDPCPUs = "1"
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if want := []string{BareXDP, BareXDPCPU, Kernel, "xdp"}; !slices.Equal(c.Drivers, want) {
		t.Errorf("drivers %v, want %v", c.Drivers, want)
	}
	c = base("xdp")
	if err := c.defaults(); err != nil || slices.Contains(c.Drivers, BareXDPCPU) {
		t.Errorf("without XDPCPUs: drivers %v, %v", c.Drivers, err)
	}
	c = base(BareXDPCPU)
	if err := c.defaults(); err == nil {
		t.Error("bare-xdp-cpu accepted without XDPCPUs")
	}
	c = base("xdp")
	c.XDPCPUs = "x"
	if err := c.defaults(); err == nil {
		t.Error("a bad CPU list accepted")
	}
}

// TestRatioOnlyWithReference: a ratio to a reference that did not run is
// left out, not written as 0.
func TestRatioOnlyWithReference(t *testing.T) {
	r := newReport(Config{Drivers: []string{BareXDP, "xdp"}, Repeat: 1, Workers: 1})
	k := Key{Dir: Uplink, Size: 64, Sessions: 1, Workers: 1}
	for v, pps := range map[string]uint64{Generator: 4e6, BareXDP: 2e6, "xdp": 1.8e6} {
		k.Variant = v
		r.Throughput[k] = []Sample{{Sent: pps, Delivered: pps, Elapsed: time.Second}}
	}
	for _, x := range r.Results() {
		if x.Name != "upf" || x.Variant != "xdp" {
			continue
		}
		if got := x.Extra["ratio_bare_xdp"]; got != 0.9 {
			t.Errorf("ratio_bare_xdp %v, want 0.9", got)
		}
		for _, f := range []string{"ratio_kernel", "ratio_bare_xdp_cpu", "ratio_bare_xdp_lookup"} {
			if v, ok := x.Extra[f]; ok {
				t.Errorf("%s = %v without its reference", f, v)
			}
		}
		return
	}
	t.Fatal("no xdp row")
}
