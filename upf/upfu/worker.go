package upfu

import (
	"net/netip"
	"sync/atomic"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
)

// DropReason says why a packet was dropped.
type DropReason uint8

// Drop reasons.
const (
	DropMalformed              DropReason = iota // not parseable GTP-U / IP
	DropUnsupported                              // GTP-U message type or extension the UPF does not handle
	DropUnknownTEID                              // no session for the TEID (Error Indication sent, §7.3.1)
	DropNoSession                                // no session for the downlink destination address
	DropNoPDR                                    // no PDR of the session matches
	DropFAR                                      // the FAR says drop (or has no usable action)
	DropGate                                     // QER gate closed
	DropMBR                                      // QER maximum bit rate exceeded
	DropBufferFull                               // session buffer full
	DropNoN6                                     // FAR's network instance has no N6 port
	DropNoHeadroom                               // no room to prepend the GTP-U header
	DropUplinkBuffer                             // uplink FAR says buffer: not supported, dropped
	DropBufferGlobalCap                          // the UPF-wide buffered bytes cap is reached
	DropBufferExpired                            // buffered longer than the hold time (Config.BufferHold)
	DropBufferDiscarded                          // buffered, then the session went or its FAR dropped
	DropErrorIndicationUnknown                   // Error Indication for a tunnel no FAR forwards to
	DropEchoBadRecovery                          // Echo Response without a well-formed Recovery IE
	DropQuota                                    // a URR's volume quota is used up (TS 29.244 §5.2.2.2.1)
	DropShapingQueueFull                         // shaped (Config.ShapingDelay), but the shaper holds Config.ShapingPackets already
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"malformed", "unsupported", "unknown-teid", "no-session", "no-pdr", "far-drop",
	"gate-closed", "mbr", "buffer-full", "no-n6", "no-headroom", "uplink-buffer",
	"buffer-global-cap", "buffer-expired", "buffer-discarded",
	"error-indication-unknown", "echo-bad-recovery", "quota-exhausted",
	"shaping-queue-full",
}

func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// workerStats are a worker's counters, read by Pipeline.Stats. Each batch
// accumulates into local fields and publishes with one atomic add each.
type workerStats struct {
	ulPackets, ulBytes, dlPackets, dlBytes atomic.Uint64
	drops                                  [NumDropReasons]atomic.Uint64
	echoReplies, errorIndicationsSent      atomic.Uint64
	errorIndicationsRecv, endMarkers       atomic.Uint64
	endMarkersRelayed, buffered            atomic.Uint64
}

type localStats struct {
	ulPackets, ulBytes, dlPackets, dlBytes uint64
	drops                                  [NumDropReasons]uint64
	echoReplies, errorIndicationsSent      uint64
	errorIndicationsRecv, endMarkers       uint64
	endMarkersRelayed, buffered            uint64
}

// Worker processes batches. A Worker is not safe for concurrent use: give
// each goroutine its own (Pipeline.NewWorker).
type Worker struct {
	p       *Pipeline
	gh      gtpu.Header
	ch      classify.Header
	scratch []byte // responses built during one batch
	eiSeq   uint16
	now     int64
	local   localStats
	stats   workerStats
	// batch is odd while a batch is in flight: from Uplink or Downlink
	// until they return, or with SendsLater until Sent. Install waits on
	// it before sending End Markers.
	batch      atomic.Uint64
	sendsLater bool
}

// NewWorker creates a worker with its own scratch state.
func (p *Pipeline) NewWorker() *Worker {
	w := &Worker{p: p, scratch: make([]byte, 0, 64*64)}
	p.mu.Lock()
	p.workers = append(p.workers, w)
	p.mu.Unlock()
	return w
}

func (w *Worker) drop(r DropReason) { w.local.drops[r]++ }

// SendsLater tells the pipeline that the caller hands a batch's outputs to
// the network after Uplink or Downlink returns, and calls Sent when it has:
// until then the batch counts as in flight, so that an End Marker never
// overtakes a packet of it (Install). Call it before the first batch.
func (w *Worker) SendsLater() { w.sendsLater = true }

