package shmstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// storeDir is where tests put store files: a directory on /dev/shm (tmpfs,
// as in production) when there is one, else the test's temporary
// directory.
func storeDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "tern-shmstore-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

func newStore(t testing.TB, size int, epoch uint64) (*Writer, string) {
	t.Helper()
	path := filepath.Join(storeDir(t), "store")
	w, err := Create(path, size, Options{Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, path
}

// mkey is a model's key: kind and key.
type mkey struct {
	kind uint8
	key  string
}

// model is what a store should hold: the latest record of each key.
type model map[mkey][]byte

func (m model) apply(kind uint8, key, rec []byte, del bool) {
	if del {
		delete(m, mkey{kind, string(key)})
		return
	}
	m[mkey{kind, string(key)}] = slices.Clone(rec)
}

// sameAs compares a snapshot with a model, in the snapshot's order, which
// must be sorted by kind, then key.
func sameAs(s *Snapshot, m model) error {
	recs := s.Records()
	if len(recs) != len(m) {
		return fmt.Errorf("%d records, want %d", len(recs), len(m))
	}
	for i, r := range recs {
		if i > 0 {
			p := recs[i-1]
			if p.Kind > r.Kind || p.Kind == r.Kind && bytes.Compare(p.Key, r.Key) >= 0 {
				return fmt.Errorf("records %d and %d out of order: (%d,%q) then (%d,%q)", i-1, i, p.Kind, p.Key, r.Kind, r.Key)
			}
		}
		want, ok := m[mkey{r.Kind, string(r.Key)}]
		if !ok {
			return fmt.Errorf("record (%d,%q) not in the model", r.Kind, r.Key)
		}
		if !bytes.Equal(r.Rec, want) {
			return fmt.Errorf("record (%d,%q): %d bytes %x..., want %d bytes %x...", r.Kind, r.Key, len(r.Rec), head(r.Rec), len(want), head(want))
		}
	}
	return nil
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

func mustOpen(t testing.TB, path string) *Snapshot {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// splitmix is a deterministic generator for the tests' operations.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// op is the i-th operation of a deterministic sequence over keys keys of
// three kinds: a delete one time in eight, else a Put of a record that
// says which operation wrote it (its first 8 bytes are i) and whose other
// bytes derive from i, so a reader can tell a complete record from any
// other bytes.
type op struct {
	kind uint8
	key  []byte
	rec  []byte
	del  bool
}

func opAt(i uint64, keys int, maxRec int) op {
	r := splitmix(i)
	k := int(r % uint64(keys))
	o := op{kind: uint8(k % 3), key: fmt.Appendf(nil, "ue-%d", k)}
	if r>>32%8 == 0 {
		o.del = true
		return o
	}
	n := 8 + int(r>>40%uint64(maxRec-8+1))
	o.rec = make([]byte, n)
	binary.LittleEndian.PutUint64(o.rec, i)
	for j := 8; j < n; j++ {
		o.rec[j] = byte(splitmix(i^uint64(j)<<32) >> 56)
	}
	return o
}

func (o op) do(w *Writer) error {
	if o.del {
		return w.Delete(o.kind, o.key)
	}
	return w.Put(o.kind, o.key, o.rec)
}

// modelAfter is the model after operations 0..n-1.
func modelAfter(n uint64, keys, maxRec int) model {
	m := model{}
	for i := range n {
		o := opAt(i, keys, maxRec)
		m.apply(o.kind, o.key, o.rec, o.del)
	}
	return m
}

// TestCRCSmall: crcSmall computes what hash/crc32 does.
func TestCRCSmall(t *testing.T) {
	b := []byte("123456789")
	if got := crcSmall(0, b); got != 0xe3069283 { // CRC-32C's check value (the CRC catalogue, CRC-32/ISCSI)
		t.Fatalf("crcSmall(%q) = %#08x, want 0xe3069283", b, got)
	}
	for i := range 64 {
		b := make([]byte, i)
		for j := range b {
			b[j] = byte(splitmix(uint64(i*64 + j)))
		}
		if got, want := crcSmall(0x1234, b), crc32.Update(0x1234, castagnoli, b); got != want {
			t.Fatalf("%d bytes: %#08x, want %#08x", i, got, want)
		}
	}
}
