//go:build linux

package sockbuf

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSetReadBufferPastRmemMax: root gets a receive buffer larger than
// net.core.rmem_max, where SO_RCVBUF alone stops; anyone gets at least
// the capped one.
func TestSetReadBufferPastRmemMax(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skipf("net.core.rmem_max: %v", err)
	}
	rmemMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	want := rmemMax + 1<<20
	if err := SetReadBuffer(conn, want); err != nil {
		t.Fatal(err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	// The kernel reports twice what was set (its bookkeeping).
	if got < 2*rmemMax {
		t.Errorf("receive buffer %d, want at least 2 × rmem_max %d", got, rmemMax)
	}
	if os.Geteuid() != 0 {
		t.Skipf("not root: capped at rmem_max (%d), as SO_RCVBUF is", got)
	}
	if got < 2*want {
		t.Errorf("root: receive buffer %d, want 2 × %d (rmem_max %d + 1 MiB)", got, want, rmemMax)
	}
}
