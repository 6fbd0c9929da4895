//go:build linux

package afxdp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	xsk "github.com/tern5g/tern/internal/afxdp"
	"github.com/tern5g/tern/upf/nexthop"
	"github.com/tern5g/tern/upf/upfu"
)

const (
	frameSize = 2048
	ringSize  = 2048
	// umemHeadroom is what the UMEM leaves before received data, on top
	// of the kernel's XDP_PACKET_HEADROOM in copy mode: downlink grows a
	// frame by upfu.Headroom + IPv4 + UDP in front of the IP packet's old
	// Ethernet header.
	umemHeadroom = 64
	// copyOff is where a copied output's data starts in its frame.
	copyOff = 256
)

// Ethernet, IPv4 and UDP header sizes.
const (
	ethLen  = 14
	ipv4Len = 20
	udpLen  = 8
	n3Hdr   = ethLen + ipv4Len + udpLen
)

// Driver runs the pipeline on AF_XDP sockets.
type Driver struct {
	cfg    Config
	p      *upfu.Pipeline
	log    *slog.Logger
	nsh    netns.NsHandle
	nl     *netlink.Handle
	ifaces []*iface // [0] N3, [1+i] N6[i]
	wks    []*worker
	neigh  *nexthop.Cache
	fb     fallback
	stopFD int           // eventfd: Close wakes the workers' poll
	stop   chan struct{} // closed by Close: stops the resolver

	statsMu   sync.Mutex // Stats against release
	wg        sync.WaitGroup
	started   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	sinkSent, sinkErrors, noFrame atomic.Uint64
	kernelRx, kernelTx            atomic.Uint64
}

// iface is one interface with its XDP program.
type iface struct {
	name  string
	index int
	mac   [6]byte
	objs  xskObjects
	xdp   link.Link
	n3    bool
	port  upfu.Port // N6 port; PortN3 for N3

	rx, tx, fallback, txDrops, rxInvalid atomic.Uint64
}