// Sent ends the last batch of a SendsLater worker: its outputs are sent.
func (w *Worker) Sent() { w.endBatch() }

func (w *Worker) beginBatch() {
	if w.batch.Load()&1 != 0 {
		// The previous batch was never marked sent: a new batch reuses
		// its outputs, so it is over. Keep the count odd but change it.
		w.batch.Add(2)
		return
	}
	w.batch.Add(1)
}

func (w *Worker) endBatch() {
	if w.batch.Load()&1 != 0 {
		w.batch.Add(1)
	}
}

// Uplink processes a batch of datagrams received on N3 and appends the
// packets to send to out, which it returns. Outputs point into the input
// buffers or into the worker's scratch space, valid until the next call.
// No allocation happens when out has room for the outputs.
func (w *Worker) Uplink(in []Packet, out []Packet) []Packet {
	w.beginBatch()
	w.scratch = w.scratch[:0]
	w.now = w.p.now()
	for i := range in {
		out = w.uplinkOne(&in[i], out)
	}
	w.flushStats()
	if !w.sendsLater {
		w.endBatch()
	}
	return out
}

// Downlink processes a batch of IP packets received from N6 and appends
// the packets to send to out (see Uplink).
func (w *Worker) Downlink(in []Packet, out []Packet) []Packet {
	w.beginBatch()
	w.scratch = w.scratch[:0]
	w.now = w.p.now()
	for i := range in {
		pk := &in[i]
		if w.p.global != nil {
			// The table lookup finds the session; downlinkOne parses.
			out = w.downlinkOne(pk, nil, out, false)
			continue
		}
		_, _, dst, ok := innerIP(pk.Data(), &w.ch)
		if !ok {
			w.drop(DropMalformed)
			continue
		}
		e := w.p.lookupUE(dst)
		if e == nil {
			w.drop(DropNoSession)
			continue
		}
		out = w.downlinkOne(pk, e, out, false)
	}
	w.flushStats()
	if !w.sendsLater {
		w.endBatch()
	}
	return out
}

