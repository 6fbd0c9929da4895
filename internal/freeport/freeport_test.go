package freeport

import (
	"net"
	"testing"
)

// TestPortsBelowEphemeralRange: the ports handed out lie below the
// kernel's ephemeral range, where no socket the kernel binds on its own
// can take them, and they can be bound.
func TestPortsBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-lowest < 1000 {
		t.Skipf("ephemeral range starts at %d: no room below it", low)
	}
	seen := map[int]bool{}
	for range 20 {
		u, err := UDP()
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: u})
		if err != nil {
			t.Fatalf("UDP port %d: %v", u, err)
		}
		c.Close()
		p, err := TCP()
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		if err != nil {
			t.Fatalf("TCP port %d: %v", p, err)
		}
		l.Close()
		for _, port := range []int{u, p} {
			if port < lowest || port >= low {
				t.Fatalf("port %d outside [%d, %d)", port, lowest, low)
			}
			seen[port] = true
		}
	}
	if len(seen) < 30 {
		t.Errorf("40 draws gave %d distinct ports", len(seen))
	}
}

// TestTakenPortsAreSkipped: a port held by another socket is not handed
// out again while it is held.
func TestTakenPortsAreSkipped(t *testing.T) {
	var held []*net.UDPConn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	taken := map[int]bool{}
	for range 50 {
		port, err := UDP()
		if err != nil {
			t.Fatal(err)
		}
		if taken[port] {
			t.Fatalf("port %d handed out while held", port)
		}
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		taken[port] = true
	}
}
