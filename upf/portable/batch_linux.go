//go:build linux

package portable

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpBatch is one goroutine's recvmmsg/sendmmsg state for the IPv4 N3
// socket. Headers, I/O vectors and socket addresses are allocated once, and
// the syscall closures are built once, so a batch costs one system call and
// no allocation (x/net's ReadBatch allocates an address per datagram).
type udpBatch struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet4

	n     int // datagrams received, or queued to send
	off   int // datagrams of the queue already sent
	done  int // datagrams sent by the last call
	errno syscall.Errno

	recvFn, sendFn func(fd uintptr) bool
}

func newUDPBatch(size int) *udpBatch {
	b := &udpBatch{
		hdrs:  make([]unix.Mmsghdr, size),
		iovs:  make([]unix.Iovec, size),
		names: make([]unix.RawSockaddrInet4, size),
	}
	for i := range b.hdrs {
		h := &b.hdrs[i].Hdr
		h.Iov = &b.iovs[i]
		h.Iovlen = 1
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	b.recvFn = b.recvmmsg
	b.sendFn = b.sendmmsg
	return b
}

// setRecvBuffer makes datagram i land in buf.
func (b *udpBatch) setRecvBuffer(i int, buf []byte) {
	b.iovs[i].Base = unsafe.SliceData(buf)
	b.iovs[i].SetLen(len(buf))
}

// recv reads up to a batch of datagrams, waiting in the runtime poller
// while none is queued; it returns how many arrived.
func (b *udpBatch) recv(rc syscall.RawConn) (int, error) {
	b.n, b.errno = 0, 0
	if err := rc.Read(b.recvFn); err != nil {
		return 0, err
	}
	if b.errno != 0 {
		return 0, b.errno
	}
	return b.n, nil
}

func (b *udpBatch) recvmmsg(fd uintptr) bool {
	for i := range b.hdrs {
		h := &b.hdrs[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet4
		h.Flags = 0
	}
	var ready bool
	b.n, b.errno, ready = mmsg(unix.SYS_RECVMMSG, fd, b.hdrs, unix.MSG_DONTWAIT)
	return ready
}

// mmsg runs recvmmsg or sendmmsg (trap) over hdrs on a non-blocking
// descriptor. ready is false when the call would block: the RawConn
// callback then returns false and the runtime poller waits.
func mmsg(trap, fd uintptr, hdrs []unix.Mmsghdr, flags int) (n int, errno syscall.Errno, ready bool) {
	for {
		r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
		switch e {
		case 0:
			return int(r), 0, true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, false
		}
		return 0, e, true
	}
}

// received returns datagram i's length and sender; ok is false for a
// datagram the kernel truncated or that did not come from IPv4.
func (b *udpBatch) received(i int) (n int, from netip.AddrPort, ok bool) {
	h := &b.hdrs[i]
	sa := &b.names[i]
	if h.Hdr.Flags&unix.MSG_TRUNC != 0 || sa.Family != unix.AF_INET {
		return 0, netip.AddrPort{}, false
	}
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	return int(h.Len), netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1])), true
}

// queue adds a datagram to send; it reports false when the batch is full or
// to is not IPv4. data must stay untouched until flush returns.
func (b *udpBatch) queue(data []byte, to netip.AddrPort) bool {
	if b.n == len(b.hdrs) || !to.Addr().Is4() {
		return false
	}
	sa := &b.names[b.n]
	sa.Family = unix.AF_INET
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
	sa.Addr = to.Addr().As4()
	h := &b.hdrs[b.n].Hdr
	h.Namelen = unix.SizeofSockaddrInet4
	b.iovs[b.n].Base = unsafe.SliceData(data)
	b.iovs[b.n].SetLen(len(data))
	b.n++
	return true
}

// full reports whether queue would refuse for lack of room.
func (b *udpBatch) full() bool { return b.n == len(b.hdrs) }

// flush sends the queued datagrams (several sendmmsg calls if the kernel
// takes part of the batch or refuses one datagram), empties the queue and
// returns how many were sent and how many failed, with the last error.
func (b *udpBatch) flush(rc syscall.RawConn) (sent, failed int, err error) {
	for b.off = 0; b.off < b.n; {
		b.done, b.errno = 0, 0
		if werr := rc.Write(b.sendFn); werr != nil {
			// The socket is closed: nothing more can go.
			failed += b.n - b.off
			err = werr
			break
		}
		sent += b.done
		b.off += b.done
		if b.errno != 0 {
			// sendmmsg reports an error only for the first datagram it
			// tried (say, no route to that gNB): skip it, send the rest.
			failed++
			b.off++
			err = b.errno
		}
	}
	for i := range b.n {
		b.iovs[i].Base = nil
	}
	b.n, b.off = 0, 0
	return sent, failed, err
}

func (b *udpBatch) sendmmsg(fd uintptr) bool {
	var ready bool
	b.done, b.errno, ready = mmsg(unix.SYS_SENDMMSG, fd, b.hdrs[b.off:b.n], 0)
	return ready
}
