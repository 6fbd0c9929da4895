//go:build linux

// Package afxdp is a small AF_XDP socket layer: a UMEM (one mmap'd area
// cut into equal frames) and sockets bound to one (device, queue) each,
// with the four single-producer/single-consumer rings the kernel shares
// with user space.
//
// # Rings
//
// Every ring is an array of 2^k entries plus a producer and a consumer
// index that run freely (uint32, wrapping) and are masked on access. One
// side only writes the producer, the other only the consumer:
//
//	fill ring        user space produces frame addresses, the kernel consumes
//	                 them to receive into
//	RX ring          the kernel produces descriptors of received frames
//	TX ring          user space produces descriptors of frames to send
//	completion ring  the kernel produces the addresses of sent frames
//
// A producer writes its entries and then publishes them with an atomic
// store of the producer index; a consumer loads the producer index
// atomically before it reads the entries and stores its consumer index
// after. The atomic operations are the release/acquire pair the kernel's
// smp_store_release/smp_load_acquire expect on the other side. Each side
// caches the other's index and reloads it only when the cached value says
// the ring is full (producer) or empty (consumer).
//
// # Ownership
//
// A frame belongs to exactly one party at a time, and the rings are how
// it changes hands: user space's free list -> fill ring -> kernel -> RX
// ring -> user space (the worker that consumed the descriptor) -> TX ring
// -> kernel -> completion ring -> user space's free list. A frame on no
// ring belongs to user space, which must return it to the free list or to
// a ring; this package keeps no free list itself (the caller does, so a
// worker can keep its own without locks), but counts nothing twice: the
// frames the kernel holds are FillHeld + TxHeld of every socket of the
// UMEM, and a caller whose free list plus those equals the UMEM's frame
// count has lost none.
//
// # Sharing
//
// The first socket opened on a UMEM registers it; later ones bind with
// XDP_SHARED_UMEM and, being on another device or queue, get fill and
// completion rings of their own (the kernel's rule for sharing across
// devices). A frame received on one socket can so be transmitted on
// another, without a copy, as long as user space returns the addresses
// to the fill ring of whichever socket it likes. The rings of one socket
// are not safe for concurrent use: one goroutine drives them.
package afxdp

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Defaults.
const (
	DefaultFrameSize = 2048
	DefaultRingSize  = 2048
)

// UMEM is the packet memory sockets receive into and transmit from.
type UMEM struct {
	mem       []byte
	frameSize int
	frames    int
	headroom  int
	owner     *Socket // the socket that registered the area
	socks     int     // open sockets using it
}

// NewUMEM maps frames frames of frameSize bytes (a power of two, 2048 or
// 4096 for aligned chunks). headroom is the space the kernel leaves in
// each frame before received data, beyond its own XDP_PACKET_HEADROOM.
func NewUMEM(frames, frameSize, headroom int) (*UMEM, error) {
	if frameSize == 0 {
		frameSize = DefaultFrameSize
	}
	if frameSize != 2048 && frameSize != 4096 {
		return nil, fmt.Errorf("afxdp: frame size %d: want 2048 or 4096", frameSize)
	}
	if frames <= 0 || headroom < 0 || headroom >= frameSize/2 {
		return nil, fmt.Errorf("afxdp: %d frames with headroom %d", frames, headroom)
	}
	mem, err := unix.Mmap(-1, 0, frames*frameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap UMEM of %d bytes: %w", frames*frameSize, err)
	}
	return &UMEM{mem: mem, frameSize: frameSize, frames: frames, headroom: headroom}, nil
}

// Frames is the number of frames.
func (u *UMEM) Frames() int { return u.frames }

// FrameSize is the size of one frame.
func (u *UMEM) FrameSize() int { return u.frameSize }

// Mem is the whole area; frame i is Mem()[i*FrameSize():(i+1)*FrameSize()].
func (u *UMEM) Mem() []byte { return u.mem }

