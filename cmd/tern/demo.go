package main

import (
	"context"
	"encoding/binary"
	"errors"
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
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/upf/portable"
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
	gnbN3 := demoAddresses(&cfg, *capture != "", *gnbs)
	dnTarget, err := demoN6(&cfg)
	if err != nil {
		return err
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
	fmt.Printf("  user plane: UPF N3 %s, N4 %s, DNNs %s (%s); the data steps reach the UPF's N6 gateway %s\n\n",
		c.UPF.N3Addr(), n4Mode(cfg), *dnns, n6Summary(cfg), dnTarget)
	if root && slices.Contains(sc, sim.StepTransfer) {
		// The transfer step's far end: UDP echo (RFC 862) on the N6 gateway.
		echo, err := startUDPEcho(netip.AddrPortFrom(dnTarget, 7))
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
	scfg.DataTarget = dnTarget
	scfg.TransferEcho = true
	// A short transfer paced under the ims session AMBR (10 Mbit/s in the
	// demo subscription), so the QER's MBR policing does not drop it.
	scfg.TransferBytes, scfg.TransferRate = 128<<10, 8_000_000
	scfg.N3Addrs = gnbN3
	if w := c.Capture(); w != nil {
		scfg.N3Tap = w
	}
	// Each step is reported as it ends, so that a long run shows progress
	// and an interrupted one has said what it did.
	scfg.AfterStep = func(s sim.StepResult) {
		fmt.Printf("  step %-11s %4d ok  %3d failed  %3d skipped  all UEs in %v\n", s.Step, s.OK, s.Failed, s.Skipped, s.Wall.Round(time.Microsecond))
	}
	start := time.Now()
	res, err := sim.Run(ctx, scfg)
	if res == nil {
		return err
	}
	// An interrupted run (Ctrl-C) has deregistered its UEs and still
	// reports what it did, as tern sim does.
	elapsed := time.Since(start)

	fmt.Println()
	report.WriteTable(os.Stdout, "Procedures (latency windows of the L25GC paper, measured at the simulated RAN):", res.Summaries)
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
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted: the report is of what ran; the UEs were deregistered")
	}
	if err != nil {
		return err
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

// demoAddresses gives the demo's core addresses of its own in 127/8 for
// the well-known ports (freeport.Loopback), as the N2 port is drawn free:
// N2, the UPF's N3 (GTP-U 2152) and, with capture, N4 over PFCP/UDP
// (TS 29.244, port 8805) instead of the direct binding, so that the
// capture shows it. A `tern up`, a `tern sim` or another demo beside it
// holds 127.0.0.1:2152 and :8805, the gNBs' 127.0.1.x:2152 and, where the
// kernel has SCTP, 127.0.0.1:38412. It returns the gNBs' N3 addresses,
// one address each, for a UPF sends downlink to port 2152 of the
// address in the tunnel.
func demoAddresses(cfg *config.Config, pfcpOverUDP bool, gnbs int) (gnbN3 []string) {
	taken := map[netip.Addr]bool{}
	draw := func() netip.Addr {
		for {
			if a := freeport.Loopback(); !taken[a] {
				taken[a] = true
				return a
			}
		}
	}
	cfg.AMF.N2Address = netip.AddrPortFrom(draw(), 38412).String()
	n3 := draw()
	cfg.UPF.N3Addr = netip.AddrPortFrom(n3, gtpu.Port).String()
	// The SMF's UPF list is the defaults' slice: copied, not written to.
	upfs := slices.Clone(cfg.SMF.UPFs)
	upfs[0].N3 = n3.String()
	if pfcpOverUDP {
		smfN4 := draw().String()
		cfg.SMF.NodeID, cfg.SMF.N4Address = smfN4, smfN4
		cfg.UPF.PFCPAddr = netip.AddrPortFrom(draw(), pfcp.Port).String()
		upfs[0].N4 = cfg.UPF.PFCPAddr
	}
	cfg.SMF.UPFs = upfs
	for range gnbs {
		gnbN3 = append(gnbN3, netip.AddrPortFrom(draw(), gtpu.Port).String())
	}
	return gnbN3
}

// demoN6 gives the demo's N6 devices names of this process's and each
// DNN a UE pool that no device of this network namespace has (the
// default one where it is free), so that the demo runs beside a `tern up`
// and leaves its routes alone (a UPF refuses a pool routed elsewhere,
// upf/portable.PoolInUseError). It returns the internet DNN's N6 gateway,
// the first host of its pool, which the SMF never hands out: the data
// steps' target.
func demoN6(cfg *config.Config) (netip.Addr, error) {
	n6 := slices.Clone(cfg.UPF.N6)
	dnns := slices.Clone(cfg.SMF.DNNs)
	var chosen []netip.Prefix
	target := netip.MustParseAddr(sim.DefaultDataTarget)
	for i := range n6 {
		// At most 15 bytes: "tdemo" + 7 digits + "-" + 2.
		n6[i].TUN = fmt.Sprintf("tdemo%d-%d", os.Getpid()%10_000_000, i)
		def, err := netip.ParsePrefix(n6[i].Pool)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("demo: upf.n6[%d].pool: %w", i, err)
		}
		pool, err := freePool(def, chosen)
		if err != nil {
			return netip.Addr{}, err
		}
		chosen = append(chosen, pool)
		n6[i].Pool = pool.String()
		if k := slices.IndexFunc(dnns, func(d smf.DNNConfig) bool { return d.Name == n6[i].DNN }); k >= 0 {
			dnns[k].Pool = pool.String()
		}
		if n6[i].DNN == "internet" {
			target = pool.Masked().Addr().Next()
		}
	}
	cfg.UPF.N6, cfg.SMF.DNNs = n6, dnns
	return target, nil
}

// freePool is def if no device has any of its addresses and it overlaps
// none of taken, else the first prefix of its size after it, up to
// 10.255.255.255, that is.
func freePool(def netip.Prefix, taken []netip.Prefix) (netip.Prefix, error) {
	def = def.Masked()
	size := uint32(1) << (32 - def.Bits())
	for p := def; p.IsValid() && p.Addr().As4()[0] == def.Addr().As4()[0]; {
		free := !slices.ContainsFunc(taken, p.Overlaps)
		if free {
			inUse, err := portable.PoolRoute(p)
			if errors.Is(err, errors.ErrUnsupported) {
				return def, nil // no routes to look at: no N6 devices either
			}
			if err != nil {
				return netip.Prefix{}, fmt.Errorf("demo: UE pools: %w", err)
			}
			free = inUse == nil
		}
		if free {
			return p, nil
		}
		b := p.Addr().As4()
		next := binary.BigEndian.Uint32(b[:]) + size
		if next < size { // wrapped
			break
		}
		p = netip.PrefixFrom(netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, next))), def.Bits())
	}
	return netip.Prefix{}, fmt.Errorf("demo: no free UE pool of /%d in %d.0.0.0/8 for %s: every one is routed already", def.Bits(), def.Addr().As4()[0], def)
}

// n6Summary lists the N6 devices and their pools.
func n6Summary(cfg config.Config) string {
	if cfg.UPF.NoN6 || os.Geteuid() != 0 {
		return "no N6 devices"
	}
	var s []string
	for _, n := range cfg.UPF.N6 {
		s = append(s, fmt.Sprintf("%s %s on %s", n.DNN, n.Pool, n.TUN))
	}
	return strings.Join(s, ", ")
}

func n4Mode(cfg config.Config) string {
	if cfg.UPF.PFCPAddr != "" {
		return "PFCP over UDP " + cfg.UPF.PFCPAddr
	}
	return "direct (in-process)"
}
