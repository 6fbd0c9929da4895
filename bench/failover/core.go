package failover

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/failover"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sctp"
)

// coreConfig is a core of ues demo subscribers in dir, on addresses of
// its own (N2 on a free UDP port with SCTP over UDP, the SMF and the
// UPF on loopback addresses of their own), with the UPF embedded and
// without N6 devices, in resiliency mode mode.
func coreConfig(dir string, ues int, mode string) (config.Config, error) {
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = ues
	cfg.Operator.Socket = filepath.Join(dir, "operator.sock")
	port, err := freeport.UDP()
	if err != nil {
		return cfg, err
	}
	cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, port
	n4, upfAddr := freeport.Loopback(), freeport.Loopback()
	cfg.SMF.NodeID, cfg.SMF.N4Address = n4.String(), n4.String()
	cfg.UPF.PFCPAddr = netip.AddrPortFrom(upfAddr, pfcp.Port).String()
	cfg.UPF.N3Addr = netip.AddrPortFrom(upfAddr, gtpu.Port).String()
	cfg.UPF.NoN6 = true
	for i := range cfg.SMF.UPFs {
		if cfg.SMF.UPFs[i].Name == cfg.UPF.Name {
			cfg.SMF.UPFs[i].N3 = upfAddr.String()
		}
	}
	cfg.Resiliency.Mode = mode
	// resiliency.dir stays the default: /dev/shm, a directory of this
	// core's own (named after its operator socket).
	return cfg, nil
}

// replicated is tern up with resiliency.mode local: the supervisor in
// this process, its units processes of their own.
type replicated struct {
	s    *failover.Supervisor
	took chan failover.Takeover
}

func startReplicated(ctx context.Context, c Config, cfg config.Config) (*replicated, error) {
	if c.Spawn == nil {
		return nil, fmt.Errorf("the local variant needs Config.Spawn (how to start a unit process)")
	}
	r := &replicated{took: make(chan failover.Takeover, 8)}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := failover.Supervise(ctx, cfg, failover.Hooks{Spawn: c.Spawn, OnTakeover: func(t failover.Takeover) {
		select {
		case r.took <- t:
		default:
		}
	}}, c.Logger)
	if err != nil {
		return nil, err
	}
	r.s = s
	return r, nil
}

func (r *replicated) N2Addr() string { return r.s.N2Addr() }

// kill SIGKILLs the active unit and returns when.
func (r *replicated) kill() (time.Time, error) {
	pid := r.s.ActivePID()
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("kill the active unit (pid %d): %w", pid, err)
	}
	return at, nil
}

// takeover waits for the standby's report of its takeover and fills in
// r's detection and takeover figures, measured from killed.
func (r *replicated) takeover(killed time.Time, res *Result) error {
	select {
	case t := <-r.took:
		res.Detect = t.Detected.Sub(killed)
		if !t.Reaped.IsZero() {
			res.Reaped = t.Reaped.Sub(killed)
		}
		res.Takeover = t.Restore
		res.Restored = t.UEs
		if t.Refused > 0 {
			return fmt.Errorf("the standby refused %d records", t.Refused)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("no takeover 30 s after the SIGKILL")
	}
}

func (r *replicated) Close() { r.s.Close() }

// plain is a core with resiliency.mode off in this process (what tern up
// runs by default); restart closes it and starts another on the same
// configuration, subscriber store included.
type plain struct {
	cfg config.Config
	c   Config
	cr  *core.Core
}

func startPlain(ctx context.Context, c Config, cfg config.Config) (*plain, error) {
	p := &plain{cfg: cfg, c: c}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *plain) start(ctx context.Context) error {
	cr, err := core.New(p.cfg, p.c.Logger)
	if err != nil {
		return err
	}
	if err := cr.Start(ctx); err != nil {
		cr.Close()
		return err
	}
	p.cr = cr
	if err := poll.Until(ctx, 10*time.Second, 200*time.Microsecond, func() bool {
		for _, st := range cr.SMF.UPFStates() {
			if st == "up" {
				return true
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("UPF not associated: %w", err)
	}
	return nil
}

func (p *plain) N2Addr() string { return p.cr.N2Addr() }

// restart stops the core (everything it held is lost, as with a SIGKILL
// of tern up) and starts a new one at once: a real restart takes longer
// (a process manager notices, the binary starts), which favours the
// baseline. Its embedded UPF dies and restarts with it, as in tern up,
// and waits for a new PFCP Recovery Time Stamp (whole seconds, TS 29.244
// §8.2.65) before it answers: up to a second of the restart.
func (p *plain) restart(ctx context.Context) error {
	p.cr.Close()
	p.cr = nil
	return p.start(ctx)
}

func (p *plain) Close() {
	if p.cr != nil {
		p.cr.Close()
	}
}

// workDir makes a directory for one core's files.
func workDir() (string, error) { return os.MkdirTemp("", "tern-bench-failover-") }
