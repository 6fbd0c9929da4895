// Package gtpu encodes and decodes GTP-U (TS 29.281) headers, with the
// PDU Session Container extension header of N3/N9 (TS 38.415), and the
// path-management and tunnel-management messages a UPF exchanges with a
// gNB: Echo Request/Response, Error Indication and End Marker.
//
// Parse and the G-PDU header writers allocate nothing: they are the
// per-packet path of the UPF.
package gtpu

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Port is the GTP-U UDP port (TS 29.281 §4.4.2.3).
const Port = 2152

// Message types (TS 29.281 §6.1).
const (
	TypeEchoRequest                     uint8 = 1
	TypeEchoResponse                    uint8 = 2
	TypeErrorIndication                 uint8 = 26
	TypeSupportedExtensionHeadersNotice uint8 = 31
	TypeTunnelStatus                    uint8 = 253
	TypeEndMarker                       uint8 = 254
	TypeGPDU                            uint8 = 255
)

// Extension header types (TS 29.281 §5.2.1, Figure 5.2.1-3).
const (
	ExtNone                uint8 = 0x00
	ExtUDPPort             uint8 = 0x40
	ExtRANContainer        uint8 = 0x81
	ExtLongPDCPPDUNumber   uint8 = 0x82
	ExtNRRANContainer      uint8 = 0x84
	ExtPDUSessionContainer uint8 = 0x85
	ExtPDCPPDUNumber       uint8 = 0xC0
)

// PDU types of the PDU Session Container (TS 38.415 §5.5.3.1).
const (
	PDUTypeDL uint8 = 0 // DL PDU SESSION INFORMATION
	PDUTypeUL uint8 = 1 // UL PDU SESSION INFORMATION
)

// Flags of the first octet (TS 29.281 §5.1).
const (
	flagVersion1 = 1 << 5
	flagPT       = 1 << 4
	flagE        = 1 << 2
	flagS        = 1 << 1
	flagPN       = 1 << 0
)

// Header lengths.
const (
	// MandatoryLen is the fixed part of every GTP-U header.
	MandatoryLen = 8
	// GPDUHeaderLen is the header AppendGPDU and PutGPDUHeader write:
	// 8 mandatory + 4 optional (seq, N-PDU, next type) + 4 PDU Session
	// Container.
	GPDUHeaderLen = 16
)

// Errors returned by Parse.
var (
	ErrTooShort             = errors.New("gtpu: message too short")
	ErrVersion              = errors.New("gtpu: not GTPv1 (version 1, PT 1)")
	ErrLength               = errors.New("gtpu: length field exceeds the datagram")
	ErrExtension            = errors.New("gtpu: malformed extension header")
	ErrUnsupportedExtension = errors.New("gtpu: unsupported extension header that requires comprehension")
	ErrBadIE                = errors.New("gtpu: malformed information element")
	ErrMissingIE            = errors.New("gtpu: mandatory information element missing")
)

// Header is a parsed GTP-U header.
type Header struct {
	Type   uint8
	TEID   uint32
	Seq    uint16
	HasSeq bool
	// QFI and PDUType come from the PDU Session Container (TS 38.415
	// §5.5.2) when HasPDUSessionContainer is set.
	QFI                    uint8
	HasPDUSessionContainer bool
	PDUType                uint8
	// UDPPort is the UDP Port extension header's value (§5.2.2.1), 0 if absent.
	UDPPort uint16
	// PayloadOffset is where the T-PDU (G-PDU) or the information
	// elements (other messages) start.
	PayloadOffset int
	// Length is the whole message length: 8 + the header's length field.
	// Bytes after it in the datagram are padding and ignored.
	Length int
}

// Payload returns the message's payload within b (the slice Parse saw).
func (h *Header) Payload(b []byte) []byte { return b[h.PayloadOffset:h.Length] }

