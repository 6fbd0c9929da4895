// Package restore runs the restoration drills of `tern bench restore`
// (TS 23.527): a core with many UEs and uplink traffic, a peer fails or
// restarts, and the drill measures how long the core takes to notice
// (detect), how long until new PDU sessions succeed again (recovered),
// what happened to the sessions (restored, released), how many UEs had to
// register again (goal 0), what traffic was lost, and what state was left
// inconsistent between the NFs (stale, goal 0).
//
// The core runs in this process with its UPF reached over PFCP/UDP, as a
// deployment with `tern nf upf` has it; the UPF runs where the caller's
// UPFLauncher puts it (`tern bench restore` starts it as a process of its
// own and kills it with SIGKILL; without a launcher it runs in this
// process and "dies" by closing its sockets without a word to the SMF).
// Every figure is judged against the configured heartbeat period, the
// reference the spec's detection is bounded by.
package restore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/upf"
)

// Drill names (the JSON rows' names).
const (
	// DrillUPFRestart kills the UPF and starts a new one on its addresses
	// (TS 23.527 §4.3.2).
	DrillUPFRestart = "upf-restart"
	// DrillGNBReconnect drops one gNB's SCTP association; the gNB sets up
	// a new one with NG Setup (TS 38.413 §8.7.1).
	DrillGNBReconnect = "gnb-reconnect"
	// DrillNGReset has one gNB reset its whole NG interface (TS 38.413
	// §8.7.4.2.1).
	DrillNGReset = "ng-reset"
)

// Drills is every drill, in the order they run.
var Drills = []string{DrillUPFRestart, DrillGNBReconnect, DrillNGReset}

// UPFProcess is a running UPF.
type UPFProcess interface {
	// Kill stops the UPF at once, without PFCP signalling (SIGKILL).
	Kill() error
}

// UPFLauncher starts a UPF with PFCP on pfcpAddr and N3 on n3Addr, without
// N6 devices, and returns once it serves PFCP.
type UPFLauncher func(ctx context.Context, pfcpAddr, n3Addr string) (UPFProcess, error)

// Config shapes the drills.
type Config struct {
	UEs  int // UEs, each with one PDU session (default 1,000)
	GNBs int // gNBs the UEs are spread over (default 4)
	// Heartbeat is the SMF's PFCP heartbeat period (default 500 ms); a
	// UPF is declared down after 3 missed heartbeats of Heartbeat/2.
	Heartbeat time.Duration
	// UplinkPPS is the uplink traffic of all UEs together, packets per
	// second (default 10,000).
	UplinkPPS int
	Drills    []string     // default Drills
	UPF       UPFLauncher  // nil: in this process
	Log       Logger       // progress (nil: none)
	Logger    *slog.Logger // the core's log (nil: discarded)
}

// Logger is where progress goes.
type Logger func(format string, args ...any)

