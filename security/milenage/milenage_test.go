package milenage

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TS 35.208 §4.3 conformance test sets 1-6 (the same values as TS 35.207
// §4.3-§5.3). Transcribed from public copies of the tables and
// cross-checked between two independent projects: free5gc/util
// milenage/milenage_test.go (TestF1Test35207, TestF2F5F3Test35207,
// TestF4F5StarTest35207) and asterix auth3G.py by Petr Tobiska
// (TestMilenage.testSet1..6).
var conformance = []struct {
	set                               int
	k, rand, sqn, amf, op             string
	opc, f1, f1s, f2, f5, f3, f4, f5s string
}{
	{1, "465b5ce8b199b49faa5f0a2ee238a6bc", "23553cbe9637a89d218ae64dae47bf35", "ff9bb4d0b607", "b9b9", "cdc202d5123e20f62b6d676ac72cb318",
		"cd63cb71954a9f4e48a5994e37a02baf", "4a9ffac354dfafb3", "01cfaf9ec4e871e9", "a54211d5e3ba50bf", "aa689c648370",
		"b40ba9a3c58b2a05bbf0d987b21bf8cb", "f769bcd751044604127672711c6d3441", "451e8beca43b"},
	{2, "0396eb317b6d1c36f19c1c84cd6ffd16", "c00d603103dcee52c4478119494202e8", "fd8eef40df7d", "af17", "ff53bade17df5d4e793073ce9d7579fa",
		"53c15671c60a4b731c55b4a441c0bde2", "5df5b31807e258b0", "a8c016e51ef4a343", "d3a628ed988620f0", "c47783995f72",
		"58c433ff7a7082acd424220f2b67c556", "21a8c1f929702adb3e738488b9f5c5da", "30f1197061c1"},
	{3, "fec86ba6eb707ed08905757b1bb44b8f", "9f7c8d021accf4db213ccff0c7f71a6a", "9d0277595ffc", "725c", "dbc59adcb6f9a0ef735477b7fadf8374",
		"1006020f0a478bf6b699f15c062e42b3", "9cabc3e99baf7281", "95814ba2b3044324", "8011c48c0c214ed2", "33484dc2136b",
		"5dbdbb2954e8f3cde665b046179a5098", "59a92d3b476a0443487055cf88b2307b", "deacdd848cc6"},
	{4, "9e5944aea94b81165c82fbf9f32db751", "ce83dbc54ac0274a157c17f80d017bd6", "0b604a81eca8", "9e09", "223014c5806694c007ca1eeef57f004f",
		"a64a507ae1a2a98bb88eb4210135dc87", "74a58220cba84c49", "ac2cc74a96871837", "f365cd683cd92e96", "f0b9c08ad02e",
		"e203edb3971574f5a94b0d61b816345d", "0c4524adeac041c4dd830d20854fc46b", "6085a86c6f63"},
	{5, "4ab1deb05ca6ceb051fc98e77d026a84", "74b0cd6031a1c8339b2b6ce2b8c4a186", "e880a1b580b6", "9f07", "2d16c5cd1fdf6b22383584e3bef2a8d8",
		"dcf07cbd51855290b92a07a9891e523e", "49e785dd12626ef2", "9e85790336bb3fa2", "5860fc1bce351e7e", "31e11a609118",
		"7657766b373d1c2138f307e3de9242f9", "1c42e960d89b8fa99f2744e0708ccb53", "fe2555e54aa9"},
	{6, "6c38a116ac280c454f59332ee35c8c4f", "ee6466bc96202c5a557abbeff8babf63", "414b98222181", "4464", "1ba00a1a7c6700ac8c3ff3e96ad08725",
		"3803ef5363b947c6aaa225e58fae3934", "078adfb488241a57", "80246b8d0186bcf1", "16c8233f05a0ac28", "45b0f69ab06c",
		"3f8c7587fe8e4b233af676aede30ba3b", "a7466cc1e6b2a1337d49d3b66e95d7b4", "1f53cd2b1113"},
}

func TestConformanceSets(t *testing.T) {
	for _, tc := range conformance {
		k, rand, sqn, amf := unhex(t, tc.k), unhex(t, tc.rand), unhex(t, tc.sqn), unhex(t, tc.amf)
		opc, err := OPc(k, unhex(t, tc.op))
		if err != nil {
			t.Fatalf("set %d: OPc: %v", tc.set, err)
		}
		check := func(name string, got []byte, want string) {
			t.Helper()
			if hex.EncodeToString(got) != want {
				t.Errorf("set %d: %s = %x, want %s", tc.set, name, got, want)
			}
		}
		check("OPc", opc, tc.opc)

		v, err := Generate(k, opc, rand, sqn, amf)
		if err != nil {
			t.Fatalf("set %d: Generate: %v", tc.set, err)
		}
		check("f1 (MAC-A)", v.AUTN[8:], tc.f1)
		check("f2 (RES)", v.XRES, tc.f2)
		check("f3 (CK)", v.CK, tc.f3)
		check("f4 (IK)", v.IK, tc.f4)
		check("f5 (AK)", v.AK, tc.f5)
		check("AMF in AUTN", v.AUTN[6:8], tc.amf)
		for i := range SQNLen {
			if v.AUTN[i]^v.AK[i] != sqn[i] {
				t.Errorf("set %d: AUTN[0:6] xor AK != SQN", tc.set)
				break
			}
		}

		f1s, err := f1Star(k, opc, rand, sqn, amf)
		if err != nil {
			t.Fatalf("set %d: f1*: %v", tc.set, err)
		}
		check("f1* (MAC-S)", f1s, tc.f1s)
		f5s, err := f5Star(k, opc, rand)
		if err != nil {
			t.Fatalf("set %d: f5*: %v", tc.set, err)
		}
		check("f5* (AK*)", f5s, tc.f5s)
	}
}

// TS 35.208 test set 19 as used by RFC 5448 Appendix C test case 1, which
// publishes RAND, AUTN, RES, CK and IK. K, OP, SQN and AMF from free5gc/util
// milenage/milenage_test.go (TestRAND).
func TestGenerateAUTNTestSet19(t *testing.T) {
	k := unhex(t, "5122250214c33e723a5dd523fc145fc0")
	opc, err := OPc(k, unhex(t, "c9e8763286b5b9ffbdf56e1297d0887b"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Generate(k, opc, unhex(t, "81e92b6c0ee0e12ebceba8d92a99dfa5"), unhex(t, "16f3b3f70fc2"), unhex(t, "c3ab"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"AUTN", v.AUTN, "bb52e91c747ac3ab2a5c23d15ee351d5"},
		{"RES", v.XRES, "28d7b0f2a2ec3de5"},
		{"CK", v.CK, "5349fbe098649f948f5d2e973a81c00f"},
		{"IK", v.IK, "9744871ad32bf9bbd1dd5ce54e3e2e5a"},
		{"AK", v.AK, "ada15aeb7bb8"},
		{"SQN xor AK", v.SQNXorAK(), "bb52e91c747a"},
	} {
		if hex.EncodeToString(c.got) != c.want {
			t.Errorf("%s = %x, want %s", c.name, c.got, c.want)
		}
	}
}

func testSubscriber(t *testing.T) (k, opc []byte) {
	t.Helper()
	k = unhex(t, "8baf473f2f8fd09487cccbd7097c6862")
	opc = unhex(t, "8e27b6af0e692e750f32667a3b14605d")
	return k, opc
}

func TestRoundTrip(t *testing.T) {
	k, opc := testSubscriber(t)
	amf := []byte{0x80, 0x00}
	u := &USIM{K: k, OPc: opc, AMF: amf, SQN: 0x20}
	rand := unhex(t, "00112233445566778899aabbccddeeff")
	sqn, _ := SQNBytes(0x21)
	v, err := Generate(k, opc, rand, sqn, amf)
	if err != nil {
		t.Fatal(err)
	}
	res, ck, ik, err := u.Authenticate(v.RAND, v.AUTN)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if !bytes.Equal(res, v.XRES) || !bytes.Equal(ck, v.CK) || !bytes.Equal(ik, v.IK) {
		t.Fatalf("USIM outputs differ from vector: res %x/%x", res, v.XRES)
	}
	if u.SQN != 0x21 {
		t.Fatalf("USIM SQN = %#x, want 0x21", u.SQN)
	}
}

func TestWrongKeyIsMACFailure(t *testing.T) {
	k, opc := testSubscriber(t)
	sqn, _ := SQNBytes(5)
	v, err := Generate(k, opc, unhex(t, "0f0e0d0c0b0a09080706050403020100"), sqn, []byte{0x80, 0})
	if err != nil {
		t.Fatal(err)
	}
	other := append([]byte(nil), k...)
	other[0] ^= 1
	u := &USIM{K: other, OPc: opc}
	if _, _, _, err := u.Authenticate(v.RAND, v.AUTN); !errors.Is(err, ErrMACFailure) {
		t.Fatalf("err = %v, want ErrMACFailure", err)
	}
	if u.SQN != 0 {
		t.Fatalf("SQN changed on failure: %d", u.SQN)
	}
	// A flipped MAC bit under the right key fails too.
	u = &USIM{K: k, OPc: opc}
	autn := append([]byte(nil), v.AUTN...)
	autn[15] ^= 0x80
	if _, _, _, err := u.Authenticate(v.RAND, autn); !errors.Is(err, ErrMACFailure) {
		t.Fatalf("tampered MAC: err = %v, want ErrMACFailure", err)
	}
}

func TestReplayIsSyncFailureAndResync(t *testing.T) {
	k, opc := testSubscriber(t)
	amf := []byte{0x80, 0x00}
	u := &USIM{K: k, OPc: opc, AMF: amf}
	rand1 := unhex(t, "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf")
	sqn, _ := SQNBytes(0x1234)
	v, err := Generate(k, opc, rand1, sqn, amf)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := u.Authenticate(v.RAND, v.AUTN); err != nil {
		t.Fatalf("first use: %v", err)
	}
	// Replaying the same vector, and a vector with an older SQN, must both
	// be refused with a verifiable AUTS carrying SQN_MS = 0x1234.
	older, _ := SQNBytes(0x1000)
	rand2 := unhex(t, "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf")
	v2, err := Generate(k, opc, rand2, older, amf)
	if err != nil {
		t.Fatal(err)
	}
	for _, vec := range []Vector{v, v2} {
		_, _, _, err := u.Authenticate(vec.RAND, vec.AUTN)
		var se *SyncError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want *SyncError", err)
		}
		if len(se.AUTS) != AUTSLen {
			t.Fatalf("AUTS length %d", len(se.AUTS))
		}
		got, err := VerifyAUTS(k, opc, vec.RAND, se.AUTS)
		if err != nil {
			t.Fatalf("VerifyAUTS: %v", err)
		}
		if got != 0x1234 || se.SQNMS != 0x1234 {
			t.Fatalf("SQN_MS = %#x (error says %#x), want 0x1234", got, se.SQNMS)
		}
		// AUTS is bound to its RAND and to MAC-S.
		if _, err := VerifyAUTS(k, opc, rand2[:0:0], se.AUTS); err == nil {
			t.Fatal("VerifyAUTS accepted a short RAND")
		}
		bad := append([]byte(nil), se.AUTS...)
		bad[13] ^= 1
		if _, err := VerifyAUTS(k, opc, vec.RAND, bad); !errors.Is(err, ErrAUTSMACFailure) {
			t.Fatalf("tampered AUTS: err = %v, want ErrAUTSMACFailure", err)
		}
	}
	if u.SQN != 0x1234 {
		t.Fatalf("SQN changed by a refused AUTN: %#x", u.SQN)
	}
	// After resync the network continues above SQN_MS and is accepted.
	next, _ := SQNBytes(0x1235)
	v3, err := Generate(k, opc, rand2, next, amf)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := u.Authenticate(v3.RAND, v3.AUTN); err != nil {
		t.Fatalf("after resync: %v", err)
	}
}

func TestInputLengths(t *testing.T) {
	k, opc := testSubscriber(t)
	rand := make([]byte, 16)
	if _, err := OPc(k[:15], opc); err == nil {
		t.Error("OPc accepted a 15-octet K")
	}
	if _, err := OPc(k, opc[:3]); err == nil {
		t.Error("OPc accepted a short OP")
	}
	if _, err := Generate(k, opc, rand, []byte{1, 2, 3}, []byte{0x80, 0}); err == nil {
		t.Error("Generate accepted a 3-octet SQN")
	}
	if _, err := Generate(k, opc, rand[:8], make([]byte, 6), []byte{0x80, 0}); err == nil {
		t.Error("Generate accepted a short RAND")
	}
	u := &USIM{K: k, OPc: opc}
	if _, _, _, err := u.Authenticate(rand, make([]byte, 15)); err == nil {
		t.Error("Authenticate accepted a short AUTN")
	}
	if _, err := VerifyAUTS(k, opc, rand, make([]byte, 13)); err == nil {
		t.Error("VerifyAUTS accepted a short AUTS")
	}
	if _, err := SQNBytes(MaxSQN + 1); err == nil {
		t.Error("SQNBytes accepted 49 bits")
	}
	if b, _ := SQNBytes(0x0102030405); SQNFromBytes(b) != 0x0102030405 {
		t.Error("SQN round trip")
	}
}
