package xdp

import (
	"net"
	"net/netip"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/upf/rules"
)

// benchProg times prog on frame, one run per BPF_PROG_TEST_RUN, so that
// every run sees frame as given: the kernel's Repeat runs the program
// again on what the last run left, which for upf_n3 is a decapsulated
// packet and for upf_n6 an encapsulated one, both passed as not theirs
// (999 of 1,000 runs took that path when this used Repeat). The system
// call is in ns/op; the metrics are the kernel's time for the run itself
// (kernel-ns/pkt: the program, the timer's clock read and the softirq
// bracket), and prog-ns/pkt, that less the same for a program that only
// returns want, timed alternately with prog so that drift cancels. The
// redirect itself is not executed.
func benchProg(b *testing.B, e *env, prog *ebpf.Program, ifc *net.Interface, frame []byte, want uint32) {
	if ret, _ := e.run(prog, ifc, frame); ret != want {
		b.Fatalf("action %s, want %s (stats %+v)", action(ret), action(want), e.f.Stats())
	}
	base, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(want)), asm.Return()}})
	if err != nil {
		b.Fatal(err)
	}
	defer base.Close()
	run, runBase := newTestRun(prog, ifc, frame), newTestRun(base, ifc, frame)
	var total, totalBase uint64
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for range b.N {
		ret, d := run.once(b)
		if ret != want {
			b.Fatalf("action %s, want %s", action(ret), action(want))
		}
		_, db := runBase.once(b)
		total += uint64(d)
		totalBase += uint64(db)
	}
	b.ReportMetric(float64(total)/float64(b.N), "kernel-ns/pkt")
	b.ReportMetric((float64(total)-float64(totalBase))/float64(b.N), "prog-ns/pkt")
}

// testRun is one program's BPF_PROG_TEST_RUN of one frame, one run a call,
// without allocating.
type testRun struct {
	frame []byte
	ctx   xdpMD
	out   []byte
	attr  struct {
		progFD, retval, sizeIn, sizeOut uint32
		dataIn, dataOut                 uint64
		repeat, duration                uint32
		ctxSizeIn, ctxSizeOut           uint32
		ctxIn, ctxOut                   uint64
		flags, cpu, batchSize           uint32
		_                               uint32
	}
}

func newTestRun(prog *ebpf.Program, ifc *net.Interface, frame []byte) *testRun {
	r := &testRun{frame: frame, ctx: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifc.Index)},
		out: make([]byte, len(frame)+256)}
	r.attr.progFD = uint32(prog.FD())
	r.attr.sizeIn = uint32(len(frame))
	r.attr.dataIn = uint64(uintptr(unsafe.Pointer(&frame[0])))
	r.attr.ctxSizeIn = uint32(unsafe.Sizeof(r.ctx))
	r.attr.ctxIn = uint64(uintptr(unsafe.Pointer(&r.ctx)))
	r.attr.repeat = 1
	return r
}

// once runs the program on a fresh copy of the frame: its action and the
// kernel's time for the run, ns.
func (r *testRun) once(b *testing.B) (uint32, uint32) {
	r.attr.sizeOut = uint32(len(r.out))
	r.attr.dataOut = uint64(uintptr(unsafe.Pointer(&r.out[0])))
	const bpfProgTestRun = 10
	if _, _, errno := unix.Syscall(unix.SYS_BPF, bpfProgTestRun, uintptr(unsafe.Pointer(&r.attr)), unsafe.Sizeof(r.attr)); errno != 0 {
		b.Fatal(errno)
	}
	runtime.KeepAlive(r)
	return r.attr.retval, r.attr.duration
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

// qerURR is a session as bench upf installs them: a QER with an MBR
// that never limits, and a volume URR.
func qerURR() sessOpts {
	tb := func() *rules.TokenBucket { return rules.NewTokenBucket(125e9, 125e6) } // 1 Tbit/s
	return sessOpts{
		qers: []*rules.QER{{ID: 1, ULOpen: true, DLOpen: true, MBRUL: tb(), MBRDL: tb()}},
		urrs: []*rules.URR{{ID: 1, Counters: &rules.Counters{}}},
	}
}

func BenchmarkN3DecapQERURR(b *testing.B) {
	e := setup(b, nil)
	e.install(session(qerURR()))
	benchProg(b, e, e.f.objs.UpfN3, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 64)), xdpRedirect)
}

func BenchmarkN6EncapQERURR(b *testing.B) {
	e := setup(b, nil)
	e.install(session(qerURR()))
	benchProg(b, e, e.f.objs.UpfN6, e.n6, dlFrame(udp4(dnIP, ueIP, 80, 1234, 64)), xdpRedirect)
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

// BenchmarkN3Steer: the steering program on a G-PDU whose bucket is on
// another CPU, what the receiving CPU pays (the redirect to the cpumap is
// not executed; upf_cpu pays upf_n3's there).
func BenchmarkN3Steer(b *testing.B) { benchSteer(b, 1) }

// BenchmarkN3SteerLocal: the steering program on a G-PDU whose bucket is
// on this CPU, which it processes inline: steering's overhead over
// BenchmarkN3Decap.
func BenchmarkN3SteerLocal(b *testing.B) { benchSteer(b, 0) }

// benchSteer times upf_n3_steer, pinned to the first steering CPU, on a
// session whose bucket is on steering CPU steerTo.
func benchSteer(b *testing.B, steerTo int) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	e := setup(b, func(c *Config) { c.CPUs = 2 })
	e.install(session(sessOpts{}))
	cpus := e.f.SteerCPUs()
	pinThread(b, cpus[0])
	e.steerAll(cpus[steerTo])
	benchProg(b, e, e.f.objs.UpfN3Steer, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 1400)), xdpRedirect)
}

// BenchmarkSync: one Sync over 100,000 sessions, each with a URR (the
// counters of every slot in use read and folded).
func BenchmarkSync(b *testing.B) {
	e := setup(b, nil)
	const n = 100_000
	base := netip.MustParseAddr("10.100.0.0").As4()
	for i := range n {
		a := base
		a[2], a[3] = byte(i>>8), byte(i)
		a[1] += byte(i >> 16)
		u := &rules.URR{ID: 1, Counters: &rules.Counters{}}
		if !e.f.Install(session(sessOpts{seid: uint64(i + 1), ue: netip.AddrFrom4(a), ulTEID: uint32(0x100000 + i), urrs: []*rules.URR{u}})) {
			b.Fatalf("session %d not installed", i)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		e.f.Sync()
	}
}
