package upf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/upf/xdp"
)

// progs is the loaded BPF object: the generator, sink, forwarder and
// pass-through programs and their maps (bpf/bench.c). BPF objects belong to
// no network namespace; only the ifindexes they are given do.
type progs struct {
	objs benchObjects
	ncpu int
	// nsPerRun is the generator's cost per run, flat out (false) and
	// paced (true), and callCost the fixed cost of a BPF_PROG_RUN, as
	// last measured.
	nsPerRun map[bool]float64
	callCost time.Duration
}

// loadProgs loads bpf/bench.c, with room for maxSessions sessions in
// bare-xdp-lookup's maps.
func loadProgs(maxSessions int) (*progs, error) {
	// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("bench upf: memlock: %w", err)
	}
	p := &progs{nsPerRun: map[bool]float64{false: 200, true: 50}}
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("bench upf: %w", err)
	}
	p.ncpu = n
	spec, err := loadBench()
	if err != nil {
		return nil, fmt.Errorf("bench upf: %w", err)
	}
	spec.Maps["fwd_cpus"].MaxEntries = uint32(n)
	spec.Maps["fwd_teids"].MaxEntries = uint32(max(maxSessions, 1))
	spec.Maps["fwd_ues"].MaxEntries = uint32(max(maxSessions, 1))
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("bench upf: load BPF programs: %+v", ve)
		}
		return nil, fmt.Errorf("bench upf: load BPF programs: %w", err)
	}
	return p, nil
}

func (p *progs) Close() error { return p.objs.Close() }

// attach attaches prog to the interface named ifname in namespace ns, in
// native (driver) mode: veth has it, and generic mode would not receive
// XDP_TX/redirected frames from the peer.
func attach(ns, ifname string, prog *ebpf.Program) (link.Link, error) {
	var l link.Link
	err := lab.Do(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bench upf: attach XDP %s on %s/%s: %w", prog, ns, ifname, err)
	}
	return l, nil
}

// genConfig is what the generator rewrites in each frame (struct
// gen_config).
type genConfig = benchGenConfig

// genSeq is the number of frames the generator has made so far.
func (p *progs) genSeq() (uint64, error) {
	var v benchGenState
	if err := p.objs.GenState.Lookup(uint32(0), &v); err != nil {
		return 0, fmt.Errorf("bench upf: read generator counter: %w", err)
	}
	return v.Seq, nil
}

// xdpMD is struct xdp_md, the context of an XDP program run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// generator sends frames with BPF_PROG_RUN in live-frames mode
// (xdp-trafficgen's method): the kernel makes a page pool of copies of the
// frame, runs xdp_gen on each, and transmits what returns XDP_TX from the
// interface named in the context, as if the driver had received it there.
type generator struct {
	p       *progs
	ns      string // the namespace of the sending interface
	ifname  string
	frame   []byte
	cfg     genConfig
	ifindex uint32
	// user, when set, sends the frames from user space instead
	// (usergen.go): the kernel refuses live frames here, or the run
	// asked for it.
	user *userGen
}

// Live-frames batch: how many frames the kernel prepares and flushes at
// once (its default).
const liveBatch = 64

// run sends frames for d, at rate frames/s, evenly spaced (0 = as fast as
// it can), with live frames or, with g.user, from user space. It returns
// how many frames the generator made and the time from the first to the
// last (the kernel's clock). The calling goroutine's thread is moved into
// g.ns for the duration.
func (g *generator) run(d time.Duration, rate float64) (sent uint64, elapsed time.Duration, err error) {
	if g.user != nil {
		return g.user.run(g, d, rate)
	}
	var h benchHdr
	g.cfg.HdrWords = uint32(min(int(g.cfg.StampOff+7)/8, len(h.W)))
	for i := range h.W[:g.cfg.HdrWords] {
		var w [8]byte
		copy(w[:], g.frame[min(i*8, len(g.frame)):])
		h.W[i] = binary.NativeEndian.Uint64(w[:])
	}
	if err := g.p.objs.GenHdr.Update(uint32(0), &h, ebpf.UpdateAny); err != nil {
		return 0, 0, fmt.Errorf("bench upf: generator headers: %w", err)
	}
	g.cfg.Interval = 0
	if rate > 0 {
		g.cfg.Interval = uint64(1e9 / rate)
	}
	err = lab.Do(g.ns, func() error { return onCPU0(func() error { return g.runLive(d, rate, &sent, &elapsed) }) })
	return sent, elapsed, err
}

