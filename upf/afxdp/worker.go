//go:build linux

package afxdp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"runtime"

	"golang.org/x/sys/unix"

	xsk "github.com/tern5g/tern/internal/afxdp"
	"github.com/tern5g/tern/upf/upfu"
)

// worker drives one queue: its sockets on every interface, their shared
// UMEM and its free list. Only its goroutine touches them.
type worker struct {
	d     *Driver
	q     int
	umem  *xsk.UMEM
	socks []*xsk.Socket // index as d.ifaces
	pw    *upfu.Worker

	free  []uint64 // frame addresses the worker owns and no ring holds
	used  []bool   // per frame: an output of this batch transmits it
	descs []unix.XDPDesc
	addrs []uint64
	in    []upfu.Packet
	inFr  []int // frame index of in[i]
	nin   int   // inputs in the current batch
	out   []upfu.Packet
	txq   [][]unix.XDPDesc // per socket: descriptors of this batch
	pfds  []unix.PollFd

	// Per-batch counts, published with one atomic add per interface.
	txn, fbn, drops []uint64
}

func newWorker(d *Driver, q int, u *xsk.UMEM) *worker {
	b := d.cfg.Batch
	n := len(d.ifaces)
	wk := &worker{d: d, q: q, umem: u,
		free: make([]uint64, 0, u.Frames()), used: make([]bool, u.Frames()),
		descs: make([]unix.XDPDesc, b), addrs: make([]uint64, ringSize),
		in: make([]upfu.Packet, b), inFr: make([]int, b), out: make([]upfu.Packet, 0, 2*b),
		txq: make([][]unix.XDPDesc, n), txn: make([]uint64, n), fbn: make([]uint64, n), drops: make([]uint64, n)}
	for i := range u.Frames() {
		wk.free = append(wk.free, u.Addr(i))
	}
	for i := range wk.txq {
		wk.txq[i] = make([]unix.XDPDesc, 0, 2*b)
	}
	return wk
}

func (wk *worker) close() error {
	var err error
	for _, s := range wk.socks {
		err = errors.Join(err, s.Close())
	}
	wk.socks = nil
	return errors.Join(err, wk.umem.Close())
}

// fillTarget is how many frames each socket's fill ring is stocked with:
// an equal share of the UMEM, less a reserve for copies and for the
// frames in flight on TX.
func (wk *worker) fillTarget() int {
	return min(ringSize, wk.umem.Frames()/(len(wk.socks)+1))
}

func (wk *worker) run() {
	// One thread per queue: the batch loop is the thread's only work,
	// and a thread that stays put keeps the rings in its CPU's cache.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := wk.d
	wk.pw = d.p.NewWorker()
	wk.pw.SendsLater()
	for _, s := range wk.socks {
		wk.pfds = append(wk.pfds, unix.PollFd{Fd: int32(s.FD()), Events: unix.POLLIN})
	}
	wk.pfds = append(wk.pfds, unix.PollFd{Fd: int32(d.stopFD), Events: unix.POLLIN})
	for !d.closed.Load() {
		wk.reap()
		wk.refill()
		got := 0
		for i := range wk.socks {
			got += wk.batch(i)
		}
		if got > 0 {
			continue
		}
		// Idle: sleep until a socket has frames or Close. Frames still
		// out on TX come back without a wakeup, so poll briefly then.
		timeout := 1000
		for _, s := range wk.socks {
			if s.TxHeld() > 0 {
				timeout = 1
				break
			}
		}
		for i := range wk.pfds {
			wk.pfds[i].Revents = 0
		}
		if _, err := unix.Poll(wk.pfds, timeout); err != nil && err != unix.EINTR {
			d.log.Error("afxdp: poll", "queue", wk.q, "err", err)
			return
		}
	}
}

// refill stocks each socket's fill ring from the free list.
func (wk *worker) refill() {
	target := wk.fillTarget()
	for _, s := range wk.socks {
		if need := target - s.FillHeld(); need > 0 && len(wk.free) > 0 {
			k := min(need, len(wk.free))
			n := s.Fill(wk.free[len(wk.free)-k:])
			wk.free = wk.free[:len(wk.free)-n]
		}
	}
}

// reap moves sent frames from the completion rings to the free list.
func (wk *worker) reap() {
	for _, s := range wk.socks {
		for s.TxHeld() > 0 {
			n := s.Complete(wk.addrs)
			if n == 0 {
				break
			}
			for _, a := range wk.addrs[:n] {
				wk.free = append(wk.free, a&^uint64(frameSize-1))
			}
		}
	}
}

