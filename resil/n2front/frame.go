package n2front

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tern5g/tern/sctp"
)

// The unit link carries one frame per SOCK_SEQPACKET record, so a frame
// needs no length of its own. Every frame starts with the version and the
// type; integers are big-endian.
//
//	hello    unit→front  epoch u64
//	welcome  front→unit  epoch u64
//	refuse   front→unit  reason u8, current epoch u64
//	open     front→unit  assoc u32, flags u8 (bit 0 resume), outbound streams u16,
//	                     4 addresses (local, local UDP, remote, remote UDP: len u8 0/4/16, IP, port u16),
//	                     NG Setup Request (len u32, bytes), RAN Configuration Updates (count u16, each len u32, bytes)
//	uplink   front→unit  assoc u32, stamp u64, stream u16, ppid u32, data (the rest, not empty)
//	closed   front→unit  assoc u32
//	opened   front→unit  (nothing): every association the front holds has had its open
//	ack      unit→front  stamps (the rest: 1 or more u64)
//	downlink unit→front  assoc u32, stream u16, ppid u32, data (the rest, not empty)
//	close    unit→front  assoc u32
//
// A version other than linkVersion, an unknown type, a frame of a type the
// receiver does not take, a wrong length or an empty message is malformed:
// the receiver counts it and ends the link.

// linkVersion is the version of the frame layout above (2: the opened
// marker).
const linkVersion = 2

// Frame types.
const (
	frameHello    = 1
	frameWelcome  = 2
	frameRefuse   = 3
	frameOpen     = 4
	frameUplink   = 5
	frameClosed   = 6
	frameAck      = 7
	frameDownlink = 8
	frameClose    = 9
	frameOpened   = 10
)

// Refusal reasons.
const (
	refuseStaleEpoch = 1 // epoch not above the highest the front has seen
	refuseBadHello   = 2 // first frame not a well-formed hello
)

const (
	frameHeaderLen = 2
	// maxMessage bounds one NGAP message on the link: SCTP user messages
	// of N2 are far smaller (pion's default maximum is 64 KiB), and a
	// record this size still fits the default socket buffer.
	maxMessage = 128 << 10
	// maxFrame is the read buffer: the largest frame is an open with an NG
	// Setup Request and RAN Configuration Updates (see maxConfigUpdates).
	maxFrame = 2*maxMessage + 1024
	// maxConfigUpdates bounds the RAN Configuration Updates an open
	// carries: the front keeps the last ones (see assoc.updates).
	maxConfigUpdates = 16
	maxAckBatch      = 1024
)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("n2front: malformed frame")

// frame is one decoded frame. data, setup and updates alias the buffer it
// was decoded from.
type frame struct {
	typ     uint8
	epoch   uint64
	reason  uint8
	assoc   uint32
	resume  bool
	streams uint16
	local   sctp.Addr
	remote  sctp.Addr
	setup   []byte
	updates [][]byte
	stamp   uint64
	stream  uint16
	ppid    uint32
	data    []byte
	stamps  []uint64
}

func header(b []byte, typ uint8) []byte { return append(b, linkVersion, typ) }

func appendHello(b []byte, epoch uint64) []byte {
	return binary.BigEndian.AppendUint64(header(b, frameHello), epoch)
}

func appendWelcome(b []byte, epoch uint64) []byte {
	return binary.BigEndian.AppendUint64(header(b, frameWelcome), epoch)
}

func appendRefuse(b []byte, reason uint8, epoch uint64) []byte {
	return binary.BigEndian.AppendUint64(append(header(b, frameRefuse), reason), epoch)
}

func appendOpen(b []byte, f *frame) []byte {
	b = binary.BigEndian.AppendUint32(header(b, frameOpen), f.assoc)
	var flags uint8
	if f.resume {
		flags |= 1
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint16(b, f.streams)
	for _, ap := range [...]netip.AddrPort{f.local.AddrPort, f.local.UDP, f.remote.AddrPort, f.remote.UDP} {
		b = appendAddrPort(b, ap)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.setup)))
	b = append(b, f.setup...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(f.updates)))
	for _, u := range f.updates {
		b = binary.BigEndian.AppendUint32(b, uint32(len(u)))
		b = append(b, u...)
	}
	return b
}

func appendAddrPort(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().Unmap()
	switch {
	case a.Is4():
		v := a.As4()
		b = append(append(b, 4), v[:]...)
	case a.Is6():
		v := a.As16() // the zone does not travel
		b = append(append(b, 16), v[:]...)
	default:
		return append(b, 0)
	}
	return binary.BigEndian.AppendUint16(b, ap.Port())
}

func appendUplink(b []byte, assoc uint32, stamp uint64, stream uint16, ppid uint32, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(header(b, frameUplink), assoc)
	b = binary.BigEndian.AppendUint64(b, stamp)
	b = binary.BigEndian.AppendUint16(b, stream)
	b = binary.BigEndian.AppendUint32(b, ppid)
	return append(b, data...)
}

