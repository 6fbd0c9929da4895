package pfcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint defaults (TS 29.244 §6.4 leaves T1/N1 to the operator).
const (
	DefaultT1 = 3 * time.Second
	DefaultN1 = 3
)

// Endpoint errors.
var (
	ErrClosed  = errors.New("pfcp: endpoint closed")
	ErrTimeout = errors.New("pfcp: no response after retransmissions")
)

// EndpointConfig configures a UDP PFCP endpoint.
type EndpointConfig struct {
	Addr   string // local address, e.g. "127.0.0.1:8805"; empty = ":8805"
	NodeID NodeID // our Node ID, used in answers the endpoint builds itself
	UP     UPHandler
	CP     CPHandler
	T1     time.Duration // request retransmission timer; 0 = DefaultT1
	N1     int           // retransmissions before giving up; 0 = DefaultN1
	Tap    PacketTap     // optional pcap capture
	Logger *slog.Logger  // nil discards
	// RecoveryTime is the Recovery Time Stamp the endpoint advertises in
	// heartbeats (§19A); zero = now. It must be the one the node's
	// association messages carry, or peers see a restart that was not.
	RecoveryTime time.Time
}

// EndpointStats counts what an Endpoint did.
type EndpointStats struct {
	Received, Sent      uint64
	Dropped             uint64 // undecodable, unknown type, unexpected response
	Retransmissions     uint64 // requests we sent again after T1
	DuplicatesAnswered  uint64 // retransmitted requests answered from the cache
	Timeouts            uint64 // requests that got no response after N1 retransmissions
	VersionNotSupported uint64 // Version Not Supported Responses sent
	MandatoryIEErrors   uint64 // requests answered with an IE error cause
	HandlerMissing      uint64 // requests answered with Service not supported
	ResponsesUnmatched  uint64 // responses with no outstanding request
	// ReusedSequences counts requests that came with the peer and sequence
	// number of a cached request but other octets: not retransmissions
	// (§6.4), so served as new requests.
	ReusedSequences uint64
	// PeerRestarts counts peers seen with a new Recovery Time Stamp
	// (§6.2.2, TS 23.007 §19A): their cached answers were dropped.
	PeerRestarts uint64
}

// Endpoint is a PFCP entity on one UDP socket: it serves incoming requests
// through the configured handlers and sends requests for its clients.
type Endpoint struct {
	cfg      EndpointConfig
	log      *slog.Logger
	conn     *net.UDPConn
	local    netip.AddrPort
	recovery time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	wg       sync.WaitGroup

	seq atomic.Uint32

	mu      sync.Mutex
	pending map[uint32]*pending // by our sequence number
	cache   map[cacheKey]*cached
	order   []cacheKey        // insertion order, for expiry
	peers   map[uint64]uint64 // local SEID -> peer SEID
	locals  map[uint64]uint64 // peer SEID -> local SEID
	// recoveries is each peer's last known Recovery Time Stamp (§8.2.65).
	recoveries map[netip.AddrPort]time.Time

	stats struct {
		received, sent, dropped, retrans, dups, timeouts, vns, ieErrs, noHandler, unmatched, reused, restarts atomic.Uint64
	}
}

type pending struct {
	peer netip.AddrPort
	ch   chan result
}

type result struct {
	hdr Header
	msg Message
	err error
}

// cacheKey is where a request's answer is cached: peer and sequence number.
// A hit is a retransmission only if the octets are the same too (§6.4: a
// retransmitted message is identical; a peer that restarted reuses
// sequence numbers for other requests).
type cacheKey struct {
	peer netip.AddrPort
	seq  uint32
}

type cached struct {
	req     []byte // the request's octets
	resp    []byte // nil while the request is being handled
	expires time.Time
}

