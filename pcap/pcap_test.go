package pcap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/ipv4pkt"
)

func TestWriteUDP(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddrPort("127.0.0.1:40000")
	dst := netip.MustParseAddrPort("127.0.0.2:9899")
	payload := []byte("hello sctp")
	w.Packet(true, src, dst, payload)
	w.Packet(false, src, dst, payload)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if binary.LittleEndian.Uint32(b) != magic || binary.LittleEndian.Uint32(b[20:]) != linkTypeRaw {
		t.Fatalf("bad header % x", b[:24])
	}
	rec := b[24:]
	capLen := binary.LittleEndian.Uint32(rec[8:])
	if capLen != uint32(20+8+len(payload)) {
		t.Fatalf("caplen %d", capLen)
	}
	ip := rec[16 : 16+capLen]
	if ip[0] != 0x45 || ip[9] != 17 || !ipv4pkt.ValidChecksum(ip) {
		t.Fatalf("bad ipv4 header % x", ip[:20])
	}
	if got := netip.AddrFrom4([4]byte(ip[12:16])); got != src.Addr() {
		t.Fatalf("outbound src %v", got)
	}
	if binary.BigEndian.Uint16(ip[22:]) != 9899 || !bytes.Equal(ip[28:], payload) {
		t.Fatalf("bad udp % x", ip[20:])
	}
	// The inbound copy goes remote -> local.
	rec2 := rec[16+capLen:]
	ip2 := rec2[16:]
	if got := netip.AddrFrom4([4]byte(ip2[12:16])); got != dst.Addr() {
		t.Fatalf("inbound src %v", got)
	}
}

func TestWriteUDP6(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.WriteUDP(time.Unix(1, 0), netip.MustParseAddrPort("[::1]:1"), netip.MustParseAddrPort("[::1]:2"), []byte{1, 2, 3})
	w.Flush()
	ip := buf.Bytes()[24+16:]
	if ip[0]>>4 != 6 || ip[6] != 17 || binary.BigEndian.Uint16(ip[4:]) != 11 {
		t.Fatalf("bad ipv6 header % x", ip[:40])
	}
}
