package suci

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/tern5g/tern/identity"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TS 33.501 Annex C.4 implementers' test data (C.4.2.1, C.4.3.1, C.4.4.1):
// IMSI with MCC|MNC 274012 and MSIN 001002086. The same values are used by
// free5gc's UDM suci tests (Profile A/B scheme outputs).
var (
	c4PLMN = identity.PLMN{MCC: "274", MNC: "012"}
	c4MSIN = "001002086"
	c4SUPI = "imsi-274012001002086"
)

type annexC4 struct {
	name                                string
	scheme                              Scheme
	hnPriv, hnPub, ephPriv, ephPub      string
	shared, encKey, icb, macKey, output string
}

var annexC4Vectors = []annexC4{
	{
		name:    "C.4.3.1 Profile A",
		scheme:  SchemeProfileA,
		hnPriv:  "c53c22208b61860b06c62e5406a7b330c2b577aa5558981510d128247d38bd1d",
		hnPub:   "5a8d38864820197c3394b92613b20b91633cbd897119273bf8e4a6f4eec0a650",
		ephPriv: "c80949f13ebe61af4ebdbd293ea4f942696b9e815d7e8f0096bbf6ed7de62256",
		ephPub:  "b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457d",
		shared:  "028ddf890ec83cdf163947ce45f6ec1a0e3070ea5fe57e2b1f05139f3e82422a",
		encKey:  "2ba342cabd2b3b1e5e4e890da11b65f6",
		icb:     "e2622cb0cdd08204e721c8ea9b95a7c6",
		macKey:  "d9846966fb7cf5fcf11266c5957dea60b83fff2b7c940690a4bfe57b1eb52bd2",
		output:  "b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457dcb02352410cddd9e730ef3fa87",
	},
	{
		name:    "C.4.4.1 Profile B",
		scheme:  SchemeProfileB,
		hnPriv:  "f1ab1074477ebcc7f554ea1c5fc368b1616730155e0041ac447d6301975fecda",
		hnPub:   "0272da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1",
		ephPriv: "99798858a1dc6a2c68637149a4b1dbfd1fdff5addd62a2142f06699ed7602529",
		ephPub:  "039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d1",
		shared:  "6c7e6518980025b982fbb2ff746e3c2e85a196d252099a7ad23ea7b4c0959cae",
		encKey:  "8a65c3aed80295c12bd55087e965702a",
		icb:     "ef285b4061c3baee858ab6ec68487dae",
		macKey:  "a5ebac0bc48d9cf7ae5ce39cd840ac6c761aec04078fab954d634f923e901c64",
		output:  "039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d146a33fc2716ac7dae96aa30a4d",
	},
}

// The uncompressed form of the C.4.4 home network public key.
const c4ProfileBPubUncompressed = "0472da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1" +
	"5a7ded52fcbb097a4ed250e036c7b9c8c7004c4eedc4f068cd7bf8d3f900e3b4"

func TestAnnexC4(t *testing.T) {
	for _, v := range annexC4Vectors {
		t.Run(v.name, func(t *testing.T) {
			hn := HomeNetworkKey{ID: 27, Scheme: v.scheme, Private: unhex(t, v.hnPriv)}
			pub, err := hn.Public()
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(pub) != v.hnPub {
				t.Fatalf("home network public key = %x, want %s", pub, v.hnPub)
			}
			curve, _ := curveFor(v.scheme)
			eph, err := curve.NewPrivateKey(unhex(t, v.ephPriv))
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(encodePublic(v.scheme, eph.PublicKey())); got != v.ephPub {
				t.Fatalf("ephemeral public key = %s, want %s", got, v.ephPub)
			}
			hnPub, _ := decodePublic(v.scheme, pub)
			z, err := eph.ECDH(hnPub)
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(z) != v.shared {
				t.Fatalf("shared key = %x, want %s", z, v.shared)
			}
			enc, icb, mac := deriveKeys(z, unhex(t, v.ephPub))
			if hex.EncodeToString(enc) != v.encKey || hex.EncodeToString(icb) != v.icb || hex.EncodeToString(mac) != v.macKey {
				t.Fatalf("KDF: enc %x icb %x mac %x", enc, icb, mac)
			}

			s, err := concealWith(c4PLMN, "678", c4MSIN, v.scheme, 27, pub, eph)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(s.SchemeOutput); got != v.output {
				t.Fatalf("scheme output = %s\nwant             %s", got, v.output)
			}
			want := "suci-0-274-012-678-" + map[Scheme]string{SchemeProfileA: "1", SchemeProfileB: "2"}[v.scheme] + "-27-" + v.output
			if s.String() != want {
				t.Fatalf("String() = %s, want %s", s, want)
			}

			// UDM side: from the string form of the published output.
			parsed, err := Parse(want)
			if err != nil {
				t.Fatal(err)
			}
			supi, err := Deconceal(parsed, []HomeNetworkKey{{ID: 27, Scheme: SchemeNull}, hn})
			if err != nil {
				t.Fatal(err)
			}
			if supi != c4SUPI {
				t.Fatalf("SUPI = %s, want %s", supi, c4SUPI)
			}
		})
	}
}

