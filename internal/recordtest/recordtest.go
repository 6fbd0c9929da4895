// Package recordtest holds what the record tests of the NFs (issue 36:
// the state of an NF as versioned records, sbi/wire-encoded) all do:
// encode a set of records, and corrupt an encoded record byte by byte to
// see it refused. Test code only.
package recordtest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tern5g/tern/sbi/wire"
)

// Encode encodes each record of recs with sbi/wire.
func Encode[T any](t testing.TB, recs []T) [][]byte {
	t.Helper()
	out := make([][]byte, 0, len(recs))
	for i := range recs {
		b, err := wire.Append(nil, &recs[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Corruptions flips one byte of enc at a time (xor 0x41) and counts the
// corruptions refused: the record no longer decodes, or restore refuses
// what it decodes to with bad. restore taking the record is fine (the
// byte was one the record does not check); refusing it with another error
// fails t.
func Corruptions[T any](t testing.TB, enc []byte, restore func(T) error, bad error) (refused int) {
	t.Helper()
	for i := range enc {
		b := bytes.Clone(enc)
		b[i] ^= 0x41
		var r T
		if err := wire.Decode(b, &r); err != nil {
			refused++
			continue
		}
		if err := restore(r); err != nil {
			if !errors.Is(err, bad) {
				t.Fatalf("byte %d: restore: %v, want nil or %v", i, err, bad)
			}
			refused++
		}
	}
	return refused
}
