package store

import (
	"path/filepath"
	"sync"
	"testing"
)

func plusOne(cur uint64) (uint64, error) { return (cur + 1) & MaxSQN, nil }

// reservation reads a subscriber's sqn_reserved.
func reservation(t *testing.T, s *Store, supi string) uint64 {
	t.Helper()
	var r int64
	if err := s.db.QueryRow(`SELECT sqn_reserved FROM subscribers WHERE supi = $1`, supi).Scan(&r); err != nil {
		t.Fatal(err)
	}
	return uint64(r)
}

// reboot makes the store at path look as if the machine had restarted
// since it was last opened, as after a power failure.
func reboot(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.durable.Exec(`UPDATE store_meta SET value = 'an earlier boot' WHERE key = 'boot_id'`); err != nil {
		t.Fatal(err)
	}
}

// A process that dies without closing the store loses no allocation: the
// next process resumes at the exact SQN_HE, with no jump.
func TestSQNAfterProcessCrash(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, again := e.open(t)
		sub := DefaultSubscribers(1)[0]
		if err := s.Put(sub); err != nil {
			t.Fatal(err)
		}
		var last uint64
		for range 300 {
			n, err := s.UpdateSQN(sub.SUPI, 100, plusOne)
			if err != nil {
				t.Fatal(err)
			}
			last = n
		}
		r := again.must(t) // s is never closed
		if got, _ := r.Get(sub.SUPI); got.SQN != last {
			t.Fatalf("SQN_HE in another process %d, want %d", got.SQN, last)
		}
		if n, err := r.UpdateSQN(sub.SUPI, 100, plusOne); err != nil || n != last+1 {
			t.Fatalf("next SQN %d (%v), want %d", n, err, last+1)
		}
	})
}

// After a reboot (power failure), SQN_HE resumes at the reservation: above
// every SQN issued, even those whose commits the power failure lost.
func TestSQNAfterReboot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 150 {
		n, err := s.UpdateSQN(sub.SUPI, 100, plusOne)
		if err != nil {
			t.Fatal(err)
		}
		last = n
	}
	res := reservation(t, s, sub.SUPI)
	if res < last || res > last+100 {
		t.Fatalf("reservation %d after issuing %d with headroom 100", res, last)
	}
	reboot(t, s)
	s.Close()
	r := openT(t, path, Options{})
	if got, _ := r.Get(sub.SUPI); got.SQN != res {
		t.Fatalf("SQN_HE after reboot %d, want the reservation %d", got.SQN, res)
	}
	if n, err := r.UpdateSQN(sub.SUPI, 100, plusOne); err != nil || n != res+1 {
		t.Fatalf("first SQN after reboot %d (%v), want %d", n, err, res+1)
	}
	// The same boot again: no further jump.
	r.Close()
	r = openT(t, path, Options{})
	if got, _ := r.Get(sub.SUPI); got.SQN != res+1 {
		t.Fatalf("SQN_HE after a plain reopen %d, want %d", got.SQN, res+1)
	}
}

// A jump past the reservation (resynchronisation to SQN_MS) is durable,
// with a new reservation beyond it, before it is returned.
func TestSQNJumpPastReservation(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
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
			t.Fatalf("jump past the reservation: %d durable writes, want 1", s.Syncs()-before)
		}
		if r := reservation(t, s, sub.SUPI); r != ms+1+1000 {
			t.Fatalf("reservation after the jump %d, want %d", r, ms+1+1000)
		}
	})
}

// SQN_HE wrapping at 48 bits goes below the reservation; the lower
// reservation must be durable, or a restart after a power failure would
// resume near the top, wrap again and reissue the wrapped SQNs.
func TestSQNWrapLowersReservation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
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
	reboot(t, s)
	s.Close()
	r := openT(t, path, Options{})
	if n, _ := r.UpdateSQN(sub.SUPI, 100, plusOne); n <= 1 || n > 101 {
		t.Fatalf("SQN after wrap and reboot %d, want in (1, 101]", n)
	}
}

// Concurrent allocations are unique, and increasing as each goroutine sees
// them; with a +1 step the SQNs issued are exactly 1..count.
func TestConcurrentUpdateSQNUniqueIncreasing(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
		subs := DefaultSubscribers(4)
		if _, err := s.PutAll(subs, false); err != nil {
			t.Fatal(err)
		}
		const workers, each = 16, 50
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
	})
}

// With headroom R, a subscriber's SQNs cost one durable write per R, not
// one each.
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
		t.Fatalf("%d allocations with headroom %d: %d durable writes, want %d", allocs, headroom, got, allocs/headroom)
	}
	// Headroom 0 makes every allocation durable.
	before = s.Syncs()
	for range 10 {
		if _, err := s.UpdateSQN(subs[1].SUPI, 0, plusOne); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Syncs() - before; got != 10 {
		t.Fatalf("headroom 0: %d durable writes for 10 allocations, want 10", got)
	}
}

// ReserveSQNs raises every missing reservation in one durable write, after
// which the first allocations of all subscribers need none.
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
		t.Fatalf("ReserveSQNs for 500 subscribers: %d durable writes, want 1", got)
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
		t.Fatalf("5000 allocations inside the reservations: %d durable writes, want 0", got)
	}
	// Nothing to do when every reservation still has half its headroom.
	before = s.Syncs()
	if err := s.ReserveSQNs(64); err != nil || s.Syncs() != before {
		t.Fatalf("second ReserveSQNs: %v, %d durable writes", err, s.Syncs()-before)
	}
	reboot(t, s)
	s.Close()
	r := openT(t, path, Options{})
	for supi, last := range issued {
		n, err := r.UpdateSQN(supi, 64, plusOne)
		if err != nil {
			t.Fatal(err)
		}
		if n <= last {
			t.Fatalf("%s: %d after the reboot, %d before", supi, n, last)
		}
	}
}

// ReserveSQNs raises short reservations to SQN_HE+headroom (at most
// MaxSQN) and leaves the others, on both engines.
func TestReserveSQNs(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
		subs := DefaultSubscribers(3)
		subs[1].SQN = MaxSQN - 10
		if _, err := s.PutAll(subs, false); err != nil {
			t.Fatal(err)
		}
		if err := s.ReserveSQNs(1000); err != nil {
			t.Fatal(err)
		}
		for i, want := range []uint64{1000, MaxSQN, 1000} {
			if got := reservation(t, s, subs[i].SUPI); got != want {
				t.Errorf("%s: reservation %d, want %d", subs[i].SUPI, got, want)
			}
		}
		for range 600 {
			if _, err := s.UpdateSQN(subs[0].SUPI, 1000, plusOne); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.ReserveSQNs(1000); err != nil {
			t.Fatal(err)
		}
		if got := reservation(t, s, subs[0].SUPI); got != 1600 {
			t.Errorf("reservation with 400 of 1000 left: %d, want 1600", got)
		}
		if got := reservation(t, s, subs[2].SUPI); got != 1000 {
			t.Errorf("reservation with all its headroom left changed to %d", got)
		}
	})
}
