//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/upf/upfu"
)

// fallback holds the kernel sockets that carry what AF_XDP cannot: outputs
// whose next hop is not resolved yet (the kernel resolves it) and the
// pipeline's sends from outside the workers (Send). Sends on them are
// safe from any goroutine.
type fallback struct {
	udp  int // bound to N3Addr:2152: GTP-U to a peer
	raw4 int // IPPROTO_RAW: IPv4 packets to N6, routed by the kernel
	raw6 int // IPPROTO_RAW over IPv6 (-1 when refused)
}

func openFallback(n3 netip.Addr) (f fallback, err error) {
	f = fallback{udp: -1, raw4: -1, raw6: -1}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.udp, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return f, fmt.Errorf("afxdp: fallback UDP socket: %w", err)
	}
	// The XDP program takes the GTP-U that reaches this port, except
	// fragments: the kernel reassembles those for this socket, which
	// Driver.readKernelN3 reads.
	_ = unix.SetsockoptInt(f.udp, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	_ = unix.SetsockoptInt(f.udp, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err = unix.Bind(f.udp, &unix.SockaddrInet4{Addr: n3.As4(), Port: 2152}); err != nil {
		return f, fmt.Errorf("afxdp: fallback UDP socket: bind %v:2152: %w", n3, err)
	}
	if f.raw4, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err != nil {
		return f, fmt.Errorf("afxdp: fallback raw IPv4 socket: %w", err)
	}
	if fd, err6 := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err6 == nil {
		f.raw6 = fd
	}
	return f, nil
}

// send sends one output through the kernel.
func (f *fallback) send(pk *upfu.Packet) bool {
	data := pk.Data()
	var err error
	if pk.Port == upfu.PortN3 {
		if !pk.Peer.Addr().Is4() {
			return false
		}
		err = unix.Sendto(f.udp, data, unix.MSG_DONTWAIT, &unix.SockaddrInet4{Addr: pk.Peer.Addr().As4(), Port: int(pk.Peer.Port())})
		return err == nil
	}
	if len(data) < 1 {
		return false
	}
	switch data[0] >> 4 {
	case 4:
		if len(data) < ipv4Len {
			return false
		}
		err = unix.Sendto(f.raw4, data, unix.MSG_DONTWAIT, &unix.SockaddrInet4{Addr: [4]byte(data[16:20])})
	case 6:
		if len(data) < 40 || f.raw6 < 0 {
			return false
		}
		err = unix.Sendto(f.raw6, data, unix.MSG_DONTWAIT, &unix.SockaddrInet6{Addr: [16]byte(data[24:40])})
	default:
		return false
	}
	return err == nil
}

func (f *fallback) close() error {
	var err error
	for _, fd := range []*int{&f.udp, &f.raw4, &f.raw6} {
		if *fd >= 0 {
			err = errors.Join(err, unix.Close(*fd))
			*fd = -1
		}
	}
	return err
}

// readKernelN3 runs the GTP-U the kernel delivers to the fallback UDP
// socket (datagrams that came fragmented, which the XDP program leaves to
// the kernel's reassembly) through a pipeline worker of its own and sends
// the outputs through the kernel too. It is the slow path: one datagram
// per system call.
func (d *Driver) readKernelN3() {
	pw := d.p.NewWorker()
	pw.SendsLater()
	buf := make([]byte, upfu.Headroom+65536)
	in := make([]upfu.Packet, 1)
	out := make([]upfu.Packet, 0, 4)
	pfds := []unix.PollFd{{Fd: int32(d.fb.udp), Events: unix.POLLIN}, {Fd: int32(d.stopFD), Events: unix.POLLIN}}
	for !d.closed.Load() {
		pfds[0].Revents, pfds[1].Revents = 0, 0
		if _, err := unix.Poll(pfds, -1); err != nil && err != unix.EINTR {
			d.log.Error("afxdp: kernel N3 poll", "err", err)
			return
		}
		n, from, err := unix.Recvfrom(d.fb.udp, buf[upfu.Headroom:], unix.MSG_DONTWAIT)
		if err != nil {
			continue // EAGAIN, EINTR, or a close racing us
		}
		sa, ok := from.(*unix.SockaddrInet4)
		if !ok {
			continue
		}
		d.kernelRx.Add(1)
		in[0] = upfu.Packet{Buf: buf, Off: upfu.Headroom, Len: n, Peer: netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))}
		out = pw.Uplink(in, out[:0])
		for i := range out {
			if d.fb.send(&out[i]) {
				d.kernelTx.Add(1)
			} else {
				d.sinkErrors.Add(1)
			}
		}
		pw.Sent()
	}
}
