package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/sim"
)

// runSim is `tern sim`: gNBs and UEs against an AMF, printing per-procedure
// latency and optionally writing the benchmarks.md JSON document.
func runSim(args []string) error {
	d := sim.DefaultConfig()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tern sim [flags]\n\nSimulated gNBs and UEs register/deregister against an AMF and report latency.\n\n")
		fs.PrintDefaults()
	}
	var (
		amf         = fs.String("amf", d.AMFAddr, "AMF N2 address (SCTP port)")
		transport   = fs.String("transport", "auto", "SCTP transport: auto, kernel or udp (SCTP over UDP, RFC 6951)")
		udpPort     = fs.Int("udp-port", sctp.DefaultUDPPort, "UDP encapsulation port for --transport udp")
		gnbs        = fs.Int("gnbs", d.GNBs, "number of gNBs (one SCTP association each)")
		ues         = fs.Int("ues", d.UEs, "number of UEs")
		concurrency = fs.Int("concurrency", d.Concurrency, "UEs running a procedure at once")
		scenario    = fs.String("scenario", "register+deregister", "register, register+deregister, register+switchoff, register+reregister, or steps: register,deregister,reregister,switchoff")
		jsonPath    = fs.String("json", "", "write the result (benchmarks.md format) to this file")
		plmn        = fs.String("plmn", d.PLMN.String(), "PLMN (MCC+MNC)")
		tac         = fs.Uint("tac", uint(d.TAC), "tracking area code")
		slices      = fs.String("slices", "1-010203", "comma-separated S-NSSAIs: SST or SST-SD (hex)")
		gnbID       = fs.Uint("gnb-id", uint(d.GNBID), "first gNB ID")
		imsi        = fs.String("imsi", d.FirstIMSI, "first IMSI (15 digits); UE i gets IMSI+i")
		k           = fs.String("k", sim.DefaultK, "subscriber key K (hex)")
		opc         = fs.String("opc", sim.DefaultOPc, "OPc (hex)")
		sqn         = fs.Uint64("sqn", 0, "the USIMs' highest accepted SQN at start")
		scheme      = fs.String("suci-scheme", "null", "SUCI protection scheme: null, a (profile A, X25519) or b (profile B, P-256)")
		hnPub       = fs.String("hn-pubkey", "", "home network public key (hex) for --suci-scheme a|b; default: the demo key of `tern up`")
		hnKeyID     = fs.Uint("hn-key-id", 0, "home network public key identifier; default: the demo key's (1 for a, 2 for b)")
		routing     = fs.String("routing-indicator", "0000", "SUCI routing indicator")
		nea         = fs.String("nea", "0,1,2,3", "ciphering algorithms the UEs accept (NEA ids)")
		nia         = fs.String("nia", "0,1,2,3", "integrity algorithms the UEs accept (NIA ids)")
		timeout     = fs.Duration("timeout", d.Timeout, "time limit of one procedure of one UE")
		verbose     = fs.Bool("v", false, "log protocol events (debug level)")
		cpuProfile  = fs.String("cpuprofile", "", "write a CPU profile of the simulator to this file")
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

	cfg := d
	cfg.AMFAddr = *amf
	cfg.Transport = sctp.Config{Transport: sctp.Transport(*transport), UDPPort: *udpPort}
	cfg.GNBs, cfg.UEs, cfg.Concurrency = *gnbs, *ues, *concurrency
	cfg.TAC, cfg.GNBID, cfg.FirstIMSI, cfg.SQN = uint32(*tac), uint32(*gnbID), *imsi, *sqn
	cfg.RoutingIndicator, cfg.HNKeyID, cfg.Timeout = *routing, uint8(*hnKeyID), *timeout
	var err error
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	if err != nil {
		return err
	}
	title := fmt.Sprintf("tern sim: %d UEs, %d gNBs, concurrency %d, scenario %s, AMF %s (%s)",
		cfg.UEs, cfg.GNBs, cfg.Concurrency, cfg.Scenario, cfg.AMFAddr, report.ThisMachine())
	report.WriteTable(os.Stdout, title, res.Summaries)
	for _, s := range res.Steps {
		fmt.Printf("step %-10s ok %d failed %d skipped %d, wall %.1f ms\n",
			s.Step, s.OK, s.Failed, s.Skipped, float64(s.Wall)/float64(time.Millisecond))
	}
	shown := 0
	for _, u := range res.UEs {
		if u.Err != "" && shown < 5 {
			fmt.Printf("  %s failed at %s: %s\n", u.SUPI, u.FailedStep, u.Err)
			shown++
		}
	}
	fmt.Printf("total %.1f ms\n", float64(time.Since(start))/float64(time.Millisecond))

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
	return nil
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
