package ngap

import (
	"errors"
	"reflect"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		g := append([]byte(nil), b...)
		g[len(g)/2] ^= 0x5A
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if de.Cause.Group != CauseProtocol {
				t.Fatalf("cause %v is not a protocol cause", de.Cause)
			}
			if _, err := Encode(de.ErrorIndication()); err != nil {
				t.Fatalf("error indication for %v does not encode: %v", de, err)
			}
			return
		}
		out, err := Encode(m)
		if err != nil {
			return // decodable but outside what tern sends (e.g. AMBR without PDU sessions)
		}
		m2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed %T:\n %+v\n %+v", m, m, m2)
		}
	})
}

// FuzzDecodeTransfer feeds every transfer decoder: none may panic, and what
// one decodes must encode again to a value that decodes the same.
func FuzzDecodeTransfer(f *testing.F) {
	for _, c := range transferCases() {
		b, err := c.enc()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, b := range [][]byte{ueranemuSetupReqTransfer, ueranemuSetupRespTransfer, ueranemuModReqTransfer,
		ueranemuModRespTransfer, ueranemuRelCmdTransfer, ueranemuRelRespTransfer,
		ueranemuPathSwitchRequestTransfer, ueranemuPathSwitchRequestAcknowledgeTransfer, ueranemuPathSwitchRequestUnsuccessfulTransfer,
		ueranemuHandoverCommandTransfer, ueranemuHandoverRequestAcknowledgeTransfer} {
		f.Add(b)
	}
	decs := transferDecoders()
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, dec := range decs {
			v, err := dec(b)
			if err != nil {
				continue
			}
			out, err := reencode(v)
			if err != nil {
				continue // decodable but outside what tern sends
			}
			v2, err := dec(out)
			if err != nil {
				t.Fatalf("%s: re-decode % x: %v", name, out, err)
			}
			if !reflect.DeepEqual(v, v2) {
				t.Fatalf("%s: round trip changed:\n %+v\n %+v", name, v, v2)
			}
		}
	})
}
