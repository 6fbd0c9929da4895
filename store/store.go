// Package store is the subscriber store behind the UDR: an embedded,
// file-backed map from SUPI to Subscriber.
//
// On disk it is one append-only log of JSON records, one per line, each
// prefixed with the CRC-32C of its JSON. Every mutation appends one line and
// is acknowledged only once the log is fsynced, so an acknowledged write
// survives a crash. Concurrent writers share writes and fsyncs (group
// commit): each queues its lines in memory under the store's lock, then one
// of them writes and fsyncs all lines queued so far while the others wait,
// so N concurrent writers cost about one fsync, not N, and no lock that
// readers or SQN allocations need is held across I/O. A mutation is visible
// to readers from when it is queued, up to one fsync before it is
// acknowledged; what depends on it for safety (an SQN reservation logged
// after it) is acknowledged only after the same fsync or a later one.
//
// A crash in the middle of an append leaves a torn last line, which Open
// detects (no newline or bad CRC) and truncates. When the log has grown well
// beyond the live data, it is compacted: the live records are written to a
// temporary file in the same directory, fsynced, renamed over the log and the
// directory is fsynced; a crash at any point leaves either the old or the new
// log intact, and Open removes leftover temporary files.
//
// # SQN reservations
//
// SQN_HE changes on every authentication, so it is not logged on every
// change. The store keeps each subscriber's SQN_HE in memory and logs only a
// reservation: a value that no SQN issued so far exceeds. UpdateSQN hands out
// SQNs up to the reservation from memory and, when the next SQN would pass
// it, first logs (and fsyncs) a new one some headroom further on. After a
// crash, each subscriber's SQN_HE restarts at its logged reservation, so no
// SQN is issued twice; the USIM accepts the jump because it accepts any SQN
// above the highest it has seen within a large Δ (TS 33.102 Annex C.2.1,
// C.3). A clean Close logs the exact SQN_HE, so a restart after a clean
// shutdown resumes without a jump.
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
	"sync/atomic"
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
	Sub  *Subscriber `json:"sub,omitempty"`  // put; Sub.SQN is also its reservation
	SUPI string      `json:"supi,omitempty"` // del, sqn
	SQN  uint64      `json:"sqn,omitempty"`  // sqn: the subscriber's new reservation
}

// Options tunes a Store.
type Options struct {
	// NoSync skips fsync after each write. Only for benchmarks and tests
	// that measure something else: a crash may then lose acknowledged writes
	// and, with them, SQN reservations.
	NoSync bool
	// CompactMin is the number of log entries below which the log is never
	// compacted (default 1024).
	CompactMin int
}

// record is one subscriber in memory.
type record struct {
	sub Subscriber // sub.SQN is the live SQN_HE: the last SQN issued
	// reserved is the subscriber's reservation: no SQN issued exceeds it.
	// It is in the log from write number resSeq on, durable once
	// Store.synced reaches resSeq.
	reserved uint64
	resSeq   uint64
}

