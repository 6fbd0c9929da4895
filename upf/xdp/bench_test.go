package xdp

import (
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/tern5g/tern/classify"
)

// benchProg runs prog on frame b.N times in one BPF_PROG_TEST_RUN (the
// redirect itself is not executed): ns/op is the program's time per
// packet plus the system call amortized.
func benchProg(b *testing.B, e *env, prog *ebpf.Program, ifc *net.Interface, frame []byte, want uint32) {
	if ret, _ := e.run(prog, ifc, frame); ret != want {
		b.Fatalf("action %s, want %s (stats %+v)", action(ret), action(want), e.f.Stats())
	}
	opts := &ebpf.RunOptions{
		Data:    frame,
		Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifc.Index)},
		Repeat:  uint32(b.N),
	}
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	if _, err := prog.Run(opts); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkN3Decap(b *testing.B) {
	e := setup(b, nil)
	e.install(session(sessOpts{}))
	benchProg(b, e, e.f.objs.UpfN3, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 1400)), xdpRedirect)
}

func BenchmarkN6Encap(b *testing.B) {
	e := setup(b, nil)
	e.install(session(sessOpts{}))
	benchProg(b, e, e.f.objs.UpfN6, e.n6, dlFrame(udp4(dnIP, ueIP, 80, 1234, 1400)), xdpRedirect)
}

// BenchmarkN3DecapSDF: eight SDF rules, the flow cache answering.
func BenchmarkN3DecapSDF(b *testing.B) {
	e := setup(b, nil)
	var rs []classify.Rule
	for i := range 7 {
		rs = append(rs, classify.Rule{ID: 0, Precedence: uint32(10 + i), Has: classify.FieldTEID | classify.FieldProto | classify.FieldDstPort,
			TEID: ulTEID, Proto: 6, DstPort: classify.PortRange{Lo: uint16(1000 * i), Hi: uint16(1000*i + 10)}})
	}
	rs = append(rs, classify.Rule{ID: 0, Precedence: 100, Has: classify.FieldTEID, TEID: ulTEID,
		DstIP: classify.PrefixFromNetip(netip.MustParsePrefix("8.8.0.0/16"))})
	e.install(session(sessOpts{ulRules: rs}))
	benchProg(b, e, e.f.objs.UpfN3, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 1400)), xdpRedirect)
}
