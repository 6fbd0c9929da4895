// Command enginecmp measures the operations tern's resiliency needs of a
// replicated engine (issue 36 §2), on NATS JetStream and on etcd, each as
// one node embedded in this process and as a cluster of three processes on
// loopback, with a raw loopback TCP round trip of the same size as the
// reference of the same run:
//
//	append      append a 1 KiB entry and wait for the engine's
//	            acknowledgement (JetStream publish with ack; etcd put of a
//	            new key, whose revision is the sequence), 1 and 64
//	            concurrent writers
//	fenced      the same through resil/engine (epoch check, checksum)
//	cas         put a 1 KiB checkpoint with compare-and-set on its revision
//	            (JetStream KV update; etcd txn on mod_revision)
//	replay      read back every entry after a sequence
//	start, rss  the engine's start-up time and resident memory
//
// It is a module of its own so that etcd is no dependency of tern's:
//
//	cd bench/enginecmp && go run . -n 2000
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// memberFlag re-executes this program as one cluster member.
var (
	member   = flag.String("member", "", "internal: run as a cluster member of this engine (nats, etcd)")
	memberJS = flag.String("config", "", "internal: the member's configuration")
	ops      = flag.Int("n", 2000, "operations per measurement")
	engines  = flag.String("engines", "nats,etcd", "engines to measure")
	size     = flag.Int("size", 1024, "entry size in bytes")
)

