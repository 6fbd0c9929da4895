package upf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/report"
)

// TestSmoke runs a very short benchmark: generator, bare-xdp,
// bare-xdp-lookup, kernel and portable (and bare-xdp-cpu with 2 CPUs),
// 5 sessions in scattered order, 64 B both ways, with the per-program
// profile, with live frames. It skips, saying so, where the kernel
// refuses them; TestSmokeUserSpace runs it with the generators that
// `tern bench upf` falls back on then.
func TestSmoke(t *testing.T) {
	smoke(t, GenLive, true)
}

// TestSmokeUserSpace is TestSmoke with the user-space generators: afxdp,
// the first fallback, in full; packet with the references and portable,
// without the sweep and the profile.
func TestSmokeUserSpace(t *testing.T) {
	t.Run(GenAFXDP, func(t *testing.T) { smoke(t, GenAFXDP, true) })
	t.Run(GenPacket, func(t *testing.T) { smoke(t, GenPacket, false) })
}

func smoke(t *testing.T, gen string, full bool) {
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
		Duration: 200 * time.Millisecond, Sizes: []int{64}, Sessions: []int{5}, Scattered: true, Directions: []string{Uplink, Downlink},
		Drivers: []string{BareXDP, BareXDPLookup, Kernel, "portable"}, Repeat: 1, Sweep: 5, SweepDuration: 50 * time.Millisecond,
		Drain: 50 * time.Millisecond, Profile: true, Out: out, Generator: gen,
	}
	if !full {
		cfg.Drivers, cfg.Sweep, cfg.Profile = []string{BareXDP, Kernel, "portable"}, 0, false
	}
	if full && runtime.NumCPU() > 1 {
		cfg.Drivers, cfg.XDPCPUs = append(cfg.Drivers, BareXDPCPU), "1"
	}
	rep, err := Run(context.Background(), cfg)
	if errors.Is(err, ErrLiveFrames) {
		t.Skipf("%v; TestSmokeUserSpace runs the user-space generators", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Generator != gen {
		t.Fatalf("generator %s ran, want %s", rep.Generator, gen)
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
	genRow, ok := got["upf/"+Generator]
	if !ok || genRow.Extra["offered_pps"].(float64) <= 0 || genRow.Extra["generator"] != gen {
		t.Fatalf("generator offered nothing: %+v", genRow)
	}
	if bare := got["upf/"+BareXDP]; bare.Median <= 0 {
		t.Fatalf("bare-xdp delivered nothing: %+v", bare)
	}
	// The references' ratios: tern's driver against bare-xdp and kernel,
	// measured with the same generator in the same run.
	for _, r := range rows {
		if r.Name == "upf" && r.Variant == "portable" && rep.Skipped["portable"] == "" &&
			(r.Extra["ratio_bare_xdp"] == nil || r.Extra["ratio_kernel"] == nil) {
			t.Errorf("portable %s without its ratios: %+v", r.Extra["direction"], r)
		}
	}
	for _, v := range []string{Kernel, "portable"} {
		if _, ok := got["upf/"+v]; !ok {
			t.Errorf("no row for %s", v)
		}
	}
	if !full {
		return
	}
	// The first sweep step is a fifth of bare-xdp's own throughput.
	low := got["upf-latency/"+BareXDP]
	if low.Extra == nil || low.Extra["delivered_pps"].(float64) <= 0 || low.Extra["loss"].(float64) >= 0.01 {
		t.Fatalf("bare-xdp at a low paced rate: %+v", low)
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

// TestScatterStride: the scattered order visits every session once per
// round, each frame's session far from the last one's.
func TestScatterStride(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 10, 1000, 65536, 100000} {
		s := int(scatterStride(n))
		if n < 3 {
			if s != 0 {
				t.Errorf("n=%d: stride %d, want 0 (index order)", n, s)
			}
			continue
		}
		seen := make([]bool, n)
		prev := 0
		for k := range n {
			idx := k * s % n
			if seen[idx] {
				t.Fatalf("n=%d stride %d: session %d twice in a round", n, s, idx)
			}
			seen[idx] = true
			if d := min((idx-prev+n)%n, (prev-idx+n)%n); k > 0 && n >= 8 && d < n/4 {
				t.Fatalf("n=%d stride %d: frame %d's session %d is %d from the last", n, s, k, idx, d)
			}
			prev = idx
		}
	}
}

// TestGeneratorOrder runs the generator program on one frame, as the
// kernel would for each frame it sends, and reads the session each run
// wrote: index order without a stride, k*stride mod n with one.
func TestGeneratorOrder(t *testing.T) {
	if err := Check(); err != nil {
		t.Skip(err)
	}
	p, err := loadProgs(8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 8
	ss, err := Plan(n, netip.MustParsePrefix(poolStr), 0)
	if err != nil {
		t.Fatal(err)
	}
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	frame, cfg, err := downlinkFrame(mac, mac, ss, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, stride := range []uint32{0, scatterStride(n)} {
		cfg.Stride = stride
		if err := p.objs.GenState.Update(uint32(0), &benchGenState{}, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
		if err := p.objs.GenCfg.Update(uint32(0), &cfg, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
		var got []int
		for range 2 * n {
			out := make([]byte, len(frame))
			ret, err := p.objs.XdpGen.Run(&ebpf.RunOptions{Data: frame, DataOut: out})
			if err != nil || ret != 3 { // XDP_TX
				t.Fatalf("stride %d: run: %d, %v", stride, ret, err)
			}
			got = append(got, int(binary.BigEndian.Uint32(out[ethLen+16:])-ip4(ss[0].UE)))
		}
		for k, idx := range got {
			if want := k * int(max(stride, 1)) % n; idx != want {
				t.Fatalf("stride %d: sessions %v, frame %d wants %d", stride, got, k, want)
			}
		}
	}
}

// TestLiveRefused: the errors that make TestSmoke skip rather than fail.
// EPERM and EOPNOTSUPP are the kernel refusing live frames on any kernel;
// EINVAL is that only before 5.18, which lacks BPF_F_TEST_XDP_LIVE_FRAMES:
// on a newer kernel it is a fault of the run.
func TestLiveRefused(t *testing.T) {
	wrap := func(e error) error { return fmt.Errorf("program xdp_gen: run: %w", e) }
	for _, c := range []struct {
		err     error
		release string
		want    bool
	}{
		{wrap(unix.EPERM), "6.8.0-45-generic", true},
		{wrap(unix.EOPNOTSUPP), "6.8.0-45-generic", true},
		{wrap(unix.EINVAL), "5.15.0-91-generic", true},
		{wrap(unix.EINVAL), "4.19.0", true},
		{wrap(unix.EINVAL), "5.18.0", false},
		{wrap(unix.EINVAL), "6.8.0-45-generic", false},
		{wrap(unix.EINVAL), "", false},
		{wrap(unix.ENOMEM), "5.15.0", false},
	} {
		if got := liveRefusedOn(c.err, c.release); got != c.want {
			t.Errorf("liveRefusedOn(%v, %q) = %v, want %v", c.err, c.release, got, c.want)
		}
	}
}
