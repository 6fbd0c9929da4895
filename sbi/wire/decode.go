package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// decoder reads one message body. b is the unread rest of Decode's
// private copy of the body, so strings may point into it.
type decoder struct {
	c      *Codec
	b      []byte
	n      int // length of the whole message, for offsets in errors
	budget int // bytes the rest of the decoding may still allocate
}

// Decode allocates at most allocFloor + allocPerByte × the message
// length. The checks of counts against the bytes left bound most
// allocations already; the budget also bounds those that a few bytes can
// ask for legitimately: a pointer to a large struct whose fields are all
// absent, a slice of such structs, a big array.
const (
	allocFloor   = 1 << 20
	allocPerByte = 64
)

// spend charges n values of size bytes to the budget before they are
// allocated.
func (d *decoder) spend(n int, size uintptr, what string) error {
	if size != 0 && uintptr(n) > uintptr(d.budget)/size {
		return d.fail("%s: %d × %d bytes would pass the message's allocation budget (%d bytes left of it)",
			what, n, size, d.budget)
	}
	d.budget -= n * int(size)
	return nil
}

func (d *decoder) offset() int { return d.n - len(d.b) }

func (d *decoder) fail(format string, args ...any) error {
	return d.failAt(d.offset(), ErrMalformed, format, args...)
}

func (d *decoder) failAt(off int, kind error, format string, args ...any) error {
	return &pathError{op: "decode", offset: off, kind: kind, msg: fmt.Sprintf(format, args...)}
}

// value decodes a value of type p into ptr, which must be zeroed memory
// (fields absent from the message are not written). Like encode, scalars
// come first and skip the depth check.
func (d *decoder) value(p *plan, ptr unsafe.Pointer, depth int) error {
	switch p.op {
	case opBool:
		v, err := d.boolean()
		*(*bool)(ptr) = v
		return err
	case opInt8, opUint8:
		if len(d.b) == 0 {
			return d.fail("%s: no byte left", p.name)
		}
		*(*uint8)(ptr) = d.b[0]
		d.b = d.b[1:]
		return nil
	case opInt16:
		v, err := d.varint(p.name, math.MinInt16, math.MaxInt16)
		*(*int16)(ptr) = int16(v)
		return err
	case opInt32:
		v, err := d.varint(p.name, math.MinInt32, math.MaxInt32)
		*(*int32)(ptr) = int32(v)
		return err
	case opInt64:
		v, err := d.varint(p.name, math.MinInt64, math.MaxInt64)
		*(*int64)(ptr) = v
		return err
	case opUint16:
		v, err := d.uvarintMax(p.name, math.MaxUint16)
		*(*uint16)(ptr) = uint16(v)
		return err
	case opUint32:
		v, err := d.uvarintMax(p.name, math.MaxUint32)
		*(*uint32)(ptr) = uint32(v)
		return err
	case opUint64:
		v, err := d.uvarintMax(p.name, math.MaxUint64)
		*(*uint64)(ptr) = v
		return err
	case opFloat32:
		v, err := d.fixed32(p.name)
		*(*float32)(ptr) = math.Float32frombits(v)
		return err
	case opFloat64:
		v, err := d.fixed64(p.name)
		*(*float64)(ptr) = math.Float64frombits(v)
		return err
	case opString:
		s, err := d.str()
		*(*string)(ptr) = s
		return err
	case opBytes:
		return d.bytes(p, ptr)
	case opByteArray:
		if len(d.b) < p.len {
			return d.fail("%s needs %d bytes, %d left", p.name, p.len, len(d.b))
		}
		copy(unsafe.Slice((*byte)(ptr), p.len), d.b)
		d.b = d.b[p.len:]
		return nil
	case opTime:
		return d.time(ptr)
	case opAddr, opAddrPort, opPrefix:
		return d.netip(p, ptr)
	}
	if depth >= MaxDepth {
		return errDeep("decode", d.offset(), ErrMalformed)
	}
	return d.composite(p, ptr, depth+1)
}