func (w *Worker) uplinkOne(pk *Packet, out []Packet) []Packet {
	data := pk.Data()
	h := &w.gh
	if err := gtpu.Parse(data, h); err != nil {
		if err == gtpu.ErrUnsupportedExtension {
			w.drop(DropUnsupported)
		} else {
			w.drop(DropMalformed)
		}
		return out
	}
	switch h.Type {
	case gtpu.TypeGPDU:
	case gtpu.TypeEchoRequest:
		// §7.2.2: answer to the request's source address and port.
		w.local.echoReplies++
		return w.respond(out, pk.Peer, func(b []byte) []byte { return gtpu.AppendEchoResponse(b, h.Seq) })
	case gtpu.TypeErrorIndication:
		w.local.errorIndicationsRecv++
		w.errorIndicationReceived(data)
		return out
	case gtpu.TypeEchoResponse:
		w.echoResponse(data, h, pk.Peer)
		return out
	case gtpu.TypeEndMarker:
		w.local.endMarkers++
		return w.relayEndMarker(out, h.TEID)
	default:
		w.drop(DropUnsupported)
		return out
	}
	if h.TEID == 0 {
		w.drop(DropUnknownTEID) // §7.3.1: no Error Indication for TEID 0
		return out
	}
	// The session by TEID; with the global table, the rule lookup finds
	// it, and the TEID map only tells an unknown TEID from a packet no
	// PDR matches.
	var e *entry
	if w.p.global == nil {
		if e = w.p.lookupTEID(h.TEID); e == nil {
			return w.unknownTEID(out, pk.Peer, h.TEID)
		}
	}
	innerOff := pk.Off + h.PayloadOffset
	inner := pk.Buf[innerOff : pk.Off+h.Length]
	ch := &w.ch
	n, _, _, ok := innerIP(inner, ch)
	if !ok {
		if w.p.global != nil && w.p.lookupTEID(h.TEID) == nil {
			return w.unknownTEID(out, pk.Peer, h.TEID)
		}
		w.drop(DropMalformed)
		return out
	}
	ch.UEIP = ch.SrcIP
	ch.TEID = h.TEID
	ch.QFI = h.QFI
	ch.SourceInterface = uint8(rules.InterfaceAccess)
	var idx uint32
	if g := w.p.global; g != nil {
		if e, idx, ok = g.lookup(ch, h.TEID, rules.Uplink); !ok && w.p.lookupTEID(h.TEID) == nil {
			return w.unknownTEID(out, pk.Peer, h.TEID)
		}
	} else if e.sess.Uplink != nil {
		idx, ok = e.sess.Uplink.Lookup(ch)
	} else {
		ok = false
	}
	if !ok || int(idx) >= len(e.sess.PDRs) {
		w.drop(DropNoPDR)
		return out
	}
	s := e.sess
	pdr := s.PDRs[idx]
	far := pdr.FAR
	if far == nil || far.Action&rules.ActionForward == 0 {
		if far != nil && far.Action&rules.ActionBuffer != 0 {
			w.drop(DropUplinkBuffer)
		} else {
			w.drop(DropFAR)
		}
		return out
	}
	// A FAR that re-encapsulates back towards the access carries downlink
	// data: the indirect data forwarding tunnel of a handover (TS 23.502
	// §4.9.1.3.2-3), fed by the source NG-RAN through a PDR from the
	// access with its own F-TEID and no UE IP address. Its inner packets
	// go to the UE; the classification above matched them on the TEID
	// only (the inner source is a server, not the UE).
	d := rules.Uplink
	if far.Encap != nil && far.Dest == rules.InterfaceAccess {
		d = rules.Downlink
	}
	delay, ok := w.qos(pdr, d, n)
	if !ok {
		return out
	}
	w.count(e, pdr, d, n)
	if d == rules.Uplink {
		w.local.ulPackets++
		w.local.ulBytes += uint64(n)
	} else {
		w.local.dlPackets++
		w.local.dlBytes += uint64(n)
	}
	if far.Encap != nil {
		// N9 (towards the core) or indirect forwarding (towards the
		// access, with a DL PDU Session Container, TS 38.415 §5.5.2.1):
		// re-encapsulate in place, keeping the QFI unless a QER sets one.
		if innerOff < gtpu.GPDUHeaderLen {
			w.drop(DropNoHeadroom)
			return out
		}
		start := innerOff - gtpu.GPDUHeaderLen
		gtpu.PutGPDUHeader(pk.Buf[start:], far.Encap.TEID, pdr.MarkQFI(h.QFI), d == rules.Downlink, n)
		return w.emit(out, Packet{Buf: pk.Buf, Off: start, Len: gtpu.GPDUHeaderLen + n, Peer: far.Encap.Peer, Port: PortN3}, delay)
	}
	port := e.n6[idx]
	if port == PortN3 {
		w.drop(DropNoN6)
		return out
	}
	return w.emit(out, Packet{Buf: pk.Buf, Off: innerOff, Len: n, Port: port}, delay)
}

// relayEndMarker passes an End Marker that arrives on an indirect data
// forwarding tunnel on to the tunnel that tunnel's FAR forwards to: the
// source NG-RAN sends it after the last forwarded packet (TS 38.300
// §9.2.3.2.1, TS 23.502 §4.9.1.3.3 step 3) and the target, which holds the
// new path's downlink until it comes, must get it through the forwarding
// UPF like the data before it (TS 29.281 §7.3.2: a node relaying between
// two tunnels relays the End Marker). It goes out after the G-PDUs of the
// same batch, in the order they came. An End Marker on any other tunnel
// ends a path at this UPF and is absorbed (counted).
func (w *Worker) relayEndMarker(out []Packet, teid uint32) []Packet {
	if teid == 0 {
		return out
	}
	e := w.p.lookupTEID(teid)
	if e == nil {
		return out
	}
	s := e.sess
	for i := range s.UplinkRules {
		r := &s.UplinkRules[i]
		if r.TEID != teid || int(r.ID) >= len(s.PDRs) {
			continue
		}
		far := s.PDRs[r.ID].FAR
		if far == nil || far.Action&rules.ActionForward == 0 || far.Encap == nil || far.Dest != rules.InterfaceAccess {
			continue
		}
		w.local.endMarkersRelayed++
		to := far.Encap
		return w.respond(out, to.Peer, func(b []byte) []byte { return gtpu.AppendEndMarker(b, to.TEID) })
	}
	return out
}

