package shmstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Options tunes Create.
type Options struct {
	// Epoch is written in the header and bound into the state word: the
	// caller's generation (fencing) number, which a standby can compare
	// with what it expects.
	Epoch uint64
}

// Stats is what a Writer has done, for metrics.
type Stats struct {
	Puts           uint64 // Put calls that stored an entry
	Deletes        uint64 // Delete calls that stored a tombstone (or dropped the key)
	Bytes          uint64 // entry bytes appended by Put and Delete (compaction copies not included)
	Compactions    uint64 // times the live entries moved to the other half
	CompactedBytes uint64 // bytes those compactions copied
	Full           uint64 // Puts refused with ErrFull
	LiveKeys       int    // keys with a record
	LiveBytes      uint64 // their latest entries' bytes
	Used           uint64 // bytes used in the active half (live, superseded, tombstones)
	Capacity       uint64 // bytes in a half: the most live data the store can hold
}

// slot is where the latest entry of a live key lies in the active half.
type slot struct {
	off  uint64
	size uint32
	used bool
}

// Writer is the primary's side of a store. Its methods are safe for
// concurrent use.
type Writer struct {
	path  string
	epoch uint64
	half  uint64    // bytes in a half
	mem   []byte    // the whole mapping
	state *uint64   // the state word in the mapping
	base  [2]uint64 // offset of each half in mem

	mu      sync.Mutex
	closed  bool
	active  int
	end     uint64           // committed end of the active half
	index   map[string]int32 // kind byte + key -> slot
	slots   []slot
	free    []int32 // unused slots
	scratch []byte  // kind byte + key of the call under mu
	live    uint64  // sum of live slots' sizes
	stats   Stats

	// testHookCompact, when set, runs after each entry a compaction
	// copies (done false) and once the entry that compacted is in place,
	// before it is published (done true): the crash tests kill a process
	// there.
	testHookCompact func(copied int, done bool)
}

