// Package portable is the UPF's portable data-path driver: N3 over one UDP
// socket with batched I/O (recvmmsg/sendmmsg on preallocated headers) and
// N6 over one TUN device per DNN. It moves packets between the kernel and
// the upf/upfu pipeline: N3 reader goroutines run uplink batches, one
// reader per TUN runs downlink batches, each with its own pipeline worker.
package portable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/internal/sockbuf"
	"github.com/tern5g/tern/internal/tundev"
	"github.com/tern5g/tern/upf/upfu"
)

// N6 is one N6 device.
type N6 struct {
	// TUN is the device name (at most 15 bytes).
	TUN string
	// Pool is the UE address pool routed into the device (invalid = none).
	Pool netip.Prefix
	// MTU of the device (0 = leave as is).
	MTU int
}

// Config configures the driver.
type Config struct {
	// N3 is the local GTP-U address, e.g. "10.100.3.2:2152".
	N3 string
	// N6 devices, in the order of the pipeline's network instances.
	N6 []N6
	// Readers is the number of N3 reader goroutines (default 1).
	Readers int
	// Batch is the number of packets per batch (default 32).
	Batch int
}

// Stats counts the driver's I/O.
type Stats struct {
	N3Rx, N3Tx, N6Rx, N6Tx uint64
	TxErrors, RxErrors     uint64
}

// Driver owns the sockets and devices.
type Driver struct {
	cfg   Config
	p     *upfu.Pipeline
	log   *slog.Logger
	conn  *net.UDPConn
	n3    syscall.RawConn
	tuns  []*os.File
	tunRC []syscall.RawConn

	sinkMu sync.Mutex
	sinkW  *writer

	wg        sync.WaitGroup
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	n3rx, n3tx, n6rx, n6tx, txErr, rxErr atomic.Uint64
}

const bufSize = upfu.Headroom + 65536

// Open opens the N3 socket and the N6 devices and configures them (links
// up, MTU, UE pool routes). TUN devices need CAP_NET_ADMIN.
func Open(cfg Config, p *upfu.Pipeline, logger *slog.Logger) (*Driver, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Readers <= 0 {
		cfg.Readers = 1
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	addr, err := net.ResolveUDPAddr("udp4", cfg.N3)
	if err != nil {
		return nil, fmt.Errorf("portable: N3 address %q: %w", cfg.N3, err)
	}
	conn, err := net.ListenUDP("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("portable: N3 listen: %w", err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("portable: N3 raw conn: %w", err)
	}
	// Room for bursts while the reader is busy with a batch: past
	// net.core.rmem_max where the UPF may (CAP_NET_ADMIN), as the
	// simulated gNBs' of the benches (the kernel caps the send buffer at
	// wmem_max). Without either, the system's default still works.
	_ = sockbuf.SetReadBuffer(conn, 4<<20)
	_ = conn.SetWriteBuffer(4 << 20)
	d := &Driver{cfg: cfg, p: p, log: logger, conn: conn, n3: rc}
	for _, n6 := range cfg.N6 {
		f, err := tundev.Open(n6.TUN)
		if errors.Is(err, unix.EBUSY) {
			err = &DeviceInUseError{Device: n6.TUN, Holders: tundev.Holders(n6.TUN)}
		}
		if err != nil {
			d.closeAll()
			return nil, fmt.Errorf("portable: N6 %s: %w", n6.TUN, err)
		}
		d.tuns = append(d.tuns, f)
		trc, err := f.SyscallConn()
		if err != nil {
			d.closeAll()
			return nil, fmt.Errorf("portable: N6 %s raw conn: %w", n6.TUN, err)
		}
		d.tunRC = append(d.tunRC, trc)
		if err := setupLink(n6.TUN, n6.MTU, n6.Pool); err != nil {
			d.closeAll()
			return nil, fmt.Errorf("portable: N6 %s: %w", n6.TUN, err)
		}
	}
	d.sinkW = d.newWriter()
	return d, nil
}

// N3Addr is the bound N3 address.
func (d *Driver) N3Addr() netip.AddrPort { return d.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Start runs the readers until Close.
func (d *Driver) Start(ctx context.Context) {
	for range d.cfg.Readers {
		d.wg.Add(1)
		go d.readN3()
	}
	for i := range d.tuns {
		d.wg.Add(1)
		go d.readN6(i)
	}
	go func() {
		<-ctx.Done()
		d.Close()
	}()
}

// Close stops the readers and closes the socket and devices (the kernel
// removes the TUN devices and their routes). Every call returns once they
// are closed: the end of Start's context closes the driver too, and a
// caller of Close must still be able to bind the addresses again when it
// returns (a UPF restarted in the same process).
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		d.closeErr = d.closeAll()
		d.wg.Wait()
	})
	return d.closeErr
}

func (d *Driver) closeAll() error {
	err := d.conn.Close()
	for _, f := range d.tuns {
		err = errors.Join(err, f.Close())
	}
	return err
}

// Stats returns the I/O counters.
func (d *Driver) Stats() Stats {
	return Stats{N3Rx: d.n3rx.Load(), N3Tx: d.n3tx.Load(), N6Rx: d.n6rx.Load(), N6Tx: d.n6tx.Load(),
		TxErrors: d.txErr.Load(), RxErrors: d.rxErr.Load()}
}

// Send implements upfu.Sink (buffer drains from Install).
func (d *Driver) Send(pkts []upfu.Packet) {
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	d.sinkW.send(pkts)
}

// writer holds one goroutine's preallocated send state.
type writer struct {
	d  *Driver
	n3 *udpBatch
	// The N6 packets of the batch being sent, and the device whose turn
	// it is: writeTUN writes them in one visit to the device's descriptor.
	pend    []upfu.Packet
	port    upfu.Port
	written int
	werr    error
	writeFn func(fd uintptr) bool
}

