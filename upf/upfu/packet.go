package upfu

import (
	"encoding/binary"
	"net/netip"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
)

// Headroom is the space a driver leaves before each received packet so
// the pipeline can prepend a GTP-U header in place (downlink encap, N9
// re-encap) without copying.
const Headroom = gtpu.GPDUHeaderLen

// Port says where a packet goes.
type Port int

// PortN3 is the GTP-U socket; N6 ports are 0..len(NetworkInstances)-1.
const PortN3 Port = -1

// Packet is one packet of a batch. Its bytes are Buf[Off:Off+Len]; the
// Off bytes before them are headroom.
type Packet struct {
	Buf      []byte
	Off, Len int
	// Peer is the remote GTP-U endpoint: the source of an N3 packet on
	// input, the destination of an N3 packet on output.
	Peer netip.AddrPort
	// Port is where an output packet goes (outputs only).
	Port Port
}

// Data returns the packet's bytes.
func (p *Packet) Data() []byte { return p.Buf[p.Off : p.Off+p.Len] }

// innerIP fills the classifier header fields of an IP packet and returns
// its length from the IP header (trailing bytes are link padding), and
// for IPv4 its source and destination addresses.
func innerIP(b []byte, h *classify.Header) (n int, src, dst uint32, ok bool) {
	if len(b) < 1 {
		return 0, 0, 0, false
	}
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return 0, 0, 0, false
		}
		ihl := int(b[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(b[2:4]))
		if ihl < 20 || total < ihl || total > len(b) {
			return 0, 0, 0, false
		}
		src = binary.BigEndian.Uint32(b[12:16])
		dst = binary.BigEndian.Uint32(b[16:20])
		h.SrcIP = classify.AddrFrom4(src)
		h.DstIP = classify.AddrFrom4(dst)
		h.ToS = b[1]
		h.Proto = b[9]
		h.SrcPort, h.DstPort = 0, 0
		// Only the first fragment carries the transport header.
		if binary.BigEndian.Uint16(b[6:8])&0x1fff == 0 {
			transportPorts(b[ihl:total], h)
		}
		return total, src, dst, true
	case 6:
		if len(b) < 40 {
			return 0, 0, 0, false
		}
		total := 40 + int(binary.BigEndian.Uint16(b[4:6]))
		if total > len(b) {
			return 0, 0, 0, false
		}
		h.SrcIP = classify.AddrFrom16([16]byte(b[8:24]))
		h.DstIP = classify.AddrFrom16([16]byte(b[24:40]))
		h.ToS = byte(binary.BigEndian.Uint16(b[0:2]) >> 4)
		h.FlowLabel = binary.BigEndian.Uint32(b[0:4]) & 0xfffff
		h.Proto = b[6] // extension headers are not walked
		h.SrcPort, h.DstPort = 0, 0
		transportPorts(b[40:total], h)
		return total, 0, 0, true
	}
	return 0, 0, 0, false
}

func transportPorts(t []byte, h *classify.Header) {
	switch h.Proto {
	case 6, 17, 132: // TCP, UDP, SCTP
		if len(t) >= 4 {
			h.SrcPort = binary.BigEndian.Uint16(t[0:2])
			h.DstPort = binary.BigEndian.Uint16(t[2:4])
		}
	}
}
