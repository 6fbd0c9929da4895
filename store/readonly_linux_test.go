package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/internal/rofs"
)

// TestReadOnlyStore: a store this process may not write (another user's,
// or on a read-only volume) is read by OpenReadOnly, and Open refuses it
// naming the path and why, where SQLite says "unable to open database file
// (14)" or, at the first write, "attempt to write a readonly database".
func TestReadOnlyStore(t *testing.T) {
	if rofs.Isolate(t) {
		return // it ran in a child process, where root's read-only mount ends with it
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "subscribers.db")
	subs := DefaultSubscribers(2)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	s.Close()
	undo, err := rofs.ReadOnly(dir)
	if errors.Is(err, rofs.ErrNoMount) {
		t.Skipf("no way to make a directory read-only to root here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { undo() })

	_, err = Open(path)
	if err == nil {
		t.Fatal("Open of a store it may not write succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !(strings.Contains(msg, "read-only file system") || strings.Contains(msg, "may not write")) ||
		strings.Contains(msg, "(14)") || strings.Contains(msg, "readonly database") {
		t.Errorf("Open: %v; want the path and why it cannot be written", err)
	}

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	defer r.Close()
	got, err := r.List()
	if err != nil || len(got) != len(subs) {
		t.Fatalf("List: %d subscribers, %v", len(got), err)
	}
	if sub, err := r.Get(subs[1].SUPI); err != nil || sub.SUPI != subs[1].SUPI {
		t.Fatalf("Get: %v", err)
	}
	if err := r.Delete(subs[0].SUPI); err == nil {
		t.Error("a read-only store deleted a subscriber")
	}
}

// TestOpenReadOnlyBesideAWriter: a reader sees what a writer that is
// still open has committed (in its write-ahead log), and refuses what is
// not a current store without creating anything.
func TestOpenReadOnlyBesideAWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "subscribers.db")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sub := DefaultSubscribers(1)[0]
	if err := w.Put(sub); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(sub.SUPI); err != nil {
		t.Fatalf("committed subscriber not seen: %v", err)
	}
	if err := w.Delete(sub.SUPI); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(sub.SUPI); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted subscriber: %v, want ErrNotFound", err)
	}

	missing := filepath.Join(dir, "missing.db")
	if _, err := OpenReadOnly(missing); err == nil {
		t.Error("OpenReadOnly of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenReadOnly created %s", missing)
	}
	legacy := filepath.Join(dir, "legacy.log")
	os.WriteFile(legacy, []byte(`{"supi":"imsi-208930000000001"}`+"\n"), 0o600)
	if _, err := OpenReadOnly(legacy); err == nil || !strings.Contains(err.Error(), "legacy") {
		t.Errorf("OpenReadOnly of a legacy log: %v", err)
	}
}