// errorIndicationReceived handles an Error Indication (TS 29.281 §7.3.1):
// the peer has no context for a tunnel we send to. The session whose FAR
// forwards to that tunnel (GTP-U Peer Address, TEID Data I) is found in
// the map Install keeps and reported to UPF-C, which stops the FAR and
// sends the SMF an Error Indication Report (TS 29.244 §5.10). One naming
// no tunnel of ours is dropped and counted.
func (w *Worker) errorIndicationReceived(data []byte) {
	var ei gtpu.ErrorIndication
	if err := ei.Decode(data); err != nil {
		w.drop(DropMalformed)
		return
	}
	var peer netip.Addr
	if len(ei.PeerAddr) == 4 {
		peer = netip.AddrFrom4([4]byte(ei.PeerAddr))
	} else {
		peer = netip.AddrFrom16([16]byte(ei.PeerAddr)).Unmap()
	}
	e := w.p.lookupTunnel(peer, ei.TEID)
	if e == nil {
		w.drop(DropErrorIndicationUnknown)
		return
	}
	w.p.report(e.sess.SEID, rules.Report{Kind: rules.ReportErrorIndication, RemoteTEID: ei.TEID, RemotePeer: peer})
}

// echoResponse passes an Echo Response (TS 29.281 §7.2.2) to path
// supervision. Its Recovery IE is mandatory; the restart counter in it is
// 0 for GTP-U and not used (§8.2), but a response without a well-formed
// one is dropped and counted, and so does not count as an answer.
func (w *Worker) echoResponse(data []byte, h *gtpu.Header, from netip.AddrPort) {
	if _, err := gtpu.ParseRecovery(h.Payload(data)); err != nil || !h.HasSeq {
		w.drop(DropEchoBadRecovery)
		return
	}
	select {
	case w.p.echoes <- echoResponse{peer: from.Addr().Unmap(), seq: h.Seq}:
	default:
		w.p.echoDropped.Add(1)
	}
}

// unknownTEID drops a G-PDU for a TEID no session has and answers with an
// Error Indication (TS 29.281 §7.3.1).
func (w *Worker) unknownTEID(out []Packet, peer netip.AddrPort, teid uint32) []Packet {
	w.drop(DropUnknownTEID)
	return w.errorIndication(out, peer, teid)
}

