//go:build !linux

package portable

import (
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// udpBatch without recvmmsg/sendmmsg: one system call per datagram, with
// the same interface as the Linux version (which is the one that matters;
// the driver's TUN devices are Linux-only anyway).
type udpBatch struct {
	bufs  [][]byte
	lens  []int
	froms []netip.AddrPort
	out   [][]byte
	tos   []netip.AddrPort
	n     int
}

func newUDPBatch(size int) *udpBatch {
	return &udpBatch{bufs: make([][]byte, size), lens: make([]int, size), froms: make([]netip.AddrPort, size),
		out: make([][]byte, size), tos: make([]netip.AddrPort, size)}
}

func (b *udpBatch) setRecvBuffer(i int, buf []byte) { b.bufs[i] = buf }

func (b *udpBatch) recv(rc syscall.RawConn) (int, error) {
	var errno error
	err := rc.Read(func(fd uintptr) bool {
		n, from, e := unix.Recvfrom(int(fd), b.bufs[0], 0)
		if e == unix.EAGAIN {
			return false
		}
		errno = e
		b.lens[0], b.froms[0] = n, netip.AddrPort{}
		if sa, ok := from.(*unix.SockaddrInet4); ok {
			b.froms[0] = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
		}
		return true
	})
	if err == nil {
		err = errno
	}
	if err != nil {
		return 0, err
	}
	return 1, nil
}

func (b *udpBatch) received(i int) (int, netip.AddrPort, bool) {
	return b.lens[i], b.froms[i], b.froms[i].IsValid()
}

func (b *udpBatch) queue(data []byte, to netip.AddrPort) bool {
	if b.n == len(b.out) || !to.Addr().Is4() {
		return false
	}
	b.out[b.n], b.tos[b.n] = data, to
	b.n++
	return true
}

func (b *udpBatch) full() bool { return b.n == len(b.out) }

func (b *udpBatch) flush(rc syscall.RawConn) (sent, failed int, err error) {
	for i := range b.n {
		var errno error
		if werr := rc.Write(func(fd uintptr) bool {
			errno = unix.Sendto(int(fd), b.out[i], 0, &unix.SockaddrInet4{Port: int(b.tos[i].Port()), Addr: b.tos[i].Addr().As4()})
			return errno != unix.EAGAIN
		}); werr != nil {
			errno = werr
		}
		if errno != nil {
			failed++
			err = errno
			continue
		}
		sent++
		b.out[i] = nil
	}
	b.n = 0
	return sent, failed, err
}
