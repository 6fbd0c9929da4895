package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// Tags of a value in an interface field.
const (
	tagNil = iota
	tagBool
	tagFloat64
	tagString
	tagList       // []any
	tagObject     // map[string]any
	tagRegistered // a type registered with New
)

func (c *Codec) encodeIface(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	var x any
	if p.typ.NumMethod() == 0 {
		x = *(*any)(ptr)
	} else {
		x = reflect.NewAt(p.typ, ptr).Elem().Interface()
	}
	return c.appendAny(b, x, depth)
}

// appendAny encodes a tagged value. The JSON-like types are switched on
// directly; everything else must be registered.
func (c *Codec) appendAny(b []byte, x any, depth int) ([]byte, error) {
	var err error
	switch x := x.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if x {
			return append(b, tagBool, 1), nil
		}
		return append(b, tagBool, 0), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(x)), nil
	case string:
		b = binary.AppendUvarint(append(b, tagString), uint64(len(x)))
		return append(b, x...), nil
	case []any:
		b = append(b, tagList)
		if x == nil {
			return append(b, 0), nil
		}
		if depth >= MaxDepth {
			return b, errDeep("encode", -1, ErrUnsupported)
		}
		b = binary.AppendUvarint(b, uint64(len(x))+1)
		for i, e := range x {
			if b, err = c.appendAny(b, e, depth+1); err != nil {
				return b, atf(err, "[%d]", i)
			}
		}
		return b, nil
	case map[string]any:
		b = append(b, tagObject)
		if x == nil {
			return append(b, 0), nil
		}
		if depth >= MaxDepth {
			return b, errDeep("encode", -1, ErrUnsupported)
		}
		b = binary.AppendUvarint(b, uint64(len(x))+1)
		for k, e := range x {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			if b, err = c.appendAny(b, e, depth+1); err != nil {
				return b, atf(err, "[%q]", k)
			}
		}
		return b, nil
	}
	b, err = c.appendRegistered(b, x, depth)
	if err != nil {
		return b, atf(err, "(%T)", x)
	}
	return b, nil
}

func (c *Codec) appendRegistered(b []byte, x any, depth int) ([]byte, error) {
	t := reflect.TypeOf(x)
	r := c.reg.byType[t]
	if r == nil {
		return b, &pathError{op: "encode", offset: -1, kind: ErrUnsupported,
			msg: fmt.Sprintf("%s in an interface is not registered with New", t)}
	}
	b = append(b, tagRegistered)
	b = binary.LittleEndian.AppendUint64(b, r.id)
	b = binary.LittleEndian.AppendUint64(b, r.plan.hash)
	switch {
	case t.Kind() == reflect.Pointer:
		// The interface holds the pointer itself: encode it as the
		// pointer plan would, without needing its address.
		q := reflect.ValueOf(x).UnsafePointer()
		if q == nil {
			return append(b, 0), nil
		}
		return c.encode(append(b, 1), r.plan.elem, q, depth)
	case t.Size() != unsafe.Sizeof(uintptr(0)):
		// Only a type of exactly one pointer word is stored in the
		// interface's data word itself; any other type (every model
		// struct) is stored behind it, so the data word is the value's
		// address and nothing needs copying.
		return c.encode(b, r.plan, (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[1], depth)
	default:
		v := reflect.New(t)
		v.Elem().Set(reflect.ValueOf(x))
		return c.encode(b, r.plan, v.UnsafePointer(), depth)
	}
}

func (d *decoder) decodeIface(p *plan, ptr unsafe.Pointer, depth int) error {
	x, err := d.anyValue(depth)
	if err != nil {
		return err
	}
	if p.typ.NumMethod() == 0 {
		*(*any)(ptr) = x
		return nil
	}
	dst := reflect.NewAt(p.typ, ptr).Elem()
	if x == nil {
		dst.SetZero()
		return nil
	}
	if t := reflect.TypeOf(x); !t.Implements(p.typ) {
		return d.fail("%s does not implement %s", t, p.typ)
	}
	dst.Set(reflect.ValueOf(x))
	return nil
}

// anyValue decodes a tagged value; depth is that of the interface.
func (d *decoder) anyValue(depth int) (any, error) {
	if len(d.b) == 0 {
		return nil, d.fail("interface tag missing")
	}
	off, tag := d.offset(), d.b[0]
	d.b = d.b[1:]
	switch tag {
	case tagNil:
		return nil, nil
	case tagBool:
		return d.boolean()
	case tagFloat64:
		u, err := d.fixed64("float64")
		return math.Float64frombits(u), err
	case tagString:
		return d.str()
	case tagList:
		return d.list(depth)
	case tagObject:
		return d.object(depth)
	case tagRegistered:
		return d.registeredValue(depth)
	}
	return nil, d.failAt(off, ErrMalformed, "unknown interface tag %d", tag)
}

func (d *decoder) list(depth int) (any, error) {
	n, err := d.count("[]any", 1)
	if err != nil || n < 0 {
		return []any(nil), err
	}
	if depth >= MaxDepth {
		return nil, errDeep("decode", d.offset(), ErrMalformed)
	}
	if err := d.spend(n, 16, "[]any"); err != nil {
		return nil, err
	}
	s := make([]any, n)
	for i := range s {
		if s[i], err = d.anyValue(depth + 1); err != nil {
			return nil, atf(err, "[%d]", i)
		}
	}
	return s, nil
}

func (d *decoder) object(depth int) (any, error) {
	n, err := d.count("map[string]any", 2) // a key length and a tag at least
	if err != nil || n < 0 {
		return map[string]any(nil), err
	}
	if depth >= MaxDepth {
		return nil, errDeep("decode", d.offset(), ErrMalformed)
	}
	if err := d.spend(n, 40, "map[string]any"); err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for i := range n {
		k, err := d.str()
		if err != nil {
			return nil, atf(err, "[key #%d]", i)
		}
		if m[k], err = d.anyValue(depth + 1); err != nil {
			return nil, atf(err, "[%q]", k)
		}
		if len(m) != i+1 {
			return nil, d.fail("duplicate key %q", k)
		}
	}
	return m, nil
}

func (d *decoder) registeredValue(depth int) (any, error) {
	if len(d.b) < 16 {
		return nil, d.fail("registered type tag needs 16 bytes, %d left", len(d.b))
	}
	id := binary.LittleEndian.Uint64(d.b)
	h := binary.LittleEndian.Uint64(d.b[8:])
	r := d.c.reg.byID[id]
	if r == nil {
		return nil, d.failAt(d.offset(), ErrLayoutMismatch, "interface holds type %016x, which is not registered here", id)
	}
	if h != r.plan.hash {
		return nil, d.failAt(d.offset(), ErrLayoutMismatch, "interface holds %s with layout %016x, this build's is %016x",
			r.name, h, r.plan.hash)
	}
	d.b = d.b[16:]
	if len(d.b) < r.plan.min {
		return nil, d.fail("%s needs at least %d bytes, %d left", r.name, r.plan.min, len(d.b))
	}
	// New, then Interface's copy.
	if err := d.spend(2, r.plan.typ.Size(), r.name); err != nil {
		return nil, err
	}
	v := reflect.New(r.plan.typ)
	if err := d.value(r.plan, v.UnsafePointer(), depth); err != nil {
		return nil, atf(err, "(%s)", r.plan.typ)
	}
	return v.Elem().Interface(), nil
}
