package failover

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/metrics"
	"github.com/tern5g/tern/resil/n2front"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/upf"
)

// Defaults of the resiliency section.
const (
	DefaultRecordStoreMiB = 64
	DefaultReplayLog      = 65536
	// defaultUPFPFCP is where the supervisor's UPF serves N4 when
	// upf.pfcpAddr is not set: beside the SMF's 127.0.0.1:8805.
	defaultUPFPFCP = "127.0.0.2:8805"
)

// Spawn makes the command of a unit process: this binary with args (the
// first is "unit"), not started. The supervisor reads its stdout.
type Spawn func(args []string) (*exec.Cmd, error)

// Hooks are what the supervisor needs from its caller and tells it.
type Hooks struct {
	Spawn Spawn
	// OnTakeover, if set, hears of each takeover by a standby unit.
	OnTakeover func(Takeover)
}

// Supervisor is the process tern up runs as in local mode.
type Supervisor struct {
	cfg     config.Config
	log     *slog.Logger
	dir     string
	unitCfg string // the units' configuration file
	hooks   Hooks

	UPF    *upf.UPF
	front  *n2front.Front
	n2Addr string

	lock    *os.File // flock on dir/lock: one supervisor per directory
	metrics *metrics.Server

	mu        sync.Mutex
	epoch     uint64
	active    *unitProc
	standby   *unitProc
	source    string // the store of the last unit that said it serves
	takeovers []Takeover
	events    chan unitEvent
	done      chan struct{}
	watching  bool
	closing   bool
}

// unitProc is one unit process.
type unitProc struct {
	cmd     *exec.Cmd
	epoch   uint64
	records string
	exited  chan struct{}
	// reaped is when wait4 returned for it here, the parent: the
	// kernel's own notice of its death, the reference a standby's
	// detection is measured against.
	reaped time.Time
}

type unitEvent struct {
	u     *unitProc
	state string // "active", "standby", "exited"
	took  *Takeover
}

// Dir is the directory of the record stores and the front end's socket
// for cfg.
func Dir(cfg config.Config) string {
	if cfg.Resiliency.Dir != "" {
		return cfg.Resiliency.Dir
	}
	h := sha256.Sum256([]byte(core.OperatorSocket(cfg)))
	return filepath.Join("/dev/shm", "tern-"+hex.EncodeToString(h[:6]))
}

// Supervise starts the UPF and the N2 front end, then the active unit and
// its standby, and returns once the active unit serves. ctx bounds the
// start.
func Supervise(ctx context.Context, cfg config.Config, hooks Hooks, log *slog.Logger) (*Supervisor, error) {
	s := &Supervisor{cfg: cfg, log: log, dir: Dir(cfg), hooks: hooks,
		events: make(chan unitEvent, 16), done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	lock, err := lockDir(s.dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	unitCfg, upfCfg, err := splitConfig(cfg)
	if err != nil {
		return nil, err
	}
	b, err := config.Marshal(unitCfg)
	if err != nil {
		return nil, err
	}
	s.unitCfg = filepath.Join(s.dir, "unit.yaml")
	if err := os.WriteFile(s.unitCfg, b, 0o600); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	if s.UPF, err = core.NewUPF(upfCfg, log.With("nf", "upf")); err != nil {
		return nil, err
	}
	if err := s.UPF.Start(ctx); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	l, err := sctp.Listen(cfg.AMF.SCTP, cfg.AMF.N2Address)
	if err != nil {
		return nil, fmt.Errorf("failover: listen on N2 %s: %w", cfg.AMF.N2Address, err)
	}
	replay := cfg.Resiliency.ReplayLog
	if replay == 0 {
		replay = DefaultReplayLog
	}
	s.n2Addr = l.Addr().String()
	s.front, err = n2front.New(n2front.Config{UnitPath: filepath.Join(s.dir, "n2.sock"), MaxLogMessages: replay,
		Logger: log.With("part", "n2front")})
	if err != nil {
		l.Close()
		return nil, err
	}
	if err := s.front.Serve(l); err != nil {
		return nil, err
	}
	if addr := cfg.UPF.MetricsAddress; addr != "" {
		// The UPF and the front end live here, not in a unit: their
		// metrics are this process's (upf.metricsAddress, as for tern nf
		// upf), the units serve the core's on metrics.address.
		if s.metrics, err = metrics.ServeSupervisor(addr, s, s.UPF, log); err != nil {
			return nil, err
		}
	}

	active, err := s.startUnit(ctx, Active, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.active, s.source = active, active.records
	s.mu.Unlock()
	standby, err := s.startUnit(ctx, Standby, active)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.standby, s.watching = standby, true
	s.mu.Unlock()
	go s.watch()
	ok = true
	return s, nil
}

// lockDir takes dir for this supervisor: a second tern up with the same
// configuration is refused before it touches anything there.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("failover: another tern up runs with %s (resiliency.dir)", dir)
		}
		return nil, fmt.Errorf("failover: lock %s: %w", dir, err)
	}
	return f, nil
}

