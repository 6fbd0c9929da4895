package shmstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestRoundTrip: puts, replacements and deletes over keys of three kinds in
// a small store (many compactions); the snapshot equals the model at
// checkpoints along the way and at the end.
func TestRoundTrip(t *testing.T) {
	const keys, maxRec, ops = 60, 300, 20000
	w, path := newStore(t, 64<<10, 7)
	m := model{}
	for i := range uint64(ops) {
		o := opAt(i, keys, maxRec)
		if err := o.do(w); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		m.apply(o.kind, o.key, o.rec, o.del)
		if i%997 == 0 || i == ops-1 {
			s := mustOpen(t, path)
			if err := sameAs(s, m); err != nil {
				t.Fatalf("after op %d: %v", i, err)
			}
			if s.Stats.Corrupted != 0 || s.Epoch != 7 {
				t.Fatalf("after op %d: stats %+v epoch %d", i, s.Stats, s.Epoch)
			}
		}
	}
	st := w.Stats()
	if st.Compactions < 50 || st.LiveKeys != len(m) {
		t.Fatalf("stats %+v: want many compactions and %d live keys", st, len(m))
	}
	var live uint64
	for k, rec := range m {
		live += uint64(entryHeader + len(k.key) + len(rec))
	}
	if st.LiveBytes != live || st.Used < live || st.Used > st.Capacity {
		t.Fatalf("stats %+v: live bytes want %d", st, live)
	}
	// Close keeps the file and its records.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sameAs(mustOpen(t, path), m); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if err := w.Put(0, []byte("k"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
}

// TestConcurrentPuts: goroutines Put and Delete their own keys at once,
// across compactions; the snapshot equals the union of their models (run
// with -race).
func TestConcurrentPuts(t *testing.T) {
	const workers, keys, maxRec, ops = 8, 20, 200, 3000
	w, path := newStore(t, 128<<10, 1)
	models := make([]model, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := range workers {
		models[g] = model{}
		wg.Go(func() {
			for i := range uint64(ops) {
				o := opAt(i*workers+uint64(g), keys, maxRec)
				o.key = fmt.Appendf(o.key, "-g%d", g)
				if err := o.do(w); err != nil {
					errs <- fmt.Errorf("worker %d op %d: %w", g, i, err)
					return
				}
				models[g].apply(o.kind, o.key, o.rec, o.del)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := model{}
	for _, m := range models {
		for k, v := range m {
			all[k] = v
		}
	}
	if err := sameAs(mustOpen(t, path), all); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Compactions == 0 {
		t.Fatalf("no compaction: %+v", st)
	}
}

// TestEdgeRecords: an empty key and an empty record are a record, not a
// tombstone; deleting a missing key does nothing; a key too long is
// refused.
func TestEdgeRecords(t *testing.T) {
	w, path := newStore(t, MinSize, 0)
	if err := w.Put(3, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(3, []byte("x"), []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(3, []byte("absent")); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(3, make([]byte, MaxKey+1), nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long key: %v, want ErrTooLarge", err)
	}
	s := mustOpen(t, path)
	if err := sameAs(s, model{{3, ""}: {}, {3, "x"}: {}}); err != nil {
		t.Fatal(err)
	}
	if s.Stats.Entries != 2 {
		t.Fatalf("stats %+v: the delete of a missing key wrote an entry", s.Stats)
	}
}

// TestFull: live data beyond a half is refused with ErrFull, the records
// stored before stay, and a delete makes room again.
func TestFull(t *testing.T) {
	w, path := newStore(t, MinSize, 0) // halves of 4 KiB
	rec := make([]byte, 1000)
	m := model{}
	var err error
	i := 0
	for ; i < 10; i++ {
		key := []byte{byte(i)}
		if err = w.Put(1, key, rec); err != nil {
			break
		}
		m.apply(1, key, rec, false)
	}
	if !errors.Is(err, ErrFull) || i != 4 {
		t.Fatalf("put %d: %v, want ErrFull at the 5th", i, err)
	}
	if st := w.Stats(); st.Full != 1 || st.LiveKeys != 4 {
		t.Fatalf("stats %+v", st)
	}
	if err := sameAs(mustOpen(t, path), m); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(1, []byte{0}); err != nil {
		t.Fatal(err)
	}
	m.apply(1, []byte{0}, nil, true)
	if err := w.Put(1, []byte{9}, rec); err != nil {
		t.Fatalf("put after a delete: %v", err)
	}
	m.apply(1, []byte{9}, rec, false)
	if err := sameAs(mustOpen(t, path), m); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(1, []byte{10}, make([]byte, 5000)); !errors.Is(err, ErrFull) {
		t.Fatalf("a record larger than a half: %v, want ErrFull", err)
	}
}

// TestCreateReplaces: Create over an existing store makes a new file; the
// previous writer keeps its own (now unlinked) file and cannot change the
// new one.
func TestCreateReplaces(t *testing.T) {
	dir := storeDir(t)
	path := filepath.Join(dir, "store")
	old, err := Create(path, MinSize, Options{Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Put(1, []byte("a"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, 2*MinSize, Options{Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := old.Put(1, []byte("b"), []byte("zombie")); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(1, []byte("a"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, path)
	if err := sameAs(s, model{{1, "a"}: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	if s.Epoch != 2 {
		t.Fatalf("epoch %d, want 2", s.Epoch)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files left in %s: %v", dir, ents)
	}
	if _, err := Create(path, MinSize-1, Options{}); err == nil {
		t.Fatal("Create accepted a size below MinSize")
	}
}
