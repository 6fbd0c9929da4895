package suci

import (
	"encoding/hex"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"suci-0-208-93-0000-0-0-0000000001",
		"suci-0-274-012-678-1-27-b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457dcb02352410cddd9e730ef3fa87",
		"suci-0-274-012-678-2-27-039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d146a33fc2716ac7dae96aa30a4d",
		"suci-0-001-01-1-f-255-00",
		"suci-0-208-93-0-0-0-",
		"suci-1-x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		// Whatever parses must format back to a string that parses to the
		// same value (String is canonical: lower-case hex).
		q, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(String()) of %q: %v", s, err)
		}
		if q.String() != p.String() {
			t.Fatalf("not canonical: %q -> %q -> %q", s, p.String(), q.String())
		}
		_, _ = Deconceal(p, fuzzKeys())
	})
}

func FuzzDeconceal(f *testing.F) {
	for _, v := range annexC4Vectors {
		f.Add(uint8(v.scheme), uint8(27), unhex(f, v.output))
	}
	f.Add(uint8(0), uint8(0), []byte{0x00, 0x01, 0x20, 0x80, 0xf6})
	f.Add(uint8(2), uint8(27), make([]byte, 33+5+8))
	f.Fuzz(func(t *testing.T, scheme, keyID uint8, out []byte) {
		s := SUCI{PLMN: c4PLMN, RoutingIndicator: "0", Scheme: Scheme(scheme), KeyID: keyID, SchemeOutput: out}
		supi, err := Deconceal(s, fuzzKeys())
		if err == nil && len(supi) < len("imsi-")+6 {
			t.Fatalf("implausible SUPI %q", supi)
		}
		_ = s.String()
	})
}

func fuzzKeys() []HomeNetworkKey {
	a, _ := hex.DecodeString(annexC4Vectors[0].hnPriv)
	b, _ := hex.DecodeString(annexC4Vectors[1].hnPriv)
	return []HomeNetworkKey{
		{ID: 27, Scheme: SchemeProfileA, Private: a},
		{ID: 27, Scheme: SchemeProfileB, Private: b},
	}
}
