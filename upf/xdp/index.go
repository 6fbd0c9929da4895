package xdp

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
)

// sessionIndex is one of the programs' session indexes (bpf/upf.c:
// teid_index, ue_index) together with the hash map behind it (teids,
// ues): where a key's rules are, and how they change without a program
// ever reading an entry half written.
//
// A key whose rules fit an index entry (indexEntryOf: the common
// session) goes to the entry at place key & mask if that place is free;
// any other key goes to the hash map. The programs look at the place
// first and take the hash map when the entry there is not the key's.
// Entries are written through a mapping of the array, under these rules,
// which make an entry behave as RCU would:
//
//   - A free place (key 0, and no program can still be reading what it
//     held) is written whole, key 0, then its key is stored, atomically
//     and last: a program that reads the key reads the rest as written.
//   - A published entry is never written. A change of the key's rules
//     goes to the hash map (an update there is atomic) and then the
//     entry's key is stored 0: runs that read the key before see the old
//     rules whole, runs after see the new ones in the hash map. A removal
//     stores key 0 (and deletes any hash map entry).
//   - A place whose key was stored 0 is retired: it is written again only
//     after waitPrograms, in the background (startRetiring), which then
//     moves a key waiting for the place in from the hash map: a changed
//     session is back in the index a grace period after the change.
//
// The methods are called with FastPath.mu held.
type sessionIndex struct {
	name    string
	b       []byte          // the mapping
	entries []upfIndexEntry // over b
	mask    uint32
	hash    *ebpf.Map
	// hashed: keys in the hash map.
	hashed map[uint32]struct{}
	// retired: places whose key was stored 0 since the last grace period
	// began (in order, each once); isRetired says the same per place,
	// and is cleared only when the grace period is over.
	retired   []uint32
	isRetired []bool
	// waiting: for a place that is not free, the entry of a key in the
	// hash map whose rules fit the index and belong there once it is.
	waiting map[uint32]upfIndexEntry
	live    int // published entries
}

const indexEntrySize = int(unsafe.Sizeof(upfIndexEntry{}))

// IndexPlaces is the places of the session index for up to n sessions
// (Config.MaxSessions): a power of two, so that a key's place is a mask
// away, and one page at least. UPF-C spreads the TEIDs it allocates over
// as many (upfc.Config.TEIDPlaces).
func IndexPlaces(n int) uint32 {
	return max(uint32(1)<<bits.Len32(uint32(max(n, 1)-1)), 4096/uint32(indexEntrySize))
}

func mapSessionIndex(name string, m, hash *ebpf.Map, size uint32) (*sessionIndex, error) {
	b, err := mapArray(name, m, size, indexEntrySize)
	if err != nil {
		return nil, err
	}
	return &sessionIndex{
		name:      name,
		b:         b,
		entries:   unsafe.Slice((*upfIndexEntry)(unsafe.Pointer(&b[0])), size),
		mask:      size - 1,
		hash:      hash,
		hashed:    make(map[uint32]struct{}),
		isRetired: make([]bool, size),
		waiting:   make(map[uint32]upfIndexEntry),
	}, nil
}

// indexEntryOf is e as an index entry for key, if it fits one: one rule,
// leading to the first PDR, that looks at no more than the UE address and
// the QFI (what compileRule makes of a PDI without SDF filters).
func indexEntryOf(key uint32, e *upfSess) (upfIndexEntry, bool) {
	r := &e.Rules[0]
	if e.Nrules != 1 || e.Sdf != 0 || r.Pdr != 0 ||
		r.SrcMask != 0 || r.DstMask != 0 || r.TosMask != 0 || r.Flags&^rfQFI != 0 ||
		r.SportLo != 0 || r.SportHi != 0xffff || r.DportLo != 0 || r.DportHi != 0xffff {
		return upfIndexEntry{}, false
	}
	return upfIndexEntry{Key: key, Ue: r.Ue, UeMask: r.UeMask, Flags: r.Flags, Qfi: r.Qfi, Pdr: e.Pdr0}, true
}

