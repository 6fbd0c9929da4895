package wire

import (
	"reflect"
	"sync"
	"time"
)

// MaxDepth is how deeply composite values (struct, pointer, slice, array,
// map, interface) may nest in a message. The deepest sbi type,
// Nrf_NFDisc_SearchResult, nests 17; the limit bounds the decoder's stack
// and stops the encoder on a cyclic value.
const MaxDepth = 100

// op says how one Go type is encoded; integer ops carry their width so
// that the layout hash changes with it.
type op uint8

const (
	opBool op = iota + 1
	opInt8
	opInt16
	opInt32
	opInt64
	opUint8
	opUint16
	opUint32
	opUint64
	opFloat32
	opFloat64
	opString
	opBytes     // a slice of a byte kind: one copy, no per-element walk
	opByteArray // an array of a byte kind
	opTime      // time.Time, whose fields are unexported
	opPtr
	opSlice
	opArray
	opMap
	opStruct
	opIface
	// Appended after the others so that the layouts above keep their
	// hashes: the net/netip values, whose fields are unexported (netip.go).
	opAddr     // netip.Addr
	opAddrPort // netip.AddrPort
	opPrefix   // netip.Prefix
)

// plan is the compiled layout of one Go type: what the encoder and decoder
// walk instead of asking reflect about fields by name.
type plan struct {
	op     op
	typ    reflect.Type
	name   string   // for error messages
	elem   *plan    // pointer, slice, array: element; map: value
	key    *plan    // map key
	fields []field  // struct: exported fields in declaration order
	names  []string // struct: their Go names, part of the layout hash
	bitmap int      // struct: bytes of its presence bitmap
	words  []words  // struct: what each 8-byte word holds (struct.go), nil if not scanned so
	len    int      // array length
	size   uintptr  // slice and array: element size in memory
	// min is the fewest bytes any encoding of the type takes. The decoder
	// checks counts against it before allocating, which is what bounds
	// memory by the input length.
	min int
	// hash is the layout hash (hash.go); set on plans that are message
	// roots or registered interface types.
	hash uint64
	// scratch (maps only) recycles the iterator and key/value cells that
	// encoding a map needs, so that Append does not allocate.
	scratch *sync.Pool
}

// field is kept small: encoding visits every field of a struct, present
// or not, so the hot part is what fits the cache. Names live in
// plan.names.
type field struct {
	off  uintptr
	plan *plan
	size uintptr
	zero zeroTest
}

var timeType = reflect.TypeFor[time.Time]()

// compile builds the plan of t and its layout hash.
func compile(t reflect.Type) (*plan, error) {
	b := builder{plans: make(map[reflect.Type]*plan)}
	p, err := b.build(t)
	if err != nil {
		return nil, at(err, typeLabel(t))
	}
	p.hash = layoutHash(p)
	return p, nil
}

// builder shares one plan per type within a compilation, which is also
// how a recursive type (T with a *T field) refers back to itself.
type builder struct {
	plans map[reflect.Type]*plan
}

func (b *builder) build(t reflect.Type) (*plan, error) {
	if p, ok := b.plans[t]; ok {
		return p, nil
	}
	p := &plan{typ: t, name: typeLabel(t), min: 1}
	b.plans[t] = p
	if t == timeType {
		p.op = opTime
		return p, nil
	}
	if o, ok := netipOps[t]; ok {
		p.op = o
		return p, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		p.op = opBool
	case reflect.Int8:
		p.op = opInt8
	case reflect.Int16:
		p.op = opInt16
	case reflect.Int32:
		p.op = opInt32
	case reflect.Int64:
		p.op = opInt64
	case reflect.Int:
		p.op = sized(t, opInt32, opInt64)
	case reflect.Uint8:
		p.op = opUint8
	case reflect.Uint16:
		p.op = opUint16
	case reflect.Uint32:
		p.op = opUint32
	case reflect.Uint64:
		p.op = opUint64
	case reflect.Uint, reflect.Uintptr:
		p.op = sized(t, opUint32, opUint64)
	case reflect.Float32:
		p.op, p.min = opFloat32, 4
	case reflect.Float64:
		p.op, p.min = opFloat64, 8
	case reflect.String:
		p.op = opString
	case reflect.Interface:
		p.op = opIface
	case reflect.Pointer:
		return p, b.composite(p, opPtr, t.Elem(), "")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.op = opBytes
			return p, nil
		}
		p.size = t.Elem().Size()
		return p, b.composite(p, opSlice, t.Elem(), "[]")
	case reflect.Array:
		p.len = t.Len()
		if t.Elem().Kind() == reflect.Uint8 {
			p.op, p.min = opByteArray, p.len
			return p, nil
		}
		p.size = t.Elem().Size()
		if err := b.composite(p, opArray, t.Elem(), "[]"); err != nil {
			return p, err
		}
		// An array element cannot be an ancestor in progress (the type
		// would be infinite), so its min is final here.
		p.min = satMul(p.len, p.elem.min)
	case reflect.Map:
		p.op = opMap
		if !hashableKey(t.Key()) {
			// A decoded interface could hold a slice, whose hashing
			// panics in SetMapIndex.
			return p, &pathError{op: "plan", offset: -1, kind: ErrUnsupported,
				msg: "map key " + t.Key().String() + " holds an interface"}
		}
		var err error
		if p.key, err = b.build(t.Key()); err != nil {
			return p, at(err, "[key]")
		}
		if p.elem, err = b.build(t.Elem()); err != nil {
			return p, at(err, "[value]")
		}
		p.scratch = &sync.Pool{New: func() any { return newMapScratch(t) }}
	case reflect.Struct:
		return p, b.structure(p, t)
	default:
		return p, &pathError{op: "plan", offset: -1, kind: ErrUnsupported,
			msg: "kind " + t.Kind().String() + " has no layout"}
	}
	return p, nil
}

func (b *builder) composite(p *plan, o op, elem reflect.Type, step string) error {
	p.op = o
	var err error
	p.elem, err = b.build(elem)
	if err != nil && step != "" {
		return at(err, step)
	}
	return err
}

func (b *builder) structure(p *plan, t reflect.Type) error {
	p.op = opStruct
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue // not part of the message; see the package comment
		}
		fp, err := b.build(f.Type)
		if err != nil {
			return at(err, "."+f.Name)
		}
		p.fields = append(p.fields, field{off: f.Offset, plan: fp, size: f.Type.Size(), zero: zeroTestOf(f.Type)})
		p.names = append(p.names, f.Name)
	}
	// Every field may be absent, so the bitmap is all a struct needs.
	p.bitmap = (len(p.fields) + 7) / 8
	p.min = p.bitmap
	p.words = wordMap(t, p.fields)
	return nil
}

// hashableKey reports whether every value of a comparable type hashes:
// false when an interface is part of it (pointers are hashed by address).
func hashableKey(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return false
	case reflect.Array:
		return hashableKey(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !hashableKey(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// sized picks the op of an int or uint kind whose width depends on the
// platform, so that the layout hash tells 32-bit and 64-bit builds apart.
func sized(t reflect.Type, o32, o64 op) op {
	if t.Size() == 4 {
		return o32
	}
	return o64
}

// typeLabel names a type in errors: its Go name, or its literal.
func typeLabel(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

// satAdd and satMul keep min from overflowing for huge arrays; a
// saturated min only makes the decoder refuse sooner.
func satAdd(a, b int) int {
	if a > maxMin-b {
		return maxMin
	}
	return a + b
}

func satMul(a, b int) int {
	if b != 0 && a > maxMin/b {
		return maxMin
	}
	return a * b
}

const maxMin = 1 << 40
