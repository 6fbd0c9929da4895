package sctp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// This file is the first decoder a remote host reaches on the encapsulation
// port: it checks the framing of an SCTP packet taken out of a UDP datagram
// before the listener decides which association (if any) gets it.

const (
	commonHeaderLen = 12 // RFC 9260 §3.1
	chunkHeaderLen  = 4  // RFC 9260 §3.2
	initFixedLen    = 16 // INIT value before parameters, RFC 9260 §3.3.2
)

// Chunk types used by the listener (RFC 9260 §3.2).
const (
	chunkInit             = 1
	chunkAbort            = 6
	chunkShutdownAck      = 8
	chunkError            = 9
	chunkCookieEcho       = 10
	chunkShutdownComplete = 14
)

// flagT is the T bit of ABORT and SHUTDOWN COMPLETE (RFC 9260 §3.3.7).
const flagT = 0x01

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	errShortPacket = errors.New("sctp: packet shorter than common header and one chunk")
	errChecksum    = errors.New("sctp: CRC32c mismatch")
	errChunkLength = errors.New("sctp: bad chunk length")
	errInitBundled = errors.New("sctp: INIT bundled with other chunks")
	errInitTag     = errors.New("sctp: INIT with nonzero verification tag or zero initiate tag")
)

// packetInfo is what the listener needs to know about a packet.
type packetInfo struct {
	srcPort, dstPort uint16
	vtag             uint32
	firstChunk       uint8
	initiateTag      uint32 // of an INIT packet
	hasAbort         bool
	hasShutdownAck   bool
	hasShutdownComp  bool
	hasError         bool
	chunks           int
}

// isInit reports a well-formed INIT packet (RFC 9260 §8.4 item 3).
func (p packetInfo) isInit() bool { return p.firstChunk == chunkInit }

// inspectPacket validates the common header, the CRC32c and the chunk framing
// of an SCTP packet (RFC 9260 §3, §6.8). It never panics and does not retain b.
func inspectPacket(b []byte) (packetInfo, error) {
	var p packetInfo
	if len(b) < commonHeaderLen+chunkHeaderLen {
		return p, errShortPacket
	}
	if want, got := binary.LittleEndian.Uint32(b[8:12]), packetChecksum(b); want != got {
		return p, errChecksum
	}
	p.srcPort = binary.BigEndian.Uint16(b[0:2])
	p.dstPort = binary.BigEndian.Uint16(b[2:4])
	p.vtag = binary.BigEndian.Uint32(b[4:8])
	if p.srcPort == 0 || p.dstPort == 0 {
		return p, fmt.Errorf("sctp: zero port %d -> %d", p.srcPort, p.dstPort)
	}
	rest := b[commonHeaderLen:]
	for len(rest) > 0 {
		if len(rest) < chunkHeaderLen {
			return p, fmt.Errorf("%w: %d trailing bytes", errChunkLength, len(rest))
		}
		typ := rest[0]
		n := int(binary.BigEndian.Uint16(rest[2:4]))
		if n < chunkHeaderLen || n > len(rest) {
			return p, fmt.Errorf("%w: chunk type %d length %d, %d bytes left", errChunkLength, typ, n, len(rest))
		}
		if p.chunks == 0 {
			p.firstChunk = typ
			if typ == chunkInit {
				if n < chunkHeaderLen+initFixedLen {
					return p, fmt.Errorf("%w: INIT length %d", errChunkLength, n)
				}
				p.initiateTag = binary.BigEndian.Uint32(rest[4:8])
				if p.vtag != 0 || p.initiateTag == 0 {
					return p, errInitTag
				}
			}
		} else if typ == chunkInit {
			return p, errInitBundled
		}
		switch typ {
		case chunkAbort:
			p.hasAbort = true
		case chunkShutdownAck:
			p.hasShutdownAck = true
		case chunkShutdownComplete:
			p.hasShutdownComp = true
		case chunkError:
			p.hasError = true
		}
		p.chunks++
		padded := (n + 3) &^ 3
		if padded > len(rest) {
			padded = len(rest) // the last chunk's padding may be missing
		}
		rest = rest[padded:]
	}
	if p.firstChunk == chunkInit && p.chunks != 1 {
		return p, errInitBundled
	}
	return p, nil
}

// packetChecksum computes the CRC32c of b with the checksum field taken as
// zero (RFC 9260 Appendix A). The result is stored little-endian on the wire,
// as the reference implementation does.
func packetChecksum(b []byte) uint32 {
	var zero [4]byte
	sum := crc32.Update(0, castagnoli, b[0:8])
	sum = crc32.Update(sum, castagnoli, zero[:])
	return crc32.Update(sum, castagnoli, b[12:])
}

// ootbReply builds the answer to an out-of-the-blue packet (one that matches
// no association) per RFC 9260 §8.4, or nil when it must be discarded.
// reject asks for an ABORT to an INIT that cannot be served.
func ootbReply(p packetInfo, reject bool) []byte {
	switch {
	case p.hasAbort, p.hasShutdownComp, p.hasError:
		return nil // §8.4 items 2, 6, 7
	case p.isInit():
		if !reject {
			return nil
		}
		// §8.4 item 3: tag is the INIT's Initiate Tag, T bit clear.
		return controlPacket(p, p.initiateTag, chunkAbort, 0)
	case p.hasShutdownAck:
		// §8.4 item 5: SHUTDOWN COMPLETE with the T bit, packet's own tag.
		return controlPacket(p, p.vtag, chunkShutdownComplete, flagT)
	default:
		// §8.4 item 8 (also a COOKIE ECHO whose state we no longer have).
		return controlPacket(p, p.vtag, chunkAbort, flagT)
	}
}

// controlPacket returns a packet with one empty chunk, addressed back to the
// sender of p.
func controlPacket(p packetInfo, vtag uint32, typ, flags uint8) []byte {
	b := make([]byte, commonHeaderLen+chunkHeaderLen)
	binary.BigEndian.PutUint16(b[0:2], p.dstPort)
	binary.BigEndian.PutUint16(b[2:4], p.srcPort)
	binary.BigEndian.PutUint32(b[4:8], vtag)
	b[12], b[13] = typ, flags
	binary.BigEndian.PutUint16(b[14:16], chunkHeaderLen)
	binary.LittleEndian.PutUint32(b[8:12], packetChecksum(b))
	return b
}