// Store is a durable subscriber map, safe for concurrent use.
type Store struct {
	path string
	opts Options

	// Group commit. flushing is held (like a lock) by the writer that
	// writes and fsyncs for a group, and by compaction and Close; flushDone
	// wakes all waiters when it is released. Lock order: flushing, then mu.
	flushMu   sync.Mutex // guards flushing
	flushDone sync.Cond  // L is &flushMu
	flushing  bool
	// synced is the number of the last write known to be durable.
	synced atomic.Uint64
	// syncedSize is the log size that synced covers (while flushing is held).
	syncedSize int64
	syncs      atomic.Uint64 // fsyncs of the log, compaction included

	mu      sync.RWMutex
	subs    map[string]*record
	f       *os.File // the log, opened for appending
	pending []byte   // lines appended but not yet written to f
	size    int64    // bytes in the log, pending included
	entries int      // lines in the log, pending included
	written uint64   // number of the last write (one per append call)
	broken  error    // set when a write's outcome is unknown; all later writes fail
	closed  bool

	// beforeSync, if set, runs in the fsyncing writer before it reads how
	// far the log has been written (tests use it to make groups).
	beforeSync func()
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
	s := &Store{path: path, opts: opts, subs: make(map[string]*record), f: f}
	s.flushDone.L = &s.flushMu
	if err := s.load(); err != nil {
		f.Close()
		return nil, err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	s.size, s.syncedSize = end, end
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
// off; damage followed by valid lines is corruption and an error. Each
// subscriber's SQN_HE starts at its last logged reservation.
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
		if err := s.apply(e, 0, true); err != nil {
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

// apply checks e, logged by write number seq, and changes the in-memory
// map. Writes were validated before they were logged; on load (replay) this
// guards against forged lines. A reservation moves the live SQN_HE only on
// replay: in a running store SQN_HE is ahead of the log.
func (s *Store) apply(e entry, seq uint64, replay bool) error {
	switch e.Op {
	case opPut:
		if e.Sub == nil {
			return errors.New("put without subscriber")
		}
		if err := e.Sub.Validate(); err != nil {
			return err
		}
		s.subs[e.Sub.SUPI] = &record{sub: e.Sub.Clone(), reserved: e.Sub.SQN, resSeq: seq}
	case opDelete:
		delete(s.subs, e.SUPI)
	case opSQN:
		rec, ok := s.subs[e.SUPI]
		if !ok {
			return fmt.Errorf("sqn for unknown %s", e.SUPI)
		}
		if e.SQN > MaxSQN {
			return fmt.Errorf("sqn %d for %s exceeds 48 bits", e.SQN, e.SUPI)
		}
		rec.reserved, rec.resSeq = e.SQN, seq
		if replay {
			rec.sub.SQN = e.SQN
		}
	default:
		return fmt.Errorf("unknown op %q", e.Op)
	}
	return nil
}

// usable reports why the store takes no writes. Caller holds s.mu.
func (s *Store) usable() error {
	if s.closed {
		return errors.New("store: closed")
	}
	if s.broken != nil {
		return fmt.Errorf("store: unusable after an earlier failed write: %w", s.broken)
	}
	return nil
}

// appendEntries queues es for the log and applies them, returning the
// write's number for commit. Caller holds s.mu for writing.
func (s *Store) appendEntries(es ...entry) (uint64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	for _, e := range es {
		if err := encodeLine(&buf, e); err != nil {
			return 0, fmt.Errorf("store: encoding: %w", err)
		}
	}
	s.pending = append(s.pending, buf.Bytes()...)
	s.size += int64(buf.Len())
	s.written++
	for _, e := range es {
		if err := s.apply(e, s.written, false); err != nil {
			return 0, fmt.Errorf("store: %w", err)
		}
	}
	s.entries += len(es)
	return s.written, nil
}

// lockFlush waits until no one flushes, then holds the flush.
func (s *Store) lockFlush() {
	s.flushMu.Lock()
	for s.flushing {
		s.flushDone.Wait()
	}
	s.flushing = true
	s.flushMu.Unlock()
}

// unlockFlush releases the flush and wakes every waiter: those whose writes
// it covered return at once, and one of the others leads the next flush.
func (s *Store) unlockFlush() {
	s.flushMu.Lock()
	s.flushing = false
	s.flushDone.Broadcast()
	s.flushMu.Unlock()
}

// commit returns once write number seq is durable (group commit): a waiter
// that finds no flush in progress writes and fsyncs everything queued so
// far, and waiters whose writes that covered return without I/O of their
// own. Caller holds no lock.
func (s *Store) commit(seq uint64) error {
	s.flushMu.Lock()
	for s.flushing && s.synced.Load() < seq {
		s.flushDone.Wait()
	}
	if s.synced.Load() >= seq {
		s.flushMu.Unlock()
		return nil
	}
	s.flushing = true
	s.flushMu.Unlock()
	defer s.unlockFlush()
	if s.beforeSync != nil {
		s.beforeSync()
	}
	s.mu.Lock()
	err := s.usable()
	target, size, f, buf := s.written, s.size, s.f, s.pending
	s.pending = nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.flush(f, buf); err != nil {
		s.mu.Lock()
		s.broken = err
		s.mu.Unlock()
		return err
	}
	s.synced.Store(target)
	s.syncedSize = size
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() == nil && s.needsCompaction() {
		// The write itself is durable; a failed compaction only leaves the
		// log longer, so report it but do not fail the caller.
		if err := s.compact(); err != nil {
			s.broken = err
		}
	}
	return nil
}

// flush writes buf to f and fsyncs f. Caller holds the flush, so writes
// reach the file in the order they were queued.
func (s *Store) flush(f *os.File, buf []byte) error {
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("store: writing %s: %w", s.path, err)
	}
	if s.opts.NoSync {
		return nil
	}
	s.syncs.Add(1)
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", s.path, err)
	}
	return nil
}

// write appends es and returns once they are durable.
func (s *Store) write(es ...entry) error {
	s.mu.Lock()
	seq, err := s.appendEntries(es...)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.commit(seq)
}

func (s *Store) needsCompaction() bool {
	return s.entries > s.opts.CompactMin && s.entries > 4*len(s.subs)
}

// compact rewrites the log with one put per subscriber, carrying its
// reservation (not its live SQN_HE) as SQN. The new log is durable and holds
// every write so far, queued ones included (their effect is in memory), so
// the queue is dropped. Caller holds the flush and s.mu (or is Open).
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
	var size int64
	for _, supi := range s.sortedSUPIs() {
		rec := s.subs[supi]
		sub := rec.sub
		sub.SQN = rec.reserved
		buf.Reset()
		if err := encodeLine(&buf, entry{Op: opPut, Sub: &sub}); err != nil {
			return cleanup(err)
		}
		size += int64(buf.Len())
		if _, err := w.Write(buf.Bytes()); err != nil {
			return cleanup(err)
		}
	}
	if err := w.Flush(); err != nil {
		return cleanup(err)
	}
	s.syncs.Add(1)
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
	s.pending = nil
	s.size, s.syncedSize = size, size
	s.synced.Store(s.written)
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

// Get returns a copy of the subscriber, or ErrNotFound. Its SQN is the live
// SQN_HE, the last SQN issued.
func (s *Store) Get(supi string) (Subscriber, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, ok := s.subs[supi]
	if !ok {
		return Subscriber{}, fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	return rec.sub.Clone(), nil
}

// Put validates and stores sub, replacing any record with the same SUPI.
// sub.SQN becomes SQN_HE and its reservation.
func (s *Store) Put(sub Subscriber) error {
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	c := sub.Clone()
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
	seen := make(map[string]bool, len(subs))
	for i := range subs {
		if seen[subs[i].SUPI] {
			s.mu.Unlock()
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
		s.mu.Unlock()
		return 0, nil
	}
	seq, err := s.appendEntries(es...)
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := s.commit(seq); err != nil {
		return 0, err
	}
	return len(es), nil
}

// Delete removes the subscriber, or returns ErrNotFound.
func (s *Store) Delete(supi string) error {
	s.mu.Lock()
	if _, ok := s.subs[supi]; !ok {
		s.mu.Unlock()
		return fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	seq, err := s.appendEntries(entry{Op: opDelete, SUPI: supi})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.commit(seq)
}

// List returns copies of all subscribers, sorted by SUPI. Their SQNs are
// the live SQN_HE values. In a store just opened (as by `tern subscriber
// list`), that is the logged value: the exact SQN_HE after a clean Close,
// or after a crash the reservation, from which SQN_HE resumes.
func (s *Store) List() []Subscriber {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Subscriber, 0, len(s.subs))
	for _, supi := range s.sortedSUPIs() {
		out = append(out, s.subs[supi].sub.Clone())
	}
	return out
}

// Len returns the number of subscribers.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.subs)
}

// Syncs returns how many times the log has been fsynced since Open
// (compactions included, Open's own repairs not).
func (s *Store) Syncs() uint64 { return s.syncs.Load() }

// IncrementSQN atomically adds one to the subscriber's SQN (wrapping at 48
// bits) and returns the new value, logged exactly (no headroom) and durable
// before it is returned.
func (s *Store) IncrementSQN(supi string) (uint64, error) {
	return s.UpdateSQN(supi, 0, func(cur uint64) (uint64, error) { return (cur + 1) & MaxSQN, nil })
}

// UpdateSQN atomically replaces the subscriber's SQN_HE with next(current)
// and returns the new value, which is below a durable reservation before it
// is returned, so it is never issued again after a crash. When the new
// value passes the reservation, or goes below SQN_HE (a 48-bit wrap or a
// deliberate reset), the new reservation, value+headroom (at most MaxSQN),
// is logged and fsynced first; otherwise nothing is written. headroom 0
// logs every value. next runs under the store's lock and must be quick; an
// error from it aborts the update.
func (s *Store) UpdateSQN(supi string, headroom uint64, next func(cur uint64) (uint64, error)) (uint64, error) {
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	rec, ok := s.subs[supi]
	if !ok {
		s.mu.Unlock()
		return 0, fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	cur := rec.sub.SQN
	n, err := next(cur)
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	if n > MaxSQN {
		s.mu.Unlock()
		return 0, fmt.Errorf("store: %s: sqn %d exceeds 48 bits", supi, n)
	}
	// After a crash SQN_HE resumes at the logged reservation, so a value
	// below SQN_HE (a wrap) needs a lower one logged, or the values between
	// it and the old reservation would be issued twice.
	if n > rec.reserved || n < cur {
		res := n + min(headroom, MaxSQN-n)
		if _, err := s.appendEntries(entry{Op: opSQN, SUPI: supi, SQN: res}); err != nil {
			s.mu.Unlock()
			return 0, err
		}
	}
	rec.sub.SQN = n
	need := rec.resSeq // the write that logged the reservation covering n
	s.mu.Unlock()
	if need > s.synced.Load() {
		if err := s.commit(need); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// ReserveSQNs makes sure every subscriber has a durable reservation at least
// headroom/2 above its SQN_HE, logging the missing ones in one write and one
// fsync. Called when the UDR starts, it keeps the first authentication of
// each subscriber off the disk: otherwise a core that has just provisioned
// 10,000 subscribers would pay one fsync per first registration.
func (s *Store) ReserveSQNs(headroom uint64) error {
	if headroom == 0 {
		return nil
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	var es []entry
	for _, supi := range s.sortedSUPIs() {
		rec := s.subs[supi]
		if rec.reserved-rec.sub.SQN < headroom/2 && rec.sub.SQN < MaxSQN {
			es = append(es, entry{Op: opSQN, SUPI: supi, SQN: rec.sub.SQN + min(headroom, MaxSQN-rec.sub.SQN)})
		}
	}
	if len(es) == 0 {
		s.mu.Unlock()
		return nil
	}
	seq, err := s.appendEntries(es...)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.commit(seq)
}

// Close logs each subscriber's exact SQN_HE where it is below its
// reservation (so a restart resumes without a jump), syncs and releases the
// log. Later calls fail.
func (s *Store) Close() error {
	s.lockFlush()
	defer s.unlockFlush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var errs []error
	if s.usable() == nil {
		var es []entry
		for _, supi := range s.sortedSUPIs() {
			if rec := s.subs[supi]; rec.sub.SQN < rec.reserved {
				es = append(es, entry{Op: opSQN, SUPI: supi, SQN: rec.sub.SQN})
			}
		}
		if len(es) > 0 {
			if _, err := s.appendEntries(es...); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 && s.synced.Load() < s.written {
			if err := s.flush(s.f, s.pending); err != nil {
				errs = append(errs, err)
			}
			s.pending = nil
		}
		if len(errs) == 0 {
			// Writers still waiting in commit find their writes durable.
			s.synced.Store(s.written)
			s.syncedSize = s.size
		}
	}
	s.closed = true
	if err := s.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store: %w", err))
	}
	return errors.Join(errs...)
}