func (d *Driver) newWriter() *writer {
	w := &writer{d: d, n3: newUDPBatch(d.cfg.Batch)}
	w.writeFn = w.writeTUN
	return w
}

// send writes N3 packets with sendmmsg and N6 packets to their TUN.
func (w *writer) send(pkts []upfu.Packet) {
	d := w.d
	var toTUN uint64 // bit i: some packet goes to device i (first 64)
	for i := range pkts {
		pk := &pkts[i]
		if pk.Port != upfu.PortN3 {
			if int(pk.Port) >= len(d.tuns) {
				d.txErr.Add(1)
				continue
			}
			toTUN |= 1 << (uint(pk.Port) & 63)
			continue
		}
		if w.n3.full() {
			w.flush()
		}
		if !w.n3.queue(pk.Data(), pk.Peer) {
			d.txErr.Add(1) // not an IPv4 peer: N3 is IPv4 here
		}
	}
	w.flush()
	if toTUN == 0 {
		return
	}
	// A TUN write injects one packet: no batching syscall exists for it,
	// but one descriptor visit per batch saves the per-write locking.
	w.pend = pkts
	for port := range d.tuns {
		if port < 64 && toTUN&(1<<port) == 0 {
			continue
		}
		w.port, w.written, w.werr = upfu.Port(port), 0, nil
		if err := d.tunRC[port].Write(w.writeFn); err != nil && w.werr == nil {
			w.werr = err
		}
		d.n6tx.Add(uint64(w.written))
		if w.werr != nil && !d.closed.Load() {
			d.log.Debug("portable: N6 send", "tun", d.cfg.N6[port].TUN, "err", w.werr)
		}
	}
	w.pend = nil
}

// writeTUN writes the pending packets for w.port to descriptor fd.
func (w *writer) writeTUN(fd uintptr) bool {
	for i := range w.pend {
		pk := &w.pend[i]
		if pk.Port != w.port {
			continue
		}
		for {
			_, err := unix.Write(int(fd), pk.Data())
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				// A TUN device never makes a writer wait; EAGAIN or
				// any other error drops the packet.
				w.werr = err
				w.d.txErr.Add(1)
			} else {
				w.written++
			}
			break
		}
	}
	return true
}

func (w *writer) flush() {
	d := w.d
	sent, failed, err := w.n3.flush(d.n3)
	d.n3tx.Add(uint64(sent))
	if failed > 0 {
		d.txErr.Add(uint64(failed))
		if !d.closed.Load() {
			d.log.Debug("portable: N3 send", "err", err)
		}
	}
}

func (d *Driver) readN3() {
	defer d.wg.Done()
	batch := d.cfg.Batch
	w := d.p.NewWorker()
	w.SendsLater()
	wr := d.newWriter()
	rb := newUDPBatch(batch)
	in := make([]upfu.Packet, batch)
	out := make([]upfu.Packet, 0, batch)
	for i := range in {
		in[i].Buf = make([]byte, bufSize)
		rb.setRecvBuffer(i, in[i].Buf[upfu.Headroom:])
	}
	for {
		n, err := rb.recv(d.n3)
		if err != nil {
			if d.closed.Load() {
				return
			}
			d.rxErr.Add(1)
			d.log.Warn("portable: N3 receive", "err", err)
			continue
		}
		d.n3rx.Add(uint64(n))
		k := 0
		for i := range n {
			size, from, ok := rb.received(i)
			if !ok {
				d.rxErr.Add(1)
				continue
			}
			if k != i {
				// Keep the batch dense: swap buffers with the dropped slot.
				in[k].Buf, in[i].Buf = in[i].Buf, in[k].Buf
				rb.setRecvBuffer(k, in[k].Buf[upfu.Headroom:])
				rb.setRecvBuffer(i, in[i].Buf[upfu.Headroom:])
			}
			in[k].Off, in[k].Len, in[k].Peer = upfu.Headroom, size, from
			k++
		}
		out = w.Uplink(in[:k], out[:0])
		wr.send(out)
		w.Sent() // the batch is on the wire: End Markers may follow it
	}
}

func (d *Driver) readN6(idx int) {
	defer d.wg.Done()
	f := d.tuns[idx]
	rc, err := f.SyscallConn()
	if err != nil {
		d.log.Error("portable: N6 raw conn", "tun", d.cfg.N6[idx].TUN, "err", err)
		return
	}
	batch := d.cfg.Batch
	w := d.p.NewWorker()
	w.SendsLater()
	wr := d.newWriter()
	in := make([]upfu.Packet, batch)
	out := make([]upfu.Packet, 0, batch)
	for i := range in {
		in[i].Buf = make([]byte, bufSize)
	}
	var n int
	var rerr error
	// Drain the device until it would block, up to a batch, then wait in
	// the runtime poller: one wakeup per batch, not per packet.
	read := func(fd uintptr) bool {
		for n < batch {
			k, err := unix.Read(int(fd), in[n].Buf[upfu.Headroom:])
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				break
			}
			if err != nil {
				rerr = err
				return true
			}
			in[n].Off, in[n].Len = upfu.Headroom, k
			n++
		}
		return n > 0
	}
	for {
		n, rerr = 0, nil
		if err := rc.Read(read); err != nil {
			if !d.closed.Load() {
				d.log.Error("portable: N6 receive", "tun", d.cfg.N6[idx].TUN, "err", err)
			}
			return
		}
		if rerr != nil && n == 0 {
			if d.closed.Load() {
				return
			}
			d.rxErr.Add(1)
			continue
		}
		d.n6rx.Add(uint64(n))
		out = w.Downlink(in[:n], out[:0])
		wr.send(out)
		w.Sent()
	}
}