// downlinkOne runs a downlink packet whose session is e (nil with the
// global table, whose lookup finds it; e is then the session a drained
// packet must stay in). It parses the packet again: w.ch may hold another
// packet's fields.
func (w *Worker) downlinkOne(pk *Packet, e *entry, out []Packet, fromBuffer bool) []Packet {
	ch := &w.ch
	n, _, dst, ok := innerIP(pk.Data(), ch)
	if !ok {
		w.drop(DropMalformed)
		return out
	}
	if fromBuffer {
		w.now = w.p.now()
	}
	ch.UEIP = ch.DstIP
	ch.TEID = 0
	ch.QFI = 0
	ch.SourceInterface = uint8(rules.InterfaceCore)
	var idx uint32
	if g := w.p.global; g != nil {
		var found *entry
		found, idx, ok = g.lookup(ch, dst, rules.Downlink)
		switch {
		case !ok && e == nil && w.p.lookupUE(dst) == nil:
			w.drop(DropNoSession)
			return out
		case !ok || e != nil && found != e:
			// A drained packet belongs to e: another session's rule
			// (the address moved on) does not apply to it.
			w.drop(DropNoPDR)
			return out
		}
		e = found
	} else if e.sess.Downlink != nil {
		idx, ok = e.sess.Downlink.Lookup(ch)
	} else {
		ok = false
	}
	if !ok || int(idx) >= len(e.sess.PDRs) {
		w.drop(DropNoPDR)
		return out
	}
	s := e.sess
	pdr := s.PDRs[idx]
	far := pdr.FAR
	if far == nil {
		w.drop(DropFAR)
		return out
	}
	data := pk.Buf[pk.Off : pk.Off+n]
	switch {
	case far.Action&rules.ActionBuffer != 0 && !fromBuffer:
		// TS 29.244 §5.2.4: buffer; with NOCP, the first packet of the
		// episode raises a Downlink Data Report (§5.2.4.1) with the PDR ID
		// and, in its Downlink Data Service Information, the QFI (§8.2.27).
		res, first := e.buf.Push(data, far.Action&rules.ActionNotifyCP != 0, w.now)
		if res != rules.Buffered {
			w.dropBuffered(res)
			return out
		}
		w.local.buffered++
		if first {
			var def uint8
			if far.Encap != nil {
				def = far.Encap.QFI
			}
			w.p.report(s.SEID, rules.Report{Kind: rules.ReportDownlinkData, PDRID: pdr.ID, QFI: pdr.MarkQFI(def)})
		}
		if e.replaced.Load() {
			w.p.kick(s.SEID) // the snapshot changed under us: let Run drain
		}
		return out
	case far.Action&rules.ActionForward == 0:
		if fromBuffer {
			w.drop(DropBufferDiscarded) // buffered, and the FAR now drops
		} else {
			w.drop(DropFAR)
		}
		return out
	}
	if !fromBuffer {
		// Keep order behind packets buffered earlier and being drained.
		switch res := e.buf.PushIfHolding(data, w.now); res {
		case rules.NotHolding:
		case rules.Buffered:
			w.local.buffered++
			if e.replaced.Load() {
				w.p.kick(s.SEID)
			}
			return out
		default:
			w.dropBuffered(res)
			return out
		}
	}
	delay, ok := w.qos(pdr, rules.Downlink, n)
	if !ok {
		return out
	}
	if far.Encap == nil {
		// DL forwarding without a tunnel (e.g. to another N6): not a UE path.
		w.drop(DropFAR)
		return out
	}
	if pk.Off < gtpu.GPDUHeaderLen {
		w.drop(DropNoHeadroom)
		return out
	}
	w.count(e, pdr, rules.Downlink, n)
	w.local.dlPackets++
	w.local.dlBytes += uint64(n)
	start := pk.Off - gtpu.GPDUHeaderLen
	gtpu.PutGPDUHeader(pk.Buf[start:], far.Encap.TEID, pdr.MarkQFI(far.Encap.QFI), true, n)
	return w.emit(out, Packet{Buf: pk.Buf, Off: start, Len: gtpu.GPDUHeaderLen + n, Peer: far.Encap.Peer, Port: PortN3}, delay)
}

// dropBuffered counts a packet a buffer refused.
func (w *Worker) dropBuffered(r rules.PushResult) {
	switch r {
	case rules.BufferGlobalCap:
		w.drop(DropBufferGlobalCap)
	case rules.BufferClosed:
		w.drop(DropBufferDiscarded)
	default:
		w.drop(DropBufferFull)
	}
}

