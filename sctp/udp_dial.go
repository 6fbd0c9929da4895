package sctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	pion "github.com/pion/sctp"
)

// dialUDP opens an SCTP-over-UDP association to addr: a connected UDP socket
// on an ephemeral port toward addr's IP and cfg.UDPPort (RFC 6951 §5.2). The
// SCTP source port is the local UDP port, which keeps it unique per host; the
// SCTP destination port is addr's port.
func dialUDP(ctx context.Context, cfg Config, addr string) (Conn, error) {
	ap, err := resolveAddr(ctx, addr)
	if err != nil {
		return nil, err
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("sctp: dial %q: SCTP port must not be zero", addr)
	}
	udpRemote := netip.AddrPortFrom(ap.Addr(), uint16(cfg.UDPPort))
	var d net.Dialer
	nc, err := d.DialContext(ctx, "udp", udpRemote.String())
	if err != nil {
		return nil, fmt.Errorf("sctp: dial UDP %s: %w", udpRemote, err)
	}
	uc := nc.(*net.UDPConn)
	udpLocal := unmapAddrPort(uc.LocalAddr().(*net.UDPAddr).AddrPort())

	var transport net.Conn = uc
	if cfg.Tap != nil {
		transport = &tapConn{UDPConn: uc, tap: cfg.Tap, local: udpLocal, remote: udpRemote}
	}
	in := newInbox()
	opts := append([]pion.ClientOption{
		pion.WithNetConn(transport),
		pion.WithName(ap.String()),
		pion.WithLoggerFactory(pionLoggerFactory{cfg.Logger}),
		pion.WithEnableInterleaving(false),
		pion.WithPorts(udpLocal.Port(), ap.Port()),
		pion.WithStreams(cfg.Streams, cfg.Streams),
	}, clientOptions(lowLatencyOptions(in))...)
	assoc, err := pion.ClientContext(ctx, opts...)
	if err != nil {
		_ = uc.Close()
		if errors.Is(err, pion.ErrAssociationClosedBeforeConn) {
			// Usually an ICMP port unreachable read back on the connected socket.
			return nil, fmt.Errorf("sctp: dial %s (UDP %s): association closed during handshake (peer unreachable?): %w", ap, udpRemote, err)
		}
		return nil, fmt.Errorf("sctp: dial %s (UDP %s): %w", ap, udpRemote, err)
	}
	local := &Addr{AddrPort: netip.AddrPortFrom(udpLocal.Addr(), udpLocal.Port()), UDP: udpLocal}
	remote := &Addr{AddrPort: ap, UDP: udpRemote}
	return newAssocConn(assoc, in, local, remote, cfg), nil
}

// tapConn shows every datagram of a dialed association to a PacketTap.
type tapConn struct {
	*net.UDPConn
	tap           PacketTap
	local, remote netip.AddrPort
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.UDPConn.Read(b)
	if n > 0 {
		c.tap.Packet(false, c.local, c.remote, b[:n])
	}
	return n, err
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.tap.Packet(true, c.local, c.remote, b)
	return c.UDPConn.Write(b)
}