func (c *Config) defaults() {
	if c.UEs <= 0 {
		c.UEs = 1000
	}
	if c.GNBs <= 0 {
		c.GNBs = 4
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 500 * time.Millisecond
	}
	if c.UplinkPPS <= 0 {
		c.UplinkPPS = 10000
	}
	if len(c.Drills) == 0 {
		c.Drills = Drills
	}
	if c.UPF == nil {
		c.UPF = inProcessUPF
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Result is what one drill measured.
type Result struct {
	Drill string
	// Detect is how long the core took to notice the fault and act on it:
	// from the restarted UPF serving again to the SMF associating with it;
	// from the gNB's reconnection or NG Reset to the AMF's NG Setup
	// Response or NG Reset Acknowledge.
	Detect time.Duration
	// Recovered is from the same start until a new PDU session succeeds
	// and, after a RAN fault, every UE of the gNB is connected again (its
	// uplink brought it back with a Service Request).
	Recovered time.Duration
	// Restored and Released count the PDU sessions kept (re-established
	// where needed) and released towards their UEs.
	Restored, Released int
	// Reregistered counts UEs that had to register again (goal 0).
	Reregistered int
	// Stale counts state the NFs disagree on afterwards (goal 0): PDU
	// sessions the AMF, the SMF and the UPF do not all hold.
	Stale int
	// Sent is the uplink packets sent during the drill; LostOutage those
	// lost while the peer was down: sent to a dead or not yet restored UPF,
	// or refused by a UE that had no user plane; LostAfter those lost
	// after the core had recovered (goal 0): the UPF answered them with
	// an Error Indication, so it had no session for them.
	Sent, LostOutage, LostAfter int64
	// Skipped counts the uplink packets the generator did not send: they
	// fell due while it was descheduled, beyond the burst it may send to
	// catch up (maxBurst). Not lost: the offered rate was that much lower.
	Skipped int64
	// Failures counts UEs whose traffic or session did not come back.
	Failures int
}

// Run runs the drills in order on one test bed.
func Run(ctx context.Context, c Config) ([]Result, error) {
	c.defaults()
	b, err := newBed(ctx, c)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var out []Result
	for _, d := range c.Drills {
		var r Result
		switch d {
		case DrillUPFRestart:
			r, err = b.upfRestart(ctx)
		case DrillGNBReconnect:
			r, err = b.ranFault(ctx, d, b.gnbs[0].Reconnect)
		case DrillNGReset:
			r, err = b.ranFault(ctx, d, func(ctx context.Context) error { return b.gnbs[0].Reset(ctx) })
		default:
			return out, fmt.Errorf("restore: unknown drill %q (have %v)", d, Drills)
		}
		if err != nil {
			return out, fmt.Errorf("restore: %s: %w", d, err)
		}
		c.Log("%s: detect %v, recovered %v, restored %d, released %d, re-registered %d, stale %d, lost %d (outage) + %d (after), failures %d, not sent %d (generator behind)",
			d, r.Detect.Round(time.Millisecond), r.Recovered.Round(time.Millisecond), r.Restored, r.Released, r.Reregistered,
			r.Stale, r.LostOutage, r.LostAfter, r.Failures, r.Skipped)
		out = append(out, r)
	}
	return out, nil
}

// bed is a core with a remote UPF, gNBs, and registered UEs with sessions
// and uplink traffic.
type bed struct {
	cfg     Config
	dir     string
	core    *core.Core
	upf     UPFProcess
	pfcp    string
	n3      string
	gnbs    []*gnb.GNB
	ues     []*benchUE
	probe   *ue.UE // registered, no session: opens one to show recovery
	traffic *uplink
}

type benchUE struct {
	u    *ue.UE
	psi  uint8
	addr netip.Addr
}

func newBed(ctx context.Context, c Config) (*bed, error) {
	dir, err := os.MkdirTemp("", "tern-bench-restore-")
	if err != nil {
		return nil, err
	}
	b := &bed{cfg: c, dir: dir}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	n2Port, err := freeport.UDP()
	if err != nil {
		return nil, err
	}
	// The SMF's and the UPF's PFCP and GTP-U are the well-known ports of
	// addresses of their own in 127/8: other cores on the host do not
	// collide with them, and no socket bound to an ephemeral port can take
	// the UPF's while it restarts.
	n4 := freeport.Loopback().String()
	upfAddr := freeport.Loopback().String()
	b.pfcp = net.JoinHostPort(upfAddr, strconv.Itoa(pfcp.Port))
	b.n3 = net.JoinHostPort(upfAddr, strconv.Itoa(gtpu.Port))

	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = c.UEs + 1
	cfg.AMF.SCTP.UDPPort = n2Port
	cfg.UPF.Embedded = false
	cfg.SMF.NodeID, cfg.SMF.N4Address = n4, n4
	cfg.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: b.pfcp, N3: upfAddr, DNNs: []string{"internet", "ims"}}}
	cfg.SMF.Timers.Heartbeat = c.Heartbeat
	cfg.SMF.Timers.HeartbeatTimeout = c.Heartbeat / 2
	cfg.SMF.Timers.HeartbeatRetries = 3
	if b.core, err = core.New(cfg, c.Logger); err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	if err := b.core.Start(ctx); err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	if b.upf, err = c.UPF(ctx, b.pfcp, b.n3); err != nil {
		return nil, fmt.Errorf("upf: %w", err)
	}
	if err := b.waitUPF(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	sc := sim.DefaultConfig()
	for i := range c.GNBs {
		g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: b.core.N2Addr(), Transport: cfg.AMF.SCTP, GNBID: uint32(200 + i),
			PLMN: sc.PLMN, TAC: 1, Slices: sc.Slices, N3Addr: "127.0.0.1:0", Logger: c.Logger})
		if err != nil {
			return nil, fmt.Errorf("gNB %d: %w", i, err)
		}
		b.gnbs = append(b.gnbs, g)
	}
	sc.Timeout = 10 * time.Second
	newUE := func(i int) (*ue.UE, error) {
		u, err := sc.NewUE(i, nil, c.Logger)
		if err != nil {
			return nil, err
		}
		u.Attach(b.gnbs[i%len(b.gnbs)].NewPort(u))
		return u, nil
	}
	b.ues = make([]*benchUE, c.UEs)
	g, gctx := errgroup.WithContext(ctx) // the first failure stops the rest
	g.SetLimit(32)
	for i := range c.UEs {
		g.Go(func() error {
			u, err := newUE(i)
			if err != nil {
				return err
			}
			if err := u.Register(gctx); err != nil {
				return fmt.Errorf("register: %w", err)
			}
			s, err := u.EstablishSession(gctx, ue.SessionRequest{DNN: "internet"})
			if err != nil {
				return fmt.Errorf("session: %w", err)
			}
			b.ues[i] = &benchUE{u: u, psi: s.ID, addr: s.Address}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if b.probe, err = newUE(c.UEs); err != nil {
		return nil, err
	}
	if err := b.probe.Register(ctx); err != nil {
		return nil, fmt.Errorf("probe UE: register: %w", err)
	}
	// Every downlink path is set up at the UPF (the N2 answers are in)
	// and every Registration Complete counted.
	if err := poll.Until(ctx, 10*time.Second, 200*time.Microsecond, func() bool {
		return b.core.SMF.Stats().Established >= uint64(c.UEs) && b.core.AMF.Stats().Registrations >= uint64(c.UEs+1)
	}); err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	b.traffic = startUplink(ctx, b.ues, c.UplinkPPS)
	ok = true
	return b, nil
}

func (b *bed) Close() {
	if b.traffic != nil {
		b.traffic.stop()
	}
	for _, g := range b.gnbs {
		g.Close()
	}
	if b.core != nil {
		b.core.Close()
	}
	if b.upf != nil {
		b.upf.Kill()
	}
	os.RemoveAll(b.dir)
}

func (b *bed) waitUPF(ctx context.Context, d time.Duration) error {
	if err := poll.Until(ctx, d, 200*time.Microsecond, func() bool { return b.core.SMF.UPFStates()["upf"] == "up" }); err != nil {
		return fmt.Errorf("UPF not associated: %w", err)
	}
	return nil
}

// errorIndications is what the gNBs received from the UPF so far.
func (b *bed) errorIndications() int64 {
	var n int64
	for _, g := range b.gnbs {
		n += g.N3Counters().ErrorIndications
	}
	return n
}

// probeSession opens a PDU session on the probe UE until one succeeds, and
// releases it; it returns when the session was accepted.
func (b *bed) probeSession(ctx context.Context, d time.Duration) (time.Time, error) {
	deadline := time.Now().Add(d)
	for {
		s, err := b.probe.EstablishSession(ctx, ue.SessionRequest{DNN: "ims"})
		if err == nil {
			at := time.Now()
			if err := b.probe.ReleaseSession(ctx, s.ID); err != nil {
				return at, fmt.Errorf("probe release: %w", err)
			}
			return at, nil
		}
		var rej *ue.SessionRejectError
		if !errors.As(err, &rej) || time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("probe session: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// stale counts PDU sessions the NFs disagree on: the AMF's and the SMF's
// contexts, the SMF's PFCP sessions.
func (b *bed) stale() int {
	a, s := b.core.AMF.Stats(), b.core.SMF.Stats()
	return abs(int(a.PDUSessions)-s.Contexts) + abs(s.N4Sessions-s.Contexts)
}

// upfRestart kills the UPF and starts a new one on the same addresses
// (TS 23.527 §4.3.2).
func (b *bed) upfRestart(ctx context.Context) (Result, error) {
	r := Result{Drill: DrillUPFRestart}
	before := b.core.SMF.Stats()
	regs := b.core.AMF.Stats().Registrations
	sent0, refused0, skipped0 := b.traffic.sent.Load(), b.traffic.refused.Load(), b.traffic.skipped.Load()

	if err := b.upf.Kill(); err != nil {
		return r, err
	}
	b.upf = nil
	up, err := b.cfg.UPF(ctx, b.pfcp, b.n3)
	if err != nil {
		return r, fmt.Errorf("restart: %w", err)
	}
	b.upf = up
	back := time.Now()
	ei0 := b.errorIndications()
	sentBack := b.traffic.sent.Load()

	// Detected: the SMF has associated again.
	if err := poll.Until(ctx, 10*b.cfg.Heartbeat+5*time.Second, 200*time.Microsecond, func() bool { return b.core.SMF.Stats().Associations > before.Associations }); err != nil {
		return r, fmt.Errorf("restart not detected: %w", err)
	}
	r.Detect = time.Since(back)
	at, err := b.probeSession(ctx, 30*time.Second)
	if err != nil {
		return r, err
	}
	r.Recovered = at.Sub(back)
	if err := b.waitUPF(ctx, 30*time.Second); err != nil {
		return r, err
	}
	after := b.core.SMF.Stats()
	r.Restored = int(after.SessionsRestored - before.SessionsRestored)
	r.Released = int(after.SessionsNotRestored - before.SessionsNotRestored)

	// Traffic after the recovery: the restored F-TEIDs take it.
	ei1 := b.errorIndications()
	time.Sleep(max(b.cfg.Heartbeat, 500*time.Millisecond))
	r.LostAfter = b.errorIndications() - ei1
	r.LostOutage = (sentBack - sent0) + (ei1 - ei0) + (b.traffic.refused.Load() - refused0)
	r.Sent = b.traffic.sent.Load() - sent0
	r.Skipped = b.traffic.skipped.Load() - skipped0
	r.Reregistered = int(b.core.AMF.Stats().Registrations - regs)
	r.Stale = b.stale()
	r.Failures = r.Released
	return r, nil
}

// ranFault runs a fault of gNB 0 (fault returns once the core answered
// it) and waits for its UEs to come back through their uplink.
func (b *bed) ranFault(ctx context.Context, name string, fault func(context.Context) error) (Result, error) {
	r := Result{Drill: name}
	smf0, regs := b.core.SMF.Stats(), b.core.AMF.Stats().Registrations
	sent0, refused0, skipped0, ei0 := b.traffic.sent.Load(), b.traffic.refused.Load(), b.traffic.skipped.Load(), b.errorIndications()
	var hit []*benchUE
	for i, u := range b.ues {
		if i%len(b.gnbs) == 0 {
			hit = append(hit, u)
		}
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := fault(fctx)
	cancel()
	if err != nil {
		return r, err
	}
	r.Detect = time.Since(start)
	// Every UE of the gNB was dropped; its next uplink packet brings it
	// back (the traffic reaches each UE every UEs/UplinkPPS seconds).
	back := func() int {
		n := 0
		for _, u := range hit {
			if s, ok := u.u.Session(u.psi); ok && s.State == "PDU SESSION ACTIVE" && u.u.Connected() {
				n++
			}
		}
		return n
	}
	if err := poll.Until(ctx, 30*time.Second, 200*time.Microsecond, func() bool { return back() == len(hit) }); err != nil {
		r.Failures = len(hit) - back()
	}
	at, err := b.probeSession(ctx, 30*time.Second)
	if err != nil {
		return r, err
	}
	r.Recovered = at.Sub(start)
	ei1 := b.errorIndications()
	time.Sleep(500 * time.Millisecond)
	r.LostAfter = b.errorIndications() - ei1
	r.LostOutage = (ei1 - ei0) + (b.traffic.refused.Load() - refused0)
	r.Sent = b.traffic.sent.Load() - sent0
	r.Skipped = b.traffic.skipped.Load() - skipped0
	smf1 := b.core.SMF.Stats()
	r.Released = int(smf1.Released-smf0.Released) - 1 // the probe's own session
	r.Restored = len(hit) - r.Failures - r.Released
	r.Reregistered = int(b.core.AMF.Stats().Registrations - regs)
	r.Stale = b.stale()
	return r, nil
}

// inProcessUPF runs the UPF in this process; Kill closes it without
// telling the SMF.
func inProcessUPF(ctx context.Context, pfcpAddr, n3Addr string) (UPFProcess, error) {
	cfg := upf.DefaultConfig()
	cfg.PFCPAddr, cfg.N3Addr, cfg.NoN6 = pfcpAddr, n3Addr, true
	u, err := upf.New(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := u.Start(ctx); err != nil {
		return nil, err
	}
	return closer{u}, nil
}

type closer struct{ u *upf.UPF }

func (c closer) Kill() error { return c.u.Close() }

// uplink sends UplinkPPS packets per second round robin from the UEs.
type uplink struct {
	sent    atomic.Int64
	refused atomic.Int64 // the UE had no user plane to send on
	skipped atomic.Int64 // due beyond maxBurst after a stall: not sent
	cancel  context.CancelFunc
	done    chan struct{}
}

func startUplink(ctx context.Context, ues []*benchUE, pps int) *uplink {
	dst := netip.MustParseAddr("192.0.2.1")
	pkts := make([][]byte, len(ues))
	for i, u := range ues {
		pkts[i] = ipv4pkt.AppendUDP(nil, u.addr, dst, 9000, 9000, make([]byte, 32))
	}
	next := 0
	return startGenerator(ctx, pps, func() error {
		u := ues[next]
		err := u.u.SendData(u.psi, pkts[next])
		next = (next + 1) % len(ues)
		return err
	})
}

// maxBurst is how many packets the generator sends back to back at most
// to catch up when it fell behind: 10 ms of the rate, and no fewer than
// bench/upf's paceBurst (32). After a longer stall (the machine loaded,
// the generator descheduled for a second) what fell due beyond it is
// skipped and counted: sent at once, it would overflow socket buffers in
// a bench that measures loss.
func maxBurst(pps int) int64 { return max(32, int64(pps)/100) }

// startGenerator calls send pps times a second until stopped, counting
// what it sent and what send refused. Every millisecond it sends what is
// due by then since the start, so that any rate comes out right: a fixed
// count per tick would be at least 1,000 a second (issue 37: --pps 100
// sent 1,000). It catches up at most maxBurst at a time (skipped counts
// the rest).
func startGenerator(ctx context.Context, pps int, send func() error) *uplink {
	ctx, cancel := context.WithCancel(ctx)
	t := &uplink{cancel: cancel, done: make(chan struct{})}
	burst := maxBurst(pps)
	go func() {
		defer close(t.done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		start := time.Now()
		var done int64 // packets due so far that were sent, refused or skipped
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			due := int64(time.Since(start).Seconds() * float64(pps))
			if behind := due - done; behind > burst {
				t.skipped.Add(behind - burst)
				done = due - burst
			}
			for ; done < due; done++ {
				if err := send(); err == nil {
					t.sent.Add(1)
				} else {
					t.refused.Add(1)
				}
			}
		}
	}()
	return t
}

func (t *uplink) stop() { t.cancel(); <-t.done }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Results are the JSON rows (report.Result) of the drills: name = drill,
// unit ms, median = recovered, and the fields scripts read in Extra.
func Results(rs []Result) []report.Result {
	out := make([]report.Result, 0, len(rs))
	for _, r := range rs {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		out = append(out, report.Result{
			Name: r.Drill, Variant: "tern", Unit: "ms", Count: 1, Failures: r.Failures,
			Median: ms(r.Recovered), P90: ms(r.Recovered), P99: ms(r.Recovered), Max: ms(r.Recovered),
			Extra: map[string]any{
				"detect": ms(r.Detect), "recovered": ms(r.Recovered),
				"restored": r.Restored, "released": r.Released, "reregistered": r.Reregistered,
				"stale": r.Stale, "failures": r.Failures,
				"sent": r.Sent, "lost_outage": r.LostOutage, "lost_after": r.LostAfter, "skipped": r.Skipped,
			},
		})
	}
	return out
}
