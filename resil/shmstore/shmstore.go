// Package shmstore is the local replica's record store (issue 36, L25GC
// §3.5): the latest record of every object of a primary NF process, kept in
// a file on tmpfs that the primary maps MAP_SHARED. A Put is visible in the
// file as soon as it returns, so a standby that opens the file after the
// primary died (SIGKILL included) finds every record the primary had
// stored: that is the "output commit" half that lives on one host. The
// standby reads nothing while the primary lives (it is blocked elsewhere,
// on a pidfd), so the store never needs a reader to make room.
//
// What survives: the primary process's death, however it dies, because the
// pages are the kernel's (tmpfs page cache), not the process's. What does
// not: the host's death or a reboot (tmpfs is memory); that is the remote
// replica's job.
//
// # Writer
//
// Create builds the file (in a temporary name beside path, renamed over
// it, so a primary that is still alive keeps writing its own orphaned
// inode and can never scribble into its successor's store; a Create cut
// short by the process's death leaves that file, named .<base>.*.new) and
// maps it. Put(kind, key, record) appends an entry to the active half and
// publishes it; the latest entry for (kind, key) replaces the earlier
// ones, Delete appends a tombstone. Puts from many goroutines are
// serialised by a mutex whose critical section is an index lookup and a
// memcpy: the entry's CRC is computed before the lock, and steady state
// (replacing keys that exist) allocates nothing. The writer keeps the
// index (kind, key) → entry in its own memory; the file has none.
//
// When the active half has no room for an entry, the writer compacts: it
// copies the live entries (the latest of each key that is not deleted)
// into the other half, appends the new entry there, and publishes the new
// half and its end with one atomic store. A process killed mid-copy leaves
// the old half active and complete. Compaction is a copy of the live bytes
// under the lock (Puts wait for it: about 25 µs per MiB live on the
// development machine, BenchmarkCompaction), so size the file at several
// times the live data: a half of H bytes with L live compacts once per H-L
// bytes written, copying L (Stats.Compactions, Stats.LiveBytes and
// Stats.Capacity let the caller watch it). Live data that does not fit in
// a half is refused with ErrFull; the caller counts it and raises an alarm.
//
// # Reader
//
// Open reads the file (with pread, not a mapping, so a truncated file costs
// an error, not a SIGBUS): the header, then the active half up to its
// committed end, checking every entry's CRC-32C, and returns a Snapshot
// with the latest record of each key, tombstoned keys left out, sorted by
// (kind, key). Open is meant for a file whose writer is gone (dead or
// closed); it does not lock against a live writer.
//
// A corrupted entry (bad length, bad CRC, crossing the committed end) stops
// the scan: the position of every later entry derives from the bad entry's
// length, which the failed CRC covers, so nothing after it can be found
// with any trust. The Snapshot then holds the entries before it and says so
// (Stats.Corrupted, Stats.Skipped bytes): where the bad entry lies among
// the Puts appended after the last compaction, that is exactly a state the
// primary had at some earlier step; where it lies in the compacted part,
// some objects are missing. Either way it is not the primary's last state,
// and the caller should fall back (issue 36: rebuild from the engine's last
// checkpoint) rather than take over from it as if it were. A file whose
// header is bad (magic, version, sizes, header CRC, state word) is refused
// with an error wrapping ErrBadFile.
//
// # Layout
//
// Integers are little-endian. The file is a 4 KiB header page and two
// halves of equal size (a multiple of 4 KiB).
//
//	header:  0 magic "TERNRSTO"   8 format version (u32)   12 header bytes (u32)
//	        16 file size (u64)   24 half size (u64)   32 epoch (u64)
//	        40 CRC-32C of bytes 0..40 (u32)
//	        64 state word (u64), stored atomically:
//	           bits 0..39 the committed end of the active half (bytes)
//	           bit 40     the active half (0 or 1)
//	           bits 41..63 a check: CRC-32C of (bits 0..40, epoch), 23 bits
//	half h at 4096 + h*half size; entries from its offset 0, back to back:
//	         0 entry size (u32): header, key and record
//	         4 CRC-32C of the entry without these 4 bytes (u32)
//	         8 kind (u8)   9 flags (u8; 1 = tombstone)   10 key length (u16)
//	        12 key, then the record
//
// The state word is written with an atomic store after the bytes it
// covers, so a reader sees either the old committed end or the new one,
// never an entry half written. The epoch (Options.Epoch; the caller's
// generation or fencing number) is in the header and bound into the state
// word's check. The caller removes the file (os.Remove) when it has no
// further use for it; a later Create replaces it.
package shmstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Errors.
var (
	// ErrFull: the live records and the new one do not fit in a half. The
	// error wraps it with the numbers.
	ErrFull = errors.New("shmstore: full")
	// ErrBadFile: Open refused the file (not a store, another format
	// version, sizes that do not add up, a bad header or state word).
	ErrBadFile = errors.New("shmstore: not a valid store file")
	// ErrClosed: Put or Delete after Close.
	ErrClosed = errors.New("shmstore: closed")
	// ErrTooLarge: a key longer than MaxKey or an entry too large for its
	// 32-bit size.
	ErrTooLarge = errors.New("shmstore: key or record too large")
)

