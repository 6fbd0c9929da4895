// Package upfu is the UPF user-plane pipeline (UPF-U): it executes the
// sessions UPF-C installs (package upf/rules) on batches of packets.
//
// Uplink: GTP-U from N3 -> session by TEID -> PDR classification within the
// session -> FAR (forward: decap to the N6 port of the FAR's network
// instance, or re-encap; drop; buffer) -> QER gate and MBR -> URR counters.
// Downlink: IP from N6 -> session by UE IP -> PDR -> FAR (forward: encap
// GTP-U with the PDU Session Container to the gNB; buffer; drop) -> QER ->
// URR. Path management (Echo) and Error Indications for unknown TEIDs are
// answered in the same pass.
//
// Lookups read immutable tables published with atomic.Pointer, so workers
// take no locks; Install and Remove copy the affected table shard and
// swap it. Each Worker owns its scratch state and processes a batch with
// no allocation per packet.
package upfu

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
)

// Reporter receives the reports UPF-U raises (UPF-C turns them into PFCP
// Session Report Requests).
type Reporter interface {
	Report(seid uint64, r rules.Report)
}

// Sink sends packets produced outside a worker's batch (buffer drains).
// Send must be done with the packets when it returns.
type Sink interface {
	Send(pkts []Packet)
}

// Config configures the pipeline.
type Config struct {
	// N3Addr is the UPF's N3 IPv4 address: the GTP-U Peer Address of the
	// Error Indications it sends (TS 29.281 §7.3.1).
	N3Addr netip.Addr
	// NetworkInstances names the N6 ports: a FAR whose network instance is
	// NetworkInstances[i] forwards decapsulated packets to Port(i).
	NetworkInstances []string
	// BufferPackets and BufferBytes bound each session's DL buffer
	// (defaults DefaultBufferPackets, DefaultBufferBytes: about the
	// per-UE gNB buffer the L25GC paper estimates). A session whose
	// buffering FAR names a BAR with a Suggested Buffering Packets Count
	// (rules.Session.BufferPackets) is bounded by that count instead of
	// BufferPackets.
	BufferPackets, BufferBytes int
	// BufferGlobalBytes caps the bytes buffered across all sessions
	// (default DefaultBufferGlobalBytes); a packet that would pass it is
	// dropped ("buffer-global-cap").
	BufferGlobalBytes int
	// BufferHold is how long a buffered packet is kept before it is
	// discarded ("buffer-expired"; default DefaultBufferHold). TS 23.502
	// §4.2.3.3 leaves it to the UPF's configuration. Expiry is checked when
	// a buffer is pushed to or drained and by Run every
	// min(max(BufferHold/4, 10ms), 1s).
	BufferHold time.Duration
	// ReportQueue is the capacity of the report queue (default 1024).
	ReportQueue int
	// ErrorIndicationRate limits Error Indications per second, so unknown
	// TEIDs cannot turn the UPF into a reflector (default 1000).
	ErrorIndicationRate int
	// GlobalPDRTable classifies every packet on one UPF-wide table holding
	// all sessions' rules (rules.Session's UplinkRules and DownlinkRules)
	// instead of finding the session by TEID or UE address first and
	// classifying on its own table. Per-session tables are the default:
	// a few PDRs each, they are faster; the global table is there to
	// compare with UPFs built that way.
	GlobalPDRTable bool
	// ShapingDelay makes QERs shape instead of police (shaper.go): a packet
	// over its MBR waits up to this long for the rate to allow it before
	// it is dropped. 0: police (drop at once).
	ShapingDelay time.Duration
	// ShapingPackets bounds the packets waiting to be shaped across the
	// UPF (default DefaultShapingPackets).
	ShapingPackets int
	// EchoInterval is how often each remote GTP-U peer that a session's
	// FAR forwards to gets an Echo Request (TS 29.281 §7.2.1; default
	// DefaultEchoInterval). Negative: no path supervision.
	EchoInterval time.Duration
	// EchoT3 is T3-RESPONSE, the wait for an Echo Response before the
	// request is sent again (default DefaultEchoT3).
	EchoT3 time.Duration
	// EchoN3 is N3-REQUESTS, the retransmissions of an unanswered Echo
	// Request before the path counts as failed (default DefaultEchoN3).
	EchoN3 int
}

