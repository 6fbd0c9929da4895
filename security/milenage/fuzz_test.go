package milenage

import "testing"

// AUTN and AUTS arrive from the other side of the radio link: arbitrary
// octets must produce an error, never a panic, and never a success that the
// network did not author.
func FuzzAuthenticateAndVerifyAUTS(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), make([]byte, 16), make([]byte, 14))
	f.Add([]byte{}, []byte{1}, []byte{2})
	f.Fuzz(func(t *testing.T, rand, autn, auts []byte) {
		k, opc := testSubscriber(t)
		u := &USIM{K: k, OPc: opc, SQN: 1}
		if _, _, _, err := u.Authenticate(rand, autn); err == nil {
			// Only possible if autn is a genuine AUTN for rand: re-derive it.
			sqn, _ := SQNBytes(u.SQN)
			v, gerr := Generate(k, opc, rand, sqn, autn[6:8])
			if gerr != nil || string(v.AUTN) != string(autn) {
				t.Fatalf("USIM accepted a forged AUTN %x", autn)
			}
		}
		_, _ = VerifyAUTS(k, opc, rand, auts)
	})
}
