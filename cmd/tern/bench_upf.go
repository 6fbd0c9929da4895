package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tern5g/tern/internal/traffic"
	"github.com/tern5g/tern/internal/upfbench"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/upf"
)

// The target: the UPF delivers at least this fraction of what plain
// kernel forwarding delivers on the same path, for 1400-byte packets.
const (
	upfTargetRatio = 0.4
	upfTargetSize  = 1400
)

// Lab-side constants of the UPF benchmark.
const (
	upfBenchDNN   = "internet"
	upfBenchPool  = "10.60.0.0/16"
	upfBenchMTU   = 1400 // the N6 device's MTU: the largest inner packet
	upfSinkPort   = 9000 // UDP sinks of the plain packets (DN server, gNB side)
	upfWarmup     = 200 * time.Millisecond
	upfWarmupWait = 100 * time.Millisecond
)

// upfKey names one measured series.
type upfKey struct {
	sessions int
	size     int
	dir      string // "uplink" or "downlink"
	path     string // "upf" or "kernel"
}

// benchUPF measures packets per second delivered through tern's UPF
// (portable driver: N3 UDP socket, N6 TUN) between lab namespaces, against
// plain kernel IP forwarding through the same core namespace, interleaved
// in the same run.
func benchUPF(args []string) error {
	fs := flag.NewFlagSet("bench upf", flag.ContinueOnError)
	dur := fs.Duration("duration", 3*time.Second, "sending time of each run")
	sizesFlag := fs.String("sizes", "64,1400", "packet sizes, bytes: IPv4 total length of the user's packet (the inner packet on N3)")
	sessFlag := fs.String("sessions", "1,1000", "PDU sessions installed; traffic is spread over all of them")
	repeat := fs.Int("repeat", 3, "runs of each path (UPF and kernel interleaved); the median is reported")
	workers := fs.Int("workers", 1, "UPF N3 reader goroutines (upf.workers)")
	drain := fs.Duration("drain", 300*time.Millisecond, "wait after sending before counting what arrived")
	dirsFlag := fs.String("directions", "uplink,downlink", "directions to measure, comma-separated")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkFlags(
		positiveDuration("duration", *dur),
		atLeast("repeat", *repeat, 1),
		atLeast("workers", *workers, 1),
		nonNegativeDuration("drain", *drain),
	); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root: the benchmark builds network namespaces, veth links and the UPF's N6 TUN (run it with sudo)")
	}
	if err := lab.Check(); err != nil {
		return err
	}
	sizes, err := parseInts(*sizesFlag, "--sizes")
	if err != nil {
		return err
	}
	for _, s := range sizes {
		if err := upfbench.CheckSize(s, upfBenchMTU); err != nil {
			return fmt.Errorf("--sizes: %w", err)
		}
	}
	var dirs []string
	for _, d := range strings.Split(*dirsFlag, ",") {
		switch d = strings.TrimSpace(d); d {
		case "uplink", "downlink":
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		default:
			return fmt.Errorf("--directions: %q is not uplink or downlink", d)
		}
	}
	sessCounts, err := parseInts(*sessFlag, "--sessions")
	if err != nil {
		return err
	}
	if *dur <= 0 || *repeat < 1 || *workers < 1 || *drain < 0 {
		return errors.New("--duration, --repeat and --workers must be positive")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	prefix := "tbu" + strconv.Itoa(os.Getpid())
	l, err := lab.New(lab.Config{Prefix: prefix, DNNs: []string{upfBenchDNN}})
	if err != nil {
		return err
	}
	m := report.ThisMachine()
	fmt.Printf("tern bench upf on %s\n", m)
	fmt.Printf("  lab %s: %s | %s | %s; UPF in %s (N3 %s:2152, N6 TUN %s, pool %s), %d N3 worker(s)\n",
		prefix, l.RAN(), l.Core(), l.DN(upfBenchDNN), l.Core(), lab.CoreN3, lab.TUN(upfBenchDNN), upfBenchPool, *workers)
	fmt.Printf("  size = IPv4 total length of the user's packet: the inner packet on the UPF paths (N3 adds %d B: outer IPv4, UDP, GTP-U with PDU Session Container), the packet itself on the kernel paths\n", upfbench.Overhead)
	fmt.Printf("  generator, UPF, sinks and kernel forwarding all share these %d CPUs (one process for the generator, UPF and sinks)\n", m.CPUs)
	if err := l.Up(ctx); err != nil {
		return err
	}
	defer func() {
		if err := l.Down(); err != nil {
			fmt.Fprintf(os.Stderr, "tern bench upf: lab teardown: %v\n", err)
		}
	}()
	bed, err := newUPFBed(ctx, l, *workers)
	if err != nil {
		return err
	}
	defer bed.close()

	samples := map[upfKey][]upfbench.Sample{}
	for _, n := range sessCounts {
		if err := bed.measureSessions(ctx, n, sizes, dirs, *repeat, *dur, *drain, samples); err != nil {
			return err
		}
	}

	doc := report.NewDoc("upf", map[string]any{
		"duration_s": dur.Seconds(), "sizes": sizes, "directions": dirs, "sessions": sessCounts, "repeat": *repeat, "workers": *workers,
		"drain_s": drain.Seconds(), "lab": prefix, "upf": "portable driver: N3 UDP socket (recvmmsg/sendmmsg), N6 TUN",
		"size":      fmt.Sprintf("IPv4 total length of the user's packet (inner on N3, which adds %d B)", upfbench.Overhead),
		"reference": "plain kernel IPv4 forwarding through the core namespace, same links",
		"cpus":      "generator, UPF, sinks and kernel forwarding share the machine's CPUs",
		"pps":       "packets delivered to the sink per second of sending time; failures = runs that lost packets",
	})
	printUPFResults(samples, sessCounts, sizes, dirs, doc)
	st := bed.u.Stats()
	fmt.Printf("\nUPF counters over the whole run: UL %d, DL %d forwarded; drops: %s; N3 rx %d tx %d, N6 rx %d tx %d, tx errors %d\n",
		st.Pipeline.ULPackets, st.Pipeline.DLPackets, report.Counts(st.Pipeline.Drops),
		st.Driver.N3Rx, st.Driver.N3Tx, st.Driver.N6Rx, st.Driver.N6Tx, st.Driver.TxErrors)
	fmt.Println("(UPF/kernel = ratio of the medians; paired = median of each round's UPF run over the kernel run beside it; the target counts as met when both are >= 0.4)")
	fmt.Println("(loss = sent but not delivered: the generator offers more than the path carries, so the excess is dropped at a socket or device queue)")
	if *jsonPath != "" {
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s\n", *jsonPath)
	}
	return nil
}

