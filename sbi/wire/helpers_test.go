package wire_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tern5g/tern/sbi/wire"
)

func newCodec(t testing.TB, types ...any) *wire.Codec {
	t.Helper()
	c, err := wire.New(types...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip encodes *v and decodes it into a new value of its type.
func roundTrip(t testing.TB, c *wire.Codec, v any) (any, []byte) {
	t.Helper()
	msg, err := c.Append(nil, v)
	if err != nil {
		t.Fatalf("Append %T: %v", v, err)
	}
	got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if err := c.Decode(msg, got); err != nil {
		t.Fatalf("Decode %T: %v", v, err)
	}
	return got, msg
}

// diff returns the path of the first difference between a and b ("" if
// none), comparing times with Equal and everything else as
// reflect.DeepEqual does.
func diff(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is invalid"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %s != %s", path, a.Type(), b.Type())
	}
	if a.Type() == reflect.TypeFor[time.Time]() {
		if !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v != nil %v", path, a.IsNil(), b.IsNil())
		}
		return diff(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Sprintf("%s: nil %v len %d != nil %v len %d", path, a.IsNil(), a.Len(), b.IsNil(), b.Len())
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if d := diff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Sprintf("%s: nil %v len %d != nil %v len %d", path, a.IsNil(), a.Len(), b.IsNil(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := diff(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := diff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
	}
	return ""
}

// newOf returns a new zero value of the type v points to.
func newOf(v any) any { return reflect.New(reflect.TypeOf(v).Elem()).Interface() }