// runLive is run with live frames, on the calling thread, in g's
// namespace.
func (g *generator) runLive(d time.Duration, rate float64, sent *uint64, elapsed *time.Duration) error {
	ifi, err := net.InterfaceByName(g.ifname)
	if err != nil {
		return fmt.Errorf("bench upf: generator interface %s/%s: %w", g.ns, g.ifname, err)
	}
	g.ifindex = uint32(ifi.Index)
	if g.p.callCost == 0 {
		t0 := time.Now()
		if err := g.once(1); err != nil {
			return err
		}
		g.p.callCost = time.Since(t0)
	}
	// The pacing clock and the run's first and last frame start
	// afresh.
	seq0, err := g.p.genSeq()
	if err != nil {
		return err
	}
	if err := g.p.objs.GenState.Update(uint32(0), &benchGenState{Seq: seq0}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("bench upf: generator state: %w", err)
	}
	stop := ktime() + d
	g.cfg.Stop = uint64(stop)
	if err := g.p.objs.GenCfg.Update(uint32(0), &g.cfg, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("bench upf: generator config: %w", err)
	}
	for {
		left := stop - ktime()
		if left <= 0 {
			break
		}
		// One call for the time left, from the cost per run seen
		// so far (with a margin: runs past the stop are cheap); a
		// call that ends early is followed by another.
		k := g.p.nsPerRun[rate > 0]
		n := uint32(min(max(1.3*float64(left)/k, 1024), 1<<31))
		t0 := time.Now()
		if err := g.once(n); err != nil {
			return err
		}
		if dt := time.Since(t0) - g.p.callCost; dt > 10*time.Millisecond {
			g.p.nsPerRun[rate > 0] = max(float64(dt)/float64(n), 5)
		}
	}
	var gs benchGenState
	if err := g.p.objs.GenState.Lookup(uint32(0), &gs); err != nil {
		return fmt.Errorf("bench upf: read generator state: %w", err)
	}
	*elapsed = time.Duration(gs.Last - gs.First)
	seq1, err := g.p.genSeq()
	if err != nil {
		return err
	}
	*sent = seq1 - seq0
	return nil
}

// once runs the generator n times.
func (g *generator) once(n uint32) error {
	// The kernel wants data_end to be the frame's length, and the ingress
	// device's receive queue registered: the sending veth has an XDP
	// program (the sink), which registers it.
	ctx := xdpMD{DataEnd: uint32(len(g.frame)), IngressIfindex: g.ifindex}
	_, err := g.p.objs.XdpGen.Run(&ebpf.RunOptions{
		Data:      g.frame,
		Context:   ctx,
		Repeat:    n,
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: liveBatch,
	})
	if err != nil {
		return fmt.Errorf("bench upf: BPF_PROG_RUN of the generator on %s/%s: %w", g.ns, g.ifname, err)
	}
	return nil
}

// sinkStats is the sum over CPUs of the sink's counters.
type sinkStats struct {
	Packets, Bytes, Other uint64
	LatSum                uint64 // ns
	IPDVSum, IPDVN        uint64 // ns, samples
	Hist                  Histogram
}

// resetSink zeroes the sink's counters and its record of sessions seen.
func (p *progs) resetSink() error {
	zero := make([]benchSinkStats, p.ncpu)
	if err := p.objs.SinkStats.Update(uint32(0), zero, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("bench upf: reset sink: %w", err)
	}
	words := p.objs.Seen.MaxEntries()
	keys := make([]uint32, words)
	vals := make([]uint64, words)
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := p.objs.Seen.BatchUpdate(keys, vals, nil); err != nil {
		// Batch updates of arrays need 5.6; fall back to one at a time.
		for i := range keys {
			if err := p.objs.Seen.Update(keys[i], vals[i], ebpf.UpdateAny); err != nil {
				return fmt.Errorf("bench upf: reset sink sessions: %w", err)
			}
		}
	}
	return nil
}

