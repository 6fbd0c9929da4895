package engine

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ServerConfig is an embedded NATS server with JetStream: the single-node
// default of resiliency mode, or one member of a cluster.
type ServerConfig struct {
	// Name is the server's name, unique in its cluster (default "tern").
	Name string
	// StoreDir holds JetStream's files; a restart on the same directory
	// finds the stream as it was.
	StoreDir string
	// Listen is the client address ("127.0.0.1:4222"); empty: no listener,
	// the engine is reachable in-process only.
	Listen string
	// ClusterName, ClusterListen and Routes make the server a cluster
	// member: its route address, and every member's route URL
	// ("nats-route://127.0.0.1:6222"), its own included.
	ClusterName   string
	ClusterListen string
	Routes        []string
	// Log writes the server's log to stderr.
	Log bool
	// ReadyTimeout bounds the wait for the server to accept clients
	// (default 10 s).
	ReadyTimeout time.Duration
}

// NewServer starts an embedded server and waits until it accepts clients.
// The caller shuts it down (Shutdown, WaitForShutdown).
func NewServer(cfg ServerConfig) (*server.Server, error) {
	opts := &server.Options{
		ServerName: cfg.Name,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      !cfg.Log,
	}
	if opts.ServerName == "" {
		opts.ServerName = "tern"
	}
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("engine: server %s: no store directory", opts.ServerName)
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("engine: server %s: listen: %w", opts.ServerName, err)
		}
		opts.Host, opts.Port = host, port
	}
	if cfg.ClusterListen != "" {
		host, port, err := splitHostPort(cfg.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("engine: server %s: cluster listen: %w", opts.ServerName, err)
		}
		opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("engine: server %s: route %q: %w", opts.ServerName, r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("engine: server %s: %w", opts.ServerName, err)
	}
	if !opts.NoLog {
		s.ConfigureLogger()
	}
	s.Start()
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, fmt.Errorf("engine: server %s: not ready after %v", opts.ServerName, wait)
	}
	return s, nil
}

func splitHostPort(hp string) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", ps, err)
	}
	return host, port, nil
}

// StartEmbedded starts the single-node engine in this process (replication
// factor 1) and connects to it, in-process when it has no listener.
func StartEmbedded(ctx context.Context, scfg ServerConfig, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	s, err := NewServer(scfg)
	if err != nil {
		return nil, err
	}
	opts := clientOptions(cfg)
	if scfg.Listen == "" {
		opts = append(opts, nats.InProcessServer(s))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		s.Shutdown()
		return nil, fmt.Errorf("%w: embedded server: %v", ErrUnreachable, err)
	}
	e, err := open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		s.Shutdown()
		return nil, err
	}
	e.srv = s
	return e, nil
}