func (d *decoder) composite(p *plan, ptr unsafe.Pointer, depth int) error {
	switch p.op {
	case opStruct:
		return d.structure(p, ptr, depth)
	case opPtr:
		return d.pointer(p, ptr, depth)
	case opSlice:
		return d.slice(p, ptr, depth)
	case opArray:
		for i := range p.len {
			if err := d.value(p.elem, unsafe.Add(ptr, uintptr(i)*p.size), depth); err != nil {
				return atf(err, "[%d]", i)
			}
		}
		return nil
	case opMap:
		return d.mapValue(p, ptr, depth)
	case opIface:
		return d.decodeIface(p, ptr, depth)
	}
	return d.failAt(d.offset(), ErrUnsupported, "op %d of %s", p.op, p.name)
}

func (d *decoder) pointer(p *plan, ptr unsafe.Pointer, depth int) error {
	if len(d.b) == 0 {
		return d.fail("pointer flag missing")
	}
	flag := d.b[0]
	switch flag {
	case 0:
		d.b = d.b[1:]
		*(*unsafe.Pointer)(ptr) = nil
		return nil
	case 1:
		d.b = d.b[1:]
	default:
		return d.fail("pointer flag %d, want 0 or 1", flag)
	}
	// Allocate the pointee only when the bytes left can hold it.
	if len(d.b) < p.elem.min {
		return d.fail("%s needs at least %d bytes, %d left", p.elem.name, p.elem.min, len(d.b))
	}
	if err := d.spend(1, p.elem.typ.Size(), p.elem.name); err != nil {
		return err
	}
	q := reflect.New(p.elem.typ).UnsafePointer()
	if err := d.value(p.elem, q, depth); err != nil {
		return err
	}
	*(*unsafe.Pointer)(ptr) = q
	return nil
}

// emptyBase is where an empty, non-nil slice points: nil and empty slices
// stay distinct (reflect.DeepEqual tells them apart) without allocating.
var emptyBase struct{}

func (d *decoder) slice(p *plan, ptr unsafe.Pointer, depth int) error {
	n, err := d.count(p.name, p.elem.min)
	if err != nil {
		return err
	}
	h := (*sliceHeader)(ptr)
	switch {
	case n < 0:
		*h = sliceHeader{}
		return nil
	case n == 0:
		*h = sliceHeader{data: unsafe.Pointer(&emptyBase)}
		return nil
	}
	if err := d.spend(n, p.size, p.name); err != nil {
		return err
	}
	// Grow on the slice in place allocates only the backing array
	// (reflect.MakeSlice would allocate a header as well), zeroed as
	// the elements' decoding needs.
	*h = sliceHeader{}
	s := reflect.NewAt(p.typ, ptr).Elem()
	s.Grow(n)
	s.SetLen(n)
	for i := range n {
		if err := d.value(p.elem, unsafe.Add(h.data, uintptr(i)*p.size), depth); err != nil {
			return atf(err, "[%d]", i)
		}
	}
	return nil
}

func (d *decoder) mapValue(p *plan, ptr unsafe.Pointer, depth int) error {
	n, err := d.count(p.name, satAdd(p.key.min, p.elem.min))
	if err != nil {
		return err
	}
	if n < 0 {
		*(*unsafe.Pointer)(ptr) = nil // a map variable is one pointer
		return nil
	}
	// A map entry costs about its key and value plus a word; the cells
	// below one more entry.
	if err := d.spend(n+1, p.key.typ.Size()+p.elem.typ.Size()+8, p.name); err != nil {
		return err
	}
	m := reflect.MakeMapWithSize(p.typ, n)
	k, v := reflect.New(p.key.typ), reflect.New(p.elem.typ)
	// The cells are reused, zeroed before each entry as decoding needs;
	// whatever an entry points to is allocated afresh, and SetMapIndex
	// copies.
	ke, ve := k.Elem(), v.Elem()
	for i := range n {
		ke.SetZero()
		ve.SetZero()
		if err := d.value(p.key, k.UnsafePointer(), depth); err != nil {
			return atf(err, "[key #%d]", i)
		}
		if err := d.value(p.elem, v.UnsafePointer(), depth); err != nil {
			return atf(err, "[%s]", keyLabel(ke, i))
		}
		m.SetMapIndex(ke, ve)
		if m.Len() != i+1 {
			return d.fail("duplicate map key %s", keyLabel(ke, i))
		}
	}
	reflect.NewAt(p.typ, ptr).Elem().Set(m)
	return nil
}