// batch runs one RX batch of socket i through the pipeline and sends the
// outputs. It returns the number of frames received.
func (wk *worker) batch(i int) int {
	d := wk.d
	s := wk.socks[i]
	ifc := d.ifaces[i]
	n := s.Receive(wk.descs)
	if n == 0 {
		return 0
	}
	k := 0
	invalid := 0
	for _, desc := range wk.descs[:n] {
		frame, off := wk.umem.Frame(desc.Addr)
		fi := int(desc.Addr) / frameSize
		pk := &wk.in[k]
		var ok bool
		if ifc.n3 {
			ok = parseN3(frame, off, int(desc.Len), pk)
		} else {
			ok = parseN6(frame, off, int(desc.Len), pk)
		}
		if !ok {
			invalid++
			wk.free = append(wk.free, uint64(fi*frameSize))
			continue
		}
		wk.inFr[k] = fi
		k++
	}
	wk.nin = k
	ifc.rx.Add(uint64(n))
	if invalid > 0 {
		ifc.rxInvalid.Add(uint64(invalid))
	}
	if ifc.n3 {
		wk.out = wk.pw.Uplink(wk.in[:k], wk.out[:0])
	} else {
		wk.out = wk.pw.Downlink(wk.in[:k], wk.out[:0])
	}
	for j := range wk.out {
		wk.emit(&wk.out[j])
	}
	wk.flush()
	// The batch is on the wire (or on the TX rings the kicks drained):
	// End Markers may follow it.
	wk.pw.Sent()
	for j := range k {
		fi := wk.inFr[j]
		if wk.used[fi] {
			wk.used[fi] = false // on a TX ring: back through completion
			continue
		}
		wk.free = append(wk.free, uint64(fi*frameSize))
	}
	wk.nin = 0
	// Drop the references to UMEM frames the pipeline no longer needs
	// (outputs point into them).
	clear(wk.out)
	return n
}

