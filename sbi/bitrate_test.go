package sbi

import "testing"

func TestParseBitRate(t *testing.T) {
	for s, want := range map[string]uint64{
		"1 Gbps": 1e9, "100 Mbps": 100e6, "1.5 Kbps": 1500, "0.25 Tbps": 250e9, "64 bps": 64, "2.123456789 Mbps": 2123456,
	} {
		got, err := ParseBitRate(s)
		if err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1Gbps", "1 gbps", "-1 Mbps", "1. Mbps", ".5 Mbps", "1 Mbps ", "99999999999999999999 Tbps"} {
		if _, err := ParseBitRate(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
