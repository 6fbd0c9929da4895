package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
)

// runDemo starts a core and a simulated RAN in one process on loopback,
// runs real procedures over NGAP/NAS on SCTP-over-UDP, and prints a report.
func runDemo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	ues := fs.Int("ues", 8, "simulated UEs")
	gnbs := fs.Int("gnbs", 2, "simulated gNBs")
	conc := fs.Int("concurrency", 4, "UEs running a procedure at once")
	scenario := fs.String("scenario", "register,reregister,deregister,register,switchoff",
		"procedures every UE runs in turn (see tern sim -h)")
	capture := fs.String("capture", "", "write the N2 traffic (SCTP over UDP) to this pcap file")
	ciphering := fs.String("ciphering", "", "NAS ciphering algorithm the AMF prefers: NEA0 (readable captures), NEA1, NEA2, NEA3")
	jsonPath := fs.String("json", "", "also write the report as JSON here")
	logLevel := fs.String("log-level", "warn", "core log level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, err := sim.ParseScenario(*scenario)
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "tern-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Log.Level = *logLevel
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = *ues
	cfg.Capture = *capture
	port, err := freeport.UDP()
	if err != nil {
		return err
	}
	cfg.AMF.SCTP.UDPPort = port
	if *ciphering != "" {
		cfg.AMF.Security.Ciphering = []string{*ciphering}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := core.New(cfg, newLogger(config.Log{Level: cfg.Log.Level, Format: "text"}))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	fmt.Printf("tern demo: core up, N2 on %s over SCTP-over-UDP port %d; %d gNBs, %d UEs, scenario %s\n\n",
		c.N2Addr(), port, *gnbs, *ues, sc)

	scfg := sim.DefaultConfig()
	scfg.AMFAddr = c.N2Addr()
	scfg.Transport = cfg.AMF.SCTP // no tap: the core's capture already sees both directions
	scfg.GNBs, scfg.UEs, scfg.Concurrency = *gnbs, *ues, *conc
	scfg.Scenario = sc
	start := time.Now()
	res, err := sim.Run(ctx, scfg)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)

	report.WriteTable(os.Stdout, "Procedures (latency windows of the L25GC paper, measured at the simulated RAN):", res.Summaries)
	fmt.Println()
	for _, s := range res.Steps {
		fmt.Printf("  step %-11s %4d ok  %3d failed  %3d skipped  all UEs in %v\n", s.Step, s.OK, s.Failed, s.Skipped, s.Wall.Round(time.Microsecond))
	}
	st := c.Stats()
	a := st.AMF
	fmt.Printf("\ncore (AMF counters): %d NG Setups, %d registrations completed, %d 5G-AKA runs (%d rejected, %d resyncs),\n"+
		"  %d security modes, %d identifications, %d deregistrations, %d UE context releases, %d Error Indications, %d NAS messages discarded\n",
		a.NGSetups, a.Registrations, a.Authentications, a.AuthenticationFails, a.Resyncs,
		a.SecurityModes, a.Identifications, a.Deregistrations, a.UEContextReleases, a.ErrorIndications, a.NASDiscarded)
	fmt.Printf("core: %d UEs registered at the end, %d subscribers, resident memory %.1f MiB (core and simulator together)\n",
		a.RegisteredUEs, st.Subscribers, float64(st.ResidentSize)/(1<<20))
	fmt.Printf("total %v\n", elapsed.Round(time.Millisecond))
	if *capture != "" {
		fmt.Printf("N2 capture: %s (tshark -r %s -d udp.port==%d,sctp)\n", *capture, *capture, port)
	}
	if *jsonPath != "" {
		doc := report.NewDoc("demo", map[string]any{"ues": *ues, "gnbs": *gnbs, "concurrency": *conc, "scenario": sc.String()})
		for _, s := range res.Summaries {
			doc.Add(report.LatencyResult(s, "unit", res.Recorder.Samples(s.Procedure)))
		}
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
	}
	if n := res.Failures(); n > 0 {
		return fmt.Errorf("%d procedure runs failed", n)
	}
	return nil
}
