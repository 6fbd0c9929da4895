package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// An entry's payload is framed with a checksum of ours, so that an entry
// damaged anywhere between the writer and the reader (or written by
// something that is not this package) is rejected and counted instead of
// applied: | version (1) | CRC-32C of data (4, big endian) | data |.
const (
	frameVersion = 1
	frameHeader  = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func frame(data []byte) []byte {
	b := make([]byte, frameHeader+len(data))
	b[0] = frameVersion
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(data, castagnoli))
	copy(b[frameHeader:], data)
	return b
}

// unframe returns the data of a framed entry, or an error wrapping
// ErrCorrupt. The data aliases b.
func unframe(b []byte) ([]byte, error) {
	if len(b) < frameHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its header", ErrCorrupt, len(b))
	}
	if b[0] != frameVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, b[0])
	}
	data := b[frameHeader:]
	if want, got := binary.BigEndian.Uint32(b[1:5]), crc32.Checksum(data, castagnoli); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return data, nil
}