// Create creates the store file at path with size bytes (rounded down to
// the header and two halves of a multiple of 4 KiB), replacing any file
// there, and maps it. The caller removes the file when it is done with it.
func Create(path string, size int, opts Options) (*Writer, error) {
	if size < MinSize {
		return nil, fmt.Errorf("shmstore: create %s: size %d below the minimum %d", path, size, MinSize)
	}
	half := uint64(size-headerBytes) / 2 / halfAlign * halfAlign
	if half > maxHalf {
		return nil, fmt.Errorf("shmstore: create %s: size %d above the maximum", path, size)
	}
	total := headerBytes + 2*half
	if total > math.MaxInt {
		return nil, fmt.Errorf("shmstore: create %s: size %d does not fit in memory", path, size)
	}
	// Build the file under a temporary name and rename it into place: a
	// previous writer still alive keeps its own inode and cannot reach
	// this one.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.new")
	if err != nil {
		return nil, fmt.Errorf("shmstore: create %s: %w", path, err)
	}
	tmp := f.Name()
	w, err := create(f, path, half, total, opts)
	if err == nil {
		err = os.Rename(tmp, path)
		if err != nil {
			err = fmt.Errorf("shmstore: create %s: %w", path, err)
			unmap(w.mem)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("shmstore: create %s: %w", path, cerr)
		unmap(w.mem)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return w, nil
}

func create(f *os.File, path string, half, total uint64, opts Options) (*Writer, error) {
	if err := f.Truncate(int64(total)); err != nil {
		return nil, fmt.Errorf("shmstore: create %s: size %d: %w", path, total, err)
	}
	// A truncated file is sparse: on a tmpfs without room for it a later
	// store into the mapping would be a SIGBUS, not an error. Taking the
	// pages now makes "no room" Create's error.
	if err := reserve(f, int64(total)); err != nil {
		return nil, fmt.Errorf("shmstore: create %s: reserving %d bytes: %w", path, total, err)
	}
	mem, err := mapFile(f, int(total))
	if err != nil {
		return nil, fmt.Errorf("shmstore: create %s: %w", path, err)
	}
	putHeader(mem[:headerBytes], half, opts.Epoch)
	w := &Writer{
		path:  path,
		epoch: opts.Epoch,
		half:  half,
		mem:   mem,
		state: (*uint64)(unsafe.Pointer(&mem[offState])),
		base:  [2]uint64{headerBytes, headerBytes + half},
		index: make(map[string]int32),
	}
	atomic.StoreUint64(w.state, stateWord(0, 0, opts.Epoch))
	return w, nil
}

// Path is the file the writer created.
func (w *Writer) Path() string { return w.path }

// Epoch is the epoch in the file's header.
func (w *Writer) Epoch() uint64 { return w.epoch }

// Put stores rec as the latest record of (kind, key). When it returns nil
// the record is in the shared mapping: a reader opening the file after
// this process died sees it (or a later one). key and rec are copied.
func (w *Writer) Put(kind uint8, key, rec []byte) error {
	return w.append(kind, 0, key, rec)
}

// Delete stores a tombstone for (kind, key): a reader no longer sees a
// record for it. Deleting a key that has no record does nothing.
func (w *Writer) Delete(kind uint8, key []byte) error {
	return w.append(kind, flagTombstone, key, nil)
}

func (w *Writer) append(kind, flags uint8, key, rec []byte) error {
	if len(key) > MaxKey {
		return fmt.Errorf("%w: key of %d bytes (at most %d)", ErrTooLarge, len(key), MaxKey)
	}
	size := uint64(entryHeader + len(key) + len(rec))
	if size > math.MaxUint32 {
		return fmt.Errorf("%w: entry of %d bytes", ErrTooLarge, size)
	}
	var hdr [entryHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(size))
	hdr[8], hdr[9] = kind, flags
	binary.LittleEndian.PutUint16(hdr[10:12], uint16(len(key)))
	binary.LittleEndian.PutUint32(hdr[4:8], entryCRC(&hdr, key, rec))
	tomb := flags&flagTombstone != 0

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.scratch = append(append(w.scratch[:0], kind), key...)
	si, exists := w.index[string(w.scratch)]
	if tomb && !exists {
		return nil // nothing in the active half to hide
	}
	var prev uint64
	compacted := false
	if exists {
		prev = uint64(w.slots[si].size)
	}
	if w.end+size > w.half {
		// No room: move the live entries, less the one this call
		// replaces, to the other half, with this entry after them.
		need := w.live - prev
		if !tomb {
			need += size
		}
		if need > w.half {
			w.stats.Full++
			return fmt.Errorf("%w: %d live bytes (%d keys) and an entry of %d do not fit in a half of %d",
				ErrFull, w.live-prev, len(w.index), size, w.half)
		}
		skip := int32(-1)
		if exists {
			skip = si
		}
		w.compact(skip)
		compacted = true
		if tomb {
			// The other half never held the key: no tombstone needed.
			w.dropKey(si, prev)
			w.stats.Deletes++
			w.publishCompacted()
			return nil
		}
	}
	off := w.end
	dst := w.mem[w.base[w.active]+off:]
	copy(dst, hdr[:])
	copy(dst[entryHeader:], key)
	copy(dst[entryHeader+len(key):], rec)
	w.end += size
	w.stats.Bytes += size
	if tomb {
		w.dropKey(si, prev)
		w.stats.Deletes++
	} else {
		if !exists {
			si = w.newSlot()
			w.index[string(w.scratch)] = si
		}
		w.slots[si] = slot{off: off, size: uint32(size), used: true}
		w.live += size - prev
		w.stats.Puts++
	}
	if compacted {
		w.publishCompacted()
	} else {
		w.publish()
	}
	return nil
}

// publishCompacted publishes a compaction and the entry that made it.
func (w *Writer) publishCompacted() {
	if w.testHookCompact != nil {
		w.testHookCompact(0, true)
	}
	w.publish()
}

// publish makes everything below w.end in the active half visible to a
// reader: one atomic store, after the bytes.
func (w *Writer) publish() {
	atomic.StoreUint64(w.state, stateWord(w.active, w.end, w.epoch))
}

// compact copies every live entry but skip's into the inactive half and
// makes it the writer's active half. It publishes nothing: until the
// caller's publish, a reader still reads the old half, which is complete.
func (w *Writer) compact(skip int32) {
	next := 1 - w.active
	src, dst := w.mem[w.base[w.active]:][:w.half], w.mem[w.base[next]:][:w.half]
	var pos uint64
	copied := 0
	for i := range w.slots {
		s := &w.slots[i]
		if !s.used || int32(i) == skip {
			continue
		}
		n := uint64(s.size)
		copy(dst[pos:pos+n], src[s.off:s.off+n])
		s.off = pos
		pos += n
		copied++
		if w.testHookCompact != nil {
			w.testHookCompact(copied, false)
		}
	}
	w.active, w.end = next, pos
	w.stats.Compactions++
	w.stats.CompactedBytes += pos
}

func (w *Writer) newSlot() int32 {
	if n := len(w.free); n > 0 {
		si := w.free[n-1]
		w.free = w.free[:n-1]
		return si
	}
	w.slots = append(w.slots, slot{})
	return int32(len(w.slots) - 1)
}

// dropKey forgets the key in w.scratch, whose slot is si of size bytes.
func (w *Writer) dropKey(si int32, size uint64) {
	delete(w.index, string(w.scratch))
	w.slots[si] = slot{}
	w.free = append(w.free, si)
	w.live -= size
}

// Stats returns the writer's counters and occupancy.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.LiveKeys = len(w.index)
	s.LiveBytes = w.live
	s.Used = w.end
	s.Capacity = w.half
	return s
}

// Close unmaps the file; it stays, with every record stored, for a reader.
// Put and Delete return ErrClosed afterwards.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.state = nil
	err := unmap(w.mem)
	w.mem = nil
	if err != nil {
		return fmt.Errorf("shmstore: close %s: %w", w.path, err)
	}
	return nil
}
