package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tern5g/tern/bench/failover"
	"github.com/tern5g/tern/report"
)

// benchFailover parses the flags of `tern bench failover`; the drills are
// package bench/failover's.
func benchFailover(args []string) error {
	fs := flag.NewFlagSet("bench failover", flag.ContinueOnError)
	ues := fs.Int("ues", 1000, "UEs per drill")
	gnbs := fs.Int("gnbs", 4, "gNBs the UEs are spread over")
	conc := fs.Int("concurrency", 32, "UEs running a procedure at once")
	drills := fs.String("drills", strings.Join(append(failover.Drills, failover.Cost), ","), "drills to run, in order")
	reattach := fs.Bool("reattach", true, "run the idle drill's re-attach baseline too (resiliency.mode off, the core restarted)")
	costUEs := fs.Int("cost-ues", 0, "UEs, one at a time, per mode for "+failover.Cost+" (0: --ues)")
	interruption := fs.Duration("handover-interruption", 0, "how long a UE is between gNBs in the handover drill")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("ues", *ues, 2),
		atLeast("gnbs", *gnbs, 2),
		atLeast("concurrency", *conc, 1),
		atLeast("cost-ues", *costUEs, 0),
		nonNegativeDuration("handover-interruption", *interruption),
	); err != nil {
		return err
	}
	var ds []string
	for _, d := range strings.Split(*drills, ",") {
		if d = strings.TrimSpace(d); d != "" {
			ds = append(ds, d)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spawn := func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		return cmd, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := failover.Config{UEs: *ues, GNBs: *gnbs, Concurrency: *conc, Drills: ds, Reattach: *reattach, CostUEs: *costUEs,
		HandoverInterruption: *interruption, Spawn: spawn,
		Log: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }}
	params := map[string]any{"ues": *ues, "gnbs": *gnbs, "concurrency": *conc, "drills": ds, "reattach": *reattach,
		"cost_ues": *costUEs, "handover_interruption_ms": interruption.Milliseconds(),
		"core": "tern up with resiliency.mode local: the supervisor (N2 front end, UPF) in this process, units as 'tern unit' processes; reattach and " + failover.Cost + "'s " + failover.VariantOffInProcess + ": resiliency.mode off in this process (reattach: restarted); " + failover.Cost + "'s " + failover.VariantOff + " and " + failover.VariantNoStore + ": local mode's processes, the units recording nothing or dropping their records",
		"n2":   "SCTP over UDP (RFC 6951) on loopback", "kill": "SIGKILL of the active unit"}
	fmt.Printf("tern bench failover on %s\n", report.ThisMachine())
	rs, cost, err := failover.Run(ctx, cfg)
	if err != nil {
		return err
	}
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("%-9s %-9s %10s %9s %11s %10s %13s %7s  %s\n", "drill", "variant", "detect ms", "wait4 ms", "takeover ms", "served ms", "re-registered", "failed", "failures")
	for _, r := range rs {
		fmt.Printf("%-9s %-9s %10.3f %9.3f %11.1f %10.1f %13d %7d  %s\n", r.Drill, r.Variant, msf(r.Detect), msf(r.Reaped),
			msf(r.Takeover), msf(r.Served), r.Reregistered, r.Failed, r.FailureList())
		if r.Drill == failover.DrillHandover {
			fmt.Printf("  handover window, median: %.2f ms for the %d of %d in flight at the kill that succeeded, %.2f ms for the others\n",
				msf(r.Window), r.InFlight-r.InFlightFailed, r.InFlight, msf(r.WindowRef))
		}
		for _, e := range r.Errors {
			fmt.Printf("  failed: %s\n", e)
		}
	}
	if cost != nil {
		fmt.Printf("%s, %d UEs one at a time, medians:\n", failover.Cost, cost.UEs)
		for _, m := range failover.CostVariants {
			fmt.Printf("  %-14s registration %.3f ms (x%.2f), pdu-session %.3f ms (x%.2f), failed %d\n", m,
				msf(cost.Registration[m]), cost.Ratio(cost.Registration, m), msf(cost.PDUSession[m]), cost.Ratio(cost.PDUSession, m),
				cost.RegistrationFailed[m]+cost.PDUSessionFailed[m])
		}
	}
	doc := report.NewDoc("failover", params)
	doc.Add(failover.Results(rs, cost)...)
	return writeOutputs(doc, *jsonPath, "", nil)
}