// Buffering defaults (Config).
const (
	DefaultBufferPackets     = 1024
	DefaultBufferBytes       = 2 << 20
	DefaultBufferGlobalBytes = 256 << 20
	DefaultBufferHold        = 30 * time.Second
)

// shards is the number of copy-on-write shards of each lookup table: an
// Install copies the shards its keys fall in, so with 100,000 sessions it
// copies about a hundred entries per table instead of thousands (the cost
// grew with the number of sessions, and so did the garbage).
const shards = 1024

type entry struct {
	sess     *rules.Session
	buf      *rules.Buffer
	n6       []Port // per PDR index: the N6 port of its FAR (-1: none)
	replaced atomic.Bool
	gids     []uint32 // GlobalPDRTable: the session's rules there (writer)
	tunnels  []tunnel // the remote tunnels its FARs forward to (writer)
}

type teidMap = map[uint32]*entry
type ueMap = map[uint32]*entry

// Pipeline holds the published session tables; workers process packets
// against them. Install and Remove implement upfc.DataPath.
type Pipeline struct {
	cfg   Config
	log   *slog.Logger
	epoch time.Time
	n6    map[string]Port

	byTEID [shards]atomic.Pointer[teidMap]
	byUE   [shards]atomic.Pointer[ueMap]
	global *globalTable // Config.GlobalPDRTable; nil: per-session tables

	mu      sync.Mutex // serializes Install/Remove/drains
	bySEID  map[uint64]*entry
	ctl     *Worker // runs buffer drains, under mu
	ctlOut  []Packet
	ctlBuf  []byte // the bytes of ctlOut's packets, until flushCtl
	workers []*Worker

	reporter atomic.Pointer[reporterBox]
	sink     atomic.Pointer[sinkBox]
	reports  chan pendingReport
	kicks    chan uint64

	eiLimit *rules.TokenBucket

	shapeDelay int64 // Config.ShapingDelay in ns
	shaper     *shaper
	pool       *rules.BufferPool // every session's DL buffer

	// Path supervision (path.go): sessions per remote peer (under mu),
	// the tunnels Error Indications are resolved with, Echo Responses
	// from the workers.
	peerRefs     map[netip.Addr]int
	byTunnel     [shards]atomic.Pointer[tunnelMap]
	pathKick     chan struct{}
	echoes       chan echoResponse
	pathReporter atomic.Pointer[pathReporterBox]

	echoSent, echoUnmatched, echoDropped, pathFailures atomic.Uint64
	pathsSupervised, pathsDown                         atomic.Int64

	reportsDropped, drainDropped atomic.Uint64
	endMarkersSent               atomic.Uint64
}

type reporterBox struct{ r Reporter }
type sinkBox struct{ s Sink }

type pendingReport struct {
	seid uint64
	r    rules.Report
}

