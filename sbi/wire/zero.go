package wire

import (
	"reflect"
	"unsafe"
)

// zeroTest is how absent tests a field, chosen from its size and
// alignment when the plan is built.
type zeroTest uint8

const (
	zeroBytes  zeroTest = iota // any size, a byte at a time
	zeroByte                   // 1 byte
	zeroWord4                  // 4 aligned bytes
	zeroWord                   // 8 aligned bytes
	zeroWord2                  // 16: string, interface
	zeroWord3                  // 24: slice, time.Time
	zeroWordsN                 // a multiple of 8 aligned bytes
)

func zeroTestOf(t reflect.Type) zeroTest {
	size, align := t.Size(), uintptr(t.Align())
	switch {
	case size == 1:
		return zeroByte
	case size == 4 && align%4 == 0:
		return zeroWord4
	case size%8 != 0 || align%8 != 0:
		return zeroBytes
	case size == 8:
		return zeroWord
	case size == 16:
		return zeroWord2
	case size == 24:
		return zeroWord3
	}
	return zeroWordsN
}

// absent reports whether a field's memory is all zero bytes. Such a field
// is left out of the message and the decoder leaves its (zeroed) target
// as it is, so absence round-trips bit for bit whatever the field's kind:
// "", nil, 0, false, the zero Time, a struct of such. A zero value with
// non-zero padding or a non-nil empty slice is simply encoded.
func absent(p unsafe.Pointer, f *field) bool {
	switch f.zero {
	case zeroByte:
		return *(*uint8)(p) == 0
	case zeroWord4:
		return *(*uint32)(p) == 0
	case zeroWord:
		return *(*uint64)(p) == 0
	case zeroWord2:
		w := (*[2]uint64)(p)
		return w[0]|w[1] == 0
	case zeroWord3:
		w := (*[3]uint64)(p)
		return w[0]|w[1]|w[2] == 0
	case zeroWordsN:
		for _, w := range unsafe.Slice((*uint64)(p), f.size/8) {
			if w != 0 {
				return false
			}
		}
		return true
	}
	for _, c := range unsafe.Slice((*byte)(p), f.size) {
		if c != 0 {
			return false
		}
	}
	return true
}
