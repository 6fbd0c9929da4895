//go:build linux

package afxdp

import (
	"net/netip"
	"testing"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/upfu"
)

// The frame decoders take any bytes: a frame they accept yields a packet
// inside the frame, and a G-PDU frame yields its GTP-U message.
func FuzzParseFrames(f *testing.F) {
	gpdu := gtpu.AppendGPDU(nil, 0x10, 9, false, []byte("inner"))
	udp := ipv4pkt.AppendUDP(nil, netip.MustParseAddr("10.100.3.1"), netip.MustParseAddr("10.100.3.2"), 2152, 2152, gpdu)
	frame := append(make([]byte, 12), 0x08, 0x00)
	frame = append(frame, udp...)
	// The seed is accepted as N3, and its payload is the GTP-U message.
	var pk upfu.Packet
	if !parseN3(frame, 0, len(frame), &pk) || string(pk.Data()) != string(gpdu) || pk.Peer != netip.MustParseAddrPort("10.100.3.1:2152") {
		f.Fatalf("G-PDU frame parsed as %+v", pk)
	}
	f.Add(frame, 0)
	f.Add(frame[:30], 2)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, off int) {
		if off < 0 || off > 64 || off > len(b) {
			return
		}
		n := len(b) - off
		var pk upfu.Packet
		for _, parse := range []func([]byte, int, int, *upfu.Packet) bool{parseN3, parseN6} {
			pk = upfu.Packet{}
			if parse(b, off, n, &pk) {
				if pk.Off < off || pk.Len < 0 || pk.Off+pk.Len > len(b) {
					t.Fatalf("packet [%d:+%d] outside the frame [%d:%d]", pk.Off, pk.Len, off, len(b))
				}
			}
		}
	})
}
