package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/tern5g/tern/bench/mobility"
	"github.com/tern5g/tern/report"
)

// benchPaging parses the flags of `tern bench paging`; the experiment is
// package bench/mobility's.
func benchPaging(args []string) error {
	fs := flag.NewFlagSet("bench paging", flag.ContinueOnError)
	pps := fs.Int("pps", 10000, "downlink stream rate, packets per second (L25GC: 10 kpps)")
	size := fs.Int("size", 64, "UDP payload bytes of each stream packet")
	trials := fs.Int("trials", 50, "single-UE paging trials")
	conc := fs.String("concurrency", "1,4,8,16,32,64", "UEs paged at once in the concurrent runs (comma-separated; empty: none)")
	rounds := fs.Int("rounds", 20, "rounds of each concurrent run")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	pngPath := fs.String("png", "", "draw the first trial's per-packet delays here (L25GC Fig 13)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("pps", *pps, 1),
		intIn("size", *size, minStreamPayload, maxStreamPayload),
		atLeast("trials", *trials, 1),
		atLeast("rounds", *rounds, 1),
	); err != nil {
		return err
	}
	ns, err := intList(*conc)
	if err != nil {
		return fmt.Errorf("--concurrency: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	params := map[string]any{"pps": *pps, "size": *size, "trials": *trials, "concurrency": ns, "rounds": *rounds,
		"core": "in-process core unit, embedded UPF; downlink injected into the UPF's N6 path (InjectDownlink)",
		"n2":   "SCTP over UDP (RFC 6951) on loopback"}
	fmt.Printf("tern bench paging on %s\n", report.ThisMachine())
	res, err := mobility.Paging(ctx, mobility.PagingConfig{Setup: setup(*pps, *size, *trials), Concurrency: ns, Rounds: *rounds})
	if err != nil {
		return err
	}
	res.WriteTable(os.Stdout)
	doc := report.NewDoc("paging", params)
	doc.Add(res.Results()...)
	if err := writeOutputs(doc, *jsonPath, *pngPath, res.WritePNG); err != nil {
		return err
	}
	if res.Failures > 0 {
		return fmt.Errorf("%d pagings failed", res.Failures)
	}
	return nil
}

// benchHandover parses the flags of `tern bench handover`; the
// experiment is package bench/mobility's.
func benchHandover(args []string) error {
	fs := flag.NewFlagSet("bench handover", flag.ContinueOnError)
	pps := fs.Int("pps", 10000, "downlink stream rate, packets per second (L25GC: 10 kpps)")
	size := fs.Int("size", 64, "UDP payload bytes of each stream packet")
	trials := fs.Int("trials", 50, "handovers per mode (the UE goes back and forth between two gNBs)")
	modes := fs.String("modes", strings.Join(mobility.HandoverModes, ","), "modes to run, each on a core of its own (xn, n2-forwarding, n2-smart)")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	pngPath := fs.String("png", "", "draw each mode's first handover, per-packet delays, here (L25GC Fig 14)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("pps", *pps, 1),
		intIn("size", *size, minStreamPayload, maxStreamPayload),
		atLeast("trials", *trials, 1),
	); err != nil {
		return err
	}
	var ms []string
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "" {
			ms = append(ms, m)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	params := map[string]any{"pps": *pps, "size": *size, "trials": *trials, "modes": ms,
		"core":   "in-process core unit, embedded UPF; downlink injected into the UPF's N6 path (InjectDownlink)",
		"n2":     "SCTP over UDP (RFC 6951) on loopback",
		"window": "N2: Handover Required -> Registration Complete at the target (no fixed sleep); Xn: Path Switch Request -> Registration Complete"}
	fmt.Printf("tern bench handover on %s\n", report.ThisMachine())
	res, err := mobility.Handover(ctx, mobility.HandoverConfig{Setup: setup(*pps, *size, *trials), Modes: ms})
	if err != nil {
		return err
	}
	res.WriteTable(os.Stdout)
	doc := report.NewDoc("handover", params)
	doc.Add(res.Results()...)
	if err := writeOutputs(doc, *jsonPath, *pngPath, res.WritePNG); err != nil {
		return err
	}
	if n := res.Failures(); n > 0 {
		return fmt.Errorf("%d handovers failed", n)
	}
	for _, m := range res.Modes {
		if m.DL.Lost > 0 {
			return fmt.Errorf("handover %s: downlink %s", m.Mode, m.Loss)
		}
	}
	return nil
}

// setup is the experiments' common part, progress on stdout.
func setup(pps, size, trials int) mobility.Setup {
	return mobility.Setup{PPS: pps, Size: size, Trials: trials, Log: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }}
}

// writeOutputs writes the JSON document and the plot when asked.
func writeOutputs(doc *report.Doc, jsonPath, pngPath string, png func(string) error) error {
	if jsonPath != "" {
		if err := doc.WriteFile(jsonPath); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", jsonPath)
	}
	if pngPath != "" {
		if err := png(pngPath); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", pngPath)
	}
	return nil
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
