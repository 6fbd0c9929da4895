package identity

import (
	"bytes"
	"testing"
)

func TestPLMNBytes(t *testing.T) {
	// TS 24.501 Figure 9.11.3.4.1 layout; 208/93 -> 02 f8 39, 310/410 -> 13 00 14.
	cases := []struct {
		plmn string
		want []byte
	}{
		{"20893", []byte{0x02, 0xf8, 0x39}},
		{"310410", []byte{0x13, 0x00, 0x14}},
		{"00101", []byte{0x00, 0xf1, 0x10}},
	}
	for _, c := range cases {
		p, err := ParsePLMN(c.plmn)
		if err != nil {
			t.Fatal(err)
		}
		b := p.Bytes()
		if !bytes.Equal(b[:], c.want) {
			t.Errorf("%s: got % x want % x", c.plmn, b, c.want)
		}
		back, err := PLMNFromBytes(b[:])
		if err != nil || back != p {
			t.Errorf("%s: round trip got %v, %v", c.plmn, back, err)
		}
	}
	if _, err := PLMNFromBytes([]byte{0xaa, 0xf8, 0x39}); err == nil {
		t.Error("non-BCD digit accepted")
	}
	if _, err := ParsePLMN("2089"); err == nil {
		t.Error("4-digit plmn accepted")
	}
}

func TestSNSSAI(t *testing.T) {
	s, err := ParseSNSSAI("1-010203")
	if err != nil || s.SST != 1 || s.SD != 0x010203 || !s.HasSD() || s.String() != "1-010203" {
		t.Fatalf("got %+v %v", s, err)
	}
	s, err = ParseSNSSAI("2")
	if err != nil || s.HasSD() || s.String() != "2" {
		t.Fatalf("got %+v %v", s, err)
	}
	for _, bad := range []string{"", "x", "1-12", "300", "1-zzzzzz"} {
		if _, err := ParseSNSSAI(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAMFID(t *testing.T) {
	a := AMFID{RegionID: 0xca, SetID: 0x3fe, Pointer: 0x2a}
	b := a.Bytes()
	back, err := AMFIDFromBytes(b[:])
	if err != nil || back != a {
		t.Fatalf("round trip %+v -> % x -> %+v %v", a, b, back, err)
	}
	if (AMFID{SetID: 0x400}).Validate() == nil || (AMFID{Pointer: 0x40}).Validate() == nil {
		t.Fatal("overwide fields accepted")
	}
}

func TestSUPI(t *testing.T) {
	p := PLMN{MCC: "208", MNC: "93"}
	supi := IMSI(p, "0000000001")
	if supi != "imsi-208930000000001" {
		t.Fatal(supi)
	}
	imsi, err := ParseSUPI(supi)
	if err != nil || imsi != "208930000000001" {
		t.Fatal(imsi, err)
	}
	for _, bad := range []string{"nai-x", "imsi-12a", "imsi-1234567890123456"} {
		if _, err := ParseSUPI(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
