package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	upfbench "github.com/tern5g/tern/bench/upf"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/report"
)

// benchUPF parses the flags of `tern bench upf`; the experiment is package
// bench/upf's.
func benchUPF(args []string) error {
	fs := flag.NewFlagSet("bench upf", flag.ContinueOnError)
	dur := fs.Duration("duration", 2*time.Second, "sending time of each throughput run")
	sizesFlag := fs.String("sizes", "64,1400", "packet sizes, bytes: IPv4 total length of the user's packet (the inner packet on N3)")
	sessFlag := fs.String("sessions", "1,1000,100000", "PDU sessions installed (each with a QER and a URR); traffic cycles over all of them")
	dirsFlag := fs.String("directions", "uplink,downlink", "directions to measure, comma-separated")
	drivers := fs.String("drivers", strings.Join(upfbench.Drivers, ","), "variants, comma-separated: the references bare-xdp, bare-xdp-lookup and kernel, and tern's UPF drivers xdp, afxdp, portable (auto); with -xdp-cpus, xdp brings the reference bare-xdp-cpu")
	repeat := fs.Int("repeat", 3, "rounds; each variant runs once per round, in rotated order; the median is reported")
	sweep := fs.Int("sweep", 10, "offered rates of the latency sweep per variant, up to 1.2x its throughput (0: no sweep)")
	sweepDur := fs.Duration("sweep-duration", 500*time.Millisecond, "sending time of each sweep step")
	workers := fs.Int("workers", 1, "UPF workers (upf.workers: N3 readers; the xdp/afxdp drivers' queues)")
	xdpCPUs := fs.String("xdp-cpus", "", "CPUs the xdp driver processes sessions on (upf.xdpCPUs, e.g. 1: a core of its own; default: where packets arrive); bare-xdp-cpu forwards on the first")
	scaling := fs.Bool("scaling", false, "also measure tern's drivers with 1..NumCPU workers (upf-scaling rows)")
	sdf := fs.Int("sdf-every", 0, "every n-th session carries SDF filters (10: 10 %; 0: none)")
	order := fs.String("order", "index", "the order the generator visits the sessions in: index (0, 1, 2, ...) or scattered (each frame's session far from the last, as real traffic's)")
	profile := fs.Bool("profile", false, "after each variant's last round, one more run with the kernel's BPF statistics on: ns per run of each XDP program (upf-profile rows)")
	drain := fs.Duration("drain", 200*time.Millisecond, "wait after sending before counting what arrived")
	generator := fs.String("generator", upfbench.GenAuto, "how the frames are sent, the same for every variant: live (an XDP program run with BPF_PROG_RUN in live-frames mode, some Mpps on one core), afxdp (user space, an AF_XDP socket's TX ring), packet (user space, AF_PACKET sendmmsg), or auto: live where the kernel allows it, else afxdp, else packet")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	pngPath := fs.String("png", "", "draw latency and loss against offered rate here (needs -sweep)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		positiveDuration("duration", *dur),
		positiveDuration("sweep-duration", *sweepDur),
		atLeast("repeat", *repeat, 1),
		atLeast("sweep", *sweep, 0),
		atLeast("workers", *workers, 1),
		atLeast("sdf-every", *sdf, 0),
		nonNegativeDuration("drain", *drain),
	); err != nil {
		return err
	}
	sizes, err := intList(*sizesFlag)
	if err != nil {
		return fmt.Errorf("--sizes: %w", err)
	}
	sessions, err := intList(*sessFlag)
	if err != nil {
		return fmt.Errorf("--sessions: %w", err)
	}
	dirs, err := nameList("directions", *dirsFlag)
	if err != nil {
		return err
	}
	vs, err := nameList("drivers", *drivers)
	if err != nil {
		return err
	}
	if !slices.Contains(upfbench.Generators, *generator) {
		return fmt.Errorf("--generator %q: want one of %s", *generator, strings.Join(upfbench.Generators, ", "))
	}
	if *order != "index" && *order != "scattered" {
		return fmt.Errorf("--order %q: want index or scattered", *order)
	}
	if *pngPath != "" && *sweep == 0 {
		return fmt.Errorf("--png draws the latency sweep: give --sweep")
	}
	if err := upfbench.Check(); err != nil {
		return err
	}
	if err := lab.Check(); err != nil {
		return err
	}
	cfg := upfbench.Config{Duration: *dur, Sizes: sizes, Sessions: sessions, Directions: dirs, Drivers: vs,
		Repeat: *repeat, Sweep: *sweep, SweepDuration: *sweepDur, Workers: *workers, XDPCPUs: *xdpCPUs, Scaling: *scaling,
		SDFEvery: *sdf, Scattered: *order == "scattered", Profile: *profile, Drain: *drain, Out: os.Stdout, Generator: *generator}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := report.ThisMachine()
	fmt.Printf("tern bench upf on %s\n", m)
	fmt.Printf("  size = IPv4 total length of the user's packet: inner on N3 (+%d B outer IPv4, UDP, GTP-U with PDU Session Container); kernel uplink sends it plain\n", upfbench.Overhead)
	fmt.Printf("  generator, path, UPF and sinks share these %d CPUs\n", m.CPUs)
	rep, err := upfbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	fmt.Println("(/bare, /kernel, /bare-cpu, /lookup: the median over the reference's median (bare-xdp, kernel, bare-xdp-cpu, bare-xdp-lookup), same run, same links, same generator; loss: made by the generator, not counted by the sink)")
	if rep.Generator != upfbench.GenLive {
		fmt.Printf("(generator %s: frames from user space reach the core as socket buffers, which veth copies before XDP runs: lower rates than live frames, for the references too)\n", rep.Generator)
	}
	params := map[string]any{
		"duration_s": dur.Seconds(), "sizes": sizes, "directions": dirs, "sessions": sessions, "drivers": vs,
		"repeat": *repeat, "sweep": *sweep, "sweep_duration_s": sweepDur.Seconds(), "workers": *workers, "xdp_cpus": *xdpCPUs,
		"sdf_every": *sdf, "order": *order, "drain_s": drain.Seconds(),
		"generator":       rep.Generator + ": " + upfbench.GeneratorText(rep.Generator),
		"sink":            "XDP program on the receiving veth: counts, one-way latency from the stamp (bpf_ktime_get_ns), drops",
		"size":            fmt.Sprintf("IPv4 total length of the user's packet (inner on N3, which adds %d B; plain on kernel uplink)", upfbench.Overhead),
		"bare-xdp":        "MAC rewrite + bpf_redirect between the core's veths: the path's limit",
		"bare-xdp-lookup": "bare-xdp after one hash lookup of the frame's session (TEID uplink, UE address downlink) among the run's sessions, whose entry gives the next hop: the floor of a UPF with its sessions in BPF hash maps",
		"kernel":          "core namespace IP forwarding (XDP_PASS program on the core's veths so that XDP_TX frames are received)",
	}
	if rep.GeneratorWhy != "" {
		params["generator_fallback"] = rep.GeneratorWhy
	}
	doc := report.NewDoc("upf", params)
	doc.Add(rep.Results()...)
	return writeOutputs(doc, *jsonPath, *pngPath, rep.WritePNG)
}

// nameList splits a comma-separated flag into its distinct names.
func nameList(flagName, s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: empty", flagName)
	}
	return out, nil
}
