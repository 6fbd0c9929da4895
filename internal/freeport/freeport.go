// Package freeport finds loopback UDP ports for self-contained runs (the
// demo, benchmarks, tests), so they do not collide with a `tern up` on the
// default SCTP-over-UDP port or with each other.
//
// A port is drawn at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range) and checked free by binding it once. The
// caller binds it again a moment later; in between, a port of the
// ephemeral range can be taken by any socket that sends or connects
// without binding (the kernel picks those ports itself), which is what
// tests running side by side do all the time. Below the range only an
// explicit bind can take it, and another run drawing the same one of
// ~20,000 ports in that moment is rare enough.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
)

const (
	// lowest is the bottom of the range ports are drawn from: above the
	// ports services commonly own.
	lowest = 10000
	// draws is how many ports are tried before giving up on the range.
	draws = 64
)

// UDP returns a loopback UDP port that was free a moment ago.
func UDP() (int, error) {
	return find("UDP", func(port int) (int, func() error, error) {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			return 0, nil, err
		}
		return c.LocalAddr().(*net.UDPAddr).Port, c.Close, nil
	})
}

// TCP returns a loopback TCP port that was free a moment ago.
func TCP() (int, error) {
	return find("TCP", func(port int) (int, func() error, error) {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			return 0, nil, err
		}
		return l.Addr().(*net.TCPAddr).Port, l.Close, nil
	})
}

// find draws ports below the ephemeral range until bind takes one. Where
// that range leaves too little room below it, or every draw is taken, the
// kernel picks an ephemeral port instead (bind of port 0).
func find(proto string, bind func(port int) (bound int, closer func() error, err error)) (int, error) {
	if low := ephemeralLow(); low-lowest >= 1000 {
		for range draws {
			if port, closer, err := bind(lowest + rand.IntN(low-lowest)); err == nil {
				closer()
				return port, nil
			}
		}
	}
	port, closer, err := bind(0)
	if err != nil {
		return 0, fmt.Errorf("finding a free %s port: %w", proto, err)
	}
	closer()
	return port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default where it cannot be read).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var hi int
		if n, _ := fmt.Sscan(string(b), &low, &hi); n != 2 {
			low = 32768
		}
	}
	return low
}

// Loopback draws an address of 127/8 outside 127.0.0.0/16, where a run can
// own a well-known port (GTP-U 2152, PFCP 8805) that other processes on
// the host also use on addresses of their own, and that no socket bound to
// an ephemeral port can take. Linux answers the whole of 127/8 on lo.
func Loopback() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
}
