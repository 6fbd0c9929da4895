//go:build linux

package sockbuf

import (
	"net"

	"golang.org/x/sys/unix"
)

// SetReadBuffer sets conn's receive buffer to n bytes: SO_RCVBUFFORCE
// where the process may (CAP_NET_ADMIN), which goes past
// net.core.rmem_max; otherwise SO_RCVBUF, which the kernel caps there
// (212,992 bytes by default). Like SO_RCVBUF, the kernel doubles n for its
// bookkeeping.
func SetReadBuffer(conn *net.UDPConn, n int) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var forced error
	if err := rc.Control(func(fd uintptr) {
		forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	}); err == nil && forced == nil {
		return nil
	}
	return conn.SetReadBuffer(n)
}