// New creates a pipeline.
func New(cfg Config, logger *slog.Logger) (*Pipeline, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BufferPackets < 0 || cfg.BufferBytes < 0 || cfg.BufferGlobalBytes < 0 || cfg.BufferHold < 0 {
		return nil, fmt.Errorf("upfu: negative buffer limit (packets %d, bytes %d, global bytes %d, hold %v)",
			cfg.BufferPackets, cfg.BufferBytes, cfg.BufferGlobalBytes, cfg.BufferHold)
	}
	if cfg.BufferPackets == 0 {
		cfg.BufferPackets = DefaultBufferPackets
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = DefaultBufferBytes
	}
	if cfg.BufferGlobalBytes == 0 {
		cfg.BufferGlobalBytes = max(DefaultBufferGlobalBytes, cfg.BufferBytes)
	}
	if cfg.BufferHold == 0 {
		cfg.BufferHold = DefaultBufferHold
	}
	if cfg.BufferBytes > cfg.BufferGlobalBytes {
		return nil, fmt.Errorf("upfu: per-session buffer of %d bytes exceeds the global cap of %d", cfg.BufferBytes, cfg.BufferGlobalBytes)
	}
	if cfg.ReportQueue <= 0 {
		cfg.ReportQueue = 1024
	}
	if cfg.ErrorIndicationRate <= 0 {
		cfg.ErrorIndicationRate = 1000
	}
	if cfg.EchoInterval == 0 {
		cfg.EchoInterval = DefaultEchoInterval
	}
	if cfg.EchoT3 <= 0 {
		cfg.EchoT3 = DefaultEchoT3
	}
	if cfg.ShapingDelay < 0 || cfg.ShapingPackets < 0 {
		return nil, fmt.Errorf("upfu: negative shaping delay %v or queue %d", cfg.ShapingDelay, cfg.ShapingPackets)
	}
	if cfg.ShapingPackets == 0 {
		cfg.ShapingPackets = DefaultShapingPackets
	}
	if cfg.EchoN3 < 0 {
		return nil, fmt.Errorf("upfu: negative Echo N3 %d", cfg.EchoN3)
	}
	if cfg.EchoN3 == 0 {
		cfg.EchoN3 = DefaultEchoN3
	}
	if cfg.N3Addr.IsValid() && !cfg.N3Addr.Is4() {
		return nil, fmt.Errorf("upfu: N3 address %s is not IPv4", cfg.N3Addr)
	}
	p := &Pipeline{
		cfg:     cfg,
		log:     logger,
		epoch:   time.Now(),
		n6:      make(map[string]Port, len(cfg.NetworkInstances)),
		bySEID:  make(map[uint64]*entry),
		reports: make(chan pendingReport, cfg.ReportQueue),
		kicks:   make(chan uint64, 256),
		eiLimit: rules.NewTokenBucket(uint64(cfg.ErrorIndicationRate), uint64(max(cfg.ErrorIndicationRate/10, 1))),
		pool:    rules.NewBufferPool(cfg.BufferGlobalBytes),

		shapeDelay: int64(cfg.ShapingDelay),
		shaper:     newShaper(cfg.ShapingPackets),

		peerRefs: make(map[netip.Addr]int),
		pathKick: make(chan struct{}, 1),
		echoes:   make(chan echoResponse, 256),
	}
	for i, name := range cfg.NetworkInstances {
		if _, dup := p.n6[name]; dup {
			return nil, fmt.Errorf("upfu: network instance %q listed twice", name)
		}
		p.n6[name] = Port(i)
	}
	if cfg.GlobalPDRTable {
		g, err := newGlobalTable(logger)
		if err != nil {
			return nil, err
		}
		p.global = g
	}
	for i := range shards {
		p.byTEID[i].Store(&teidMap{})
		p.byUE[i].Store(&ueMap{})
		p.byTunnel[i].Store(&tunnelMap{})
	}
	p.ctl = p.NewWorker()
	p.ctlOut = make([]Packet, 0, ctlBatch)
	return p, nil
}

// ctlBatch packets of up to ctlBufSize bytes in all leave in one Sink.Send.
const (
	ctlBatch   = 64
	ctlBufSize = ctlBatch * (Headroom + 1500)
)

// ctlPacket returns room for an n-byte packet with Headroom before it in
// ctlBuf, sending what ctlOut holds first if ctlBuf is full. p.mu held.
func (p *Pipeline) ctlPacket(n int) []byte { return p.ctlBytes(Headroom + n) }

// ctlBytes returns need bytes of ctlBuf (see ctlPacket). p.mu held.
func (p *Pipeline) ctlBytes(need int) []byte {
	if len(p.ctlBuf)+need > cap(p.ctlBuf) {
		p.flushCtl()
		if need > cap(p.ctlBuf) {
			p.ctlBuf = make([]byte, 0, max(need, ctlBufSize))
		}
	}
	off := len(p.ctlBuf)
	p.ctlBuf = p.ctlBuf[:off+need]
	return p.ctlBuf[off : off+need : off+need]
}

