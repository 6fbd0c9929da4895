package xdp

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/tern5g/tern/gtpu"
)

// FuzzPrograms runs the programs on arbitrary GTP-U messages (uplink) and
// IP packets (downlink) for an offloaded session. The verifier already
// proves memory safety; this checks that they fail closed: a frame is
// redirected only when it is a well-formed G-PDU on the session's TEID
// (uplink) or an IPv4 packet to its UE (downlink), and anything else is
// passed or dropped.
func FuzzPrograms(f *testing.F) {
	e := setup(f, nil)
	e.install(session(sessOpts{}))
	inner := udp4(ueIP, dnIP, 1234, 80, 100)
	f.Add(gtpu.AppendGPDU(nil, ulTEID, qfi, false, inner), false)
	f.Add(gtpu.AppendGPDU(nil, ulTEID, 0, false, inner), false)
	f.Add(udp4(dnIP, ueIP, 80, 1234, 100), true)
	f.Add([]byte{0x45, 0, 0, 20}, true)
	f.Fuzz(func(t *testing.T, b []byte, down bool) {
		// Each input may run on another thread.
		ee := e.sub(t)
		if down {
			act, _ := ee.dl(dlFrame(b))
			if act == xdpRedirect && (len(b) < 20 || b[0] != 0x45 || netip.AddrFrom4([4]byte(b[16:20])) != ueIP ||
				int(binary.BigEndian.Uint16(b[2:4])) > len(b)) {
				t.Fatalf("downlink % x redirected", b)
			}
			return
		}
		act, _ := ee.ul(gtpFrame(b))
		if act != xdpRedirect {
			return
		}
		var g gtpu.Header
		if err := gtpu.Parse(b, &g); err != nil || g.Type != gtpu.TypeGPDU || g.TEID != ulTEID {
			t.Fatalf("uplink % x redirected (parse %+v, %v)", b, g, err)
		}
		if p := g.Payload(b); len(p) < 20 || p[0] != 0x45 {
			t.Fatalf("uplink with inner % x redirected", p)
		}
	})
}
