// Package xdp is the UPF's XDP fast path: a pair of XDP programs
// (bpf/upf.c) that execute the common case of the user plane in the
// kernel's receive path, and the loader that compiles the sessions UPF-C
// publishes (upf/rules) into the programs' maps.
//
// # Fast path and host path
//
// The host path is the rest of tern's UPF: the kernel stack, the GTP-U
// socket on N3 (UDP 2152) and a TUN device per DNN, and the user-space
// pipeline (upf/upfu) behind them. It handles everything, completely. The
// fast path handles a subset, the packets that make up nearly all of the
// traffic, and hands every other packet to the host path with XDP_PASS:
//
//   - upf_n3, on the N3 interface: Ethernet / IPv4 (no options, not a
//     fragment) / UDP to port 2152 of the N3 address / GTP-U v1 G-PDU
//     (TS 29.281 §5.1, extension headers walked per §5.2.1, the PDU
//     Session Container of TS 38.415 §5.5.2.2 read for the QFI), for a
//     TEID of an offloaded session, whose inner packet is plain IPv4 and
//     whose matching PDR's FAR forwards to an N6 port without outer
//     header creation: the outer headers go, the inner packet's TTL drops
//     by one as the kernel's forwarding on the host path would, and it
//     leaves on the N6 port: to the port's gateway if one is configured
//     (but for the UE pools, the interfaces' subnets, loopback and
//     multicast, which go where the kernel routes them), otherwise to the
//     next hop bpf_fib_lookup finds, provided the kernel routes the inner
//     destination out of that port: a local address or another UE pool
//     behind a TUN device stays with the host path.
//   - upf_n6, on each N6 interface: Ethernet / IPv4 for the UE address of
//     an offloaded session, whose matching PDR's FAR forwards with outer
//     header creation: it gets the outer IPv4 / UDP / GTP-U header with a
//     DL PDU Session Container (TS 38.415 §5.5.2.1) that
//     gtpu.PutGPDUHeader writes, byte for byte, and leaves on N3 towards
//     the gNB.
//
// Both apply the PDR's QERs (gate and MBR, TS 29.244 §5.2.2, §5.4.2) and
// count its URRs (§5.2.2.3) as upfu does. Everything else passes to the
// host path: GTP-U signalling (Echo, Error Indication, End Marker), unknown
// TEIDs and UE addresses (upfu answers with Error Indications), FARs that
// buffer (paging, handover: upfu holds the buffer), N9 and indirect
// forwarding, IPv6, fragments, IP options, packets too big for the MTU,
// inner packets whose TTL runs out (the kernel sends ICMP), and any packet
// whose next hop is not resolved yet (the kernel resolves ARP, and later
// packets take the fast path).
//
// Next hops come from the kernel's routing and neighbour tables: for the
// ports' gateways and the gNBs, from package nexthop's cache, which keeps
// in step with the tables (every second, and a few milliseconds after a
// miss), because a bpf_fib_lookup per packet cost more than the rest of
// the program together. The cache is published twice: into slots that a
// port or a PDR reaches by index (hopSlots; a hash lookup per packet cost
// a sixth of the program), and into the nexthops map for what has no
// slot. Other destinations, and a gateway or gNB not resolved yet, take
// bpf_fib_lookup, as the host path's packets would be routed. The
// interfaces need IPv4 forwarding on, and a next hop whose MAC the kernel
// has not resolved yet takes the host path until it has.
//
// The fast path bypasses netfilter: a UPF whose host path NATs or filters
// UE traffic with iptables/nftables between the TUN devices and N6 must
// not load it (the programs cannot see those rules).
//
// On veth (tests, containers), a frame redirected into a veth is dropped
// unless its peer has an XDP program (Programs.PassAll will do) or GRO
// enabled; see TestEndToEnd.
//
// # Fail closed
//
// The programs never forward a packet the host path would treat
// differently: when in doubt, XDP_PASS. The only drops are counted and
// are ones the host path would make too: a FAR that drops, a closed gate,
// an MBR exceeded, a malformed G-PDU. On the Go side, Install offloads a
// session only if the programs can evaluate every one of its rules
// exactly (the PDI fields of TS 29.244 §5.2.1 that the programs know,
// with at most a few rules and PDRs per TEID); otherwise the session is
// not in the maps at all and all of its packets take the host path. A map
// that is full has the same effect: Install returns false, and nothing is
// lost.
//
// # The session index
//
// A packet's session is found by its key (TEID uplink, UE address
// downlink) in an index, an array in which the key names the place
// (key & mask: UE addresses are handed out in sequence, and UPF-C hands
// out TEIDs at free places, upfc.Config.TEIDPlaces, so keys rarely
// collide): one array access and one cache miss, where
// a hash map costs two or three misses a packet with 100,000 sessions,
// which halved the rate there. An index entry holds the common case, one
// rule on no more than the UE address and the QFI leading to one PDR, in
// one cache line; a session with more (SDF filters, several PDRs), or a
// key whose place another key holds, is in a hash map behind the index.
// The index is written through a mapping of the array with an RCU-like
// discipline, so that a program never reads a half-written entry: a
// change goes to the hash map first, and the entry comes back a grace
// period later (index.go: sessionIndex).
//
// # Usage and rates
//
// URR volumes are counted per CPU in the kernel (usage.go) and folded into the
// session's rules.Counters, which the host path counts into as well, by
// Sync (call it periodically) and on Remove; Sync returns the usage
// reports whose thresholds the folded volume crossed. An MBR has one
// token bucket in the kernel per rules.TokenBucket, separate from the
// host path's: a flow split between the paths may get up to its rate on
// each (in practice the host path sees a session's packets only while its
// next hop is resolved).
//
// # Ordering with the host path
//
// The fast path must not send a packet on a tunnel after an End Marker
// for it, nor overtake packets the host path buffered. Hence, for every
// snapshot of a session, the owner calls Prepare(s) before upfu's Install
// (it takes the session off the fast path, and waits for programs that
// still run with its old rules, if s sends End Markers or stops
// forwarding to a tunnel), and Install(s) after it (by then upfu has
// drained the buffer); and Remove before upfu's Remove.
//
// # Steering
//
// GTP-U's outer 5-tuple is the same for every UE behind one gNB (gNB
// address, N3 address, UDP 2152 both ways), so a NIC's RSS hashes all of
// a gNB's uplink to one receive queue and one CPU, which then runs the
// fast path for all of it. With Config.CPUs = N > 1, the programs
// attached to the interfaces only steer (bpf/upf.c, upf_n3_steer and
// upf_n6_steer): they hash the session's key (the TEID of a G-PDU, the
// UE address of a downlink packet) to one of 256 buckets, count
// the packet for the bucket, and hand the frame through a cpumap to the
// bucket's CPU, where upf_cpu runs the fast path as upf_n3/upf_n6 would
// have. A session's packets in one direction therefore stay on one CPU,
// in order. Packets that are not of an offloaded session are not steered:
// they take upf_n3/upf_n6's path on the receiving CPU, and so does a
// packet whose bucket is on that CPU already.
//
// Rebalance moves buckets from the busiest CPU to the least busy one when
// the busiest carried more than 25 % over the average since the last
// call; Load runs it every second. A move reorders packets only of the
// flows in the moved bucket, and only those in flight at the moment of
// the move: frames still queued for the old CPU may leave after the first
// frames the new CPU processes.
//
// A cpumap queue that overflows drops frames (the kernel counts them in
// the xdp:xdp_cpumap_enqueue tracepoint), as a NIC's receive ring would:
// the queues (2048 frames each) absorb bursts, not sustained overload of
// a CPU. A frame that upf_cpu passes to the host path reaches the stack
// as an skb built from the frame, without the receive offloads' state (a
// checksum the NIC verified is verified again, for one): this is the case
// only for packets of offloaded sessions that the fast path declines.
//
// Frames queued for a CPU see the maps as they are when upf_cpu runs, not
// as they were when steered, like frames waiting in a receive ring: the
// ordering with the host path (above) holds as without steering.
package xdp

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/upf/nexthop"
	"github.com/tern5g/tern/upf/rules"
)

