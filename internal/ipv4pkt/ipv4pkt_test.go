package ipv4pkt

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

var (
	ueAddr = netip.MustParseAddr("10.60.0.7")
	dnAddr = netip.MustParseAddr("10.100.6.2")
)

func TestICMPEchoBuildParse(t *testing.T) {
	pkt := AppendICMPEcho(nil, ueAddr, dnAddr, 0x1234, 7, []byte("hello, dn"))
	if !ValidChecksum(pkt) {
		t.Fatal("bad IPv4 header checksum")
	}
	ip, err := ParseIPv4(pkt)
	if err != nil || ip.Src != ueAddr || ip.Dst != dnAddr || ip.Protocol != ProtoICMP || ip.TTL != 64 {
		t.Fatalf("%+v %v", ip, err)
	}
	if Checksum(ip.Payload, 0) != 0 {
		t.Fatal("bad ICMP checksum")
	}
	e, ok := ParseICMPEcho(ip.Payload)
	if !ok || e.Type != ICMPEchoRequest || e.ID != 0x1234 || e.Seq != 7 || string(e.Payload) != "hello, dn" {
		t.Fatalf("%+v", e)
	}
	// Odd-length payloads checksum too.
	odd := AppendICMPEchoReply(nil, dnAddr, ueAddr, 1, 2, []byte{1, 2, 3})
	if ip, _ := ParseIPv4(odd); Checksum(ip.Payload, 0) != 0 {
		t.Fatal("bad ICMP checksum for an odd payload")
	}
}

func TestUDPBuildParse(t *testing.T) {
	pkt := AppendUDP(nil, ueAddr, dnAddr, 40000, 9, []byte{1, 2, 3, 4, 5})
	ip, err := ParseIPv4(pkt)
	if err != nil || ip.Protocol != ProtoUDP || !ValidChecksum(pkt) {
		t.Fatalf("%+v %v", ip, err)
	}
	u, ok := ParseUDP(ip.Payload)
	if !ok || u.SrcPort != 40000 || u.DstPort != 9 || !bytes.Equal(u.Payload, []byte{1, 2, 3, 4, 5}) {
		t.Fatalf("%+v", u)
	}
	// The UDP checksum verifies over the pseudo-header (RFC 768).
	s, d := ueAddr.As4(), dnAddr.As4()
	pseudo := uint32(s[0])<<8 | uint32(s[1])
	pseudo += uint32(s[2])<<8 | uint32(s[3])
	pseudo += uint32(d[0])<<8 | uint32(d[1])
	pseudo += uint32(d[2])<<8 | uint32(d[3])
	pseudo += ProtoUDP + uint32(len(ip.Payload))
	if Checksum(ip.Payload, pseudo) != 0 {
		t.Fatal("bad UDP checksum")
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	good := AppendUDP(nil, ueAddr, dnAddr, 1, 2, []byte{9})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     good[:10],
		"ipv6":      append([]byte{0x60}, good[1:]...),
		"truncated": good[:len(good)-1],
		"ihl":       append([]byte{0x41}, good[1:]...),
	} {
		if _, err := ParseIPv4(b); !errors.Is(err, ErrNotIPv4) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := ParseUDP([]byte{0, 1, 0, 2, 0, 99, 0, 0}); ok {
		t.Error("UDP length beyond the datagram accepted")
	}
	if _, ok := ParseICMPEcho([]byte{3, 0, 0, 0, 0, 0, 0, 0}); ok {
		t.Error("destination unreachable parsed as echo")
	}
}

func FuzzParseIPv4(f *testing.F) {
	f.Add(AppendICMPEcho(nil, ueAddr, dnAddr, 1, 1, []byte("x")))
	f.Add(AppendUDP(nil, ueAddr, dnAddr, 1, 2, nil))
	f.Add([]byte{0x45, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, err := ParseIPv4(b)
		if err != nil {
			return
		}
		ParseICMPEcho(ip.Payload)
		ParseUDP(ip.Payload)
	})
}

func TestChecksumKnownHeader(t *testing.T) {
	// RFC 1071 worked example header (Wikipedia's IPv4 checksum example).
	h := []byte{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7}
	if c := Checksum(h, 0); c != 0xb861 {
		t.Fatalf("checksum %#04x, want 0xb861", c)
	}
}
