package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
)

// demoScenario is what every UE does: register, set up a PDU session on
// each DNN, ping and move data through the UPF, release, and leave again in
// the ways a UE can.
const demoScenario = "register,session,ping,transfer,release,reregister,deregister,register,switchoff"

// runDemo starts a core and a simulated RAN in one process on loopback,
// runs real procedures over NGAP/NAS on SCTP-over-UDP, PFCP and GTP-U, and
// prints a report.
func runDemo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	ues := fs.Int("ues", 8, "simulated UEs")
	gnbs := fs.Int("gnbs", 2, "simulated gNBs")
	conc := fs.Int("concurrency", 4, "UEs running a procedure at once")
	scenario := fs.String("scenario", demoScenario, "procedures every UE runs in turn (see tern sim -h)")
	dnns := fs.String("dnns", "internet,ims", "DNNs each UE opens a PDU session on")
	capture := fs.String("capture", "", "write N2 (SCTP over UDP), N4 (PFCP: the demo then runs N4 over UDP) and N3 (GTP-U) to this pcap file")
	ciphering := fs.String("ciphering", "", "NAS ciphering algorithm the AMF prefers: NEA0 (readable captures), NEA1, NEA2, NEA3")
	jsonPath := fs.String("json", "", "also write the report as JSON here")
	logLevel := fs.String("log-level", "warn", "core log level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		atLeast("ues", *ues, 1),
		atLeast("gnbs", *gnbs, 1),
		atLeast("concurrency", *conc, 1),
	); err != nil {
		return err
	}
	sc, err := sim.ParseScenario(*scenario)
	if err != nil {
		return err
	}
	root := os.Geteuid() == 0
	if !root {
		// The UPF's N6 is a TUN device: without it no packet can reach a
		// data network, so the data steps are left out rather than fail.
		var kept sim.Scenario
		for _, st := range sc {
			if st != sim.StepPing && st != sim.StepTransfer {
				kept = append(kept, st)
			}
		}
		if len(kept) < len(sc) {
			fmt.Println("tern demo: not root, so the UPF has no N6 TUN device: skipping the ping and transfer steps (run as root for the user plane)")
		}
		sc = kept
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
	if *capture != "" {
		// N4 over PFCP/UDP (TS 29.244) instead of the direct binding, so the
		// capture shows it: SMF on 127.0.0.1:8805, UPF on 127.0.0.2:8805.
		cfg.UPF.PFCPAddr = demoUPFN4
		cfg.SMF.UPFs[0].N4 = demoUPFN4
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
	fmt.Printf("tern demo: core up, N2 on %s over SCTP-over-UDP port %d; %d gNBs, %d UEs, scenario %s\n",
		c.N2Addr(), port, *gnbs, *ues, sc)
	fmt.Printf("  user plane: UPF N3 %s, N4 %s, DNNs %s; the data steps reach the UPF's N6 gateway %s\n\n",
		c.UPF.N3Addr(), n4Mode(cfg), *dnns, demoDNTarget)
	if root && slices.Contains(sc, sim.StepTransfer) {
		// The transfer step's far end: UDP echo (RFC 862) on the N6 gateway.
		echo, err := startUDPEcho(netip.AddrPortFrom(demoDNTarget, 7))
		if err != nil {
			return err
		}
		defer echo.Close()
	}

	scfg := sim.DefaultConfig()
	scfg.AMFAddr = c.N2Addr()
	scfg.Transport = cfg.AMF.SCTP // no tap: the core's capture already sees both directions
	scfg.GNBs, scfg.UEs, scfg.Concurrency = *gnbs, *ues, *conc
	scfg.Scenario = sc
	scfg.DNNs = strings.Split(*dnns, ",")
	scfg.DataTarget = demoDNTarget
	scfg.TransferEcho = true
	// A short transfer paced under the ims session AMBR (10 Mbit/s in the
	// demo subscription), so the QER's MBR policing does not drop it.
	scfg.TransferBytes, scfg.TransferRate = 128<<10, 8_000_000
	scfg.N3Addrs = sim.LoopbackN3Addrs(*gnbs)
	if w := c.Capture(); w != nil {
		scfg.N3Tap = w
	}
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
	up := st.UPF
	fmt.Printf("sessions: %d established; at the end %d SM contexts, %d UPF sessions, %d PDRs, %d TEIDs left\n",
		res.Data.Sessions, st.SMF.Contexts, up.Control.Sessions, up.Control.PDRs, up.Control.TEIDs)
	fmt.Printf("UPF: %d uplink and %d downlink packets, drops: %s\n", up.Pipeline.ULPackets, up.Pipeline.DLPackets, report.Counts(up.Pipeline.Drops))
	if d := res.Data; d.PingSent > 0 || d.TransferPacketsSent > 0 {
		fmt.Printf("user plane: ping %d sent, %d answered, %d lost; transfer %d datagrams (%d B) sent, %d echoed back, %d lost, %.1f Mbit/s offered\n",
			d.PingSent, d.PingReceived, d.PingLost, d.TransferPacketsSent, d.TransferBytesSent, d.TransferPacketsReceived, d.TransferLost, d.TransferBps/1e6)
	}
	fmt.Printf("total %v\n", elapsed.Round(time.Millisecond))
	if *capture != "" {
		fmt.Printf("capture: %s (tshark -r %s -d udp.port==%d,sctp: N2 as NGAP, PFCP on 8805 and GTP-U on 2152 decode as they are)\n", *capture, *capture, port)
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

// The demo's user plane on loopback.
const demoUPFN4 = "127.0.0.2:8805"

// demoDNTarget is the UPF's N6 gateway on the internet DNN's TUN (the first
// host of the pool, which the SMF never hands out).
var demoDNTarget = netip.MustParseAddr(sim.DefaultDataTarget)

func n4Mode(cfg config.Config) string {
	if cfg.UPF.PFCPAddr != "" {
		return "PFCP over UDP " + cfg.UPF.PFCPAddr
	}
	return "direct (in-process)"
}