// Sizes shared with bpf/upf.c.
const (
	maxRules = 8  // classifier rules per TEID or UE address
	maxPDRs  = 4  // PDRs those rules lead to
	maxQERs  = 2  // per PDR
	maxURRs  = 2  // per PDR
	maxPorts = 16 // N6 ports
	encapLen = 20 + 8 + 16
	noMatch  = 0xff
)

// Actions and rule flags of bpf/upf.c.
const (
	actPass = 0
	actDrop = 1
	actN6   = 2
	actGTP  = 3

	rfQFI   = 1
	rfProto = 2
)

// DefaultMaxSessions is the default capacity of the TEID and UE address
// maps: 100,000 sessions and headroom.
const DefaultMaxSessions = 131072

// Port is an N6 interface.
type Port struct {
	// NetworkInstance is the network instance (DNN) a FAR names to send
	// to this port; "" with a single port means it, as in upfu.
	NetworkInstance string
	Iface           string
	// Gateway is the next hop of decapsulated packets; invalid: the
	// inner destination is routed.
	Gateway netip.Addr
}

// Config configures the fast path.
type Config struct {
	N3Iface string
	N3Addr  netip.Addr // IPv4
	N6      []Port
	Logger  *slog.Logger
	// Mode is "native" (the driver's XDP, the default) or "generic"
	// (XDP on the skb path: slower, works on any device).
	Mode string
	// MaxSessions bounds the TEIDs and the UE addresses offloaded
	// (default DefaultMaxSessions): at least as many are, more where the
	// session index (its places: MaxSessions rounded up to a power of
	// two, 64 bytes each) holds some of them; QER and URR slots get
	// twice as many.
	MaxSessions int
	// FlowCacheSize is the number of entries of the flow cache (default
	// 65536).
	FlowCacheSize int
	// CPUs is the number of CPUs the programs steer sessions over (see
	// Steering): the first CPUs online, at most as many as are online. 0
	// or 1: no steering, every packet is processed on the CPU that
	// received it.
	CPUs int
	// SteerCPUs, if set, are the CPUs to steer sessions over instead of
	// the first CPUs; one CPU is enough: the CPUs that receive then only
	// steer, and the UPF's processing has CPUs of its own.
	SteerCPUs []int
	// Pools are the UE address pools. An uplink packet to one of them
	// (UE to UE), to a subnet of the UPF's interfaces, or to one the kernel
	// never forwards (loopback, multicast...) goes where the kernel routes
	// it, never to a port's gateway. Any other destination of a port with
	// a gateway goes to the gateway: its data network is behind it.
	Pools []netip.Prefix
}

// FastPath is the loaded XDP fast path.
type FastPath struct {
	cfg   Config
	log   *slog.Logger
	objs  upfObjects
	links []link.Link
	n3    *net.Interface
	n6    []*net.Interface
	ports map[string]int // network instance -> port index
	ncpu  int

	mu       sync.Mutex
	sessions map[uint64]*installed
	teidOwn  map[uint32]uint64
	ueOwn    map[netip.Addr]uint64
	buckets  slotTable[*rules.TokenBucket]
	urrs     slotTable[*rules.Counters]
	urrState map[uint32]*urrState // by slot

	closed bool

	// The session indexes (index.go), and the goroutine that frees
	// their retired places a grace period later.
	teidIndex, ueIndex *sessionIndex
	retireKick         chan struct{}
	retireStop         chan struct{}
	retireDone         chan struct{}

	counters *urrCounters
	gen      uint32
	pending  []Report // threshold crossings found outside Sync

	notOffloaded, mapFull uint64

	steer *steering // nil: no steering

	// The next-hop cache (package nexthop) and its resolver, which
	// copies what it resolves into the nexthops map and the slots
	// (syncHops).
	hops     *nexthop.Cache
	hopsStop chan struct{}
	hopsDone chan struct{}
	hopsSet  map[netip.Addr]nexthop.Hop // what the nexthops map holds (resolver)
	// portHops and peerHops publish the ports' gateways and the gNBs
	// through their slots (resolver).
	portHops, peerHops *hopSlots
	// peerIDs are the gNBs' peer_slot indexes (pdr_act.hop), given once
	// per address and kept; under peersMu, which the resolver takes too.
	peersMu sync.Mutex
	peerIDs map[netip.Addr]uint16
}

// maxPeers is MAX_PEERS of bpf/upf.c: the gNBs with slots of their own.
const maxPeers = 4096

// hopSlots publishes next hops through pairs of array slots (port_hops,
// peer_hops in bpf/upf.c) for owners 0..n-1 (a port, a gNB): owner i's
// are slots 2i and 2i+1. A new hop goes into the slot not in use, the
// owner is pointed at it, and the caller waits for the programs
// (waitPrograms) before the old slot may be written again: no program
// reads a slot while it is written, which an update in place of a hash or
// array value would not promise. Used by the resolver's goroutine only.
type hopSlots struct {
	slots *ebpf.Map
	state map[uint32]slotState
}

type slotState struct {
	slot int // 0 or 1: the owner's slot in use
	hop  nexthop.Hop
}

// nexthopValue is h as the programs read it (struct nexthop), in a slot
// or in the nexthops map.
func nexthopValue(h nexthop.Hop) *upfNexthop {
	return &upfNexthop{Ifindex: uint32(h.Ifindex), Mtu: uint32(h.MTU), Dmac: h.MAC, Smac: h.SrcMAC}
}

func newHopSlots(m *ebpf.Map) *hopSlots {
	return &hopSlots{slots: m, state: map[uint32]slotState{}}
}

// set writes hop h for owner i (ok false: none) if it changed, and
// returns what the owner is to point at (slot + 1; 0: none).
func (hs *hopSlots) set(i uint32, h nexthop.Hop, ok bool) (pub uint32, changed bool, err error) {
	st, had := hs.state[i]
	if ok == had && (!ok || h == st.hop) {
		return 0, false, nil
	}
	if !ok {
		delete(hs.state, i)
		return 0, true, nil
	}
	next := 0
	if had {
		next = 1 - st.slot
	}
	slot := 2*i + uint32(next)
	if err := hs.slots.Update(slot, nexthopValue(h), ebpf.UpdateAny); err != nil {
		return 0, false, err
	}
	hs.state[i] = slotState{slot: next, hop: h}
	return slot + 1, true, nil
}

type installed struct {
	sess    *rules.Session
	teids   []uint32
	ue      netip.Addr // invalid: no downlink entry
	buckets []*rules.TokenBucket
	urrs    []*rules.Counters
}

