// Package ipv4pkt builds and parses IPv4 packets in memory: ICMP echo and
// UDP with correct header, ICMP and UDP checksums (RFC 791, 792, 768, 1071).
// The simulator's traffic generators, the user-plane benchmark and the UPF's
// tests build their packets with it.
package ipv4pkt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// IP protocol numbers used here.
const (
	ProtoICMP = 1
	ProtoUDP  = 17
)

// ICMP types (RFC 792).
const (
	ICMPEchoReply   = 0
	ICMPEchoRequest = 8
)

// HeaderLen is the length of an IPv4 header without options.
const HeaderLen = 20

// ErrNotIPv4 is returned for packets that are not well-formed IPv4.
var ErrNotIPv4 = errors.New("ipv4pkt: not an IPv4 packet")

// IPv4 is the part of an IPv4 header the simulator looks at.
type IPv4 struct {
	Src, Dst netip.Addr
	Protocol uint8
	TTL      uint8
	// Payload is the transport part (after the header, up to Total Length).
	Payload []byte
}

// ParseIPv4 reads the header of b without copying: Payload aliases b.
func ParseIPv4(b []byte) (IPv4, error) {
	if len(b) < HeaderLen || b[0]>>4 != 4 {
		return IPv4{}, ErrNotIPv4
	}
	ihl := int(b[0]&0x0F) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < HeaderLen || total < ihl || total > len(b) {
		return IPv4{}, fmt.Errorf("%w: header length %d, total length %d, have %d bytes", ErrNotIPv4, ihl, total, len(b))
	}
	return IPv4{
		Src:      netip.AddrFrom4([4]byte(b[12:16])),
		Dst:      netip.AddrFrom4([4]byte(b[16:20])),
		Protocol: b[9],
		TTL:      b[8],
		Payload:  b[ihl:total],
	}, nil
}

// appendIPv4Header appends a 20-byte IPv4 header (DF set, TTL 64) for a
// payload of n bytes.
func appendIPv4Header(dst []byte, src, to netip.Addr, proto uint8, id uint16, n int) []byte {
	start := len(dst)
	s, d := src.As4(), to.As4()
	dst = append(dst,
		0x45, 0, byte((HeaderLen+n)>>8), byte(HeaderLen+n),
		byte(id>>8), byte(id), 0x40, 0, // DF
		64, proto, 0, 0,
		s[0], s[1], s[2], s[3],
		d[0], d[1], d[2], d[3])
	binary.BigEndian.PutUint16(dst[start+10:], Checksum(dst[start:start+HeaderLen], 0))
	return dst
}

// AppendICMPEcho appends an IPv4 ICMP echo request (RFC 792) from src to
// to with identifier id, sequence seq and payload.
func AppendICMPEcho(dst []byte, src, to netip.Addr, id, seq uint16, payload []byte) []byte {
	return appendICMPEcho(dst, ICMPEchoRequest, src, to, id, seq, payload)
}

// AppendICMPEchoReply appends an IPv4 ICMP echo reply: what a data network
// host answers; for tests and DN stand-ins.
func AppendICMPEchoReply(dst []byte, src, to netip.Addr, id, seq uint16, payload []byte) []byte {
	return appendICMPEcho(dst, ICMPEchoReply, src, to, id, seq, payload)
}

func appendICMPEcho(dst []byte, typ uint8, src, to netip.Addr, id, seq uint16, payload []byte) []byte {
	n := 8 + len(payload)
	dst = appendIPv4Header(dst, src, to, ProtoICMP, seq, n)
	start := len(dst)
	dst = append(dst, typ, 0, 0, 0, byte(id>>8), byte(id), byte(seq>>8), byte(seq))
	dst = append(dst, payload...)
	binary.BigEndian.PutUint16(dst[start+2:], Checksum(dst[start:], 0))
	return dst
}

// ICMPEcho is an ICMP echo request or reply.
type ICMPEcho struct {
	Type    uint8
	ID, Seq uint16
	Payload []byte // aliases the packet
}

// ParseICMPEcho reads an echo request or reply from an IPv4 packet's
// transport payload (IPv4.Payload with Protocol ProtoICMP).
func ParseICMPEcho(b []byte) (ICMPEcho, bool) {
	if len(b) < 8 || (b[0] != ICMPEchoRequest && b[0] != ICMPEchoReply) || b[1] != 0 {
		return ICMPEcho{}, false
	}
	return ICMPEcho{
		Type:    b[0],
		ID:      binary.BigEndian.Uint16(b[4:6]),
		Seq:     binary.BigEndian.Uint16(b[6:8]),
		Payload: b[8:],
	}, true
}

// AppendUDP appends an IPv4 UDP datagram (RFC 768) with its checksum.
func AppendUDP(dst []byte, src, to netip.Addr, sport, dport uint16, payload []byte) []byte {
	n := 8 + len(payload)
	dst = appendIPv4Header(dst, src, to, ProtoUDP, 0, n)
	start := len(dst)
	dst = append(dst, byte(sport>>8), byte(sport), byte(dport>>8), byte(dport), byte(n>>8), byte(n), 0, 0)
	dst = append(dst, payload...)
	// Pseudo-header: source, destination, zero, protocol, UDP length.
	s, d := src.As4(), to.As4()
	var pseudo uint32
	pseudo += uint32(s[0])<<8 | uint32(s[1])
	pseudo += uint32(s[2])<<8 | uint32(s[3])
	pseudo += uint32(d[0])<<8 | uint32(d[1])
	pseudo += uint32(d[2])<<8 | uint32(d[3])
	pseudo += ProtoUDP + uint32(n)
	c := Checksum(dst[start:], pseudo)
	if c == 0 {
		c = 0xFFFF // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(dst[start+6:], c)
	return dst
}

// UDP is a UDP header and its payload.
type UDP struct {
	SrcPort, DstPort uint16
	Payload          []byte // aliases the packet
}

// ParseUDP reads a UDP datagram from an IPv4 transport payload.
func ParseUDP(b []byte) (UDP, bool) {
	if len(b) < 8 {
		return UDP{}, false
	}
	n := int(binary.BigEndian.Uint16(b[4:6]))
	if n < 8 || n > len(b) {
		return UDP{}, false
	}
	return UDP{
		SrcPort: binary.BigEndian.Uint16(b[0:2]),
		DstPort: binary.BigEndian.Uint16(b[2:4]),
		Payload: b[8:n],
	}, true
}

// checksum is the Internet checksum (RFC 1071) of b plus an initial sum.
func Checksum(b []byte, sum uint32) uint16 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// ValidChecksum reports whether the IPv4 header checksum of pkt is right.
func ValidChecksum(pkt []byte) bool {
	if len(pkt) < HeaderLen {
		return false
	}
	ihl := int(pkt[0]&0x0F) * 4
	if ihl < HeaderLen || ihl > len(pkt) {
		return false
	}
	return Checksum(pkt[:ihl], 0) == 0
}
