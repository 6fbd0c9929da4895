package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/freeport"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// embedded starts a single-node engine in-process, shut down at cleanup.
func embedded(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := StartEmbedded(testCtx(t, 10*time.Second), ServerConfig{StoreDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func acquire(t *testing.T, e *Engine, unit string) *Unit {
	t.Helper()
	u, err := e.Acquire(testCtx(t, 5*time.Second), unit)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

type entry struct {
	seq  uint64
	data []byte
}

func replayAll(t *testing.T, e *Engine, unit string, from uint64) []entry {
	t.Helper()
	var got []entry
	err := e.ReplayFrom(testCtx(t, 10*time.Second), unit, from, func(seq uint64, data []byte) error {
		got = append(got, entry{seq, bytes.Clone(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendReplayTrim(t *testing.T) {
	e := embedded(t, Config{})
	ctx := testCtx(t, 10*time.Second)
	u := acquire(t, e, "amf1")
	other := acquire(t, e, "smf1") // another unit's log interleaves
	var want []entry
	for i := range 50 {
		data := []byte(fmt.Sprintf("msg %d", i))
		seq, err := u.Append(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 && seq <= want[len(want)-1].seq {
			t.Fatalf("append %d: seq %d not above %d", i, seq, want[len(want)-1].seq)
		}
		want = append(want, entry{seq, data})
		if _, err := other.Append(ctx, []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(got, want []entry) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("replayed %d entries, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].seq != want[i].seq || !bytes.Equal(got[i].data, want[i].data) {
				t.Fatalf("entry %d: %d %q, want %d %q", i, got[i].seq, got[i].data, want[i].seq, want[i].data)
			}
		}
	}
	check(replayAll(t, e, "amf1", 0), want)
	check(replayAll(t, e, "amf1", want[20].seq), want[20:])
	if got := replayAll(t, e, "amf1", want[49].seq+1000); len(got) != 0 {
		t.Fatalf("replay past the end: %d entries", len(got))
	}

	if err := u.Trim(ctx, want[29].seq); err != nil {
		t.Fatal(err)
	}
	check(replayAll(t, e, "amf1", 0), want[30:])
	if got := replayAll(t, e, "smf1", 0); len(got) != 50 {
		t.Fatalf("trim of amf1 left %d of smf1's 50 entries", len(got))
	}
	if s := e.Stats(); s.Appends != 100 || s.Failures != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCheckpointCompareAndSet(t *testing.T) {
	e := embedded(t, Config{})
	ctx := testCtx(t, 10*time.Second)
	u := acquire(t, e, "amf1")

	if _, _, err := e.GetCheckpoint(ctx, "amf1", "ue.1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get before put: %v, want ErrNotFound", err)
	}
	r1, err := u.PutCheckpoint(ctx, "ue.1", []byte("v1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.PutCheckpoint(ctx, "ue.1", []byte("again"), 0); !errors.Is(err, ErrRevision) {
		t.Fatalf("create of an existing key: %v, want ErrRevision", err)
	}
	// An append between puts: revisions are stream sequences, not counts.
	if _, err := u.Append(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	r2, err := u.PutCheckpoint(ctx, "ue.1", []byte("v2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.PutCheckpoint(ctx, "ue.1", []byte("stale"), r1); !errors.Is(err, ErrRevision) {
		t.Fatalf("put on an old revision: %v, want ErrRevision", err)
	}
	data, rev, err := e.GetCheckpoint(ctx, "amf1", "ue.1")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "v2" || rev != r2 {
		t.Fatalf("got %q at %d, want v2 at %d", data, rev, r2)
	}
	// Another key's revision is its own.
	if _, err := u.PutCheckpoint(ctx, "ue.2", []byte("w"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := u.PutCheckpoint(ctx, "ue.1", []byte("v3"), r2); err != nil {
		t.Fatal(err)
	}
	if _, err := u.PutCheckpoint(ctx, "bad*key", nil, 0); err == nil {
		t.Fatal("a wildcard key was accepted")
	}
}

// TestFencing: two writers of one unit; once the second acquires, every
// write of the first fails with ErrFenced, refused by the engine.
func TestFencing(t *testing.T) {
	e := embedded(t, Config{})
	ctx := testCtx(t, 10*time.Second)
	first := acquire(t, e, "amf1")
	if _, err := first.Append(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	rev, err := first.PutCheckpoint(ctx, "ctx", []byte("c1"), 0)
	if err != nil {
		t.Fatal(err)
	}

	second := acquire(t, e, "amf1")
	if second.Epoch() <= first.Epoch() {
		t.Fatalf("epoch %d after %d", second.Epoch(), first.Epoch())
	}
	if cur, err := e.Epoch(ctx, "amf1"); err != nil || cur != second.Epoch() {
		t.Fatalf("engine's epoch %d (%v), want %d", cur, err, second.Epoch())
	}
	for i := range 5 {
		if _, err := first.Append(ctx, []byte("after")); !errors.Is(err, ErrFenced) {
			t.Fatalf("stale append %d: %v, want ErrFenced", i, err)
		}
	}
	if _, err := first.PutCheckpoint(ctx, "ctx", []byte("stale"), rev); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale checkpoint: %v, want ErrFenced", err)
	}
	if _, err := first.PutCheckpoint(ctx, "new", []byte("stale"), 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale checkpoint of a new key: %v, want ErrFenced", err)
	}
	if data, _, err := e.GetCheckpoint(ctx, "amf1", "ctx"); err != nil || string(data) != "c1" {
		t.Fatalf("checkpoint after stale put: %q %v", data, err)
	}
	if _, _, err := e.GetCheckpoint(ctx, "amf1", "new"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stale create left a checkpoint: %v", err)
	}
	if _, err := second.Append(ctx, []byte("new owner")); err != nil {
		t.Fatal(err)
	}
	if _, err := second.PutCheckpoint(ctx, "ctx", []byte("c2"), rev); err != nil {
		t.Fatal(err)
	}
	got := replayAll(t, e, "amf1", 0)
	if len(got) != 2 || string(got[0].data) != "before" || string(got[1].data) != "new owner" {
		t.Fatalf("log after fencing: %v", got)
	}
	if s := e.Stats(); s.Fenced != 7 {
		t.Fatalf("fenced count %d, want 7", s.Fenced)
	}
}

// TestCorruptEntry: an entry that is not ours or is damaged is rejected by
// its checksum, counted, and stops the replay at its sequence.
func TestCorruptEntry(t *testing.T) {
	e := embedded(t, Config{})
	ctx := testCtx(t, 10*time.Second)
	u := acquire(t, e, "amf1")
	good, err := u.Append(ctx, []byte("good"))
	if err != nil {
		t.Fatal(err)
	}
	wantApplied := []uint64{good}
	flipped := frame([]byte("payload"))
	flipped[len(flipped)-1] ^= 1
	for _, raw := range [][]byte{flipped, frame([]byte("payload"))[:3], {9, 0, 0, 0, 0}} {
		ack, err := e.js.Publish(ctx, logSubject("amf1"), raw)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		err = e.ReplayFrom(ctx, "amf1", 0, func(seq uint64, _ []byte) error {
			got = append(got, seq)
			return nil
		})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("replay over %x: %v, want ErrCorrupt", raw, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(wantApplied) {
			t.Fatalf("replay applied %v before the corrupt entry %d, want %v", got, ack.Sequence, wantApplied)
		}
		if err := u.Trim(ctx, ack.Sequence); err != nil {
			t.Fatal(err)
		}
		wantApplied = nil
	}
	if _, err := e.js.Publish(ctx, checkpointSubject("amf1", "k"), []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.GetCheckpoint(ctx, "amf1", "k"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt checkpoint: %v, want ErrCorrupt", err)
	}
	if s := e.Stats(); s.Corrupt != 4 {
		t.Fatalf("corrupt count %d, want 4", s.Corrupt)
	}
}

func TestLogFull(t *testing.T) {
	e := embedded(t, Config{MaxBytes: 64 << 10})
	ctx := testCtx(t, 10*time.Second)
	u := acquire(t, e, "amf1")
	data := make([]byte, 1024)
	var err error
	for range 200 {
		if _, err = u.Append(ctx, data); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrLogFull) {
		t.Fatalf("append to a full log: %v, want ErrLogFull", err)
	}
}

func TestUnreachableAtStart(t *testing.T) {
	port, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Connect(testCtx(t, 5*time.Second), []string{"nats://127.0.0.1:" + strconv.Itoa(port)}, Config{Timeout: time.Second})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("connect to nothing: %v, want ErrUnreachable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("connect to nothing took %v", d)
	}
}

// TestEngineDown: with the server shut down, operations fail within their
// deadline; after a restart on the same store they work again and the
// log is whole.
func TestEngineDown(t *testing.T) {
	port, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	scfg := ServerConfig{StoreDir: t.TempDir(), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	srv, err := StartEmbedded(testCtx(t, 10*time.Second), scfg, Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Connect(testCtx(t, 5*time.Second), []string{srv.ClientURL()}, Config{})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer e.Close()
	u := acquire(t, e, "amf1")
	first, err := u.Append(testCtx(t, 5*time.Second), []byte("before"))
	if err != nil {
		t.Fatal(err)
	}

	srv.Close()
	const deadline = 300 * time.Millisecond
	ops := map[string]func(ctx context.Context) error{
		"append": func(ctx context.Context) error { _, err := u.Append(ctx, []byte("down")); return err },
		"checkpoint": func(ctx context.Context) error {
			_, err := u.PutCheckpoint(ctx, "k", []byte("down"), 0)
			return err
		},
		"get": func(ctx context.Context) error { _, _, err := e.GetCheckpoint(ctx, "amf1", "k"); return err },
		"replay": func(ctx context.Context) error {
			return e.ReplayFrom(ctx, "amf1", 0, func(uint64, []byte) error { return nil })
		},
		"acquire": func(ctx context.Context) error { _, err := e.Acquire(ctx, "amf2"); return err },
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		err := op(ctx)
		d := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s with the engine down succeeded", name)
		}
		if d > deadline+200*time.Millisecond {
			t.Fatalf("%s with the engine down took %v, deadline %v", name, d, deadline)
		}
	}
	if e.Stats().Failures < uint64(len(ops)) {
		t.Fatalf("failures %d, want ≥ %d", e.Stats().Failures, len(ops))
	}

	srv, err = StartEmbedded(testCtx(t, 10*time.Second), scfg, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The client reconnects on its own; the append may have been stored
	// before its deadline passed, so a replay may hold it too.
	second, err := u.Append(testCtx(t, 10*time.Second), []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	got := replayAll(t, e, "amf1", 0)
	if len(got) < 2 || got[0].seq != first || got[len(got)-1].seq != second {
		t.Fatalf("log after restart: %v", got)
	}
}