// urrState is what Sync needs of a URR slot.
type urrState struct {
	c    *rules.Counters
	last upfUsage // the sums over the CPUs already folded
	seid uint64
	urr  *rules.URR
	pdr  uint16
}

// Report is a usage report (rules.ReportUsage) for a session.
type Report struct {
	SEID uint64
	rules.Report
}

// Open loads the programs and their maps (the kernel's verifier checks
// them) and configures them for the interfaces of cfg, which must exist in
// the calling thread's network namespace, without attaching them. Tests
// and benchmarks run the programs with Programs and BPF_PROG_TEST_RUN.
func Open(cfg Config) (*FastPath, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.FlowCacheSize <= 0 {
		cfg.FlowCacheSize = 65536
	}
	if !cfg.N3Addr.Is4() {
		return nil, fmt.Errorf("xdp: N3 address %v is not IPv4", cfg.N3Addr)
	}
	if len(cfg.N6) > maxPorts {
		return nil, fmt.Errorf("xdp: %d N6 ports, at most %d", len(cfg.N6), maxPorts)
	}
	switch cfg.Mode {
	case "", "native", "generic":
	default:
		return nil, fmt.Errorf("xdp: mode %q is neither native nor generic", cfg.Mode)
	}
	f := &FastPath{
		cfg:      cfg,
		log:      cfg.Logger,
		ports:    make(map[string]int),
		sessions: make(map[uint64]*installed),
		teidOwn:  make(map[uint32]uint64),
		ueOwn:    make(map[netip.Addr]uint64),
		urrState: make(map[uint32]*urrState),
	}
	var err error
	if f.ncpu, err = ebpf.PossibleCPU(); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if f.n3, err = net.InterfaceByName(cfg.N3Iface); err != nil {
		return nil, fmt.Errorf("xdp: N3 interface: %w", err)
	}
	for i, p := range cfg.N6 {
		ifc, err := net.InterfaceByName(p.Iface)
		if err != nil {
			return nil, fmt.Errorf("xdp: N6 interface: %w", err)
		}
		if p.Gateway.IsValid() && !p.Gateway.Is4() {
			return nil, fmt.Errorf("xdp: N6 gateway %v is not IPv4", p.Gateway)
		}
		if _, dup := f.ports[p.NetworkInstance]; dup {
			return nil, fmt.Errorf("xdp: network instance %q listed twice", p.NetworkInstance)
		}
		f.ports[p.NetworkInstance] = i
		f.n6 = append(f.n6, ifc)
	}

	spec, err := loadUpf()
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	slots := uint32(2 * cfg.MaxSessions)
	spec.Maps["teids"].MaxEntries = uint32(cfg.MaxSessions)
	spec.Maps["ues"].MaxEntries = uint32(cfg.MaxSessions)
	spec.Maps["buckets"].MaxEntries = slots
	spec.Maps["urrs"].MaxEntries = slots * uint32(f.ncpu)
	if err := spec.Variables["urr_slots"].Set(slots); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	spec.Maps["flows"].MaxEntries = uint32(cfg.FlowCacheSize)
	isize := IndexPlaces(cfg.MaxSessions)
	spec.Maps["teid_index"].MaxEntries = isize
	spec.Maps["ue_index"].MaxEntries = isize
	if err := spec.Variables["index_mask"].Set(isize - 1); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	f.buckets = newSlotTable[*rules.TokenBucket](slots)
	f.urrs = newSlotTable[*rules.Counters](slots)
	if err := f.loadObjects(spec); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("xdp: the kernel refused the programs: %+v", ve)
		}
		return nil, fmt.Errorf("xdp: load: %w", err)
	}
	if f.counters, err = mapURRCounters(f.objs.Urrs, slots, f.ncpu); err != nil {
		f.closeMaps()
		return nil, err
	}
	if f.teidIndex, err = mapSessionIndex("TEID index", f.objs.TeidIndex, f.objs.Teids, isize); err != nil {
		f.closeMaps()
		return nil, err
	}
	if f.ueIndex, err = mapSessionIndex("UE address index", f.objs.UeIndex, f.objs.Ues, isize); err != nil {
		f.closeMaps()
		return nil, err
	}
	if err := f.configure(); err != nil {
		f.closeMaps()
		return nil, err
	}
	f.startClock()
	if f.steer != nil {
		if err := f.configureSteering(); err != nil {
			f.closeMaps()
			return nil, err
		}
	}
	if err := f.startHops(); err != nil {
		f.closeMaps()
		return nil, err
	}
	f.startRetiring()
	return f, nil
}

// startClock arms the programs' clock (the clock map, bpf/upf.c): a BPF
// timer that stores the monotonic time every millisecond, so that QoS
// reads a stored time where it would call the clock on every packet. If
// the kernel does not arm it the programs call the clock themselves:
// slower, the same answers.
func (f *FastPath) startClock() {
	const xdpPass = 2
	// BPF_PROG_TEST_RUN wants an Ethernet header's worth of frame.
	ret, err := f.objs.UpfClockStart.Run(&ebpf.RunOptions{Data: make([]byte, 64)})
	if err == nil && ret != xdpPass {
		err = fmt.Errorf("upf_clock_start returned %d", ret)
	}
	if err != nil {
		f.log.Warn("xdp: the programs' clock is not running; QoS calls the kernel's clock on every packet", "err", err)
	}
}

// startHops starts the next-hop resolver in the calling thread's network
// namespace and asks it for the ports' gateways; Install asks for the
// gNBs.
func (f *FastPath) startHops() error {
	nl, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("xdp: netlink: %w", err)
	}
	f.hopsSet = map[netip.Addr]nexthop.Hop{}
	f.hops = nexthop.New(nl, f.log, f.syncHops)
	f.hopsStop, f.hopsDone = make(chan struct{}), make(chan struct{})
	for _, p := range f.cfg.N6 {
		if p.Gateway.IsValid() {
			f.hops.Want(p.Gateway)
		}
	}
	go func() {
		defer close(f.hopsDone)
		defer nl.Close()
		f.hops.Run(f.hopsStop)
	}()
	return nil
}

// syncHops makes the nexthops map and the ports' and gNBs' slots hold m
// (the resolver's goroutine).
func (f *FastPath) syncHops(m map[netip.Addr]nexthop.Hop) {
	for a, h := range m {
		if old, ok := f.hopsSet[a]; ok && old == h {
			continue // unchanged: no syscall each second per address
		}
		if err := f.objs.Nexthops.Update(be32(a), nexthopValue(h), ebpf.UpdateAny); err != nil {
			f.log.Warn("xdp: next-hop map", "addr", a, "err", err)
			continue
		}
		f.hopsSet[a] = h
	}
	for a := range f.hopsSet {
		if _, ok := m[a]; !ok {
			f.objs.Nexthops.Delete(be32(a))
			delete(f.hopsSet, a)
		}
	}
	changed := false
	for i, p := range f.cfg.N6 {
		if !p.Gateway.IsValid() {
			continue
		}
		h, ok := m[p.Gateway]
		pub, ch, err := f.portHops.set(uint32(i), h, ok)
		if err == nil && ch {
			pv := f.port(i, pub)
			err = f.objs.Ports.Update(uint32(i), &pv, ebpf.UpdateAny)
		}
		if err != nil {
			f.log.Warn("xdp: port next hop", "port", i, "err", err)
		}
		changed = changed || ch
	}
	f.peersMu.Lock()
	for a, id := range f.peerIDs {
		h, ok := m[a]
		pub, ch, err := f.peerHops.set(uint32(id), h, ok)
		if err == nil && ch {
			err = f.objs.PeerSlot.Update(uint32(id), pub, ebpf.UpdateAny)
		}
		if err != nil {
			f.log.Warn("xdp: gNB next hop", "addr", a, "err", err)
		}
		changed = changed || ch
	}
	f.peersMu.Unlock()
	if changed {
		waitPrograms() // before any old slot is written again
	}
}

