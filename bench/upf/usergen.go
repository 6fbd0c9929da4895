package upf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/internal/afxdp"
	"github.com/tern5g/tern/lab"
)

// Generators: how the benchmark's frames are made and sent.
const (
	// GenAuto is live where the kernel allows it, else afxdp, else
	// packet.
	GenAuto = "auto"
	// GenLive is xdp_gen run with BPF_PROG_RUN in live-frames mode: the
	// kernel sends XDP frames straight from a page pool (upf.go). Some
	// kernels refuse it (EPERM) while plain BPF_PROG_RUN and XDP work.
	GenLive = "live"
	// GenAFXDP writes the frames into the UMEM of an AF_XDP socket on
	// the sending veth (copy mode: veth has no zero-copy) and sends them
	// from its TX ring.
	GenAFXDP = "afxdp"
	// GenPacket sends the frames from an AF_PACKET socket with sendmmsg,
	// past the qdisc (PACKET_QDISC_BYPASS).
	GenPacket = "packet"
)

// Generators lists the values of Config.Generator.
var Generators = []string{GenAuto, GenLive, GenAFXDP, GenPacket}

// generatorText says what each generator is, for the report.
var generatorText = map[string]string{
	GenLive:   "XDP program run with BPF_PROG_RUN, live frames, XDP_TX on the sending veth (ran uplink, dn downlink)",
	GenAFXDP:  "user space: frames stamped in the UMEM of an AF_XDP socket (copy mode) on the sending veth, sent from its TX ring",
	GenPacket: "user space: frames stamped in buffers sent by an AF_PACKET socket with sendmmsg, past the qdisc, on the sending veth",
}

// GeneratorText says what generator gen is (one of GenLive, GenAFXDP,
// GenPacket).
func GeneratorText(gen string) string { return generatorText[gen] }

// The user-space generators make the same frames as xdp_gen: stampFrame
// writes what it writes (TestStampFrameIsXDPGen checks them byte for
// byte), with the send time from the same clock (CLOCK_MONOTONIC,
// bpf_ktime_get_ns), so the sink reads them alike. Their frames reach the
// core's veth as socket buffers, which veth copies into a page of its own
// before it runs XDP on them (an skb has less headroom than XDP needs):
// every variant's path costs that copy more than with live frames, so
// their rates are lower and the ratios to the references, measured with
// the same generator, closer to 1.

// stampFrame rewrites frame f, a copy of the template, into the frame of
// sequence number seq sent at ts: the session's TEID and inner source
// address (uplink) or destination address (downlink) with the IPv4
// header checksum, and the stamp (struct stamp, in host byte order). It
// is xdp_gen's work, for the user-space generators.
func stampFrame(f []byte, c *genConfig, seq, ts uint64) {
	n := uint64(max(c.Sessions, 1))
	idx := seq % n
	if c.Stride != 0 {
		idx = seq * uint64(c.Stride) % n
	}
	if c.TeidOff != 0 {
		binary.BigEndian.PutUint32(f[c.TeidOff&0xfff:], c.TeidBase+uint32(idx))
	}
	if c.IpOff != 0 {
		ip := f[c.IpOff&0xfff:][:20]
		off := 12
		if c.AddrOff == 16 {
			off = 16
		}
		binary.BigEndian.PutUint32(ip[off:], c.AddrBase+uint32(idx))
		ip[10], ip[11] = 0, 0
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
		sum = sum&0xffff + sum>>16
		sum = sum&0xffff + sum>>16
		binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	}
	s := f[c.StampOff&0xfff:][:stampLen]
	binary.NativeEndian.PutUint32(s[0:], stampMagic)
	binary.NativeEndian.PutUint32(s[4:], uint32(idx))
	binary.NativeEndian.PutUint64(s[8:], seq)
	binary.NativeEndian.PutUint64(s[16:], ts)
}

// stampMagic is STAMP_MAGIC in bpf/bench.c.
const stampMagic = 0x7465726e

// userBatch is how many frames a user-space generator hands the kernel at
// once (the live generator's batch).
const userBatch = liveBatch

// paceBurst is how many frames a paced generator that fell behind sends
// back to back at most (PACE_BURST in bpf/bench.c).
const paceBurst = 32