func parseInts(s, flagName string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// upfBed is the UPF running in the lab's core namespace, an SMF-side N4
// binding to it, and the sender sockets in ran and the DN.
type upfBed struct {
	l    *lab.Lab
	u    *upf.UPF
	n4   pfcp.UserPlane
	topo upfbench.Topology
	ran  *net.UDPConn // sender in ran, on the gNB's N3 address
	dn   *net.UDPConn // sender in the DN, on the server's address
}

func newUPFBed(ctx context.Context, l *lab.Lab, workers int) (*upfBed, error) {
	u, err := upf.New(upf.Config{
		N3Addr:  netip.AddrPortFrom(lab.CoreN3, 2152).String(),
		N6:      []upf.N6Config{{DNN: upfBenchDNN, TUN: lab.TUN(upfBenchDNN), Pool: upfBenchPool, MTU: upfBenchMTU}},
		Workers: workers,
	}, nil)
	if err != nil {
		return nil, err
	}
	b := &upfBed{l: l, u: u, topo: upfbench.Topology{SMF: netip.MustParseAddr("127.0.0.1"), N3: lab.CoreN3, GNB: lab.RANN3, DNN: upfBenchDNN}}
	// Start opens N3 and the TUN on this thread, so they belong to core.
	if err := lab.Do(l.Core(), func() error { return u.Start(ctx) }); err != nil {
		return nil, err
	}
	b.n4 = pfcp.Direct(u.Handler(), nil)
	resp, err := b.n4.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: pfcp.NodeID{IP: b.topo.SMF}, RecoveryTime: time.Now()})
	if err != nil || resp.Cause != pfcp.CauseRequestAccepted {
		b.close()
		return nil, fmt.Errorf("pfcp association with the UPF: %v (cause %v)", err, causeOf(resp))
	}
	if b.ran, err = lab.ListenUDP(l.RAN(), netip.AddrPortFrom(lab.RANN3, 0).String()); err != nil {
		b.close()
		return nil, err
	}
	if b.dn, err = lab.ListenUDP(l.DN(upfBenchDNN), netip.AddrPortFrom(lab.DNServer, 0).String()); err != nil {
		b.close()
		return nil, err
	}
	for _, c := range []*net.UDPConn{b.ran, b.dn} {
		c.SetWriteBuffer(4 << 20)
	}
	return b, nil
}

func (b *upfBed) close() {
	for _, c := range []*net.UDPConn{b.ran, b.dn} {
		if c != nil {
			c.Close()
		}
	}
	b.u.Close()
}