// Parse decodes the GTP-U header at the start of b into h. It validates the
// length field and the extension header chain, and never allocates.
func Parse(b []byte, h *Header) error {
	if len(b) < MandatoryLen {
		return ErrTooShort
	}
	flags := b[0]
	if flags&0xf0 != flagVersion1|flagPT {
		return ErrVersion
	}
	*h = Header{
		Type:   b[1],
		TEID:   binary.BigEndian.Uint32(b[4:8]),
		Length: MandatoryLen + int(binary.BigEndian.Uint16(b[2:4])),
	}
	if h.Length > len(b) {
		return ErrLength
	}
	off := MandatoryLen
	if flags&(flagE|flagS|flagPN) == 0 {
		h.PayloadOffset = off
		return nil
	}
	// The optional 4 octets are present if any of E, S, PN is set; their
	// fields are meaningful only under their own flag (§5.1).
	if h.Length < off+4 {
		return ErrTooShort
	}
	if flags&flagS != 0 {
		h.Seq = binary.BigEndian.Uint16(b[8:10])
		h.HasSeq = true
	}
	next := b[11]
	off += 4
	if flags&flagE == 0 {
		next = ExtNone
	}
	for next != ExtNone {
		if off >= h.Length {
			return ErrExtension
		}
		n := int(b[off]) * 4 // length in 4-octet units, including itself and the next-type octet
		if n == 0 || off+n > h.Length {
			return ErrExtension
		}
		content := b[off+1 : off+n-1]
		switch next {
		case ExtPDUSessionContainer:
			// TS 38.415 §5.5.2.1/§5.5.2.2: PDU type in the high nibble of
			// the first octet; QFI in the low six bits of the second.
			if len(content) < 2 {
				return ErrExtension
			}
			h.HasPDUSessionContainer = true
			h.PDUType = content[0] >> 4
			h.QFI = content[1] & 0x3f
		case ExtUDPPort:
			if len(content) < 2 {
				return ErrExtension
			}
			h.UDPPort = binary.BigEndian.Uint16(content)
		default:
			// §5.2.1: the two high bits say whether the endpoint must
			// understand the header; unknown optional ones are skipped.
			if next&0x80 != 0 && !known(next) {
				return ErrUnsupportedExtension
			}
		}
		next = b[off+n-1]
		off += n
	}
	if off > h.Length {
		return ErrExtension
	}
	h.PayloadOffset = off
	return nil
}

// known lists comprehension-required extension headers that Parse can
// skip because their content does not change how a UPF handles the packet.
func known(t uint8) bool {
	switch t {
	case ExtRANContainer, ExtLongPDCPPDUNumber, ExtNRRANContainer, ExtPDCPPDUNumber:
		return true
	}
	return false
}

// PutGPDUHeader writes a G-PDU header with a PDU Session Container for a
// payload of payloadLen bytes into b[:GPDUHeaderLen] and returns
// GPDUHeaderLen. dl selects the DL PDU SESSION INFORMATION frame (PDU type
// 0, TS 38.415 §5.5.2.1), else UL (PDU type 1, §5.5.2.2). b must hold
// GPDUHeaderLen bytes.
func PutGPDUHeader(b []byte, teid uint32, qfi uint8, dl bool, payloadLen int) int {
	_ = b[GPDUHeaderLen-1]
	b[0] = flagVersion1 | flagPT | flagE
	b[1] = TypeGPDU
	binary.BigEndian.PutUint16(b[2:4], uint16(payloadLen+GPDUHeaderLen-MandatoryLen))
	binary.BigEndian.PutUint32(b[4:8], teid)
	b[8], b[9], b[10] = 0, 0, 0 // sequence number and N-PDU number: not used (E only)
	b[11] = ExtPDUSessionContainer
	b[12] = 1 // 4 octets
	if dl {
		b[13] = PDUTypeDL << 4
	} else {
		b[13] = PDUTypeUL << 4
	}
	b[14] = qfi & 0x3f
	b[15] = ExtNone
	return GPDUHeaderLen
}

