package store

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// crashImage returns the log as a power failure now would leave it: only
// the bytes that have been fsynced.
func crashImage(t *testing.T, s *Store) []byte {
	t.Helper()
	s.lockFlush() // no fsync or compaction in flight
	defer s.unlockFlush()
	data, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) < s.syncedSize {
		t.Fatalf("log has %d bytes, %d synced", len(data), s.syncedSize)
	}
	return data[:s.syncedSize]
}

// reopenImage opens a fresh store from a crash image.
func reopenImage(t *testing.T, image []byte) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	return openT(t, path, Options{})
}

func plusOne(cur uint64) (uint64, error) { return (cur + 1) & MaxSQN, nil }

// Sequential allocations, then a crash (only fsynced bytes survive, or the
// process dies and the whole file survives): every SQN after the restart is
// above every SQN before it.
func TestSQNNotReusedAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 1000 {
		n, err := s.UpdateSQN(sub.SUPI, 100, plusOne)
		if err != nil {
			t.Fatal(err)
		}
		last = n
	}
	power := crashImage(t, s)
	// Process crash: the store is never closed and the file is reopened as is.
	proc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, image := range map[string][]byte{"power loss": power, "process crash": proc} {
		r := reopenImage(t, image)
		got, err := r.Get(sub.SUPI)
		if err != nil {
			t.Fatal(err)
		}
		if got.SQN < last || got.SQN > last+100 {
			t.Errorf("%s: SQN_HE after restart %d, want the reservation in [%d, %d]", name, got.SQN, last, last+100)
		}
		n, err := r.UpdateSQN(sub.SUPI, 100, plusOne)
		if err != nil || n <= last {
			t.Errorf("%s: first SQN after restart %d (%v), want > %d", name, n, err, last)
		}
	}
}

// Many goroutines allocate while crash images are taken mid-way; the
// log is compacted along the way. From every image, SQNs issued after the
// restart are above every SQN returned before the image was taken.
func TestSQNNotReusedAfterCrashMidway(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{CompactMin: 32})
	subs := DefaultSubscribers(4)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		issued = map[string]uint64{} // highest SQN returned so far
	)
	type snapshot struct {
		issued map[string]uint64
		image  []byte
	}
	var snaps []snapshot
	snap := func() {
		mu.Lock()
		defer mu.Unlock()
		cp := make(map[string]uint64, len(issued))
		for k, v := range issued {
			cp[k] = v
		}
		snaps = append(snaps, snapshot{cp, crashImage(t, s)})
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 150 {
				supi := subs[r.IntN(len(subs))].SUPI
				n, err := s.UpdateSQN(supi, 8, plusOne)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				issued[supi] = max(issued[supi], n)
				mu.Unlock()
				if w == 0 && i%30 == 29 {
					snap()
				}
			}
		})
	}
	wg.Wait()
	snap()
	if s.Syncs() == 0 {
		t.Fatal("no fsyncs: the test exercised nothing")
	}
	for i, sn := range snaps {
		r := reopenImage(t, sn.image)
		for _, sub := range subs {
			n, err := r.UpdateSQN(sub.SUPI, 8, plusOne)
			if err != nil {
				t.Fatal(err)
			}
			if n <= sn.issued[sub.SUPI] {
				t.Errorf("image %d: %s: SQN %d after restart, %d was issued before", i, sub.SUPI, n, sn.issued[sub.SUPI])
			}
		}
		r.Close()
	}
}

