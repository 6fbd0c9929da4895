package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Multi-process tests: the test binary re-executes itself with childEnv
// set, and TestMain runs the child's role instead of the tests.
const childEnv = "TERN_STORE_TEST_CHILD"

// runChild is a child process: it works on the SQLite store at
// $TERN_STORE_PATH and prints a line for every change once it returned
// (its acknowledgement). It returns the exit status.
func runChild(role string) int {
	n, _ := strconv.Atoi(os.Getenv("TERN_STORE_N"))
	first, _ := strconv.Atoi(os.Getenv("TERN_STORE_FIRST"))
	s, err := Open(os.Getenv("TERN_STORE_PATH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	put := func(i int) error {
		sub := DefaultSubscribers(1)[0]
		sub.SUPI = DemoSUPI(i)
		if err := s.Put(sub); err != nil {
			return err
		}
		fmt.Printf("put %s\n", sub.SUPI)
		return nil
	}
	alloc := func() error {
		v, err := s.UpdateSQN(DemoSUPI(1), 8, plusOne)
		if err != nil {
			return err
		}
		fmt.Printf("sqn %d\n", v)
		return nil
	}
	switch role {
	case "sqn": // n allocations for subscriber 1
		for range n {
			if err := alloc(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "add": // subscribers first .. first+n-1
		for i := range n {
			if err := put(first + i); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "writer": // adds and allocates until killed
		for i := first; ; i++ {
			if err := put(i); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if err := alloc(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return 2
	}
	return 0
}

// child is a running child process and its acknowledgements.
type child struct {
	cmd   *exec.Cmd
	lines chan string // closed at EOF
	errs  strings.Builder
}

func startChild(t *testing.T, role, path string, first, n int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "TERN_STORE_PATH="+path,
		"TERN_STORE_FIRST="+strconv.Itoa(first), "TERN_STORE_N="+strconv.Itoa(n))
	c := &child{cmd: cmd, lines: make(chan string, 1024)}
	cmd.Stderr = &c.errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// wait reads every line to EOF and waits for the exit; a status other than
// success fails t unless killed.
func (c *child) wait(t *testing.T, killed bool) []string {
	t.Helper()
	var lines []string
	for l := range c.lines {
		lines = append(lines, l)
	}
	err := c.cmd.Wait()
	if err != nil && !killed {
		t.Fatalf("child %v: %v: %s", c.cmd.Env[len(c.cmd.Env)-4:], err, c.errs.String())
	}
	return lines
}

// acks splits acknowledgements into SUPIs put and SQNs allocated.
func acks(t *testing.T, lines []string) (puts []string, sqns []uint64) {
	t.Helper()
	for _, l := range lines {
		kind, v, _ := strings.Cut(l, " ")
		switch kind {
		case "put":
			puts = append(puts, v)
		case "sqn":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("ack %q", l)
			}
			sqns = append(sqns, n)
		default:
			t.Fatalf("unexpected child output %q", l)
		}
	}
	return puts, sqns
}

func storeWithSubscriber1(t *testing.T) (string, *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers.db")
	s := openT(t, path, Options{})
	if err := s.Put(DefaultSubscribers(1)[0]); err != nil {
		t.Fatal(err)
	}
	return path, s
}

// Several processes allocate SQNs for one subscriber at once, on one file:
// no SQN is issued twice, each process sees its SQNs increase, and the SQNs
// issued are exactly 1..total.
func TestProcessesAllocateSQNs(t *testing.T) {
	path, s := storeWithSubscriber1(t)
	const procs, each = 4, 150
	var children []*child
	for range procs {
		children = append(children, startChild(t, "sqn", path, 0, each))
	}
	seen := map[uint64]bool{}
	for _, c := range children {
		_, sqns := acks(t, c.wait(t, false))
		if len(sqns) != each {
			t.Fatalf("child acknowledged %d allocations, want %d", len(sqns), each)
		}
		for i, n := range sqns {
			if i > 0 && n <= sqns[i-1] {
				t.Fatalf("SQN %d after %d in one process", n, sqns[i-1])
			}
			if seen[n] {
				t.Fatalf("SQN %d issued twice", n)
			}
			seen[n] = true
		}
	}
	for n := uint64(1); n <= procs*each; n++ {
		if !seen[n] {
			t.Fatalf("SQN %d never issued (%d issued)", n, len(seen))
		}
	}
	if got, _ := s.Get(DemoSUPI(1)); got.SQN != procs*each {
		t.Fatalf("SQN_HE %d, want %d", got.SQN, procs*each)
	}
}

// A writer killed with SIGKILL in the middle of its work loses nothing it
// acknowledged.
func TestKilledWriterKeepsAcknowledged(t *testing.T) {
	path, _ := storeWithSubscriber1(t)
	c := startChild(t, "writer", path, 1000, 0)
	var lines []string
	deadline := time.After(30 * time.Second)
	for len(lines) < 400 {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.wait(t, false)
				t.Fatal("writer stopped early")
			}
			lines = append(lines, l)
		case <-deadline:
			t.Fatalf("writer acknowledged %d changes in 30s", len(lines))
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, c.wait(t, true)...)
	puts, sqns := acks(t, lines)
	r := openT(t, path, Options{})
	for _, supi := range puts {
		if _, err := r.Get(supi); err != nil {
			t.Fatalf("acknowledged put of %s lost: %v", supi, err)
		}
	}
	last := sqns[len(sqns)-1]
	got, err := r.Get(DemoSUPI(1))
	if err != nil || got.SQN < last {
		t.Fatalf("SQN_HE after the kill %d (%v), %d was acknowledged", got.SQN, err, last)
	}
	if n, err := r.IncrementSQN(DemoSUPI(1)); err != nil || n <= last {
		t.Fatalf("first SQN after the kill %d (%v), %d was acknowledged", n, err, last)
	}
	t.Logf("%d puts and %d allocations acknowledged before SIGKILL", len(puts), len(sqns))
}

// Two processes add subscribers while a third (this one, as `tern up`
// would) allocates SQNs: nothing is lost.
func TestProcessesAddSubscribers(t *testing.T) {
	path, s := storeWithSubscriber1(t)
	const each = 150
	a := startChild(t, "add", path, 100, each)
	b := startChild(t, "add", path, 100+each, each)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.UpdateSQN(DemoSUPI(1), 8, plusOne); err != nil {
				t.Error(err)
				return
			}
		}
	})
	pa, _ := acks(t, a.wait(t, false))
	pb, _ := acks(t, b.wait(t, false))
	close(stop)
	wg.Wait()
	if len(pa)+len(pb) != 2*each {
		t.Fatalf("acknowledged %d + %d adds, want %d", len(pa), len(pb), 2*each)
	}
	if n := lenT(t, s); n != 2*each+1 {
		t.Fatalf("%d subscribers after two processes added %d, want %d", n, 2*each, 2*each+1)
	}
}
