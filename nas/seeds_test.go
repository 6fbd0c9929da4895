package nas

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var writeSeeds = flag.Bool("write-seeds", false, "write the FuzzDecode and FuzzUnprotect seed files under testdata/fuzz")

// TestWriteSeeds writes the committed seed corpus of FuzzDecode and
// FuzzUnprotect from sampleMessages: for sample i, "seed-<i>-<type>" is its
// plain encoding (FuzzDecode) and, for every third sample, its protection
// with COUNT i (FuzzUnprotect); a "-truncated" variant of every fourth
// sample lacks the last octet, a "-garbled" one of a protected PDU has the
// top bit of the last octet flipped. A few hand-made seeds follow. New
// samples are appended to sampleMessages so that existing files keep their
// names and contents.
//
//	go test ./nas -run TestWriteSeeds -write-seeds
func TestWriteSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("-write-seeds not set")
	}
	write := func(target, name string, b []byte) {
		t.Helper()
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ue := NewSecurityContext(testKEnc, testKInt, NEA2, NIA2, 0)
	for i, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("seed-%02d-%s", i, m.MessageType())
		write("FuzzDecode", name, b)
		if i%4 == 0 {
			write("FuzzDecode", name+"-truncated", b[:len(b)-1])
		}
		if i%3 == 0 {
			ue.SetNextCount(Uplink, uint32(i))
			p, err := ue.Protect(b, IntegrityProtectedAndCiphered, Uplink)
			if err != nil {
				t.Fatal(err)
			}
			write("FuzzUnprotect", name, p)
			g := append([]byte(nil), p...)
			g[len(g)-1] ^= 0x80
			write("FuzzUnprotect", name+"-garbled", g)
		}
	}
	// TS 24.501 §7.7.1: a syntactically incorrect optional IE
	write("FuzzDecode", "seed-SecurityModeComplete-IMEISV-of-17-digits",
		encodeWith(t, &SecurityModeComplete{}, tlve(0x77, imeisv17(t)...), tlve(0x71, 0x7e, 0x00, 0x41, 0x79)))
}
