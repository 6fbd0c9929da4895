package store

import (
	"bytes"
	"path/filepath"
	"testing"
)

// FuzzReadLegacy feeds arbitrary contents to the legacy decoder: it must
// return an error or valid subscribers, never panic, and what it accepts
// must import into a store.
func FuzzReadLegacy(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("deadbeef {}\n"))
	f.Add(legacySample(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		subs, err := ReadLegacy(bytes.NewReader(data))
		if err != nil || len(subs) == 0 {
			return
		}
		s, err := OpenOptions(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.PutAll(subs, true); err != nil {
			t.Fatalf("decoded subscribers do not import: %v", err)
		}
	})
}
