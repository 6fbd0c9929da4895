package shmstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// closedStore writes a store that compacted and then appended, closes it
// and returns its file's bytes.
func closedStore(t testing.TB) (path string, file []byte) {
	return closedStoreOf(t, 2*MinSize, 230, 200) // halves of 8 KiB
}

// closedStoreOf is closedStore with a file of size bytes, ops operations
// and records up to maxRec bytes.
func closedStoreOf(t testing.TB, size int, ops uint64, maxRec int) (path string, file []byte) {
	t.Helper()
	w, path := newStore(t, size, 5)
	for i := range ops {
		if err := opAt(i, 12, maxRec).do(w); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.Stats(); st.Compactions == 0 || st.Used == st.LiveBytes {
		t.Fatalf("want a store compacted and appended to: %+v", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, file
}

// TestCorruptEveryByte flips a bit of every byte of a store file in turn.
// A flip in the header's fields or state word makes Open refuse the file;
// one in a committed entry is counted and ends the scan there, leaving the
// entries before it; one anywhere else changes nothing.
func TestCorruptEveryByte(t *testing.T) {
	path, orig := closedStore(t)
	clean := mustOpen(t, path)
	h, err := parseHeader(orig[:headerBytes], int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	halfAt := headerBytes + uint64(h.active)*h.half
	// The start of every committed entry, and what a scan stopped at each
	// start yields.
	var starts []uint64
	for off := uint64(0); off < h.end; {
		_, _, n, ok := parseEntry(orig[halfAt+off : halfAt+h.end])
		if !ok {
			t.Fatalf("clean store: bad entry at %d", off)
		}
		starts = append(starts, off)
		off += uint64(n)
	}
	if len(starts) < 10 {
		t.Fatalf("only %d entries", len(starts))
	}
	bad := filepath.Join(filepath.Dir(path), "bad")
	b := slices.Clone(orig)
	for p := range uint64(len(orig)) {
		b[p] ^= 1 << (p % 8)
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(bad)
		b[p] = orig[p]
		switch {
		case p < offHeaderCRC+4 || p >= offState && p < offState+8:
			if !errors.Is(err, ErrBadFile) {
				t.Fatalf("flip at %d (header): %v, want ErrBadFile", p, err)
			}
		case p >= halfAt && p < halfAt+h.end:
			if err != nil {
				t.Fatalf("flip at %d (entry): %v", p, err)
			}
			i, _ := slices.BinarySearch(starts, p-halfAt+1)
			start := starts[i-1]
			want := scan(orig[halfAt : halfAt+start])
			if s.Stats.Corrupted != 1 || s.Stats.Skipped != h.end-start || s.Stats.Entries != i-1 {
				t.Fatalf("flip at %d (entry %d at %d): stats %+v", p, i-1, start, s.Stats)
			}
			if !slices.EqualFunc(s.Records(), want.Records(), sameRecord) {
				t.Fatalf("flip at %d (entry %d): %d records, want the %d before it", p, i-1, s.Len(), want.Len())
			}
		default:
			if err != nil || s.Stats != clean.Stats || !slices.EqualFunc(s.Records(), clean.Records(), sameRecord) {
				t.Fatalf("flip at %d (unused): %v, stats %+v, want %+v", p, err, s.Stats, clean.Stats)
			}
		}
	}
}

func sameRecord(a, b Record) bool {
	return a.Kind == b.Kind && string(a.Key) == string(b.Key) && string(a.Rec) == string(b.Rec)
}

// TestTruncated: a file shorter or longer than its header says, or
// shorter than a header, is refused.
func TestTruncated(t *testing.T) {
	path, orig := closedStore(t)
	bad := filepath.Join(filepath.Dir(path), "bad")
	for _, n := range []int{0, 1, offState + 4, headerBytes - 1, headerBytes, headerBytes + 1, len(orig) - 1, len(orig) + 1} {
		b := orig[:min(n, len(orig))]
		if n > len(orig) {
			b = append(slices.Clone(orig), make([]byte, n-len(orig))...)
		}
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(bad); !errors.Is(err, ErrBadFile) {
			t.Fatalf("%d of %d bytes: %v, want ErrBadFile", n, len(orig), err)
		}
	}
	if _, err := Open(filepath.Join(filepath.Dir(path), "absent")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBadFile) {
		t.Fatalf("absent file: %v", err)
	}
}

// TestRefusedHeaders: another format version or a half size that does not
// match the file, each with a valid header CRC, are refused.
func TestRefusedHeaders(t *testing.T) {
	path, orig := closedStore(t)
	bad := filepath.Join(filepath.Dir(path), "bad")
	for name, edit := range map[string]func(h []byte){
		"version":   func(h []byte) { binary.LittleEndian.PutUint32(h[offVersion:], formatVersion+1) },
		"half size": func(h []byte) { binary.LittleEndian.PutUint64(h[offHalfSize:], 4096) },
		"epoch":     func(h []byte) { binary.LittleEndian.PutUint64(h[offEpoch:], 6) }, // the state word's check binds the epoch
	} {
		b := slices.Clone(orig)
		edit(b)
		binary.LittleEndian.PutUint32(b[offHeaderCRC:], crc32Sum(b[:offHeaderCRC]))
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(bad); !errors.Is(err, ErrBadFile) {
			t.Errorf("%s: %v, want ErrBadFile", name, err)
		}
	}
}

// FuzzLoad: Open never panics on any file, and what it returns holds
// together. With wrap, the input is a half's content inside a valid
// header that commits all of it, so that the fuzzer reaches the entries;
// without, it is the whole file. No seed is a whole valid file: the
// smallest is 12 KiB, on which Go's minimizer spends its whole minute
// (its cost grows with the square of the input), and a flipped bit in
// each byte of one is TestCorruptEveryByte's.
func FuzzLoad(f *testing.F) {
	path, file := closedStoreOf(f, MinSize, 150, 60)
	h, _ := parseHeader(file[:headerBytes], int64(len(file)))
	at := headerBytes + uint64(h.active)*h.half
	f.Add(file[at:at+h.end], true)
	f.Add(file[:offState+8], false)
	f.Add([]byte{}, true)
	f.Add([]byte{}, false)
	dir := filepath.Dir(path)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = wrapHalf(data)
		}
		p := filepath.Join(dir, "fuzz")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p)
		if err != nil {
			if !errors.Is(err, ErrBadFile) {
				t.Fatalf("error not ErrBadFile: %v", err)
			}
			if wrap {
				t.Fatalf("a wrapped half refused: %v", err)
			}
			return
		}
		st := s.Stats
		if st.Records != s.Len() || st.Records > st.Entries-st.Tombstones || st.Corrupted > 1 ||
			st.Skipped > st.Committed || (st.Corrupted == 0) != (st.Skipped == 0) {
			t.Fatalf("stats %+v with %d records", st, s.Len())
		}
		if err := sameAs(s, recordsModel(s)); err != nil {
			t.Fatal(err)
		}
	})
}

// wrapHalf puts data in half 0 of a store file with a valid header that
// commits all of it.
func wrapHalf(data []byte) []byte {
	half := (uint64(len(data)) + halfAlign) / halfAlign * halfAlign
	b := make([]byte, headerBytes+2*half)
	putHeader(b, half, 9)
	binary.LittleEndian.PutUint64(b[offState:], stateWord(0, uint64(len(data)), 9))
	copy(b[headerBytes:], data)
	return b
}

// recordsModel is a model of a snapshot's own records; sameAs then checks
// their order and that no key appears twice.
func recordsModel(s *Snapshot) model {
	m := model{}
	for _, r := range s.Records() {
		m[mkey{r.Kind, string(r.Key)}] = r.Rec
	}
	return m
}

func crc32Sum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
