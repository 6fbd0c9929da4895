package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tern5g/tern/bench/sbi"
	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/report"
)

// benchSBI runs bench/sbi: one SBI call per binding beside its
// references, serialization alone, and the registration and PDU session
// windows per binding.
func benchSBI(args []string) error {
	fs := flag.NewFlagSet("bench sbi", flag.ContinueOnError)
	calls := fs.Int("calls", 2000, "calls per operation and binding")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atLeast("calls", *calls, 10); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tern-bench-sbi-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("tern bench sbi on %s: %d calls per operation and binding\n", report.ThisMachine(), *calls)
	cfg := sbi.Config{Calls: *calls, Dir: dir, Bindings: sbiBindings()}
	cfg.References = sbiReferences()
	doc, err := sbi.Run(context.Background(), cfg)
	if err != nil {
		return err
	}
	printSBI(doc)
	if *jsonPath != "" {
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
		fmt.Printf("results: %s\n", *jsonPath)
	}
	return nil
}

// printSBI prints each row with its ratio to the reference that bounds it
// (tcp-rtt for http and https, eventfd-rtt for shm).
func printSBI(doc *report.Doc) {
	ref := map[string]float64{}
	for _, r := range doc.Results {
		if r.Name == "rtt" {
			ref[r.Variant] = r.Median
		}
	}
	bound := map[string]string{"http": "tcp-rtt", "https": "tcp-rtt", "shm": "eventfd-rtt", "shm-sleep": "eventfd-rtt"}
	fmt.Printf("\n%-20s %-12s %10s %10s %10s  %s\n", "operation", "binding", "median µs", "p99 µs", "failed", "vs reference")
	for _, r := range doc.Results {
		note := ""
		if b := bound[r.Variant]; b != "" && ref[b] > 0 && r.Name != "registration" && r.Name != "pdu-session" {
			note = fmt.Sprintf("%.2f× %s", sbi.Ratio(r.Median, ref[b]), b)
			if b == "tcp-rtt" && ref["h2c-rtt"] > 0 {
				note += fmt.Sprintf(", %.2f× h2c-rtt", sbi.Ratio(r.Median, ref["h2c-rtt"]))
			}
		}
		if ues, ok := r.Extra["ues"]; ok {
			note = fmt.Sprintf("%v UEs at once", ues)
		}
		if b, ok := r.Extra["bytes"]; ok {
			note = fmt.Sprintf("%v bytes", b)
		}
		fmt.Printf("%-20s %-12s %10.1f %10.1f %10d  %s\n", r.Name, r.Variant, r.Median, r.P99, r.Failures, note)
	}
	fmt.Println("\n(L25GC, its hardware: shared memory 69-88 µs, HTTP/JSON 893-1,130 µs per message; registration ≈ 3.4 ms)")
}

// sbiBindings are the bindings compared.
func sbiBindings() []sbi.Binding {
	return []sbi.Binding{sbi.Inproc(), sbi.Shm("shm", config.DefaultShmBusyPoll), sbi.Shm("shm-sleep", 0), sbi.HTTP(), sbi.HTTPS()}
}

// sbiReferences are the references measured besides tcp-rtt.
func sbiReferences() map[string]func(int) ([]time.Duration, error) {
	return map[string]func(int) ([]time.Duration, error){"eventfd-rtt": sbi.EventfdRTT}
}
