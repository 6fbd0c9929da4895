package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
)

// runUp starts the core and runs it until SIGINT or SIGTERM.
func runUp(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration file (default: embedded defaults)")
	storePath := fs.String("store", "", "subscriber store file (overrides store.path)")
	capture := fs.String("capture", "", "write N2 (SCTP over UDP) to this pcap file")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides log.level)")
	n2 := fs.String("n2", "", "N2 listen address, IP:SCTP-port (overrides amf.n2Address)")
	udpPort := fs.Int("udp-port", 0, "SCTP-over-UDP encapsulation port (overrides amf.sctp; default 9899)")
	demoSubs := fs.Int("demo-subscribers", -1, "provision this many demo subscribers (overrides store.demoSubscribers)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the core to this file until it stops")
	if err := fs.Parse(args); err != nil {
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
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(cfg.Log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := core.New(cfg, log)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		c.Close()
		return err
	}
	st := c.Stats()
	// The "ready" line is what `tern bench register` waits for.
	fmt.Printf("tern core ready: N2 on %s, %d subscribers in %s\n", c.N2Addr(), st.Subscribers, cfg.Store.Path)
	<-ctx.Done()
	log.Info("shutting down")
	return c.Close()
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