// qos applies the PDR's QERs: gate, then MBR (TS 29.244 §5.2.1, §5.4.2),
// policed or, with Config.ShapingDelay, shaped (shaper.go): the packet
// passes (ok) and leaves after delay nanoseconds. Then its URRs' volume
// quotas: once one is used up, the PDR's packets are dropped until UPF-C
// installs a new quota (§5.2.2.2.1).
func (w *Worker) qos(pdr *rules.PDR, d rules.Direction, n int) (delay int64, ok bool) {
	for _, u := range pdr.URRs {
		if u.HasQuota() && u.QuotaExhausted(d) {
			w.drop(DropQuota)
			return 0, false
		}
	}
	for _, q := range pdr.QERs {
		open, tb := q.ULOpen, q.MBRUL
		if d == rules.Downlink {
			open, tb = q.DLOpen, q.MBRDL
		}
		if !open {
			w.drop(DropGate)
			return 0, false
		}
		if tb == nil {
			continue
		}
		wait, ok := tb.Reserve(w.now, n, w.p.shapeDelay)
		if !ok {
			w.drop(DropMBR)
			return 0, false
		}
		delay = max(delay, wait)
	}
	return delay, true
}

// emit appends the finished output pk to out, or hands it to the shaper
// when its QERs made it wait (delay > 0).
func (w *Worker) emit(out []Packet, pk Packet, delay int64) []Packet {
	if delay <= 0 {
		return append(out, pk)
	}
	if !w.p.shaper.push(&pk, w.now+delay) {
		w.drop(DropShapingQueueFull)
	}
	return out
}

// count adds the packet to the PDR's URRs and raises a usage report when a
// volume threshold is crossed (TS 29.244 §5.2.2.3.1) or a volume quota
// reached (§5.2.2.2.1).
func (w *Worker) count(e *entry, pdr *rules.PDR, d rules.Direction, n int) {
	for _, u := range pdr.URRs {
		dirBytes, total := u.Counters.Add(d, n)
		if why := u.Crossings(d, dirBytes, total, n); why != 0 {
			usage := u.Counters.Load()
			w.p.report(e.sess.SEID, rules.Report{
				Kind: rules.ReportUsage, Usage: why, PDRID: pdr.ID, URRID: u.ID,
				Volume: usage.Volume, ULPackets: usage.ULPackets, DLPackets: usage.DLPackets,
			})
		}
	}
}

// respond builds a message in scratch space and queues it to peer.
func (w *Worker) respond(out []Packet, peer netip.AddrPort, build func([]byte) []byte) []Packet {
	start := len(w.scratch)
	w.scratch = build(w.scratch)
	msg := w.scratch[start:len(w.scratch):len(w.scratch)]
	return append(out, Packet{Buf: msg, Off: 0, Len: len(msg), Peer: peer, Port: PortN3})
}

// errorIndication answers a G-PDU for an unknown TEID (TS 29.281 §7.3.1)
// to the sender's address on the GTP-U port (§4.4.2.4), carrying the
// sender's UDP source port in a UDP Port extension header (§5.2.2.1).
func (w *Worker) errorIndication(out []Packet, peer netip.AddrPort, teid uint32) []Packet {
	if !w.p.eiLimit.Allow(w.now, 1) {
		return out
	}
	w.local.errorIndicationsSent++
	w.eiSeq++
	var addr [4]byte
	if w.p.cfg.N3Addr.Is4() {
		addr = w.p.cfg.N3Addr.As4()
	}
	ei := gtpu.ErrorIndication{Seq: w.eiSeq, TEID: teid, PeerAddr: addr[:], UDPPort: peer.Port()}
	dst := netip.AddrPortFrom(peer.Addr(), gtpu.Port)
	return w.respond(out, dst, func(b []byte) []byte { return gtpu.AppendErrorIndication(b, &ei) })
}

func (w *Worker) flushStats() {
	l, s := &w.local, &w.stats
	add := func(a *atomic.Uint64, v *uint64) {
		if *v != 0 {
			a.Add(*v)
			*v = 0
		}
	}
	add(&s.ulPackets, &l.ulPackets)
	add(&s.ulBytes, &l.ulBytes)
	add(&s.dlPackets, &l.dlPackets)
	add(&s.dlBytes, &l.dlBytes)
	for i := range l.drops {
		add(&s.drops[i], &l.drops[i])
	}
	add(&s.echoReplies, &l.echoReplies)
	add(&s.errorIndicationsSent, &l.errorIndicationsSent)
	add(&s.errorIndicationsRecv, &l.errorIndicationsRecv)
	add(&s.endMarkers, &l.endMarkers)
	add(&s.endMarkersRelayed, &l.endMarkersRelayed)
	add(&s.buffered, &l.buffered)
}

