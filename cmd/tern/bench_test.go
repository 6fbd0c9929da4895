package main

import (
	"strings"
	"testing"
)

// TestRegisterMemoryPerUE: bench register derives memory per 1,000 UEs
// from the UEs that registered, and only from enough of them; with too few
// it says so instead of scaling noise (issue 37: 10 UEs gave a figure per
// 1,000).
func TestRegisterMemoryPerUE(t *testing.T) {
	const mib = 1 << 20
	if per, ok := rssPerThousandUEs(30*mib, 31*mib, 10); ok {
		t.Errorf("10 UEs: %.0f bytes per 1,000 UEs, want none", per)
	}
	if s := memoryPerUEs(30*mib, 31*mib, 10); !strings.Contains(s, "10 UEs are too few") || !strings.Contains(s, "at least 10000") {
		t.Errorf("10 UEs: %q", s)
	}
	// 1,000 UEs grow the resident size by about 7 MiB, as much as it
	// moves whatever the UEs cost: too few as well.
	if per, ok := rssPerThousandUEs(30*mib, 37*mib, 1000); ok {
		t.Errorf("1,000 UEs: %.0f bytes per 1,000 UEs, want none", per)
	}
	per, ok := rssPerThousandUEs(30*mib, 100*mib, 10_000)
	if !ok || per != 7*mib {
		t.Errorf("10,000 UEs, 70 MiB more: %.0f bytes per 1,000 UEs (%v), want %d", per, ok, 7*mib)
	}
	if s := memoryPerUEs(30*mib, 100*mib, 10_000); s != "7168 KiB per 1,000 registered UEs" {
		t.Errorf("10,000 UEs: %q", s)
	}
	// What counts is the UEs registered: 20,000 of them for 140 MiB is 7
	// MiB per 1,000.
	if per, _ := rssPerThousandUEs(30*mib, 170*mib, 20_000); per != 7*mib {
		t.Errorf("20,000 UEs, 140 MiB more: %.0f bytes per 1,000 UEs", per)
	}
}