// peerID is the peer_slot index of gNB a (1..maxPeers-1), given on first
// use; 0 when they are all given (the PDR then takes the nexthops map).
func (f *FastPath) peerID(a netip.Addr) uint16 {
	f.peersMu.Lock()
	defer f.peersMu.Unlock()
	if id, ok := f.peerIDs[a]; ok {
		return id
	}
	if len(f.peerIDs) >= maxPeers-1 {
		return 0
	}
	id := uint16(len(f.peerIDs) + 1)
	f.peerIDs[a] = id
	return id
}

// maxKdsts is MAX_KDSTS of bpf/upf.c.
const maxKdsts = 16

// kernelDsts are the uplink destinations a port's gateway must not be
// used for (struct config in bpf/upf.c): the UE pools, the subnets of the
// UPF's interfaces, and what the kernel never forwards.
func (f *FastPath) kernelDsts() ([]netip.Prefix, error) {
	out := slices.Clone(f.cfg.Pools)
	// Addresses the kernel never forwards to a gateway: "this network",
	// loopback, multicast and the reserved block with the broadcast.
	for _, p := range []string{"0.0.0.0/8", "127.0.0.0/8", "224.0.0.0/3"} {
		out = append(out, netip.MustParsePrefix(p))
	}
	out = append(out, netip.PrefixFrom(f.cfg.N3Addr, 32))
	for _, ifc := range append([]*net.Interface{f.n3}, f.n6...) {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("xdp: addresses of %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			// The interface's connected subnet: its hosts are reached
			// directly, not through the gateway.
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
				out = append(out, p.Masked())
			}
		}
	}
	for _, p := range out {
		if !p.Addr().Is4() {
			return nil, fmt.Errorf("xdp: UE pool %v is not IPv4", p)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr())*64 + a.Bits() - b.Bits() })
	out = slices.Compact(out)
	if len(out) > maxKdsts {
		return nil, fmt.Errorf("xdp: %d UE pools and local addresses, at most %d", len(out), maxKdsts)
	}
	return out, nil
}

// maskAddr is the IPv4 netmask of a prefix length.
func maskAddr(bits int) netip.Addr {
	m := ^uint32(0) << (32 - bits)
	if bits == 0 {
		m = 0
	}
	return netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)})
}

// configure fills the config, port and interface maps.
func (f *FastPath) configure() error {
	mtu := f.n3.MTU
	if mtu <= 0 {
		mtu = 1500
	}
	c := upfConfig{N3Addr: be32(f.cfg.N3Addr), N3Ifindex: uint32(f.n3.Index), MaxInner: uint32(max(mtu-encapLen, 0))}
	copy(c.N3Mac[:], f.n3.HardwareAddr)
	kdsts, err := f.kernelDsts()
	if err != nil {
		return err
	}
	for _, p := range kdsts {
		c.Kdst[c.Nkdst] = upfKdst{Addr: be32(p.Masked().Addr()), Mask: be32(maskAddr(p.Bits()))}
		c.Nkdst++
	}
	for _, ifc := range f.n6 {
		if slices.ContainsFunc(c.N6if[:c.Nn6if], func(m upfIfmac) bool { return m.Ifindex == uint32(ifc.Index) }) {
			continue // ports sharing an interface
		}
		if len(ifc.HardwareAddr) != 6 {
			return fmt.Errorf("xdp: interface %s has no Ethernet address", ifc.Name)
		}
		m := upfIfmac{Ifindex: uint32(ifc.Index)}
		copy(m.Mac[:], ifc.HardwareAddr)
		c.N6if[c.Nn6if] = m
		c.Nn6if++
	}
	if err := f.objs.Cfg.Update(uint32(0), &c, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("xdp: config map: %w", err)
	}
	for _, ifc := range append([]*net.Interface{f.n3}, f.n6...) {
		// bpf_fib_lookup answers "forwarding disabled" on an interface
		// without IPv4 forwarding: every packet would take the host path.
		if b, err := os.ReadFile("/proc/sys/net/ipv4/conf/" + ifc.Name + "/forwarding"); err == nil && strings.TrimSpace(string(b)) == "0" {
			f.log.Warn("xdp: IPv4 forwarding is off on the interface: the fast path forwards nothing", "iface", ifc.Name)
		}
	}
	put := func(ifc *net.Interface, info upfIfinfo) error {
		if len(ifc.HardwareAddr) != 6 {
			return fmt.Errorf("xdp: interface %s has no Ethernet address", ifc.Name)
		}
		copy(info.Mac[:], ifc.HardwareAddr)
		if err := f.objs.Ifaces.Update(uint32(ifc.Index), &info, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("xdp: interface map: %w", err)
		}
		return nil
	}
	n3 := upfIfinfo{N3: 1}
	for _, ifc := range f.n6 {
		if ifc.Index == f.n3.Index {
			n3.N6 = 1 // upf_n3 runs the downlink too
		} else if err := put(ifc, upfIfinfo{N6: 1}); err != nil {
			return err
		}
	}
	if err := put(f.n3, n3); err != nil {
		return err
	}
	f.portHops, f.peerHops = newHopSlots(f.objs.PortHops), newHopSlots(f.objs.PeerHops)
	f.peerIDs = map[netip.Addr]uint16{}
	for i := range f.n6 {
		p := f.port(i, 0)
		if err := f.objs.Ports.Update(uint32(i), &p, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("xdp: port map: %w", err)
		}
	}
	return nil
}

// port is port i's entry in the ports map, its gateway's next hop in
// slot hop-1 of port_hops (0: none yet).
func (f *FastPath) port(i int, hop uint32) upfPort {
	p := upfPort{Ifindex: uint32(f.n6[i].Index), Hop: hop}
	if gw := f.cfg.N6[i].Gateway; gw.IsValid() {
		p.Gw = be32(gw)
	}
	return p
}

// Load opens the fast path (Open) and attaches upf_n3 to the N3 interface
// and upf_n6 to each N6 interface. An error says why (the kernel refused
// a program, the driver has no native XDP, ...); the caller then falls
// back to another data path.
func Load(cfg Config) (*FastPath, error) {
	f, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	flags := link.XDPDriverMode
	if cfg.Mode == "generic" {
		flags = link.XDPGenericMode
	}
	attach := func(p *ebpf.Program, ifc *net.Interface) error {
		l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifc.Index, Flags: flags})
		if err != nil {
			return fmt.Errorf("xdp: attach to %s (%s mode): %w", ifc.Name, cmp.Or(cfg.Mode, "native"), err)
		}
		f.links = append(f.links, l)
		return nil
	}
	n3, n6 := f.objs.UpfN3, f.objs.UpfN6
	if f.steer != nil {
		n3, n6 = f.objs.UpfN3Steer, f.objs.UpfN6Steer
	}
	if err := attach(n3, f.n3); err != nil {
		f.Close()
		return nil, err
	}
	// One program per interface: N6 ports may share one, and one that is
	// also N3 has upf_n3, which runs the downlink for what is not GTP-U.
	done := map[int]bool{f.n3.Index: true}
	for _, ifc := range f.n6 {
		if done[ifc.Index] {
			continue
		}
		done[ifc.Index] = true
		if err := attach(n6, ifc); err != nil {
			f.Close()
			return nil, err
		}
	}
	if f.steer != nil {
		f.startRebalancing(rebalanceInterval)
	}
	f.log.Info("xdp fast path attached", "n3", f.n3.Name, "n6", len(f.n6), "mode", cmp.Or(cfg.Mode, "native"), "steer_cpus", f.SteerCPUs())
	return f, nil
}

