package wiretest

import (
	"fmt"
	"reflect"
	"time"
)

// MaxFillDepth is how many pointers, slices and maps deep Fill goes;
// below that they stay nil, which is what ends a recursive type.
const MaxFillDepth = 4

// Fill sets every exported field reachable from v, a non-nil pointer, to
// a non-zero value that differs from field to field: integers span one-
// and multi-byte varints and negative numbers, slices and maps get two
// elements (one below depth 2), times are UTC without a monotonic
// reading, so that a value survives a wire round trip under
// reflect.DeepEqual. Interface fields get a JSON-like value
// (map[string]any with a list, a number, a string, a bool and a nil); set
// fields that must hold a particular type yourself.
func Fill(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("wiretest.Fill: need a non-nil pointer, got %T", v))
	}
	f := filler{}
	f.fill(rv.Elem(), 0)
}

type filler struct{ n int64 }

func (f *filler) next() int64 {
	f.n++
	return f.n
}

var timeType = reflect.TypeFor[time.Time]()

func (f *filler) fill(v reflect.Value, depth int) {
	if v.Type() == timeType {
		n := f.next()
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+n, n*1001).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := f.next()
		x := n * 1000
		if n%2 == 1 {
			x = -x
		}
		if v.OverflowInt(x) {
			x = n%100 + 1
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x := uint64(f.next()) * 1000
		if v.OverflowUint(x) {
			x = x/1000%100 + 1
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.25)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.next()))
	case reflect.Pointer:
		if depth < MaxFillDepth {
			p := reflect.New(v.Type().Elem())
			f.fill(p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		f.slice(v, depth)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), depth)
		}
	case reflect.Map:
		if depth < MaxFillDepth {
			m := reflect.MakeMap(v.Type())
			for range f.width(depth) {
				k := reflect.New(v.Type().Key()).Elem()
				e := reflect.New(v.Type().Elem()).Elem()
				f.fill(k, depth+1)
				f.fill(e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth)
			}
		}
	case reflect.Interface:
		if v.NumMethod() == 0 {
			n := float64(f.next())
			v.Set(reflect.ValueOf(map[string]any{
				"list":   []any{n, fmt.Sprintf("s%v", n), true, nil, []any{}},
				"object": map[string]any{"k": false},
			}))
		}
	}
}

func (f *filler) slice(v reflect.Value, depth int) {
	if depth >= MaxFillDepth {
		return
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		n := byte(f.next())
		v.SetBytes([]byte{n, 0xff, 0, n + 1})
		return
	}
	w := f.width(depth)
	s := reflect.MakeSlice(v.Type(), w, w)
	for i := range w {
		f.fill(s.Index(i), depth+1)
	}
	v.Set(s)
}

// width keeps filled values small where types fan out deep.
func (f *filler) width(depth int) int {
	if depth >= 2 {
		return 1
	}
	return 2
}
