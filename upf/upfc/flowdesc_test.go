package upfc

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/tern5g/tern/classify"
)

func TestParseFlowDescription(t *testing.T) {
	tests := []struct {
		in   string
		want FlowDescription
	}{
		{"permit out ip from any to assigned", FlowDescription{Out: true, AnyProto: true,
			From: FlowEndpoint{Any: true}, To: FlowEndpoint{Assigned: true}}},
		{"permit out 17 from 10.0.0.0/8 1000-2000 to assigned", FlowDescription{Out: true, Proto: 17,
			From: FlowEndpoint{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []classify.PortRange{{Lo: 1000, Hi: 2000}}},
			To:   FlowEndpoint{Assigned: true}}},
		{"permit in 6 from 10.60.0.1 to 192.0.2.0/24 80,443,8000-8080", FlowDescription{Proto: 6,
			From: FlowEndpoint{Prefix: netip.MustParsePrefix("10.60.0.1/32")},
			To: FlowEndpoint{Prefix: netip.MustParsePrefix("192.0.2.0/24"),
				Ports: []classify.PortRange{{Lo: 80, Hi: 80}, {Lo: 443, Hi: 443}, {Lo: 8000, Hi: 8080}}}}},
		{"  permit   out  6 from 2001:db8::/32 53 to any  ", FlowDescription{Out: true, Proto: 6,
			From: FlowEndpoint{Prefix: netip.MustParsePrefix("2001:db8::/32"), Ports: []classify.PortRange{{Lo: 53, Hi: 53}}},
			To:   FlowEndpoint{Any: true}}},
		// Host bits are cleared, as the prefix means the network.
		{"permit out 1 from 10.1.2.3/16 to assigned", FlowDescription{Out: true, Proto: 1,
			From: FlowEndpoint{Prefix: netip.MustParsePrefix("10.1.0.0/16")}, To: FlowEndpoint{Assigned: true}}},
	}
	for _, tc := range tests {
		got, err := ParseFlowDescription(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !flowEqual(got, &tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, *got, tc.want)
		}
		// The printed form parses back to the same filter.
		again, err := ParseFlowDescription(got.String())
		if err != nil || !flowEqual(again, got) {
			t.Errorf("%q: round trip via %q: %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func flowEqual(a, b *FlowDescription) bool {
	ep := func(x, y FlowEndpoint) bool {
		return x.Any == y.Any && x.Assigned == y.Assigned && x.Prefix == y.Prefix && slices.Equal(x.Ports, y.Ports)
	}
	return a.Out == b.Out && a.Proto == b.Proto && a.AnyProto == b.AnyProto && ep(a.From, b.From) && ep(a.To, b.To)
}

func TestParseFlowDescriptionErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"permit",
		"deny out ip from any to assigned",
		"allow out ip from any to assigned",
		"permit up ip from any to assigned",
		"permit out from any to assigned",
		"permit out 256 from any to assigned",
		"permit out tcp from any to assigned",
		"permit out ip any to assigned",
		"permit out ip from any assigned",
		"permit out ip from any to",
		"permit out ip from !10.0.0.0/8 to assigned",
		"permit out ip from 10.0.0.0/33 to assigned",
		"permit out ip from 10.0.0.300 to assigned",
		"permit out ip from fe80::1%eth0 to assigned",
		"permit out 17 from any 2000-1000 to assigned",
		"permit out 17 from any 70000 to assigned",
		"permit out 17 from any 1,2,3,4,5,6,7,8,9 to assigned",
		"permit out 17 from any to assigned 1-",
		"permit out 17 from any to assigned 5 frag",
		"permit out 1 from any 80 to assigned",
	} {
		fd, err := ParseFlowDescription(in)
		if err == nil {
			t.Errorf("%q: parsed as %+v, want an error", in, *fd)
			continue
		}
		if !errors.Is(err, ErrFlowDescription) {
			t.Errorf("%q: error %v does not wrap ErrFlowDescription", in, err)
		}
	}
}

func TestFlowDescriptionRules(t *testing.T) {
	ue := netip.MustParseAddr("10.60.0.7")
	fd, err := ParseFlowDescription("permit out 17 from 10.0.0.0/8 1000-2000,3000 to assigned 53")
	if err != nil {
		t.Fatal(err)
	}
	base := classify.Rule{Precedence: 10, Has: classify.FieldSourceInterface}
	down := fd.Rules(base, false, ue)
	up := fd.Rules(base, true, ue)
	if len(down) != 2 || len(up) != 2 {
		t.Fatalf("rules: %d downlink, %d uplink, want 2 each", len(down), len(up))
	}
	hdr := func(src, dst string, sp, dp uint16) *classify.Header {
		return &classify.Header{SrcIP: classify.AddrFromNetip(netip.MustParseAddr(src)),
			DstIP: classify.AddrFromNetip(netip.MustParseAddr(dst)), SrcPort: sp, DstPort: dp, Proto: 17}
	}
	matchAny := func(rs []classify.Rule, h *classify.Header) bool {
		for i := range rs {
			if rs[i].Matches(h) {
				return true
			}
		}
		return false
	}
	cases := []struct {
		rules []classify.Rule
		h     *classify.Header
		want  bool
	}{
		{down, hdr("10.1.1.1", "10.60.0.7", 1500, 53), true},
		{down, hdr("10.1.1.1", "10.60.0.7", 3000, 53), true},
		{down, hdr("10.1.1.1", "10.60.0.7", 2500, 53), false},
		{down, hdr("11.1.1.1", "10.60.0.7", 1500, 53), false},
		{down, hdr("10.1.1.1", "10.60.0.8", 1500, 53), false},
		{down, hdr("10.1.1.1", "10.60.0.7", 1500, 54), false},
		// Uplink swaps source and destination (TS 29.212 §5.4.2).
		{up, hdr("10.60.0.7", "10.1.1.1", 53, 1500), true},
		{up, hdr("10.1.1.1", "10.60.0.7", 1500, 53), false},
	}
	for i, c := range cases {
		if got := matchAny(c.rules, c.h); got != c.want {
			t.Errorf("case %d: match %v, want %v", i, got, c.want)
		}
	}
	// Protocol is matched unless "ip".
	h := hdr("10.1.1.1", "10.60.0.7", 1500, 53)
	h.Proto = 6
	if matchAny(down, h) {
		t.Error("TCP packet matched a UDP filter")
	}
	all, _ := ParseFlowDescription("permit out ip from any to assigned")
	rs := all.Rules(base, true, netip.Addr{})
	if len(rs) != 1 || rs[0].Has != base.Has || rs[0].SrcIP.Len != 0 || rs[0].DstIP.Len != 0 {
		t.Errorf("match-all filter without UE IP: %+v", rs)
	}
}

// FuzzFlowDescription checks that the parser never panics, that what it
// accepts prints back to an equal filter, and that expansion into rules
// stays bounded and valid.
func FuzzFlowDescription(f *testing.F) {
	for _, s := range []string{
		"permit out ip from any to assigned",
		"permit out 17 from 10.0.0.0/8 1000-2000 to assigned",
		"permit in 6 from 10.60.0.1 to 192.0.2.0/24 80,443,8000-8080",
		"permit out 6 from 2001:db8::/32 53 to any",
		"permit out ip from !1.2.3.4 to assigned",
		"deny in 1 from any to any",
	} {
		f.Add(s)
	}
	ue := netip.MustParseAddr("10.60.0.1")
	f.Fuzz(func(t *testing.T, s string) {
		fd, err := ParseFlowDescription(s)
		if err != nil {
			return
		}
		again, err := ParseFlowDescription(fd.String())
		if err != nil {
			t.Fatalf("%q printed as %q which fails: %v", s, fd.String(), err)
		}
		if !flowEqual(fd, again) {
			t.Fatalf("%q: round trip %+v != %+v", s, *fd, *again)
		}
		for _, up := range []bool{false, true} {
			rs := fd.Rules(classify.Rule{ID: 1}, up, ue)
			if len(rs) == 0 || len(rs) > maxPortRanges*maxPortRanges {
				t.Fatalf("%q expands to %d rules", s, len(rs))
			}
			for i := range rs {
				if err := rs[i].Validate(); err != nil {
					t.Fatalf("%q: rule %d: %v", s, i, err)
				}
			}
		}
	})
}