// Frame returns the frame that holds addr, capped to its size, and addr's
// offset in it.
func (u *UMEM) Frame(addr uint64) (frame []byte, off int) {
	base := int(addr) &^ (u.frameSize - 1)
	return u.mem[base : base+u.frameSize : base+u.frameSize], int(addr) - base
}

// Addr returns the address of frame i.
func (u *UMEM) Addr(i int) uint64 { return uint64(i * u.frameSize) }

// Index returns the frame index of a slice of the UMEM (a Frame result or
// a subslice starting in it), or -1 if b is not in it.
func (u *UMEM) Index(b []byte) int {
	if cap(b) == 0 {
		return -1
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(u.mem)))
	if p < base || p >= base+uintptr(len(u.mem)) {
		return -1
	}
	return int(p-base) / u.frameSize
}

// Close unmaps the area. The sockets using it must be closed first.
func (u *UMEM) Close() error {
	if u.socks > 0 {
		return fmt.Errorf("afxdp: UMEM still used by %d sockets", u.socks)
	}
	if u.mem == nil {
		return nil
	}
	err := unix.Munmap(u.mem)
	u.mem = nil
	return err
}

// ring is the state shared by the four ring kinds.
type ring struct {
	prod, cons *uint32
	flags      *uint32
	mask       uint32
	size       uint32
	mem        []byte
	// cached is the other side's index as last loaded: the consumer
	// index for a producer ring, the producer index for a consumer one;
	// local is this side's own index.
	cached, local uint32
}

func (r *ring) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	return err
}

// free is how many entries a producer can add.
func (r *ring) free(want uint32) uint32 {
	n := r.size - (r.local - r.cached)
	if n < want {
		r.cached = atomic.LoadUint32(r.cons)
		n = r.size - (r.local - r.cached)
	}
	return n
}

// avail is how many entries a consumer can take.
func (r *ring) avail(want uint32) uint32 {
	n := r.cached - r.local
	if n < want {
		r.cached = atomic.LoadUint32(r.prod)
		n = r.cached - r.local
	}
	return n
}

// held is how many entries the producer has published that the other
// side has not consumed yet (a producer ring's frames the kernel holds).
func (r *ring) held() int {
	return int(r.local - atomic.LoadUint32(r.cons))
}

// Socket is one AF_XDP socket.
type Socket struct {
	fd      int
	umem    *UMEM
	ifindex int
	queue   int
	zc      bool

	fill, comp struct {
		ring
		addrs []uint64
	}
	rx, tx struct {
		ring
		descs []unix.XDPDesc
	}
}

// Options configures a socket.
type Options struct {
	// RingSize is the size of each of the four rings (a power of two;
	// default DefaultRingSize).
	RingSize int
	// ZeroCopy asks for XDP_ZEROCOPY; Open falls back to copy mode when
	// the driver refuses it. Otherwise the socket binds with XDP_COPY.
	ZeroCopy bool
}

// Open creates a socket on queue of device ifindex that uses u, which it
// registers if it is the first socket on u. It must run in the network
// namespace of the device (the calling thread's).
func Open(u *UMEM, ifindex, queue int, opt Options) (*Socket, error) {
	if opt.RingSize == 0 {
		opt.RingSize = DefaultRingSize
	}
	if opt.RingSize&(opt.RingSize-1) != 0 {
		return nil, fmt.Errorf("afxdp: ring size %d is not a power of two", opt.RingSize)
	}
	if u.owner != nil {
		// A shared socket inherits the owner's mode; the kernel
		// refuses XDP_COPY or XDP_ZEROCOPY next to XDP_SHARED_UMEM.
		return open(u, ifindex, queue, opt.RingSize, 0)
	}
	if opt.ZeroCopy {
		s, err := open(u, ifindex, queue, opt.RingSize, unix.XDP_ZEROCOPY)
		if err == nil {
			return s, nil
		}
		// Refused (no driver support, or a veth): copy mode.
	}
	return open(u, ifindex, queue, opt.RingSize, unix.XDP_COPY)
}

