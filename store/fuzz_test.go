package store

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary log contents to Open: it must return an error or a
// usable store, never panic, and a store it accepts must survive a reopen.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("deadbeef {}\n"))
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed")
	s, err := Open(seed)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := s.PutAll(DefaultSubscribers(2), false); err != nil {
		f.Fatal(err)
	}
	if _, err := s.IncrementSQN(DemoSUPI(1)); err != nil {
		f.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-7])

	f.Fuzz(func(t *testing.T, log []byte) {
		path := filepath.Join(t.TempDir(), "db")
		if err := os.WriteFile(path, log, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenOptions(path, Options{NoSync: true})
		if err != nil {
			return
		}
		n := s.Len()
		for _, sub := range s.List() {
			if err := sub.Validate(); err != nil {
				t.Fatalf("Open loaded an invalid record: %v", err)
			}
			if _, err := s.IncrementSQN(sub.SUPI); err != nil {
				t.Fatalf("IncrementSQN on loaded record: %v", err)
			}
		}
		s.Close()
		r, err := OpenOptions(path, Options{NoSync: true})
		if err != nil {
			t.Fatalf("reopen of an accepted log failed: %v", err)
		}
		if r.Len() != n {
			t.Fatalf("reopen: %d records, want %d", r.Len(), n)
		}
		r.Close()
	})
}
