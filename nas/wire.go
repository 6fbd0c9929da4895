package nas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// writer appends TS 24.007 §11.2 formatted IEs to a buffer.
type writer struct{ b []byte }

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) raw(v []byte) { w.b = append(w.b, v...) }
func (w *writer) lv(v []byte)  { w.b = append(w.b, uint8(len(v))); w.b = append(w.b, v...) }
func (w *writer) tlv(iei uint8, v []byte) {
	w.b = append(w.b, iei, uint8(len(v)))
	w.b = append(w.b, v...)
}
func (w *writer) lve(v []byte) {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(v)))
	w.b = append(w.b, v...)
}
func (w *writer) tlve(iei uint8, v []byte) { w.u8(iei); w.lve(v) }

// errTruncated reports input that ends inside an IE.
var errTruncated = errors.New("truncated")

// reader consumes TS 24.007 §11.2 formatted IEs. The first error sticks;
// later reads return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) u8() uint8 {
	if r.err != nil || len(r.b) < 1 {
		r.fail(errTruncated)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) n(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.fail(errTruncated)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) lv() []byte { return r.n(int(r.u8())) }

func (r *reader) lve() []byte {
	h := r.n(2)
	if h == nil {
		return nil
	}
	return r.n(int(binary.BigEndian.Uint16(h)))
}

// optIE is one optional IE read by optionals: for type-1 IEs (IEI >= 0x80)
// iei holds the high nibble and v the octet itself.
type optIE struct {
	iei uint8
	v   []byte
}

// optionals walks the optional part of a message. tv gives the total length
// (IEI included) of the message's type-3 TV IEs; all other IEIs follow the
// TS 24.007 §11.2.4 rules: 0x8X-0xFX type 1 (one octet), 0x7X TLV-E,
// otherwise TLV. fn is called for the first occurrence of each IEI only: a
// repeated IE is ignored (TS 24.501 §7.6.3). Unknown IEs are the caller's to
// skip (return nil).
//
// An error from fn marks the IE as syntactically incorrect: the IE is
// treated as not present and the walk goes on (TS 24.501 §7.7.1), so fn
// must set the message's fields only once the IE has decoded. Only an error
// wrapped by failMessage (a conditional IE, §7.7.2, or an IE whose errors a
// procedure answers with a cause of its own) fails the message, as does an
// IE that runs past the end of the message: what follows it cannot be
// located.
func (r *reader) optionals(tv map[uint8]int, fn func(ie optIE) error) {
	var seen [4]uint64 // one bit per IEI (type 1: the high nibble)
	for r.err == nil && len(r.b) > 0 {
		iei := r.b[0]
		var ie optIE
		switch {
		case iei >= 0x80:
			ie = optIE{iei: iei & 0xF0, v: r.n(1)}
		case tv[iei] > 0:
			v := r.n(tv[iei])
			if v != nil {
				v = v[1:]
			}
			ie = optIE{iei: iei, v: v}
		case iei&0xF0 == 0x70:
			r.u8()
			ie = optIE{iei: iei, v: r.lve()}
		default:
			r.u8()
			ie = optIE{iei: iei, v: r.lv()}
		}
		if r.err != nil {
			r.err = fmt.Errorf("IE 0x%02x: %w", iei, r.err)
			return
		}
		word, bit := ie.iei>>6, uint64(1)<<(ie.iei&63)
		if seen[word]&bit != 0 {
			continue
		}
		seen[word] |= bit
		if err := fn(ie); err != nil {
			var f fatalIE
			if errors.As(err, &f) {
				r.fail(fmt.Errorf("IE 0x%02x: %w", iei, f.error))
				return
			}
			// TS 24.501 §7.7.1: not present.
		}
	}
}

// fatalIE is an optional-part IE error that fails the whole message.
type fatalIE struct{ error }

// failMessage makes err, returned by an optionals callback, fail the
// message instead of dropping the IE.
func failMessage(err error) error {
	if err == nil {
		return nil
	}
	return fatalIE{err}
}
