package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/metrics"
)

// runNF runs one network function as its own process.
func runNF(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, "usage: tern nf upf --config FILE\n\n"+
			"Runs one NF as its own process. upf: UPF-C and UPF-U, reached by the SMF over PFCP/UDP\n"+
			"at upf.pfcpAddr (set smf.upfs[].n4 to that address and upf.embedded to false in the\n"+
			"configuration of tern up).\n")
		if len(args) == 0 {
			return errors.New("missing NF name")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "upf":
		return runNFUPF(args[1:])
	case "amf", "smf", "ausf", "udm", "udr", "pcf", "nrf", "nssf":
		return fmt.Errorf("%s cannot run as its own process yet: the control-plane NFs call each other in-process and run together in 'tern up'", args[0])
	}
	return fmt.Errorf("unknown NF %q (try: %s nf upf)", args[0], prog())
}

// runNFUPF runs the UPF alone until SIGINT or SIGTERM.
func runNFUPF(args []string) error {
	fs := flag.NewFlagSet("nf upf", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration file: its upf section (default: embedded defaults)")
	pfcpAddr := fs.String("pfcp", "", "PFCP listen address, IP:port (overrides upf.pfcpAddr)")
	n3 := fs.String("n3", "", "N3 GTP-U address, IP:port (overrides upf.n3Addr)")
	noN6 := fs.Bool("no-n6", false, "run without N6 TUN devices (overrides upf.noN6)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides log.level)")
	metricsAddr := fs.String("metrics", "", "serve /metrics, /healthz and /readyz on this address, host:port (overrides upf.metricsAddress)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *pfcpAddr != "" {
		cfg.UPF.PFCPAddr = *pfcpAddr
	}
	if *n3 != "" {
		cfg.UPF.N3Addr = *n3
	}
	if *noN6 {
		cfg.UPF.NoN6 = true
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	if *metricsAddr != "" {
		cfg.UPF.MetricsAddress = *metricsAddr
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.UPF.PFCPAddr == "" {
		return errors.New("upf.pfcpAddr (or --pfcp) is required: the SMF reaches a UPF of its own over PFCP/UDP")
	}
	log := newLogger(cfg.Log).With("nf", "upf")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	u, err := core.NewUPF(cfg.UPF.Config, log)
	if err != nil {
		return err
	}
	if err := u.Start(ctx); err != nil {
		return err
	}
	if cfg.UPF.MetricsAddress != "" {
		srv, err := metrics.ServeUPF(cfg.UPF.MetricsAddress, u, log)
		if err != nil {
			u.Close()
			return err
		}
		defer srv.Close()
	}
	// The "ready" line is what scripts and tern bench restore wait for.
	fmt.Printf("tern upf ready: PFCP on %s, N3 on %s\n", u.PFCPAddr(), u.N3Addr())
	<-ctx.Done()
	log.Info("shutting down")
	return u.Close()
}