// userTX is a user-space generator's socket on one veth.
type userTX interface {
	// buffers returns up to n buffers of size bytes to write frames into;
	// they are the caller's until send.
	buffers(n, size int) [][]byte
	// send hands the kernel the buffers of the last buffers call and
	// returns how many frames it has sent since the last call (AF_XDP
	// counts them as the kernel completes them).
	send() (int, error)
	// drain waits, briefly, for the frames still queued and returns how
	// many more went.
	drain() (int, error)
	close() error
}

// userGen is the user-space generator on one veth: its socket, opened on
// first use in the veth's namespace, and its sequence numbers, which run
// on from run to run as xdp_gen's do.
type userGen struct {
	mode       string // GenAFXDP or GenPacket
	ns, ifname string
	tx         userTX
	seq        uint64
}

// openUserTX opens mode's socket on interface ifname of the calling
// thread's namespace.
func openUserTX(mode, ifname string) (userTX, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	switch mode {
	case GenAFXDP:
		return openXSKTX(ifi.Index)
	case GenPacket:
		return openPacketTX(ifi.Index)
	}
	return nil, fmt.Errorf("bench upf: generator %q", mode)
}

// run sends g's frames for d at rate frames/s (0: as fast as it can), on
// CPU 0 as the live generator does, and returns how many the kernel sent
// and the time from the first frame's stamp to the last's.
func (u *userGen) run(g *generator, d time.Duration, rate float64) (sent uint64, elapsed time.Duration, err error) {
	err = lab.Do(u.ns, func() error {
		return onCPU0(func() error {
			if u.tx == nil {
				tx, err := openUserTX(u.mode, u.ifname)
				if err != nil {
					return fmt.Errorf("bench upf: %s generator on %s/%s: %w", u.mode, u.ns, u.ifname, err)
				}
				u.tx = tx
			}
			var interval time.Duration
			if rate > 0 {
				interval = time.Duration(1e9 / rate)
			}
			var first, last time.Duration
			start := ktime()
			stop, next := start+d, start
			for {
				now := ktime()
				if now >= stop {
					break
				}
				n := userBatch
				if interval > 0 {
					// Due frames only, evenly spaced: a generator that
					// fell behind catches up with a short burst and
					// then keeps time from now.
					n = 0
					for n < paceBurst && now >= next {
						n++
						if next += interval; next+paceBurst*interval < now {
							next = now
						}
					}
					if n == 0 {
						continue
					}
				}
				for _, f := range u.tx.buffers(n, len(g.frame)) {
					copy(f, g.frame)
					ts := ktime()
					stampFrame(f, &g.cfg, u.seq, uint64(ts))
					u.seq++
					if first == 0 {
						first = ts
					}
					last = ts
				}
				k, err := u.tx.send()
				sent += uint64(k)
				if err != nil {
					return fmt.Errorf("bench upf: %s generator on %s/%s: %w", u.mode, u.ns, u.ifname, err)
				}
			}
			k, err := u.tx.drain()
			sent += uint64(k)
			elapsed = last - first
			return err
		})
	})
	return sent, elapsed, err
}

func (u *userGen) close() error {
	if u.tx == nil {
		return nil
	}
	return u.tx.close()
}

// onCPU0 runs fn with the calling (locked) thread on CPU 0, so that a
// driver given CPUs of its own (upf.xdpCPUs) does not share them with the
// generator.
func onCPU0(fn func() error) error {
	var old, cpu0 unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err == nil {
		cpu0.Set(0)
		if unix.SchedSetaffinity(0, &cpu0) == nil {
			defer unix.SchedSetaffinity(0, &old)
		}
	}
	return fn()
}

// packetTX sends with sendmmsg on an AF_PACKET socket that receives
// nothing (protocol 0) and bypasses the qdisc, as pktgen does.
type packetTX struct {
	fd   int
	bufs [][]byte
	iovs []unix.Iovec
	hdrs []unix.Mmsghdr
	to   unix.RawSockaddrLinklayer
	n    int // buffers handed out by the last buffers call
}

