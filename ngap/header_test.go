package ngap

import (
	"testing"

	f5 "github.com/free5gc/ngap/message"
)

// TestHeader: Header reads the procedure and message type of every message
// we encode, and of free5gc's own bytes (message/initial_ue_message_test.go).
func TestHeader(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%T): %v", m, err)
		}
		proc, typ, ok := Header(b)
		if !ok || proc != m.ProcedureCode() || typ != m.MessageType() {
			t.Errorf("%T: Header = %d %v %v, want %d %v", m, proc, typ, ok, m.ProcedureCode(), m.MessageType())
		}
	}
	free5gc := []byte{0x00, 0x0f, 0x40, 0x50, 0x00, 0x00, 0x05, 0x00, 0x55}
	if proc, typ, ok := Header(free5gc); !ok || proc != ProcInitialUEMessage || typ != InitiatingMessage {
		t.Errorf("free5gc's Initial UE Message: Header = %d %v %v", proc, typ, ok)
	}
	for _, b := range [][]byte{nil, {0x00}, {0x80, 0x15}, {0x60, 0x15}} {
		if _, _, ok := Header(b); ok {
			t.Errorf("Header(% x) ok, want not ok (short, extension or choice 3)", b)
		}
	}
}

// FuzzHeader: where free5gc reads a PDU header, Header reads the same.
func FuzzHeader(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		proc, typ, ok := Header(b)
		x, _, err := f5.ParseMessageType(b)
		if err != nil || x == nil {
			return // Header may read procedures free5gc does not know
		}
		if len(b) > 0 && b[0]&0x80 != 0 {
			// NGAP-PDU has an extension marker and no additions (TS 38.413
			// §9.4.3): free5gc reads an extension choice as one of the
			// three, Header refuses it.
			return
		}
		if !ok || proc != x.ProcedureCode() || int64(typ) != x.MessageType() {
			t.Fatalf("% x: Header = %d %v %v, free5gc %d %d", b, proc, typ, ok, x.ProcedureCode(), x.MessageType())
		}
	})
}
