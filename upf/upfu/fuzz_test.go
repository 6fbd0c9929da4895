package upfu_test

import (
	"bytes"
	"testing"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// FuzzPipeline feeds arbitrary bytes to both directions: nothing panics,
// every output lies within its buffer, and the UPF-wide PDR table
// (GlobalPDRTable) does with every input what per-session tables do.
func FuzzPipeline(f *testing.F) {
	f.Add(gtpu.AppendGPDU(nil, ulTEID, qfi, false, ipv4UDP(ueIP, dnIP, 1, 2, 40)), true)
	f.Add(gtpu.AppendEchoRequest(nil, 1), true)
	f.Add(gtpu.AppendGPDU(nil, 7, qfi, false, []byte{0x45}), true)
	f.Add(ipv4UDP(dnIP, ueIP, 1, 2, 40), false)
	f.Add([]byte{0x60, 0, 0, 0, 0, 0, 17, 64}, false)
	f.Add(gtpu.AppendEndMarker(nil, ulTEID), true)
	f.Add(gtpu.AppendGPDU(nil, fuzzFwdTEID, qfi, true, ipv4UDP(dnIP, ueIP, 1, 2, 60)), true)
	// Path supervision and Error Indication handling: an Echo Response,
	// and an Error Indication for the session's downlink tunnel.
	f.Add(gtpu.AppendEchoResponse(nil, 1), true)
	gnbIP := gnb.Addr().As4()
	f.Add(gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{Seq: 1, TEID: dlTEID, PeerAddr: gnbIP[:], UDPPort: 2152}), true)
	var ws [2]*upfu.Worker
	for i, global := range []bool{false, true} {
		// Error Indications unlimited: the limiter's refill depends on timing.
		p := newPipeline(f, upfu.Config{GlobalPDRTable: global, ErrorIndicationRate: 1 << 30})
		u := &rules.URR{ID: 1, Counters: &rules.Counters{}, Threshold: rules.Volume{Total: 1000}}
		// With an indirect forwarding PDR: its re-encapsulation too.
		p.Install(withForwarding(f, session(f, sessionOpts{urrs: []*rules.URR{u}}), fuzzFwdTEID, gnb2, 0xf00d))
		ws[i] = p.NewWorker()
	}
	var outs [2][]upfu.Packet
	f.Fuzz(func(t *testing.T, b []byte, uplink bool) {
		for i, w := range ws {
			in := []upfu.Packet{withHeadroom(b, gnb)}
			if uplink {
				outs[i] = w.Uplink(in, outs[i][:0])
			} else {
				outs[i] = w.Downlink(in, outs[i][:0])
			}
			for _, o := range outs[i] {
				if o.Off < 0 || o.Len < 0 || o.Off+o.Len > len(o.Buf) {
					t.Fatalf("output out of bounds: off %d len %d buf %d", o.Off, o.Len, len(o.Buf))
				}
			}
		}
		if len(outs[0]) != len(outs[1]) {
			t.Fatalf("per-session tables sent %d packets, the global table %d", len(outs[0]), len(outs[1]))
		}
		for j := range outs[0] {
			a, g := outs[0][j], outs[1][j]
			if a.Port != g.Port || a.Peer != g.Peer || !bytes.Equal(a.Data(), g.Data()) {
				t.Fatalf("packet %d: per-session tables sent % x to %v/%d, the global table % x to %v/%d",
					j, a.Data(), a.Peer, a.Port, g.Data(), g.Peer, g.Port)
			}
		}
	})
}

const fuzzFwdTEID = 0x150
