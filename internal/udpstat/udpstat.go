// Package udpstat reads the kernel's counters of one UDP socket: the
// datagrams it dropped for the socket and the bytes waiting in its
// receive queue, the "drops" and "rx_queue" columns of /proc/net/udp
// (Linux), found by the socket's inode. A bench that counts packets lost
// between two of its own endpoints needs them: a receive buffer that
// overflows while the reader is descheduled drops datagrams that no
// counter of the program sees.
package udpstat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Counters are one socket's kernel counters.
type Counters struct {
	// Drops counts datagrams the kernel dropped for the socket: receive
	// buffer full (SO_RCVBUF), memory pressure, bad checksum, socket
	// filter (sk_drops, the count SO_RXQ_OVFL reports too).
	Drops uint64
	// RxQueue is the bytes waiting in the receive queue now.
	RxQueue uint64
}

// Read returns conn's counters. conn is a UDP socket of this process
// (a *net.UDPConn); IPv4 and IPv6 sockets are both found.
func Read(conn syscall.Conn) (Counters, error) {
	ino, err := inode(conn)
	if err != nil {
		return Counters{}, err
	}
	for _, table := range []string{"/proc/self/net/udp", "/proc/self/net/udp6"} {
		f, err := os.Open(table)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return Counters{}, fmt.Errorf("udpstat: %w", err)
		}
		c, ok, err := find(f, ino)
		f.Close()
		if err != nil {
			return Counters{}, fmt.Errorf("udpstat: %s: %w", table, err)
		}
		if ok {
			return c, nil
		}
	}
	return Counters{}, fmt.Errorf("udpstat: no socket with inode %d in /proc/self/net/udp", ino)
}

// inode is the inode number of conn's socket, the key of /proc/net/udp.
func inode(conn syscall.Conn) (uint64, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("udpstat: %w", err)
	}
	var st syscall.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil {
		return 0, fmt.Errorf("udpstat: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("udpstat: fstat: %w", serr)
	}
	return st.Ino, nil
}

// find reads a /proc/net/udp table for the socket of inode ino:
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
func find(r io.Reader, ino uint64) (Counters, bool, error) {
	sc := bufio.NewScanner(r)
	header := true
	for sc.Scan() {
		if header {
			header = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 13 {
			continue
		}
		if n, err := strconv.ParseUint(f[9], 10, 64); err != nil || n != ino {
			continue
		}
		_, rxq, ok := strings.Cut(f[4], ":")
		if !ok {
			return Counters{}, false, fmt.Errorf("queues %q", f[4])
		}
		var c Counters
		var err error
		if c.RxQueue, err = strconv.ParseUint(rxq, 16, 64); err != nil {
			return Counters{}, false, fmt.Errorf("rx_queue %q: %w", rxq, err)
		}
		if c.Drops, err = strconv.ParseUint(f[12], 10, 64); err != nil {
			return Counters{}, false, fmt.Errorf("drops %q: %w", f[12], err)
		}
		return c, true, nil
	}
	return Counters{}, false, sc.Err()
}
