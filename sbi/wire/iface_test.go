package wire_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi/wire"
)

type holder struct {
	V any
	S fmt.Stringer // a non-empty interface
}

type name struct{ First, Last string }

func (n name) String() string { return n.First + " " + n.Last }

func TestInterfaceValues(t *testing.T) {
	c := newCodec(t, name{}, models.Snssai{}, int64(0))
	for _, v := range []any{
		nil,
		true,
		false,
		3.5,
		"text",
		"",
		[]any(nil),
		[]any{},
		map[string]any(nil),
		map[string]any{},
		[]any{1.0, "a", nil, []any{map[string]any{"x": []any{false}}}},
		map[string]any{"dnn": "internet", "n": 2.0, "l": []any{"x"}, "o": map[string]any{}},
		name{"Ada", "Lovelace"},
		&name{"Alan", "Turing"},
		(*name)(nil),
		models.Snssai{Sst: 1, Sd: "010203"},
		&models.Snssai{Sst: 2},
		int64(-7), // one pointer word, but not a pointer: copied to be addressed
		[]any{name{"In", "List"}, &models.Snssai{Sst: 3}},
	} {
		in := &holder{V: v, S: name{"S", "T"}}
		got, _ := roundTrip(t, c, in)
		if !reflect.DeepEqual(got, in) {
			t.Errorf("%#v: got %#v", v, got.(*holder).V)
		}
	}
	// A nil non-empty interface.
	if got, _ := roundTrip(t, c, &holder{}); !reflect.DeepEqual(got, &holder{}) {
		t.Errorf("nil Stringer: got %#v", got)
	}
}

func TestInterfaceUnregistered(t *testing.T) {
	c := newCodec(t)
	in := &holder{V: []any{"ok", map[string]any{"k": 1}}} // int is not JSON-like
	buf := []byte("keep")
	out, err := c.Append(buf, in)
	if !errors.Is(err, wire.ErrUnsupported) {
		t.Fatalf("Append = %v, want ErrUnsupported", err)
	}
	if string(out) != "keep" {
		t.Fatalf("Append changed dst to %q on error", out)
	}
	for _, want := range []string{`holder.V[1]["k"](int)`, "int in an interface is not registered"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestInterfaceTypeUnknownToDecoder: a peer that registered a type this
// Codec does not know is a layout mismatch, not garbage.
func TestInterfaceTypeUnknownToDecoder(t *testing.T) {
	msg, err := newCodec(t, name{}).Append(nil, &holder{V: name{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	err = newCodec(t).Decode(msg, new(holder))
	if !errors.Is(err, wire.ErrLayoutMismatch) || !strings.Contains(err.Error(), "holder.V") {
		t.Fatalf("Decode = %v, want ErrLayoutMismatch at holder.V", err)
	}
}

// TestInterfaceTypeOtherLayout: the same registered name with another
// layout (a type changed between two builds) is refused. Two local types
// of one name in one package have the same registered name.
func TestInterfaceTypeOtherLayout(t *testing.T) {
	msg := func() []byte {
		type av struct{ Rand string }
		b, err := newCodec(t, av{}).Append(nil, &holder{V: av{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()
	type av struct {
		Rand string
		Autn string
	}
	err := newCodec(t, av{}).Decode(msg, new(holder))
	if !errors.Is(err, wire.ErrLayoutMismatch) || !strings.Contains(err.Error(), "wire_test.av with layout") {
		t.Fatalf("Decode = %v, want ErrLayoutMismatch naming av", err)
	}
}

func TestInterfaceNotImplemented(t *testing.T) {
	// S is a fmt.Stringer; a message putting a Snssai there is refused.
	type loose struct {
		V any
		S any
	}
	c := newCodec(t, models.Snssai{})
	msg, err := c.Append(nil, &loose{S: models.Snssai{Sst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// holder and loose differ only in S's interface type, which the
	// layout leaves to the tag; the decoder checks it.
	err = c.Decode(msg, new(holder))
	if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "does not implement fmt.Stringer") {
		t.Fatalf("Decode = %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := wire.New(nil); !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("New(nil) = %v", err)
	}
	type bad struct{ C chan int }
	if _, err := wire.New(bad{}); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "bad.C") {
		t.Errorf("New(chan field) = %v", err)
	}
	type key struct{ K any }
	type badKey struct{ M map[key]int }
	if _, err := wire.New(badKey{}); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "badKey.M") {
		t.Errorf("New(interface in map key) = %v", err)
	}
}