func appendAssoc(b []byte, typ uint8, assoc uint32) []byte {
	return binary.BigEndian.AppendUint32(header(b, typ), assoc)
}

func appendOpened(b []byte) []byte { return header(b, frameOpened) }

func appendAck(b []byte, stamps []uint64) []byte {
	b = header(b, frameAck)
	for _, s := range stamps {
		b = binary.BigEndian.AppendUint64(b, s)
	}
	return b
}

func appendDownlink(b []byte, assoc uint32, stream uint16, ppid uint32, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(header(b, frameDownlink), assoc)
	b = binary.BigEndian.AppendUint16(b, stream)
	b = binary.BigEndian.AppendUint32(b, ppid)
	return append(b, data...)
}

// reader walks a frame's body; the first short read sets err and every
// later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("%w: %d bytes left, %d needed", errMalformed, len(r.b), n)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *reader) addrPort() netip.AddrPort {
	n := r.u8()
	var a netip.Addr
	switch n {
	case 0:
		return netip.AddrPort{}
	case 4:
		if v := r.take(4); v != nil {
			a = netip.AddrFrom4([4]byte(v))
		}
	case 16:
		if v := r.take(16); v != nil {
			a = netip.AddrFrom16([16]byte(v))
		}
	default:
		if r.err == nil {
			r.err = fmt.Errorf("%w: address length %d", errMalformed, n)
		}
	}
	return netip.AddrPortFrom(a, r.u16())
}

// message reads the rest as one SCTP user message: not empty, not above
// maxMessage.
func (r *reader) message() []byte {
	if r.err == nil && (len(r.b) == 0 || len(r.b) > maxMessage) {
		r.err = fmt.Errorf("%w: message of %d bytes", errMalformed, len(r.b))
	}
	return r.take(len(r.b))
}

// sized reads a u32 length and that many bytes, at most maxMessage.
func (r *reader) sized() []byte {
	n := r.u32()
	if r.err == nil && n > maxMessage {
		r.err = fmt.Errorf("%w: message of %d bytes", errMalformed, n)
	}
	return r.take(int(n))
}

func (r *reader) end() {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
}

// decodeFrame decodes b into f, reusing f.stamps and f.updates. It never
// panics; f aliases b.
func decodeFrame(b []byte, f *frame) error {
	if len(b) < frameHeaderLen {
		return fmt.Errorf("%w: %d bytes", errMalformed, len(b))
	}
	if b[0] != linkVersion {
		return fmt.Errorf("%w: version %d, want %d", errMalformed, b[0], linkVersion)
	}
	*f = frame{typ: b[1], stamps: f.stamps[:0], updates: f.updates[:0]}
	r := reader{b: b[frameHeaderLen:]}
	switch f.typ {
	case frameHello, frameWelcome:
		f.epoch = r.u64()
	case frameRefuse:
		f.reason = r.u8()
		f.epoch = r.u64()
	case frameOpen:
		f.assoc = r.u32()
		flags := r.u8()
		if r.err == nil && flags&^1 != 0 {
			r.err = fmt.Errorf("%w: open flags %#x", errMalformed, flags)
		}
		f.resume = flags&1 != 0
		f.streams = r.u16()
		f.local.AddrPort = r.addrPort()
		f.local.UDP = r.addrPort()
		f.remote.AddrPort = r.addrPort()
		f.remote.UDP = r.addrPort()
		f.setup = r.sized()
		n := r.u16()
		if r.err == nil && n > maxConfigUpdates {
			r.err = fmt.Errorf("%w: %d RAN Configuration Updates", errMalformed, n)
		}
		for range n {
			if r.err != nil {
				break
			}
			f.updates = append(f.updates, r.sized())
		}
		if r.err == nil && f.streams == 0 {
			r.err = fmt.Errorf("%w: association without outbound streams", errMalformed)
		}
		if r.err == nil && len(f.setup) == 0 && (f.resume || n > 0) {
			r.err = fmt.Errorf("%w: resumed association without its NG Setup Request", errMalformed)
		}
	case frameUplink:
		f.assoc = r.u32()
		f.stamp = r.u64()
		f.stream = r.u16()
		f.ppid = r.u32()
		f.data = r.message()
		if r.err == nil && f.stamp == 0 {
			r.err = fmt.Errorf("%w: stamp 0", errMalformed)
		}
	case frameClosed, frameClose:
		f.assoc = r.u32()
	case frameOpened:
	case frameAck:
		if r.err == nil && (len(r.b) == 0 || len(r.b)%8 != 0 || len(r.b)/8 > maxAckBatch) {
			return fmt.Errorf("%w: ack of %d bytes", errMalformed, len(r.b))
		}
		for len(r.b) > 0 {
			f.stamps = append(f.stamps, r.u64())
		}
	case frameDownlink:
		f.assoc = r.u32()
		f.stream = r.u16()
		f.ppid = r.u32()
		f.data = r.message()
	default:
		return fmt.Errorf("%w: type %d", errMalformed, f.typ)
	}
	r.end()
	return r.err
}