// Stats are the pipeline's counters.
type Stats struct {
	ULPackets, ULBytes, DLPackets, DLBytes uint64 // forwarded
	Drops                                  map[string]uint64
	EchoReplies                            uint64
	ErrorIndicationsSent                   uint64
	ErrorIndicationsReceived               uint64
	EndMarkers                             uint64 // received
	EndMarkersRelayed                      uint64 // of those: passed on along a forwarding tunnel
	EndMarkersSent                         uint64 // on old tunnels (SNDEM)
	// Downlink buffering: packets ever buffered, and packets and bytes
	// in buffers now (the global cap applies to BufferedBytes). Packets
	// the buffers refused or discarded are in Drops: "buffer-full" (a
	// session's limit), "buffer-global-cap", "buffer-expired",
	// "buffer-discarded" (session removed, or its FAR went to DROP).
	BufferedTotal  uint64
	Buffered       int
	BufferedBytes  int
	Sessions       int
	ReportsDropped uint64
	// Shaping is the packets waiting in the shaper now
	// (Config.ShapingDelay).
	Shaping int
	// GTP-U path supervision (TS 29.281 §7.2.1): Echo Requests sent
	// (retransmissions included), Echo Responses that matched no
	// outstanding request or found the supervisor's queue full, path
	// failures declared, and the peers supervised and, of those, up now.
	// Echo Responses with a bad Recovery IE are in Drops
	// ("echo-bad-recovery").
	EchoRequestsSent, EchoResponsesUnmatched, EchoResponsesDropped uint64
	PathFailures                                                   uint64
	PathsSupervised, PathsUp                                       int
}

// Stats sums the workers' counters.
func (p *Pipeline) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{Drops: make(map[string]uint64), Sessions: len(p.bySEID), ReportsDropped: p.reportsDropped.Load(),
		Shaping: int(p.shaper.queued.Load())}
	for _, w := range p.workers {
		s := &w.stats
		st.ULPackets += s.ulPackets.Load()
		st.ULBytes += s.ulBytes.Load()
		st.DLPackets += s.dlPackets.Load()
		st.DLBytes += s.dlBytes.Load()
		for i := range s.drops {
			if v := s.drops[i].Load(); v != 0 {
				st.Drops[DropReason(i).String()] += v
			}
		}
		st.EchoReplies += s.echoReplies.Load()
		st.ErrorIndicationsSent += s.errorIndicationsSent.Load()
		st.ErrorIndicationsReceived += s.errorIndicationsRecv.Load()
		st.EndMarkers += s.endMarkers.Load()
		st.EndMarkersRelayed += s.endMarkersRelayed.Load()
		st.BufferedTotal += s.buffered.Load()
	}
	st.EndMarkersSent = p.endMarkersSent.Load()
	st.EchoRequestsSent, st.EchoResponsesUnmatched = p.echoSent.Load(), p.echoUnmatched.Load()
	st.EchoResponsesDropped, st.PathFailures = p.echoDropped.Load(), p.pathFailures.Load()
	st.PathsSupervised = int(p.pathsSupervised.Load())
	st.PathsUp = st.PathsSupervised - int(p.pathsDown.Load())
	if v := p.drainDropped.Load(); v != 0 {
		st.Drops["drain-no-sink"] += v
	}
	bs := p.pool.Stats()
	st.Buffered, st.BufferedBytes = bs.Packets, bs.Bytes
	if bs.Expired != 0 {
		st.Drops[DropBufferExpired.String()] += bs.Expired
	}
	if bs.Discarded != 0 {
		st.Drops[DropBufferDiscarded.String()] += bs.Discarded
	}
	return st
}
