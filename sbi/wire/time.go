package wire

import (
	"encoding/binary"
	"time"
	"unsafe"
)

// Zone bytes of a time.Time (see the package comment).
const (
	timeZero   = 0 // the zero Time; nothing follows
	timeUTC    = 1
	timeOffset = 2 // a zigzag varint offset in seconds follows
)

// maxOffset bounds a decoded zone offset; real ones are within ±14 h.
const maxOffset = 24 * 60 * 60

// appendTime writes the instant and the zone offset; the zone name and
// the monotonic reading are dropped, as JSON drops them too.
func appendTime(b []byte, ptr unsafe.Pointer) []byte {
	t := (*time.Time)(ptr)
	if t.IsZero() {
		return append(b, timeZero)
	}
	if _, off := t.Zone(); off != 0 {
		b = append(b, timeOffset)
		b = binary.AppendVarint(b, int64(off))
	} else {
		b = append(b, timeUTC)
	}
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func (d *decoder) time(ptr unsafe.Pointer) error {
	if len(d.b) == 0 {
		return d.fail("time zone byte missing")
	}
	zone := d.b[0]
	var off int64
	switch zone {
	case timeZero:
		d.b = d.b[1:]
		*(*time.Time)(ptr) = time.Time{}
		return nil
	case timeUTC:
		d.b = d.b[1:]
	case timeOffset:
		d.b = d.b[1:]
		var err error
		if off, err = d.varint("time zone offset", -maxOffset, maxOffset); err != nil {
			return err
		}
	default:
		return d.fail("time zone byte %d, want 0, 1 or 2", zone)
	}
	sec, err := d.varint("time seconds", -1<<63, 1<<63-1)
	if err != nil {
		return err
	}
	nsec, err := d.uvarintMax("time nanoseconds", 999_999_999)
	if err != nil {
		return err
	}
	t := time.Unix(sec, int64(nsec))
	if zone == timeUTC {
		t = t.UTC()
	} else {
		// FixedZone allocates a Location unless the offset is whole hours.
		if err := d.spend(1, 128, "time zone"); err != nil {
			return err
		}
		t = t.In(time.FixedZone("", int(off)))
	}
	*(*time.Time)(ptr) = t
	return nil
}
