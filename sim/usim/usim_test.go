package usim

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

var (
	plmn = identity.PLMN{MCC: "208", MNC: "93"}
	k    = unhex("8baf473f2f8fd09487cccbd7097c6862")
	opc  = unhex("8e27b6af0e692e750f32667a3b14605d")
	rnd  = unhex("0123456789abcdef0123456789abcdef")
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func newCard(t *testing.T, s Subscriber) *USIM {
	t.Helper()
	if s.PLMN == (identity.PLMN{}) {
		s.PLMN = plmn
	}
	if s.MSIN == "" {
		s.MSIN = "0000000001"
	}
	if s.K == nil {
		s.K, s.OPc = k, opc
	}
	u, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// network builds what the AUSF/UDM would: a vector for sqn and the expected
// RES*, KAUSF and KSEAF (TS 33.501 §6.1.3.2).
func network(t *testing.T, sqn uint64, amf []byte) (milenage.Vector, []byte, []byte) {
	t.Helper()
	sqnB, err := milenage.SQNBytes(sqn)
	if err != nil {
		t.Fatal(err)
	}
	v, err := milenage.Generate(k, opc, rnd, sqnB, amf)
	if err != nil {
		t.Fatal(err)
	}
	snn := kdf.ServingNetworkName(plmn)
	xresStar := kdf.RESStar(v.CK, v.IK, snn, v.RAND, v.XRES)
	kausf := kdf.KAUSF(v.CK, v.IK, snn, v.AUTN[:6])
	return v, xresStar, kausf
}

func TestAuthenticateNetworkVector(t *testing.T) {
	u := newCard(t, Subscriber{SQN: 0x20})
	v, xresStar, kausf := network(t, 0x21, []byte{0x80, 0x00})
	snn := kdf.ServingNetworkName(plmn)
	abba := []byte{0, 0}
	got, err := u.Authenticate(snn, v.RAND, v.AUTN, abba)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.RESStar, xresStar) {
		t.Fatalf("RES* %x, network expects %x", got.RESStar, xresStar)
	}
	if !bytes.Equal(got.KAUSF, kausf) {
		t.Fatalf("KAUSF %x, network has %x", got.KAUSF, kausf)
	}
	kseaf := kdf.KSEAF(kausf, snn)
	if !bytes.Equal(got.KSEAF, kseaf) {
		t.Fatalf("KSEAF mismatch")
	}
	if want := kdf.KAMF(kseaf, "imsi-208930000000001", abba); !bytes.Equal(got.KAMF, want) {
		t.Fatalf("KAMF %x, AMF derives %x", got.KAMF, want)
	}
	if u.SQN() != 0x21 {
		t.Fatalf("SQN after accept = %#x, want 0x21", u.SQN())
	}
	// The same vector again is a replay: synch failure with an AUTS the
	// network can verify and read SQN_MS from.
	_, err = u.Authenticate(snn, v.RAND, v.AUTN, abba)
	var se *milenage.SyncError
	if !errors.As(err, &se) {
		t.Fatalf("replayed vector: err %v, want *SyncError", err)
	}
	sqnMS, err := milenage.VerifyAUTS(k, opc, v.RAND, se.AUTS)
	if err != nil || sqnMS != 0x21 {
		t.Fatalf("network resync: sqnMS %#x err %v, want 0x21", sqnMS, err)
	}
}

func TestAuthenticateFailures(t *testing.T) {
	snn := kdf.ServingNetworkName(plmn)
	v, _, _ := network(t, 5, []byte{0x80, 0x00})

	wrongK := newCard(t, Subscriber{K: unhex("000102030405060708090a0b0c0d0e0f"), OPc: opc})
	if _, err := wrongK.Authenticate(snn, v.RAND, v.AUTN, []byte{0, 0}); !errors.Is(err, milenage.ErrMACFailure) {
		t.Fatalf("wrong K: err %v, want ErrMACFailure", err)
	}

	ahead := newCard(t, Subscriber{SQN: 1000})
	var se *milenage.SyncError
	if _, err := ahead.Authenticate(snn, v.RAND, v.AUTN, []byte{0, 0}); !errors.As(err, &se) {
		t.Fatalf("SQN ahead: err %v, want *SyncError", err)
	}
	if ahead.SQN() != 1000 {
		t.Fatalf("rejected challenge changed SQN to %d", ahead.SQN())
	}

	v4g, _, _ := network(t, 6, []byte{0x00, 0x00}) // separation bit 0
	card := newCard(t, Subscriber{})
	if _, err := card.Authenticate(snn, v4g.RAND, v4g.AUTN, []byte{0, 0}); !errors.Is(err, ErrNon5GAuth) {
		t.Fatalf("AMF separation bit 0: err %v, want ErrNon5GAuth", err)
	}
}

func TestSUCI(t *testing.T) {
	null := newCard(t, Subscriber{})
	s, err := null.SUCI()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "suci-0-208-93-0000-0-0-0000000001" {
		t.Fatalf("null SUCI %q", got)
	}
	for _, scheme := range []suci.Scheme{suci.SchemeProfileA, suci.SchemeProfileB} {
		hn, err := suci.GenerateHomeNetworkKey(3, scheme)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := hn.Public()
		if err != nil {
			t.Fatal(err)
		}
		card := newCard(t, Subscriber{Scheme: scheme, HNKeyID: 3, HNPublicKey: pub})
		a, _ := card.SUCI()
		b, err := card.SUCI()
		if err != nil {
			t.Fatal(err)
		}
		if a.String() == b.String() || strings.Contains(a.String(), "0000000001") {
			t.Fatalf("%s: SUCIs %q %q must differ and hide the MSIN", scheme, a, b)
		}
		parsed, err := suci.Parse(b.String())
		if err != nil {
			t.Fatal(err)
		}
		supi, err := suci.Deconceal(parsed, []suci.HomeNetworkKey{hn})
		if err != nil || supi != "imsi-208930000000001" {
			t.Fatalf("%s: deconceal %q %v", scheme, supi, err)
		}
	}
}

func TestNewValidates(t *testing.T) {
	bad := []Subscriber{
		{PLMN: plmn, MSIN: "12", K: k, OPc: opc},
		{PLMN: plmn, MSIN: "0000000001", K: k[:8], OPc: opc},
		{PLMN: plmn, MSIN: "0000000001", K: k, OPc: opc, Scheme: suci.SchemeProfileA},
	}
	for i, s := range bad {
		if _, err := New(s); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}
