package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveUnused: a store is taken back by the Open that created it only
// while no Store anywhere has it open (read-only ones included) and it holds
// no subscriber; then its files and the directories made for it go.
func TestRemoveUnused(t *testing.T) {
	top := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(top, "deeper", "subscribers.db")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	made := first.Created()
	if made == nil || made.Path() != path {
		t.Fatalf("Created = %+v, want the new file", made)
	}
	second, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if second.Created() != nil {
		t.Error("a second Open of an existing store says it created it")
	}
	first.Close()
	if removed, err := made.RemoveUnused(); removed || err != nil {
		t.Fatalf("removed a store another Store has open (%v)", err)
	}
	second.Close()

	reader, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := made.RemoveUnused(); removed || err != nil {
		t.Fatalf("removed a store a read-only Store has open (%v)", err)
	}
	reader.Close()

	removed, err := made.RemoveUnused()
	if !removed || err != nil {
		t.Fatalf("RemoveUnused of an unused, empty store: %v, %v", removed, err)
	}
	if _, err := os.Stat(top); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directories made for the store are still there: %v", err)
	}
}

// TestRemoveUnusedKeepsSubscribers: a store someone put a subscriber in
// stays, and so does a file that replaced the one created.
func TestRemoveUnusedKeepsSubscribers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	made := s.Created()
	if err := s.Put(DefaultSubscribers(1)[0]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if removed, err := made.RemoveUnused(); removed || err != nil {
		t.Fatalf("removed a store with a subscriber (%v)", err)
	}
	if n := openLen(t, path); n != 1 {
		t.Fatalf("%d subscribers left, want 1", n)
	}

	// Removed behind its creator's back and made again by another Open:
	// not the creator's any more.
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if removed, err := made.RemoveUnused(); removed || err != nil {
		t.Fatalf("removed a store another Open created (%v)", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func openLen(t *testing.T, path string) int {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