func open(u *UMEM, ifindex, queue, ringSize int, mode uint16) (_ *Socket, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: socket: %w", err)
	}
	s := &Socket{fd: fd, umem: u, ifindex: ifindex, queue: queue, zc: mode == unix.XDP_ZEROCOPY}
	if u.owner != nil {
		s.zc = u.owner.zc
	}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	owner := u.owner == nil
	if owner {
		reg := unix.XDPUmemReg{
			Addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(u.mem)))),
			Len:      uint64(len(u.mem)),
			Size:     uint32(u.frameSize),
			Headroom: uint32(u.headroom),
		}
		if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
			return nil, fmt.Errorf("afxdp: register UMEM: %w", err)
		}
	}
	size := uint32(ringSize)
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := setsockopt(fd, o, unsafe.Pointer(&size), 4); err != nil {
			return nil, fmt.Errorf("afxdp: ring option %d size %d: %w", o, size, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return nil, fmt.Errorf("afxdp: mmap offsets: %w", err)
	}
	if err := s.fill.ring.mmap(fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, size, 8); err != nil {
		return nil, fmt.Errorf("afxdp: fill ring: %w", err)
	}
	s.fill.addrs = unsafe.Slice((*uint64)(unsafe.Pointer(&s.fill.mem[off.Fr.Desc])), size)
	if err := s.comp.ring.mmap(fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, size, 8); err != nil {
		return nil, fmt.Errorf("afxdp: completion ring: %w", err)
	}
	s.comp.addrs = unsafe.Slice((*uint64)(unsafe.Pointer(&s.comp.mem[off.Cr.Desc])), size)
	if err := s.rx.ring.mmap(fd, unix.XDP_PGOFF_RX_RING, off.Rx, size, 16); err != nil {
		return nil, fmt.Errorf("afxdp: RX ring: %w", err)
	}
	s.rx.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&s.rx.mem[off.Rx.Desc])), size)
	if err := s.tx.ring.mmap(fd, unix.XDP_PGOFF_TX_RING, off.Tx, size, 16); err != nil {
		return nil, fmt.Errorf("afxdp: TX ring: %w", err)
	}
	s.tx.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&s.tx.mem[off.Tx.Desc])), size)
	// The producer rings start with every entry free.
	s.fill.cached, s.tx.cached = 0, 0
	s.fill.local, s.tx.local = 0, 0

	sa := &unix.SockaddrXDP{Flags: mode, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	if !owner {
		sa.Flags = unix.XDP_SHARED_UMEM
		sa.SharedUmemFD = uint32(u.owner.fd)
	}
	err = unix.Bind(fd, sa)
	// A socket closed on this queue a moment ago releases it from a
	// kernel work item (the pool's deferred release): EBUSY for a few
	// milliseconds after a close, so wait for it.
	for i := 0; err == unix.EBUSY && i < 200; i++ {
		time.Sleep(5 * time.Millisecond)
		err = unix.Bind(fd, sa)
	}
	if err != nil {
		m := "copy"
		switch {
		case sa.Flags&unix.XDP_SHARED_UMEM != 0:
			m = "shared UMEM"
		case mode == unix.XDP_ZEROCOPY:
			m = "zero-copy"
		}
		return nil, fmt.Errorf("afxdp: bind ifindex %d queue %d (%s mode): %w", ifindex, queue, m, err)
	}
	if owner {
		u.owner = s
	}
	u.socks++
	return s, nil
}