// SetReporter sets where reports go (UPF-C). Until it is set, reports are
// counted as dropped.
func (p *Pipeline) SetReporter(r Reporter) { p.reporter.Store(&reporterBox{r}) }

// SetSink sets where drained buffer packets go (the driver). Until it is
// set, drained packets are dropped.
func (p *Pipeline) SetSink(s Sink) { p.sink.Store(&sinkBox{s}) }

// now is the pipeline's monotonic clock in nanoseconds.
func (p *Pipeline) now() int64 { return int64(time.Since(p.epoch)) }

func (p *Pipeline) lookupTEID(teid uint32) *entry {
	return (*p.byTEID[teid%shards].Load())[teid]
}

func (p *Pipeline) lookupUE(ip uint32) *entry {
	return (*p.byUE[ip%shards].Load())[ip]
}

// Install publishes a session snapshot (new, or replacing the one with the
// same SEID). If the old snapshot buffered downlink packets and the new one
// no longer buffers, the buffer is drained in order through the new rules
// (TS 23.502 §4.2.3.3 step 12: buffered data goes to the new tunnel). A
// FAR of the new snapshot with SendEndMarker whose tunnel changed gets an
// End Marker on its old tunnel (TS 29.281 §7.3.2) after the last packet
// sent there and before any on the new one; Install then waits for the
// workers' batches in flight (see quiesceLocked), which is short. It waits
// so too when a FAR stops forwarding to a tunnel (rules.StopsForwarding).
func (p *Pipeline) Install(s *rules.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.bySEID[s.SEID]
	e := &entry{sess: s, n6: make([]Port, len(s.PDRs)), tunnels: tunnelsOf(s)}
	if old != nil {
		e.buf = old.buf
	} else {
		e.buf = p.pool.NewBuffer(p.cfg.BufferPackets, p.cfg.BufferBytes, p.cfg.BufferHold)
	}
	// TS 29.244 §5.2.4: the BAR's Suggested Buffering Packets Count, if
	// the session's buffering FAR names one, bounds its buffer.
	if s.BufferPackets > 0 {
		e.buf.SetMaxPackets(s.BufferPackets)
	} else {
		e.buf.SetMaxPackets(p.cfg.BufferPackets)
	}
	for i, pdr := range s.PDRs {
		e.n6[i] = PortN3
		if pdr == nil || pdr.FAR == nil {
			p.log.Error("upfu: PDR without FAR: its packets are dropped", "seid", s.SEID, "index", i)
			continue
		}
		if pdr.FAR.Encap == nil && pdr.FAR.Action&rules.ActionForward != 0 {
			port, ok := p.n6[pdr.FAR.NetworkInstance]
			if !ok && len(p.cfg.NetworkInstances) == 1 && pdr.FAR.NetworkInstance == "" {
				port, ok = 0, true // one N6: an unnamed network instance means it
			}
			if !ok {
				p.log.Warn("upfu: FAR names an unknown network instance: its packets are dropped",
					"seid", s.SEID, "far", pdr.FAR.ID, "networkInstance", pdr.FAR.NetworkInstance)
				continue
			}
			e.n6[i] = port
		}
	}

	// End Markers (TS 29.244 §8.2.31 SNDEM, TS 29.281 §7.3.2): the old
	// tunnels that SNDEM FARs of s leave. While they go out, the session's
	// forwarded downlink queues in its buffer (Hold), to be drained to the
	// new tunnels after them; see the ordering argument below.
	ems := endMarkers(old, s)
	if len(ems) > 0 && !buffers(s) {
		e.buf.Hold()
	}

	if p.global != nil {
		p.addGlobalLocked(e, old)
	}
	var oldTEIDs []uint32
	var oldUE netip.Addr
	if old != nil {
		oldTEIDs, oldUE = old.sess.TEIDs, old.sess.UEIPv4
	}
	// A key the old snapshot had is withdrawn only if it still leads to
	// it: another session may have taken it over since.
	for _, t := range oldTEIDs {
		if p.lookupTEID(t) == old {
			p.setTEID(t, nil)
		}
	}
	for _, t := range s.TEIDs {
		p.setTEID(t, e)
	}
	if oldUE.Is4() && oldUE != s.UEIPv4 && p.lookupUE(v4(oldUE)) == old {
		p.setUE(oldUE, nil)
	}
	if s.UEIPv4.Is4() {
		p.setUE(s.UEIPv4, e)
	}
	p.bySEID[s.SEID] = e
	p.retunnelLocked(old, e)
	if old != nil {
		old.replaced.Store(true) // before the drain: see kick in downlink
		if p.global != nil {
			p.global.remove(old.gids)
		}
	}
	if len(ems) > 0 {
		// Why no packet reaches an old tunnel after its End Marker, nor a
		// new tunnel before it:
		//  - From here on, a batch that starts sees only the new snapshot
		//    (published above with atomic stores; Worker.beginBatch's
		//    atomic add comes after them in the order of atomics).
		//  - A batch that started before may still hold the old
		//    snapshot and forward on the old tunnel. quiesceLocked waits
		//    until each such batch has ended: for a driver's workers,
		//    until its outputs are handed to the socket (Worker.Sent).
		//  - Only then do the End Markers go to the sink, which sends
		//    synchronously: every old-path packet precedes them.
		//  - Downlink that the new snapshot forwards meanwhile (and any
		//    an old-snapshot batch forwards after Hold) queues in the
		//    held buffer (PushIfHolding), and the drain below, after the
		//    End Markers, sends it to the new tunnel in order. Install
		//    and drains run under p.mu, so no other drain interleaves.
		// Uplink-side re-encapsulation (indirect forwarding) is not held.
		p.quiesceLocked()
		p.sendEndMarkersLocked(ems)
	} else if old != nil && rules.StopsForwarding(old.sess, s, false) {
		// A FAR that forwarded to a tunnel now buffers or drops (the
		// hold of smart buffering, TS 23.502 §4.9.1.3.2 step 12 as
		// L25GC §3.3 changes it; an AN release): when Install returns,
		// and so when the PFCP response goes, no batch that still holds
		// the old snapshot is sending to that tunnel. The Handover
		// Command that follows the response then finds, at the source,
		// every packet the UPF will ever send it.
		p.quiesceLocked()
	}
	if e.buf.Holding() && !buffers(s) {
		p.drainLocked(e)
	}
	// Buffered packets that no NOCP reported yet, now under a FAR that
	// asks for the report: raise it, or nobody pages for them.
	if pdr, ok := notifyingPDR(s); ok && e.buf.NotifyHeld() {
		var def uint8
		if pdr.FAR.Encap != nil {
			def = pdr.FAR.Encap.QFI
		}
		p.report(s.SEID, rules.Report{Kind: rules.ReportDownlinkData, PDRID: pdr.ID, QFI: pdr.MarkQFI(def)})
	}
}