// Format constants.
const (
	magic         = "TERNRSTO"
	formatVersion = 1
	headerBytes   = 4096
	halfAlign     = 4096
	// MinSize is the smallest file Create accepts: the header and two
	// halves of 4 KiB.
	MinSize = headerBytes + 2*halfAlign
	// MaxKey is the longest key (its length is a u16 in the entry).
	MaxKey = 1<<16 - 1

	offMagic     = 0
	offVersion   = 8
	offHdrBytes  = 12
	offFileSize  = 16
	offHalfSize  = 24
	offEpoch     = 32
	offHeaderCRC = 40
	offState     = 64

	entryHeader   = 12
	flagTombstone = 1

	endBits  = 40
	maxHalf  = 1<<endBits - 1
	checkLSB = endBits + 1
	checkMsk = 1<<(64-checkLSB) - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// putHeader writes the header's fixed fields (all but the state word).
func putHeader(h []byte, half, epoch uint64) {
	copy(h[offMagic:], magic)
	binary.LittleEndian.PutUint32(h[offVersion:], formatVersion)
	binary.LittleEndian.PutUint32(h[offHdrBytes:], headerBytes)
	binary.LittleEndian.PutUint64(h[offFileSize:], headerBytes+2*half)
	binary.LittleEndian.PutUint64(h[offHalfSize:], half)
	binary.LittleEndian.PutUint64(h[offEpoch:], epoch)
	binary.LittleEndian.PutUint32(h[offHeaderCRC:], crc32.Checksum(h[:offHeaderCRC], castagnoli))
}

// stateWord packs the active half and its committed end with a check that
// binds them to the epoch, so that a scribbled word (or one from another
// store) is refused instead of read as a different half or end.
func stateWord(half int, end uint64, epoch uint64) uint64 {
	v := end | uint64(half)<<endBits
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], v)
	binary.LittleEndian.PutUint64(b[8:16], epoch)
	c := uint64(crcSmall(0, b[:])) & checkMsk
	return v | c<<checkLSB
}

// parseState undoes stateWord; ok is false when the check does not match.
func parseState(w uint64, epoch uint64) (half int, end uint64, ok bool) {
	half = int(w>>endBits) & 1
	end = w & maxHalf
	return half, end, stateWord(half, end, epoch) == w
}

// entryCRC is the CRC-32C of an entry without its size and CRC fields'
// own CRC bytes: the size (so that a changed length fails), then kind,
// flags and key length, then key and record.
func entryCRC(hdr *[entryHeader]byte, key, rec []byte) uint32 {
	c := crcSmall(0, hdr[0:4])
	c = crcSmall(c, hdr[8:entryHeader])
	c = crc32.Update(c, castagnoli, key)
	return crc32.Update(c, castagnoli, rec)
}

// crcSmall is crc32.Update(c, castagnoli, b) for a few bytes, byte by
// byte: crc32.Update makes its argument escape (it dispatches through a
// function value), which would cost Put an allocation for the entry
// header it builds on the stack.
func crcSmall(c uint32, b []byte) uint32 {
	c = ^c
	for _, x := range b {
		c = castagnoli[byte(c)^x] ^ c>>8
	}
	return ^c
}