// Listen opens a PFCP endpoint on cfg.Addr and starts serving.
func Listen(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Addr == "" {
		cfg.Addr = fmt.Sprintf(":%d", Port)
	}
	if cfg.T1 <= 0 {
		cfg.T1 = DefaultT1
	}
	if cfg.N1 <= 0 {
		cfg.N1 = DefaultN1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("pfcp: resolve %q: %w", cfg.Addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("pfcp: listen %q: %w", cfg.Addr, err)
	}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if cfg.RecoveryTime.IsZero() {
		cfg.RecoveryTime = time.Now()
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Endpoint{
		cfg:      cfg,
		log:      log.With("pfcp", local.String()),
		conn:     conn,
		local:    local,
		recovery: cfg.RecoveryTime.Truncate(time.Second), // §8.2.65: one-second resolution
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		pending:  make(map[uint32]*pending),
		cache:    make(map[cacheKey]*cached),
		peers:    make(map[uint64]uint64),
		locals:   make(map[uint64]uint64),

		recoveries: make(map[netip.AddrPort]time.Time),
	}
	// Sequence numbers start anywhere (§7.3 leaves it open): a process
	// restarted within the second keeps its Recovery Time Stamp (one-second
	// resolution), and its first requests, counted from 1 again, would be
	// byte for byte its predecessor's, which the peer's duplicate cache
	// answers with the predecessor's stale responses.
	e.seq.Store(rand.Uint32() & maxSeq)
	go e.readLoop()
	return e, nil
}

// Addr returns the local UDP address.
func (e *Endpoint) Addr() netip.AddrPort { return e.local }

// RecoveryTime is the Recovery Time Stamp this endpoint advertises.
func (e *Endpoint) RecoveryTime() time.Time { return e.recovery }

// Stats returns a snapshot of the counters.
func (e *Endpoint) Stats() EndpointStats {
	s := &e.stats
	return EndpointStats{
		Received: s.received.Load(), Sent: s.sent.Load(), Dropped: s.dropped.Load(),
		Retransmissions: s.retrans.Load(), DuplicatesAnswered: s.dups.Load(), Timeouts: s.timeouts.Load(),
		VersionNotSupported: s.vns.Load(), MandatoryIEErrors: s.ieErrs.Load(),
		HandlerMissing: s.noHandler.Load(), ResponsesUnmatched: s.unmatched.Load(),
		ReusedSequences: s.reused.Load(), PeerRestarts: s.restarts.Load(),
	}
}

// Close stops the endpoint; outstanding requests fail with ErrClosed.
func (e *Endpoint) Close() error {
	e.cancel()
	err := e.conn.Close()
	<-e.done
	e.wg.Wait()
	e.mu.Lock()
	for seq, p := range e.pending {
		p.ch <- result{err: ErrClosed}
		delete(e.pending, seq)
	}
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("pfcp: close: %w", err)
	}
	return nil
}

// UserPlane returns a client to the UPF at peer.
func (e *Endpoint) UserPlane(peer netip.AddrPort) UserPlane { return &udpUserPlane{e: e, peer: peer} }

// ControlPlane returns a client to the SMF at peer (the UPF side normally
// gets it from HandleAssociationSetup).
func (e *Endpoint) ControlPlane(peer netip.AddrPort) ControlPlane {
	return &udpControlPlane{e: e, peer: peer}
}

func (e *Endpoint) send(b []byte, peer netip.AddrPort) error {
	if e.cfg.Tap != nil {
		e.cfg.Tap.Packet(true, e.local, peer, b)
	}
	if _, err := e.conn.WriteToUDPAddrPort(b, peer); err != nil {
		return fmt.Errorf("pfcp: send to %s: %w", peer, err)
	}
	e.stats.sent.Add(1)
	return nil
}

func (e *Endpoint) readLoop() {
	defer close(e.done)
	buf := make([]byte, 65535)
	for {
		n, peer, err := e.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if e.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			e.log.Warn("pfcp read failed", "err", err)
			continue
		}
		peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
		e.stats.received.Add(1)
		if e.cfg.Tap != nil {
			e.cfg.Tap.Packet(false, e.local, peer, buf[:n])
		}
		// Handlers run on their own goroutines while buf is reused.
		e.receive(append([]byte(nil), buf[:n]...), peer)
	}
}