func (d *decoder) bytes(p *plan, ptr unsafe.Pointer) error {
	n, err := d.count(p.name, 1)
	if err != nil {
		return err
	}
	if n < 0 {
		*(*[]byte)(ptr) = nil
		return nil
	}
	// Capacity is cut at the length so that appending to one decoded
	// slice cannot overwrite what follows it in the shared copy.
	*(*[]byte)(ptr) = d.b[:n:n]
	d.b = d.b[n:]
	return nil
}

// count reads a slice's or map's uvarint length+1 and returns the length,
// -1 for nil. Every element takes at least elemMin bytes, so a count the
// bytes left cannot hold is refused before anything is allocated.
// Elements that may take no bytes at all (a struct without exported
// fields) are capped at maxEmpty instead, which bounds the decoding loop.
func (d *decoder) count(what string, elemMin int) (int, error) {
	off := d.offset()
	v, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return -1, nil
	}
	n := v - 1
	switch {
	case elemMin == 0 && n > maxEmpty:
		return 0, d.failAt(off, ErrMalformed, "%s: %d elements that take no bytes, more than %d", what, n, maxEmpty)
	case elemMin > 0 && n > uint64(len(d.b))/uint64(elemMin):
		return 0, d.failAt(off, ErrMalformed, "%s: %d elements of at least %d bytes each, %d bytes left",
			what, n, elemMin, len(d.b))
	}
	return int(n), nil
}

// maxEmpty bounds a count of elements that take no bytes.
const maxEmpty = 1 << 16

func (d *decoder) str() (string, error) {
	off := d.offset()
	n, err := d.uvarint("string length")
	if err != nil {
		return "", err
	}
	if n > uint64(len(d.b)) {
		return "", d.failAt(off, ErrMalformed, "string of %d bytes, %d left", n, len(d.b))
	}
	if n == 0 {
		return "", nil
	}
	// d.b is Decode's private copy and is never written again, which is
	// what makes this string immutable.
	s := unsafe.String(&d.b[0], int(n))
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) boolean() (bool, error) {
	if len(d.b) == 0 {
		return false, d.fail("bool missing")
	}
	v := d.b[0]
	if v > 1 {
		return false, d.fail("bool byte %d, want 0 or 1", v)
	}
	d.b = d.b[1:]
	return v == 1, nil
}

func (d *decoder) uvarint(what string) (uint64, error) {
	if len(d.b) > 0 && d.b[0] < 0x80 {
		v := d.b[0]
		d.b = d.b[1:]
		return uint64(v), nil
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		if n == 0 {
			return 0, d.fail("%s: varint truncated", what)
		}
		return 0, d.fail("%s: varint longer than 64 bits", what)
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *decoder) uvarintMax(what string, limit uint64) (uint64, error) {
	off := d.offset()
	v, err := d.uvarint(what)
	if err == nil && v > limit {
		err = d.failAt(off, ErrMalformed, "%d overflows %s", v, what)
	}
	return v, err
}

func (d *decoder) varint(what string, lo, hi int64) (int64, error) {
	off := d.offset()
	v, n := binary.Varint(d.b)
	switch {
	case n == 0:
		return 0, d.fail("%s: varint truncated", what)
	case n < 0:
		return 0, d.fail("%s: varint longer than 64 bits", what)
	}
	d.b = d.b[n:]
	if v < lo || v > hi {
		return 0, d.failAt(off, ErrMalformed, "%d overflows %s", v, what)
	}
	return v, nil
}

func (d *decoder) fixed32(what string) (uint32, error) {
	if len(d.b) < 4 {
		return 0, d.fail("%s needs 4 bytes, %d left", what, len(d.b))
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v, nil
}

func (d *decoder) fixed64(what string) (uint64, error) {
	if len(d.b) < 8 {
		return 0, d.fail("%s needs 8 bytes, %d left", what, len(d.b))
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v, nil
}
