// Package upf runs `tern bench upf`: packets per second and latency of
// tern's UPF data-path drivers between network namespaces, next to the
// references that bound the same path on the same machine, in the same run.
//
// The path is package lab's test bed, ran ── N3 veth ── core ── N6 veth ──
// dn, with every neighbour entry pinned. Traffic comes from an XDP program
// run with BPF_PROG_RUN in live-frames mode on the sending veth (in ran for
// uplink, in dn for downlink; xdp-trafficgen's method): the kernel copies
// one template frame into a page pool, runs the generator on each copy,
// which writes the session index (TEID and inner source address uplink, UE
// address downlink), a sequence number and bpf_ktime_get_ns into it, and
// transmits what it returns with XDP_TX as if the driver had sent it. A
// socket generator tops out near 0.1 Mpps here, below the path itself;
// this one makes several Mpps on one core (variant "generator": its frames
// dropped on arrival at the first hop), so what is measured is the path.
// Where the kernel refuses live frames, the run falls back on a user-space
// generator that makes the same frames (Config.Generator, usergen.go),
// the same for every variant of the run.
//
// A sink XDP program on the receiving veth (dn uplink, ran downlink)
// counts stamped frames, reads the stamp behind the headers (behind
// outer IPv4/UDP/GTP-U and its extension headers when the frame is a
// G-PDU) and records the one-way latency in a per-CPU histogram of 1 µs
// buckets up to 2 ms (1.6 % above), then drops the frame. Generator and
// sink read the same clock.
//
// Variants, interleaved round by round on the same links:
//
//   - bare-xdp: an XDP program on the core's two veths that rewrites the
//     MACs and bpf_redirect()s each frame to the other: the practical limit
//     of the path. It forwards the very frames tern gets (G-PDUs uplink).
//   - bare-xdp-cpu (with XDPCPUs): the same forwarder behind a cpumap, run
//     by the cpumap thread of the first of XDPCPUs: what the path through
//     a CPU of its own costs and loses without the UPF's work, the
//     reference for xdp with XDPCPUs.
//   - bare-xdp-lookup: bare-xdp that first looks each frame's session up
//     in a hash map of the run's sessions (by TEID uplink, UE address
//     downlink) and takes the next hop from the entry: the floor of any
//     UPF whose sessions live in BPF hash maps, at that session count.
//   - kernel: the core namespace's IP forwarding. The kernel cannot decap
//     GTP-U, so uplink sends plain IPv4 of the same size on both sides.
//   - xdp, afxdp, portable: tern's UPF (upf.Config.Driver) in the core
//     namespace, sessions installed over the direct N4 binding. A driver
//     that does not start is reported as skipped, with the reason.
//
// A veth delivers the frames its peer sends with XDP_TX or XDP_REDIRECT
// only when it has an XDP program of its own (its NAPI is off otherwise),
// so for kernel and portable, whose receivers are the kernel stack, the
// core's veths get a pass-through program (XDP_PASS).
//
// Rows: "upf" (pps delivered, per size, direction, session count and
// variant; tern's drivers as ratios to bare-xdp, kernel and bare-xdp-cpu),
// "upf-latency"
// (latency and loss against offered load, Kundel et al.: the generator
// paced in batches against the clock up to past the loss knee),
// "upf-install" (sessions installed until the fast path forwards them),
// "upf-scaling" (pps against UPF workers) and, with Profile, "upf-profile"
// (ns per run of each XDP program; profile.go).
package upf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -cc clang -cflags "-O2 -g -Wall -I/usr/include/x86_64-linux-gnu" bench bpf/bench.c

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/internal/affinity"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf"
	"github.com/tern5g/tern/upf/xdp"
)

// Variants that are not tern.
const (
	Generator = "generator"
	BareXDP   = "bare-xdp"
	// BareXDPCPU is bare-xdp behind a cpumap, forwarding on the CPU that
	// XDPCPUs names first: the reference for xdp with XDPCPUs (the same
	// receiving CPU, cpumap queue and kthread, without the UPF's work).
	// It runs whenever xdp does with XDPCPUs.
	BareXDPCPU = "bare-xdp-cpu"
	// BareXDPLookup is bare-xdp that first finds each frame's session in
	// a hash map of as many entries as the run has sessions (uplink by
	// TEID, downlink by UE address) and takes the next hop from it: the
	// floor of a UPF keeping its sessions in BPF hash maps at that count
	// (upf/xdp's session index keeps most of them in an array instead).
	BareXDPLookup = "bare-xdp-lookup"
	Kernel        = "kernel"
)

