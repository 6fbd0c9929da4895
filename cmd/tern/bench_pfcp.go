package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	benchpfcp "github.com/tern5g/tern/bench/pfcp"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
)

// benchPFCP runs bench/pfcp: one PFCP message per binding beside a raw
// UDP round trip.
func benchPFCP(args []string) error {
	fs := flag.NewFlagSet("bench pfcp", flag.ContinueOnError)
	n := fs.Int("n", 2000, "sessions per binding (each: establish, modify, report, delete)")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atLeast("n", *n, 1); err != nil {
		return err
	}
	fmt.Printf("tern bench pfcp on %s: %d sessions per binding\n", report.ThisMachine(), *n)
	doc, err := benchpfcp.Run(context.Background(), *n)
	if err != nil {
		return err
	}
	var rtt float64
	for _, r := range doc.Results {
		if r.Name == "rtt" {
			rtt = r.Median
		}
	}
	fmt.Printf("\n%-14s %-7s %10s %10s %10s %8s %10s %12s %12s\n", "message", "binding", "median µs", "p90 µs", "p99 µs", "failed", "vs udp-rtt", "vs L25GC", "vs free5GC")
	for _, r := range doc.Results {
		if r.Name == "rtt" {
			fmt.Printf("%-14s %-7s %10.1f %10.1f %10.1f %8d\n", r.Name, r.Variant, r.Median, r.P90, r.P99, r.Failures)
			continue
		}
		pub := benchpfcp.Published[r.Name]
		vsRTT := ""
		if r.Variant == "udp" && rtt > 0 {
			vsRTT = fmt.Sprintf("%.1f×", r.Median/rtt)
		}
		fmt.Printf("%-14s %-7s %10.1f %10.1f %10.1f %8d %10s %11.0fx %11.0fx\n", r.Name, r.Variant, r.Median, r.P90, r.P99, r.Failures, vsRTT,
			ratioUS(pub[0], r.Median), ratioUS(pub[1], r.Median))
	}
	fmt.Println("\n(vs udp-rtt: our median / a raw UDP round trip in the same run; vs L25GC and free5GC: their published latency / ours, their hardware)")
	if *jsonPath != "" {
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
		fmt.Printf("results: %s\n", *jsonPath)
	}
	return nil
}

// ratioUS is a published latency over ours (µs).
func ratioUS(ref time.Duration, oursUS float64) float64 {
	if oursUS <= 0 {
		return 0
	}
	return float64(ref.Microseconds()) / oursUS
}

// ratio is a published latency over ours.
func ratio(ref, ours time.Duration) float64 {
	if ours <= 0 {
		return 0
	}
	return float64(ref) / float64(ours)
}

// causeOf is the cause of an association answer, for error messages.
func causeOf(r *pfcp.AssociationSetupResponse) any {
	if r == nil {
		return "none"
	}
	return r.Cause
}