// notifyingPDR is the first PDR of s whose FAR buffers with NOCP.
func notifyingPDR(s *rules.Session) (*rules.PDR, bool) {
	for _, pdr := range s.PDRs {
		if pdr != nil && pdr.FAR != nil && pdr.FAR.Action&rules.ActionBuffer != 0 && pdr.FAR.Action&rules.ActionNotifyCP != 0 {
			return pdr, true
		}
	}
	return nil, false
}

// endMarkers returns the tunnels to send End Markers on when s replaces
// old: each FAR of s with SendEndMarker whose Encap differs from the same
// FAR's in old, the old Encap (TS 29.244 §8.2.31: "towards the old F-TEID
// of the downstream node when switching to the new F-TEID").
func endMarkers(old *entry, s *rules.Session) []rules.Encap {
	if old == nil {
		return nil
	}
	var out []rules.Encap
	for _, pdr := range s.PDRs {
		f := pdr.FAR
		if f == nil || !f.SendEndMarker || f.Encap == nil {
			continue
		}
		for _, op := range old.sess.PDRs {
			of := op.FAR
			if of == nil || of.ID != f.ID || of.Encap == nil {
				continue
			}
			prev := *of.Encap
			if (prev.TEID != f.Encap.TEID || prev.Peer != f.Encap.Peer) && !slices.ContainsFunc(out, func(x rules.Encap) bool {
				return x.TEID == prev.TEID && x.Peer == prev.Peer
			}) {
				out = append(out, prev)
			}
			break
		}
	}
	return out
}

