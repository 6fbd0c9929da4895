package smf

import (
	"net/netip"
	"testing"

	"github.com/tern5g/tern/sbi"
)

func FuzzParsePCORequest(f *testing.F) {
	f.Add([]byte{0x80, 0x00, 0x0D, 0x00, 0x00, 0x10, 0x00})
	f.Add([]byte{0x80, 0xC0, 0x23, 0x05, 0x01, 0x02})
	f.Add([]byte{})
	dns := []netip.Addr{netip.MustParseAddr("8.8.8.8")}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := parsePCORequest(b)
		out := buildPCOResponse(r, dns, 1400)
		if (r.dns || r.mtu) != (out != nil) {
			t.Fatalf("request %+v answered % x", r, out)
		}
	})
}

func FuzzParseBitRate(f *testing.F) {
	for _, s := range []string{"1 Gbps", "1.5 Mbps", "0 bps", "18446744073709551615 bps", "1 Tbps", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := sbi.ParseBitRate(s)
		if err == nil && v > 0 && kbps(v) == 0 {
			t.Fatalf("%q: %d bit/s became 0 kbit/s", s, v)
		}
	})
}
