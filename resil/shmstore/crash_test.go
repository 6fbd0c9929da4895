package shmstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Crash tests: the test binary re-executes itself with childEnv set, and
// TestMain runs the child's role instead of the tests.
const (
	childEnv     = "TERN_SHMSTORE_CHILD"      // the role: "writer"
	childPathEnv = "TERN_SHMSTORE_PATH"       // the store file
	childHookEnv = "TERN_SHMSTORE_STALL_FROM" // stall in the first compaction from this op on
	childAtEnv   = "TERN_SHMSTORE_STALL_AT"   // where: "copy" (mid-copy) or "publish" (before it)
)

// The crash tests' workload: a small store (a compaction every few dozen
// operations) and records up to 1 KiB.
const (
	crashSize   = 48 << 10
	crashKeys   = 24
	crashMaxRec = 1024
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

// runChild creates the store and runs operations 0, 1, 2, ... of opAt
// until it is killed, printing "ack i" once operation i returned. With
// childHookEnv set it stops for good in the first compaction that an
// operation from that number on makes, after printing "compacting i": with
// childAtEnv "copy" when a quarter of the live entries are copied, with
// "publish" when the compaction and the new entry are in place but not
// published.
func runChild(role string) int {
	if role != "writer" {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return 2
	}
	w, err := Create(os.Getenv(childPathEnv), crashSize, Options{Epoch: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	stallFrom := uint64(1<<63 - 1)
	if s := os.Getenv(childHookEnv); s != "" {
		n, _ := strconv.ParseUint(s, 10, 64)
		stallFrom = n
	}
	var i uint64
	atPublish := os.Getenv(childAtEnv) == "publish"
	w.testHookCompact = func(copied int, done bool) {
		if i >= stallFrom && (atPublish && done || !atPublish && copied == crashKeys/4) {
			fmt.Fprintf(out, "compacting %d\n", i)
			out.Flush()
			select {} // until killed
		}
	}
	for ; ; i++ {
		if err := opAt(i, crashKeys, crashMaxRec).do(w); err != nil {
			fmt.Fprintf(os.Stderr, "op %d: %v\n", i, err)
			return 1
		}
		fmt.Fprintf(out, "ack %d\n", i)
		out.Flush() // the acknowledgement leaves after the Put returned
	}
}

// crashChild runs the writer child and SIGKILLs it once kill says so for
// a line it printed; it returns how many operations it acknowledged and
// the lines it printed.
func crashChild(t *testing.T, path string, env []string, kill func(line string) bool) (acked uint64, lines []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=writer", childPathEnv + "=" + path}, env...)...)
	var errs strings.Builder
	cmd.Stderr = &errs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		l := sc.Text()
		lines = append(lines, l)
		if f, ok := strings.CutPrefix(l, "ack "); ok {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil || n != acked {
				t.Fatalf("child printed %q after %d acknowledgements", l, acked)
			}
			acked++
		}
		if !killed && kill(l) {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before it was killed: %v: %s", err, errs.String())
	}
	return acked, lines
}

// checkCrashed checks that the store holds exactly the state after the
// first n operations for some n in ns, and that every record is one a
// Put wrote whole.
func checkCrashed(t *testing.T, path string, ns ...uint64) {
	t.Helper()
	s := mustOpen(t, path)
	if s.Stats.Corrupted != 0 || s.Epoch != 3 {
		t.Fatalf("stats %+v epoch %d", s.Stats, s.Epoch)
	}
	for _, r := range s.Records() {
		if len(r.Rec) < 8 {
			t.Fatalf("record (%d,%q) of %d bytes", r.Kind, r.Key, len(r.Rec))
		}
		o := opAt(binary.LittleEndian.Uint64(r.Rec), crashKeys, crashMaxRec)
		if o.del || o.kind != r.Kind || string(o.key) != string(r.Key) || string(o.rec) != string(r.Rec) {
			t.Fatalf("record (%d,%q) %x... was not written whole by a Put", r.Kind, r.Key, head(r.Rec))
		}
	}
	var errs []string
	for _, n := range ns {
		err := sameAs(s, modelAfter(n, crashKeys, crashMaxRec))
		if err == nil {
			return
		}
		errs = append(errs, fmt.Sprintf("after %d operations: %v", n, err))
	}
	t.Fatalf("the store is no state the writer went through: %s", strings.Join(errs, "; "))
}

// TestCrashAnywhere: a child Puts and Deletes until SIGKILLed at a random
// moment; the store then holds the state after every acknowledged
// operation, plus possibly the one in flight, and nothing else.
func TestCrashAnywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 36))
	for round := range 8 {
		path := filepath.Join(storeDir(t), "store")
		target := 1 + rng.Uint64N(5000)
		acked, _ := crashChild(t, path, nil, func(l string) bool {
			return l == fmt.Sprintf("ack %d", target-1)
		})
		if acked < target {
			t.Fatalf("round %d: %d acknowledged, killed after %d", round, acked, target)
		}
		checkCrashed(t, path, acked, acked+1)
		t.Logf("round %d: killed after %d acknowledged operations (%d printed)", round, target, acked)
	}
}

// TestCrashInCompaction: the child is killed in the middle of a compaction
// (a quarter of the live entries copied to the other half), or when the
// compaction and the entry that made it are in place but not yet published;
// the store holds the state before the operation that compacted.
func TestCrashInCompaction(t *testing.T) {
	for _, at := range []string{"copy", "publish"} {
		for _, from := range []uint64{0, 100, 777, 3000} {
			path := filepath.Join(storeDir(t), "store")
			var stalled uint64
			env := []string{childHookEnv + "=" + strconv.FormatUint(from, 10), childAtEnv + "=" + at}
			acked, _ := crashChild(t, path, env, func(l string) bool {
				f, ok := strings.CutPrefix(l, "compacting ")
				if ok {
					stalled, _ = strconv.ParseUint(f, 10, 64)
				}
				return ok
			})
			if stalled != acked || stalled < from {
				t.Fatalf("%s: stalled in operation %d with %d acknowledged (from %d)", at, stalled, acked, from)
			}
			checkCrashed(t, path, acked)
			t.Logf("%s: killed compacting in operation %d", at, stalled)
		}
	}
}
