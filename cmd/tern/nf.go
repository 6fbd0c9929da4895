package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/tern5g/tern/config"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/metrics"
)

// runNF runs one network function as its own process.
func runNF(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(os.Stderr, "usage: tern nf NAME --config FILE\n\n"+
			"Runs one NF as its own process. NAME is one of %s or upf.\n"+
			"The control-plane NFs serve their SBI over HTTP/2 at sbi.listen.NAME, register with the\n"+
			"NRF at sbi.nrf and find each other through it: start nrf first, the others in any order.\n"+
			"upf: UPF-C and UPF-U, reached by the SMF over PFCP/UDP at upf.pfcpAddr (set\n"+
			"smf.upfs[].n4 to that address and upf.embedded to false).\n", strings.Join(config.NFNames, ", "))
		if len(args) == 0 {
			return errors.New("missing NF name")
		}
		return flag.ErrHelp
	}
	if args[0] == "upf" {
		return runNFUPF(args[1:])
	}
	if slices.Contains(config.NFNames, args[0]) {
		return runControlNF(args[0], args[1:])
	}
	return fmt.Errorf("unknown NF %q (one of %s, upf)", args[0], strings.Join(config.NFNames, ", "))
}

// runControlNF runs a control-plane NF alone until SIGINT or SIGTERM.
func runControlNF(name string, args []string) error {
	fs := flag.NewFlagSet("nf "+name, flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration file: its "+name+" and sbi sections (default: embedded defaults)")
	listen := fs.String("listen", "", "SBI listen address, host:port (overrides sbi.listen."+name+")")
	nrfRoot := fs.String("nrf", "", "the NRF's apiRoot, e.g. http://127.0.0.1:29510 (overrides sbi.nrf)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides log.level)")
	metricsAddr := fs.String("metrics", "", "serve /metrics, /healthz and /readyz on this address, host:port (overrides metrics.address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		cfg.Metrics.Address = *metricsAddr
	}
	if *listen != "" {
		cfg.SBI.Listen = maps.Clone(cfg.SBI.Listen)
		cfg.SBI.Listen[name] = *listen
	}
	if *nrfRoot != "" {
		cfg.SBI.NRF = *nrfRoot
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(cfg.Log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sbiMetrics := metrics.NewSBI()
	n, err := core.NewNF(cfg, name, log, core.WithSBIObserver(sbiMetrics.Observe))
	if err != nil {
		return err
	}
	if h := n.OperatorHandler(); h != nil {
		// The AMF serves tern ue's operator API (core/operator.go),
		// claimed before N2 is bound.
		op, err := core.StartOperator(cfg, h, log)
		if err != nil {
			n.Close()
			return err
		}
		defer op.Close()
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return err
	}
	if cfg.Metrics.Address != "" {
		srv, err := metrics.ServeNF(cfg.Metrics.Address, n, sbiMetrics, log)
		if err != nil {
			n.Close()
			return err
		}
		defer srv.Close()
	}
	// The "ready" line is what scripts and tests wait for.
	if a := n.N2Addr(); a != "" {
		fmt.Printf("tern %s ready: SBI %s, N2 on %s\n", name, n.APIRoot, a)
	} else {
		fmt.Printf("tern %s ready: SBI %s\n", name, n.APIRoot)
	}
	<-ctx.Done()
	log.Info("shutting down", "nf", name)
	return n.Close()
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
