// Package store is the subscriber store behind the UDR: an embedded,
// file-backed map from SUPI to Subscriber.
//
// On disk it is one append-only log of JSON records, one per line, each
// prefixed with the CRC-32C of its JSON. Every mutation appends one line and
// fsyncs before it becomes visible, so an acknowledged write survives a crash.
// A crash in the middle of an append leaves a torn last line, which Open
// detects (no newline or bad CRC) and truncates. When the log has grown well
// beyond the live data, it is compacted: the live records are written to a
// temporary file in the same directory, fsynced, renamed over the log and the
// directory is fsynced; a crash at any point leaves either the old or the new
// log intact, and Open removes leftover temporary files.
package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Log operations.
const (
	opPut    = "put"
	opDelete = "del"
	opSQN    = "sqn"
)

// entry is one log line.
type entry struct {
	Op   string      `json:"op"`
	Sub  *Subscriber `json:"sub,omitempty"`  // put
	SUPI string      `json:"supi,omitempty"` // del, sqn
	SQN  uint64      `json:"sqn,omitempty"`  // sqn
}

// Options tunes a Store.
type Options struct {
	// NoSync skips fsync after each write. Only for benchmarks and tests
	// that measure something else: a crash may then lose acknowledged writes.
	NoSync bool
	// CompactMin is the number of log entries below which the log is never
	// compacted (default 1024).
	CompactMin int
}

// Store is a durable subscriber map, safe for concurrent use.
type Store struct {
	path string
	opts Options

	mu      sync.RWMutex
	subs    map[string]*Subscriber
	f       *os.File // the log, opened for appending
	entries int      // lines in the log
	broken  error    // set when a write's outcome is unknown; all later writes fail
	closed  bool
}

// Open opens the store at path, creating it (and its directory) on first use.
func Open(path string) (*Store, error) { return OpenOptions(path, Options{}) }

