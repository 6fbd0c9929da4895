package wire

import (
	"encoding/binary"
	"math/bits"
	"reflect"
	"unsafe"
)

// A struct is its presence bitmap (bit i of byte i/8 set: exported field
// i follows) and then the present fields in order. Models are sparse (a
// CreateSMContext request sets 16 of its 97 fields), so absent fields
// cost neither bytes nor decoding.

// words says which exported fields overlap one 8-byte word of a struct,
// so that finding the present fields costs a load and a compare per
// word, most of them zero, rather than a test per field.
type words struct {
	lo, hi uint16 // fields[lo:hi] overlap the word (some may be empty)
	covers bool   // fields[lo] alone holds the whole word
}

// wordMap returns the word map of a struct type, or nil where the struct
// cannot be read a word at a time (its size or alignment is not a
// multiple of 8, as on 32-bit platforms) or has too many fields.
func wordMap(t reflect.Type, fields []field) []words {
	if t.Size()%8 != 0 || t.Align()%8 != 0 || len(fields) >= 1<<16 {
		return nil
	}
	m := make([]words, t.Size()/8)
	for k := range m {
		start, end := uintptr(k)*8, uintptr(k)*8+8
		lo, hi := -1, -1
		for i, f := range fields {
			if f.size > 0 && f.off < end && f.off+f.size > start {
				if lo < 0 {
					lo = i
				}
				hi = i + 1
			}
		}
		if lo < 0 {
			continue // padding or unexported fields only
		}
		f := fields[lo]
		m[k] = words{lo: uint16(lo), hi: uint16(hi),
			covers: hi-lo == 1 && f.off <= start && f.off+f.size >= end}
	}
	return m
}

func (c *Codec) encodeStruct(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	bm := len(b)
	b = append(b, make([]byte, p.bitmap)...)
	set := b[bm:]
	if p.words != nil {
		for k, w := range unsafe.Slice((*uint64)(ptr), len(p.words)) {
			if w == 0 {
				continue
			}
			if m := &p.words[k]; m.covers {
				set[m.lo>>3] |= 1 << (m.lo & 7)
			} else {
				for i := m.lo; i < m.hi; i++ {
					if !absent(unsafe.Add(ptr, p.fields[i].off), &p.fields[i]) {
						set[i>>3] |= 1 << (i & 7)
					}
				}
			}
		}
	} else {
		for i := range p.fields {
			if !absent(unsafe.Add(ptr, p.fields[i].off), &p.fields[i]) {
				set[i>>3] |= 1 << (i & 7)
			}
		}
	}
	var err error
	for j := range p.bitmap {
		for m := b[bm+j]; m != 0; m &= m - 1 {
			i := j*8 + bits.TrailingZeros8(m)
			f := &p.fields[i]
			fp := unsafe.Add(ptr, f.off)
			if f.plan.op == opString { // most present fields; save the call
				s := *(*string)(fp)
				b = binary.AppendUvarint(b, uint64(len(s)))
				b = append(b, s...)
				continue
			}
			if b, err = c.encode(b, f.plan, fp, depth); err != nil {
				return b, at(err, "."+p.names[i])
			}
		}
	}
	return b, nil
}

// structure decodes the fields the bitmap marks present; the others stay
// zero, as the target is zero to begin with.
func (d *decoder) structure(p *plan, ptr unsafe.Pointer, depth int) error {
	if len(d.b) < p.bitmap {
		return d.fail("%s: bitmap of %d bytes, %d left", p.name, p.bitmap, len(d.b))
	}
	off, bm := d.offset(), d.b[:p.bitmap]
	d.b = d.b[p.bitmap:]
	for j, m := range bm {
		for ; m != 0; m &= m - 1 {
			i := j*8 + bits.TrailingZeros8(m)
			if i >= len(p.fields) {
				return d.failAt(off+j, ErrMalformed, "%s: bitmap marks field %d, the type has %d",
					p.name, i, len(p.fields))
			}
			f := &p.fields[i]
			if err := d.value(f.plan, unsafe.Add(ptr, f.off), depth); err != nil {
				return at(err, "."+p.names[i])
			}
		}
	}
	return nil
}
