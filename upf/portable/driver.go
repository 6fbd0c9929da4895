// Package portable is the UPF's portable data-path driver: N3 over one UDP
// socket with batched I/O (recvmmsg/sendmmsg through ipv4.PacketConn) and
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

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

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
	cfg  Config
	p    *upfu.Pipeline
	log  *slog.Logger
	conn *net.UDPConn
	pc   *ipv4.PacketConn
	tuns []*os.File

	sinkMu sync.Mutex
	sinkW  *writer

	wg     sync.WaitGroup
	closed atomic.Bool

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
	d := &Driver{cfg: cfg, p: p, log: logger, conn: conn, pc: ipv4.NewPacketConn(conn)}
	for _, n6 := range cfg.N6 {
		f, err := tundev.Open(n6.TUN)
		if err != nil {
			d.closeAll()
			return nil, fmt.Errorf("portable: N6 %s: %w", n6.TUN, err)
		}
		d.tuns = append(d.tuns, f)
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
// removes the TUN devices and their routes).
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	err := d.closeAll()
	d.wg.Wait()
	return err
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
	d     *Driver
	msgs  []ipv4.Message
	addrs []net.UDPAddr
	ips   [][4]byte
}

func (d *Driver) newWriter() *writer {
	w := &writer{d: d, msgs: make([]ipv4.Message, d.cfg.Batch), addrs: make([]net.UDPAddr, d.cfg.Batch), ips: make([][4]byte, d.cfg.Batch)}
	for i := range w.msgs {
		w.msgs[i].Buffers = make([][]byte, 1)
		w.addrs[i].IP = w.ips[i][:]
		w.msgs[i].Addr = &w.addrs[i]
	}
	return w
}

// send writes N3 packets with sendmmsg and N6 packets to their TUN.
func (w *writer) send(pkts []upfu.Packet) {
	d := w.d
	n := 0
	for i := range pkts {
		pk := &pkts[i]
		if pk.Port != upfu.PortN3 {
			if int(pk.Port) >= len(d.tuns) {
				d.txErr.Add(1)
				continue
			}
			if _, err := d.tuns[pk.Port].Write(pk.Data()); err != nil {
				d.txErr.Add(1)
				continue
			}
			d.n6tx.Add(1)
			continue
		}
		if !pk.Peer.Addr().Is4() {
			d.txErr.Add(1)
			continue
		}
		w.ips[n] = pk.Peer.Addr().As4()
		w.addrs[n].Port = int(pk.Peer.Port())
		w.msgs[n].Buffers[0] = pk.Data()
		n++
		if n == len(w.msgs) {
			w.flush(n)
			n = 0
		}
	}
	w.flush(n)
}

func (w *writer) flush(n int) {
	d := w.d
	for sent := 0; sent < n; {
		k, err := d.pc.WriteBatch(w.msgs[sent:n], 0)
		if err != nil {
			if !d.closed.Load() {
				d.log.Debug("portable: N3 send", "err", err)
			}
			d.txErr.Add(uint64(n - sent))
			break
		}
		sent += k
		d.n3tx.Add(uint64(k))
	}
	for i := range n {
		w.msgs[i].Buffers[0] = nil
	}
}

func (d *Driver) readN3() {
	defer d.wg.Done()
	batch := d.cfg.Batch
	w := d.p.NewWorker()
	wr := d.newWriter()
	msgs := make([]ipv4.Message, batch)
	in := make([]upfu.Packet, batch)
	out := make([]upfu.Packet, 0, batch)
	for i := range msgs {
		buf := make([]byte, bufSize)
		in[i].Buf = buf
		msgs[i].Buffers = [][]byte{buf[upfu.Headroom:]}
	}
	for {
		n, err := d.pc.ReadBatch(msgs, 0)
		if err != nil {
			if d.closed.Load() {
				return
			}
			d.rxErr.Add(1)
			d.log.Warn("portable: N3 receive", "err", err)
			continue
		}
		d.n3rx.Add(uint64(n))
		for i := range n {
			in[i].Off, in[i].Len = upfu.Headroom, msgs[i].N
			if ua, ok := msgs[i].Addr.(*net.UDPAddr); ok {
				in[i].Peer = ua.AddrPort()
			} else {
				in[i].Peer = netip.AddrPort{}
			}
		}
		out = w.Uplink(in[:n], out[:0])
		wr.send(out)
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
	}
}
