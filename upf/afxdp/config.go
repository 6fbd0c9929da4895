package afxdp

import "net/netip"

// N6 is one N6 interface.
type N6 struct {
	// NetworkInstance is the pipeline's network instance the interface
	// serves (the order of Config.N6 must be the pipeline's order).
	NetworkInstance string
	// Iface is the device name.
	Iface string
	// Gateway is the next hop of uplink packets (its MAC is resolved from
	// the kernel's neighbour table).
	Gateway netip.Addr
	// Pool is the UE address pool whose downlink the interface steers to
	// the driver.
	Pool netip.Prefix
}

// Config configures the driver.
type Config struct {
	// N3Iface is the N3 device and N3Addr the UPF's GTP-U address on it.
	N3Iface string
	N3Addr  netip.Addr
	// N6 interfaces, in the order of the pipeline's network instances.
	N6 []N6
	// Queues is the number of queues used on each interface, one worker
	// each (default 1).
	Queues int
	// Frames is the number of UMEM frames per worker (default 4096).
	Frames int
	// ZeroCopy asks for zero-copy sockets, falling back to copy mode.
	ZeroCopy bool
	// Batch is the number of frames per RX batch (default 64).
	Batch int
}

// IfaceStats counts one interface's traffic.
type IfaceStats struct {
	Name string
	// Rx: frames the workers received; Tx: frames queued for TX;
	// Fallback: outputs sent through the kernel (no neighbour yet);
	// TxDrops: outputs dropped on a full TX ring; RxInvalid: received
	// frames that were not well-formed.
	Rx, Tx, Fallback, TxDrops, RxInvalid uint64
	// Kernel counters of the interface's sockets (all queues).
	RxDropped, RxRingFull, FillRingEmpty, TxInvalid uint64
	// Queues counts the frames the XDP program redirected per queue;
	// NoSocket those it passed to the kernel for want of a socket.
	Queues   []uint64
	NoSocket uint64
	// Buckets counts frames per steering-hash bucket (TEID on N3, UE
	// address on N6): a hot bucket is a hot flow.
	Buckets []uint64
}

// Stats are the driver's counters.
type Stats struct {
	Ifaces []IfaceStats // N3 first, then N6 in Config order
	// NoFrame: outputs dropped because no free UMEM frame was left to
	// copy them into.
	NoFrame uint64
	// SinkSent and SinkErrors count the pipeline's own sends (Send) and
	// failed kernel sends.
	SinkSent, SinkErrors uint64
	// KernelRx counts the GTP-U datagrams the kernel delivered to the
	// fallback socket (fragmented ones, reassembled), KernelTx their
	// outputs, which go through the kernel too.
	KernelRx, KernelTx uint64
}
