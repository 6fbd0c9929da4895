package nas

import (
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
		g[len(g)-1] ^= 0xA5
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		out, err := Encode(m)
		if err != nil {
			return // decodable but not encodable by tern (e.g. a 17-entry TAI list)
		}
		m2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode of % x: %v", out, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed %T:\n %+v\n %+v", m, m, m2)
		}
	})
}

func FuzzUnprotect(f *testing.F) {
	ue := NewSecurityContext(testKEnc, testKInt, NEA2, NIA2, 0)
	for i, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		hdr := IntegrityProtectedAndCiphered
		if i%2 == 0 {
			hdr = IntegrityProtected
		}
		p, err := ue.Protect(b, hdr, Uplink)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
		f.Add(p[:8])
		g := append([]byte(nil), p...)
		g[3] ^= 1
		f.Add(g)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		amf := NewSecurityContext(testKEnc, testKInt, NEA2, NIA2, 0)
		amf.SetNextCount(Uplink, 3)
		before := *amf
		plain, _, err := amf.Unprotect(b, Uplink)
		if err != nil {
			if *amf != before {
				t.Fatal("context changed on error")
			}
			return
		}
		if len(plain) < 3 || plain[0] != EPD5GMM {
			t.Fatalf("accepted a PDU whose content is % x", plain)
		}
		if _, _, err := amf.Unprotect(b, Uplink); err == nil {
			t.Fatal("the same PDU was accepted twice")
		}
		_, _ = Decode(plain)
	})
}

func FuzzDecodeSM(f *testing.F) {
	msgs, _ := sampleSMMessages(f)
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		g := append([]byte(nil), b...)
		g[len(g)-1] ^= 0xA5
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sm, smErr := DecodeSM(b)
		m, err := Decode(b)
		if len(b) > 0 && b[0] == EPD5GSM && (smErr == nil) != (err == nil) {
			t.Fatalf("Decode and DecodeSM disagree on % x: %v / %v", b, err, smErr)
		}
		if smErr == nil && !reflect.DeepEqual(sm, m) {
			t.Fatalf("Decode and DecodeSM differ on % x", b)
		}
		if err != nil {
			return
		}
		out, err := Encode(m)
		if err != nil {
			return // decodable but not encodable (e.g. an accept without QoS rules)
		}
		m2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode of % x: %v", out, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed %T:\n %+v\n %+v", m, m, m2)
		}
	})
}
