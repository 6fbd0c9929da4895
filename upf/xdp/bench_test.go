package xdp

import (
	"net"
	"net/netip"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/upf/rules"
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
// another CPU (the redirect to the cpumap is not executed).
func BenchmarkN3Steer(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	e := setup(b, func(c *Config) { c.CPUs = 2 })
	e.install(session(sessOpts{}))
	cpus := e.f.SteerCPUs()
	pinThread(b, cpus[0])
	e.steerAll(cpus[1])
	benchProg(b, e, e.f.objs.UpfN3Steer, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 1400)), xdpRedirect)
}

// benchOnce runs prog on a fresh copy of frame b.N times, one run per
// BPF_PROG_TEST_RUN, and reports the kernel's time for the run (kernel-ns,
// the run and its timer: the system call is not in it) as ns/op does not:
// a program that changes the frame (decapsulation, encapsulation) cannot
// be timed with Repeat, whose runs after the first see the changed frame.
func benchOnce(b *testing.B, e *env, prog *ebpf.Program, ifc *net.Interface, frame []byte, want uint32) {
	ctx := xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifc.Index)}
	out := make([]byte, len(frame)+256)
	var attr struct {
		progFD, retval, sizeIn, sizeOut uint32
		dataIn, dataOut                 uint64
		repeat, duration                uint32
		ctxSizeIn, ctxSizeOut           uint32
		ctxIn, ctxOut                   uint64
		flags, cpu, batchSize           uint32
		_                               uint32
	}
	attr.progFD = uint32(prog.FD())
	attr.sizeIn = uint32(len(frame))
	attr.dataIn = uint64(uintptr(unsafe.Pointer(&frame[0])))
	attr.ctxSizeIn = uint32(unsafe.Sizeof(ctx))
	attr.ctxIn = uint64(uintptr(unsafe.Pointer(&ctx)))
	attr.repeat = 1
	var total uint64
	b.ResetTimer()
	for range b.N {
		attr.sizeOut = uint32(len(out))
		attr.dataOut = uint64(uintptr(unsafe.Pointer(&out[0])))
		const bpfProgTestRun = 10
		if _, _, errno := unix.Syscall(unix.SYS_BPF, bpfProgTestRun, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)); errno != 0 {
			b.Fatal(errno)
		}
		if attr.retval != want {
			b.Fatalf("action %s, want %s", action(attr.retval), action(want))
		}
		total += uint64(attr.duration)
	}
	runtime.KeepAlive(frame)
	runtime.KeepAlive(&ctx)
	b.ReportMetric(float64(total)/float64(b.N), "kernel-ns/pkt")
}

// The per-packet costs with steering, timed one run at a time: upf_n3
// (no steering); the steering program for a bucket on another CPU (what
// the receiving CPU pays; upf_cpu pays upf_n3's there); and for a bucket
// on this CPU (steering's overhead over upf_n3).
func BenchmarkOnceN3Decap(b *testing.B)       { benchOnceSteer(b, 1, -1) }
func BenchmarkOnceN3SteerRemote(b *testing.B) { benchOnceSteer(b, 2, 1) }
func BenchmarkOnceN3SteerLocal(b *testing.B)  { benchOnceSteer(b, 2, 0) }

func benchOnceSteer(b *testing.B, cpus, steerTo int) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	e := setup(b, func(c *Config) { c.CPUs = cpus })
	e.install(session(sessOpts{}))
	prog := e.f.objs.UpfN3
	if cpus > 1 {
		c := e.f.SteerCPUs()
		pinThread(b, c[0])
		e.steerAll(c[steerTo])
		prog = e.f.objs.UpfN3Steer
	}
	benchOnce(b, e, prog, e.n3, ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1234, 80, 1400)), xdpRedirect)
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