func (e *Endpoint) receive(b []byte, peer netip.AddrPort) {
	hdr, msg, err := Decode(b)
	var ieErr *IEError
	switch {
	case errors.Is(err, ErrVersionNotSupported):
		// §7.2.2.1: answer a message of another version with our version.
		if hdr.Type != MsgVersionNotSupportedResponse {
			e.stats.vns.Add(1)
			_ = e.send(EncodeVersionNotSupported(hdr.Seq), peer)
		}
		return
	case err != nil && !errors.As(err, &ieErr):
		e.stats.dropped.Add(1)
		e.log.Info("pfcp message dropped", "peer", peer, "type", hdr.Type, "err", err)
		return
	}
	if !isRequest(hdr.Type) {
		e.deliver(hdr, msg, err, peer)
		return
	}
	key := cacheKey{peer: peer, seq: hdr.Seq}
	now := time.Now()
	e.mu.Lock()
	e.expireLocked(now)
	if c, ok := e.cache[key]; ok {
		if bytes.Equal(c.req, b) {
			resp := c.resp
			e.mu.Unlock()
			// §6.4: a retransmitted request gets the same response again;
			// one still being handled is answered once the handler is done.
			if resp != nil {
				e.stats.dups.Add(1)
				_ = e.send(resp, peer)
			}
			return
		}
		// §6.4: a retransmission is identical; this is another request
		// under a reused sequence number (a restarted peer, typically).
		// It is served, and its entry replaces the old one.
		e.stats.reused.Add(1)
		e.log.Debug("pfcp sequence number reused for a new request", "peer", peer, "seq", hdr.Seq, "type", hdr.Type)
	}
	switch m := msg.(type) {
	case *HeartbeatRequest:
		e.noteRecoveryLocked(peer, m.RecoveryTime)
	case *AssociationSetupRequest:
		// §6.2.6.2: a (re-)association starts the peer afresh; nothing it
		// sent before is retransmitted after it.
		e.noteRecoveryLocked(peer, m.RecoveryTime)
		e.flushPeerLocked(peer)
	}
	entry := &cached{req: b}
	e.cache[key] = entry
	e.order = append(e.order, key)
	e.mu.Unlock()

	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		resp, seid, ok := e.serve(hdr, msg, ieErr, peer)
		var out []byte
		if ok {
			var err error
			if out, err = Encode(resp, hdr.Seq, seid); err != nil {
				e.log.Error("pfcp encode response failed", "type", resp.MessageType(), "err", err)
				ok = false
			}
		}
		e.mu.Lock()
		c, present := e.cache[key]
		mine := present && c == entry
		switch {
		case mine && ok:
			c.resp = out
			c.expires = time.Now().Add(e.cacheLifetime())
		case mine:
			delete(e.cache, key)
		}
		e.mu.Unlock()
		if !ok {
			return
		}
		if present && !mine {
			// Another request with this sequence number came in while this
			// one was handled: the peer gave this one up and would take
			// our answer for the other's (§6.4).
			e.log.Debug("pfcp answer to a superseded request not sent", "peer", peer, "seq", hdr.Seq, "type", hdr.Type)
			return
		}
		_ = e.send(out, peer)
	}()
}

// noteRecoveryLocked records a peer's Recovery Time Stamp. A different
// one than last seen means the peer restarted (§6.2.2, TS 23.007 §19A;
// one that went back is a restart too, with a clock that jumped): what it
// sent before is never retransmitted, so its cached answers go. e.mu held.
func (e *Endpoint) noteRecoveryLocked(peer netip.AddrPort, t time.Time) {
	if t.IsZero() {
		return
	}
	known, ok := e.recoveries[peer]
	e.recoveries[peer] = t
	if !ok || known.Equal(t) {
		return
	}
	e.stats.restarts.Add(1)
	if t.Before(known) {
		e.log.Warn("pfcp peer recovery time stamp went back: treated as a restart", "peer", peer, "was", known, "now", t)
	} else {
		e.log.Info("pfcp peer restarted", "peer", peer, "was", known, "now", t)
	}
	e.flushPeerLocked(peer)
}

// flushPeerLocked drops the cached answers to peer. Requests of its still
// being handled are answered, but not cached. e.mu held.
func (e *Endpoint) flushPeerLocked(peer netip.AddrPort) {
	for k := range e.cache {
		if k.peer == peer {
			delete(e.cache, k)
		}
	}
}

