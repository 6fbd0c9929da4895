package shm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func sleepReq(d time.Duration) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(d))
}

func TestRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	s := listen(t, cfg, "smf", func(op uint16, req, resp []byte) (int, uint16) {
		return copy(resp, req), 200 + op
	})
	c := dial(t, cfg, "smf")
	if !c.Connected() {
		t.Fatal("not connected after Dial to a live server")
	}
	if got, want := c.MaxMessage(), cfg.SlotBytes-RecordHeaderBytes; got != want || s.MaxMessage() != want {
		t.Fatalf("MaxMessage = %d/%d, want %d", got, s.MaxMessage(), want)
	}
	dst := make([]byte, 0, 16)
	for _, msg := range [][]byte{[]byte("ping"), nil, bytes.Repeat([]byte{0xa5}, c.MaxMessage())} {
		resp, st, err := c.Call(ctxFor(t, time.Second), 7, msg, dst)
		if err != nil || st != 207 || !bytes.Equal(resp, msg) {
			t.Fatalf("Call(%d bytes) = %d bytes, %d, %v", len(msg), len(resp), st, err)
		}
	}
	// The answer lands in dst when it fits.
	resp, _, _ := c.Call(ctxFor(t, time.Second), 1, []byte("abc"), dst)
	if &resp[0] != &dst[:1][0] {
		t.Error("answer not appended to dst")
	}
	if st := c.Stats(); st.Calls != 4 || st.Clients != 1 {
		t.Errorf("client stats %+v", st)
	}
	if st := s.Stats(); st.Calls != 4 || st.Clients != 1 {
		t.Errorf("server stats %+v", st)
	}
}

