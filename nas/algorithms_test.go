package nas

import (
	"bytes"
	"crypto/aes"
	"encoding/hex"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TS 33.401 Annex C.1 (128-EEA2 = 128-NEA2, TS 33.501 §D.4.4), test sets 1-3.
func TestNEA2Vectors(t *testing.T) {
	sets := []struct {
		key          string
		count        uint32
		bearer       uint8
		dir          Direction
		bits         int
		plain, ciphr string
	}{
		{"d3c5d592327fb11c4035c6680af8c6d1", 0x398a59b4, 0x15, 1, 253,
			"981ba6824c1bfb1ab485472029b71d808ce33e2cc3c0b5fc1f3de8a6dc66b1f0",
			"e9fed8a63d155304d71df20bf3e82214b20ed7dad2f233dc3c22d7bdeeed8e78"},
		{"2bd6459f82c440e0952c49104805ff48", 0xc675a64b, 0x0c, 1, 798,
			"7ec61272743bf1614726446a6c38ced166f6ca76eb5430044286346cef130f92922b03450d3a9975e5bd2ea0eb55ad8e" +
				"1b199e3ec4316020e9a1b285e762795359b7bdfd39bef4b2484583d5afe082aee638bf5fd5a606193901a08f4ab41aab9b134880",
			"5961605353c64bdca15b195e288553a910632506d6200aa790c4c806c99904cf2445cc50bb1cf168a49673734e081b57" +
				"e324ce5259c0e78d4cd97b870976503c0943f2cb5ae8f052c7b7d392239587b8956086bcab18836042e2e6ce42432a17105c53d0"},
		{"0a8b6bd8d9b08b08d64e32d1817777fb", 0x544d49cd, 0x04, 0, 310,
			"fd40a41d370a1f65745095687d47ba1d36d2349e23f644392c8ea9c49d40c13271aff264d0f24800",
			"75750d37b4bba2a4dedb34235bd68c6645acdaaca48138a3b0c471e2a7041a576423d2927287f000"},
	}
	for i, s := range sets {
		block, err := aes.NewCipher(unhex(t, s.key))
		if err != nil {
			t.Fatal(err)
		}
		buf := unhex(t, s.plain)
		want := unhex(t, s.ciphr)
		nea2(block, s.count, s.bearer, s.dir, buf)
		maskTail(buf, s.bits)
		if !bytes.Equal(buf, want) {
			t.Errorf("set %d: got %x want %x", i+1, buf, want)
		}
		nea2(block, s.count, s.bearer, s.dir, buf) // deciphering restores the plaintext
		maskTail(buf, s.bits)
		if !bytes.Equal(buf, unhex(t, s.plain)) {
			t.Errorf("set %d: decipher mismatch", i+1)
		}
	}
}

// maskTail zeroes the bits beyond the given bit length (the vectors do).
func maskTail(b []byte, bits int) {
	for i := (bits + 7) / 8; i < len(b); i++ {
		b[i] = 0
	}
	if r := bits % 8; r != 0 {
		b[bits/8] &= 0xFF << (8 - r)
	}
}

// TS 33.401 Annex C.2 (128-EIA2 = 128-NIA2, TS 33.501 §D.4.5), test sets 1-7.
func TestNIA2Vectors(t *testing.T) {
	sets := []struct {
		key    string
		count  uint32
		bearer uint8
		dir    Direction
		bits   int
		msg    string
		mac    string
	}{
		{"2bd6459f82c5b300952c49104881ff48", 0x38a6f056, 0x18, 0, 58, "3332346263393840", "118c6eb8"},
		{"d3c5d592327fb11c4035c6680af8c6d1", 0x398a59b4, 0x1a, 1, 64, "484583d5afe082ae", "b93787e6"},
		{"7e5e94431e11d73828d739cc6ced4573", 0x36af6144, 0x18, 1, 254,
			"b3d3c9170a4e1632f60f861013d22d84b726b6a278d802d1eeaf1321ba5929dc", "1f60b01d"},
		{"d3419be821087acd02123a9248033359", 0xc7590ea9, 0x17, 0, 511,
			"bbb057038809496bcff86d6fbc8ce5b135a06b166054f2d565be8ace75dc851e0bcdd8f07141c495872fb5d8c0c66a8b6da556663e4e461205d84580bee5bc7e",
			"6846a2f0"},
		{"83fd23a244a74cf358da3019f1722635", 0x36af6144, 0x0f, 1, 768,
			"35c68716633c66fb750c266865d53c11ea05b1e9fa49c8398d48e1efa5909d3947902837f5ae96d5a05bc8d61ca8dbef1b13a4b4abfe4fb1" +
				"006045b674bb54729304c382be53a5af05556176f6eaa2ef1d05e4b083181ee674cda5a485f74d7a",
			"e657e182"},
		{"6832a65cff4473621ebdd4ba26a921fe", 0x36af6144, 0x18, 0, 383,
			"d3c53839626820717765667620323837636240981ba6824c1bfb1ab485472029b71d808ce33e2cc3c0b5fc1f3de8a6dc", "f0668c1e"},
		{"5d0a80d8134ae19677824b671e838af4", 0x7827fab2, 0x05, 1, 2558,
			"70dedf2dc42c5cbd3a96f8a0b11418b3608d5733604a2cd36aabc70ce3193bb5153be2d3c06dfdb2d16e9c357158be6a41d6b861e491db3f" +
				"bfeb518efcf048d7d58953730ff30c9ec470ffcd663dc34201c36addc0111c35b38afee7cfdb582e3731f8b4baa8d1a89c06e81199a97162" +
				"27be344efcb436ddd0f096c064c3b5e2c399993fc77394f9e09720a811850ef23b2ee05d9e6173609d86e1c0c18ea51a012a00bb413b9cb8" +
				"188a703cd6bae31cc67b34b1b00019e6a2b2a690f02671fe7c9ef8dec0094e533763478d58d2c5f5b827a0148c5948a96931acf84f465a64" +
				"e62ce74007e991e37ea823fa0fb21923b79905b733b631e6c7d6860a3831ac351a9c730c52ff72d9d308eedbab21fde143a0ea17e23edc1f" +
				"74cbb3638a2033aaa15464eaa733385dbbeb6fd73509b857e6a419dca1d8907af977fbac4dfa35ec",
			"f4cc8fa3"},
	}
	for i, s := range sets {
		block, err := aes.NewCipher(unhex(t, s.key))
		if err != nil {
			t.Fatal(err)
		}
		k1, k2 := cmacSubkeys(block)
		mac := nia2(block, &k1, &k2, s.count, s.bearer, s.dir, unhex(t, s.msg), s.bits)
		if got := hex.EncodeToString(mac[:]); got != s.mac {
			t.Errorf("set %d: MAC %s want %s", i+1, got, s.mac)
		}
	}
}

// RFC 4493 §4 AES-CMAC examples check the CMAC core on whole blocks.
func TestCMACRFC4493(t *testing.T) {
	block, _ := aes.NewCipher(unhex(t, "2b7e151628aed2a6abf7158809cf4f3c"))
	k1, k2 := cmacSubkeys(block)
	for _, c := range []struct{ msg, tag string }{
		{"", "bb1d6929e95937287fa37d129b756746"},
		{"6bc1bee22e409f96e93d7e117393172a", "070a16b46b4d4144f79bdd9dd04a287c"},
		{"6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411", "dfa66747de9ae63030ca32611497c827"},
	} {
		m := unhex(t, c.msg)
		tag := cmac(block, &k1, &k2, m, len(m)*8)
		if got := hex.EncodeToString(tag[:]); got != c.tag {
			t.Errorf("CMAC(%s) = %s want %s", c.msg, got, c.tag)
		}
	}
}
