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

	"github.com/tern5g/tern/bench/restore"
	"github.com/tern5g/tern/report"
)

// benchRestore parses the flags of `tern bench restore`; the drills are
// package bench/restore's.
func benchRestore(args []string) error {
	fs := flag.NewFlagSet("bench restore", flag.ContinueOnError)
	ues := fs.Int("ues", 1000, "UEs, each with a PDU session")
	gnbs := fs.Int("gnbs", 4, "gNBs the UEs are spread over")
	heartbeat := fs.Duration("heartbeat", 500*time.Millisecond, "the SMF's PFCP heartbeat period")
	pps := fs.Int("pps", 10000, "uplink traffic of all UEs, packets per second")
	drills := fs.String("drills", strings.Join(restore.Drills, ","), "drills to run, in order")
	inProcess := fs.Bool("in-process", false, "run the UPF in this process instead of as 'tern nf upf' killed with SIGKILL")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("ues", *ues, 1),
		atLeast("gnbs", *gnbs, 1),
		positiveDuration("heartbeat", *heartbeat),
		atLeast("pps", *pps, 1),
	); err != nil {
		return err
	}
	var ds []string
	for _, d := range strings.Split(*drills, ",") {
		if d = strings.TrimSpace(d); d != "" {
			ds = append(ds, d)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := restore.Config{UEs: *ues, GNBs: *gnbs, Heartbeat: *heartbeat, UplinkPPS: *pps, Drills: ds,
		Log: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }}
	upfMode := "in this process, closed without PFCP signalling"
	if !*inProcess {
		cfg.UPF = processUPF()
		upfMode = "'tern nf upf' process, killed with SIGKILL"
	}
	params := map[string]any{"ues": *ues, "gnbs": *gnbs, "heartbeat_ms": heartbeat.Milliseconds(), "uplink_pps": *pps,
		"drills": ds, "upf": upfMode, "core": "in-process core unit, UPF over PFCP/UDP", "n2": "SCTP over UDP (RFC 6951) on loopback"}
	fmt.Printf("tern bench restore on %s\n", report.ThisMachine())
	rs, err := restore.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("%-14s %9s %11s %9s %9s %13s %6s %12s %11s %9s %8s\n", "drill", "detect ms", "recovered ms", "restored", "released", "re-registered", "stale", "lost outage", "lost after", "failures", "skipped")
	for _, r := range rs {
		fmt.Printf("%-14s %9.1f %11.1f %9d %9d %13d %6d %12d %11d %9d %8d\n", r.Drill,
			float64(r.Detect)/1e6, float64(r.Recovered)/1e6, r.Restored, r.Released, r.Reregistered, r.Stale, r.LostOutage, r.LostAfter, r.Failures, r.Skipped)
	}
	doc := report.NewDoc("restore", params)
	doc.Add(restore.Results(rs)...)
	if err := writeOutputs(doc, *jsonPath, "", nil); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Failures > 0 || r.Reregistered > 0 || r.Stale > 0 {
			return fmt.Errorf("%s: %d failures, %d UEs re-registered, %d stale", r.Drill, r.Failures, r.Reregistered, r.Stale)
		}
	}
	return nil
}

// processUPF starts `tern nf upf` as a child and waits for its ready line.
func processUPF() restore.UPFLauncher {
	return func(ctx context.Context, pfcpAddr, n3Addr string) (restore.UPFProcess, error) {
		cmd, err := startChild(ctx, []string{"nf", "upf", "--pfcp", pfcpAddr, "--n3", n3Addr, "--no-n6", "--log-level", "error"},
			"tern upf ready", 10*time.Second)
		if err != nil {
			return nil, err
		}
		return upfProcess{cmd}, nil
	}
}

// upfProcess is a `tern nf upf` child; Kill is SIGKILL.
type upfProcess struct{ cmd *exec.Cmd }

func (p upfProcess) Kill() error { return killChild(p.cmd) }
