package gnb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/sockbuf"
	"github.com/tern5g/tern/sctp"
)

// The gNB's N3 side: one UDP socket terminating GTP-U (TS 29.281) for all
// of its UEs' PDU sessions. Uplink packets from a UE get a G-PDU header with
// a PDU Session Container (UL PDU SESSION INFORMATION with the session's
// QFI, TS 38.415 §5.5.2.2) and go to the UPF's UL tunnel; downlink G-PDUs
// are routed by TEID to the UE session. One reader goroutine per gNB.

// DefaultN3Addr is where the gNB binds N3 when Config.N3Addr is empty.
const DefaultN3Addr = "127.0.0.1:0"

// n3 is the GTP-U endpoint.
type n3 struct {
	conn *net.UDPConn
	ip   netip.Addr     // advertised in DL tunnels
	self netip.AddrPort // the bound address
	done chan struct{}

	// sessions by local (DL) TEID; read lock-free by the reader.
	byTEID  sync.Map // uint32 -> *session, or *fwdEntry for a DL forwarding tunnel
	teidMu  sync.Mutex
	nextTEI uint32
	teids   atomic.Int64 // TEIDs in use

	bufs sync.Pool // *[]byte for uplink encapsulation
	tap  sctp.PacketTap

	// flushes are the waiters of flush by sequence number (uint16 -> chan
	// struct{}); flushSeq numbers them.
	flushes  sync.Map
	flushSeq atomic.Uint32

	uplink, downlink, unknownTEID, malformed, echoes, errorIndications, sendErrors atomic.Int64
}

func listenN3(addr string, tap sctp.PacketTap, readBuffer int) (*n3, error) {
	if addr == "" {
		addr = DefaultN3Addr
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("n3 address %q: %w", addr, err)
	}
	if !ap.Addr().Is4() || ap.Addr().IsUnspecified() {
		// The address goes into DL tunnel information: it must be the
		// one the UPF can reach.
		return nil, fmt.Errorf("n3 address %q: want a specific IPv4 address", addr)
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return nil, fmt.Errorf("n3 listen %s: %w", addr, err)
	}
	if readBuffer > 0 {
		if err := sockbuf.SetReadBuffer(conn, readBuffer); err != nil {
			conn.Close()
			return nil, fmt.Errorf("n3 %s: receive buffer: %w", addr, err)
		}
	}
	n := &n3{conn: conn, ip: ap.Addr(), self: conn.LocalAddr().(*net.UDPAddr).AddrPort(), done: make(chan struct{}), nextTEI: 1, tap: tap}
	n.bufs.New = func() any {
		b := make([]byte, 0, 2048)
		return &b
	}
	return n, nil
}

// Addr returns the bound N3 address.
func (n *n3) Addr() netip.AddrPort { return n.self }

// fwdEntry is a DL forwarding tunnel of a handover target's session.
type fwdEntry struct{ s *session }

// allocTEID registers s under a fresh non-zero local TEID.
func (n *n3) allocTEID(s *session) uint32 {
	t := n.alloc(s)
	s.dlTEID = t
	return t
}

// allocFwdTEID gives s a DL forwarding tunnel.
func (n *n3) allocFwdTEID(s *session) uint32 {
	t := n.alloc(&fwdEntry{s: s})
	s.fwdTEID = t
	return t
}

func (n *n3) alloc(v any) uint32 {
	n.teidMu.Lock()
	defer n.teidMu.Unlock()
	for {
		t := n.nextTEI
		n.nextTEI++
		if n.nextTEI == 0 {
			n.nextTEI = 1
		}
		if _, busy := n.byTEID.LoadOrStore(t, v); !busy {
			n.teids.Add(1)
			return t
		}
	}
}

// freeTEID frees s's tunnels.
func (n *n3) freeTEID(s *session) {
	if n.byTEID.CompareAndDelete(s.dlTEID, s) {
		n.teids.Add(-1)
	}
	n.freeFwdTEID(s)
}

// freeFwdTEID frees s's DL forwarding tunnel, if any.
func (n *n3) freeFwdTEID(s *session) {
	n.teidMu.Lock()
	t := s.fwdTEID
	s.fwdTEID = 0
	n.teidMu.Unlock()
	if t == 0 {
		return
	}
	if v, ok := n.byTEID.Load(t); ok {
		if e, ok := v.(*fwdEntry); ok && e.s == s && n.byTEID.CompareAndDelete(t, v) {
			n.teids.Add(-1)
		}
	}
}

// send encapsulates pkt for s's UL tunnel.
func (n *n3) send(s *session, pkt []byte) error {
	ul := s.uplink()
	bp := n.bufs.Get().(*[]byte)
	b := gtpu.AppendGPDU((*bp)[:0], ul.tunnel.TEID, uint8(s.qfi.Load()), false, pkt)
	_, err := n.conn.WriteToUDPAddrPort(b, ul.peer)
	if err == nil && n.tap != nil {
		n.tap.Packet(true, n.Addr(), ul.peer, b)
	}
	*bp = b
	n.bufs.Put(bp)
	if err != nil {
		n.sendErrors.Add(1)
		return fmt.Errorf("n3 send to %s: %w", ul.peer, err)
	}
	n.uplink.Add(1)
	return nil
}

