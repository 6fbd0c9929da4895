package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// Codec encodes and decodes messages. Its registry of interface types is
// fixed by New; its plan cache fills as types are first used. A Codec is
// safe for concurrent use.
type Codec struct {
	plans sync.Map // reflect.Type → *plan, message roots
	reg   registry
}

// New returns a Codec whose interface fields may hold the types of the
// given values (and pointers to them) besides the JSON-like values nil,
// bool, float64, string, []any and map[string]any. It fails when a type
// has no layout or two types get the same ID.
func New(types ...any) (*Codec, error) {
	c := &Codec{}
	if err := c.reg.add(types); err != nil {
		return nil, err
	}
	return c, nil
}

// sbiCodec is the Codec of the package-level functions. It is built on
// first use and never changes afterwards except for its plan cache.
var sbiCodec = sync.OnceValues(func() (*Codec, error) { return New(SBITypes()...) })

// Append appends the message for *v to dst with a Codec for SBITypes.
func Append(dst []byte, v any) ([]byte, error) {
	c, err := sbiCodec()
	if err != nil {
		return dst, err
	}
	return c.Append(dst, v)
}

// Decode decodes msg into *v with a Codec for SBITypes.
func Decode(msg []byte, v any) error {
	c, err := sbiCodec()
	if err != nil {
		return err
	}
	return c.Decode(msg, v)
}

// LayoutHash returns the layout hash of messages for values of type t, the
// one their header carries: a binding can compare them with its peer's
// once, at connection time, instead of learning of a mismatch per message.
func (c *Codec) LayoutHash(t reflect.Type) (uint64, error) {
	p, err := c.planOf(t)
	if err != nil {
		return 0, err
	}
	return p.hash, nil
}

// Append appends the message for the value v points to to dst. On error
// dst is returned as it was.
func (c *Codec) Append(dst []byte, v any) ([]byte, error) {
	t, ptr, err := target("Append", v)
	if err != nil {
		return dst, err
	}
	p, err := c.planOf(t)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	dst = append(dst, 't', 'w', formatVersion)
	dst = binary.LittleEndian.AppendUint64(dst, p.hash)
	out, err := c.encode(dst, p, ptr, 0)
	if err != nil {
		return dst[:n], at(err, p.name)
	}
	return out, nil
}

// Decode decodes msg, a whole message, into the value v points to.
func (c *Codec) Decode(msg []byte, v any) error {
	t, ptr, err := target("Decode", v)
	if err != nil {
		return err
	}
	p, err := c.planOf(t)
	if err != nil {
		return err
	}
	if err := checkHeader(msg, p); err != nil {
		return err
	}
	body := msg[headerSize:]
	if len(body) < p.min {
		return fmt.Errorf("wire: decode %s: %w: %d bytes after the header, the type needs at least %d",
			p.name, ErrMalformed, len(body), p.min)
	}
	// One private copy backs every decoded string and byte slice (see
	// "Normalisation"): msg may be shared memory that the peer reuses.
	d := decoder{c: c, b: bytes.Clone(body), n: len(msg), budget: allocFloor + allocPerByte*len(msg)}
	// The decoder writes only what the message holds; zeroing first makes
	// the absent fields zero (and unexported ones too).
	reflect.NewAt(t, ptr).Elem().SetZero()
	if err := d.value(p, ptr, 0); err != nil {
		return at(err, p.name)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("wire: decode %s: %w: %d trailing bytes after the value at byte %d",
			p.name, ErrMalformed, len(d.b), d.offset())
	}
	return nil
}

const headerSize = 11

func checkHeader(msg []byte, p *plan) error {
	switch {
	case len(msg) < headerSize:
		return fmt.Errorf("wire: decode %s: %w: %d bytes, shorter than the %d-byte header",
			p.name, ErrMalformed, len(msg), headerSize)
	case msg[0] != 't' || msg[1] != 'w':
		return fmt.Errorf("wire: decode %s: %w: not a wire message (starts %x)", p.name, ErrMalformed, msg[:2])
	case msg[2] != formatVersion:
		return fmt.Errorf("wire: decode %s: %w: format version %d, this build reads %d",
			p.name, ErrLayoutMismatch, msg[2], formatVersion)
	}
	if h := binary.LittleEndian.Uint64(msg[3:]); h != p.hash {
		return fmt.Errorf("wire: decode %s: %w: message layout %016x, this build's %s is %016x (another type or model version)",
			p.name, ErrLayoutMismatch, h, p.name, p.hash)
	}
	return nil
}

// target checks that v is a non-nil pointer and returns what it points to.
func target(fn string, v any) (reflect.Type, unsafe.Pointer, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, nil, fmt.Errorf("wire: %s needs a non-nil pointer, not %s: %w", fn, describe(rv), ErrUnsupported)
	}
	return rv.Type().Elem(), rv.UnsafePointer(), nil
}

func describe(rv reflect.Value) string {
	if !rv.IsValid() {
		return "nil"
	}
	if rv.Kind() == reflect.Pointer {
		return "a nil " + rv.Type().String()
	}
	return rv.Type().String()
}

func (c *Codec) planOf(t reflect.Type) (*plan, error) {
	if p, ok := c.plans.Load(t); ok {
		return p.(*plan), nil
	}
	p, err := compile(t)
	if err != nil {
		return nil, err
	}
	got, _ := c.plans.LoadOrStore(t, p)
	return got.(*plan), nil
}