func TestProfileBAcceptsUncompressedHomeKeyRejectsUncompressedEphemeral(t *testing.T) {
	v := annexC4Vectors[1]
	eph, _ := ecdh.P256().NewPrivateKey(unhex(t, v.ephPriv))
	s, err := concealWith(c4PLMN, "0", c4MSIN, SchemeProfileB, 1, unhex(t, c4ProfileBPubUncompressed), eph)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(s.SchemeOutput) != v.output {
		t.Fatalf("scheme output with uncompressed home key = %x", s.SchemeOutput)
	}
	// Annex C.4.4.1 also lists the uncompressed ephemeral key; a scheme
	// output using it must be refused (C.3.4.2: always compressed).
	unc := unhex(t, "049aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d1"+
		"d1f44ea1c87aa7478b954537bde79951e748a43294a4f4cf86eaff1789c9c81f"+"46a33fc2716ac7dae96aa30a4d")
	hn := HomeNetworkKey{ID: 1, Scheme: SchemeProfileB, Private: unhex(t, v.hnPriv)}
	bad := SUCI{PLMN: c4PLMN, RoutingIndicator: "0", Scheme: SchemeProfileB, KeyID: 1, SchemeOutput: unc}
	if _, err := Deconceal(bad, []HomeNetworkKey{hn}); err == nil {
		t.Fatal("uncompressed ephemeral key accepted")
	}
}

// TS 33.501 C.4.2.1: the null-scheme output is the MSIN in TBCD.
func TestNullScheme(t *testing.T) {
	s, err := Conceal(c4PLMN, "0", c4MSIN, SchemeNull, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ToUpper(hex.EncodeToString(s.SchemeOutput)); got != "00012080F6" {
		t.Fatalf("null scheme output = %s, want 00012080F6", got)
	}
	if s.String() != "suci-0-274-012-0-0-0-001002086" {
		t.Fatalf("String() = %s", s)
	}
	p, err := Parse("suci-0-208-93-0000-0-0-0000000001")
	if err != nil {
		t.Fatal(err)
	}
	if p.MSIN != "0000000001" || p.PLMN != (identity.PLMN{MCC: "208", MNC: "93"}) || p.RoutingIndicator != "0000" {
		t.Fatalf("parsed %+v", p)
	}
	supi, err := Deconceal(p, nil)
	if err != nil || supi != "imsi-208930000000001" {
		t.Fatalf("Deconceal = %q, %v", supi, err)
	}
	// Deconceal also works from the TBCD output alone (as decoded from NAS).
	supi, err = Deconceal(SUCI{PLMN: c4PLMN, RoutingIndicator: "0", SchemeOutput: unhex(t, "00012080f6")}, nil)
	if err != nil || supi != c4SUPI {
		t.Fatalf("Deconceal(TBCD) = %q, %v", supi, err)
	}
}

func TestRoundTrips(t *testing.T) {
	plmns := []identity.PLMN{{MCC: "208", MNC: "93"}, {MCC: "310", MNC: "410"}}
	for _, scheme := range []Scheme{SchemeProfileA, SchemeProfileB} {
		hn, err := GenerateHomeNetworkKey(7, scheme)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := hn.Public()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plmns {
			longest := "0000000001"[:15-len(p.MCC)-len(p.MNC)]
			for _, msin := range []string{longest, "123456789", "7"} {
				s, err := Conceal(p, "12", msin, scheme, 7, pub)
				if err != nil {
					t.Fatal(err)
				}
				parsed, err := Parse(s.String())
				if err != nil {
					t.Fatalf("Parse(%s): %v", s, err)
				}
				supi, err := Deconceal(parsed, []HomeNetworkKey{hn})
				if err != nil {
					t.Fatalf("%v %s: %v", scheme, s, err)
				}
				if want := identity.IMSI(p, msin); supi != want {
					t.Fatalf("SUPI = %s, want %s", supi, want)
				}
			}
		}
		// Two concealments of the same SUPI differ (fresh ephemeral key).
		a, _ := Conceal(plmns[0], "0", "1", scheme, 7, pub)
		b, _ := Conceal(plmns[0], "0", "1", scheme, 7, pub)
		if bytes.Equal(a.SchemeOutput, b.SchemeOutput) {
			t.Errorf("%v: concealment is deterministic", scheme)
		}
	}
}

func TestDeconcealFailures(t *testing.T) {
	v := annexC4Vectors[0]
	hn := HomeNetworkKey{ID: 27, Scheme: SchemeProfileA, Private: unhex(t, v.hnPriv)}
	good := SUCI{PLMN: c4PLMN, RoutingIndicator: "0", Scheme: SchemeProfileA, KeyID: 27, SchemeOutput: unhex(t, v.output)}
	if _, err := Deconceal(good, []HomeNetworkKey{hn}); err != nil {
		t.Fatal(err)
	}

	for i := range good.SchemeOutput {
		if i < x25519KeyLen {
			continue // a changed ephemeral key gives another shared key: still a MAC failure, tested below
		}
		tampered := good
		tampered.SchemeOutput = bytes.Clone(good.SchemeOutput)
		tampered.SchemeOutput[i] ^= 0x01
		if _, err := Deconceal(tampered, []HomeNetworkKey{hn}); !errors.Is(err, ErrMACFailure) {
			t.Fatalf("flip at %d: err = %v, want ErrMACFailure", i, err)
		}
	}
	tampered := good
	tampered.SchemeOutput = bytes.Clone(good.SchemeOutput)
	tampered.SchemeOutput[5] ^= 0x40
	if _, err := Deconceal(tampered, []HomeNetworkKey{hn}); err == nil {
		t.Fatal("tampered ephemeral key accepted")
	}

	wrongID := good
	wrongID.KeyID = 28
	if _, err := Deconceal(wrongID, []HomeNetworkKey{hn}); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("wrong key id: err = %v, want ErrUnknownKey", err)
	}
	wrongScheme := good
	wrongScheme.Scheme = SchemeProfileB
	if _, err := Deconceal(wrongScheme, []HomeNetworkKey{hn}); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("scheme mismatch: err = %v, want ErrUnknownKey", err)
	}
	other, _ := GenerateHomeNetworkKey(27, SchemeProfileA)
	if _, err := Deconceal(good, []HomeNetworkKey{other}); !errors.Is(err, ErrMACFailure) {
		t.Fatalf("wrong private key: err = %v, want ErrMACFailure", err)
	}
	unsupported := good
	unsupported.Scheme = 5
	if _, err := Deconceal(unsupported, []HomeNetworkKey{hn}); !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatalf("scheme 5: err = %v", err)
	}
	short := good
	short.SchemeOutput = good.SchemeOutput[:x25519KeyLen+macTagLen]
	if _, err := Deconceal(short, []HomeNetworkKey{hn}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no ciphertext: err = %v", err)
	}
	badKey := HomeNetworkKey{ID: 27, Scheme: SchemeProfileB, Private: make([]byte, 32)}
	if _, err := badKey.Public(); err == nil {
		t.Fatal("zero P-256 scalar accepted")
	}
}

