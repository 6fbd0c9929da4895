package shm

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestHelperServer is where a re-executed test binary becomes the other end
// of a two-process test (see child.go); in a normal run it is skipped.
func TestHelperServer(t *testing.T) {
	MaybeRunChild()
	t.Skip("helper process entry point; runs only as a child")
}

// testDir is a fresh directory on tmpfs (/dev/shm) where there is one, as
// in a deployment, else under the test's temporary directory.
func testDir(t testing.TB) string {
	t.Helper()
	parent, err := os.MkdirTemp("/dev/shm", "shmtest-")
	if err != nil {
		return t.TempDir() + "/shm"
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	return parent + "/shm"
}

// testConfig is a small pool in a fresh directory of the test's own.
func testConfig(t testing.TB) Config {
	t.Helper()
	return Config{
		Dir:           testDir(t),
		RingSlots:     16,
		SlotBytes:     1024,
		MaxClients:    4,
		CheckInterval: 20 * time.Millisecond,
	}
}

func listen(t testing.TB, cfg Config, name string, h Handler) *Server {
	t.Helper()
	s, err := Listen(cfg, name, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t testing.TB, cfg Config, name string) *Client {
	t.Helper()
	c, err := Dial(cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