// flow builds the datagrams of one direction and path over sessions ss.
func (b *upfBed) flow(dir, path string, size int, ss []upfbench.Session) (upfbench.Flow, error) {
	sink := func(ns string, addr netip.AddrPort) func() (*net.UDPConn, error) {
		return func() (*net.UDPConn, error) { return lab.ListenUDP(ns, addr.String()) }
	}
	dnSink := netip.AddrPortFrom(lab.DNServer, upfSinkPort)
	payload := upfbench.Payload(size)
	var f upfbench.Flow
	switch {
	case dir == "uplink" && path == "upf":
		// G-PDUs from the gNB to the UPF's N3, one per session, each with
		// the session's TEID and UE address, for the DN server.
		n3 := net.UDPAddrFromAddrPort(netip.AddrPortFrom(lab.CoreN3, 2152))
		f = upfbench.Flow{Send: b.ran, OpenSink: sink(b.l.DN(upfBenchDNN), dnSink)}
		for _, s := range ss {
			inner, err := upfbench.IPv4UDP(netip.AddrPortFrom(s.UE, upfSinkPort), dnSink, size)
			if err != nil {
				return f, err
			}
			f.Datagrams = append(f.Datagrams, traffic.Datagram{Payload: upfbench.UplinkGPDU(s.ULTEID, inner), To: n3})
		}
	case dir == "uplink" && path == "kernel":
		f = upfbench.Flow{Send: b.ran, OpenSink: sink(b.l.DN(upfBenchDNN), dnSink),
			Datagrams: []traffic.Datagram{{Payload: payload, To: net.UDPAddrFromAddrPort(dnSink)}}}
	case dir == "downlink" && path == "upf":
		// Plain UDP from the DN server to the UE addresses; the UPF
		// tunnels it to the gNB's N3 port.
		f = upfbench.Flow{Send: b.dn, OpenSink: sink(b.l.RAN(), netip.AddrPortFrom(lab.RANN3, 2152))}
		for _, s := range ss {
			f.Datagrams = append(f.Datagrams, traffic.Datagram{Payload: payload, To: net.UDPAddrFromAddrPort(netip.AddrPortFrom(s.UE, upfSinkPort))})
		}
	case dir == "downlink" && path == "kernel":
		to := netip.AddrPortFrom(lab.RANN3, upfSinkPort)
		f = upfbench.Flow{Send: b.dn, OpenSink: sink(b.l.RAN(), to),
			Datagrams: []traffic.Datagram{{Payload: payload, To: net.UDPAddrFromAddrPort(to)}}}
	default:
		return f, fmt.Errorf("no flow %s/%s", dir, path)
	}
	return f, nil
}

// measureSessions installs n sessions, checks every path carries packets,
// runs repeat rounds of every size and direction with the UPF and kernel
// runs interleaved (alternating which goes first), and removes the
// sessions.
func (b *upfBed) measureSessions(ctx context.Context, n int, sizes []int, dirs []string, repeat int, d, drain time.Duration, out map[upfKey][]upfbench.Sample) error {
	pool := netip.MustParsePrefix(upfBenchPool)
	ss, err := upfbench.Plan(n, pool)
	if err != nil {
		return err
	}
	if err := upfbench.Install(ctx, b.n4, b.topo, ss); err != nil {
		return err
	}
	defer upfbench.Remove(context.Background(), b.n4, ss)
	fmt.Printf("\n%d session(s) installed; measuring %d x %v per path, sizes %v\n", n, repeat, d, sizes)

	flows := map[upfKey]upfbench.Flow{}
	for _, size := range sizes {
		for _, dir := range dirs {
			for _, path := range []string{"upf", "kernel"} {
				f, err := b.flow(dir, path, size, ss)
				if err != nil {
					return err
				}
				k := upfKey{sessions: n, size: size, dir: dir, path: path}
				flows[k] = f
				// Warm-up: neighbour entries resolved, and proof that the
				// path carries packets at all before timing it.
				s, err := upfbench.Measure(ctx, f, upfWarmup, upfWarmupWait)
				if err != nil {
					return err
				}
				if s.Delivered == 0 {
					st := b.u.Stats()
					return fmt.Errorf("%s %s %d B with %d sessions: nothing arrived of %d sent (UPF: UL %d DL %d forwarded, drops: %s, N3 rx %d, N6 rx %d tx %d)",
						path, dir, size, n, s.Sent, st.Pipeline.ULPackets, st.Pipeline.DLPackets, report.Counts(st.Pipeline.Drops), st.Driver.N3Rx, st.Driver.N6Rx, st.Driver.N6Tx)
				}
			}
		}
	}
	for rep := range repeat {
		i := 0
		for _, size := range sizes {
			for _, dir := range dirs {
				order := []string{"upf", "kernel"}
				if (rep+i)%2 == 1 {
					order = []string{"kernel", "upf"}
				}
				i++
				for _, path := range order {
					k := upfKey{sessions: n, size: size, dir: dir, path: path}
					s, err := upfbench.Measure(ctx, flows[k], d, drain)
					if err != nil {
						return err
					}
					out[k] = append(out[k], s)
					fmt.Printf("  run %d  %-8s %5d B  %-6s %10.0f pps  loss %5.1f%%\n", rep+1, dir, size, path, s.PPS(), 100*s.Loss())
				}
			}
		}
	}
	return nil
}