// references are the variants that are not tern's drivers: the
// generator's own rate and the reference paths.
var references = []string{Generator, BareXDP, BareXDPLookup, BareXDPCPU, Kernel}

// Drivers is the default list of variants: the references and tern's
// data-path drivers.
var Drivers = []string{BareXDP, BareXDPLookup, Kernel, upf.DriverXDP, upf.DriverAFXDP, upf.DriverPortable}

// Directions.
const (
	Uplink   = "uplink"
	Downlink = "downlink"
)

// Config is one benchmark run.
type Config struct {
	Duration   time.Duration // sending time of each throughput run
	Sizes      []int         // IPv4 total length of the user's packet
	Sessions   []int         // PDU sessions installed; traffic cycles over all
	Directions []string
	Drivers    []string // variants: bare-xdp, kernel, and upf.Config.Driver names
	Repeat     int      // rounds; each variant runs once per round, the median is reported
	// Sweep is the number of offered rates in the latency sweep, up to 1.2
	// times each variant's throughput (0 = no sweep). It runs with the
	// first session count.
	Sweep         int
	SweepDuration time.Duration // sending time of each sweep step (default min(Duration, 500 ms))
	Workers       int           // upf.Config.Workers
	XDPCPUs       string        // upf.Config.XDPCPUs: the CPUs the xdp driver processes on
	Scaling       bool          // also measure tern's drivers with 1..NumCPU workers
	SDFEvery      int           // every SDFEvery-th session has SDF filters (0 = none; 10 = 10 %)
	Scattered     bool          // the generator visits the sessions in a scattered order, not by index
	Profile       bool          // after each variant's last round, a run with BPF statistics: ns per program run
	Drain         time.Duration // wait after sending before counting
	Prefix        string        // lab namespace prefix (default tbu<pid>)
	Out           io.Writer     // progress (default io.Discard)
	// Generator is how the frames are sent: GenLive, GenAFXDP, GenPacket,
	// or GenAuto (the default): live where the kernel allows it, else
	// afxdp, else packet. Every variant of a run, the references
	// included, gets the same one.
	Generator string
}

func (c *Config) defaults() error {
	if c.Duration <= 0 || c.Repeat < 1 || len(c.Sizes) == 0 || len(c.Sessions) == 0 || len(c.Directions) == 0 || len(c.Drivers) == 0 {
		return errors.New("bench upf: duration, repeat, sizes, sessions, directions and drivers must be given")
	}
	for _, s := range c.Sizes {
		if err := CheckSize(s, n6MTU); err != nil {
			return fmt.Errorf("bench upf: %w", err)
		}
	}
	for _, d := range c.Directions {
		if d != Uplink && d != Downlink {
			return fmt.Errorf("bench upf: direction %q: want uplink or downlink", d)
		}
	}
	valid := append(slices.Clone(references[1:]), upf.DriverXDP, upf.DriverAFXDP, upf.DriverPortable, upf.DriverAuto)
	for _, v := range c.Drivers {
		if !slices.Contains(valid, v) {
			return fmt.Errorf("bench upf: driver %q: want one of %s", v, strings.Join(valid, ", "))
		}
	}
	if c.XDPCPUs != "" {
		if _, err := xdp.ParseCPUList(c.XDPCPUs); err != nil {
			return fmt.Errorf("bench upf: %w", err)
		}
		if slices.Contains(c.Drivers, upf.DriverXDP) && !slices.Contains(c.Drivers, BareXDPCPU) {
			i := slices.Index(c.Drivers, BareXDP) + 1 // after bare-xdp, or first
			c.Drivers = slices.Insert(slices.Clone(c.Drivers), i, BareXDPCPU)
		}
	} else if slices.Contains(c.Drivers, BareXDPCPU) {
		return errors.New("bench upf: bare-xdp-cpu needs the CPUs (XDPCPUs, -xdp-cpus)")
	}
	if c.Generator == "" {
		c.Generator = GenAuto
	}
	if !slices.Contains(Generators, c.Generator) {
		return fmt.Errorf("bench upf: generator %q: want one of %s", c.Generator, strings.Join(Generators, ", "))
	}
	if c.SweepDuration <= 0 {
		c.SweepDuration = min(c.Duration, 500*time.Millisecond)
	}
	if c.Workers < 1 {
		c.Workers = 1
	}
	if c.Drain <= 0 {
		c.Drain = 200 * time.Millisecond
	}
	if c.Prefix == "" {
		c.Prefix = "tbu" + strconv.Itoa(os.Getpid())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return nil
}

// Check says why the benchmark cannot run here, or nil.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("bench upf: needs root: it builds network namespaces and veth links, loads XDP programs and the UPF's N6 TUN (run it with sudo)")
	}
	return nil
}

