// Package freeport finds loopback UDP ports for self-contained runs (the
// demo, benchmarks, tests), so they do not collide with a `tern up` on the
// default SCTP-over-UDP port or with each other.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
)

// UDP returns a loopback UDP port that was free a moment ago. Another
// process may take it before the caller binds it; the runs that use it are
// short-lived and local, where that race does not matter in practice.
func UDP() (int, error) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, fmt.Errorf("finding a free UDP port: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// Loopback draws an address of 127/8 outside 127.0.0.0/16, where a run can
// own a well-known port (GTP-U 2152, PFCP 8805) that other processes on
// the host also use on addresses of their own, and that no socket bound to
// an ephemeral port can take. Linux answers the whole of 127/8 on lo.
func Loopback() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
}

// TCP returns a loopback TCP port that was free a moment ago (same caveat
// as UDP).
func TCP() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free TCP port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