// AppendGPDU appends a G-PDU carrying payload, with a PDU Session Container
// (QFI; DL or UL PDU type), to dst.
func AppendGPDU(dst []byte, teid uint32, qfi uint8, dl bool, payload []byte) []byte {
	var h [GPDUHeaderLen]byte
	PutGPDUHeader(h[:], teid, qfi, dl, len(payload))
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// appendHeaderS appends a header with the S flag (seq) and the given type
// and TEID, and returns dst and the offset of the length field; the caller
// appends IEs and fixes the length with fixLength.
func appendHeaderS(dst []byte, typ uint8, teid uint32, seq uint16, ext uint8) ([]byte, int) {
	flags := byte(flagVersion1 | flagPT | flagS)
	if ext != ExtNone {
		flags |= flagE
	}
	start := len(dst)
	dst = append(dst, flags, typ, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, teid)
	dst = binary.BigEndian.AppendUint16(dst, seq)
	dst = append(dst, 0, ext)
	return dst, start
}

func fixLength(b []byte, start int) {
	binary.BigEndian.PutUint16(b[start+2:start+4], uint16(len(b)-start-MandatoryLen))
}

// Information element types (TS 29.281 §8).
const (
	ieRecovery    = 14  // TV, 1 octet
	ieTEIDDataI   = 16  // TV, 4 octets
	iePeerAddress = 133 // TLV
)

// AppendEchoRequest appends an Echo Request (§7.2.1) with sequence seq.
func AppendEchoRequest(dst []byte, seq uint16) []byte {
	dst, start := appendHeaderS(dst, TypeEchoRequest, 0, seq, ExtNone)
	fixLength(dst, start)
	return dst
}

// AppendEchoResponse appends an Echo Response (§7.2.2) to the request with
// sequence seq. The Recovery IE is mandatory and its restart counter is
// zero for GTP-U (§8.2).
func AppendEchoResponse(dst []byte, seq uint16) []byte {
	dst, start := appendHeaderS(dst, TypeEchoResponse, 0, seq, ExtNone)
	dst = append(dst, ieRecovery, 0)
	fixLength(dst, start)
	return dst
}

// EndMarkerLen is the length of the End Marker AppendEndMarker writes: the
// mandatory header alone.
const EndMarkerLen = MandatoryLen

// AppendEndMarker appends an End Marker (§7.3.2) for the tunnel teid: the
// mandatory header with message type 254 and no information elements (the
// optional Private Extension is not sent). A UPF sends it on the old path
// after the last G-PDU there when a downlink tunnel moves to another
// F-TEID (TS 29.244 §8.2.31 SNDEM), so that the target NG-RAN node knows
// the forwarded data has ended. No sequence number: §5.1 requires the S
// flag only for Echo, Error Indication and Supported Extension Headers
// Notification. It allocates only when dst must grow.
func AppendEndMarker(dst []byte, teid uint32) []byte {
	dst = append(dst, flagVersion1|flagPT, TypeEndMarker, 0, 0)
	return binary.BigEndian.AppendUint32(dst, teid)
}

// ParseEndMarker returns the TEID of an End Marker (§7.3.2). Its
// information elements (at most a Private Extension) are checked for
// form and ignored.
func ParseEndMarker(b []byte) (uint32, error) {
	var h Header
	if err := Parse(b, &h); err != nil {
		return 0, err
	}
	if h.Type != TypeEndMarker {
		return 0, fmt.Errorf("gtpu: message type %d is not an End Marker", h.Type)
	}
	if h.TEID == 0 {
		// The End Marker names the tunnel it closes; TEID 0 is signalling.
		return 0, fmt.Errorf("%w: End Marker with TEID 0", ErrBadIE)
	}
	if err := walkIEs(h.Payload(b), func(uint8, []byte) {}); err != nil {
		return 0, err
	}
	return h.TEID, nil
}

// ErrorIndication is the content of an Error Indication (§7.3.1).
type ErrorIndication struct {
	Seq uint16
	// TEID is TEID Data I: the TEID of the G-PDU that had no context.
	TEID uint32
	// PeerAddr is GTP-U Peer Address: the address of the node that sends
	// the Error Indication (the destination of the triggering G-PDU); 4 or
	// 16 octets.
	PeerAddr []byte
	// UDPPort is the UDP source port of the triggering G-PDU, carried in a
	// UDP Port extension header (§5.2.2.1); 0 = absent.
	UDPPort uint16
}

// AppendErrorIndication appends an Error Indication (TEID 0, S flag set,
// TEID Data I and GTP-U Peer Address IEs, optional UDP Port extension
// header). It allocates only when dst must grow.
func AppendErrorIndication(dst []byte, e *ErrorIndication) []byte {
	ext := ExtNone
	if e.UDPPort != 0 {
		ext = ExtUDPPort
	}
	dst, start := appendHeaderS(dst, TypeErrorIndication, 0, e.Seq, ext)
	if ext == ExtUDPPort {
		dst = append(dst, 1, byte(e.UDPPort>>8), byte(e.UDPPort), ExtNone)
	}
	dst = append(dst, ieTEIDDataI)
	dst = binary.BigEndian.AppendUint32(dst, e.TEID)
	dst = append(dst, iePeerAddress)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.PeerAddr)))
	dst = append(dst, e.PeerAddr...)
	fixLength(dst, start)
	return dst
}

