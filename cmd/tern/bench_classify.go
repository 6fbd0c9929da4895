package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/bench"
	"github.com/tern5g/tern/classify/classbench"
	"github.com/tern5g/tern/report"
)

// benchClassify is `tern bench classify`: PDR classifier lookup, build,
// update and memory on ClassBench and 5G workloads.
func benchClassify(args []string) error {
	fs := flag.NewFlagSet("bench classify", flag.ContinueOnError)
	jsonPath := fs.String("json", "", "write the results document here")
	pngPath := fs.String("png", "", "write the latency/throughput plot (Fig. 11 style) here")
	dir := fs.String("classbench", classbench.DefaultDir(), "ClassBench rules and traces")
	sets := fs.String("sets", strings.Join(classbench.Sets, ","), "ClassBench sets, comma-separated ('' for none)")
	kinds := fs.String("classifiers", "", "classifiers, comma-separated (default: all, and fortable, the UPF's per-session choice, on per-session tables)")
	noSweep := fs.Bool("no-sweep", false, "skip the first-N-rules sweep of acl1_1k")
	no5G := fs.Bool("no-5g", false, "skip the 5G workloads")
	passes := fs.Int("passes", 5, "lookup passes over each trace")
	updates := fs.Int("updates", 1000, "timed inserts and deletes per classifier")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile here")
	quick := fs.Bool("quick", false, "1k/10k sets only, 3 passes, 200 updates, 200k-header traces")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("passes", *passes, 1),
		atLeast("updates", *updates, 0),
	); err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "classbench" || f.Name == "sets" })
	if err := classbench.Available(*dir, "acl1_1k"); err != nil && !explicit {
		// A clone has no ClassBench data: measure what needs none.
		fmt.Fprintf(os.Stderr, "tern bench classify: %v\nrunning the 5G workloads only\n", err)
		*sets, *noSweep = "", true
	}
	cfg := bench.Config{
		ClassBenchDir: *dir, Workloads: !*no5G, Sweep: !*noSweep,
		Passes: *passes, Updates: *updates, Log: os.Stderr,
	}
	for _, s := range strings.Split(*sets, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Sets = append(cfg.Sets, s)
		}
	}
	if *kinds != "" {
		for _, k := range strings.Split(*kinds, ",") {
			cfg.Kinds = append(cfg.Kinds, classify.Kind(strings.TrimSpace(k)))
		}
	}
	if *quick {
		cfg.Passes, cfg.Updates, cfg.MaxTrace = 3, 200, 200_000
		var small []string
		for _, s := range cfg.Sets {
			if !strings.HasSuffix(s, "100k") {
				small = append(small, s)
			}
		}
		cfg.Sets = small
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench classify: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench classify: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rows, err := bench.Run(cfg)
	if err != nil {
		return fmt.Errorf("bench classify: %w", err)
	}
	m := report.ThisMachine()
	bench.WriteTable(os.Stdout, m.String(), rows)
	wrong := 0
	for _, r := range rows {
		wrong += r.Mismatches
	}
	if wrong > 0 {
		fmt.Printf("FAILURES: %d lookups disagreed with linear\n", wrong)
	}
	if *jsonPath != "" {
		doc := report.NewDoc("classify", map[string]any{
			"sets": cfg.Sets, "passes": cfg.Passes, "updates": cfg.Updates, "max_trace": cfg.MaxTrace,
			"sweep": cfg.Sweep, "workloads_5g": cfg.Workloads, "pass_budget": "0.5s: slower classifiers run a prefix of the trace (see headers)",
		})
		doc.Add(bench.Results(rows)...)
		if err := doc.WriteFile(*jsonPath); err != nil {
			return fmt.Errorf("bench classify: %w", err)
		}
	}
	if *pngPath != "" {
		if err := bench.WritePNG(*pngPath, rows); err != nil {
			return fmt.Errorf("bench classify: %w", err)
		}
	}
	if wrong > 0 {
		return fmt.Errorf("bench classify: %d lookups disagreed with linear", wrong)
	}
	return nil
}