// ErrLiveFrames is the error of a run that asked for the live generator
// where the kernel refuses BPF_PROG_RUN with live frames.
var ErrLiveFrames = errors.New("the kernel refuses BPF_PROG_RUN with live frames (BPF_F_TEST_XDP_LIVE_FRAMES)")

// bench is one run in progress.
type bench struct {
	cfg Config
	t   *topo
	p   *progs
	rep *Report
	// gen is the generator the run uses (GenLive, GenAFXDP or GenPacket)
	// and users the user-space ones' sockets, by veth.
	gen   string
	users map[string]*userGen
}

// Run builds the lab, measures every variant and returns the report. The
// lab is removed before it returns.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := Check(); err != nil {
		return nil, err
	}
	p, err := loadProgs(slices.Max(cfg.Sessions))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	t, err := newTopo(ctx, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := t.close(); derr != nil {
			err = errors.Join(err, fmt.Errorf("bench upf: lab teardown: %w", derr))
		}
	}()
	b := &bench{cfg: cfg, t: t, p: p, rep: newReport(cfg), users: map[string]*userGen{}}
	defer func() {
		for _, u := range b.users {
			if cerr := u.close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("bench upf: %s generator on %s/%s: %w", u.mode, u.ns, u.ifname, cerr))
			}
		}
	}()
	// The sinks stay on the far ends throughout: dn's for uplink, ran's
	// for downlink.
	for _, at := range []port{t.dnN6, t.ranN3} {
		l, err := attach(at.ns, at.name, p.objs.XdpSink)
		if err != nil {
			return nil, err
		}
		defer l.Close()
	}
	fmt.Fprintf(cfg.Out, "  lab %s: %s | %s | %s; UPF N3 %s on %s, N6 %s (gateway %s), pool %s\n",
		cfg.Prefix, t.ranNS, t.coreNS, t.dnNS, t.n3, t.coreN3.name, t.coreN6.name, t.n6DN, poolStr)
	if err := b.chooseGenerator(); err != nil {
		return nil, err
	}
	why := ""
	if b.rep.GeneratorWhy != "" {
		why = " (" + b.rep.GeneratorWhy + ")"
	}
	fmt.Fprintf(cfg.Out, "  generator %s: %s%s\n", b.gen, GeneratorText(b.gen), why)
	if err := b.run(ctx); err != nil {
		return nil, err
	}
	return b.rep, nil
}

// chooseGenerator settles the run's generator: the one asked for, or
// with GenAuto the first of live, afxdp and packet that works here, and
// why the ones before it do not. Each is tried on ran's N3 veth, which
// has the sink (so its receive queue is registered, as live frames need).
func (b *bench) chooseGenerator() error {
	order := []string{b.cfg.Generator}
	if b.cfg.Generator == GenAuto {
		order = []string{GenLive, GenAFXDP, GenPacket}
	}
	var refused []string
	for _, gen := range order {
		err := b.probe(gen)
		if err == nil {
			b.gen, b.rep.Generator = gen, gen
			if len(refused) > 0 {
				b.rep.GeneratorWhy = strings.Join(refused, "; ")
			}
			return nil
		}
		if gen == GenLive && liveRefused(err) {
			err = fmt.Errorf("%w: %v", ErrLiveFrames, err)
		}
		if b.cfg.Generator != GenAuto {
			if errors.Is(err, ErrLiveFrames) {
				return fmt.Errorf("bench upf: generator live: %w (-generator afxdp or packet sends from user space)", err)
			}
			return fmt.Errorf("bench upf: generator %s: %w", gen, err)
		}
		refused = append(refused, fmt.Sprintf("%s: %v", gen, err))
	}
	return fmt.Errorf("bench upf: no generator works here: %s", strings.Join(refused, "; "))
}