func TestParse(t *testing.T) {
	good := []string{
		"suci-0-208-93-0000-0-0-0000000001",
		"suci-0-208-93-0-1-1-b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457dcb02352410cddd9e730ef3fa87",
		"suci-0-001-01-1234-2-255-00ff",
		"suci-0-001-01-1234-c-3-00ff", // proprietary scheme: parsed, not de-concealable
	}
	for _, s := range good {
		p, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if p.String() != s {
			t.Errorf("round trip: %q -> %q", s, p.String())
		}
	}
	if p, _ := Parse("suci-0-208-93-0-1-1-ABCD"); p.String() != "suci-0-208-93-0-1-1-abcd" {
		t.Errorf("upper-case hex not normalised: %q", p.String())
	}
	bad := []string{
		"", "suci", "imsi-208930000000001", "suci-1-208-93-0-0-0-1",
		"suci-0-20-93-0-0-0-1", "suci-0-208-9-0-0-0-1", "suci-0-208-9344-0-0-0-1",
		"suci-0-208-93--0-0-1", "suci-0-208-93-12345-0-0-1", "suci-0-208-93-0-0-1-1",
		"suci-0-208-93-0-0-0-", "suci-0-208-93-0-0-0-12345678901", "suci-0-208-93-0-0-0-12a",
		"suci-0-208-93-0-1-1-abc", "suci-0-208-93-0-1-1-zz", "suci-0-208-93-0-1-256-00",
		"suci-0-208-93-0-1-01-00", "suci-0-208-93-0-01-1-00", "suci-0-208-93-0-g-1-00",
		"suci-0-208-93-0-1-1-", "suci-0-208-93-0-1-1-00-00",
	}
	for _, s := range bad {
		if _, err := Parse(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) err = %v, want ErrMalformed", s, err)
		}
	}
}

func TestTBCD(t *testing.T) {
	for _, s := range []string{"1", "12", "001002086", "0000000001"} {
		got, err := decodeTBCD(encodeTBCD(s))
		if err != nil || got != s {
			t.Errorf("TBCD round trip %q -> %q, %v", s, got, err)
		}
	}
	for _, b := range [][]byte{{}, {0xF1, 0x23}, {0x1A}, {0xFF}} {
		if _, err := decodeTBCD(b); err == nil {
			t.Errorf("decodeTBCD(%x) accepted", b)
		}
	}
}