// OpenOptions is Open with options.
func OpenOptions(path string, opts Options) (*Store, error) {
	if opts.CompactMin <= 0 {
		opts.CompactMin = 1024
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := removeTemps(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{path: path, opts: opts, subs: make(map[string]*Subscriber), f: f}
	if err := s.load(); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	if s.needsCompaction() {
		if err := s.compact(); err != nil {
			s.f.Close()
			return nil, err
		}
	}
	return s, nil
}

// tempPrefix is the name prefix of compaction files for path.
func tempPrefix(path string) string { return filepath.Base(path) + ".tmp-" }

// removeTemps deletes compaction files left behind by a crash: the rename
// had not happened, so the log itself is authoritative.
func removeTemps(path string) error {
	dir := filepath.Dir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix(path)) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("store: removing leftover %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// load replays the log. A damaged final line is a torn append and is cut
// off; damage followed by valid lines is corruption and an error.
func (s *Store) load() error {
	data, err := io.ReadAll(s.f)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", s.path, err)
	}
	off := 0
	line := 0
	for off < len(data) {
		line++
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			return s.truncateTail(off, line, "no newline")
		}
		e, err := decodeLine(data[off : off+nl])
		if err != nil {
			if off+nl+1 == len(data) {
				return s.truncateTail(off, line, err.Error())
			}
			return fmt.Errorf("store: %s line %d: %w (the log is corrupt before its end; refusing to guess)", s.path, line, err)
		}
		if err := s.apply(e); err != nil {
			return fmt.Errorf("store: %s line %d: %w", s.path, line, err)
		}
		s.entries++
		off += nl + 1
	}
	return nil
}

func (s *Store) truncateTail(off, line int, why string) error {
	if err := s.f.Truncate(int64(off)); err != nil {
		return fmt.Errorf("store: cutting torn line %d of %s (%s): %w", line, s.path, why, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

func decodeLine(b []byte) (entry, error) {
	var e entry
	sum, body, ok := bytes.Cut(b, []byte{' '})
	if !ok || len(sum) != 8 {
		return e, errors.New("missing checksum")
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil {
		return e, fmt.Errorf("checksum: %w", err)
	}
	if crc32.Checksum(body, crcTable) != uint32(want) {
		return e, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("record: %w", err)
	}
	return e, nil
}

func encodeLine(buf *bytes.Buffer, e entry) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	fmt.Fprintf(buf, "%08x ", crc32.Checksum(body, crcTable))
	buf.Write(body)
	buf.WriteByte('\n')
	return nil
}

// apply checks e and changes the in-memory map. Writes were validated
// before they were logged; on load this guards against forged lines.
func (s *Store) apply(e entry) error {
	switch e.Op {
	case opPut:
		if e.Sub == nil {
			return errors.New("put without subscriber")
		}
		if err := e.Sub.Validate(); err != nil {
			return err
		}
		c := e.Sub.Clone()
		s.subs[c.SUPI] = &c
	case opDelete:
		delete(s.subs, e.SUPI)
	case opSQN:
		sub, ok := s.subs[e.SUPI]
		if !ok {
			return fmt.Errorf("sqn for unknown %s", e.SUPI)
		}
		if e.SQN > MaxSQN {
			return fmt.Errorf("sqn %d for %s exceeds 48 bits", e.SQN, e.SUPI)
		}
		sub.SQN = e.SQN
	default:
		return fmt.Errorf("unknown op %q", e.Op)
	}
	return nil
}

// write appends entries durably, then applies them. Caller holds s.mu.
func (s *Store) write(es ...entry) error {
	if s.closed {
		return errors.New("store: closed")
	}
	if s.broken != nil {
		return fmt.Errorf("store: unusable after an earlier failed write: %w", s.broken)
	}
	var buf bytes.Buffer
	for _, e := range es {
		if err := encodeLine(&buf, e); err != nil {
			return fmt.Errorf("store: encoding: %w", err)
		}
	}
	if _, err := s.f.Write(buf.Bytes()); err != nil {
		s.broken = err
		return fmt.Errorf("store: writing %s: %w", s.path, err)
	}
	if !s.opts.NoSync {
		if err := s.f.Sync(); err != nil {
			s.broken = err
			return fmt.Errorf("store: syncing %s: %w", s.path, err)
		}
	}
	for _, e := range es {
		if err := s.apply(e); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	s.entries += len(es)
	if s.needsCompaction() {
		// The write itself is durable; a failed compaction only leaves the
		// log longer, so report it but do not fail the caller.
		if err := s.compact(); err != nil {
			s.broken = err
		}
	}
	return nil
}

func (s *Store) needsCompaction() bool {
	return s.entries > s.opts.CompactMin && s.entries > 4*len(s.subs)
}

// compact rewrites the log with one put per subscriber. Caller holds s.mu.
func (s *Store) compact() error {
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, tempPrefix(s.path)+"*")
	if err != nil {
		return fmt.Errorf("store: compacting: %w", err)
	}
	cleanup := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("store: compacting: %w", err)
	}
	w := bufio.NewWriter(tmp)
	var buf bytes.Buffer
	for _, supi := range s.sortedSUPIs() {
		buf.Reset()
		if err := encodeLine(&buf, entry{Op: opPut, Sub: s.subs[supi]}); err != nil {
			return cleanup(err)
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return cleanup(err)
		}
	}
	if err := w.Flush(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return cleanup(err)
	}
	if err := syncDir(dir); err != nil {
		tmp.Close()
		return fmt.Errorf("store: compacting: %w", err)
	}
	// tmp is now the log; keep appending to it.
	s.f.Close()
	s.f = tmp
	s.entries = len(s.subs)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *Store) sortedSUPIs() []string {
	keys := make([]string, 0, len(s.subs))
	for k := range s.subs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Get returns a copy of the subscriber, or ErrNotFound.
func (s *Store) Get(supi string) (Subscriber, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub, ok := s.subs[supi]
	if !ok {
		return Subscriber{}, fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	return sub.Clone(), nil
}

// Put validates and stores sub, replacing any record with the same SUPI.
func (s *Store) Put(sub Subscriber) error {
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	c := sub.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(entry{Op: opPut, Sub: &c})
}

// PutAll stores subs with one sync. With overwrite false, existing SUPIs are
// left as they are (so a restart keeps their SQNs). It returns how many
// records were written.
func (s *Store) PutAll(subs []Subscriber, overwrite bool) (int, error) {
	es := make([]entry, 0, len(subs))
	for i := range subs {
		if err := subs[i].Validate(); err != nil {
			return 0, fmt.Errorf("store: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(subs))
	for i := range subs {
		if seen[subs[i].SUPI] {
			return 0, fmt.Errorf("store: %s given twice", subs[i].SUPI)
		}
		seen[subs[i].SUPI] = true
		if _, ok := s.subs[subs[i].SUPI]; ok && !overwrite {
			continue
		}
		c := subs[i].Clone()
		es = append(es, entry{Op: opPut, Sub: &c})
	}
	if len(es) == 0 {
		return 0, nil
	}
	if err := s.write(es...); err != nil {
		return 0, err
	}
	return len(es), nil
}

// Delete removes the subscriber, or returns ErrNotFound.
func (s *Store) Delete(supi string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[supi]; !ok {
		return fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	return s.write(entry{Op: opDelete, SUPI: supi})
}

// List returns copies of all subscribers, sorted by SUPI.
func (s *Store) List() []Subscriber {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Subscriber, 0, len(s.subs))
	for _, supi := range s.sortedSUPIs() {
		out = append(out, s.subs[supi].Clone())
	}
	return out
}

// Len returns the number of subscribers.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.subs)
}

// IncrementSQN atomically adds one to the subscriber's SQN (wrapping at 48
// bits) and returns the new value, durably stored before it is returned.
func (s *Store) IncrementSQN(supi string) (uint64, error) {
	return s.UpdateSQN(supi, func(cur uint64) (uint64, error) { return (cur + 1) & MaxSQN, nil })
}

// UpdateSQN atomically replaces the subscriber's SQN with next(current) and
// returns the new value, durably stored before it is returned. next runs
// under the store's lock and must be quick; an error from it aborts the update.
func (s *Store) UpdateSQN(supi string, next func(cur uint64) (uint64, error)) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[supi]
	if !ok {
		return 0, fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	n, err := next(sub.SQN)
	if err != nil {
		return 0, err
	}
	if n > MaxSQN {
		return 0, fmt.Errorf("store: %s: sqn %d exceeds 48 bits", supi, n)
	}
	if err := s.write(entry{Op: opSQN, SUPI: supi, SQN: n}); err != nil {
		return 0, err
	}
	return n, nil
}

// Close releases the log file. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