// parseN3 makes pk the UDP payload of an Eth/IPv4/UDP frame.
func parseN3(frame []byte, off, n int, pk *upfu.Packet) bool {
	b := frame[off : off+n]
	if len(b) < n3Hdr || binary.BigEndian.Uint16(b[12:14]) != 0x0800 {
		return false
	}
	ip := b[ethLen:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if ip[0]>>4 != 4 || ihl < ipv4Len || total > len(ip) || total < ihl+udpLen || ip[9] != unix.IPPROTO_UDP {
		return false
	}
	udp := ip[ihl:total]
	ulen := int(binary.BigEndian.Uint16(udp[4:6]))
	if ulen < udpLen || ulen > len(udp) {
		return false
	}
	pk.Buf = frame
	pk.Off = off + ethLen + ihl + udpLen
	pk.Len = ulen - udpLen
	pk.Peer = addrPort4([4]byte(ip[12:16]), binary.BigEndian.Uint16(udp[0:2]))
	pk.Port = 0
	return true
}

// parseN6 makes pk the IP packet of an Ethernet frame.
func parseN6(frame []byte, off, n int, pk *upfu.Packet) bool {
	if n <= ethLen {
		return false
	}
	switch binary.BigEndian.Uint16(frame[off+12 : off+14]) {
	case 0x0800, 0x86dd:
	default:
		return false
	}
	pk.Buf = frame
	pk.Off = off + ethLen
	pk.Len = n - ethLen
	pk.Peer = noPeer
	pk.Port = 0
	return true
}

// emit queues one output on the TX ring of its interface, in place when
// it is the only output of a UMEM frame with room for its headers, else
// in a copy; or sends it through the kernel when its next hop is not
// resolved.
func (wk *worker) emit(pk *upfu.Packet) {
	d := wk.d
	var i int // interface index
	var gw = pk.Peer.Addr()
	hdr := ethLen
	if pk.Port == upfu.PortN3 {
		i = 0
		hdr = n3Hdr
		if !gw.Is4() {
			wk.drops[0]++
			return
		}
	} else {
		i = 1 + int(pk.Port)
		if int(pk.Port) < 0 || i >= len(wk.socks) {
			wk.drops[0]++
			return
		}
		gw = d.cfg.N6[pk.Port].Gateway
	}
	ifc := d.ifaces[i]
	hop, ok := d.neigh.Lookup(gw)
	if !ok || hop.Ifindex != ifc.index {
		if d.fb.send(pk) {
			wk.fbn[i]++
		} else {
			wk.drops[i]++
		}
		return
	}
	// The frame to send from: the output's own when it can be.
	fi := wk.umem.Index(pk.Buf)
	var frame []byte
	var start int
	if fi >= 0 && !wk.used[fi] && pk.Off >= hdr {
		frame, _ = wk.umem.Frame(uint64(fi * frameSize))
		start = pk.Off - hdr
		wk.used[fi] = true // the batch leaves it to the TX ring
	} else {
		// Not in a frame (the pipeline's scratch space), a second
		// output of one frame, or no headroom: copy.
		if len(wk.free) == 0 || copyOff+pk.Len > frameSize {
			d.noFrame.Add(1)
			return
		}
		a := wk.free[len(wk.free)-1]
		wk.free = wk.free[:len(wk.free)-1]
		fi = int(a) / frameSize
		frame, _ = wk.umem.Frame(a)
		copy(frame[copyOff:], pk.Data())
		start = copyOff - hdr
	}
	b := frame[start : start+hdr+pk.Len]
	copy(b[0:6], hop.MAC[:])
	copy(b[6:12], ifc.mac[:])
	switch {
	case pk.Port == upfu.PortN3:
		binary.BigEndian.PutUint16(b[12:14], 0x0800)
		putIPv4UDP(b[ethLen:], d.cfg.N3Addr.As4(), pk.Peer.Addr().As4(), pk.Peer.Port(), pk.Len)
	case pk.Len > 0 && b[ethLen]>>4 == 6:
		binary.BigEndian.PutUint16(b[12:14], 0x86dd)
	default:
		binary.BigEndian.PutUint16(b[12:14], 0x0800)
	}
	wk.txq[i] = append(wk.txq[i], unix.XDPDesc{Addr: uint64(fi*frameSize + start), Len: uint32(len(b))})
	if len(wk.txq[i]) == cap(wk.txq[i]) {
		wk.transmit(i)
	}
}

// putIPv4UDP writes the outer IPv4 (TTL 64, DF, checksum) and UDP (source
// port 2152, checksum 0 as IPv4 allows) headers of an n-byte payload.
func putIPv4UDP(b []byte, src, dst [4]byte, dport uint16, n int) {
	ip := b[:ipv4Len]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:4], uint16(ipv4Len+udpLen+n))
	binary.BigEndian.PutUint16(ip[4:6], 0)      // ID: atomic datagram (RFC 6864)
	binary.BigEndian.PutUint16(ip[6:8], 0x4000) // DF
	ip[8], ip[9] = 64, unix.IPPROTO_UDP
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	var sum uint32
	for j := 0; j < ipv4Len; j += 2 {
		sum += uint32(ip[j])<<8 | uint32(ip[j+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
	udp := b[ipv4Len : ipv4Len+udpLen]
	binary.BigEndian.PutUint16(udp[0:2], 2152)
	binary.BigEndian.PutUint16(udp[2:4], dport)
	binary.BigEndian.PutUint16(udp[4:6], uint16(udpLen+n))
	udp[6], udp[7] = 0, 0
}

// transmit moves socket i's queued descriptors to its TX ring; those
// that do not fit are dropped and their frames freed.
func (wk *worker) transmit(i int) {
	q := wk.txq[i]
	if len(q) == 0 {
		return
	}
	s := wk.socks[i]
	n := s.Transmit(q)
	if n < len(q) {
		// Ring full: kick, reap and try once more before dropping.
		s.Kick()
		wk.reap()
		n += s.Transmit(q[n:])
	}
	for _, desc := range q[n:] {
		fi := int(desc.Addr) / frameSize
		if wk.isInput(fi) {
			wk.used[fi] = false // the batch frees it
		} else {
			wk.free = append(wk.free, uint64(fi*frameSize)) // a copy
		}
	}
	wk.txn[i] += uint64(n)
	wk.drops[i] += uint64(len(q) - n)
	wk.txq[i] = q[:0]
}

// isInput reports whether frame fi is an input of the current batch (the
// batch frees those itself).
func (wk *worker) isInput(fi int) bool {
	for _, f := range wk.inFr[:wk.nin] {
		if f == fi {
			return true
		}
	}
	return false
}

// flush transmits and kicks every socket with queued descriptors and
// publishes the batch's counters.
func (wk *worker) flush() {
	d := wk.d
	for i, s := range wk.socks {
		wk.transmit(i)
		if s.TxHeld() > 0 {
			if _, err := s.Kick(); err != nil && !d.closed.Load() {
				d.log.Debug("afxdp: TX", "iface", d.ifaces[i].name, "queue", wk.q, "err", err)
			}
		}
		ifc := d.ifaces[i]
		if wk.txn[i] > 0 {
			ifc.tx.Add(wk.txn[i])
			wk.txn[i] = 0
		}
		if wk.fbn[i] > 0 {
			ifc.fallback.Add(wk.fbn[i])
			wk.fbn[i] = 0
		}
		if wk.drops[i] > 0 {
			ifc.txDrops.Add(wk.drops[i])
			wk.drops[i] = 0
		}
	}
}

var noPeer netip.AddrPort

func addrPort4(a [4]byte, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4(a), port)
}
