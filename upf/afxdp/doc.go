// Package afxdp is the UPF's AF_XDP data-path driver: it runs the
// upf/upfu pipeline on frames that an XDP program steers from the N3 and
// N6 interfaces into AF_XDP sockets, and transmits the pipeline's outputs
// through the sockets' TX rings, with no copy and no allocation per packet
// on the fast path.
//
// # Memory and rings
//
// Each worker owns one UMEM (Config.Frames frames of frameSize bytes) and
// one AF_XDP socket per interface on its queue: N3 queue q and every N6
// queue q. The sockets share the worker's UMEM (XDP_SHARED_UMEM), each
// with its own fill and completion ring, so a frame received on N3 can be
// sent on N6 (and the reverse) by handing its address to another TX ring.
// The UMEM headroom leaves room before every received frame to grow the
// headers in place: uplink strips Eth/IPv4/UDP/GTP-U and prepends one
// Ethernet header; downlink prepends GTP-U (upfu.Headroom), UDP, IPv4 and
// Ethernet in front of an IP packet that came with one Ethernet header.
//
// # Frame ownership
//
// Every frame is in exactly one place, and only the worker that owns the
// UMEM moves it, so nothing is locked:
//
//	free list (worker) -> fill ring of one of its sockets -> kernel
//	  -> RX ring -> worker (batch input, upfu.Packet.Buf is the frame)
//	  -> output of the pipeline: headers written in place -> TX ring of the
//	     output's interface -> kernel -> completion ring -> free list
//	  -> or no output (dropped, buffered: the pipeline copies what it
//	     buffers, kernel fallback sent: sendto copies) -> free list
//
// An output that is not in a UMEM frame (an Echo Response or Error
// Indication the pipeline builds in its scratch space) or a second output
// from the same frame is copied into a frame from the free list. A worker
// waits for TX completions before it reuses a frame, and Stats counts the
// frames a batch could not get (no free frame, TX ring full).
//
// # Threading
//
// One worker goroutine per queue, locked to its OS thread, each with its
// own upfu.Worker: it reaps completions, refills the fill rings, takes a
// batch from each socket's RX ring, runs Uplink (N3) or Downlink (N6) on
// it, queues the outputs on the TX rings, kicks the kernel (copy mode
// sends only from sendto) and calls upfu.Worker.Sent once the batch is on
// the wire. With nothing to do it sleeps in poll(2) on its sockets and an
// eventfd that Close signals.
//
// The pipeline's own sends (drained buffers, End Markers, Echo Requests:
// Send, the upfu.Sink) come from other goroutines; they go through kernel
// sockets (a UDP socket bound to the N3 address, a raw IP socket for N6)
// so that no UMEM is shared between threads. The same sockets carry the
// outputs whose next hop has no resolved MAC: the kernel resolves it, and
// the neighbour cache, which a resolver goroutine refreshes from the
// kernel's neighbour table, sends the following packets by AF_XDP.
//
// # Steering
//
// An AF_XDP socket receives only frames of the (device, queue) it is bound
// to (the kernel drops a redirect to another queue's socket), so the XDP
// program cannot move a packet to another worker: the NIC's RSS decides,
// and GTP-U from one gNB has one outer 5-tuple. The program hashes the
// steering key (TEID uplink, UE address downlink) into 256 buckets and
// counts per bucket and per queue (Stats.Ifaces[i].Buckets, .Queues) so
// imbalance shows; its bucket -> queue indirection table (map `indir`) is
// there for the steering stage that can act on it (NIC flow rules on the
// TEID, or a software hand-off between workers) and is not applied yet.
//
// # veth
//
// On veth (kernel 6.18): the receiving end needs an XDP program for
// native mode (this driver attaches one), with at least as many RX queues
// as its peer has TX queues; the peer needs nothing for frames the driver
// transmits, since copy-mode AF_XDP TX goes through the peer's normal
// skb receive path (an XDP_REDIRECT into a veth through ndo_xdp_xmit would
// need an XDP program or GRO on the peer, but the driver does not use it).
// Zero-copy is not supported by veth; Config.ZeroCopy falls back to copy.
//
// # Tests
//
// The tests need root (network namespaces, veth, XDP, AF_XDP) and skip
// without it or when the kernel refuses AF_XDP or the XDP attach:
//
//	go test ./internal/afxdp ./upf/afxdp
//
// They build ran -- veth -- core -- veth -- dn namespaces with ip(8), run
// the driver in core and check the bytes of GTP-U uplink and downlink
// end to end (TestForwarding: static neighbours, ARP-resolved ones, two
// queues), the kernel paths (TestSink, TestEcho), open/close cycles
// (TestCycles) and report a rough rate (TestRate, skipped with -short).
package afxdp