// splitConfig gives the units' configuration (no UPF of their own, N4 to
// the supervisor's) and the supervisor's UPF's.
func splitConfig(cfg config.Config) (config.Config, upf.Config, error) {
	if !cfg.UPF.Embedded {
		return config.Config{}, upf.Config{}, errors.New("failover: resiliency.mode local runs the UPF in tern up: set upf.embedded (a UPF of its own, tern nf upf, is not supervised yet)")
	}
	u := cfg.UPF.Config
	if u.PFCPAddr == "" {
		u.PFCPAddr = defaultUPFPFCP
	}
	if _, err := netip.ParseAddrPort(u.PFCPAddr); err != nil {
		return config.Config{}, upf.Config{}, fmt.Errorf("failover: upf.pfcpAddr %q: want IPv4:port", u.PFCPAddr)
	}
	unit := cfg
	unit.UPF.Embedded = false
	unit.SMF.UPFs = append(unit.SMF.UPFs[:0:0], cfg.SMF.UPFs...)
	found := false
	for i := range unit.SMF.UPFs {
		if unit.SMF.UPFs[i].Name == cfg.UPF.Name {
			unit.SMF.UPFs[i].N4 = u.PFCPAddr
			found = true
		}
	}
	if !found {
		return config.Config{}, upf.Config{}, fmt.Errorf("failover: upf.name %q is in no smf.upfs entry", cfg.UPF.Name)
	}
	// One AMF instance across units: its UE contexts and GUAMI move.
	if unit.AMF.InstanceID == "" {
		unit.AMF.InstanceID = identity.NewNFInstanceID()
	}
	// Captures and metrics of the units are theirs to bind; the capture
	// file is the supervisor's (it sees N2).
	unit.Capture = ""
	return unit, u, nil
}

// startUnit starts a unit process and waits for its first state line. A
// standby takes over from the store s.source, watching behind (nil, or
// dead: it takes over at once).
func (s *Supervisor) startUnit(ctx context.Context, role Role, behind *unitProc) (*unitProc, error) {
	s.mu.Lock()
	s.epoch++
	epoch := s.epoch
	source := s.source
	s.mu.Unlock()
	size := s.cfg.Resiliency.RecordStoreMiB
	if size == 0 {
		size = DefaultRecordStoreMiB
	}
	u := &unitProc{epoch: epoch, records: filepath.Join(s.dir, fmt.Sprintf("unit-%d.rec", epoch)), exited: make(chan struct{})}
	uc := UnitConfig{Role: role, Epoch: epoch, Records: u.records, RecordStoreSize: size << 20, Front: filepath.Join(s.dir, "n2.sock")}
	if role == Standby {
		uc.TakeoverFrom = source
		if behind != nil && !isExited(behind) {
			uc.Watch = behind.pid()
		}
	}
	args := append([]string{"unit"}, unitArgs(s.unitCfg, uc)...)
	cmd, err := s.hooks.Spawn(args)
	if err != nil {
		return nil, err
	}
	// A unit does not outlive its supervisor (it would serve nobody: the
	// front end and the UPF are here). It also leaves by itself when its
	// link to the front end ends; this covers a standby, which has none.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failover: start a unit: %w", err)
	}
	u.cmd = cmd
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			state, took, ok := ParseUnitLine(sc.Text())
			if !ok {
				continue
			}
			select {
			case first <- state:
			default:
			}
			s.events <- unitEvent{u: u, state: state, took: took}
		}
		cmd.Wait()
		u.reaped = time.Now()
		close(u.exited)
		s.events <- unitEvent{u: u, state: "exited"}
	}()
	select {
	case st := <-first:
		if st != string(role) {
			u.kill()
			return nil, fmt.Errorf("failover: unit %d says %s, want %s", epoch, st, role)
		}
		return u, nil
	case <-u.exited:
		return nil, fmt.Errorf("failover: unit %d (%s) exited before it was ready", epoch, role)
	case <-time.After(30 * time.Second):
		u.kill()
		return nil, fmt.Errorf("failover: unit %d (%s) not ready after 30s", epoch, role)
	case <-ctx.Done():
		u.kill()
		return nil, ctx.Err()
	}
}