// Open loads and attaches the XDP programs and opens the sockets, from
// the network namespace of the calling thread (lock it with
// runtime.LockOSThread when that is not the process's). It fails, with
// every resource released, when AF_XDP or the XDP attach is refused; the
// caller then falls back to another driver.
func Open(cfg Config, p *upfu.Pipeline, logger *slog.Logger) (_ *Driver, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Queues <= 0 {
		cfg.Queues = 1
	}
	if cfg.Frames <= 0 {
		cfg.Frames = 4096
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if !cfg.N3Addr.Is4() {
		return nil, fmt.Errorf("afxdp: N3 address %v is not IPv4", cfg.N3Addr)
	}
	if cfg.Queues > 64 {
		return nil, fmt.Errorf("afxdp: %d queues: at most 64", cfg.Queues)
	}
	d := &Driver{cfg: cfg, p: p, log: logger, stopFD: -1, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	if d.nsh, err = netns.Get(); err != nil {
		return nil, fmt.Errorf("afxdp: network namespace: %w", err)
	}
	if d.nl, err = netlink.NewHandleAt(d.nsh); err != nil {
		return nil, fmt.Errorf("afxdp: netlink: %w", err)
	}
	if d.stopFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("afxdp: eventfd: %w", err)
	}
	if err := d.addIface(cfg.N3Iface, true, upfu.PortN3, cfg.N3Addr, nil); err != nil {
		return nil, err
	}
	for i, n6 := range cfg.N6 {
		if !n6.Pool.Addr().Is4() {
			return nil, fmt.Errorf("afxdp: N6 %s: pool %v is not IPv4", n6.Iface, n6.Pool)
		}
		if err := d.addIface(n6.Iface, false, upfu.Port(i), netip.Addr{}, []netip.Prefix{n6.Pool}); err != nil {
			return nil, err
		}
	}
	if d.fb, err = openFallback(cfg.N3Addr); err != nil {
		return nil, err
	}
	d.neigh = nexthop.New(d.nl, logger, nil)
	for _, n6 := range cfg.N6 {
		if n6.Gateway.IsValid() {
			d.neigh.Want(n6.Gateway)
		}
	}
	for q := range cfg.Queues {
		wk, err := d.newWorker(q)
		if err != nil {
			return nil, err
		}
		d.wks = append(d.wks, wk)
	}
	// The programs were attached before the sockets existed: until a
	// socket is in its XSKMAP slot, the program passes the frame to the
	// kernel (bpf_redirect_map's XDP_PASS fallback).
	return d, nil
}

// addIface loads a program instance for one interface and attaches it.
func (d *Driver) addIface(name string, n3 bool, port upfu.Port, addr netip.Addr, pools []netip.Prefix) error {
	l, err := d.nl.LinkByName(name)
	if err != nil {
		return fmt.Errorf("afxdp: interface %q: %w", name, err)
	}
	ifc := &iface{name: name, index: l.Attrs().Index, n3: n3, port: port}
	copy(ifc.mac[:], l.Attrs().HardwareAddr)
	d.ifaces = append(d.ifaces, ifc)
	if err := loadXskObjects(&ifc.objs, nil); err != nil {
		return fmt.Errorf("afxdp: %s: load XDP program: %w", name, err)
	}
	c := xskConfig{Role: 2}
	if n3 {
		c.Role = 1
		a := addr.As4()
		c.N3Addr = uint32(a[0]) | uint32(a[1])<<8 | uint32(a[2])<<16 | uint32(a[3])<<24 // network order in memory
	}
	if err := ifc.objs.Config.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("afxdp: %s: configure XDP program: %w", name, err)
	}
	for _, p := range pools {
		a := p.Masked().Addr().As4()
		k := xskLpmV4{Prefixlen: uint32(p.Bits()), Addr: uint32(a[0]) | uint32(a[1])<<8 | uint32(a[2])<<16 | uint32(a[3])<<24}
		if err := ifc.objs.Pools.Put(&k, uint32(1)); err != nil {
			return fmt.Errorf("afxdp: %s: pool %v: %w", name, p, err)
		}
	}
	for b := range uint32(256) {
		if err := ifc.objs.Indir.Put(b, b%uint32(d.cfg.Queues)); err != nil {
			return fmt.Errorf("afxdp: %s: indirection table: %w", name, err)
		}
	}
	ifc.xdp, err = link.AttachXDP(link.XDPOptions{Program: ifc.objs.XskRedirect, Interface: ifc.index, Flags: link.XDPDriverMode})
	if err != nil {
		// Generic XDP works with every device (copy mode only).
		var gerr error
		ifc.xdp, gerr = link.AttachXDP(link.XDPOptions{Program: ifc.objs.XskRedirect, Interface: ifc.index, Flags: link.XDPGenericMode})
		if gerr != nil {
			return fmt.Errorf("afxdp: %s: attach XDP program: %w", name, errors.Join(err, gerr))
		}
		d.log.Warn("afxdp: native XDP refused, using generic XDP", "iface", name, "err", err)
	}
	return nil
}

// Start runs the workers until Close or the end of ctx.
func (d *Driver) Start(ctx context.Context) {
	if d.closed.Load() || !d.started.CompareAndSwap(false, true) {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.neigh.Run(d.stop)
	}()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.readKernelN3()
	}()
	for _, wk := range d.wks {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			wk.run()
		}()
	}
	go func() {
		select {
		case <-ctx.Done():
			d.Close()
		case <-d.stop:
		}
	}()
}

// Close stops the workers and releases the sockets, UMEMs and programs.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.stop)
		if d.stopFD >= 0 {
			var one [8]byte
			one[0] = 1
			unix.Write(d.stopFD, one[:])
		}
		d.wg.Wait()
		d.closeErr = d.release()
	})
	return d.closeErr
}

