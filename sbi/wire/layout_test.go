package wire_test

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
)

func layout(t *testing.T, v any) uint64 {
	t.Helper()
	h, err := newCodec(t).LayoutHash(reflect.TypeOf(v))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type (
	v1 struct {
		A string
		B int32
	}
	v1Twin struct { // another name, the same layout
		A string
		B int32
	}
	v1Added struct {
		A string
		B int32
		C bool
	}
	v1Renamed struct {
		A string
		C int32
	}
	v1Reordered struct {
		B int32
		A string
	}
	v1Widened struct {
		A string
		B int64
	}
	v1Unexported struct {
		A string
		B int32
		c bool // not in the layout
	}
	v1Nested struct {
		A string
		B *v1
	}
	v1NestedChanged struct {
		A string
		B *v1Added
	}
	list struct {
		V    int32
		Next *list
	}
	listTwin struct {
		V    int32
		Next *listTwin
	}
	notList struct {
		V    int32
		Next *v1
	}
)

func TestLayoutHash(t *testing.T) {
	base := layout(t, v1{})
	for _, v := range []any{v1Added{}, v1Renamed{}, v1Reordered{}, v1Widened{}, v1Nested{}, int32(0), []v1{}} {
		if layout(t, v) == base {
			t.Errorf("%T has the layout of v1", v)
		}
	}
	for _, v := range []any{v1Twin{}, v1Unexported{}} {
		if layout(t, v) != base {
			t.Errorf("%T differs from v1, but only in what the layout leaves out", v)
		}
	}
	if layout(t, v1Nested{}) == layout(t, v1NestedChanged{}) {
		t.Error("a change in a nested type leaves the layout as it was")
	}
	if layout(t, list{}) != layout(t, listTwin{}) || layout(t, list{}) == layout(t, notList{}) {
		t.Error("recursive types hash by structure")
	}
	// The hash is what the header carries.
	msg, err := newCodec(t).Append(nil, &v1{A: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(msg[3:11]); got != base {
		t.Fatalf("header hash %016x, LayoutHash %016x", got, base)
	}
}

// TestLayoutMismatchRefused: a message for one type (or one model
// version) is refused by another instead of misread.
func TestLayoutMismatchRefused(t *testing.T) {
	c := newCodec(t)
	msg, err := c.Append(nil, &v1{A: "a", B: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []any{new(v1Added), new(v1Widened), new(models.Udm_SDM_Nssai), new(sbi.SMContextCreate)} {
		err := c.Decode(msg, target)
		if !errors.Is(err, wire.ErrLayoutMismatch) || !strings.Contains(err.Error(), "message layout") {
			t.Errorf("Decode into %T = %v, want ErrLayoutMismatch", target, err)
		}
	}
	var twin v1Twin
	if err := c.Decode(msg, &twin); err != nil || twin != (v1Twin{A: "a", B: 1}) {
		t.Errorf("Decode into the twin type = %v, %+v", err, twin)
	}
}

// TestDecodeZeroesTarget: Decode fills the target as if it were new.
func TestDecodeZeroesTarget(t *testing.T) {
	c := newCodec(t)
	msg, err := c.Append(nil, &v1Unexported{A: "a"})
	if err != nil {
		t.Fatal(err)
	}
	got := v1Unexported{A: "old", B: 9, c: true}
	if err := c.Decode(msg, &got); err != nil {
		t.Fatal(err)
	}
	if got != (v1Unexported{A: "a"}) {
		t.Fatalf("got %+v", got)
	}
}

func TestTargetMustBePointer(t *testing.T) {
	c := newCodec(t)
	for _, v := range []any{nil, v1{}, (*v1)(nil)} {
		if _, err := c.Append(nil, v); !errors.Is(err, wire.ErrUnsupported) {
			t.Errorf("Append(%#v) = %v", v, err)
		}
		if err := c.Decode([]byte("tw"), v); !errors.Is(err, wire.ErrUnsupported) {
			t.Errorf("Decode(%#v) = %v", v, err)
		}
	}
	type withFunc struct{ F func() }
	if _, err := c.Append(nil, &withFunc{}); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "withFunc.F") {
		t.Errorf("Append(func field) = %v", err)
	}
}
