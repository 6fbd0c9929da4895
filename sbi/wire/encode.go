package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// sliceHeader is the memory layout of every Go slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// encode appends the value of type p at ptr. Scalars are handled first
// and without a depth check; they are most of a model's fields.
func (c *Codec) encode(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	switch p.op {
	case opBool:
		if *(*bool)(ptr) {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case opInt8, opUint8:
		return append(b, *(*uint8)(ptr)), nil
	case opInt16:
		return binary.AppendVarint(b, int64(*(*int16)(ptr))), nil
	case opInt32:
		return binary.AppendVarint(b, int64(*(*int32)(ptr))), nil
	case opInt64:
		return binary.AppendVarint(b, *(*int64)(ptr)), nil
	case opUint16:
		return binary.AppendUvarint(b, uint64(*(*uint16)(ptr))), nil
	case opUint32:
		return binary.AppendUvarint(b, uint64(*(*uint32)(ptr))), nil
	case opUint64:
		return binary.AppendUvarint(b, *(*uint64)(ptr)), nil
	case opFloat32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(ptr))), nil
	case opFloat64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(ptr))), nil
	case opString:
		s := *(*string)(ptr)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...), nil
	case opBytes:
		s := *(*[]byte)(ptr)
		if s == nil {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(len(s))+1)
		return append(b, s...), nil
	case opByteArray:
		return append(b, unsafe.Slice((*byte)(ptr), p.len)...), nil
	case opTime:
		return appendTime(b, ptr), nil
	case opAddr, opAddrPort, opPrefix:
		return appendNetip(b, p.op, ptr)
	}
	if depth >= MaxDepth {
		return b, errDeep("encode", -1, ErrUnsupported)
	}
	return c.encodeComposite(b, p, ptr, depth+1)
}

func (c *Codec) encodeComposite(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	var err error
	switch p.op {
	case opStruct:
		return c.encodeStruct(b, p, ptr, depth)
	case opPtr:
		q := *(*unsafe.Pointer)(ptr)
		if q == nil {
			return append(b, 0), nil
		}
		return c.encode(append(b, 1), p.elem, q, depth)
	case opSlice:
		h := (*sliceHeader)(ptr)
		if h.data == nil {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(h.len)+1)
		for i := range h.len {
			if b, err = c.encode(b, p.elem, unsafe.Add(h.data, uintptr(i)*p.size), depth); err != nil {
				return b, atf(err, "[%d]", i)
			}
		}
		return b, nil
	case opArray:
		for i := range p.len {
			if b, err = c.encode(b, p.elem, unsafe.Add(ptr, uintptr(i)*p.size), depth); err != nil {
				return b, atf(err, "[%d]", i)
			}
		}
		return b, nil
	case opMap:
		return c.encodeMap(b, p, ptr, depth)
	case opIface:
		return c.encodeIface(b, p, ptr, depth)
	}
	return b, fmt.Errorf("wire: encode: op %d of %s: %w", p.op, p.name, ErrUnsupported)
}

// mapScratch is what iterating a map through reflect needs without
// allocating per call: MapIter.Key would copy every key to the heap, so
// keys and values are copied into cells that are reused instead.
type mapScratch struct {
	it     reflect.MapIter
	k, v   reflect.Value // settable cells
	kp, vp unsafe.Pointer
}

func newMapScratch(t reflect.Type) any {
	k, v := reflect.New(t.Key()), reflect.New(t.Elem())
	return &mapScratch{k: k.Elem(), v: v.Elem(), kp: k.UnsafePointer(), vp: v.UnsafePointer()}
}

func (c *Codec) encodeMap(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	m := reflect.NewAt(p.typ, ptr).Elem()
	if m.IsNil() {
		return append(b, 0), nil
	}
	n := m.Len()
	b = binary.AppendUvarint(b, uint64(n)+1)
	s := p.scratch.Get().(*mapScratch)
	defer func() {
		// Drop the references the cells hold before pooling them.
		s.it.Reset(reflect.Value{})
		s.k.SetZero()
		s.v.SetZero()
		p.scratch.Put(s)
	}()
	s.it.Reset(m)
	i := 0
	var err error
	for ; s.it.Next(); i++ {
		s.k.SetIterKey(&s.it)
		s.v.SetIterValue(&s.it)
		if b, err = c.encode(b, p.key, s.kp, depth); err != nil {
			return b, atf(err, "[key #%d]", i)
		}
		if b, err = c.encode(b, p.elem, s.vp, depth); err != nil {
			return b, atf(err, "[%s]", keyLabel(s.k, i))
		}
	}
	if i != n {
		// Only a data race can do this; the count is already written.
		return b, &pathError{op: "encode", offset: -1, kind: ErrUnsupported,
			msg: fmt.Sprintf("map changed while encoded (%d entries, then %d)", n, i)}
	}
	return b, nil
}

// keyLabel names a map entry in an error path.
func keyLabel(k reflect.Value, i int) string {
	if k.Kind() == reflect.String {
		return fmt.Sprintf("%q", k.String())
	}
	return fmt.Sprintf("key #%d", i)
}

func errDeep(op string, offset int, kind error) error {
	return &pathError{op: op, offset: offset, kind: kind,
		msg: fmt.Sprintf("nesting deeper than %d (a cyclic value?)", MaxDepth)}
}