// Programs are the loaded programs, for BPF_PROG_TEST_RUN.
type Programs struct {
	N3, N6 *ebpf.Program
	// The steering programs and the cpumap program; nil without
	// steering.
	N3Steer, N6Steer, CPU *ebpf.Program
	// PassAll returns XDP_PASS: attach it to the peer of a veth that
	// frames are redirected into (see the package tests).
	PassAll *ebpf.Program
}

// Programs returns the loaded programs; they stay owned by f.
func (f *FastPath) Programs() Programs {
	return Programs{N3: f.objs.UpfN3, N6: f.objs.UpfN6, PassAll: f.objs.PassAll,
		N3Steer: f.objs.UpfN3Steer, N6Steer: f.objs.UpfN6Steer, CPU: f.objs.UpfCpu}
}

// Close detaches the programs and releases the maps. The usage counted
// since the last Sync is folded first.
func (f *FastPath) Close() error {
	f.stopRebalancing()
	f.stopRetiring()
	f.Sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	// Under f.mu: a Sync or Install that comes later finds it closed
	// instead of using file descriptors that may belong to something else
	// by then.
	f.closed = true
	if f.hopsStop != nil {
		close(f.hopsStop)
		<-f.hopsDone // it writes to the maps closed below
	}
	var errs []error
	for _, l := range f.links {
		errs = append(errs, l.Close())
	}
	f.links = nil
	errs = append(errs, f.closeMaps())
	return errors.Join(errs...)
}

// closeMaps releases the mappings of the maps (those made so far) and
// the programs and maps.
func (f *FastPath) closeMaps() error {
	return errors.Join(f.counters.unmap(), f.teidIndex.unmap(), f.ueIndex.unmap(), f.objs.Close())
}

// be32 is an IPv4 address as the programs read a __be32 on this host.
func be32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.NativeEndian.Uint32(b[:])
}