// serve reads N3 until the socket is closed.
func (n *n3) serve(g *GNB) {
	defer close(n.done)
	buf := make([]byte, 65536)
	out := make([]byte, 0, 256)
	var h gtpu.Header
	for {
		size, from, err := n.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				g.log.Warn("n3 read", "err", err)
			}
			return
		}
		b := buf[:size]
		if from == n.Addr() && n.flushed(b) {
			continue
		}
		if n.tap != nil {
			n.tap.Packet(false, n.Addr(), from, b)
		}
		if err := gtpu.Parse(b, &h); err != nil {
			n.malformed.Add(1)
			continue
		}
		switch h.Type {
		case gtpu.TypeGPDU:
			v, ok := n.byTEID.Load(h.TEID)
			if !ok {
				// TS 29.281 §7.3.1: a G-PDU for no tunnel context gets an
				// Error Indication back to its sender.
				n.unknownTEID.Add(1)
				ip := n.ip.As4()
				out = gtpu.AppendErrorIndication(out[:0], &gtpu.ErrorIndication{TEID: h.TEID, PeerAddr: ip[:]})
				n.reply(out, from)
				continue
			}
			switch e := v.(type) {
			case *session:
				e.downlink(h.Payload(b), false)
			case *fwdEntry:
				g.ho.fwdReceived.Add(1)
				e.s.downlink(h.Payload(b), true)
			}
		case gtpu.TypeEndMarker:
			// TS 29.281 §7.3.2: the last packet of the old path went.
			g.ho.endMarkers.Add(1)
			v, ok := n.byTEID.Load(h.TEID)
			if !ok {
				continue
			}
			switch e := v.(type) {
			case *session:
				e.endMarker()
			case *fwdEntry:
				e.s.fwdEndMarker()
			}
		case gtpu.TypeEchoRequest:
			// TS 29.281 §7.2.1: answer on the path the request came from.
			n.echoes.Add(1)
			out = gtpu.AppendEchoResponse(out[:0], h.Seq)
			n.reply(out, from)
		case gtpu.TypeErrorIndication:
			n.errorIndications.Add(1)
			if e, err := gtpu.ParseErrorIndication(b); err == nil {
				g.log.Warn("GTP-U error indication", "from", from, "teid", e.TEID)
			}
		default:
			// Echo Response, ...: nothing to do.
		}
	}
}

// flush returns once the reader has handled every datagram that reached
// the socket before flush was called, or after timeout: it sends the
// socket an Echo Response of its own and waits for the reader to get to
// it. A source gNB uses it to deliver to the UE what the UPF sent before
// the UE leaves (the data queued ahead of the RRC handover command).
func (n *n3) flush(timeout time.Duration) bool {
	seq := uint16(n.flushSeq.Add(1))
	ch := make(chan struct{})
	n.flushes.Store(seq, ch)
	defer n.flushes.Delete(seq)
	if _, err := n.conn.WriteToUDPAddrPort(gtpu.AppendEchoResponse(nil, seq), n.Addr()); err != nil {
		return false
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// flushed reports whether b, from the socket itself, is a flush marker,
// and wakes its waiter.
func (n *n3) flushed(b []byte) bool {
	var h gtpu.Header
	if gtpu.Parse(b, &h) != nil || h.Type != gtpu.TypeEchoResponse {
		return false
	}
	if v, ok := n.flushes.LoadAndDelete(h.Seq); ok {
		close(v.(chan struct{}))
	}
	return true
}

// sendTo sends a GTP-U message (a forwarded G-PDU or End Marker) to peer.
func (n *n3) sendTo(b []byte, to netip.AddrPort) error {
	_, err := n.conn.WriteToUDPAddrPort(b, to)
	if err != nil {
		n.sendErrors.Add(1)
		return err
	}
	if n.tap != nil {
		n.tap.Packet(true, n.Addr(), to, b)
	}
	return nil
}

// reply sends a GTP-U message the gNB itself builds (echo, error indication).
func (n *n3) reply(b []byte, to netip.AddrPort) {
	if _, err := n.conn.WriteToUDPAddrPort(b, to); err == nil && n.tap != nil {
		n.tap.Packet(true, n.Addr(), to, b)
	}
}

func (n *n3) close() {
	n.conn.Close()
	<-n.done
}

// N3Counters are the gNB's user-plane counters.
type N3Counters struct {
	Uplink, Downlink int64 // G-PDUs sent and delivered
	UnknownTEID      int64 // downlink G-PDUs for no session (answered with Error Indication)
	TEIDs            int64 // local TEIDs in use (DL and DL forwarding tunnels)
	Malformed        int64 // datagrams that were not GTP-U
	EchoRequests     int64 // answered
	ErrorIndications int64 // received
	SendErrors       int64
}
