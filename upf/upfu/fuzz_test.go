package upfu_test

import (
	"testing"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// FuzzPipeline feeds arbitrary bytes to both directions: nothing panics,
// and every output lies within its buffer.
func FuzzPipeline(f *testing.F) {
	f.Add(gtpu.AppendGPDU(nil, ulTEID, qfi, false, ipv4UDP(ueIP, dnIP, 1, 2, 40)), true)
	f.Add(gtpu.AppendEchoRequest(nil, 1), true)
	f.Add(gtpu.AppendGPDU(nil, 7, qfi, false, []byte{0x45}), true)
	f.Add(ipv4UDP(dnIP, ueIP, 1, 2, 40), false)
	f.Add([]byte{0x60, 0, 0, 0, 0, 0, 17, 64}, false)
	p := newPipeline(f, upfu.Config{})
	u := &rules.URR{ID: 1, Counters: &rules.Counters{}, Threshold: rules.Volume{Total: 1000}}
	p.Install(session(f, sessionOpts{urrs: []*rules.URR{u}}))
	w := p.NewWorker()
	out := make([]upfu.Packet, 0, 4)
	f.Fuzz(func(t *testing.T, b []byte, uplink bool) {
		in := []upfu.Packet{withHeadroom(b, gnb)}
		if uplink {
			out = w.Uplink(in, out[:0])
		} else {
			out = w.Downlink(in, out[:0])
		}
		for _, o := range out {
			if o.Off < 0 || o.Len < 0 || o.Off+o.Len > len(o.Buf) {
				t.Fatalf("output out of bounds: off %d len %d buf %d", o.Off, o.Len, len(o.Buf))
			}
		}
	})
}