// hostOrder is an IPv4 address as a number (its place in the UE index).
func hostOrder(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// be16 is a port as the programs read a __be16.
func be16(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// mask4 is an IPv4 /bits netmask as a __be32.
func mask4(bits int) uint32 {
	if bits <= 0 {
		return 0
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], ^uint32(0)<<(32-bits))
	return binary.NativeEndian.Uint32(b[:])
}

// slotTable hands out map slots for shared state objects (token buckets,
// counters), one per object, reference-counted by the sessions that use
// it, so that state carried over from one snapshot of a session to the
// next (rules' doc) keeps its slot.
type slotTable[K comparable] struct {
	refs map[K]*slotRef
	free []uint32
	next uint32
	cap  uint32
}

type slotRef struct {
	slot uint32
	n    int
}

func newSlotTable[K comparable](capacity uint32) slotTable[K] {
	return slotTable[K]{refs: make(map[K]*slotRef), cap: capacity}
}

// acquire returns k's slot, taking a new one (fresh) if k had none.
func (t *slotTable[K]) acquire(k K) (slot uint32, fresh, ok bool) {
	if r := t.refs[k]; r != nil {
		r.n++
		return r.slot, false, true
	}
	switch {
	case len(t.free) > 0:
		slot = t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
	case t.next < t.cap:
		slot = t.next
		t.next++
	default:
		return 0, false, false
	}
	t.refs[k] = &slotRef{slot: slot, n: 1}
	return slot, true, true
}

// lookup returns k's slot without a new reference.
func (t *slotTable[K]) lookup(k K) uint32 { return t.refs[k].slot }

// release drops a reference; freed reports that k's slot is free now.
func (t *slotTable[K]) release(k K) (slot uint32, freed bool) {
	r := t.refs[k]
	if r == nil {
		return 0, false
	}
	if r.n--; r.n > 0 {
		return r.slot, false
	}
	delete(t.refs, k)
	t.free = append(t.free, r.slot)
	return r.slot, true
}

// errUnsupported: a rule the programs cannot evaluate exactly.
var errUnsupported = errors.New("not offloadable")

// compiled is a session in the programs' form.
type compiled struct {
	ul      map[uint32]*upfSess // by TEID
	dl      *upfSess            // for the UE address; nil: none
	buckets []*rules.TokenBucket
	urrs    []*rules.Counters
	urrPDR  map[*rules.Counters]struct {
		urr *rules.URR
		pdr uint16
	}
}

// compile turns s into the programs' entries; an error says why s cannot
// be offloaded. It takes no slots.
func (f *FastPath) compile(s *rules.Session) (*compiled, error) {
	c := &compiled{ul: make(map[uint32]*upfSess), urrPDR: make(map[*rules.Counters]struct {
		urr *rules.URR
		pdr uint16
	})}
	for _, p := range s.PDRs {
		if p == nil || p.FAR == nil {
			return nil, fmt.Errorf("%w: PDR without FAR", errUnsupported)
		}
	}
	for _, teid := range s.TEIDs {
		e, err := f.compileKey(c, s, s.UplinkRules, rules.Uplink, teid, netip.Addr{})
		if err != nil {
			return nil, err
		}
		c.ul[teid] = e
	}
	if s.UEIPv4.Is4() {
		e, err := f.compileKey(c, s, s.DownlinkRules, rules.Downlink, 0, s.UEIPv4)
		if err != nil {
			return nil, err
		}
		c.dl = e
	}
	return c, nil
}

// pdr is PDR i of an entry (bpf/upf.c: pdr_at).
func (e *upfSess) pdr(i int) *upfPdrAct {
	if i == 0 {
		return &e.Pdr0
	}
	return &e.Pdrs[i-1]
}

// compileKey builds the entry of one TEID (uplink) or of the UE address
// (downlink): the rules that can match there, in precedence order, and
// the PDRs they lead to.
func (f *FastPath) compileKey(c *compiled, s *rules.Session, rs []classify.Rule, d rules.Direction, teid uint32, ue netip.Addr) (*upfSess, error) {
	sorted := slices.Clone(rs)
	// The classifiers' order: precedence, then ID (classify.Rule.rank).
	slices.SortStableFunc(sorted, func(a, b classify.Rule) int {
		return cmp.Or(cmp.Compare(a.Precedence, b.Precedence), cmp.Compare(a.ID, b.ID))
	})
	e := &upfSess{}
	pdrSlot := map[uint32]uint8{}
	for i := range sorted {
		r := &sorted[i]
		br, can, err := compileRule(r, d, teid, ue)
		if err != nil {
			return nil, err
		}
		if !can {
			continue // never matches here
		}
		if int(r.ID) >= len(s.PDRs) {
			return nil, fmt.Errorf("%w: rule for PDR index %d of %d", errUnsupported, r.ID, len(s.PDRs))
		}
		slot, ok := pdrSlot[r.ID]
		if !ok {
			if len(pdrSlot) == maxPDRs {
				return nil, fmt.Errorf("%w: more than %d PDRs per key", errUnsupported, maxPDRs)
			}
			slot = uint8(len(pdrSlot))
			pdrSlot[r.ID] = slot
			a, err := f.compilePDR(c, s.PDRs[r.ID], d)
			if err != nil {
				return nil, err
			}
			*e.pdr(int(slot)) = a
		}
		if int(e.Nrules) == maxRules {
			return nil, fmt.Errorf("%w: more than %d rules per key", errUnsupported, maxRules)
		}
		br.Pdr = slot
		// The flow cache is for rules that look into the inner 5-tuple. A
		// UE address test (the uplink PDI's) is one masked compare, like the
		// QFI's: behind a cache lookup it would only add a miss per packet
		// once the sessions outnumber the cache's entries.
		if br.SrcMask|br.DstMask != 0 || br.Flags&rfProto != 0 || br.TosMask != 0 ||
			br.SportLo != 0 || br.SportHi != 0xffff || br.DportLo != 0 || br.DportHi != 0xffff {
			e.Sdf = 1
		}
		e.Rules[e.Nrules] = br
		e.Nrules++
	}
	return e, nil
}

// compileRule reduces a classifier rule (classify.Rule.Matches is the
// reference) to the program's form for one key: can is false if the rule
// never matches there (another TEID, another source interface, ...), an
// error if it tests a field the program does not read. The header upfu
// classifies on has SourceInterface access (uplink) or core (downlink),
// TEID and QFI from the G-PDU (uplink) or 0 (downlink), UEIP the inner
// source (uplink) or destination (downlink), NetworkInstance and AppID 0.
func compileRule(r *classify.Rule, d rules.Direction, teid uint32, ue netip.Addr) (br upfRule, can bool, err error) {
	const unknown = classify.FieldNetworkInstance | classify.FieldAppID | classify.FieldSPI | classify.FieldFlowLabel
	if r.Has&unknown != 0 {
		return br, false, fmt.Errorf("%w: rule %d matches fields %#x", errUnsupported, r.ID, r.Has&unknown)
	}
	srcIf := uint8(rules.InterfaceAccess)
	if d == rules.Downlink {
		srcIf = uint8(rules.InterfaceCore)
	}
	if r.Has&classify.FieldSourceInterface != 0 && r.SourceInterface != srcIf {
		return br, false, nil
	}
	if r.Has&classify.FieldTEID != 0 && r.TEID != teid { // teid is 0 downlink
		return br, false, nil
	}
	if r.Has&classify.FieldQFI != 0 {
		if d == rules.Downlink {
			if r.QFI != 0 {
				return br, false, nil
			}
		} else {
			br.Flags |= rfQFI
			br.Qfi = r.QFI
		}
	}
	var ok bool
	if br.Src, br.SrcMask, ok = prefix4(r.SrcIP); !ok {
		return br, false, nil
	}
	if br.Dst, br.DstMask, ok = prefix4(r.DstIP); !ok {
		return br, false, nil
	}
	if d == rules.Downlink {
		if !r.UEIP.Contains(classify.AddrFromNetip(ue)) {
			return br, false, nil
		}
	} else if br.Ue, br.UeMask, ok = prefix4(r.UEIP); !ok {
		return br, false, nil
	}
	br.SportLo, br.SportHi, br.DportLo, br.DportHi = 0, 0xffff, 0, 0xffff
	if r.Has&classify.FieldSrcPort != 0 {
		br.SportLo, br.SportHi = r.SrcPort.Lo, r.SrcPort.Hi
	}
	if r.Has&classify.FieldDstPort != 0 {
		br.DportLo, br.DportHi = r.DstPort.Lo, r.DstPort.Hi
	}
	if r.Has&classify.FieldProto != 0 {
		br.Flags |= rfProto
		br.Proto = r.Proto
	}
	if r.Has&classify.FieldToS != 0 {
		br.Tos, br.TosMask = r.ToS&r.ToSMask, r.ToSMask
	}
	return br, true, nil
}

// prefix4 is p as the program tests it on an IPv4 address: value and
// mask (0/0 for "any"); ok is false if p contains no IPv4 address (the
// program sees only IPv4 packets: such a rule never matches them).
func prefix4(p classify.Prefix) (v, m uint32, ok bool) {
	if p.Len == 0 {
		return 0, 0, true
	}
	if p.Len <= 96 {
		// Contains every IPv4-mapped address, or none.
		return 0, 0, p.Contains(classify.AddrFrom4(0))
	}
	if !p.Addr.Is4() {
		return 0, 0, false
	}
	bits := int(p.Len) - 96
	a := p.Addr.Netip().As4()
	m = mask4(bits)
	return binary.NativeEndian.Uint32(a[:]) & m, m, true
}

// compilePDR resolves a PDR's FAR, QERs and URRs for direction d as upfu
// executes them (uplinkOne, downlinkOne).
func (f *FastPath) compilePDR(c *compiled, p *rules.PDR, d rules.Direction) (upfPdrAct, error) {
	a := upfPdrAct{PdrId: p.ID, Action: actPass}
	far := p.FAR
	if d == rules.Uplink {
		switch {
		case far.Action&rules.ActionForward != 0:
			if far.Encap != nil {
				return a, nil // N9, indirect forwarding: host path
			}
			port, ok := f.ports[far.NetworkInstance]
			if !ok && len(f.cfg.N6) == 1 && far.NetworkInstance == "" {
				port, ok = 0, true // as upfu: one N6, an unnamed network instance means it
			}
			if !ok {
				return a, nil // upfu drops and counts "no-n6"
			}
			a.Action, a.Port = actN6, uint8(port)
		case far.Action&rules.ActionBuffer != 0:
			return a, nil // upfu drops ("uplink-buffer")
		default:
			a.Action = actDrop
			return a, nil
		}
	} else {
		switch {
		case far.Action&rules.ActionBuffer != 0:
			return a, nil // TS 29.244 §5.2.4: the host path buffers
		case far.Action&rules.ActionForward == 0:
			a.Action = actDrop
			return a, nil
		case far.Encap == nil || !far.Encap.Peer.Addr().Is4():
			return a, nil
		}
		enc := far.Encap
		a.Action = actGTP
		a.Teid = enc.TEID
		a.Peer = be32(enc.Peer.Addr())
		a.PeerPort = be16(enc.Peer.Port())
		a.Hop = f.peerID(enc.Peer.Addr())
		a.Qfi = p.MarkQFI(enc.QFI)
	}
	if len(p.QERs) > maxQERs {
		return a, fmt.Errorf("%w: PDR %d has %d QERs", errUnsupported, p.ID, len(p.QERs))
	}
	if len(p.URRs) > maxURRs {
		return a, fmt.Errorf("%w: PDR %d has %d URRs", errUnsupported, p.ID, len(p.URRs))
	}
	for i, q := range p.QERs {
		open, tb := q.ULOpen, q.MBRUL
		if d == rules.Downlink {
			open, tb = q.DLOpen, q.MBRDL
		}
		if open {
			a.Qer[i].Open = 1
		}
		if tb != nil {
			c.buckets = append(c.buckets, tb)
		}
		a.Nqer++
	}
	for _, u := range p.URRs {
		c.urrs = append(c.urrs, u.Counters)
		if _, seen := c.urrPDR[u.Counters]; !seen {
			c.urrPDR[u.Counters] = struct {
				urr *rules.URR
				pdr uint16
			}{u, p.ID}
		}
		a.Nurr++
	}
	return a, nil
}

// resolveSlots fills the bucket and URR slots into the entries, after
// acquire.
func (f *FastPath) resolveSlots(e *upfSess, s *rules.Session, d rules.Direction) {
	for i := range maxPDRs {
		a := e.pdr(i)
		if a.Action != actN6 && a.Action != actGTP {
			continue
		}
		var p *rules.PDR
		for _, x := range s.PDRs {
			if x.ID == a.PdrId {
				p = x
				break
			}
		}
		for j, q := range p.QERs {
			tb := q.MBRUL
			if d == rules.Downlink {
				tb = q.MBRDL
			}
			if tb != nil {
				a.Qer[j].Bucket = f.buckets.lookup(tb) + 1
			}
		}
		for j, u := range p.URRs {
			a.Urr[j] = f.urrs.lookup(u.Counters)
		}
	}
}

// Install offloads the session snapshot s (new, or replacing the one with
// the same SEID) and reports whether it did. false: s is left to the host
// path (its rules are beyond the programs, or a map is full) and is no
// longer in the maps. Call it after the host path's Install (package doc).
func (f *FastPath) Install(s *rules.Session) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.kickRetiring()
	if f.closed {
		return false
	}
	c, err := f.compile(s)
	if err != nil {
		f.removeLocked(s.SEID)
		f.notOffloaded++
		f.log.Debug("xdp: session left to the host path", "seid", s.SEID, "reason", err)
		return false
	}
	if err := f.installLocked(s, c); err != nil {
		f.removeLocked(s.SEID)
		f.mapFull++
		f.log.Warn("xdp: session left to the host path", "seid", s.SEID, "reason", err)
		return false
	}
	// The gNBs it sends to go into the next-hop cache.
	for _, p := range s.PDRs {
		if p != nil && p.FAR != nil && p.FAR.Encap != nil && f.hops != nil {
			f.hops.Want(p.FAR.Encap.Peer.Addr())
		}
	}
	return true
}