func TestConcurrentCallers(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "udm", func(op uint16, req, resp []byte) (int, uint16) {
		if op == 2 {
			time.Sleep(time.Millisecond) // some handlers overlap
		}
		n := copy(resp, req)
		return n, uint16(len(req))
	})
	c := dial(t, cfg, "udm")
	const goroutines, calls = 32, 200
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []byte
			for i := range calls {
				req := fmt.Appendf(nil, "caller %d call %d %s", g, i, strings.Repeat("x", i%50))
				resp, st, err := c.Call(ctxFor(t, 5*time.Second), uint16(1+i%2), req, dst)
				if err != nil || !bytes.Equal(resp, req) || int(st) != len(req) {
					errs <- fmt.Errorf("caller %d call %d: %q, %d, %v", g, i, resp, st, err)
					return
				}
				dst = resp
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Calls != goroutines*calls || st.Late != 0 || st.Corrupt != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A slow handler holds up neither another client nor the same client's
// other calls.
func TestSlowHandlerBlocksNobody(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "pcf", echoHandler)
	a, b := dial(t, cfg, "pcf"), dial(t, cfg, "pcf")
	slow := make(chan error, 2)
	for _, c := range []*Client{a, b} {
		go func() {
			_, _, err := c.Call(ctxFor(t, 5*time.Second), opSleep, sleepReq(500*time.Millisecond), nil)
			slow <- err
		}()
	}
	time.Sleep(20 * time.Millisecond) // both slow calls are in their handlers
	t0 := time.Now()
	for range 50 {
		for _, c := range []*Client{a, b} {
			if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("quick"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := time.Since(t0); d > 300*time.Millisecond {
		t.Errorf("100 quick calls took %v beside two slow ones", d)
	}
	for range 2 {
		if err := <-slow; err != nil {
			t.Error(err)
		}
	}
}

func TestTimeoutAndLateAnswer(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "ausf", echoHandler)
	c := dial(t, cfg, "ausf")
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, _, err := c.Call(ctx, opSleep, sleepReq(150*time.Millisecond), nil)
	d := time.Since(t0)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	if d < 30*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("timed out after %v, deadline 30ms", d)
	}
	// The answer comes later; the next call that reads the ring drops it.
	time.Sleep(150 * time.Millisecond)
	eventually(t, time.Second, "late answer counted", func() bool {
		if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		return c.Stats().Late == 1
	})
	if st := c.Stats(); st.Timeouts != 1 {
		t.Errorf("stats %+v", st)
	}

	// Cancellation, which has no deadline for the futex sleep to honour.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	t0 = time.Now()
	_, _, err = c.Call(ctx, opSleep, sleepReq(100*time.Millisecond), nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrTimeout and Canceled", err)
	}
	if d := time.Since(t0); d > 60*time.Millisecond {
		t.Errorf("cancel noticed after %v", d)
	}
}

// Callers that are not reading the ring time out too, and one that reads
// leaves the token to the others.
func TestTimeoutsWhileOthersWait(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "nrf", echoHandler)
	c := dial(t, cfg, "nrf")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := time.Duration(10+10*i) * time.Millisecond
			_, _, err := c.Call(ctxFor(t, d), opSleep, sleepReq(time.Second), nil)
			if !errors.Is(err, ErrTimeout) {
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	// A quick call among them is answered although the callers reading
	// the ring come and go.
	for range 10 {
		if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("q"), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
}

func TestTooLarge(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "amf", func(op uint16, req, resp []byte) (int, uint16) {
		if op == 9 {
			return len(resp) + 1, 200 // a handler bug
		}
		return copy(resp, req), 200
	})
	c := dial(t, cfg, "amf")
	_, _, err := c.Call(ctxFor(t, time.Second), 1, make([]byte, c.MaxMessage()+1), nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized request: %v", err)
	}
	_, _, err = c.Call(ctxFor(t, time.Second), 9, []byte("x"), nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized answer: %v", err)
	}
	if _, _, err := c.Call(ctxFor(t, time.Second), 1, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestDialBeforeListen(t *testing.T) {
	cfg := testConfig(t)
	c := dial(t, cfg, "smf")
	t0 := time.Now()
	_, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil)
	if !errors.Is(err, ErrPeerDown) || time.Since(t0) > 10*time.Millisecond {
		t.Fatalf("err = %v after %v, want ErrPeerDown at once", err, time.Since(t0))
	}
	listen(t, cfg, "smf", echoHandler)
	eventually(t, time.Second, "connect", c.Connected)
	if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.PeerDown != 1 || st.PeerRestarts != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestCloseReopen(t *testing.T) {
	cfg := testConfig(t)
	s, err := Listen(cfg, "smf", echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(cfg, "smf", echoHandler); err == nil || !strings.Contains(err.Error(), "already served") {
		t.Fatalf("second Listen: %v", err)
	}
	c := dial(t, cfg, "smf")
	if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Second, "client notices the server closed", func() bool { return !c.Connected() })
	if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("call to a closed server: %v", err)
	}
	s = listen(t, cfg, "smf", echoHandler)
	eventually(t, time.Second, "reconnect", c.Connected)
	if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().PeerRestarts; n != 1 {
		t.Errorf("PeerRestarts = %d, want 1", n)
	}

	// A closed client's channel is freed, and a new client can use it.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	eventually(t, time.Second, "server frees the channel", func() bool {
		st := s.Stats()
		return st.Clients == 0 && st.PeerRestarts == 1
	})
	c2 := dial(t, cfg, "smf")
	if _, _, err := c2.Call(ctxFor(t, time.Second), opEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestMaxClients(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxClients = 2
	listen(t, cfg, "smf", echoHandler)
	a, _ := dial(t, cfg, "smf"), dial(t, cfg, "smf")
	c := dial(t, cfg, "smf")
	if c.Connected() {
		t.Fatal("third client connected to a 2-channel pool")
	}
	a.Close()
	eventually(t, time.Second, "third client gets the freed channel", c.Connected)
}

func TestPermissions(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "smf", echoHandler)
	dial(t, cfg, "smf")
	st, err := os.Stat(cfg.Dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v, %v", st.Mode(), err)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.Dir, "*"))
	if len(files) < 3 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v", f, st.Mode(), err)
		}
	}

	open := filepath.Join(filepath.Dir(cfg.Dir), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = open
	if _, err := Listen(cfg, "smf", echoHandler); err == nil || !strings.Contains(err.Error(), "other users") {
		t.Errorf("Listen in a 0755 directory: %v", err)
	}
	if _, err := Dial(cfg, "smf"); err == nil {
		t.Error("Dial in a 0755 directory succeeded")
	}
	if _, err := Listen(Config{Dir: t.TempDir()}, "../smf", echoHandler); err == nil {
		t.Error("a name with a path was accepted")
	}
}

func TestConfigChecks(t *testing.T) {
	for _, cfg := range []Config{
		{RingSlots: 3},
		{SlotBytes: 100},
		{MaxClients: -1},
		{BusyPoll: -1},
		{MaxInFlight: 1 << 17},
	} {
		cfg.Dir = t.TempDir()
		if _, err := Listen(cfg, "smf", echoHandler); err == nil {
			t.Errorf("Listen accepted %+v", cfg)
		}
	}
}

// The hot path allocates nothing on either side (both run in this process,
// and AllocsPerRun counts every goroutine's allocations).
func TestCallAllocs(t *testing.T) {
	cfg := testConfig(t)
	listen(t, cfg, "smf", echoHandler)
	c := dial(t, cfg, "smf")
	req := make([]byte, 256)
	dst := make([]byte, 0, 256)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	allocs := testing.AllocsPerRun(2000, func() {
		_, _, err = c.Call(ctx, opEcho, req, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}

// Closing both ends stops every goroutine they started.
func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := testConfig(t)
	s, err := Listen(cfg, "smf", echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	var cs []*Client
	for range 3 {
		c, err := Dial(cfg, "smf")
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Call(ctxFor(t, time.Second), opSleep, sleepReq(5*time.Millisecond), nil)
			}()
		}
	}
	wg.Wait()
	cs[0].Close() // one client leaves before the server, the others after
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs[1:] {
		c.Close()
	}
	eventually(t, 2*time.Second, "goroutines gone", func() bool { return runtime.NumGoroutine() <= before })
	if _, err := os.Stat(filepath.Join(cfg.Dir, "smf.pool")); !os.IsNotExist(err) {
		t.Errorf("pool file left after Close: %v", err)
	}
}
