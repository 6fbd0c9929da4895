package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/internal/rofs"
	"github.com/tern5g/tern/store"
)

// TestSubscriberListReadOnly: list reads a store this user may not write
// (tern up's, another user's; a read-only volume); add, which must write,
// names the store and why it cannot, not SQLite's "unable to open
// database file (14)".
func TestSubscriberListReadOnly(t *testing.T) {
	if rofs.Isolate(t) {
		return // it ran in a child process, where root's read-only mount ends with it
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "subs.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutAll(store.DefaultSubscribers(2), false); err != nil {
		t.Fatal(err)
	}
	st.Close()
	undo, err := rofs.ReadOnly(dir)
	if errors.Is(err, rofs.ErrNoMount) {
		t.Skipf("no way to make a directory read-only to root here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { undo() })
	if err := runSubscriber([]string{"list", "--store", db}); err != nil {
		t.Fatalf("list of a read-only store: %v", err)
	}
	err = runSubscriber([]string{"add", "--store", db, "--imsi", "208930000000101", "--k", "8baf473f2f8fd09487cccbd7097c6862",
		"--opc", "8e27b6af0e692e750f32667a3b14605d"})
	if err == nil || !strings.Contains(err.Error(), db) || strings.Contains(err.Error(), "(14)") {
		t.Fatalf("add to a read-only store: %v, want the path and why it cannot be written", err)
	}
}