// readSink sums the sink's per-CPU counters.
func (p *progs) readSink() (sinkStats, error) {
	var per []benchSinkStats
	if err := p.objs.SinkStats.Lookup(uint32(0), &per); err != nil {
		return sinkStats{}, fmt.Errorf("bench upf: read sink: %w", err)
	}
	s := sinkStats{Hist: make(Histogram, NBuckets)}
	for _, c := range per {
		s.Packets += c.Packets
		s.Bytes += c.Bytes
		s.Other += c.Other
		s.LatSum += c.LatSum
		s.IPDVSum += c.IpdvSum
		s.IPDVN += c.IpdvN
		for i, v := range c.Hist {
			s.Hist[i] += v
		}
	}
	return s, nil
}

// sessionsSeen counts the session indexes below n that reached the sink.
func (p *progs) sessionsSeen(n int) (int, error) {
	seen := 0
	var v uint64
	for w := 0; w*64 < n; w++ {
		if err := p.objs.Seen.Lookup(uint32(w), &v); err != nil {
			return 0, fmt.Errorf("bench upf: read sink sessions: %w", err)
		}
		if left := n - w*64; left < 64 {
			v &= 1<<left - 1
		}
		seen += bits.OnesCount64(v)
	}
	return seen, nil
}

// fwdPort is a forwarder's next hop: out, from srcMAC (out's own) to
// dstMAC (the peer's).
func fwdPort(out int, srcMAC, dstMAC net.HardwareAddr) benchFwdPort {
	v := benchFwdPort{OutIfindex: uint32(out)}
	copy(v.Src[:], srcMAC)
	copy(v.Dst[:], dstMAC)
	return v
}

// setForward programs the bare-xdp forwarder: frames arriving on in
// leave through next hop v.
func (p *progs) setForward(in int, v benchFwdPort) error {
	if err := p.objs.FwdPorts.Update(uint32(in), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("bench upf: forwarder port %d: %w", in, err)
	}
	return nil
}

// setSessions gives bare-xdp-lookup the sessions ss: each uplink TEID
// leads to ul, each UE address to dl. undo removes them.
func (p *progs) setSessions(ss []Session, ul, dl benchFwdPort) (undo func(), err error) {
	teids := make([]uint32, len(ss))
	ues := make([]uint32, len(ss))
	uls := make([]benchFwdPort, len(ss))
	dls := make([]benchFwdPort, len(ss))
	for i, s := range ss {
		a := s.UE.As4()
		teids[i], ues[i] = s.ULTEID, binary.NativeEndian.Uint32(a[:]) // the address as it lies in the frame
		uls[i], dls[i] = ul, dl
	}
	undo = func() {
		p.objs.FwdTeids.BatchDelete(teids, nil)
		p.objs.FwdUes.BatchDelete(ues, nil)
	}
	if _, err := p.objs.FwdTeids.BatchUpdate(teids, uls, nil); err != nil {
		undo()
		return nil, fmt.Errorf("bench upf: bare-xdp-lookup TEIDs: %w", err)
	}
	if _, err := p.objs.FwdUes.BatchUpdate(ues, dls, nil); err != nil {
		undo()
		return nil, fmt.Errorf("bench upf: bare-xdp-lookup UE addresses: %w", err)
	}
	return undo, nil
}

// forwardOn makes xdp_fwd_steer hand frames to cpu, where the cpumap
// thread forwards them (bare-xdp-cpu). undo removes the cpumap entry, which
// stops that thread.
func (p *progs) forwardOn(cpu int) (undo func(), err error) {
	// The xdp driver's queue size: the same path.
	v := xdp.CPUMapVal{Qsize: xdp.CPUMapQueue, ProgFD: int32(p.objs.XdpFwdCpu.FD())}
	if err := p.objs.FwdCpus.Update(uint32(cpu), &v, ebpf.UpdateAny); err != nil {
		return nil, fmt.Errorf("bench upf: cpumap entry for CPU %d: %w", cpu, err)
	}
	if err := p.objs.FwdCpu.Update(uint32(0), uint32(cpu), ebpf.UpdateAny); err != nil {
		p.objs.FwdCpus.Delete(uint32(cpu))
		return nil, fmt.Errorf("bench upf: forwarding CPU: %w", err)
	}
	return func() { p.objs.FwdCpus.Delete(uint32(cpu)) }, nil
}

// ktime is bpf_ktime_get_ns's clock, CLOCK_MONOTONIC.
func ktime() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}
