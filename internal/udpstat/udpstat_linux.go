//go:build linux

package udpstat

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The indexes of SO_MEMINFO's array (include/uapi/linux/sock_diag.h).
const (
	skMeminfoRmemAlloc = 0
	skMeminfoDrops     = 8
	skMeminfoVars      = 9
)

// Read returns conn's counters (conn: a *net.UDPConn, IPv4 or IPv6). It
// asks the socket itself (getsockopt SO_MEMINFO, Linux 4.12), not
// /proc/net/udp: those tables are a network namespace's, and the socket
// may be in another one than the thread that reads (a gNB that lab.Do
// opened in its namespace, read from any goroutine).
func Read(conn syscall.Conn) (Counters, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return Counters{}, fmt.Errorf("udpstat: %w", err)
	}
	var mem [skMeminfoVars]uint32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(mem))
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&size)), 0)
	})
	if err != nil {
		return Counters{}, fmt.Errorf("udpstat: %w", err)
	}
	if errno != 0 {
		return Counters{}, fmt.Errorf("udpstat: getsockopt SO_MEMINFO: %w", errno)
	}
	return Counters{Drops: uint64(mem[skMeminfoDrops]), RxQueue: uint64(mem[skMeminfoRmemAlloc])}, nil
}