// A jump past the reservation (resynchronisation to SQN_MS) is logged
// before it is returned.
func TestSQNJumpPastReservationPersists(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.UpdateSQN(sub.SUPI, 1000, plusOne); err != nil {
			t.Fatal(err)
		}
	}
	const ms = 1 << 30
	before := s.Syncs()
	n, err := s.UpdateSQN(sub.SUPI, 1000, func(cur uint64) (uint64, error) { return max(cur, ms) + 1, nil })
	if err != nil || n != ms+1 {
		t.Fatalf("jump = %d, %v", n, err)
	}
	if s.Syncs() != before+1 {
		t.Fatalf("jump past the reservation: %d fsyncs, want 1", s.Syncs()-before)
	}
	r := reopenImage(t, crashImage(t, s))
	if got, _ := r.Get(sub.SUPI); got.SQN < ms+1 {
		t.Fatalf("SQN_HE after crash %d, want >= %d", got.SQN, ms+1)
	}
	if n, _ := r.UpdateSQN(sub.SUPI, 1000, plusOne); n <= ms+1 {
		t.Fatalf("SQN after crash %d, want > %d", n, ms+1)
	}
}

// SQN_HE wrapping at 48 bits goes below the reservation; the lower
// reservation must be logged or a restart would issue the wrapped SQNs again.
func TestSQNWrapPersists(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{})
	sub := DefaultSubscribers(1)[0]
	sub.SQN = MaxSQN - 2
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for range 4 {
		n, err := s.UpdateSQN(sub.SUPI, 100, plusOne)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if got[2] != 0 || got[3] != 1 {
		t.Fatalf("SQNs across the wrap: %v", got)
	}
	r := reopenImage(t, crashImage(t, s))
	if n, _ := r.UpdateSQN(sub.SUPI, 100, plusOne); n <= 1 || n > 101 {
		t.Fatalf("SQN after wrap and crash %d, want in (1, 101]", n)
	}
}

// A clean Close logs the exact SQN_HE, so a restart resumes without a jump
// and `tern subscriber list` shows the last SQN issued.
func TestCloseLogsExactSQN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	subs := DefaultSubscribers(2)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := s.UpdateSQN(subs[0].SUPI, 1000, plusOne); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openT(t, path, Options{})
	for i, want := range []uint64{7, 0} {
		if got, _ := r.Get(subs[i].SUPI); got.SQN != want {
			t.Errorf("%s: SQN after clean restart %d, want %d", subs[i].SUPI, got.SQN, want)
		}
	}
	if n, _ := r.UpdateSQN(subs[0].SUPI, 1000, plusOne); n != 8 {
		t.Errorf("first SQN after clean restart %d, want 8", n)
	}
}

