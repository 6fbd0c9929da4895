package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Offsets of the pool file; see the package comment for the picture. Every
// word that two processes touch concurrently is accessed with sync/atomic
// and sits on a cache line of its own where one side writes it often.
const (
	pageBytes = 4096

	poolMagic   = 0x314d48534e524554 // "TERNSHM1", little-endian
	poolVersion = 1

	// Pool header, page 0.
	hdrMagic      = 0   // uint64
	hdrVersion    = 8   // uint32
	hdrReady      = 12  // uint32: 1 once the server has initialised everything
	hdrGen        = 16  // uint64: pool generation, +1 at every Listen
	hdrMaxClients = 24  // uint32
	hdrRingSlots  = 28  // uint32
	hdrSlotBytes  = 32  // uint32
	hdrServerPID  = 36  // uint32, informational
	hdrSize       = 40  // uint64: file size, checked against the geometry
	hdrDoorbell   = 128 // uint32 futex: clients bump it to ask for service

	// Channel table, from page 1: one 64-byte descriptor per channel.
	chanDescBytes = 64
	descState     = 0 // uint32 futex: chanFree, chanConnect, chanActive, chanClosing
	descGen       = 4 // uint32: channel generation, stamped into every record
	descClientPID = 8 // uint32, informational

	// Ring header; the slots follow it.
	ringHeaderBytes = 512
	ringTail        = 0   // uint64: next slot the producer fills (published)
	ringHead        = 128 // uint64: next slot the consumer reads
	ringWake        = 256 // uint32 futex: whom a producer must wake (wakeNone, wakeLeader, wakeStandby)
	ringStandby     = 384 // uint32 futex, an event count: standby consumers sleep on it
)

// Channel states (descState).
const (
	chanFree    = 0 // no client; a client holding the slot's lock may claim it
	chanConnect = 1 // a client claimed it and waits for the server
	chanActive  = 2 // the server accepted it; the rings carry traffic
	chanClosing = 3 // the client closed; the server frees it
)

// geometry is the shape of a pool, stored in its header.
type geometry struct {
	maxClients int
	slots      int
	slotBytes  int
}

func (g geometry) validate() error {
	if g.slots < 2 || g.slots > maxRingSlots || g.slots&(g.slots-1) != 0 {
		return fmt.Errorf("shm: RingSlots %d: want a power of two in 2..%d", g.slots, maxRingSlots)
	}
	if g.slotBytes < minSlotBytes || g.slotBytes > maxSlotBytes || g.slotBytes%64 != 0 {
		return fmt.Errorf("shm: SlotBytes %d: want a multiple of 64 in %d..%d", g.slotBytes, minSlotBytes, maxSlotBytes)
	}
	if g.maxClients < 1 || g.maxClients > maxMaxClients {
		return fmt.Errorf("shm: MaxClients %d outside 1..%d", g.maxClients, maxMaxClients)
	}
	if g.size() > maxPoolBytes {
		return fmt.Errorf("shm: pool of %d bytes (%d clients x 2 rings x %d slots x %d bytes) exceeds %d",
			g.size(), g.maxClients, g.slots, g.slotBytes, int64(maxPoolBytes))
	}
	return nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// maxPayload is the largest message a slot carries.
func (g geometry) maxPayload() int { return g.slotBytes - RecordHeaderBytes }

func (g geometry) tableBytes() int64 {
	return roundUp(int64(g.maxClients)*chanDescBytes, pageBytes)
}

func (g geometry) ringBytes() int64 {
	return roundUp(ringHeaderBytes+int64(g.slots)*int64(g.slotBytes), pageBytes)
}

func (g geometry) descOff(ch int) int64 { return pageBytes + int64(ch)*chanDescBytes }

// ringOff is the offset of channel ch's request ring (dir 0) or response
// ring (dir 1). A channel's two rings are adjacent so that freeing them is
// one range.
func (g geometry) ringOff(ch, dir int) int64 {
	return pageBytes + g.tableBytes() + (2*int64(ch)+int64(dir))*g.ringBytes()
}

func (g geometry) size() int64 { return g.ringOff(g.maxClients, 0) }

// words gives typed atomic views of a mapping. The mapping is page-aligned
// and every offset used is a multiple of the word size.
type words []byte

func (m words) u32(off int64) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&m[off]))
}

func (m words) u64(off int64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&m[off]))
}

// readGeometry reads and checks a pool header against the file's size.
func readGeometry(m words, fileSize int64) (geometry, uint64, error) {
	if int64(len(m)) < pageBytes || fileSize < pageBytes {
		return geometry{}, 0, fmt.Errorf("shm: pool of %d bytes is shorter than its header", fileSize)
	}
	if m.u64(hdrMagic).Load() != poolMagic {
		return geometry{}, 0, fmt.Errorf("shm: pool has a bad magic number")
	}
	if v := m.u32(hdrVersion).Load(); v != poolVersion {
		return geometry{}, 0, fmt.Errorf("shm: pool version %d, want %d", v, poolVersion)
	}
	if m.u32(hdrReady).Load() != 1 {
		return geometry{}, 0, fmt.Errorf("shm: pool not ready")
	}
	g := geometry{
		maxClients: int(m.u32(hdrMaxClients).Load()),
		slots:      int(m.u32(hdrRingSlots).Load()),
		slotBytes:  int(m.u32(hdrSlotBytes).Load()),
	}
	if err := g.validate(); err != nil {
		return g, 0, fmt.Errorf("shm: pool header: %w", err)
	}
	if s := int64(m.u64(hdrSize).Load()); s != g.size() || s != fileSize {
		return g, 0, fmt.Errorf("shm: pool header says %d bytes, geometry %d, file %d", s, g.size(), fileSize)
	}
	return g, m.u64(hdrGen).Load(), nil
}