// liveRefused reports whether err is the kernel refusing live frames
// rather than a fault of the run: EPERM where it denies them (a VM
// without CAP_SYS_RESOURCE in its bounding set) and EOPNOTSUPP, on any
// kernel; EINVAL only on a kernel older than 5.18, which predates
// BPF_F_TEST_XDP_LIVE_FRAMES and refuses the flag so. On a newer one
// EINVAL is a fault of the run (a bad frame, context or batch size), and
// must fail TestSmoke rather than make it skip.
func liveRefused(err error) bool {
	return liveRefusedOn(err, kernelRelease())
}

func liveRefusedOn(err error, release string) bool {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EOPNOTSUPP) {
		return true
	}
	if !errors.Is(err, unix.EINVAL) {
		return false
	}
	major, minor, ok := kernelVersion(release)
	return ok && (major < 5 || major == 5 && minor < 18)
}

// kernelRelease is uname -r ("6.8.0-45-generic"); "" where uname fails.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// kernelVersion reads the major and minor version at the start of a
// kernel release ("5.15.0-91-generic": 5, 15).
func kernelVersion(release string) (major, minor int, ok bool) {
	ma, rest, found := strings.Cut(release, ".")
	if !found {
		return 0, 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	major, err1 := strconv.Atoi(ma)
	minor, err2 := strconv.Atoi(rest[:end])
	return major, minor, err1 == nil && err2 == nil
}

// probe sends one frame with generator gen from ran's N3 veth.
func (b *bench) probe(gen string) error {
	t := b.t
	ss, err := Plan(1, netip.MustParsePrefix(poolStr), 0)
	if err != nil {
		return err
	}
	frame, _, err := uplinkFrame(t.coreN3.mac, t.ranN3.mac, t.gnb, t.n3, ss, MinSize)
	if err != nil {
		return err
	}
	return lab.Do(t.ranNS, func() error {
		if gen != GenLive {
			tx, err := openUserTX(gen, t.ranN3.name)
			if err != nil {
				return err
			}
			defer tx.close()
			copy(tx.buffers(1, len(frame))[0], frame)
			_, err = tx.send()
			return err
		}
		ifi, err := net.InterfaceByName(t.ranN3.name)
		if err != nil {
			return err
		}
		_, err = b.p.objs.XdpGen.Run(&ebpf.RunOptions{Data: frame, Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifi.Index)},
			Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES, BatchSize: liveBatch})
		return err
	})
}

// userGen is the user-space generator of the veth ifname in ns.
func (b *bench) userGen(ns, ifname string) *userGen {
	k := ns + "/" + ifname
	u := b.users[k]
	if u == nil {
		u = &userGen{mode: b.gen, ns: ns, ifname: ifname}
		b.users[k] = u
	}
	return u
}

func (b *bench) variants() []string {
	return append([]string{Generator}, b.cfg.Drivers...)
}

func isTern(v string) bool { return !slices.Contains(references, v) }

func (b *bench) run(ctx context.Context) error {
	pool := netip.MustParsePrefix(poolStr)
	for si, n := range b.cfg.Sessions {
		ss, err := Plan(n, pool, b.cfg.SDFEvery)
		if err != nil {
			return err
		}
		fmt.Fprintf(b.cfg.Out, "\n%d session(s): %d round(s) of %v per variant, size and direction\n", n, b.cfg.Repeat, b.cfg.Duration)
		vs := b.variants()
		for rep := range b.cfg.Repeat {
			// Rotate the order so that drift in the machine's load does
			// not always favour the same variant.
			order := append(slices.Clone(vs[rep%len(vs):]), vs[:rep%len(vs)]...)
			for _, v := range order {
				if err := ctx.Err(); err != nil {
					return err
				}
				st, err := b.upUnlessSkipped(ctx, v, ss)
				if st == nil {
					if err != nil {
						return err
					}
					continue
				}
				err = b.throughput(ctx, st, rep, b.rep.Throughput)
				if err == nil && b.cfg.Profile && rep == b.cfg.Repeat-1 {
					err = b.profile(ctx, st)
				}
				st.close()
				if err != nil {
					return err
				}
			}
		}
		if si == 0 && b.cfg.Sweep > 0 {
			if err := b.sweep(ctx, ss); err != nil {
				return err
			}
		}
		if si == 0 && b.cfg.Scaling {
			if err := b.scaling(ctx, ss); err != nil {
				return err
			}
		}
	}
	return nil
}