// cacheLifetime covers every retransmission a peer with our timers could make.
func (e *Endpoint) cacheLifetime() time.Duration {
	return time.Duration(e.cfg.N1+1) * e.cfg.T1
}

func (e *Endpoint) expireLocked(now time.Time) {
	i := 0
	for ; i < len(e.order); i++ {
		c, ok := e.cache[e.order[i]]
		if ok && (c.resp == nil || now.Before(c.expires)) {
			break
		}
		if ok {
			delete(e.cache, e.order[i])
		}
	}
	if i > 0 {
		e.order = append(e.order[:0], e.order[i:]...)
	}
}

// serve runs one request through the handlers and returns the response and
// the SEID for its header (the peer's SEID, §7.2.2.4.2). ok is false when no
// response is to be sent.
func (e *Endpoint) serve(hdr Header, msg Message, ieErr *IEError, peer netip.AddrPort) (resp Message, seid uint64, ok bool) {
	ctx := e.ctx
	if ieErr != nil {
		e.stats.ieErrs.Add(1)
		e.log.Info("pfcp request rejected", "peer", peer, "type", hdr.Type, "cause", ieErr.Cause, "ie", ieErr.OffendingIE, "err", ieErr.Err)
	}
	switch m := msg.(type) {
	case *HeartbeatRequest:
		// §7.4.2: answered by the endpoint itself, whatever the IEs.
		return &HeartbeatResponse{RecoveryTime: e.recovery}, 0, true
	case *AssociationSetupRequest:
		if ieErr != nil || e.cfg.UP == nil {
			return &AssociationSetupResponse{NodeID: e.cfg.NodeID, Cause: e.rejectCause(ieErr), RecoveryTime: e.recovery}, 0, true
		}
		r := e.cfg.UP.HandleAssociationSetup(ctx, e.ControlPlane(peer), m)
		if r == nil {
			return nil, 0, false
		}
		return r, 0, true
	case *AssociationReleaseRequest:
		if ieErr != nil || e.cfg.UP == nil {
			return &AssociationReleaseResponse{NodeID: e.cfg.NodeID, Cause: e.rejectCause(ieErr)}, 0, true
		}
		r := e.cfg.UP.HandleAssociationRelease(ctx, m)
		if r == nil {
			return nil, 0, false
		}
		return r, 0, true
	case *NodeReportRequest:
		if ieErr != nil || e.cfg.CP == nil {
			c, off := e.rejectCauseIE(ieErr)
			return &NodeReportResponse{NodeID: e.cfg.NodeID, Cause: c, OffendingIE: off}, 0, true
		}
		r := e.cfg.CP.HandleNodeReport(ctx, m)
		if r == nil {
			return nil, 0, false
		}
		return r, 0, true
	case *SessionEstablishmentRequest:
		cpSEID := m.CPFSEID.SEID
		if ieErr != nil || e.cfg.UP == nil {
			c, off := e.rejectCauseIE(ieErr)
			return &SessionEstablishmentResponse{NodeID: e.cfg.NodeID, Cause: c, OffendingIE: off}, cpSEID, true
		}
		r := e.cfg.UP.HandleSessionEstablishment(ctx, m)
		if r == nil {
			return nil, 0, false
		}
		if r.UPFSEID != nil && r.Cause.Accepted() {
			e.setPeerSEID(r.UPFSEID.SEID, cpSEID)
		}
		return r, cpSEID, true
	case *SessionModificationRequest:
		if m.CPFSEID != nil && ieErr == nil {
			e.setPeerSEID(hdr.SEID, m.CPFSEID.SEID) // §7.5.4: the CP F-SEID may change
		}
		seid := e.peerSEID(hdr.SEID)
		if ieErr != nil || e.cfg.UP == nil {
			c, off := e.rejectCauseIE(ieErr)
			return &SessionModificationResponse{Cause: c, OffendingIE: off}, seid, true
		}
		r := e.cfg.UP.HandleSessionModification(ctx, hdr.SEID, m)
		if r == nil {
			return nil, 0, false
		}
		return r, seid, true
	case *SessionDeletionRequest:
		seid := e.peerSEID(hdr.SEID)
		if ieErr != nil || e.cfg.UP == nil {
			c, off := e.rejectCauseIE(ieErr)
			return &SessionDeletionResponse{Cause: c, OffendingIE: off}, seid, true
		}
		r := e.cfg.UP.HandleSessionDeletion(ctx, hdr.SEID)
		if r == nil {
			return nil, 0, false
		}
		if r.Cause.Accepted() {
			e.forgetPeerSEID(hdr.SEID)
		}
		return r, seid, true
	case *SessionReportRequest:
		seid := e.peerSEID(hdr.SEID)
		if ieErr != nil || e.cfg.CP == nil {
			c, off := e.rejectCauseIE(ieErr)
			return &SessionReportResponse{Cause: c, OffendingIE: off}, seid, true
		}
		r := e.cfg.CP.HandleSessionReport(ctx, hdr.SEID, m)
		if r == nil {
			return nil, 0, false
		}
		return r, seid, true
	}
	e.stats.dropped.Add(1)
	e.log.Info("pfcp request type not served", "peer", peer, "type", hdr.Type)
	return nil, 0, false
}