func (u *unitProc) pid() int { return u.cmd.Process.Pid }

func (u *unitProc) kill() {
	u.cmd.Process.Kill()
	<-u.exited
}

// Restart backoff of the supervisor's unit starts.
const (
	minRestartBackoff = 100 * time.Millisecond
	maxRestartBackoff = 5 * time.Second
)

// watch follows the units until Close: when the active one dies its
// standby takes over, and a new standby is started behind it; a standby
// that dies is replaced; when both are gone a new unit takes over at once
// from the store of the last unit that served (s.source), which outlives
// both (tmpfs). A store is removed only once a unit that copied it said it
// serves. Starts that fail are retried with backoff.
func (s *Supervisor) watch() {
	defer close(s.done)
	backoff := minRestartBackoff
	for ev := range s.events {
		s.mu.Lock()
		closing := s.closing
		active, standby := s.active, s.standby
		s.mu.Unlock()
		if closing {
			if (active == nil || isExited(active)) && (standby == nil || isExited(standby)) {
				return
			}
			continue
		}
		switch {
		case ev.u != nil && ev.u == standby && ev.state == string(Active):
			if ev.took != nil && active != nil {
				select {
				case <-active.exited:
					ev.took.Reaped = active.reaped
				case <-time.After(time.Second):
				}
			}
			if ev.took != nil {
				s.log.Warn("the standby unit took over", "epoch", ev.u.epoch, "pid", ev.u.pid(),
					"restore", ev.took.Restore, "ues", ev.took.UEs, "refused", ev.took.Refused)
			}
			s.mu.Lock()
			old := s.source
			s.active, s.standby, s.source = standby, nil, standby.records
			if ev.took != nil {
				s.takeovers = append(s.takeovers, *ev.took)
			}
			s.mu.Unlock()
			if old != standby.records {
				os.Remove(old) // the new active unit holds a copy of it
			}
			if ev.took != nil && s.hooks.OnTakeover != nil {
				s.hooks.OnTakeover(*ev.took)
			}
		case ev.u != nil && ev.state == "exited" && ev.u == active:
			s.log.Warn("the active unit exited", "epoch", active.epoch, "pid", active.pid())
		case ev.u != nil && ev.state == "exited" && ev.u == standby:
			s.log.Warn("the standby unit exited", "epoch", standby.epoch)
			s.mu.Lock()
			s.standby = nil
			s.mu.Unlock()
			os.Remove(standby.records) // it never served: its store is no source
		case ev.u == nil: // a retry
		default:
			continue
		}
		if s.ensureStandby() {
			backoff = minRestartBackoff
			continue
		}
		wait := backoff
		backoff = min(2*backoff, maxRestartBackoff)
		time.AfterFunc(wait, func() { s.events <- unitEvent{state: "retry"} })
	}
}

func isExited(u *unitProc) bool {
	select {
	case <-u.exited:
		return true
	default:
		return false
	}
}

// ensureStandby starts a standby unless one runs: behind the active unit,
// or, with the active unit dead too, one that takes over at once. It
// returns false when the start failed (the caller retries).
func (s *Supervisor) ensureStandby() bool {
	s.mu.Lock()
	active, standby, closing := s.active, s.standby, s.closing
	s.mu.Unlock()
	if standby != nil || closing {
		return true
	}
	u, err := s.startUnit(context.Background(), Standby, active)
	if err != nil {
		s.log.Error("no standby unit: the next failure of the active unit loses the UEs until one starts", "err", err)
		return false
	}
	s.mu.Lock()
	if s.closing {
		// Close came meanwhile and did not see this one.
		s.mu.Unlock()
		u.cmd.Process.Signal(os.Interrupt)
		select {
		case <-u.exited:
		case <-time.After(10 * time.Second):
			u.kill()
		}
		return true
	}
	s.standby = u
	s.mu.Unlock()
	return true
}

// ActivePID is the PID of the active unit.
func (s *Supervisor) ActivePID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active.pid()
}

// StandbyPID is the PID of the standby unit, 0 while there is none.
func (s *Supervisor) StandbyPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standby == nil {
		return 0
	}
	return s.standby.pid()
}

// FrontStats are the N2 front end's counters (metrics.Supervisor).
func (s *Supervisor) FrontStats() n2front.Stats { return s.front.Stats() }

