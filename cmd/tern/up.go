package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/failover"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/metrics"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/sctp"
)

// runUp starts the core and runs it until SIGINT or SIGTERM.
func runUp(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return up(ctx, args, os.Stdout)
}

// up runs the core until ctx ends, printing its ready line to stdout.
func up(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration file (default: embedded defaults)")
	storePath := fs.String("store", "", "subscriber store file (overrides store.path)")
	capture := fs.String("capture", "", "write N2 (SCTP over UDP) to this pcap file")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides log.level)")
	n2 := fs.String("n2", "", "N2 listen address, IP:SCTP-port (overrides amf.n2Address)")
	udpPort := fs.Int("udp-port", 0, "SCTP-over-UDP encapsulation port (overrides amf.sctp; default 9899)")
	demoSubs := fs.Int("demo-subscribers", -1, "provision this many demo subscribers (overrides store.demoSubscribers)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the core to this file until it stops")
	labMode := fs.Bool("lab", false, "configure for the core namespace of 'tern lab up': N2 "+lab.CoreN3.String()+":38412 (SCTP over UDP 9899), N3 "+lab.CoreN3.String()+":2152, N6 TUNs tern-<dnn>")
	labPrefix := fs.String("prefix", "tern", "with --lab: the lab's namespace prefix; tern up must run in <prefix>-core")
	metricsAddr := fs.String("metrics", "", "serve /metrics, /healthz and /readyz on this address, host:port (overrides metrics.address)")
	sbiBinding := fs.String("sbi", "", "how the NFs reach each other: inproc, http (HTTP/2 on loopback) or shm (overrides sbi.binding)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		intIn("udp-port", *udpPort, 0, 65535),
		atLeast("demo-subscribers", *demoSubs, -1),
	); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *labMode {
		if err := checkNamespace(*labPrefix + "-core"); err != nil {
			return err
		}
		if err := labConfig(&cfg); err != nil {
			return err
		}
	}
	if *storePath != "" {
		cfg.Store.Path = *storePath
	}
	if *capture != "" {
		cfg.Capture = *capture
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	if *n2 != "" {
		cfg.AMF.N2Address = *n2
	}
	if *udpPort != 0 {
		cfg.AMF.SCTP.UDPPort = *udpPort
	}
	if *demoSubs >= 0 {
		cfg.Store.DemoSubscribers = *demoSubs
	}
	if *metricsAddr != "" {
		cfg.Metrics.Address = *metricsAddr
	}
	if *sbiBinding != "" {
		cfg.SBI.Binding = *sbiBinding
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(cfg.Log)
	if cfg.Resiliency.Mode == config.ResiliencyLocal {
		return upReplicated(ctx, cfg, log, stdout)
	}

	// Everything that may fail comes before c.Start, whose last step
	// provisions the demo subscribers: a start that fails leaves the store
	// as it found it, and Discard removes one it created (and nobody else
	// uses or filled meanwhile).
	c, err := core.New(cfg, log)
	if err != nil {
		return err
	}
	// The servers beside the core; a failed start stops them before it
	// discards the core, so that nothing of theirs is left in the store's
	// directory.
	var servers []io.Closer
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	fail := func(err error) error {
		for _, s := range servers {
			s.Close()
		}
		servers = nil
		c.Discard()
		return err
	}
	if cfg.Metrics.Address != "" {
		srv, err := metrics.ServeCore(cfg.Metrics.Address, c, log)
		if err != nil {
			return fail(err)
		}
		servers = append(servers, srv)
	}
	// The operator API of tern ue (core/operator.go). Claimed before N2 and
	// N3 are bound: a core already running on this store is named as such.
	op, err := core.StartOperator(cfg, c.OperatorHandler(), log)
	if err != nil {
		return fail(err)
	}
	servers = append(servers, op)
	if err := c.Start(ctx); err != nil {
		return fail(err)
	}
	// The "ready" line is what `tern bench register` waits for: it comes
	// when /readyz would say ready (N2 listening, a UPF associated), not
	// before.
	if awaitReady(ctx, metrics.CoreReady(c), readyQuiet, stdout) {
		st := c.Stats()
		fmt.Fprintf(stdout, "tern core ready: N2 on %s, %d subscribers in %s%s\n", c.N2Addr(), st.Subscribers, cfg.Store.Path, userPlaneSummary(c))
		<-ctx.Done()
	}
	log.Info("shutting down")
	return c.Close()
}

// upReplicated runs the core as an active and a standby unit behind an N2
// front end (resiliency.mode local, docs/resiliency.md) until ctx ends.
func upReplicated(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spawn := func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		return cmd, nil
	}
	s, err := failover.Supervise(ctx, cfg, failover.Hooks{Spawn: spawn, OnTakeover: func(t failover.Takeover) {
		fmt.Fprintln(stdout, failover.TakeoverLine(t))
	}}, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tern core ready: N2 on %s, resiliency %s (active unit pid %d)\n", s.N2Addr(), cfg.Resiliency.Mode, s.ActivePID())
	<-ctx.Done()
	log.Info("shutting down")
	return s.Close()
}

// readyQuiet is how long the core may take to become ready before it says
// what it waits for (an embedded UPF associates within milliseconds; a
// remote one may not be running yet).
const readyQuiet = 2 * time.Second

// awaitReady polls ready until it says ready and returns true, or returns
// false when ctx ends first. Not ready after quiet, it prints once to out
// what it waits for, so that whoever waits for the ready line learns why
// it does not come.
func awaitReady(ctx context.Context, ready metrics.ReadyFunc, quiet time.Duration, out io.Writer) bool {
	start := time.Now()
	said := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ready()
		if err == nil {
			return true
		}
		if !said && time.Since(start) >= quiet {
			said = true
			fmt.Fprintf(out, "tern core started, not ready yet: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// ngapPort is the SCTP port of NGAP (TS 38.412 §7).
const ngapPort = 38412

// labConfig points cfg at the lab's core namespace (package lab): N2 and
// N3 on the core's N3 address, N2 over SCTP over UDP (the kernel here has no
// SCTP, and the simulator in the ran namespace must use the same transport),
// and the embedded UPF's N6 TUNs named as the lab's policy routing expects
// (lab.TUN), with the SMF told where the UPF's N3 is.
func labConfig(cfg *config.Config) error {
	core := lab.CoreN3.String()
	cfg.AMF.N2Address = net.JoinHostPort(core, strconv.Itoa(ngapPort))
	cfg.AMF.SCTP.Transport = sctp.TransportUDP
	cfg.UPF.Embedded = true
	cfg.UPF.NoN6 = false
	cfg.UPF.N3Addr = net.JoinHostPort(core, strconv.Itoa(gtpu.Port))
	i := slices.IndexFunc(cfg.SMF.UPFs, func(u smf.UPFConfig) bool { return u.Name == cfg.UPF.Name })
	if i < 0 {
		return fmt.Errorf("up --lab: upf.name %q is not one of smf.upfs", cfg.UPF.Name)
	}
	upfs := slices.Clone(cfg.SMF.UPFs)
	upfs[i].N3 = core
	cfg.SMF.UPFs = upfs
	n6 := slices.Clone(cfg.UPF.N6)
	for j := range n6 {
		if n6[j].TUN == "" {
			n6[j].TUN = lab.TUN(n6[j].DNN)
		}
	}
	cfg.UPF.N6 = n6
	return nil
}

// checkNamespace fails unless this process runs in network namespace name:
// the lab's addresses exist only there.
func checkNamespace(name string) error {
	want, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("namespace %s: %w (%s lab up --prefix %s first)", name, err, prog(), strings.TrimSuffix(strings.TrimSuffix(name, "-core"), "-ran"))
	}
	defer want.Close()
	cur, err := netns.Get()
	if err != nil {
		return fmt.Errorf("current network namespace: %w", err)
	}
	defer cur.Close()
	if !cur.Equal(want) {
		return fmt.Errorf("not inside namespace %s: run ip netns exec %s %s %s", name, name, prog(), strings.Join(os.Args[1:], " "))
	}
	return nil
}

// userPlaneSummary describes the embedded UPF for the ready line.
func userPlaneSummary(c *core.Core) string {
	if c.UPF == nil {
		return ""
	}
	return fmt.Sprintf(", N3 on %s", c.UPF.N3Addr())
}

func loadConfig(path string) (config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}

func newLogger(c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// runConfig prints the effective configuration as YAML.
func runConfig(args []string) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration file to merge over the defaults")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	b, err := config.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
