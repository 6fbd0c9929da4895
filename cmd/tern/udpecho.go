package main

import (
	"net"
	"net/netip"
)

// udpEcho answers every datagram with itself (RFC 862): the far end of the
// demo's transfer step, so both directions of the session are counted.
type udpEcho struct {
	conn *net.UDPConn
	done chan struct{}
}

func startUDPEcho(addr netip.AddrPort) (*udpEcho, error) {
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	// Room for the sessions' bursts while this goroutine waits for a CPU:
	// the default buffer (about 200 KB) holds some 30 ms of the demo's
	// transfer. A run of the whole suite on two cores once lost 7
	// datagrams of 880 between the UPF's uplink and its downlink, where
	// this buffer is the likeliest place (the UPF's N3 socket has 4 MB for
	// the same reason).
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	e := &udpEcho{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		buf := make([]byte, 65536)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return e, nil
}

func (e *udpEcho) Close() error {
	err := e.conn.Close()
	<-e.done
	return err
}