// upUnlessSkipped is up for variant v with the configured workers, or nil
// for a variant skipped already or now: a tern driver that does not start
// is skipped with the reason; a reference that does not is an error.
func (b *bench) upUnlessSkipped(ctx context.Context, v string, ss []Session) (*stage, error) {
	if _, skip := b.rep.Skipped[v]; skip {
		return nil, nil
	}
	st, err := b.up(ctx, v, ss, b.cfg.Workers)
	if err != nil && isTern(v) {
		b.skip(v, err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (b *bench) skip(v string, err error) {
	b.rep.Skipped[v] = err.Error()
	fmt.Fprintf(b.cfg.Out, "  %-9s skipped: %v\n", v, err)
}

// stage is one variant set up on the core: its XDP programs, and for tern
// the UPF with the sessions installed.
type stage struct {
	variant string
	workers int
	links   []link.Link
	u       *upf.UPF
	n4      pfcp.UserPlane
	ss      []Session
	cancel  context.CancelFunc
	undo    []func() // bare-xdp-cpu's cpumap entry and thread affinity, bare-xdp-lookup's sessions
}

func (s *stage) close() error {
	var errs []error
	defer func() {
		for _, f := range s.undo {
			f()
		}
	}()
	if s.n4 != nil {
		errs = append(errs, Remove(context.Background(), s.n4, s.ss))
	}
	if s.u != nil {
		errs = append(errs, s.u.Close())
	}
	if s.cancel != nil {
		s.cancel()
	}
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// scalingCPUs is the xdp driver's upf.Config.XDPCPUs for w workers in
// the scaling table: the last w CPUs, so that with w < NumCPU the UPF's
// processing has CPUs of its own beside the generator's CPU 0; other
// drivers take Workers.
func scalingCPUs(v string, w int) string {
	if v != upf.DriverXDP {
		return ""
	}
	n := runtime.NumCPU()
	if w == 1 {
		return strconv.Itoa(n - 1)
	}
	return fmt.Sprintf("%d-%d", n-w, n-1)
}

// up prepares the core for variant v with sessions ss.
func (b *bench) up(ctx context.Context, v string, ss []Session, workers int) (*stage, error) {
	return b.upWith(ctx, v, ss, workers, b.cfg.XDPCPUs)
}

// upWith is up with the xdp driver's CPUs given (upf.Config.XDPCPUs).
func (b *bench) upWith(ctx context.Context, v string, ss []Session, workers int, xdpCPUs string) (st *stage, err error) {
	st = &stage{variant: v, workers: workers, ss: ss}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	t := b.t
	prog := map[string]*ebpf.Program{
		Generator: b.p.objs.XdpSink, BareXDP: b.p.objs.XdpFwd, BareXDPCPU: b.p.objs.XdpFwdSteer,
		BareXDPLookup: b.p.objs.XdpFwdLookup, Kernel: b.p.objs.XdpPass, upf.DriverPortable: b.p.objs.XdpPass,
	}[v]
	// The references' next hops: uplink out of N6 to dn, downlink out of
	// N3 to ran.
	ul := fwdPort(t.coreN6.index, t.coreN6.mac, t.dnN6.mac)
	dl := fwdPort(t.coreN3.index, t.coreN3.mac, t.ranN3.mac)
	if v == BareXDP || v == BareXDPCPU {
		if err := b.p.setForward(t.coreN3.index, ul); err != nil {
			return st, err
		}
		if err := b.p.setForward(t.coreN6.index, dl); err != nil {
			return st, err
		}
	}
	if v == BareXDPLookup {
		undo, err := b.p.setSessions(ss, ul, dl)
		if err != nil {
			return st, err
		}
		st.undo = append(st.undo, undo)
	}
	if v == BareXDPCPU {
		cpus, _ := xdp.ParseCPUList(xdpCPUs) // checked by defaults
		undo, err := b.p.forwardOn(cpus[0])
		if err != nil {
			return st, err
		}
		st.undo = append(st.undo, undo)
		// As the xdp driver does with its CPUs (upf/driver.go).
		if ex, err := affinity.Exclude(cpus); err == nil {
			st.undo = append(st.undo, ex.Restore)
		}
	}
	if prog != nil {
		for _, at := range []port{t.coreN3, t.coreN6} {
			l, err := attach(at.ns, at.name, prog)
			if err != nil {
				return st, err
			}
			st.links = append(st.links, l)
		}
	}
	if !isTern(v) {
		return st, nil
	}
	topo := Topology{SMF: netip.MustParseAddr("127.0.0.1"), N3: t.n3, GNB: t.gnb, DNN: dnn}
	u, err := upf.New(upf.Config{
		Driver:  v,
		N3Addr:  netip.AddrPortFrom(t.n3, 2152).String(),
		N3Iface: t.coreN3.name,
		N6: []upf.N6Config{{DNN: dnn, Pool: poolStr, MTU: n6MTU,
			Iface: t.coreN6.name, Gateway: t.n6DN.String()}},
		Workers: workers,
		XDPCPUs: xdpCPUs,
	}, nil)
	if err != nil {
		return st, err
	}
	st.u = u
	var uctx context.Context
	uctx, st.cancel = context.WithCancel(ctx)
	// Start opens N3 and N6 on this thread: in the core namespace.
	if err := lab.Do(t.coreNS, func() error { return u.Start(uctx) }); err != nil {
		return st, err
	}
	n4 := pfcp.Direct(u.Handler(), nil)
	resp, err := n4.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: pfcp.NodeID{IP: topo.SMF}, RecoveryTime: time.Now()})
	if err != nil {
		return st, fmt.Errorf("bench upf: PFCP association with the UPF: %w", err)
	}
	if resp.Cause != pfcp.CauseRequestAccepted {
		return st, fmt.Errorf("bench upf: PFCP association with the UPF: cause %v", resp.Cause)
	}
	st.n4 = n4
	if err := b.install(ctx, st, topo); err != nil {
		return st, err
	}
	return st, nil
}

// install establishes the sessions and sends uplink over all of them until
// the sink has seen each: the rule programming rate as the fast path
// sees it.
func (b *bench) install(ctx context.Context, st *stage, topo Topology) error {
	n := len(st.ss)
	if err := b.p.resetSink(); err != nil {
		return err
	}
	g, err := b.generator(st.variant, Uplink, MinSize, st.ss)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := Install(ctx, st.n4, topo, st.ss); err != nil {
		return err
	}
	installed := time.Since(start)
	// Time to see every session's traffic once they are all installed.
	limit := installed + 5*time.Second + time.Duration(n)*50*time.Microsecond
	for {
		if _, _, err := g.run(20*time.Millisecond, 0); err != nil {
			return err
		}
		seen, err := b.p.sessionsSeen(n)
		if err != nil {
			return err
		}
		if seen == n {
			break
		}
		if time.Since(start) > limit {
			return fmt.Errorf("bench upf: %s: %d of %d sessions forward uplink %v after their installation began", st.variant, seen, n, limit)
		}
	}
	s := InstallSample{Sessions: n, Installed: installed, Forwarding: time.Since(start)}
	k := Key{Variant: st.variant, Sessions: n, Workers: st.workers}
	b.rep.Install[k] = append(b.rep.Install[k], s)
	fmt.Fprintf(b.cfg.Out, "  %-9s %d session(s) installed in %v (%.0f/s), all forwarding after %v (%.0f/s)%s\n",
		st.variant, n, installed.Round(time.Microsecond), s.EstablishRate(), s.Forwarding.Round(time.Microsecond), s.ForwardRate(), indexed(st))
	// Let the burst drain before the first measured run.
	time.Sleep(b.cfg.Drain)
	return nil
}

// generator returns the generator of variant v's traffic in direction dir.
func (b *bench) generator(v, dir string, size int, ss []Session) (*generator, error) {
	t := b.t
	g := &generator{p: b.p}
	var err error
	switch {
	case dir == Uplink && v == Kernel:
		g.ns, g.ifname = t.ranNS, t.ranN3.name
		g.frame, g.cfg, err = plainFrame(t.coreN3.mac, t.ranN3.mac, t.gnb, dnServer, len(ss), size)
	case dir == Uplink:
		g.ns, g.ifname = t.ranNS, t.ranN3.name
		g.frame, g.cfg, err = uplinkFrame(t.coreN3.mac, t.ranN3.mac, t.gnb, t.n3, ss, size)
	case dir == Downlink && v == Kernel:
		g.ns, g.ifname = t.dnNS, t.dnN6.name
		g.frame, g.cfg, err = plainFrame(t.coreN6.mac, t.dnN6.mac, dnServer, t.gnb, len(ss), size)
	default:
		g.ns, g.ifname = t.dnNS, t.dnN6.name
		g.frame, g.cfg, err = downlinkFrame(t.coreN6.mac, t.dnN6.mac, ss, size)
	}
	if b.cfg.Scattered {
		g.cfg.Stride = scatterStride(len(ss))
	}
	if b.gen != GenLive {
		g.user = b.userGen(g.ns, g.ifname)
	}
	return g, err
}

// scatterStride is the generator's stride for a scattered order over n
// sessions: coprime to n, so that frame k's session k*stride mod n visits
// every session once per n frames, and near n times the golden ratio's
// fraction, so that consecutive frames' sessions lie far apart (no
// prefetcher follows them, as none follows real traffic's sessions).
// 0 (index order) for n < 3, where there is nothing to scatter.
func scatterStride(n int) uint32 {
	if n < 3 {
		return 0
	}
	s := int(float64(n) * 0.6180339887)
	for gcd(s, n) != 1 {
		s++
	}
	return uint32(s)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// measure runs g for d at rate (0 = flat out) and counts what the sink saw.
func (b *bench) measure(ctx context.Context, g *generator, d time.Duration, rate float64) (Sample, error) {
	if err := b.p.resetSink(); err != nil {
		return Sample{}, err
	}
	sent, elapsed, err := g.run(d, rate)
	if err != nil {
		return Sample{}, err
	}
	select {
	case <-time.After(b.cfg.Drain):
	case <-ctx.Done():
		return Sample{}, ctx.Err()
	}
	st, err := b.p.readSink()
	if err != nil {
		return Sample{}, err
	}
	return Sample{Sent: sent, Delivered: st.Packets, Elapsed: elapsed, Sink: st}, nil
}

// throughput measures every size and direction flat out on stage st.
func (b *bench) throughput(ctx context.Context, st *stage, round int, into map[Key][]Sample) error {
	for _, size := range b.cfg.Sizes {
		for _, dir := range b.cfg.Directions {
			s, err := b.flatOut(ctx, st, dir, size)
			if err != nil {
				return err
			}
			k := Key{Variant: st.variant, Dir: dir, Size: size, Sessions: len(st.ss), Workers: st.workers}
			into[k] = append(into[k], s)
			hit := ""
			if h, ok := s.FlowHitRate(); ok {
				hit = fmt.Sprintf("  flow cache hits %.1f%%", 100*h)
			}
			fmt.Fprintf(b.cfg.Out, "  round %d %-12s %-8s %5d B  offered %9.0f pps  delivered %9.0f pps  loss %5.1f%%%s\n",
				round+1, st.variant, dir, size, s.OfferedPPS(), s.PPS(), 100*s.Loss(), hit)
		}
	}
	return nil
}

// flatOut checks the path carries packets at a gentle rate, then measures
// it with the generator flat out.
func (b *bench) flatOut(ctx context.Context, st *stage, dir string, size int) (Sample, error) {
	g, err := b.generator(st.variant, dir, size, st.ss)
	if err != nil {
		return Sample{}, err
	}
	// A run whose setup outlasts its time sends nothing (a BPF_PROG_RUN
	// sets up for ~25 ms, longer on a loaded machine): try again, longer.
	var w Sample
	for d := 30 * time.Millisecond; d <= 480*time.Millisecond; d *= 4 {
		if w, err = b.measure(ctx, g, d, 20000); err != nil {
			return Sample{}, err
		}
		if w.Sent > 0 {
			break
		}
	}
	if w.Delivered == 0 {
		return Sample{}, fmt.Errorf("bench upf: %s %s %d B: nothing of %d packets at 20 kpps arrived (%d unstamped frames at the sink)%s",
			st.variant, dir, size, w.Sent, w.Sink.Other, b.upfState(st))
	}
	hits0, misses0 := flowCache(st)
	s, err := b.measure(ctx, g, b.cfg.Duration, 0)
	hits, misses := flowCache(st)
	s.FlowHits, s.FlowMisses = hits-hits0, misses-misses0
	return s, err
}

// indexed says how many of the xdp driver's keys are in its session index
// (nothing for the other drivers).
func indexed(st *stage) string {
	if st.u == nil {
		return ""
	}
	if x := st.u.Stats().XDP; x != nil {
		return fmt.Sprintf("; %d of %d TEIDs and UE addresses in the session index", x.Indexed, x.Keys)
	}
	return ""
}

// flowCache reads the xdp driver's flow cache counters (0 for the others).
func flowCache(st *stage) (hits, misses uint64) {
	if st.u == nil {
		return 0, 0
	}
	if x := st.u.Stats().XDP; x != nil {
		return x.FlowCacheHits, x.FlowCacheMisses
	}
	return 0, 0
}

func (b *bench) upfState(st *stage) string {
	if st.u == nil {
		return ""
	}
	s := st.u.Stats()
	return fmt.Sprintf("; UPF: UL %d DL %d forwarded, drops %v, N3 rx %d tx %d, N6 rx %d tx %d",
		s.Pipeline.ULPackets, s.Pipeline.DLPackets, s.Pipeline.Drops, s.Driver.N3Rx, s.Driver.N3Tx, s.Driver.N6Rx, s.Driver.N6Tx)
}

// sweep measures latency against offered load for every variant but the
// generator: Sweep rates evenly up to 1.2 times the variant's median
// throughput, so the last steps lie past the loss knee.
func (b *bench) sweep(ctx context.Context, ss []Session) error {
	fmt.Fprintf(b.cfg.Out, "\nlatency sweep, %d session(s): %d rates per variant, %v each\n", len(ss), b.cfg.Sweep, b.cfg.SweepDuration)
	for _, v := range b.cfg.Drivers {
		st, err := b.upUnlessSkipped(ctx, v, ss)
		if st == nil {
			if err != nil {
				return err
			}
			continue
		}
		err = b.sweepStage(ctx, st)
		st.close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) sweepStage(ctx context.Context, st *stage) error {
	for _, size := range b.cfg.Sizes {
		for _, dir := range b.cfg.Directions {
			k := Key{Variant: st.variant, Dir: dir, Size: size, Sessions: len(st.ss), Workers: st.workers}
			top := median(pps(b.rep.Throughput[k]))
			if top <= 0 {
				continue
			}
			g, err := b.generator(st.variant, dir, size, st.ss)
			if err != nil {
				return err
			}
			for i := 1; i <= b.cfg.Sweep; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				rate := 1.2 * top * float64(i) / float64(b.cfg.Sweep)
				s, err := b.measure(ctx, g, b.cfg.SweepDuration, rate)
				if err != nil {
					return err
				}
				p := latencyPoint(k, rate, s)
				b.rep.Latency = append(b.rep.Latency, p)
				fmt.Fprintf(b.cfg.Out, "  %-12s %-8s %5d B  offered %9.0f pps  delivered %9.0f  loss %5.1f%%  p50 %7.1f  p99 %7.1f  p99.9 %7.1f µs  jitter %6.1f µs\n",
					st.variant, dir, size, p.Offered, p.Delivered, 100*p.Loss, p.P50, p.P99, p.P999, p.Jitter)
			}
		}
	}
	return nil
}

// scaling measures tern's drivers with 1..NumCPU UPF workers.
func (b *bench) scaling(ctx context.Context, ss []Session) error {
	fmt.Fprintf(b.cfg.Out, "\nscaling, %d session(s): UPF workers 1..%d\n", len(ss), runtime.NumCPU())
	for _, v := range b.cfg.Drivers {
		if _, skip := b.rep.Skipped[v]; skip || !isTern(v) {
			continue
		}
		for w := 1; w <= runtime.NumCPU(); w++ {
			st, err := b.upWith(ctx, v, ss, w, scalingCPUs(v, w))
			if err != nil {
				// The scaling of this driver ends here (an interface
				// with fewer queues than workers, say); its other rows
				// stand.
				fmt.Fprintf(b.cfg.Out, "  %-9s scaling stops at %d worker(s): %v\n", v, w, err)
				break
			}
			for range b.cfg.Repeat {
				if err = b.throughput(ctx, st, 0, b.rep.Scaling); err != nil {
					break
				}
			}
			st.close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}