// ParseErrorIndication decodes an Error Indication; PeerAddr aliases b.
func ParseErrorIndication(b []byte) (*ErrorIndication, error) {
	e := &ErrorIndication{}
	if err := e.Decode(b); err != nil {
		return nil, err
	}
	return e, nil
}

// Decode decodes the Error Indication in b into e (§7.3.1: TEID Data I
// and GTP-U Peer Address are mandatory); PeerAddr aliases b. It does not
// allocate, so that a UPF can handle Error Indications on its packet path.
func (e *ErrorIndication) Decode(b []byte) error {
	var h Header
	if err := Parse(b, &h); err != nil {
		return err
	}
	if h.Type != TypeErrorIndication {
		return fmt.Errorf("gtpu: message type %d is not an Error Indication", h.Type)
	}
	*e = ErrorIndication{Seq: h.Seq, UDPPort: h.UDPPort}
	var haveTEID, havePeer bool
	err := walkIEs(h.Payload(b), func(t uint8, v []byte) {
		switch t {
		case ieTEIDDataI:
			e.TEID = binary.BigEndian.Uint32(v)
			haveTEID = true
		case iePeerAddress:
			e.PeerAddr = v
			havePeer = true
		}
	})
	if err != nil {
		return err
	}
	if !haveTEID || !havePeer {
		return ErrMissingIE
	}
	if len(e.PeerAddr) != 4 && len(e.PeerAddr) != 16 {
		return errBadPeerAddress
	}
	return nil
}

// errBadPeerAddress: a GTP-U Peer Address IE (§8.4) is 4 or 16 octets.
var errBadPeerAddress = fmt.Errorf("%w: GTP-U Peer Address of neither 4 nor 16 octets", ErrBadIE)

// EchoRequestLen is the length of the Echo Request AppendEchoRequest
// writes: the header with the sequence number, no IE.
const EchoRequestLen = MandatoryLen + 4

// ParseRecovery returns the Recovery IE of an Echo Response payload.
func ParseRecovery(payload []byte) (uint8, error) {
	var rec uint8
	var ok bool
	err := walkIEs(payload, func(t uint8, v []byte) {
		if t == ieRecovery {
			rec, ok = v[0], true
		}
	})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrMissingIE
	}
	return rec, nil
}

// walkIEs iterates the IEs of a GTP-U message: TV for types < 128 (fixed
// lengths from §8), TLV with a 2-octet length above (§8.1).
func walkIEs(b []byte, fn func(t uint8, v []byte)) error {
	for len(b) > 0 {
		t := b[0]
		var n, hdr int
		switch {
		case t == ieRecovery:
			n, hdr = 1, 1
		case t == ieTEIDDataI:
			n, hdr = 4, 1
		case t >= 128:
			if len(b) < 3 {
				return ErrBadIE
			}
			n, hdr = int(binary.BigEndian.Uint16(b[1:3])), 3
		default:
			return fmt.Errorf("%w: unknown TV type %d", ErrBadIE, t)
		}
		if len(b) < hdr+n {
			return ErrBadIE
		}
		fn(t, b[hdr:hdr+n])
		b = b[hdr+n:]
	}
	return nil
}