func (f *FastPath) installLocked(s *rules.Session, c *compiled) error {
	in := &installed{sess: s}
	// Take the new snapshot's slots before the old ones go, so that
	// shared state keeps its slot.
	var err error
	for _, tb := range uniq(c.buckets) {
		slot, fresh, ok := f.buckets.acquire(tb)
		if !ok {
			err = errors.New("MBR slots exhausted")
			break
		}
		in.buckets = append(in.buckets, tb)
		if fresh {
			if err = f.objs.Buckets.Update(slot, bucketFor(tb), ebpf.UpdateAny); err != nil {
				err = fmt.Errorf("MBR slot: %w", err)
				break
			}
		}
	}
	for _, cn := range uniq(c.urrs) {
		if err != nil {
			break
		}
		slot, fresh, ok := f.urrs.acquire(cn)
		if !ok {
			err = errors.New("URR slots exhausted")
			break
		}
		in.urrs = append(in.urrs, cn)
		st := f.urrState[slot]
		if fresh {
			st = &urrState{c: cn}
			f.urrState[slot] = st
			f.counters.clear(slot)
		}
		info := c.urrPDR[cn]
		st.seid, st.urr, st.pdr = s.SEID, info.urr, info.pdr
	}
	if err != nil {
		f.releaseLocked(in)
		return err
	}

	f.gen++
	for _, teid := range slices.Sorted(mapsKeys(c.ul)) {
		e := c.ul[teid]
		f.resolveSlots(e, s, rules.Uplink)
		e.Gen = f.gen
		if err := f.teidIndex.put(teid, teid, e); err != nil {
			f.withdraw(in)
			f.releaseLocked(in)
			return err
		}
		in.teids = append(in.teids, teid)
		f.teidOwn[teid] = s.SEID
	}
	if c.dl != nil {
		f.resolveSlots(c.dl, s, rules.Downlink)
		c.dl.Gen = f.gen
		if err := f.ueIndex.put(be32(s.UEIPv4), hostOrder(s.UEIPv4), c.dl); err != nil {
			f.withdraw(in)
			f.releaseLocked(in)
			return err
		}
		in.ue = s.UEIPv4
		f.ueOwn[s.UEIPv4] = s.SEID
	}
	// The old snapshot's keys that the new one lacks, then its slots.
	if old := f.sessions[s.SEID]; old != nil {
		for _, t := range old.teids {
			if !slices.Contains(in.teids, t) && f.teidOwn[t] == s.SEID {
				f.teidIndex.remove(t, t)
				delete(f.teidOwn, t)
			}
		}
		if old.ue.IsValid() && old.ue != in.ue && f.ueOwn[old.ue] == s.SEID {
			f.ueIndex.remove(be32(old.ue), hostOrder(old.ue))
			delete(f.ueOwn, old.ue)
		}
		f.releaseLocked(old)
	}
	f.sessions[s.SEID] = in
	return nil
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func uniq[T comparable](xs []T) []T {
	seen := make(map[T]bool, len(xs))
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// bucketFor is the kernel's copy of tb's parameters, computed as
// rules.NewTokenBucket does, with an empty history.
func bucketFor(tb *rules.TokenBucket) *upfBucket {
	rate, burst := max(tb.Rate(), 1), tb.Burst()
	return &upfBucket{
		NsPerByte: uint64(int64(min(1e9*65536/float64(rate), 1<<46))),
		BurstNs:   uint64(int64(min(float64(burst)*1e9/float64(rate), 1<<62))),
	}
}

// withdraw deletes the keys in has written that it still owns (a failed
// Install); the session's previous snapshot is removed by the caller.
func (f *FastPath) withdraw(in *installed) {
	for _, t := range in.teids {
		if f.teidOwn[t] == in.sess.SEID {
			f.teidIndex.remove(t, t)
			delete(f.teidOwn, t)
		}
	}
	in.teids = nil
}

// releaseLocked drops in's slot references; a URR slot that frees is
// folded one last time.
func (f *FastPath) releaseLocked(in *installed) {
	for _, tb := range in.buckets {
		f.buckets.release(tb)
	}
	for _, cn := range in.urrs {
		slot := f.urrs.lookup(cn)
		if st := f.urrState[slot]; st != nil && f.urrs.refs[cn].n == 1 {
			f.foldSlotLocked(slot, st)
			delete(f.urrState, slot)
		}
		f.urrs.release(cn)
	}
	in.buckets, in.urrs = nil, nil
}

// Prepare readies the fast path for s, the next snapshot of an installed
// session, before the host path installs it: if s sends End Markers, or
// a FAR that forwarded to a tunnel stops, the session leaves the fast path
// and Prepare waits until no program still runs with its old rules. The
// host path then sends the End Markers after the last packet on the old
// tunnel (TS 29.281 §7.3.2), and Install, after the host path's, offloads
// s again.
func (f *FastPath) Prepare(s *rules.Session) {
	f.mu.Lock()
	old := f.sessions[s.SEID]
	if old == nil || !sendsEndMarker(s) && !rules.StopsForwarding(old.sess, s, true) {
		f.mu.Unlock()
		return
	}
	f.removeLocked(s.SEID)
	f.kickRetiring()
	f.mu.Unlock()
	waitPrograms()
}

func sendsEndMarker(s *rules.Session) bool {
	for _, p := range s.PDRs {
		if p != nil && p.FAR != nil && p.FAR.SendEndMarker {
			return true
		}
	}
	return false
}

// Remove takes a session off the fast path; its usage since the last Sync
// is folded (reports for thresholds crossed come with the next Sync).
func (f *FastPath) Remove(seid uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeLocked(seid)
	f.kickRetiring()
}

func (f *FastPath) removeLocked(seid uint64) {
	in := f.sessions[seid]
	if in == nil || f.closed {
		return
	}
	delete(f.sessions, seid)
	f.withdraw(in)
	if in.ue.IsValid() && f.ueOwn[in.ue] == seid {
		f.ueIndex.remove(be32(in.ue), hostOrder(in.ue))
		delete(f.ueOwn, in.ue)
	}
	f.releaseLocked(in)
}

// SyncSession is Sync for one session's URRs: a report about one session
// (Query URR, a periodic report) reads only its slots, not all of them.
func (f *FastPath) SyncSession(seid uint64) []Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.sessions[seid]; in != nil && !f.closed {
		for _, c := range in.urrs {
			slot := f.urrs.lookup(c)
			if st := f.urrState[slot]; st != nil {
				f.foldSlotLocked(slot, st)
			}
		}
	}
	out := f.pending
	f.pending = nil
	return out
}

// Sync folds the usage the programs counted since the last Sync into the
// sessions' rules.Counters and returns the usage reports (TS 29.244
// §5.2.2.3.1 volume threshold) that the folded volume crossed, as upfu
// raises them: the caller passes them to UPF-C like upfu's.
func (f *FastPath) Sync() []Report {
	// The counters are read through their mapping, f.mu held for a
	// batch of slots at a time (slots are handed out from the bottom), so
	// that installs go on between batches.
	const batch = 4096
	for done := uint32(0); ; done += batch {
		if !f.syncBatch(done, batch) {
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending = nil
	return out
}

// syncBatch folds the URR slots from done on, batch of them; false when
// the slots in use are done.
func (f *FastPath) syncBatch(done, batch uint32) (more bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	used := f.urrs.next
	if f.closed || len(f.urrState) == 0 || done >= used {
		return false
	}
	for slot := done; slot < min(done+batch, used); slot++ {
		if st := f.urrState[slot]; st != nil {
			f.foldSlotLocked(slot, st)
		}
	}
	return done+batch < used
}

// foldSlotLocked folds one slot's counters (none after Close, which
// folded them last).
func (f *FastPath) foldSlotLocked(slot uint32, st *urrState) {
	if f.closed {
		return
	}
	f.foldLocked(st, f.counters.sum(slot))
}

// foldLocked adds what a URR's counters (sum, over the CPUs) grew by
// since the last fold to its rules.Counters.
func (f *FastPath) foldLocked(st *urrState, sum upfUsage) {
	why := f.fold(st, rules.Uplink, sum.UlPkts-st.last.UlPkts, sum.UlBytes-st.last.UlBytes) |
		f.fold(st, rules.Downlink, sum.DlPkts-st.last.DlPkts, sum.DlBytes-st.last.DlBytes)
	st.last = sum
	if why != 0 {
		u := st.c.Load()
		f.pending = append(f.pending, Report{SEID: st.seid, Report: rules.Report{
			Kind: rules.ReportUsage, Usage: why, PDRID: st.pdr, URRID: st.urr.ID,
			Volume: u.Volume, ULPackets: u.ULPackets, DLPackets: u.DLPackets,
		}})
	}
}

// fold adds pkts packets of bytes bytes in all to the counters and says
// which thresholds the addition crossed.
func (f *FastPath) fold(st *urrState, d rules.Direction, pkts, bytes uint64) rules.UsageTrigger {
	if pkts == 0 {
		return 0
	}
	dirBytes, total := st.c.AddN(d, pkts, bytes)
	return st.urr.Crossings(d, dirBytes, total, int(bytes))
}

// Stats are the fast path's counters.
type Stats struct {
	// Packets forwarded by the programs.
	ForwardedUL, ForwardedDL uint64
	// Passed to the host path, and dropped, by reason.
	Passed, Dropped map[string]uint64
	// Flow cache lookups.
	FlowCacheHits, FlowCacheMisses uint64
	// Sessions offloaded now; Installs that left a session to the host
	// path because of its rules, and because a map was full.
	Sessions            int
	NotOffloaded        uint64
	NotOffloadedMapFull uint64
	// Keys is the TEIDs and UE addresses offloaded; Indexed, those of
	// them in the session index, the others being in the hash maps
	// behind it (index.go).
	Keys, Indexed int
	// PerCPUForwarded is the packets forwarded (both directions) by the
	// programs on each CPU, indexed by CPU number.
	PerCPUForwarded []uint64
	// Steering (nil slices without it): the CPUs steered over, the
	// buckets moved between them by Rebalance, and the load (packets) of
	// each of those CPUs and of each bucket in the last Rebalance's
	// window.
	SteerCPUs        []int
	SteerMoves       uint64
	SteerCPULoads    []uint64
	SteerBucketLoads []uint64
}

// statNames are the programs' stat reasons (enum stat in bpf/upf.c).
var statNames = [...]string{
	"fwd-ul", "fwd-dl",
	"not-ip", "mac", "ip-header", "fragment", "not-gtpu", "gtpu-message",
	"gtpu-extension", "unknown-teid", "no-session", "inner", "no-pdr", "far",
	"fib", "mtu", "ttl", "other",
	"malformed", "far-drop", "gate-closed", "mbr",
	"flow-hit", "flow-miss",
}

// Indices of enum stat.
const (
	stFwdUL    = 0
	stFwdDL    = 1
	stPassLast = 17 // ST_PASS_OTHER
	stFlowHit  = 22
	stFlowMiss = 23
	stMax      = 24
)

// statNames must name every reason.
var _ [stMax - len(statNames)]struct{}
var _ [len(statNames) - stMax]struct{}

// Stats sums the programs' per-CPU counters.
func (f *FastPath) Stats() Stats {
	st := Stats{Passed: map[string]uint64{}, Dropped: map[string]uint64{}}
	vals := make([]uint64, f.ncpu)
	st.PerCPUForwarded = make([]uint64, f.ncpu)
	for i := range uint32(stMax) {
		if err := f.objs.Stats.Lookup(i, &vals); err != nil {
			continue
		}
		var n uint64
		for cpu, v := range vals {
			n += v
			if i == stFwdUL || i == stFwdDL {
				st.PerCPUForwarded[cpu] += v
			}
		}
		switch {
		case i == stFwdUL:
			st.ForwardedUL = n
		case i == stFwdDL:
			st.ForwardedDL = n
		case i == stFlowHit:
			st.FlowCacheHits = n
		case i == stFlowMiss:
			st.FlowCacheMisses = n
		case n == 0:
		case i <= stPassLast:
			st.Passed[statNames[i]] = n
		default:
			st.Dropped[statNames[i]] = n
		}
	}
	f.mu.Lock()
	st.Sessions = len(f.sessions)
	st.Keys = len(f.teidOwn) + len(f.ueOwn)
	st.Indexed = f.teidIndex.live + f.ueIndex.live
	st.NotOffloaded, st.NotOffloadedMapFull = f.notOffloaded, f.mapFull
	f.mu.Unlock()
	f.steerStats(&st)
	return st
}