// upfSeries is the summary of one series of samples.
type upfSeries struct {
	pps        []float64
	median     float64
	loss       float64 // median loss fraction
	lossyRuns  int
	sent, recv []uint64
}

func summarizeUPF(ss []upfbench.Sample) upfSeries {
	var r upfSeries
	var losses []float64
	for _, s := range ss {
		r.pps = append(r.pps, s.PPS())
		losses = append(losses, s.Loss())
		r.sent = append(r.sent, s.Sent)
		r.recv = append(r.recv, s.Delivered)
		if s.Delivered < s.Sent {
			r.lossyRuns++
		}
	}
	r.median = quantile(r.pps, 0.5)
	r.loss = quantile(losses, 0.5)
	return r
}

// quantile is the nearest-rank quantile of xs (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func printUPFResults(samples map[upfKey][]upfbench.Sample, sessCounts, sizes []int, dirs []string, doc *report.Doc) {
	upfMedian := map[upfKey]float64{}
	for _, n := range sessCounts {
		fmt.Printf("\n%d session(s): median of runs, packets/s delivered (Mbit/s of user packets)\n", n)
		fmt.Printf("  %-9s %6s %22s %7s %22s %7s %10s %7s\n", "direction", "size B", "UPF pps", "loss", "kernel pps", "loss", "UPF/kernel", "paired")
		for _, size := range sizes {
			for _, dir := range dirs {
				ku := upfKey{sessions: n, size: size, dir: dir, path: "upf"}
				kk := ku
				kk.path = "kernel"
				u, k := summarizeUPF(samples[ku]), summarizeUPF(samples[kk])
				upfMedian[ku] = u.median
				r := 0.0
				if k.median > 0 {
					r = u.median / k.median
				}
				// Each UPF run next to the kernel run of its round: the
				// ratio of a pair sees the same background load.
				var paired []float64
				for i := range min(len(u.pps), len(k.pps)) {
					if k.pps[i] > 0 {
						paired = append(paired, u.pps[i]/k.pps[i])
					}
				}
				pr := quantile(paired, 0.5)
				note := ""
				if size == upfTargetSize {
					note = "  target >= 0.4: met"
					if min(r, pr) < upfTargetRatio {
						note = "  target >= 0.4: MISSED"
					}
				}
				fmt.Printf("  %-9s %6d %10.0f (%7.1f) %6.1f%% %10.0f (%7.1f) %6.1f%% %10.2f %7.2f%s\n", dir, size,
					u.median, mbps(u.median, size), 100*u.loss, k.median, mbps(k.median, size), 100*k.loss, r, pr, note)
				name := fmt.Sprintf("%s-%dB-%dsess", dir, size, n)
				for _, x := range []struct {
					path string
					s    upfSeries
				}{{"upf", u}, {"kernel", k}} {
					extra := map[string]any{"direction": dir, "size_bytes": size, "sessions": n,
						"loss": x.s.loss, "sent": x.s.sent, "delivered": x.s.recv, "mbps": mbps(x.s.median, size)}
					if x.path == "upf" {
						extra["ratio_to_kernel"] = r
						extra["paired_ratios"] = paired
						extra["paired_ratio_median"] = pr
					}
					doc.Add(report.Result{Name: name, Variant: x.path, Unit: "pps", Count: len(x.s.pps), Failures: x.s.lossyRuns,
						Median: x.s.median, P90: quantile(x.s.pps, 0.9), P99: quantile(x.s.pps, 0.99), Max: quantile(x.s.pps, 1),
						Samples: x.s.pps, Extra: extra})
				}
			}
		}
	}
	if len(sessCounts) > 1 {
		lo, hi := slices.Min(sessCounts), slices.Max(sessCounts)
		if lo != hi {
			fmt.Printf("\nUPF with %d vs %d session(s) (ratio of median pps):\n", hi, lo)
			for _, size := range sizes {
				for _, dir := range dirs {
					a := upfMedian[upfKey{sessions: lo, size: size, dir: dir, path: "upf"}]
					b := upfMedian[upfKey{sessions: hi, size: size, dir: dir, path: "upf"}]
					if a > 0 {
						fmt.Printf("  %-9s %6d B  %.2f\n", dir, size, b/a)
					}
				}
			}
		}
	}
}

func mbps(pps float64, size int) float64 { return pps * float64(size) * 8 / 1e6 }