func (e *Endpoint) rejectCause(ieErr *IEError) Cause {
	c, _ := e.rejectCauseIE(ieErr)
	return c
}

// rejectCauseIE is the cause for a request that cannot be served: the IE
// error (§7.2.2.4.2) or, with no handler for it, Service not supported.
func (e *Endpoint) rejectCauseIE(ieErr *IEError) (Cause, uint16) {
	if ieErr != nil {
		return ieErr.Cause, ieErr.OffendingIE
	}
	e.stats.noHandler.Add(1)
	return CauseServiceNotSupported, 0
}

// Peer SEIDs: the SEID to put in the header of messages about a session is
// the peer's (§7.2.2.4.2); the endpoint learns it from establishment.
func (e *Endpoint) setPeerSEID(local, remote uint64) {
	e.mu.Lock()
	if old, ok := e.peers[local]; ok {
		delete(e.locals, old)
	}
	e.peers[local] = remote
	e.locals[remote] = local
	e.mu.Unlock()
}

func (e *Endpoint) peerSEID(local uint64) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.peers[local]
}

func (e *Endpoint) forgetPeerSEID(local uint64) {
	e.mu.Lock()
	if remote, ok := e.peers[local]; ok {
		delete(e.locals, remote)
		delete(e.peers, local)
	}
	e.mu.Unlock()
}

func (e *Endpoint) forgetLocalSEID(remote uint64) {
	e.mu.Lock()
	if local, ok := e.locals[remote]; ok {
		delete(e.peers, local)
		delete(e.locals, remote)
	}
	e.mu.Unlock()
}

// deliver hands a response to the request waiting for it.
func (e *Endpoint) deliver(hdr Header, msg Message, err error, peer netip.AddrPort) {
	e.mu.Lock()
	p, ok := e.pending[hdr.Seq]
	if ok && p.peer == peer {
		delete(e.pending, hdr.Seq)
		// The answers to our heartbeats and setups tell the peer's
		// Recovery Time Stamp too (§7.4.2.2, §7.4.4.2).
		switch m := msg.(type) {
		case *HeartbeatResponse:
			e.noteRecoveryLocked(peer, m.RecoveryTime)
		case *AssociationSetupResponse:
			e.noteRecoveryLocked(peer, m.RecoveryTime)
		}
	} else {
		ok = false
	}
	e.mu.Unlock()
	if !ok {
		// A late duplicate response or one we never asked for.
		e.stats.unmatched.Add(1)
		return
	}
	p.ch <- result{hdr: hdr, msg: msg, err: err}
}

func (e *Endpoint) nextSeq() uint32 {
	for {
		s := e.seq.Add(1) & maxSeq
		if s != 0 {
			return s
		}
	}
}