// quiesceTimeout bounds the wait for in-flight batches (a driver that never
// calls Sent): past it the End Markers go anyway, and the wait is logged.
const quiesceTimeout = time.Second

// quiesceLocked waits until every worker batch that was in flight when it
// was called has ended. Workers take no lock, so holding p.mu cannot
// block them. p.mu held.
func (p *Pipeline) quiesceLocked() {
	deadline := time.Now().Add(quiesceTimeout)
	for _, w := range p.workers {
		g := w.batch.Load()
		if g&1 == 0 {
			continue // idle
		}
		for spin := 0; w.batch.Load() == g; spin++ {
			if time.Now().After(deadline) {
				p.log.Warn("upfu: a worker batch did not end: End Markers sent without waiting for it")
				return
			}
			if spin < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
}

// sendEndMarkersLocked sends one End Marker on each tunnel through the
// sink. p.mu held.
func (p *Pipeline) sendEndMarkersLocked(tunnels []rules.Encap) {
	for _, t := range tunnels {
		b := gtpu.AppendEndMarker(p.ctlBytes(gtpu.EndMarkerLen)[:0], t.TEID)
		p.ctlOut = append(p.ctlOut, Packet{Buf: b, Len: len(b), Peer: t.Peer, Port: PortN3})
		if len(p.ctlOut) == cap(p.ctlOut) {
			p.flushCtl()
		}
	}
	if p.sink.Load() != nil {
		p.endMarkersSent.Add(uint64(len(tunnels)))
	}
	p.flushCtl()
}

// addGlobalLocked puts e's rules into the global table, replacing old's
// (same SEID) after the caller has switched the session maps. A TEID or
// UE address that e takes over from another session stops reaching that
// session's rules, as it stops reaching the session in the maps. p.mu is
// held.
func (p *Pipeline) addGlobalLocked(e, old *entry) {
	s := e.sess
	for _, t := range s.TEIDs {
		if o := p.lookupTEID(t); o != nil && o != old {
			p.global.dropKey(o, rules.Uplink, t)
		}
	}
	if s.UEIPv4.Is4() {
		if o := p.lookupUE(v4(s.UEIPv4)); o != nil && o != old {
			p.global.dropKey(o, rules.Downlink, v4(s.UEIPv4))
		}
	}
	e.gids = p.global.add(e)
}

// buffers reports whether any downlink FAR of s buffers.
func buffers(s *rules.Session) bool {
	for _, pdr := range s.PDRs {
		if pdr != nil && pdr.Source == rules.InterfaceCore && pdr.FAR != nil && pdr.FAR.Action&rules.ActionBuffer != 0 {
			return true
		}
	}
	return false
}

// Remove deletes a session; its buffered packets are dropped
// ("buffer-discarded") and its buffer refuses the pushes of workers still
// holding the old snapshot.
func (p *Pipeline) Remove(seid uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.bySEID[seid]
	if e == nil {
		return
	}
	delete(p.bySEID, seid)
	for _, t := range e.sess.TEIDs {
		if p.lookupTEID(t) == e {
			p.setTEID(t, nil)
		}
	}
	if ue := e.sess.UEIPv4; ue.Is4() && p.lookupUE(v4(ue)) == e {
		p.setUE(ue, nil)
	}
	p.retunnelLocked(e, nil)
	if p.global != nil {
		p.global.remove(e.gids)
	}
	e.replaced.Store(true)
	e.buf.Close()
}

// Sessions is the number of installed sessions.
func (p *Pipeline) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bySEID)
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// setTEID copies the TEID's shard with teid set to e (nil: deleted).
func (p *Pipeline) setTEID(teid uint32, e *entry) {
	sh := &p.byTEID[teid%shards]
	cur := *sh.Load()
	next := make(teidMap, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	if e == nil {
		delete(next, teid)
	} else {
		next[teid] = e
	}
	sh.Store(&next)
}

func (p *Pipeline) setUE(a netip.Addr, e *entry) {
	ip := v4(a)
	sh := &p.byUE[ip%shards]
	cur := *sh.Load()
	next := make(ueMap, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	if e == nil {
		delete(next, ip)
	} else {
		next[ip] = e
	}
	sh.Store(&next)
}

// drainLocked sends e's buffered packets through the current rules, in
// order, to the sink. p.mu is held.
func (p *Pipeline) drainLocked(e *entry) {
	w := p.ctl
	var in [1]Packet
	e.buf.Release(p.now(), func(pkt []byte) {
		// The worker encapsulates in place, in ctlBuf, which holds the
		// packet until flushCtl has sent it.
		b := p.ctlPacket(len(pkt))
		copy(b[Headroom:], pkt)
		in[0] = Packet{Buf: b, Off: Headroom, Len: len(pkt)}
		p.ctlOut = w.downlinkOne(&in[0], e, p.ctlOut, true)
		if len(p.ctlOut) == cap(p.ctlOut) {
			p.flushCtl()
		}
	})
	p.flushCtl()
	w.flushStats()
}

func (p *Pipeline) flushCtl() {
	p.ctlBuf = p.ctlBuf[:0] // its packets are sent (or dropped) below
	if len(p.ctlOut) == 0 {
		return
	}
	if b := p.sink.Load(); b != nil {
		b.s.Send(p.ctlOut)
	} else {
		p.drainDropped.Add(uint64(len(p.ctlOut)))
	}
	clear(p.ctlOut)
	p.ctlOut = p.ctlOut[:0]
}

// kick asks Run to re-check a session's buffer: a worker buffered a packet
// into a snapshot that Install or Remove had already replaced.
func (p *Pipeline) kick(seid uint64) {
	select {
	case p.kicks <- seid:
	default:
	}
}

func (p *Pipeline) report(seid uint64, r rules.Report) {
	select {
	case p.reports <- pendingReport{seid, r}:
	default:
		p.reportsDropped.Add(1)
	}
}

// Run delivers reports, serves late buffer drains, expires buffered
// packets older than Config.BufferHold and supervises the GTP-U paths
// (path.go) until ctx ends.
func (p *Pipeline) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if p.cfg.EchoInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.supervise(ctx)
		}()
	}
	if p.shapeDelay > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.shaper.run(ctx, p)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(min(max(p.cfg.BufferHold/4, 10*time.Millisecond), time.Second))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case seid := <-p.kicks:
				p.recheck(seid)
			case <-tick.C:
				p.expire()
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case pr := <-p.reports:
			if b := p.reporter.Load(); b != nil {
				b.r.Report(pr.seid, pr.r)
			} else {
				p.reportsDropped.Add(1)
			}
		}
	}
}

// expire discards buffered packets older than the hold time from every
// session's buffer. Buffers of sessions that buffer nothing are skipped
// without a lock.
func (p *Pipeline) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, e := range p.bySEID {
		if e.buf.Holding() {
			e.buf.Expire(now)
		}
	}
}

func (p *Pipeline) recheck(seid uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.bySEID[seid]
	if e == nil {
		// Removed: its buffer is closed and refused the late push.
		return
	}
	if e.buf.Holding() && !buffers(e.sess) {
		p.drainLocked(e)
	}
}