// TakeoverCount is how many takeovers there were (metrics.Supervisor).
func (s *Supervisor) TakeoverCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.takeovers)
}

// Takeovers lists the takeovers so far.
func (s *Supervisor) Takeovers() []Takeover {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Takeover(nil), s.takeovers...)
}

// N2Addr is the address gNBs connect to.
func (s *Supervisor) N2Addr() string { return s.n2Addr }

// Close stops the units (the active one drains), the front end and the
// UPF, and removes what this supervisor made in its directory.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closing = true
	units := []*unitProc{s.active, s.standby}
	watching := s.watching
	s.mu.Unlock()
	for _, u := range units {
		if u != nil && u.cmd != nil {
			u.cmd.Process.Signal(os.Interrupt)
		}
	}
	for _, u := range units {
		if u == nil || u.cmd == nil {
			continue
		}
		select {
		case <-u.exited:
		case <-time.After(10 * time.Second):
			u.kill()
		}
	}
	if watching {
		select {
		case s.events <- unitEvent{state: "retry"}: // wakes watch to see it is done
		default:
		}
		<-s.done
	}
	var errs []error
	if s.metrics != nil {
		errs = append(errs, s.metrics.Close())
	}
	if s.front != nil {
		errs = append(errs, s.front.Close())
	}
	if s.UPF != nil {
		errs = append(errs, s.UPF.Close())
	}
	if s.lock != nil {
		// The directory is this supervisor's while it holds the lock.
		for _, name := range []string{"unit.yaml", "n2.sock"} {
			os.Remove(filepath.Join(s.dir, name))
		}
		if m, _ := filepath.Glob(filepath.Join(s.dir, "*unit-*.rec*")); len(m) > 0 {
			for _, f := range m {
				os.Remove(f)
			}
		}
		s.lock.Close()
		os.Remove(filepath.Join(s.dir, "lock"))
		if s.cfg.Resiliency.Dir == "" {
			os.Remove(s.dir) // the default directory, once empty
		}
	}
	return errors.Join(errs...)
}

// The lines a unit prints on stdout for its supervisor, and tern up for
// whoever drives it (tern bench failover).
const (
	unitLinePrefix     = "tern unit: "
	takeoverLinePrefix = "tern core took over: "
)

// UnitLine is the line a unit prints for a state change.
func UnitLine(state string, t *Takeover) string {
	if t == nil {
		return unitLinePrefix + state
	}
	return unitLinePrefix + state + " " + t.String()
}

// ParseUnitLine reads a UnitLine.
func ParseUnitLine(line string) (state string, t *Takeover, ok bool) {
	rest, ok := strings.CutPrefix(line, unitLinePrefix)
	if !ok {
		return "", nil, false
	}
	state, fields, _ := strings.Cut(rest, " ")
	if state == "" {
		return "", nil, false
	}
	if fields == "" {
		return state, nil, true
	}
	if t, ok = parseTakeover(fields); !ok {
		return "", nil, false
	}
	return state, t, true
}

// TakeoverLine is what tern up prints on stdout for a takeover.
func TakeoverLine(t Takeover) string { return takeoverLinePrefix + t.String() }

// ParseTakeoverLine reads a TakeoverLine.
func ParseTakeoverLine(line string) (*Takeover, bool) {
	rest, ok := strings.CutPrefix(line, takeoverLinePrefix)
	if !ok {
		return nil, false
	}
	return parseTakeover(rest)
}

// String gives t as key=value fields.
func (t Takeover) String() string {
	var reaped int64
	if !t.Reaped.IsZero() {
		reaped = t.Reaped.UnixNano()
	}
	return fmt.Sprintf("detected=%d reaped=%d restore_us=%d ues=%d sessions=%d refused=%d",
		t.Detected.UnixNano(), reaped, t.Restore.Microseconds(), t.UEs, t.Sessions, t.Refused)
}

func parseTakeover(fields string) (*Takeover, bool) {
	t := &Takeover{}
	for _, kv := range strings.Fields(fields) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, false
		}
		switch k {
		case "detected":
			t.Detected = time.Unix(0, n)
		case "reaped":
			if n != 0 {
				t.Reaped = time.Unix(0, n)
			}
		case "restore_us":
			t.Restore = time.Duration(n) * time.Microsecond
		case "ues":
			t.UEs = int(n)
		case "sessions":
			t.Sessions = int(n)
		case "refused":
			t.Refused = int(n)
		}
	}
	return t, true
}