func (r *ring) mmap(fd int, pgoff int64, off unix.XDPRingOffset, size uint32, entry int) error {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+int(size)*entry,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	r.mem = mem
	r.prod = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.cons = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.size, r.mask = size, size-1
	return nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	l := uint32(n)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// FD is the socket's descriptor (for poll).
func (s *Socket) FD() int { return s.fd }

// ZeroCopy reports whether the socket is bound in zero-copy mode.
func (s *Socket) ZeroCopy() bool { return s.zc }

// UMEM is the socket's UMEM.
func (s *Socket) UMEM() *UMEM { return s.umem }

// Fill gives the kernel frames to receive into and returns how many it
// took (the rest stay the caller's).
func (s *Socket) Fill(addrs []uint64) int {
	r := &s.fill
	n := min(uint32(len(addrs)), r.free(uint32(len(addrs))))
	for i := range n {
		r.addrs[(r.local+i)&r.mask] = addrs[i]
	}
	r.local += n
	atomic.StoreUint32(r.prod, r.local)
	return int(n)
}

// Complete takes the addresses of sent frames, up to len(addrs), back from
// the kernel.
func (s *Socket) Complete(addrs []uint64) int {
	r := &s.comp
	n := min(uint32(len(addrs)), r.avail(uint32(len(addrs))))
	if n == 0 {
		return 0
	}
	for i := range n {
		addrs[i] = r.addrs[(r.local+i)&r.mask]
	}
	r.local += n
	atomic.StoreUint32(r.cons, r.local)
	return int(n)
}

// Receive takes the descriptors of received frames, up to len(descs).
// Their frames are the caller's until it fills or transmits them.
func (s *Socket) Receive(descs []unix.XDPDesc) int {
	r := &s.rx
	n := min(uint32(len(descs)), r.avail(uint32(len(descs))))
	if n == 0 {
		return 0
	}
	for i := range n {
		descs[i] = r.descs[(r.local+i)&r.mask]
	}
	r.local += n
	atomic.StoreUint32(r.cons, r.local)
	return int(n)
}

// Transmit queues descriptors on the TX ring and returns how many fit;
// Kick makes the kernel send them.
func (s *Socket) Transmit(descs []unix.XDPDesc) int {
	r := &s.tx
	n := min(uint32(len(descs)), r.free(uint32(len(descs))))
	for i := range n {
		r.descs[(r.local+i)&r.mask] = descs[i]
	}
	r.local += n
	atomic.StoreUint32(r.prod, r.local)
	return int(n)
}

// Kick asks the kernel to send what the TX ring holds. In copy mode the
// kernel transmits only from this call (up to a small batch per call, then
// EAGAIN), so Kick repeats while it makes progress. It returns the number
// of descriptors still on the ring.
func (s *Socket) Kick() (int, error) {
	for range 64 {
		held := s.tx.held()
		if held == 0 {
			return 0, nil
		}
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EINTR:
		case unix.EBUSY, unix.ENOBUFS:
			// The device is busy or the completion ring is full:
			// the caller reaps and kicks again.
			return s.tx.held(), nil
		default:
			return s.tx.held(), fmt.Errorf("afxdp: TX kick: %w", e)
		}
		if s.tx.held() == held {
			return held, nil // no progress: try again later
		}
	}
	return s.tx.held(), nil
}

// FillHeld is the number of frames on the fill ring the kernel has not
// received into yet.
func (s *Socket) FillHeld() int { return s.fill.held() }

// TxHeld is the number of frames given to Transmit whose addresses have
// not come back through Complete.
func (s *Socket) TxHeld() int { return int(s.tx.local - s.comp.local) }

// RxReady reports whether the RX ring holds descriptors.
func (s *Socket) RxReady() bool { return s.rx.avail(1) > 0 }

// Stats are the kernel's counters of the socket.
func (s *Socket) Stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockopt(s.fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	if err != nil {
		err = fmt.Errorf("afxdp: statistics: %w", err)
	}
	return st, err
}

// Close unmaps the rings and closes the socket. Frames the kernel held
// through it are the UMEM's again (no socket uses them any more).
func (s *Socket) Close() error {
	if s.fd < 0 {
		return nil
	}
	err := s.release()
	s.umem.socks--
	if s.umem.owner == s {
		// Later sockets keep the registration alive in the kernel;
		// a new first socket registers again.
		s.umem.owner = nil
	}
	return err
}

func (s *Socket) release() error {
	err := errors.Join(s.fill.unmap(), s.comp.unmap(), s.rx.unmap(), s.tx.unmap())
	if s.fd >= 0 {
		err = errors.Join(err, unix.Close(s.fd))
		s.fd = -1
	}
	return err
}