func main() {
	flag.Parse()
	if *member != "" {
		if err := runMember(*member, *memberJS); err != nil {
			fmt.Fprintln(os.Stderr, "member:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "enginecmp:", err)
		os.Exit(1)
	}
}

// store is one engine set up for the measurement.
type store interface {
	// Append stores data as the next log entry and returns its sequence.
	Append(ctx context.Context, data []byte) (uint64, error)
	// CAS puts data under the checkpoint key if its revision is rev.
	CAS(ctx context.Context, data []byte, rev uint64) (uint64, error)
	// Replay reads every entry after seq and returns how many.
	Replay(ctx context.Context, after uint64) (int, error)
	Close()
}

type setup struct {
	name    string
	start   time.Duration // until the engine answers
	rssKiB  int64         // the engine's resident memory after start
	store   store
	fenced  store // resil/engine, nil where not measured
	cleanup func()
}

func run() error {
	ctx := context.Background()
	buf := make([]byte, *size)
	for i := range buf {
		buf[i] = byte(i)
	}
	fmt.Printf("# enginecmp: %d ops, %d B entries, GOMAXPROCS cores %d\n\n", *ops, *size, numCPU())
	ref, err := tcpRoundTrip(*ops, buf)
	if err != nil {
		return err
	}
	fmt.Println("| setup | op | writers | p50 µs | p99 µs | ops/s |")
	fmt.Println("|---|---|---|---|---|---|")
	printRow("loopback TCP", "round trip", 1, ref, 0)

	var setups []func() (*setup, error)
	for e := range strings.SplitSeq(*engines, ",") {
		switch e {
		case "nats":
			setups = append(setups, natsSingle, natsCluster)
		case "etcd":
			setups = append(setups, etcdSingle, etcdCluster)
		default:
			return fmt.Errorf("unknown engine %q", e)
		}
	}
	var starts []string
	for _, mk := range setups {
		s, err := mk()
		if err != nil {
			return err
		}
		starts = append(starts, fmt.Sprintf("| %s | %.0f | %d |", s.name, ms(s.start), s.rssKiB/1024))
		if err := measure(ctx, s, buf); err != nil {
			s.cleanup()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		s.cleanup()
	}
	fmt.Println("\n| setup | start ms | RSS MiB |")
	fmt.Println("|---|---|---|")
	for _, l := range starts {
		fmt.Println(l)
	}
	return nil
}

func measure(ctx context.Context, s *setup, buf []byte) error {
	for _, w := range []int{1, 64} {
		lat, wall, err := drive(*ops, w, func() error {
			_, err := s.store.Append(ctx, buf)
			return err
		})
		if err != nil {
			return fmt.Errorf("append: %w", err)
		}
		printRow(s.name, "append", w, lat, float64(*ops)/wall.Seconds())
	}
	if s.fenced != nil {
		for _, w := range []int{1, 64} {
			lat, wall, err := drive(*ops, w, func() error {
				_, err := s.fenced.Append(ctx, buf)
				return err
			})
			if err != nil {
				return fmt.Errorf("fenced append: %w", err)
			}
			printRow(s.name, "fenced append (resil/engine)", w, lat, float64(*ops)/wall.Seconds())
		}
	}
	var rev uint64
	var mu sync.Mutex
	lat, wall, err := drive(*ops, 1, func() error {
		mu.Lock()
		defer mu.Unlock()
		r, err := s.store.CAS(ctx, buf, rev)
		rev = r
		return err
	})
	if err != nil {
		return fmt.Errorf("cas: %w", err)
	}
	printRow(s.name, "checkpoint CAS", 1, lat, float64(*ops)/wall.Seconds())
	if s.fenced != nil {
		var rev uint64
		lat, wall, err := drive(*ops, 1, func() error {
			mu.Lock()
			defer mu.Unlock()
			r, err := s.fenced.CAS(ctx, buf, rev)
			rev = r
			return err
		})
		if err != nil {
			return fmt.Errorf("fenced cas: %w", err)
		}
		printRow(s.name, "fenced checkpoint (resil/engine)", 1, lat, float64(*ops)/wall.Seconds())
	}

	// Replay: the last half of what the log holds.
	first, err := s.store.Append(ctx, buf)
	if err != nil {
		return err
	}
	for range *ops - 1 {
		if _, err := s.store.Append(ctx, buf); err != nil {
			return err
		}
	}
	start := time.Now()
	n, err := s.store.Replay(ctx, first-1)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	d := time.Since(start)
	if n != *ops {
		return fmt.Errorf("replay read %d entries, want %d", n, *ops)
	}
	fmt.Printf("| %s | replay %d entries | 1 | total %.1f ms | | %.0f |\n", s.name, n, ms(d), float64(n)/d.Seconds())
	return nil
}

// drive runs op n times from w goroutines and returns each op's latency
// and the wall time.
func drive(n, w int, op func() error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range w {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t := time.Now()
				if err := op(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err, ok := firstErr.Load().(error); ok {
		return nil, 0, err
	}
	return lat, wall, nil
}

func printRow(setup, op string, writers int, lat []time.Duration, rate float64) {
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	r := ""
	if rate > 0 {
		r = fmt.Sprintf("%.0f", rate)
	}
	fmt.Printf("| %s | %s | %d | %.0f | %.0f | %s |\n", setup, op, writers, p(0.5), p(0.99), r)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// tcpRoundTrip is the reference: n round trips of buf over loopback TCP.
func tcpRoundTrip(n int, buf []byte) ([]time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	in := make([]byte, len(buf))
	lat := make([]time.Duration, n)
	for i := range n {
		t := time.Now()
		if _, err := c.Write(buf); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(c, in); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t)
	}
	return lat, nil
}

// rssKiB is a process's resident memory (VmRSS), 0 when unknown.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}

// startMembers re-executes this program as n members of engine, with the
// configuration cfg(i) gives each, and waits until each says "ready".
func startMembers(engine string, n int, cfg func(i int) string) ([]*exec.Cmd, error) {
	var cmds []*exec.Cmd
	kill := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	ready := make(chan error, n)
	for i := range n {
		cmd := exec.Command(os.Args[0], "-member", engine, "-config", cfg(i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			kill()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			kill()
			return nil, err
		}
		cmds = append(cmds, cmd)
		// Members wait for each other (etcd's initial cluster), so read
		// their "ready" concurrently.
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("member said %q", line)
			}
			ready <- err
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			kill()
			return nil, err
		}
	}
	return cmds, nil
}

func killAll(cmds []*exec.Cmd) {
	for _, c := range cmds {
		c.Process.Kill()
		c.Wait()
	}
}

func sumRSS(cmds []*exec.Cmd) int64 {
	var s int64
	for _, c := range cmds {
		s += rssKiB(c.Process.Pid)
	}
	return s
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func runMember(engine, cfg string) error {
	switch engine {
	case "nats":
		return natsMember(cfg)
	case "etcd":
		return etcdMember(cfg)
	}
	return fmt.Errorf("unknown engine %q", engine)
}
