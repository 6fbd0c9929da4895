package shm

import "encoding/binary"

// RecordHeaderBytes is the size of the header in front of every message in a
// slot; a slot of SlotBytes carries at most SlotBytes-RecordHeaderBytes.
const RecordHeaderBytes = 32

// Record header fields, little-endian.
const (
	recLen    = 0  // uint32: payload length
	recGen    = 4  // uint32: channel generation
	recID     = 8  // uint64: request ID, echoed in the response
	recOp     = 16 // uint16: operation
	recStatus = 18 // uint16: status (responses)
	recFlags  = 20 // uint32: flag bits below
	recCheck  = 24 // uint32: headerCheck of the fields above
	// 28..31 reserved, zero
)

// Record flags.
const (
	// flagBadAnswer: the handler returned a length outside 0..max; the
	// response carries no payload and the call fails with ErrTooLarge.
	flagBadAnswer = 1 << 0
)

// record is a decoded header.
type record struct {
	id     uint64
	gen    uint32
	op     uint16
	status uint16
	flags  uint32
}

// headerCheck mixes the header fields so that a torn, stale or scribbled
// header is caught before its length is trusted. It is not a checksum of the
// payload: the payload's integrity is the codec's business, and hashing it
// would cost as much as the copy.
func headerCheck(n uint32, r record) uint32 {
	x := uint64(n) | uint64(r.gen)<<32
	x ^= r.id * 0x9e3779b97f4a7c15
	x ^= (uint64(r.op) | uint64(r.status)<<16 | uint64(r.flags)<<32) * 0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return uint32(x) ^ 0x7e53d2a1
}

// encodeRecord writes r and payload into slot. The caller has checked that
// the payload fits.
func encodeRecord(slot []byte, r record, payload []byte) {
	n := uint32(len(payload))
	h := slot[:RecordHeaderBytes]
	binary.LittleEndian.PutUint32(h[recLen:], n)
	binary.LittleEndian.PutUint32(h[recGen:], r.gen)
	binary.LittleEndian.PutUint64(h[recID:], r.id)
	binary.LittleEndian.PutUint16(h[recOp:], r.op)
	binary.LittleEndian.PutUint16(h[recStatus:], r.status)
	binary.LittleEndian.PutUint32(h[recFlags:], r.flags)
	binary.LittleEndian.PutUint32(h[recCheck:], headerCheck(n, r))
	binary.LittleEndian.PutUint32(h[28:], 0)
	copy(slot[RecordHeaderBytes:], payload)
}

// decodeRecord reads the record in slot, which must belong to generation
// gen and carry at most maxPayload bytes. The payload aliases slot. Any
// error means the slot is to be skipped (and counted); it never panics,
// whatever the bytes (see FuzzRecord).
func decodeRecord(slot []byte, gen uint32, maxPayload int) (record, []byte, error) {
	if len(slot) < RecordHeaderBytes {
		return record{}, nil, errShort
	}
	n := binary.LittleEndian.Uint32(slot[recLen:])
	r := record{
		gen:    binary.LittleEndian.Uint32(slot[recGen:]),
		id:     binary.LittleEndian.Uint64(slot[recID:]),
		op:     binary.LittleEndian.Uint16(slot[recOp:]),
		status: binary.LittleEndian.Uint16(slot[recStatus:]),
		flags:  binary.LittleEndian.Uint32(slot[recFlags:]),
	}
	if binary.LittleEndian.Uint32(slot[recCheck:]) != headerCheck(n, r) {
		return r, nil, errBadCheck
	}
	if uint64(n) > uint64(maxPayload) || uint64(n) > uint64(len(slot)-RecordHeaderBytes) {
		return r, nil, errBadLength
	}
	if r.gen != gen {
		return r, nil, errStaleGen
	}
	return r, slot[RecordHeaderBytes : RecordHeaderBytes+int(n)], nil
}
