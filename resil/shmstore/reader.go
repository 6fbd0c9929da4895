package shmstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
)

// LoadStats is what Open found in the active half.
type LoadStats struct {
	Entries    int    // entries read whose CRC matched (records and tombstones)
	Tombstones int    // of which tombstones
	Records    int    // latest live records returned (Snapshot.Len)
	Corrupted  int    // entries rejected (0 or 1: the first stops the scan)
	Skipped    uint64 // bytes below the committed end not read because of it
	Committed  uint64 // the committed end of the active half
}

// Record is one object's latest record. Key and Rec share the snapshot's
// buffer: read them, do not modify them.
type Record struct {
	Kind uint8
	Key  []byte
	Rec  []byte
}

// Snapshot is the content of a store file as Open found it.
type Snapshot struct {
	Epoch   uint64
	Stats   LoadStats
	records []Record // sorted by kind, then key
}

// Len is the number of records.
func (s *Snapshot) Len() int { return len(s.records) }

// Records returns the records sorted by kind, then key.
func (s *Snapshot) Records() []Record { return s.records }

// Each calls fn for every record, sorted by kind then key, and stops at
// the first error, which it returns.
func (s *Snapshot) Each(fn func(kind uint8, key, rec []byte) error) error {
	for _, r := range s.records {
		if err := fn(r.Kind, r.Key, r.Rec); err != nil {
			return err
		}
	}
	return nil
}

// Open reads the store file at path, written by a Writer that is gone, and
// returns the latest record of every key. A bad header is refused with an
// error wrapping ErrBadFile; a corrupted entry is counted in the
// snapshot's Stats and ends the scan (see the package comment).
func Open(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shmstore: open: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shmstore: open: %w", err)
	}
	hdr := make([]byte, headerBytes)
	if n, err := f.ReadAt(hdr, 0); n < len(hdr) {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: %s: %d bytes, shorter than the %d-byte header", ErrBadFile, path, st.Size(), headerBytes)
		}
		return nil, fmt.Errorf("shmstore: open %s: %w", path, err)
	}
	h, err := parseHeader(hdr, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	data := make([]byte, h.end)
	if n, err := f.ReadAt(data, int64(headerBytes+uint64(h.active)*h.half)); uint64(n) < h.end {
		return nil, fmt.Errorf("shmstore: open %s: read half %d: %w", path, h.active, err)
	}
	s := scan(data)
	s.Epoch = h.epoch
	return s, nil
}

type header struct {
	half, epoch, end uint64
	active           int
}

// parseHeader checks the header page of a file of fileSize bytes.
func parseHeader(hdr []byte, fileSize int64) (header, error) {
	var h header
	if string(hdr[offMagic:offMagic+len(magic)]) != magic {
		return h, fmt.Errorf("magic %q, want %q", hdr[offMagic:offMagic+len(magic)], magic)
	}
	if v := binary.LittleEndian.Uint32(hdr[offVersion:]); v != formatVersion {
		return h, fmt.Errorf("format version %d, this tern reads %d", v, formatVersion)
	}
	if got, want := binary.LittleEndian.Uint32(hdr[offHeaderCRC:]), crc32.Checksum(hdr[:offHeaderCRC], castagnoli); got != want {
		return h, fmt.Errorf("header CRC %#08x, computed %#08x", got, want)
	}
	if n := binary.LittleEndian.Uint32(hdr[offHdrBytes:]); n != headerBytes {
		return h, fmt.Errorf("header of %d bytes, want %d", n, headerBytes)
	}
	size := binary.LittleEndian.Uint64(hdr[offFileSize:])
	h.half = binary.LittleEndian.Uint64(hdr[offHalfSize:])
	h.epoch = binary.LittleEndian.Uint64(hdr[offEpoch:])
	if h.half == 0 || h.half > maxHalf || size != headerBytes+2*h.half {
		return h, fmt.Errorf("file size %d and half size %d do not match", size, h.half)
	}
	if uint64(fileSize) != size {
		return h, fmt.Errorf("file is %d bytes, its header says %d (truncated or extended)", fileSize, size)
	}
	w := binary.LittleEndian.Uint64(hdr[offState:])
	active, end, ok := parseState(w, h.epoch)
	if !ok {
		return h, fmt.Errorf("state word %#016x fails its check", w)
	}
	if end > h.half {
		return h, fmt.Errorf("committed end %d beyond the half's %d bytes", end, h.half)
	}
	h.active, h.end = active, end
	return h, nil
}

// scan reads the committed entries of a half and keeps the latest of each
// key. It stops at the first entry that fails its checks.
func scan(data []byte) *Snapshot {
	s := &Snapshot{Stats: LoadStats{Committed: uint64(len(data))}}
	latest := make(map[string]int) // kind byte + key -> index in recs
	var recs []Record
	var dead []bool // recs[i] was deleted later
	var key []byte
	off := 0
	for off < len(data) {
		r, tomb, n, ok := parseEntry(data[off:])
		if !ok {
			s.Stats.Corrupted++
			s.Stats.Skipped = uint64(len(data) - off)
			break
		}
		off += n
		s.Stats.Entries++
		key = append(append(key[:0], r.Kind), r.Key...)
		i, seen := latest[string(key)]
		switch {
		case tomb:
			s.Stats.Tombstones++
			if seen {
				dead[i] = true
				delete(latest, string(key))
			}
		case seen:
			recs[i] = r
		default:
			latest[string(key)] = len(recs)
			recs = append(recs, r)
			dead = append(dead, false)
		}
	}
	live := recs[:0]
	for i, r := range recs {
		if !dead[i] {
			live = append(live, r)
		}
	}
	slices.SortFunc(live, func(a, b Record) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		return bytes.Compare(a.Key, b.Key)
	})
	s.records = live
	s.Stats.Records = len(live)
	return s
}

// parseEntry decodes the entry at the start of b: its record, whether it
// is a tombstone and its size; ok is false for an entry that fails a check.
func parseEntry(b []byte) (r Record, tomb bool, n int, ok bool) {
	if len(b) < entryHeader {
		return r, false, 0, false
	}
	size := binary.LittleEndian.Uint32(b[0:4])
	keyLen := int(binary.LittleEndian.Uint16(b[10:12]))
	if uint64(size) > uint64(len(b)) || int(size) < entryHeader+keyLen {
		return r, false, 0, false
	}
	var hdr [entryHeader]byte
	copy(hdr[:], b)
	e := b[:size:size]
	key, rec := e[entryHeader:entryHeader+keyLen:entryHeader+keyLen], e[entryHeader+keyLen:]
	if entryCRC(&hdr, key, rec) != binary.LittleEndian.Uint32(b[4:8]) {
		return r, false, 0, false
	}
	switch flags := b[9]; {
	case flags == flagTombstone && len(rec) == 0:
		tomb = true
	case flags == 0:
	default:
		return r, false, 0, false // unknown flags, or a tombstone with a record
	}
	return Record{Kind: b[8], Key: key, Rec: rec}, tomb, int(size), true
}
