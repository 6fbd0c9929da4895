package shm

import (
	"bytes"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	slot := make([]byte, 256)
	r := record{id: 42<<idxBits | 7, gen: 9, op: 3, status: 404, flags: flagBadAnswer}
	encodeRecord(slot, r, []byte("payload"))
	got, p, err := decodeRecord(slot, 9, 224)
	if err != nil || got != r || string(p) != "payload" {
		t.Fatalf("decode = %+v %q %v", got, p, err)
	}
	if _, _, err := decodeRecord(slot, 10, 224); err != errStaleGen {
		t.Errorf("other generation: %v", err)
	}
	if _, _, err := decodeRecord(slot, 9, 3); err != errBadLength {
		t.Errorf("over max: %v", err)
	}
	if _, _, err := decodeRecord(slot[:20], 9, 224); err != errShort {
		t.Errorf("short slot: %v", err)
	}
	slot[recID]++
	if _, _, err := decodeRecord(slot, 9, 224); err != errBadCheck {
		t.Errorf("changed ID: %v", err)
	}
}

// FuzzRecord: decoding arbitrary bytes never panics, never returns a
// payload outside the slot or over the maximum, and what encodes decodes.
func FuzzRecord(f *testing.F) {
	slot := make([]byte, 96)
	encodeRecord(slot, record{id: 1<<idxBits | 1, gen: 5, op: 1, status: 200}, []byte("hello"))
	f.Add(slot, uint32(5), uint16(64))
	f.Add(slot[:40], uint32(5), uint16(64))
	f.Add([]byte{}, uint32(0), uint16(0))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint32(0xffffffff), uint16(0xffff))
	f.Fuzz(func(t *testing.T, data []byte, gen uint32, max uint16) {
		r, p, err := decodeRecord(data, gen, int(max))
		if err == nil {
			if len(p) > int(max) || len(p) > len(data)-RecordHeaderBytes {
				t.Fatalf("payload of %d bytes from %d-byte slot, max %d", len(p), len(data), max)
			}
			if r.gen != gen {
				t.Fatalf("generation %d accepted, want %d", r.gen, gen)
			}
		}
		// Encode what we can and read it back.
		if len(data) >= RecordHeaderBytes {
			out := make([]byte, len(data))
			payload := data[RecordHeaderBytes:]
			want := record{id: uint64(len(data)) << 20, gen: gen, op: max, status: uint16(gen)}
			encodeRecord(out, want, payload)
			got, q, err := decodeRecord(out, gen, len(payload))
			if err != nil || got != want || !bytes.Equal(q, payload) {
				t.Fatalf("round trip: %+v %v", got, err)
			}
		}
	})
}