// Concurrent allocations are unique, and increasing as each goroutine sees
// them; with a +1 step the SQNs issued are exactly 1..count.
func TestConcurrentUpdateSQNUniqueIncreasing(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{CompactMin: 16})
	subs := DefaultSubscribers(4)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	const workers, each = 32, 200
	var (
		mu   sync.Mutex
		seen = make(map[string]map[uint64]bool, len(subs))
	)
	for _, sub := range subs {
		seen[sub.SUPI] = map[uint64]bool{}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			last := map[string]uint64{}
			for i := range each {
				supi := subs[(w+i)%len(subs)].SUPI
				n, err := s.UpdateSQN(supi, 32, plusOne)
				if err != nil {
					t.Error(err)
					return
				}
				if n <= last[supi] {
					t.Errorf("%s: SQN %d after %d in one goroutine", supi, n, last[supi])
				}
				last[supi] = n
				mu.Lock()
				if seen[supi][n] {
					t.Errorf("%s: SQN %d issued twice", supi, n)
				}
				seen[supi][n] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, sub := range subs {
		k := uint64(len(seen[sub.SUPI]))
		for n := uint64(1); n <= k; n++ {
			if !seen[sub.SUPI][n] {
				t.Fatalf("%s: %d SQNs issued but %d missing", sub.SUPI, k, n)
			}
		}
		if got, _ := s.Get(sub.SUPI); got.SQN != k {
			t.Errorf("%s: SQN_HE %d, want %d", sub.SUPI, got.SQN, k)
		}
		total += int(k)
	}
	if total != workers*each {
		t.Fatalf("%d SQNs issued, want %d", total, workers*each)
	}
}

// With headroom R, a subscriber's SQNs cost one fsync per R, not one each.
func TestSQNSyncsAmortized(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{})
	subs := DefaultSubscribers(2)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	const allocs, headroom = 1000, 100
	before := s.Syncs()
	for range allocs {
		if _, err := s.UpdateSQN(subs[0].SUPI, headroom, plusOne); err != nil {
			t.Fatal(err)
		}
	}
	// Reservations written at SQN 1, 102, 203, ..., 910: ten.
	if got := s.Syncs() - before; got != allocs/headroom {
		t.Fatalf("%d allocations with headroom %d: %d fsyncs, want %d", allocs, headroom, got, allocs/headroom)
	}
	// Headroom 0 logs every SQN: one fsync each.
	before = s.Syncs()
	for range 10 {
		if _, err := s.UpdateSQN(subs[1].SUPI, 0, plusOne); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Syncs() - before; got != 10 {
		t.Fatalf("headroom 0: %d fsyncs for 10 allocations, want 10", got)
	}
}

// Fresh subscribers' first allocations, all at once, share one fsync
// (group commit) instead of paying one each.
func TestGroupCommit(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{})
	const n = 64
	subs := DefaultSubscribers(n)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	base := s.written
	s.mu.RUnlock()
	var once sync.Once
	s.beforeSync = func() {
		// Hold the first fsync until every writer has appended, so that
		// the group is deterministic.
		once.Do(func() {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
				s.mu.RLock()
				all := s.written == base+n
				s.mu.RUnlock()
				if all {
					return
				}
			}
			t.Error("writers never appended")
		})
	}
	before := s.Syncs()
	var wg sync.WaitGroup
	for _, sub := range subs {
		wg.Go(func() {
			if _, err := s.UpdateSQN(sub.SUPI, 1024, plusOne); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := s.Syncs() - before; got != 1 {
		t.Fatalf("%d concurrent first allocations: %d fsyncs, want 1", n, got)
	}
	// They are durable: a crash now keeps all 64 reservations.
	r := reopenImage(t, crashImage(t, s))
	for _, sub := range subs {
		if got, _ := r.Get(sub.SUPI); got.SQN != 1+1024 {
			t.Fatalf("%s: reservation after crash %d, want %d", sub.SUPI, got.SQN, 1+1024)
		}
	}
}

// ReserveSQNs logs every missing reservation in one fsync, after which the
// first allocations of all subscribers touch no disk; a crash after it still
// never reissues an SQN.
func TestReserveSQNsUpFront(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	subs := DefaultSubscribers(500)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	before := s.Syncs()
	if err := s.ReserveSQNs(64); err != nil {
		t.Fatal(err)
	}
	if got := s.Syncs() - before; got != 1 {
		t.Fatalf("ReserveSQNs for 500 subscribers: %d fsyncs, want 1", got)
	}
	before = s.Syncs()
	issued := map[string]uint64{}
	for _, sub := range subs {
		for range 10 {
			n, err := s.UpdateSQN(sub.SUPI, 64, plusOne)
			if err != nil {
				t.Fatal(err)
			}
			issued[sub.SUPI] = n
		}
	}
	if got := s.Syncs() - before; got != 0 {
		t.Fatalf("5000 allocations inside the reservations: %d fsyncs, want 0", got)
	}
	// Nothing to do when every reservation still has half its headroom.
	before = s.Syncs()
	if err := s.ReserveSQNs(64); err != nil || s.Syncs() != before {
		t.Fatalf("second ReserveSQNs: %v, %d fsyncs", err, s.Syncs()-before)
	}
	r := reopenImage(t, crashImage(t, s))
	for supi, last := range issued {
		n, err := r.UpdateSQN(supi, 64, plusOne)
		if err != nil {
			t.Fatal(err)
		}
		if n <= last {
			t.Fatalf("%s: %d after the crash, %d before", supi, n, last)
		}
	}
}
