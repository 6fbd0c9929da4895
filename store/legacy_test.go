package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// legacyLog writes entries as the legacy store did.
func legacyLog(t testing.TB, es ...legacyEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range es {
		body, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%08x %s\n", crc32.Checksum(body, legacyCRC), body)
	}
	return buf.Bytes()
}

func legacySample(t testing.TB) []byte {
	subs := DefaultSubscribers(3)
	subs[0].SQN = 5
	return legacyLog(t,
		legacyEntry{Op: "put", Sub: &subs[0]},
		legacyEntry{Op: "put", Sub: &subs[1]},
		legacyEntry{Op: "sqn", SUPI: subs[0].SUPI, SQN: 5 + 1024},
		legacyEntry{Op: "put", Sub: &subs[2]},
		legacyEntry{Op: "del", SUPI: subs[2].SUPI},
	)
}

// Open converts a legacy log in place: the subscribers, each at its last
// logged SQN, in a SQLite store at the same path, the log kept beside it.
func TestOpenConvertsLegacyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	log := append(legacySample(t), "0badc0de {\"op\":\"put\",\"sub\":{\"su"...) // torn append
	if err := os.WriteFile(path, log, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, path, Options{})
	if s.LegacyBackup() != path+".legacy" {
		t.Fatalf("LegacyBackup = %q", s.LegacyBackup())
	}
	if b, err := os.ReadFile(path + ".legacy"); err != nil || !bytes.Equal(b, log) {
		t.Fatalf("legacy log not kept as it was: %v", err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].SUPI != DemoSUPI(1) || list[0].SQN != 5+1024 || list[1].SUPI != DemoSUPI(2) || list[1].SQN != 0 {
		t.Fatalf("converted store holds %+v", list)
	}
	if k, _ := sniff(path); k != fileSQLite {
		t.Fatalf("path holds kind %d after conversion", k)
	}
	if left, _ := filepath.Glob(path + ".import*"); len(left) > 0 {
		t.Fatalf("conversion left %v", left)
	}
	s.Close()
	r := openT(t, path, Options{})
	if r.LegacyBackup() != "" || lenT(t, r) != 2 {
		t.Fatalf("second open: backup %q, %d subscribers", r.LegacyBackup(), lenT(t, r))
	}
}

// Damage before the end of a legacy log is refused, not guessed at.
func TestReadLegacyCorruptMiddle(t *testing.T) {
	log := legacySample(t)
	log[20] ^= 0x01
	if _, err := ReadLegacy(bytes.NewReader(log)); err == nil {
		t.Fatal("ReadLegacy accepted a log damaged in the middle")
	}
	path := filepath.Join(t.TempDir(), "subscribers.db")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("Open converted a damaged log")
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, log) {
		t.Fatal("damaged log changed by a failed conversion")
	}
}

func TestReadLegacyFileRefusesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	openT(t, path, Options{})
	if _, err := ReadLegacyFile(path); err == nil {
		t.Fatal("ReadLegacyFile read a SQLite store")
	}
	if _, err := ReadLegacyFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) && err == nil {
		t.Fatal("ReadLegacyFile of a missing file succeeded")
	}
}
