package classify

import "testing"

// TestSlotOverlaps: two plain slots overlap when some IPv4 header passes
// both, field by field.
func TestSlotOverlaps(t *testing.T) {
	slot := func(src uint32, sl uint8, dst uint32, dl uint8, sp, dp PortRange, proto, pmask uint8) rslot {
		s := rslot{sport: spanOf(sp), dport: spanOf(dp), proto: proto, pmask: pmask, ss: 32 - sl, sd: 32 - dl}
		s.src, s.dst = src&^(uint32(uint64(1)<<s.ss-1)), dst&^(uint32(uint64(1)<<s.sd-1))
		return s
	}
	all := PortRange{0, 0xffff}
	base := slot(0x0a010000, 16, 0x14000000, 8, all, PortRange{80, 80}, 6, 0xff)
	for _, tc := range []struct {
		name string
		o    rslot
		want bool
	}{
		{"itself", base, true},
		{"wider source", slot(0x0a000000, 8, 0, 0, all, all, 0, 0), true},
		{"narrower destination", slot(0x0a010203, 32, 0x14020304, 32, all, all, 0, 0), true},
		{"other source /16", slot(0x0a020000, 16, 0x14000000, 8, all, all, 0, 0), false},
		{"other destination /8", slot(0x0a010000, 16, 0x15000000, 8, all, all, 0, 0), false},
		{"port range touching 80", slot(0x0a010000, 16, 0x14000000, 8, all, PortRange{70, 80}, 0, 0), true},
		{"port range below 80", slot(0x0a010000, 16, 0x14000000, 8, all, PortRange{70, 79}, 0, 0), false},
		{"port range above 80", slot(0x0a010000, 16, 0x14000000, 8, all, PortRange{81, 0xffff}, 0, 0), false},
		{"source port", slot(0x0a010000, 16, 0x14000000, 8, PortRange{1, 1}, all, 0, 0), true},
		{"UDP", slot(0, 0, 0, 0, all, all, 17, 0xff), false},
		{"TCP", slot(0, 0, 0, 0, all, all, 6, 0xff), true},
	} {
		if got := base.overlaps(&tc.o); got != tc.want {
			t.Errorf("%s: overlaps %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.o.overlaps(&base); got != tc.want {
			t.Errorf("%s, reversed: overlaps %v, want %v", tc.name, got, tc.want)
		}
	}
}