func (d *Driver) release() error {
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	var err error
	for _, ifc := range d.ifaces {
		// The program first: no more redirects to sockets being closed.
		if ifc.xdp != nil {
			err = errors.Join(err, ifc.xdp.Close())
		}
	}
	for _, wk := range d.wks {
		err = errors.Join(err, wk.close())
	}
	for _, ifc := range d.ifaces {
		err = errors.Join(err, ifc.objs.Close())
	}
	d.ifaces, d.wks = nil, nil
	err = errors.Join(err, d.fb.close())
	if d.nl != nil {
		d.nl.Close()
		d.nl = nil
	}
	if d.nsh.IsOpen() {
		err = errors.Join(err, d.nsh.Close())
	}
	if d.stopFD >= 0 {
		err = errors.Join(err, unix.Close(d.stopFD))
		d.stopFD = -1
	}
	return err
}

// Stats returns the counters.
func (d *Driver) Stats() Stats {
	st := Stats{NoFrame: d.noFrame.Load(), SinkSent: d.sinkSent.Load(), SinkErrors: d.sinkErrors.Load(),
		KernelRx: d.kernelRx.Load(), KernelTx: d.kernelTx.Load()}
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	for i, ifc := range d.ifaces {
		is := IfaceStats{Name: ifc.name, Rx: ifc.rx.Load(), Tx: ifc.tx.Load(), Fallback: ifc.fallback.Load(),
			TxDrops: ifc.txDrops.Load(), RxInvalid: ifc.rxInvalid.Load()}
		for _, wk := range d.wks {
			if ks, err := wk.socks[i].Stats(); err == nil {
				is.RxDropped += ks.Rx_dropped
				is.RxRingFull += ks.Rx_ring_full
				is.FillRingEmpty += ks.Rx_fill_ring_empty_descs
				is.TxInvalid += ks.Tx_invalid_descs
			}
		}
		is.Queues = make([]uint64, d.cfg.Queues)
		for q := range d.cfg.Queues {
			is.Queues[q] = percpuSum(ifc.objs.Qstats, uint32(q))
			is.NoSocket += percpuSum(ifc.objs.Qstats, uint32(64+q))
		}
		is.Buckets = make([]uint64, 256)
		for b := range is.Buckets {
			is.Buckets[b] = percpuSum(ifc.objs.Buckets, uint32(b))
		}
		st.Ifaces = append(st.Ifaces, is)
	}
	return st
}

func percpuSum(m *ebpf.Map, key uint32) uint64 {
	var vals []uint64
	if err := m.Lookup(key, &vals); err != nil {
		return 0
	}
	var s uint64
	for _, v := range vals {
		s += v
	}
	return s
}

// Send implements upfu.Sink: the pipeline's packets from outside a
// worker's batch go through the kernel sockets.
func (d *Driver) Send(pkts []upfu.Packet) {
	for i := range pkts {
		if d.fb.send(&pkts[i]) {
			d.sinkSent.Add(1)
		} else {
			d.sinkErrors.Add(1)
		}
	}
}

// N3Addr is the N3 GTP-U address.
func (d *Driver) N3Addr() netip.AddrPort { return netip.AddrPortFrom(d.cfg.N3Addr, 2152) }

// newWorker opens queue q's sockets on a UMEM of its own.
func (d *Driver) newWorker(q int) (*worker, error) {
	u, err := xsk.NewUMEM(d.cfg.Frames, frameSize, umemHeadroom)
	if err != nil {
		return nil, err
	}
	wk := newWorker(d, q, u)
	for _, ifc := range d.ifaces {
		s, err := xsk.Open(u, ifc.index, q, xsk.Options{RingSize: ringSize, ZeroCopy: d.cfg.ZeroCopy})
		if err != nil {
			wk.close()
			return nil, fmt.Errorf("afxdp: %s queue %d: %w", ifc.name, q, err)
		}
		wk.socks = append(wk.socks, s)
		// Frames to receive into before the socket goes in the map:
		// the program redirects to it from then on.
		wk.refill()
		if err := ifc.objs.Xsks.Put(uint32(q), uint32(s.FD())); err != nil {
			wk.close()
			return nil, fmt.Errorf("afxdp: %s queue %d: XSKMAP: %w", ifc.name, q, err)
		}
	}
	return wk, nil
}
