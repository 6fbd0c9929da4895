package shm

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func startServer(t testing.TB, cfg Config, name string) *child {
	t.Helper()
	ch, err := startChild("server", &childSpec{Config: cfg, Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.kill() })
	return ch
}

// The server process dies with SIGKILL: the pending call and new calls fail
// with ErrPeerDown well before their deadline, and once a new server process
// listens, the same Client works again.
func TestServerProcessKilled(t *testing.T) {
	cfg := testConfig(t)
	srv := startServer(t, cfg, "smf")
	c := dial(t, cfg, "smf")
	if err := waitCall(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	pending := make(chan error, 1)
	go func() {
		_, _, err := c.Call(ctxFor(t, 10*time.Second), opSleep, sleepReq(5*time.Second), nil)
		pending <- err
	}()
	time.Sleep(30 * time.Millisecond) // the call is in the server's handler
	killed := time.Now()
	srv.kill()
	select {
	case err := <-pending:
		d := time.Since(killed)
		if !errors.Is(err, ErrPeerDown) {
			t.Fatalf("pending call: %v, want ErrPeerDown", err)
		}
		if d > 10*cfg.CheckInterval {
			t.Errorf("pending call failed %v after the kill (check interval %v)", d, cfg.CheckInterval)
		}
		t.Logf("pending call failed %v after SIGKILL (deadline was 10s)", d)
	case <-time.After(5 * time.Second):
		t.Fatal("pending call still waiting 5s after the server died")
	}
	t0 := time.Now()
	_, _, err := c.Call(ctxFor(t, 10*time.Second), opEcho, []byte("x"), nil)
	if !errors.Is(err, ErrPeerDown) || time.Since(t0) > 5*time.Millisecond {
		t.Fatalf("new call: %v after %v, want ErrPeerDown at once", err, time.Since(t0))
	}

	restarted := time.Now()
	startServer(t, cfg, "smf")
	if err := waitCall(c, 5*time.Second); err != nil {
		t.Fatal("after restart:", err)
	}
	t.Logf("calls succeed again %v after the new server started", time.Since(restarted))
	if st := c.Stats(); st.PeerRestarts != 1 || st.PeerDown < 2 {
		t.Errorf("stats %+v", st)
	}
}

// The client process dies with SIGKILL: the server frees its channel and
// gives the ring pages back.
func TestClientProcessKilled(t *testing.T) {
	cfg := testConfig(t)
	cfg.SlotBytes = 64 << 10 // rings of 1 MiB, easy to see in the file's blocks
	s := listen(t, cfg, "smf", echoHandler)
	before := poolBlocks(t, s)
	cl, err := startChild("client", &childSpec{Config: cfg, Name: "smf"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.kill()
	if st := s.Stats(); st.Clients != 1 {
		t.Fatalf("server stats %+v, want 1 client", st)
	}
	used := poolBlocks(t, s)
	killed := time.Now()
	cl.kill()
	eventually(t, time.Second, "server frees the dead client's channel", func() bool {
		st := s.Stats()
		return st.Clients == 0 && st.PeerRestarts == 1
	})
	freed := time.Since(killed)
	// Before the ring headers are read below: reading a hole of a shared
	// tmpfs mapping allocates a page.
	after := poolBlocks(t, s)
	t.Logf("channel freed %v after SIGKILL; pool file blocks %d before the client, %d with it, %d after", freed, before, used, after)
	if after >= used || after > before+pageBytes/512 { // the channel table's page stays
		t.Errorf("ring pages not given back: %d blocks, %d with the client, %d before", after, used, before)
	}
	for _, ch := range s.chans {
		if ch.state.Load() != chanFree || ch.req.tail.Load() != 0 || ch.resp.tail.Load() != 0 {
			t.Errorf("channel %d: state %d, tails %d/%d", ch.idx, ch.state.Load(), ch.req.tail.Load(), ch.resp.tail.Load())
		}
	}
	// The slot serves a new client.
	c := dial(t, cfg, "smf")
	if err := waitCall(c, time.Second); err != nil {
		t.Fatal(err)
	}
}

func poolBlocks(t *testing.T, s *Server) int64 {
	var st unix.Stat_t
	if err := unix.Stat(s.p.pool, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks
}
