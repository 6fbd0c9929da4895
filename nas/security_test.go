package nas

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	f5ie "github.com/free5gc/nas/ie"
	f5 "github.com/free5gc/nas/message"
)

var (
	testKEnc = []byte{0: 0x11, 5: 0x22, 15: 0x33}
	testKInt = []byte{0: 0x44, 7: 0x55, 15: 0x66}
)

func plainMsg(t testing.TB) []byte {
	t.Helper()
	b, err := Encode(&ULNASTransport{PayloadContainerType: PayloadN1SMInformation, Payload: bytes.Repeat([]byte{0x2e, 1, 2, 3}, 10), PDUSessionID: 5})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pair returns a UE-side and an AMF-side context over the same keys.
func pair(enc, integ uint8) (ue, amf *SecurityContext) {
	return NewSecurityContext(testKEnc, testKInt, enc, integ, 1), NewSecurityContext(testKEnc, testKInt, enc, integ, 1)
}

func TestProtectUnprotectMatrix(t *testing.T) {
	plain := plainMsg(t)
	for _, integ := range []uint8{NIA1, NIA2, NIA3} {
		for _, enc := range []uint8{NEA0, NEA1, NEA2, NEA3} {
			t.Run(fmt.Sprintf("NIA%d-NEA%d", integ, enc), func(t *testing.T) {
				ue, amf := pair(enc, integ)
				n := 260 // crosses an SQN wrap (TS 24.501 §4.4.3.1)
				if enc == NEA1 || integ == NIA1 {
					n = 20 // free5gc's SNOW 3G costs about a millisecond per call
				}
				for i := 0; i < n; i++ {
					for _, dir := range []Direction{Uplink, Downlink} {
						tx, rx := ue, amf
						if dir == Downlink {
							tx, rx = amf, ue
						}
						hdr := IntegrityProtectedAndCiphered
						if i%3 == 0 {
							hdr = IntegrityProtected
						}
						pdu, err := tx.Protect(plain, hdr, dir)
						if err != nil {
							t.Fatal(err)
						}
						if hdr.Ciphered() && enc != NEA0 && bytes.Contains(pdu, plain[3:]) {
							t.Fatal("ciphered PDU carries the plaintext")
						}
						got, h, err := rx.Unprotect(pdu, dir)
						if err != nil {
							t.Fatalf("msg %d dir %d: %v", i, dir, err)
						}
						if h != hdr || !bytes.Equal(got, plain) {
							t.Fatalf("msg %d: got %x hdr %v", i, got, h)
						}
						if c, ok := rx.Count(dir); !ok || c != uint32(i) {
							t.Fatalf("count %d, want %d", c, i)
						}
					}
				}
			})
		}
	}
}

func TestUnprotectFlippedBit(t *testing.T) {
	plain := plainMsg(t)
	for _, integ := range []uint8{NIA1, NIA2, NIA3} {
		ue, amf := pair(NEA2, integ)
		first, _ := ue.Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		if _, _, err := amf.Unprotect(first, Uplink); err != nil {
			t.Fatal(err)
		}
		pdu, _ := ue.Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		before := *amf
		for bit := 2 * 8; bit < len(pdu)*8; bit += 7 { // MAC, SQN and payload bits
			bad := append([]byte(nil), pdu...)
			bad[bit/8] ^= 1 << (bit % 8)
			_, _, err := amf.Unprotect(bad, Uplink)
			if !errors.Is(err, ErrMAC) && !errors.Is(err, ErrReplay) {
				t.Fatalf("NIA%d bit %d: err %v, want ErrMAC", integ, bit, err)
			}
			if *amf != before {
				t.Fatalf("NIA%d bit %d: context changed on error", integ, bit)
			}
		}
		if _, _, err := amf.Unprotect(pdu, Uplink); err != nil {
			t.Fatalf("intact PDU rejected after forgeries: %v", err)
		}
	}
}

func TestUnprotectReplay(t *testing.T) {
	plain := plainMsg(t)
	ue, amf := pair(NEA1, NIA2)
	var pdus [][]byte
	for i := 0; i < 5; i++ {
		p, err := ue.Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		pdus = append(pdus, p)
		if _, _, err := amf.Unprotect(p, Uplink); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pdus {
		before := *amf
		if _, _, err := amf.Unprotect(p, Uplink); !errors.Is(err, ErrReplay) {
			t.Errorf("replay of PDU %d: err %v, want ErrReplay", i, err)
		}
		if *amf != before {
			t.Errorf("replay %d changed the context", i)
		}
	}
	// a later PDU is still accepted, and skipping counts is allowed
	ue.SetNextCount(Uplink, 9)
	p, _ := ue.Protect(plain, IntegrityProtected, Uplink)
	if _, _, err := amf.Unprotect(p, Uplink); err != nil {
		t.Fatal(err)
	}
	if c, _ := amf.Count(Uplink); c != 9 {
		t.Errorf("count %d want 9", c)
	}
}

func TestUnprotectOverflowEstimation(t *testing.T) {
	plain := plainMsg(t)
	ue, amf := pair(NEA2, NIA2)
	ue.SetNextCount(Uplink, 0x1FE)
	amf.SetNextCount(Uplink, 0x1FE)
	for want := uint32(0x1FE); want < 0x203; want++ {
		p, err := ue.Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		if p[6] != byte(want) {
			t.Fatalf("SQN %x want %x", p[6], byte(want))
		}
		if _, _, err := amf.Unprotect(p, Uplink); err != nil {
			t.Fatalf("count %x: %v", want, err)
		}
		if c, _ := amf.Count(Uplink); c != want {
			t.Fatalf("estimated %x want %x", c, want)
		}
	}
}

func TestCountExhausted(t *testing.T) {
	ue, _ := pair(NEA0, NIA2)
	ue.SetNextCount(Uplink, MaxCount+1)
	if _, err := ue.Protect(plainMsg(t), IntegrityProtected, Uplink); !errors.Is(err, ErrCountWrap) {
		t.Errorf("err %v want ErrCountWrap", err)
	}
}

func TestProtectUnprotectErrors(t *testing.T) {
	ue, amf := pair(NEA2, NIA2)
	plain := plainMsg(t)
	if _, err := ue.Protect(plain, Plain, Uplink); err == nil {
		t.Error("Protect with plain header type succeeded")
	}
	if _, err := ue.Protect([]byte{0x2e, 0, 1}, IntegrityProtected, Uplink); err == nil {
		t.Error("Protect of a non-5GMM message succeeded")
	}
	if _, _, err := amf.Unprotect(plain, Uplink); !errors.Is(err, ErrNotProtected) {
		t.Errorf("Unprotect(plain) = %v", err)
	}
	if _, _, err := amf.Unprotect([]byte{0x7e, 0x02, 1, 2}, Uplink); !errors.Is(err, ErrShort) {
		t.Errorf("Unprotect(short) = %v", err)
	}
	bad := NewSecurityContext(testKEnc, testKInt, 9, NIA2, 0)
	if _, err := bad.Protect(plain, IntegrityProtectedAndCiphered, Uplink); !errors.Is(err, ErrAlgorithm) {
		t.Errorf("NEA9: %v", err)
	}
	if c, _ := bad.Count(Uplink); c != 0 {
		t.Error("failed Protect advanced the count")
	}
	if _, used := bad.Count(Uplink); used {
		t.Error("failed Protect marked the count used")
	}
}

func TestNIA0(t *testing.T) {
	ue, amf := pair(NEA0, NIA0)
	p, err := ue.Protect(plainMsg(t), IntegrityProtected, Uplink)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p[2:6], []byte{0, 0, 0, 0}) {
		t.Errorf("NIA0 MAC %x", p[2:6])
	}
	if _, _, err := amf.Unprotect(p, Uplink); err != nil {
		t.Fatal(err)
	}
}

// TestFree5GCInterop checks header layout, COUNT handling and all NEA/NIA
// against free5gc/nas's own Marshal/Parse.
func TestFree5GCInterop(t *testing.T) {
	for _, integ := range []uint8{NIA0, NIA1, NIA2, NIA3} {
		for _, enc := range []uint8{NEA0, NEA1, NEA2, NEA3} {
			ue := NewSecurityContext(testKEnc, testKInt, enc, integ, 0)
			core := f5.NewSecCtx(f5.CoreNetworkSide, f5.Bearer3GPP, f5ie.AlgCiphering(enc), f5ie.AlgIntegrity(integ), testKEnc, testKInt)
			ueRx := NewSecurityContext(testKEnc, testKInt, enc, integ, 0)
			for i := 0; i < 3; i++ {
				// uplink: ours -> free5gc
				pdu, err := ue.Protect(plainMsg(t), IntegrityProtectedAndCiphered, Uplink)
				if err != nil {
					t.Fatal(err)
				}
				m, err := f5.Parse(pdu, core)
				if err != nil {
					t.Fatalf("NIA%d NEA%d: free5gc rejects our uplink PDU: %v", integ, enc, err)
				}
				if m.MsgType() != f5.MsgTypeULNASTransport {
					t.Fatalf("free5gc parsed %v", m.MsgType())
				}
				// downlink: free5gc -> ours
				dl, err := f5.Marshal(&f5.RegComplete{}, core, f5.SecHdrTypeIntegrityProtectedAndCiphered)
				if err != nil {
					t.Fatal(err)
				}
				plain, _, err := ueRx.Unprotect(dl, Downlink)
				if err != nil {
					t.Fatalf("NIA%d NEA%d: our Unprotect rejects free5gc's downlink PDU: %v", integ, enc, err)
				}
				if !bytes.Equal(plain, []byte{0x7e, 0, 0x43}) {
					t.Fatalf("got %x", plain)
				}
			}
		}
	}
}

// TestOpenContainer: TS 24.501 §4.4.6: the UE ciphers the complete initial
// message with the COUNT of the integrity protected message carrying it;
// the network, having verified the outer message, deciphers the container
// with that COUNT.
func TestOpenContainer(t *testing.T) {
	for _, enc := range []uint8{NEA1, NEA2, NEA3} {
		ue, amf := pair(enc, NIA2)
		full := &ServiceRequest{ServiceType: ServiceData, NgKSI: NgKSI{KSI: 1}, UplinkDataStatus: ptr16(1 << 5), PDUSessionStatus: ptr16(1<<5 | 1<<6)}
		plain, err := Encode(full)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 { // a few messages, so the COUNT is not 0
			pdu, _ := ue.Protect(plainMsg(t), IntegrityProtectedAndCiphered, Uplink)
			if _, _, err := amf.Unprotect(pdu, Uplink); err != nil {
				t.Fatal(i, err)
			}
		}
		ciphered, err := ue.Clone().Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		outer, err := Encode(&ServiceRequest{ServiceType: ServiceData, NgKSI: NgKSI{KSI: 1}, NASMessageContainer: ciphered[secHdrLen:]})
		if err != nil {
			t.Fatal(err)
		}
		pdu, err := ue.Protect(outer, IntegrityProtected, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := amf.Unprotect(pdu, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := amf.OpenContainer(m.(*ServiceRequest).NASMessageContainer, Uplink)
		if err != nil || !bytes.Equal(inner, plain) {
			t.Fatalf("NEA%d: container % x (%v), want % x", enc, inner, err, plain)
		}
		if _, err := NewSecurityContext(testKEnc, testKInt, enc, NIA2, 1).OpenContainer(ciphered[secHdrLen:], Uplink); err == nil {
			t.Error("a context that verified nothing opened a container")
		}
	}
}

func ptr16(v uint16) *uint16 { return &v }

// TestSecurityContextRebuilt: a context rebuilt from what it exports (keys,
// algorithms, ngKSI, bearer, the NAS COUNT of each direction), as another
// process does from a UE context's record, protects and verifies as the
// original would: the next downlink PDU is the same bytes, and an uplink
// PDU already accepted is a replay to both.
func TestSecurityContextRebuilt(t *testing.T) {
	plain := plainMsg(t)
	ue, amf := pair(NEA2, NIA2)
	amf.SetBearer(2)
	ue.SetBearer(2)
	var last []byte
	for range 300 { // past an SQN wrap (TS 24.501 §4.4.3.1)
		pdu, err := ue.Protect(plain, IntegrityProtectedAndCiphered, Uplink)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := amf.Unprotect(pdu, Uplink); err != nil {
			t.Fatal(err)
		}
		last = pdu
	}
	if _, err := amf.Protect(plain, IntegrityProtected, Downlink); err != nil {
		t.Fatal(err)
	}
	kEnc, kInt := amf.Keys()
	rebuilt := NewSecurityContext(kEnc[:], kInt[:], amf.CipheringAlg(), amf.IntegrityAlg(), amf.NgKSI())
	rebuilt.SetBearer(amf.Bearer())
	for _, dir := range []Direction{Uplink, Downlink} {
		next := uint32(0)
		if n, used := amf.Count(dir); used {
			next = n + 1
		}
		rebuilt.SetNextCount(dir, next)
	}
	if !reflect.DeepEqual(rebuilt, amf) {
		t.Fatalf("rebuilt context differs:\n%+v\n%+v", rebuilt, amf)
	}
	want, err := amf.Protect(plain, IntegrityProtectedAndCiphered, Downlink)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rebuilt.Protect(plain, IntegrityProtectedAndCiphered, Downlink)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("rebuilt context protects % x (%v), the original % x", got, err, want)
	}
	if _, _, err := rebuilt.Unprotect(last, Uplink); !errors.Is(err, ErrReplay) {
		t.Errorf("uplink PDU already accepted: %v, want ErrReplay", err)
	}
}
