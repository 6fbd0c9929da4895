// Package freeport finds loopback UDP ports for self-contained runs (the
// demo, benchmarks, tests), so they do not collide with a `tern up` on the
// default SCTP-over-UDP port or with each other.
package freeport

import (
	"fmt"
	"net"
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