// put makes e the rules of key, whose place is at (the key in host
// order, masked here).
func (x *sessionIndex) put(key, at uint32, e *upfSess) error {
	i := at & x.mask
	ie, fits := indexEntryOf(key, e)
	cur := &x.entries[i]
	if fits && atomic.LoadUint32(&cur.Key) == 0 && !x.isRetired[i] {
		// A free place has no waiter: release placed it.
		x.publish(i, ie)
		return x.unhash(key)
	}
	if err := x.hash.Update(key, e, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	x.hashed[key] = struct{}{}
	if atomic.LoadUint32(&cur.Key) == key {
		x.unpublish(i)
	}
	switch w, ok := x.waiting[i]; {
	case fits && (!ok || w.Key == key):
		x.waiting[i] = ie // first come, first placed
	case !fits && ok && w.Key == key:
		delete(x.waiting, i)
	}
	return nil
}

// remove takes key's rules away, wherever they are.
func (x *sessionIndex) remove(key, at uint32) {
	i := at & x.mask
	if atomic.LoadUint32(&x.entries[i].Key) == key {
		x.unpublish(i)
	}
	if w, ok := x.waiting[i]; ok && w.Key == key {
		delete(x.waiting, i)
	}
	x.unhash(key)
}

func (x *sessionIndex) unhash(key uint32) error {
	if _, ok := x.hashed[key]; !ok {
		return nil
	}
	if err := x.hash.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("%s: %w", x.name, err) // still hashed: a later remove tries again
	}
	delete(x.hashed, key)
	return nil
}

// publish writes the free place i and then stores its key.
func (x *sessionIndex) publish(i uint32, e upfIndexEntry) {
	key := e.Key
	e.Key = 0
	x.entries[i] = e
	atomic.StoreUint32(&x.entries[i].Key, key)
	x.live++
}

func (x *sessionIndex) unpublish(i uint32) {
	atomic.StoreUint32(&x.entries[i].Key, 0)
	x.live--
	x.isRetired[i] = true
	x.retired = append(x.retired, i)
}

// takeRetired hands over the places retired so far; release them after a
// grace period.
func (x *sessionIndex) takeRetired() []uint32 {
	r := x.retired
	x.retired = nil
	return r
}

// release frees places a grace period after they were taken, and moves
// in the keys waiting for them.
func (x *sessionIndex) release(places []uint32) error {
	var errs []error
	for _, i := range places {
		x.isRetired[i] = false
		w, ok := x.waiting[i]
		if !ok {
			continue
		}
		delete(x.waiting, i)
		x.publish(i, w)
		errs = append(errs, x.unhash(w.Key))
	}
	return errors.Join(errs...)
}

// unmap releases the mapping (nil: none); the index is not to be used
// after it.
func (x *sessionIndex) unmap() error {
	if x == nil {
		return nil
	}
	x.entries = nil
	return unmapArray(&x.b)
}

// startRetiring starts the goroutine that frees the indexes' retired
// places: it takes those retired so far, waits until no program run that
// may have read them is left (waitPrograms: a grace period), and frees
// them. Places retired meanwhile wait for the next round, so one grace
// period serves any number of changes.
func (f *FastPath) startRetiring() {
	f.retireKick = make(chan struct{}, 1)
	f.retireStop, f.retireDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.retireDone)
		for {
			select {
			case <-f.retireStop:
				return
			case <-f.retireKick:
			}
			f.mu.Lock()
			ul, dl := f.teidIndex.takeRetired(), f.ueIndex.takeRetired()
			f.mu.Unlock()
			if len(ul)+len(dl) == 0 {
				continue
			}
			waitPrograms()
			f.mu.Lock()
			if !f.closed {
				if err := errors.Join(f.teidIndex.release(ul), f.ueIndex.release(dl)); err != nil {
					f.log.Warn("xdp: session index", "err", err)
				}
			}
			f.mu.Unlock()
		}
	}()
}

// kickRetiring wakes the retiring goroutine if a place is retired; with
// f.mu held.
func (f *FastPath) kickRetiring() {
	if len(f.teidIndex.retired)+len(f.ueIndex.retired) == 0 {
		return
	}
	select {
	case f.retireKick <- struct{}{}:
	default: // a round is due already
	}
}

func (f *FastPath) stopRetiring() {
	if f.retireStop != nil {
		close(f.retireStop)
		<-f.retireDone
		f.retireStop = nil
	}
}
