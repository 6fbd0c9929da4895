package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
)

// runSim is `tern sim`: gNBs and UEs against an AMF, printing per-procedure
// latency and optionally writing the benchmarks.md JSON document.
func runSim(args []string) error {
	d := sim.DefaultConfig()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: tern sim [flags]

Simulated gNBs and UEs run a scenario (registration, PDU sessions, data)
against an AMF and report latency.

In the namespace lab (tern lab up), with the core started by
"ip netns exec tern-core tern up --lab":

  ip netns exec tern-ran tern sim --lab --hold --tun --ues 2 --dnns internet,ims

registers the UEs, gives each session a TUN device, prints each session as
it comes up and then
  tern sim ready: 4 PDU sessions held (...): SUPI DNN IP TUN, ...
(SUPI DNN IP without --tun), then waits for SIGINT/SIGTERM before
releasing and deregistering; a UE the network deregisters meanwhile is
printed with the cause. Meanwhile
  ip netns exec tern-ran ping -I uesimtun0 192.0.2.1
  ip netns exec tern-ran curl --interface uesimtun1 http://192.0.2.1:8080/
  ip netns exec tern-ran iperf3 -c 192.0.2.1 --bind-dev uesimtun0 -B <IP>
run over the sessions.

Handover: with --gnbs 2 or more (each a neighbour of the others) and
--tac-step 1 (consecutive gNBs in different TAs, which the AMF must serve),
  tern sim --gnbs 2 --tac-step 1 --ues 10 --scenario handover
moves every UE to the next gNB by Xn, then by N2 handover, each followed by
a mobility registration update; --handover-every moves UEs in the
background while any scenario runs.

`)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n--scenario takes a named scenario or comma-separated steps.\n%s", sim.ScenarioHelp())
	}
	var (
		amf         = fs.String("amf", d.AMFAddr, "AMF N2 address (SCTP port)")
		transport   = fs.String("transport", "auto", "SCTP transport: auto, kernel or udp (SCTP over UDP, RFC 6951)")
		udpPort     = fs.Int("udp-port", sctp.DefaultUDPPort, "UDP encapsulation port for --transport udp")
		gnbs        = fs.Int("gnbs", d.GNBs, "number of gNBs (one SCTP association each)")
		ues         = fs.Int("ues", d.UEs, "number of UEs")
		concurrency = fs.Int("concurrency", d.Concurrency, "UEs running a procedure at once")
		scenario    = fs.String("scenario", "session+ping", "a named scenario or comma-separated steps (listed below)")
		jsonPath    = fs.String("json", "", "write the result (benchmarks.md format) to this file")
		plmn        = fs.String("plmn", d.PLMN.String(), "PLMN (MCC+MNC)")
		tac         = fs.Uint("tac", uint(d.TAC), "tracking area code (of the first gNB with --tac-step)")
		tacStep     = fs.Uint("tac-step", 0, "gNB i serves TAC tac + i*step (0: all gNBs in one TA); consecutive gNBs in different TAs make handovers run registration updates")
		tacs        = fs.String("tacs", "", "comma-separated TACs: gNB i serves entry i mod n (overrides --tac-step; repeat a TAC for gNBs sharing a TA)")
		slices      = fs.String("slices", "1-010203", "comma-separated S-NSSAIs: SST or SST-SD (hex)")
		gnbID       = fs.Uint("gnb-id", uint(d.GNBID), "first gNB ID")
		imsi        = fs.String("imsi", d.FirstIMSI, "first IMSI (15 digits); UE i gets IMSI+i")
		k           = fs.String("k", sim.DefaultK, "subscriber key K (hex)")
		opc         = fs.String("opc", sim.DefaultOPc, "OPc (hex)")
		sqn         = fs.Uint64("sqn", 0, "the USIMs' highest accepted SQN at start")
		scheme      = fs.String("suci-scheme", "null", "SUCI protection scheme: null, a (profile A, X25519) or b (profile B, P-256)")
		hnPub       = fs.String("hn-pubkey", "", "home network public key (hex) for --suci-scheme a|b; default: the demo key of tern up's default configuration")
		hnKeyID     = fs.Uint("hn-key-id", 0, "home network public key identifier; default: the demo key's (1 for a, 2 for b)")
		routing     = fs.String("routing-indicator", "0000", "SUCI routing indicator")
		nea         = fs.String("nea", "0,1,2,3", "ciphering algorithms the UEs accept (NEA ids)")
		nia         = fs.String("nia", "0,1,2,3", "integrity algorithms the UEs accept (NIA ids)")
		timeout     = fs.Duration("timeout", d.Timeout, "time limit of one procedure of one UE")
		verbose     = fs.Bool("v", false, "log protocol events (debug level)")
		cpuProfile  = fs.String("cpuprofile", "", "write a CPU profile of the simulator to this file")

		labMode      = fs.Bool("lab", false, "run in the ran namespace of 'tern lab up': AMF "+lab.CoreN3.String()+":38412 over SCTP over UDP, gNB N3 "+lab.RANN3.String()+":2152 (gNB i>0: 10.100.3.(10+i), added to n3), data target "+lab.DNServer.String())
		labPrefix    = fs.String("prefix", "tern", "with --lab: the lab's namespace prefix; tern sim must run in <prefix>-ran")
		hold         = fs.Bool("hold", false, "after the scenario (default then: register,session), print the sessions (SUPI, DNN, IP, TUN) on one ready line, wait for SIGINT/SIGTERM, then release and deregister")
		dnns         = fs.String("dnns", strings.Join(d.DNNs, ","), "comma-separated DNNs: the session step establishes one PDU session on each")
		n3           = fs.String("n3", "", "the gNBs' GTP-U addresses (IP:port, gNB i uses entry i mod n; a fixed port needs one per gNB); default 127.0.1.(i+1):2152 for gNB i, beside the UPF's 127.0.0.1:2152")
		dataTarget   = fs.String("data-target", d.DataTarget.String(), "data network host of the ping and transfer steps")
		tun          = fs.Bool("tun", false, "give each PDU session a TUN device with policy routing from its address (needs root)")
		tunPrefix    = fs.String("tun-prefix", d.TUNPrefix, "TUN device names: prefix + a number")
		pingCount    = fs.Int("ping-count", d.PingCount, "ICMP echo requests per session in the ping step")
		xferBytes    = fs.Int("transfer-bytes", d.TransferBytes, "UDP payload bytes per session in the transfer step")
		transferEcho = fs.Bool("transfer-echo", false, "the data target echoes UDP on port 7 (count received and lost datagrams)")

		inactivity  = fs.Duration("inactivity", 0, "release a connected UE without user-plane packets for this long to CM-IDLE (0: never)")
		periodic    = fs.Bool("periodic-registration", false, "run periodic registration (T3512 from the Registration Accept) in CM-IDLE")
		hoEvery     = fs.Duration("handover-every", 0, "while the scenario runs, hand the next connected UE with a PDU session to its next gNB this often (0: off)")
		hoKind      = fs.String("handover-kind", sim.HandoverKindXn, "kind of the --handover-every moves: xn, n2 or random")
		hoInterrupt = fs.Duration("handover-interruption", 0, "time a UE spends between gNBs in a handover (RRC reconfiguration and random access); inside the handover-n2 window")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected arguments %q", fs.Args())
	}
	if err := checkFlags(
		intIn("udp-port", *udpPort, 1, 65535),
		atLeast("gnbs", *gnbs, 1),
		atLeast("ues", *ues, 0), // 0: gNBs only (NG Setup)
		atLeast("concurrency", *concurrency, 1),
		uintAtMost("tac", uint64(*tac), 1<<24-1), // TS 38.413 §9.3.3.10: 3 octets
		uintAtMost("tac-step", uint64(*tacStep), 1<<24-1),
		uintAtMost("gnb-id", uint64(*gnbID), 1<<32-1), // TS 38.413 §9.3.1.6: at most 32 bits
		uintAtMost("hn-key-id", uint64(*hnKeyID), 255),
		positiveDuration("timeout", *timeout),
		atLeast("ping-count", *pingCount, 0),
		atLeast("transfer-bytes", *xferBytes, 0),
		nonNegativeDuration("inactivity", *inactivity),
		nonNegativeDuration("handover-every", *hoEvery),
		nonNegativeDuration("handover-interruption", *hoInterrupt),
	); err != nil {
		return err
	}

	cfg := d
	cfg.AMFAddr = *amf
	cfg.Transport = sctp.Config{Transport: sctp.Transport(*transport), UDPPort: *udpPort}
	cfg.GNBs, cfg.UEs, cfg.Concurrency = *gnbs, *ues, *concurrency
	cfg.TAC, cfg.GNBID, cfg.FirstIMSI, cfg.SQN = uint32(*tac), uint32(*gnbID), *imsi, *sqn
	cfg.RoutingIndicator, cfg.HNKeyID, cfg.Timeout = *routing, uint8(*hnKeyID), *timeout
	cfg.DNNs = splitList(*dnns)
	cfg.N3Addrs = splitList(*n3)
	if len(cfg.N3Addrs) == 0 {
		// A UPF sends downlink to port 2152 of the DL tunnel's address:
		// each gNB needs an address of its own (--lab picks the lab's).
		cfg.N3Addrs = sim.LoopbackN3Addrs(cfg.GNBs)
	}
	cfg.TUN, cfg.TUNPrefix, cfg.PingCount, cfg.TransferBytes, cfg.TransferEcho = *tun, *tunPrefix, *pingCount, *xferBytes, *transferEcho
	cfg.InactivityTimeout, cfg.PeriodicRegistration = *inactivity, *periodic
	cfg.HandoverEvery, cfg.HandoverKind, cfg.HandoverInterruption = *hoEvery, *hoKind, *hoInterrupt
	cfg.TACStep = uint32(*tacStep)
	var err error
	if cfg.TACs, err = parseTACs(*tacs); err != nil {
		return fmt.Errorf("sim: --tacs: %w", err)
	}
	if cfg.DataTarget, err = netip.ParseAddr(*dataTarget); err != nil {
		return fmt.Errorf("sim: --data-target: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *hold && !set["scenario"] {
		*scenario = "register,session"
	}
	if cfg.PLMN, err = identity.ParsePLMN(*plmn); err != nil {
		return fmt.Errorf("sim: --plmn: %w", err)
	}
	if cfg.Slices, err = parseSlices(*slices); err != nil {
		return fmt.Errorf("sim: --slices: %w", err)
	}
	if cfg.Scenario, err = sim.ParseScenario(*scenario); err != nil {
		return fmt.Errorf("sim: --scenario: %w", err)
	}
	if cfg.K, err = hex.DecodeString(*k); err != nil || len(cfg.K) != 16 {
		return fmt.Errorf("sim: --k: want 32 hex digits")
	}
	if cfg.OPc, err = hex.DecodeString(*opc); err != nil || len(cfg.OPc) != 16 {
		return fmt.Errorf("sim: --opc: want 32 hex digits")
	}
	if cfg.SUCIScheme, err = parseScheme(*scheme); err != nil {
		return fmt.Errorf("sim: --suci-scheme: %w", err)
	}
	if *hnPub != "" {
		if cfg.HNPublicKey, err = hex.DecodeString(*hnPub); err != nil {
			return fmt.Errorf("sim: --hn-pubkey: %w", err)
		}
	}
	if cfg.EA, err = parseAlgs(*nea); err != nil {
		return fmt.Errorf("sim: --nea: %w", err)
	}
	if cfg.IA, err = parseAlgs(*nia); err != nil {
		return fmt.Errorf("sim: --nia: %w", err)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	held := &heldSessions{}
	if *hold {
		// Each session is shown as it comes up, TUN or not: a hold is for
		// using the sessions, which needs their addresses.
		held.out = os.Stdout
	}
	cfg.OnSession = held.add
	cfg.OnDeregistered = printNetworkDeregistration(os.Stdout)
	if *labMode {
		if err := checkNamespace(*labPrefix + "-ran"); err != nil {
			return err
		}
		cleanup, err := labSimConfig(&cfg, set)
		if err != nil {
			return err
		}
		defer cleanup()
	} else if !set["data-target"] {
		cfg.NoDownlink = noDownlinkReason(cfg)
	}

	// SIGINT/SIGTERM ends a hold (the sessions are then released and the
	// UEs deregistered); otherwise, or the second time, it stops the run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var holding atomic.Bool
	release := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				if holding.CompareAndSwap(true, false) {
					close(release)
					continue
				}
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	if *hold {
		// The hold ends with release and deregistration: the scenario
		// before it must leave the UEs registered.
		if last := cfg.Scenario[len(cfg.Scenario)-1]; last == sim.StepDeregister || last == sim.StepSwitchOff {
			return fmt.Errorf("sim: --hold: scenario %s ends with %s; the hold releases and deregisters after it", cfg.Scenario, last)
		}
		before := len(cfg.Scenario)
		cfg.Scenario = append(cfg.Scenario, sim.StepRelease, sim.StepDeregister)
		done := 0
		cfg.AfterStep = func(sr sim.StepResult) {
			if done++; done != before {
				return
			}
			holding.Store(true)
			fmt.Println(held.readyLine())
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("sim: --cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("sim: --cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	res, err := sim.Run(ctx, cfg)
	if res == nil {
		return err
	}
	// An interrupted run (Ctrl-C) still reports what it did.
	title := fmt.Sprintf("tern sim: %d UEs, %d gNBs, concurrency %d, scenario %s, AMF %s (%s)",
		cfg.UEs, cfg.GNBs, cfg.Concurrency, cfg.Scenario, cfg.AMFAddr, report.ThisMachine())
	report.WriteTable(os.Stdout, title, res.Summaries)
	for _, s := range res.Steps {
		fmt.Printf("step %-10s ok %d failed %d skipped %d, wall %v\n",
			s.Step, s.OK, s.Failed, s.Skipped, s.Wall.Round(time.Microsecond))
	}
	shown := 0
	for _, u := range res.UEs {
		if u.Err != "" && shown < 5 {
			fmt.Printf("  %s failed at %s: %s\n", u.SUPI, u.FailedStep, u.Err)
			shown++
		}
	}
	for _, g := range res.GNBs {
		if h := g.Counters.Handover; h.N2Started+h.N2Admitted+h.PathSwitches > 0 {
			fmt.Printf("gnb %d (tac %d): N2 out %d (%d completed, %d preparation failures), N2 in %d, Xn in %d (%d failed); forwarded %d, held %d, dropped %d\n",
				g.ID, g.TAC, h.N2Started, h.N2Completed, h.N2PreparationFailures, h.N2Admitted, h.PathSwitches, h.PathSwitchFailures,
				h.Forwarded, h.Held, h.ForwardDropped+h.HeldDropped)
		}
	}
	if m := res.Mobility; m.Attempted+m.Skipped > 0 {
		fmt.Printf("background handovers: %d started (%d xn, %d n2), %d moved, %d failed, %d ticks skipped\n",
			m.Attempted, m.Xn, m.N2, m.Moved, m.Failed, m.Skipped)
	}
	printUserPlane(cfg, res)
	fmt.Printf("total %v\n", time.Since(start).Round(time.Millisecond))
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted: the summary is of what ran; the UEs were deregistered")
	}
	if err != nil {
		return err
	}

	if *jsonPath != "" {
		doc := report.NewDoc("sim", map[string]any{
			"ues": cfg.UEs, "gnbs": cfg.GNBs, "concurrency": cfg.Concurrency,
			"scenario": cfg.Scenario.String(), "amf": cfg.AMFAddr, "transport": *transport,
			"suci_scheme": cfg.SUCIScheme.String(),
		})
		for _, s := range res.Summaries {
			doc.Add(report.LatencyResult(s, *transport, res.Recorder.Samples(s.Procedure)))
		}
		seen := map[string]int{}
		for i, s := range res.Steps {
			// The wall time of a whole step; a procedure repeated in the
			// scenario gets "-all-2", "-all-3", ...
			name := s.Procedure + "-all"
			if seen[name]++; seen[name] > 1 {
				name = fmt.Sprintf("%s-%d", name, seen[name])
			}
			doc.Add(report.Result{
				Name: name, Variant: *transport, Unit: "ms", Count: s.OK, Failures: s.Failed,
				Median: float64(s.Wall) / float64(time.Millisecond),
				P90:    float64(s.Wall) / float64(time.Millisecond),
				P99:    float64(s.Wall) / float64(time.Millisecond),
				Max:    float64(s.Wall) / float64(time.Millisecond),
				Extra:  map[string]any{"what": "wall time of the whole step over all UEs", "step": i + 1, "skipped": s.Skipped},
			})
		}
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
	}
	if n := res.Failures(); n > 0 {
		return fmt.Errorf("sim: %d procedure runs failed", n)
	}
	if ei := n3Total(res).ErrorIndications; cfg.NoDownlink != "" && ei > 0 {
		return fmt.Errorf("sim: the UPF answered uplink with %d GTP-U Error Indications", ei)
	}
	return nil
}

// noDownlinkReason says why no reply can come back from cfg's data target,
// or "" when one can. The default target is the N6 gateway of a `tern up`
// on this machine, an address its UPF's TUN device holds: when no
// interface here has it, that UPF runs without N6 (tern up is not root)
// and drops the uplink at its N6 side, so only the uplink can be checked.
func noDownlinkReason(cfg sim.Config) string {
	host, _, err := net.SplitHostPort(cfg.AMFAddr)
	if ip, perr := netip.ParseAddr(host); err != nil || perr != nil || !ip.IsLoopback() {
		return "" // a core elsewhere: its N6 is not visible from here
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == cfg.DataTarget {
			return ""
		}
	}
	return fmt.Sprintf("no interface here has %s, the UPF's N6 gateway: tern up runs its UPF without N6 devices "+
		"when it is not root, so no reply can come back (run tern up as root for round trips)", cfg.DataTarget)
}

// n3Total sums the gNBs' GTP-U counters.
func n3Total(res *sim.Result) gnb.N3Counters {
	var t gnb.N3Counters
	for _, g := range res.GNBs {
		t.Uplink += g.N3.Uplink
		t.Downlink += g.N3.Downlink
		t.ErrorIndications += g.N3.ErrorIndications
	}
	return t
}

// printUserPlane reports the data steps: what went up N3, what came back.
func printUserPlane(cfg sim.Config, res *sim.Result) {
	d := res.Data
	if d.PingSent == 0 && d.TransferPacketsSent == 0 {
		return
	}
	n3 := n3Total(res)
	fmt.Printf("user plane: %d PDU sessions; N3 %d G-PDUs up, %d down, %d Error Indications from the UPF\n",
		d.Sessions, n3.Uplink, n3.Downlink, n3.ErrorIndications)
	if d.PingSent > 0 {
		fmt.Printf("  ping %s: %d sent, %d answered, %d lost\n", cfg.DataTarget, d.PingSent, d.PingReceived, d.PingLost)
	}
	if d.TransferPacketsSent > 0 {
		fmt.Printf("  transfer %s: %d datagrams (%d B) sent, %d echoed, %.1f Mbit/s offered\n",
			cfg.DataTarget, d.TransferPacketsSent, d.TransferBytesSent, d.TransferPacketsReceived, d.TransferBps/1e6)
	}
	if cfg.NoDownlink != "" {
		fmt.Printf("  uplink only: the UPF took the uplink without an Error Indication; downlink not checked: %s\n", cfg.NoDownlink)
	}
}

// labSimConfig points cfg at the lab (package lab) from the ran namespace,
// leaving alone what the command line set explicitly. gNBs after the first
// get addresses of their own on ran's N3 link; cleanup removes them.
func labSimConfig(cfg *sim.Config, set map[string]bool) (cleanup func(), err error) {
	cleanup = func() {}
	if !set["amf"] {
		cfg.AMFAddr = net.JoinHostPort(lab.CoreN3.String(), strconv.Itoa(ngapPort))
	}
	if !set["transport"] {
		cfg.Transport.Transport = sctp.TransportUDP
	}
	if !set["data-target"] {
		cfg.DataTarget = lab.DNServer
	}
	if set["n3"] {
		return cleanup, nil
	}
	link, err := netlink.LinkByName(lab.N3Link)
	if err != nil {
		return cleanup, fmt.Errorf("sim --lab: N3 link %s: %w", lab.N3Link, err)
	}
	var added []*netlink.Addr
	cleanup = func() {
		for _, a := range added {
			netlink.AddrDel(link, a)
		}
	}
	cfg.N3Addrs = cfg.N3Addrs[:0:0]
	for i := 0; i < cfg.GNBs; i++ {
		ip, ok := lab.GNBN3(i)
		if !ok {
			cleanup()
			return func() {}, fmt.Errorf("sim --lab: %d gNBs: the lab's N3 /24 has addresses for %d", cfg.GNBs, i)
		}
		cfg.N3Addrs = append(cfg.N3Addrs, netip.AddrPortFrom(ip, gtpu.Port).String())
		if i == 0 {
			continue // lab.Up made it
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(24, 32)}}
		if err := netlink.AddrAdd(link, a); err != nil && !errors.Is(err, syscall.EEXIST) {
			cleanup()
			return func() {}, fmt.Errorf("sim --lab: add %s to %s: %w", ip, lab.N3Link, err)
		} else if err == nil {
			added = append(added, a)
		}
	}
	return cleanup, nil
}

// heldSessions collects the PDU sessions the simulator reports through
// sim.Config.OnSession: sim.Result lists them only once Run returns, and a
// hold needs them while the run waits between steps.
type heldSessions struct {
	// out, when set, gets a line for each session as it comes up.
	out io.Writer

	mu  sync.Mutex
	ues []string                        // SUPIs in order of first session
	by  map[string][]sim.SessionOutcome // in establishment order
	n   int
}

func (l *heldSessions) add(supi string, s sim.SessionOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]sim.SessionOutcome{}
	}
	if _, ok := l.by[supi]; !ok {
		l.ues = append(l.ues, supi)
	}
	l.by[supi] = append(l.by[supi], s)
	l.n++
	if l.out != nil {
		fmt.Fprintf(l.out, "tern sim: PDU session up: %s\n", describeSession(supi, s))
	}
}

// describeSession is "SUPI DNN IP", with the TUN device in TUN mode.
func describeSession(supi string, s sim.SessionOutcome) string {
	d := fmt.Sprintf("%s %s %s", supi, s.DNN, s.Address)
	if s.TUN != "" {
		d += " " + s.TUN
	}
	return d
}

// readyLine is the hold's ready line: "tern sim ready: N PDU sessions held
// (...): SUPI DNN IP [TUN], SUPI DNN IP [TUN], ...".
func (l *heldSessions) readyLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, supi := range l.ues {
		for _, s := range l.by[supi] {
			parts = append(parts, describeSession(supi, s))
		}
	}
	return fmt.Sprintf("tern sim ready: %d PDU sessions held (SIGINT or SIGTERM releases them): %s", l.n, strings.Join(parts, ", "))
}

// printNetworkDeregistration is sim.Config.OnDeregistered for tern sim:
// a line on w for each UE the network deregisters, with the 5GMM cause
// by name (TS 24.501 §5.5.2.3), so that a hold does not lose UEs
// silently.
func printNetworkDeregistration(w io.Writer) func(supi string, cause nas.Cause5GMM, reregister bool) {
	return func(supi string, cause nas.Cause5GMM, reregister bool) {
		why := "no cause given"
		if cause != 0 {
			why = "5GMM cause " + cause.String()
		}
		then := "it does not register again"
		if reregister {
			then = "it registers again"
		}
		fmt.Fprintf(w, "tern sim: %s deregistered by the network, %s; %s\n", supi, why, then)
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseTACs reads "1,2,2,3"; "" is none.
func parseTACs(s string) ([]uint32, error) {
	var out []uint32
	for _, p := range splitList(s) {
		n, err := strconv.ParseUint(p, 0, 24)
		if err != nil {
			return nil, fmt.Errorf("%q: want 24-bit TACs", p)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

func parseSlices(s string) ([]identity.SNSSAI, error) {
	var out []identity.SNSSAI
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := identity.ParseSNSSAI(p)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no slice")
	}
	return out, nil
}

func parseScheme(s string) (suci.Scheme, error) {
	switch strings.ToLower(s) {
	case "null", "0":
		return suci.SchemeNull, nil
	case "a", "profile-a", "1":
		return suci.SchemeProfileA, nil
	case "b", "profile-b", "2":
		return suci.SchemeProfileB, nil
	}
	return 0, fmt.Errorf("%q: want null, a or b", s)
}

// parseAlgs turns "0,2" into the TS 24.501 §9.11.3.54 bitmap (bit 8 = algorithm 0).
func parseAlgs(s string) (uint8, error) {
	var m uint8
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 7 {
			return 0, fmt.Errorf("%q: want algorithm ids 0-7", s)
		}
		m |= 0x80 >> n
	}
	return m, nil
}