func openPacketTX(ifindex int) (*packetTX, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	p := &packetTX{fd: fd}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		p.close()
		return nil, fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	// Room for a few batches in flight; a send that finds none waits at
	// most this long, so a run ends near its time.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	p.to = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_IP), Ifindex: int32(ifindex), Halen: 6}
	p.bufs = make([][]byte, userBatch)
	p.iovs = make([]unix.Iovec, userBatch)
	p.hdrs = make([]unix.Mmsghdr, userBatch)
	for i := range p.bufs {
		p.bufs[i] = make([]byte, 2048)
		p.iovs[i].Base = &p.bufs[i][0]
		p.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&p.to))
		p.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrLinklayer
		p.hdrs[i].Hdr.Iov = &p.iovs[i]
		p.hdrs[i].Hdr.SetIovlen(1)
	}
	return p, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *packetTX) buffers(n, size int) [][]byte {
	p.n = min(n, len(p.bufs))
	for i := range p.n {
		p.iovs[i].SetLen(size)
	}
	out := p.bufs[:p.n]
	for i := range out {
		out[i] = out[i][:size]
	}
	return out
}

// send runs sendmmsg until the kernel has taken the batch; a frame it
// refuses for want of room (ENOBUFS, EAGAIN after the send timeout) is
// not sent and not counted.
func (p *packetTX) send() (int, error) {
	sent := 0
	for sent < p.n {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(p.fd), uintptr(unsafe.Pointer(&p.hdrs[sent])), uintptr(p.n-sent), 0, 0, 0)
		switch e {
		case 0:
			sent += int(r)
		case unix.EINTR:
		case unix.ENOBUFS, unix.EAGAIN:
			return sent, nil
		default:
			return sent, fmt.Errorf("sendmmsg: %w", e)
		}
	}
	return sent, nil
}

func (p *packetTX) drain() (int, error) { return 0, nil }

func (p *packetTX) close() error { return unix.Close(p.fd) }

// xskTX sends from the TX ring of an AF_XDP socket on queue 0 of the
// veth, in copy mode, from a UMEM of its own.
type xskTX struct {
	umem  *afxdp.UMEM
	sock  *afxdp.Socket
	free  []uint64 // frames of the UMEM not on a ring
	descs []unix.XDPDesc
	done  []uint64
	out   [][]byte
}

const xskFrames = 4096

func openXSKTX(ifindex int) (*xskTX, error) {
	u, err := afxdp.NewUMEM(xskFrames, afxdp.DefaultFrameSize, 0)
	if err != nil {
		return nil, err
	}
	s, err := afxdp.Open(u, ifindex, 0, afxdp.Options{RingSize: 2048})
	if err != nil {
		u.Close()
		return nil, err
	}
	x := &xskTX{umem: u, sock: s, descs: make([]unix.XDPDesc, 0, userBatch), done: make([]uint64, 2048)}
	for i := range xskFrames {
		x.free = append(x.free, u.Addr(i))
	}
	return x, nil
}

// reap takes back the frames the kernel has sent and returns how many.
func (x *xskTX) reap() int {
	n := 0
	for {
		k := x.sock.Complete(x.done)
		if k == 0 {
			return n
		}
		x.free = append(x.free, x.done[:k]...)
		n += k
	}
}

func (x *xskTX) buffers(n, size int) [][]byte {
	x.descs = x.descs[:0]
	x.out = x.out[:0]
	n = min(n, len(x.free), cap(x.descs))
	for _, a := range x.free[len(x.free)-n:] {
		f, _ := x.umem.Frame(a)
		x.out = append(x.out, f[:size])
		x.descs = append(x.descs, unix.XDPDesc{Addr: a, Len: uint32(size)})
	}
	x.free = x.free[:len(x.free)-n]
	return x.out
}

// send queues the batch on the TX ring, has the kernel send it and counts
// the frames it completed.
func (x *xskTX) send() (int, error) {
	q := x.sock.Transmit(x.descs)
	for _, d := range x.descs[q:] { // no room on the ring: not sent
		x.free = append(x.free, d.Addr)
	}
	_, err := x.sock.Kick()
	return x.reap(), err
}

func (x *xskTX) drain() (int, error) {
	n := 0
	for deadline := time.Now().Add(100 * time.Millisecond); x.sock.TxHeld() > 0 && time.Now().Before(deadline); {
		if _, err := x.sock.Kick(); err != nil {
			return n, err
		}
		n += x.reap()
	}
	return n, nil
}

func (x *xskTX) close() error {
	return errors.Join(x.sock.Close(), x.umem.Close())
}
