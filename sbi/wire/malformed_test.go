package wire_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// header returns the header of messages for *v.
func header(t *testing.T, c *wire.Codec, v any) []byte {
	t.Helper()
	msg, err := c.Append(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return msg[:11:11]
}

func wantMalformed(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

// TestTruncatedAndTrailing: every prefix of a real message, and the
// message with a byte more, is refused.
func TestTruncatedAndTrailing(t *testing.T) {
	c := newCodec(t, wire.SBITypes()...)
	var vals []any
	for _, s := range wiretest.Samples() {
		vals = append(vals, s.Value)
	}
	for _, v := range sbiValues()[:12] {
		fillSBI(v)
		vals = append(vals, v)
	}
	for _, v := range vals {
		msg, err := c.Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(msg) {
			err := c.Decode(msg[:n], newOf(v))
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("%T cut to %d of %d bytes: %v", v, n, len(msg), err)
			}
		}
		wantMalformed(t, c.Decode(append(msg, 0), newOf(v)), "1 trailing bytes")
	}
}

func TestHeaderRefused(t *testing.T) {
	c := newCodec(t)
	v := &models.Snssai{Sst: 1}
	msg, err := c.Append(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	wantMalformed(t, c.Decode(nil, v), "shorter than the 11-byte header")
	bad := append([]byte("{\"sst\":1}  "), msg[11:]...)
	wantMalformed(t, c.Decode(bad, v), "not a wire message")
	bad = append([]byte{}, msg...)
	bad[2] = 9
	if err := c.Decode(bad, v); !errors.Is(err, wire.ErrLayoutMismatch) || !strings.Contains(err.Error(), "format version 9") {
		t.Fatalf("version 9: %v", err)
	}
}

type small struct {
	B  bool
	I  int16
	P  *small
	S  string
	L  []string
	M  map[string]int32
	X  any
	In *inner
}

type inner struct{ Mcc string }

// TestBadValues crafts bodies that break each rule of the layout and
// checks the error names the field and the byte.
func TestBadValues(t *testing.T) {
	c := newCodec(t)
	h := header(t, c, &small{})
	for _, tc := range []struct {
		name string
		body []byte
		want []string
	}{
		{"bool", []byte{0x01, 2}, []string{"small.B at byte 12", "bool byte 2"}},
		{"int16 range", []byte{0x02, 0x80, 0x80, 0x04}, []string{"small.I at byte 12", "32768 overflows int16"}},
		{"varint too long", []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []string{"longer than 64 bits"}},
		{"pointer flag", []byte{0x04, 7}, []string{"small.P", "pointer flag 7"}},
		{"string length", []byte{0x08, 0x05, 'a'}, []string{"small.S", "string of 5 bytes, 1 left"}},
		{"slice count", []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0x0f}, []string{"small.L at byte 12", "[]string: 4294967294 elements"}},
		{"duplicate key", []byte{0x20, 3, 1, 'k', 2, 1, 'k', 4}, []string{"small.M", `duplicate map key "k"`}},
		{"interface tag", []byte{0x40, 9}, []string{"small.X at byte 12", "unknown interface tag 9"}},
		{"nested", []byte{0x80, 1, 0x01, 0x7f}, []string{"small.In.Mcc at byte 14", "string of 127 bytes, 0 left"}},
		{"bitmap", []byte{0x00, 0x00}, []string{"trailing"}},
		{"deep pointer", []byte{0x04, 1, 0x04, 1, 0x00, 0x00}, []string{"1 trailing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := append(append([]byte{}, h...), tc.body...)
			wantMalformed(t, c.Decode(msg, new(small)), tc.want...)
		})
	}
	// A bitmap bit past the last field.
	type three struct{ A, B, C bool }
	msg := append(header(t, c, &three{}), 0x08)
	wantMalformed(t, c.Decode(msg, new(three)), "bitmap marks field 3, the type has 3")
}

type node struct{ Next *node }

// TestDepthLimit: a cyclic value is refused on encoding; a message nesting
// deeper than MaxDepth (which no encoder writes) on decoding.
func TestDepthLimit(t *testing.T) {
	c := newCodec(t)
	cyclic := &node{}
	cyclic.Next = cyclic
	if _, err := c.Append(nil, cyclic); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("cyclic: %v", err)
	}
	deep := header(t, c, &node{})
	for range 200 {
		deep = append(deep, 0x01, 1) // bitmap: Next present; pointer: non-nil
	}
	deep = append(deep, 0x00)
	wantMalformed(t, c.Decode(deep, new(node)), "nesting deeper than")

	list := header(t, c, &holder{})
	list = append(list, 0x01)
	for range 200 {
		list = append(list, 4, 2) // []any of one element
	}
	list = append(list, 0)
	wantMalformed(t, c.Decode(list, new(holder)), "nesting deeper than")
}

// TestHugeCountsAllocateNothing: counts and lengths the input cannot back
// are refused before allocating, and so is what few bytes may ask for
// legitimately but in bulk: here a slice of 4096 megabyte-sized structs,
// each present in one bitmap byte.
func TestHugeCountsAllocateNothing(t *testing.T) {
	type big struct {
		A [1 << 17]uint64
		B bool
	}
	c := newCodec(t)
	cases := map[string][]byte{}
	for name, v := range map[string]any{"strings": new([]string), "map": new(map[string]string), "bytes": new([]byte)} {
		msg := header(t, c, v)
		cases[name] = binary.AppendUvarint(msg, 1<<62)
	}
	bulk := binary.AppendUvarint(header(t, c, new([]big)), 4096+1)
	cases["budget"] = append(bulk, make([]byte, 4096)...)

	for name, msg := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var err error
		switch name {
		case "strings":
			err = c.Decode(msg, new([]string))
		case "map":
			err = c.Decode(msg, new(map[string]string))
		case "bytes":
			err = c.Decode(msg, new([]byte))
		case "budget":
			err = c.Decode(msg, new([]big))
		}
		runtime.ReadMemStats(&after)
		wantMalformed(t, err)
		if name == "budget" && !strings.Contains(err.Error(), "allocation budget") {
			t.Errorf("budget: %v", err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<10 {
			t.Errorf("%s: decoding allocated %d bytes before refusing", name, grew)
		}
	}
}
