package shmsbi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
	"github.com/tern5g/tern/sbi/shm"
)

func TestMain(m *testing.M) {
	shm.MaybeRunChild()
	os.Exit(m.Run())
}

func testConfig(t *testing.T) shm.Config {
	return shm.Config{Dir: filepath.Join(t.TempDir(), "pool"), CheckInterval: 10 * time.Millisecond}
}

// Every operation, errors included, round-trips over shared memory.
func TestRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	p := opstest.NewProducer()
	s, err := Listen(cfg, "nf", nil, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, err := Dial(cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	opstest.Run(t, ops.NewClient(k, ""), p, "")
}

// A producer that goes away fails the calls at once; when it comes back
// the same client works again.
func TestProducerRestart(t *testing.T) {
	cfg := testConfig(t)
	p := opstest.NewProducer()
	s, err := Listen(cfg, "nf", nil, p)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Dial(cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	c := ops.NewClient(k, "")
	ctx := context.Background()
	if _, err := c.GetAMF3GPPAccess(ctx, opstest.SUPI); err != nil {
		t.Fatal(err)
	}
	s.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		_, err := c.GetAMF3GPPAccess(cctx, opstest.SUPI)
		cancel()
		if errors.Is(err, shm.ErrPeerDown) {
			if time.Since(start) > time.Second {
				t.Errorf("failing took %v", time.Since(start))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls to a closed producer: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s, err = Listen(cfg, "nf", nil, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		if _, err := c.GetAMF3GPPAccess(ctx, opstest.SUPI); err == nil {
			break
		} else if time.Now().After(deadline.Add(3 * time.Second)) {
			t.Fatalf("after the producer came back: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A message that does not decode is answered, not served, and the ring
// stays usable.
func TestCorruptMessage(t *testing.T) {
	cfg := testConfig(t)
	p := opstest.NewProducer()
	s, err := Listen(cfg, "nf", nil, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := shm.Dial(cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, msg := range [][]byte{nil, {1, 2, 3}, []byte("tw\x01garbage-garbage")} {
		_, status, err := c.Call(ctx, ops.UDMGetAMF.ID, msg, nil)
		if err != nil || status != StatusBadMessage {
			t.Errorf("%q: status %d, %v", msg, status, err)
		}
	}
	if n := s.BadMessages(); n != 3 {
		t.Errorf("%d bad messages counted, want 3", n)
	}
	if _, status, err := c.Call(ctx, 999, nil, nil); err != nil || status != StatusError {
		t.Errorf("unknown operation: status %d, %v", status, err)
	}
	k, _ := Dial(cfg, "nf")
	defer k.Close()
	if _, err := ops.NewClient(k, "").GetAMF3GPPAccess(ctx, opstest.SUPI); err != nil {
		t.Errorf("after corrupt messages: %v", err)
	}
}