// request sends m to peer and waits for its response, retransmitting the
// same octets every T1 up to N1 times (§6.4).
func (e *Endpoint) request(ctx context.Context, peer netip.AddrPort, m Message, seid uint64) (Message, error) {
	if err := e.ctx.Err(); err != nil {
		return nil, ErrClosed
	}
	seq := e.nextSeq()
	b, err := Encode(m, seq, seid)
	if err != nil {
		return nil, err
	}
	p := &pending{peer: peer, ch: make(chan result, 1)}
	e.mu.Lock()
	e.pending[seq] = p
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		if e.pending[seq] == p {
			delete(e.pending, seq)
		}
		e.mu.Unlock()
	}()
	if err := e.send(b, peer); err != nil {
		return nil, err
	}
	timer := time.NewTimer(e.cfg.T1)
	defer timer.Stop()
	for tries := 0; ; {
		select {
		case r := <-p.ch:
			if r.err != nil {
				return r.msg, fmt.Errorf("pfcp: response to message type %d from %s: %w", m.MessageType(), peer, r.err)
			}
			return r.msg, nil
		case <-timer.C:
			if tries >= e.cfg.N1 {
				e.stats.timeouts.Add(1)
				return nil, fmt.Errorf("pfcp: message type %d to %s: %w", m.MessageType(), peer, ErrTimeout)
			}
			tries++
			e.stats.retrans.Add(1)
			if err := e.send(b, peer); err != nil {
				return nil, err
			}
			timer.Reset(e.cfg.T1)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.ctx.Done():
			return nil, ErrClosed
		}
	}
}

func expect[T Message](msg Message, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	r, ok := msg.(T)
	if !ok {
		return zero, fmt.Errorf("pfcp: unexpected response message type %d, want %T", msg.MessageType(), zero)
	}
	return r, nil
}

type udpUserPlane struct {
	e    *Endpoint
	peer netip.AddrPort
}

func (c *udpUserPlane) SetupAssociation(ctx context.Context, req *AssociationSetupRequest) (*AssociationSetupResponse, error) {
	return expect[*AssociationSetupResponse](c.e.request(ctx, c.peer, req, 0))
}

func (c *udpUserPlane) EstablishSession(ctx context.Context, req *SessionEstablishmentRequest) (*SessionEstablishmentResponse, error) {
	// §7.2.2.4.2: the SEID in the header is 0 since the UP SEID is not known yet.
	r, err := expect[*SessionEstablishmentResponse](c.e.request(ctx, c.peer, req, 0))
	if err == nil && r.UPFSEID != nil && r.Cause.Accepted() {
		c.e.setPeerSEID(req.CPFSEID.SEID, r.UPFSEID.SEID)
	}
	return r, err
}

func (c *udpUserPlane) ModifySession(ctx context.Context, upSEID uint64, req *SessionModificationRequest) (*SessionModificationResponse, error) {
	if req.CPFSEID != nil {
		c.e.setPeerSEID(req.CPFSEID.SEID, upSEID)
	}
	return expect[*SessionModificationResponse](c.e.request(ctx, c.peer, req, upSEID))
}

func (c *udpUserPlane) DeleteSession(ctx context.Context, upSEID uint64) (*SessionDeletionResponse, error) {
	r, err := expect[*SessionDeletionResponse](c.e.request(ctx, c.peer, &SessionDeletionRequest{}, upSEID))
	if err == nil && r.Cause.Accepted() {
		c.e.forgetLocalSEID(upSEID)
	}
	return r, err
}

func (c *udpUserPlane) Heartbeat(ctx context.Context) (time.Time, error) {
	r, err := expect[*HeartbeatResponse](c.e.request(ctx, c.peer, &HeartbeatRequest{RecoveryTime: c.e.recovery}, 0))
	if err != nil {
		return time.Time{}, err
	}
	return r.RecoveryTime, nil
}

type udpControlPlane struct {
	e    *Endpoint
	peer netip.AddrPort
}

// Peer is the SMF's PFCP address: what a UPF records of the association
// so that another instance can reach the same SMF (issue 36, UPF-C's
// records).
func (c *udpControlPlane) Peer() netip.AddrPort { return c.peer }

func (c *udpControlPlane) ReportSession(ctx context.Context, cpSEID uint64, req *SessionReportRequest) (*SessionReportResponse, error) {
	return expect[*SessionReportResponse](c.e.request(ctx, c.peer, req, cpSEID))
}

func (c *udpControlPlane) ReportNode(ctx context.Context, req *NodeReportRequest) (*NodeReportResponse, error) {
	return expect[*NodeReportResponse](c.e.request(ctx, c.peer, req, 0))
}
