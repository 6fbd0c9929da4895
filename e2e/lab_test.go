package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/syncbuf"
	"github.com/tern5g/tern/lab"
)

// The tern binary the lab tests run, built once per test binary.
var ternBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ternBuild.dir != "" {
		os.RemoveAll(ternBuild.dir)
	}
	os.Exit(code)
}

// ternBinary builds cmd/tern (once) and returns its path.
func ternBinary(t *testing.T) string {
	t.Helper()
	b := &ternBuild
	b.once.Do(func() {
		goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goCmd); err != nil {
			if goCmd, err = exec.LookPath("go"); err != nil {
				b.err = fmt.Errorf("no go command to build tern: %w", err)
				return
			}
		}
		if b.dir, b.err = os.MkdirTemp("", "tern-e2e-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "tern")
		out, err := exec.Command(goCmd, "build", "-o", b.path, "github.com/tern5g/tern/cmd/tern").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build cmd/tern: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// proc is a tern process running in a lab namespace.
type proc struct {
	name   string
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stdout bytes.Buffer
	stderr syncbuf.Buffer
	mu     sync.Mutex // guards stdout
	done   chan struct{}
	err    error // Wait's, once done is closed
}

// startTern runs tern with args inside namespace ns and waits (30 s at
// most) for a stdout line starting with ready, which it returns. The
// process is stopped (SIGTERM, then SIGKILL) when the test ends.
func startTern(t *testing.T, l *lab.Lab, ns, ready string, args ...string) (*proc, string) {
	t.Helper()
	p := &proc{name: args[0], lines: make(chan string, 256), done: make(chan struct{})}
	p.cmd = l.Command(context.Background(), ns, ternBinary(t), args...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start tern %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.lines:
			if strings.HasPrefix(line, ready) {
				t.Logf("tern %s: %s", p.name, line)
				return p, line
			}
		case <-p.done:
			t.Fatalf("tern %s exited before %q: %v\nstdout:\n%s\nstderr:\n%s", p.name, ready, p.err, p.output(), p.stderr.String())
		case <-timeout:
			t.Fatalf("tern %s: no %q within 30 s\nstdout:\n%s\nstderr:\n%s", p.name, ready, p.output(), p.stderr.String())
		}
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

// stop sends sig and waits for the exit (10 s, then SIGKILL); it returns
// Wait's error.
func (p *proc) stop(t *testing.T, sig os.Signal) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("tern %s ignored %v for 10 s; killed\nstderr:\n%s", p.name, sig, p.stderr.String())
		p.cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// heldSession is one entry of `tern sim --hold`'s ready line.
type heldSession struct{ SUPI, DNN, IP, TUN string }

// parseHeld reads "tern sim ready: N PDU sessions held (...): SUPI DNN IP
// TUN, SUPI DNN IP TUN, ...".
func parseHeld(line string) ([]heldSession, error) {
	_, list, ok := strings.Cut(line, "): ")
	if !ok {
		return nil, fmt.Errorf("no session list in %q", line)
	}
	var out []heldSession
	for _, e := range strings.Split(list, ", ") {
		f := strings.Fields(e)
		if len(f) != 4 {
			return nil, fmt.Errorf("session %q: want SUPI DNN IP TUN", e)
		}
		out = append(out, heldSession{f[0], f[1], f[2], f[3]})
	}
	return out, nil
}

// TestLabUserPlane is the user plane end to end in the namespace lab:
// `tern up --lab` in the core namespace (embedded UPF, N6 TUNs routed into
// one DN namespace per DNN) and `tern sim --lab --hold --tun` in the ran
// namespace with two UEs on two gNBs, each with a session on internet and
// one on ims. Real tools then run over the UEs' TUNs: UE TUN -> gNB GTP-U
// -> N3 -> UPF -> N6 TUN -> DN server -> back.
func TestLabUserPlane(t *testing.T) {
	if err := lab.Check(); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("-short: the lab test runs iperf3 for 10 s")
	}
	ternBinary(t) // build before the lab exists
	prefix := fmt.Sprintf("te%d", os.Getpid()%100000)
	l, err := lab.New(lab.Config{Prefix: prefix, DNNs: []string{"internet", "ims"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-registered first: the tern processes stop before
	// the servers and the lab go.
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	srv, err := l.StartServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	core, _ := startTern(t, l, l.Core(), "tern core ready", "up", "--lab", "--prefix", prefix,
		"--store", filepath.Join(t.TempDir(), "subscribers.db"), "--demo-subscribers", "4", "--log-level", "warn")
	sim, ready := startTern(t, l, l.RAN(), "tern sim ready", "sim", "--lab", "--prefix", prefix,
		"--hold", "--tun", "--ues", "2", "--gnbs", "2", "--dnns", "internet,ims")
	held, err := parseHeld(ready)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 4 {
		t.Fatalf("held sessions %+v; want 2 UEs x (internet, ims)", held)
	}

	run := func(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := l.Command(ctx, l.RAN(), name, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, stderr.String())
		}
		return string(out), nil
	}
	need := func(t *testing.T, tool string) {
		t.Helper()
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make tools installs it)", tool)
		}
	}

	t.Run("ping", func(t *testing.T) {
		need(t, "ping")
		// Five echoes per session. The first may find no neighbour entry
		// yet on N3 or N6 (ARP), which the kernel resolves while queueing
		// the packet, so a loss is unlikely but tolerated: at least 4 of
		// 5 replies.
		rtt := regexp.MustCompile(`(\d+) received.*\n.*= ([\d.]+)/([\d.]+)/([\d.]+)/`)
		for _, s := range held {
			out, err := run(t, 20*time.Second, "ping", "-n", "-I", s.TUN, "-c", "5", "-i", "0.2", "-W", "5", lab.DNServer.String())
			m := rtt.FindStringSubmatch(out)
			if m == nil {
				t.Errorf("ping via %s (%s %s): %v\n%s", s.TUN, s.SUPI, s.DNN, err, out)
				continue
			}
			if n, _ := strconv.Atoi(m[1]); n < 4 {
				t.Errorf("ping via %s (%s %s): %s of 5 replies\n%s", s.TUN, s.SUPI, s.DNN, m[1], out)
			}
			t.Logf("ping via %s (%s, %s %s): %s/5 replies, rtt min/avg/max %s/%s/%s ms", s.TUN, s.DNN, s.SUPI, s.IP, m[1], m[2], m[3], m[4])
		}
	})

	// iperf3 runs one test at a time against a DN's server: the runs are
	// sequential.
	iperf := func(t *testing.T, s heldSession, seconds int, reverse bool) (bytes, bps float64) {
		t.Helper()
		args := []string{"-c", lab.DNServer.String(), "-p", strconv.Itoa(lab.IperfPort), "-t", strconv.Itoa(seconds),
			"--bind-dev", s.TUN, "-B", s.IP, "--connect-timeout", "5000", "-J"}
		if reverse {
			args = append(args, "-R")
		}
		out, err := run(t, time.Duration(seconds+20)*time.Second, "iperf3", args...)
		var res struct {
			Error string `json:"error"`
			End   struct {
				SumReceived struct {
					Bytes         float64 `json:"bytes"`
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
		}
		if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
			t.Fatalf("iperf3 via %s: %v; output %q (%v)", s.TUN, err, out, jerr)
		}
		if err != nil || res.Error != "" || res.End.SumReceived.Bytes <= 0 {
			t.Fatalf("iperf3 via %s: %v, error %q, %v bytes received", s.TUN, err, res.Error, res.End.SumReceived.Bytes)
		}
		return res.End.SumReceived.Bytes, res.End.SumReceived.BitsPerSecond
	}

	t.Run("iperf3", func(t *testing.T) {
		need(t, "iperf3")
		// TCP upload through UE 1's internet session, download (-R)
		// through UE 2's: the demo subscription gives internet a 1 Gbps
		// session AMBR, so these measure the path, not the policer.
		for _, c := range []struct {
			name    string
			s       heldSession
			reverse bool
		}{{"upload", held[0], false}, {"download", held[2], true}} {
			b, bps := iperf(t, c.s, 5, c.reverse)
			t.Logf("iperf3 TCP %s via %s (%s %s): %.1f MB received in 5 s, %.0f Mbit/s", c.name, c.s.TUN, c.s.DNN, c.s.IP, b/1e6, bps/1e6)
		}
	})

	t.Run("ims-session-ambr", func(t *testing.T) {
		need(t, "iperf3")
		// The demo subscription's ims session AMBR is 10 Mbps each way
		// (store.DefaultSubscribers); the UPF polices downlink with the
		// session's QER MBR. A slower machine only lowers the rate, so the
		// upper bound (with 20% for the token bucket's burst and TCP's
		// ramp) is no wall-clock assertion.
		s := held[3]
		b, bps := iperf(t, s, 3, true)
		t.Logf("iperf3 TCP download via %s (%s %s, 10 Mbps AMBR): %.1f MB in 3 s, %.1f Mbit/s", s.TUN, s.DNN, s.IP, b/1e6, bps/1e6)
		if bps > 12e6 {
			t.Errorf("ims session carried %.1f Mbit/s downlink; its session AMBR is 10 Mbps", bps/1e6)
		}
	})

	t.Run("dnn-selection", func(t *testing.T) {
		need(t, "curl")
		// Every DN's server has the same address and answers its own
		// name: the reply proves which DN a session's traffic reached.
		url := fmt.Sprintf("http://%s:%d/", lab.DNServer, lab.HTTPPort)
		for _, s := range held {
			out, err := run(t, 15*time.Second, "curl", "-sS", "-m", "10", "--interface", s.TUN, url)
			if got := strings.TrimSpace(out); err != nil || got != s.DNN {
				t.Errorf("curl via %s (%s session of %s): %q, %v; want %q", s.TUN, s.DNN, s.SUPI, got, err, s.DNN)
			}
		}
	})

	t.Run("malformed-n3", func(t *testing.T) {
		// Garbage, truncated GTP-U and a G-PDU for an unknown TEID from a
		// second address in ran (the Error Indication goes to port 2152 of
		// the sender, which the simulated gNBs hold on theirs); then the
		// sessions still carry traffic.
		fake := "10.100.3.200"
		if _, err := run(t, 5*time.Second, "ip", "addr", "add", fake+"/24", "dev", lab.N3Link); err != nil {
			t.Fatal(err)
		}
		defer run(t, 5*time.Second, "ip", "addr", "del", fake+"/24", "dev", lab.N3Link)
		conn, err := lab.ListenUDP(l.RAN(), net.JoinHostPort(fake, strconv.Itoa(gtpu.Port)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		checkMalformedGTPU(t, conn, netip.AddrPortFrom(lab.CoreN3, gtpu.Port))
		if out, err := run(t, 20*time.Second, "ping", "-n", "-I", held[0].TUN, "-c", "3", "-i", "0.2", "-W", "5", lab.DNServer.String()); err != nil {
			t.Errorf("ping via %s after the garbage: %v\n%s", held[0].TUN, err, out)
		}
	})

	t.Run("release-on-signal", func(t *testing.T) {
		// SIGINT ends the hold: the simulator releases the sessions,
		// deregisters, prints its report and exits 0, leaving no TUN or
		// extra N3 address behind.
		if err := sim.stop(t, syscall.SIGINT); err != nil {
			t.Fatalf("tern sim after SIGINT: %v\nstdout:\n%s\nstderr:\n%s", err, sim.output(), sim.stderr.String())
		}
		out := sim.output()
		for _, want := range []string{"step release    ok 2 failed 0", "step deregister ok 2 failed 0"} {
			if !strings.Contains(out, want) {
				t.Errorf("sim report lacks %q:\n%s", want, out)
			}
		}
		links, err := run(t, 5*time.Second, "ip", "-o", "addr", "show")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(links, "uesimtun") || strings.Contains(links, "10.100.3.11/") {
			t.Errorf("left in %s after the simulator exited:\n%s", l.RAN(), links)
		}
		if err := core.stop(t, syscall.SIGTERM); err != nil {
			t.Errorf("tern up after SIGTERM: %v\nstderr:\n%s", err, core.stderr.String())
		}
	})
}

// TestLabPaging is idle mode end to end in the namespace lab, with separate
// processes and real tools: `tern sim --inactivity` lets the UE go to
// CM-IDLE; a ping from the data network to the UE's address then reaches
// the UPF's N6 TUN, is buffered, and its Downlink Data Report makes the
// core page the UE (TS 23.502 §4.2.3.3); the UE answers with a Service
// Request, the buffer drains to its TUN, and the UE's kernel answers. The
// UE goes idle again between pings, and a ping from the UE itself brings
// it back by a UE-triggered Service Request (§4.2.3.2).
func TestLabPaging(t *testing.T) {
	l, prefix, ctx, core := mobilityLab(t, "tp")
	const inactivity = 300 * time.Millisecond
	sim, ready := startTern(t, l, l.RAN(), "tern sim ready", "sim", "--lab", "--prefix", prefix,
		"--hold", "--tun", "--ues", "1", "--gnbs", "1", "--dnns", "internet", "--inactivity", inactivity.String())
	held, err := parseHeld(ready)
	if err != nil || len(held) != 1 {
		t.Fatalf("held sessions %+v, %v", held, err)
	}
	s := held[0]
	ping := func(ns string, args ...string) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := l.Command(pctx, ns, "ping", append([]string{"-n", "-c", "1", "-W", "5"}, args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "1 received") {
			t.Fatalf("ping %v in %s: %v\n%s\nsim stderr:\n%s", args, ns, err, out, sim.stderr.String())
		}
		t.Logf("ping %v from %s: %s", args, ns, regexp.MustCompile(`time=[\d.]+ ms`).FindString(string(out)))
	}
	for range 3 {
		time.Sleep(3 * inactivity) // CM-IDLE
		ping(l.DN("internet"), s.IP)
	}
	time.Sleep(3 * inactivity)
	ping(l.RAN(), "-I", s.TUN, lab.DNServer.String())

	if err := sim.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("tern sim after SIGINT: %v\nstdout:\n%s\nstderr:\n%s", err, sim.output(), sim.stderr.String())
	}
	// The report: the UE went idle four times, was paged three times and
	// came back each time, and once by itself.
	out := sim.output()
	count := func(proc string) int {
		m := regexp.MustCompile(`(?m)^\s*` + proc + `\s+(\d+)\s+(\d+)`).FindStringSubmatch(out)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		if f, _ := strconv.Atoi(m[2]); f != 0 {
			t.Errorf("%s: %d failures", proc, f)
		}
		return n
	}
	if n := count("paging"); n != 3 {
		t.Errorf("%d pagings in the report, want 3:\n%s", n, out)
	}
	// A paged UE's Service Request is in its paging window; the
	// service-request row counts the UE-triggered one.
	if n := count("service-request"); n != 1 {
		t.Errorf("%d UE-triggered service requests in the report, want 1:\n%s", n, out)
	}
	if n := count("an-release"); n < 4 {
		t.Errorf("%d inactivity releases in the report, want 4 at least:\n%s", n, out)
	}
	if err := core.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("tern up after SIGTERM: %v\nstderr:\n%s", err, core.stderr.String())
	}
}

// TestLabHandover: handovers in the namespace lab while real traffic runs:
// `tern sim --handover-every` moves the UE between two gNBs (Xn and N2 at
// random) while the data network pings it; no echo is lost and no
// handover fails.
func TestLabHandover(t *testing.T) {
	l, prefix, ctx, core := mobilityLab(t, "th")
	sim, ready := startTern(t, l, l.RAN(), "tern sim ready", "sim", "--lab", "--prefix", prefix,
		"--hold", "--tun", "--ues", "1", "--gnbs", "2", "--dnns", "internet",
		"--handover-every", "100ms", "--handover-kind", "random")
	held, err := parseHeld(ready)
	if err != nil || len(held) != 1 {
		t.Fatalf("held sessions %+v, %v", held, err)
	}
	const echoes = 40
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	out, err := l.Command(pctx, l.DN("internet"), "ping", "-n", "-c", strconv.Itoa(echoes), "-i", "0.05", "-W", "2", held[0].IP).CombinedOutput()
	m := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	if n, _ := strconv.Atoi(m[1]); n != echoes {
		t.Errorf("%d of %d echoes answered across the handovers\n%s", n, echoes, out)
	}
	if err := sim.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("tern sim after SIGINT: %v\nstdout:\n%s\nstderr:\n%s", err, sim.output(), sim.stderr.String())
	}
	rep := sim.output()
	hm := regexp.MustCompile(`background handovers: (\d+) started \((\d+) xn, (\d+) n2\), (\d+) moved, (\d+) failed`).FindStringSubmatch(rep)
	if hm == nil {
		t.Fatalf("no background handover line in the report:\n%s", rep)
	}
	started, _ := strconv.Atoi(hm[1])
	if started < 10 || hm[4] != hm[1] || hm[5] != "0" {
		t.Errorf("background handovers %q: want 10 at least, every one moved:\n%s", hm[0], rep)
	}
	t.Logf("%s; ping: %s", hm[0], regexp.MustCompile(`rtt [^\n]*`).FindString(string(out)))
	if err := core.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("tern up after SIGTERM: %v\nstderr:\n%s", err, core.stderr.String())
	}
}

// mobilityLab is the lab of the mobility tests: one DN (internet) and tern
// up in the core namespace with one subscriber. It skips without root or
// ping; everything goes when the test ends.
func mobilityLab(t *testing.T, tag string) (*lab.Lab, string, context.Context, *proc) {
	t.Helper()
	if err := lab.Check(); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("ping not installed (make tools installs it)")
	}
	ternBinary(t)
	prefix := fmt.Sprintf("%s%d", tag, os.Getpid()%100000)
	l, err := lab.New(lab.Config{Prefix: prefix, DNNs: []string{"internet"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	core, _ := startTern(t, l, l.Core(), "tern core ready", "up", "--lab", "--prefix", prefix,
		"--store", filepath.Join(t.TempDir(), "subscribers.db"), "--demo-subscribers", "1", "--log-level", "warn")
	return l, prefix, ctx, core
}
