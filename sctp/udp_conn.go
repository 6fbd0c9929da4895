package sctp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	pion "github.com/pion/sctp"
)

// A graceful Close waits for the peer's SHUTDOWN ACK for a few smoothed
// round trips, at least minShutdownWait and at most maxShutdownWait, then
// falls back to ABORT. A peer that is gone never answers: a fixed 2 s wait
// made every stop of a core with a vanished gNB take 2 s, while a live
// peer answers within a round trip or two. The minimum covers data still
// unacknowledged at Close, which SHUTDOWN waits for: the peer's delayed
// SACK (200 ms, RFC 4960 §6.2) and a round trip.
const (
	minShutdownWait = 400 * time.Millisecond
	maxShutdownWait = 2 * time.Second
)

// shutdownWait is the graceful Close's wait for an association whose
// smoothed RTT is srttMs milliseconds (0: not measured yet).
func shutdownWait(srttMs float64) time.Duration {
	d := time.Duration(4 * srttMs * float64(time.Millisecond))
	return min(max(d, minShutdownWait), maxShutdownWait)
}

// recvQueueLen is how many received messages wait for Recv; beyond it the
// association's read loop waits, so its socket (or, for a listener, its
// datagram queue) fills and the peer retransmits.
const recvQueueLen = 256

// lowLatencyOptions are the pion options every association of ours uses
// (third_party/pionsctp/tern_lowlatency.go): N2 is small request/response
// messages, where pion's goroutine handoffs (writer wake-up, one reader per
// stream) and lone SACK packets cost more than the protocol work.
//   - Send writes the packet on the caller's goroutine;
//   - received messages go from pion's read loop straight into the Recv
//     queue, in arrival order (per-stream order is what SCTP guarantees;
//     arrival order across streams is a bonus over per-stream readers);
//   - a pending SACK rides in the next DATA packet.
func lowLatencyOptions(in *inbox) []pion.AssociationOption {
	return []pion.AssociationOption{
		pion.WithDirectWrite(),
		pion.WithSackBundling(),
		pion.WithMessageHandler(in.deliver),
	}
}

func clientOptions(o []pion.AssociationOption) []pion.ClientOption {
	out := make([]pion.ClientOption, len(o))
	for i, v := range o {
		out[i] = v
	}
	return out
}

func serverOptions(o []pion.AssociationOption) []pion.ServerOption {
	out := make([]pion.ServerOption, len(o))
	for i, v := range o {
		out[i] = v
	}
	return out
}

// inbox receives messages from pion's read loop for Recv. It exists before
// the association does, since messages may arrive during the handshake's
// last step.
type inbox struct {
	recv    chan Message
	closeCh chan struct{} // closed by Close

	// handler, once set by serve, gets messages directly (no recv queue).
	mu      sync.Mutex
	handler func(Message)
}

func newInbox() *inbox {
	return &inbox{recv: make(chan Message, recvQueueLen), closeCh: make(chan struct{})}
}

// deliver runs on pion's read loop, without the association lock. data is
// ours (pion allocates every packet buffer afresh).
func (in *inbox) deliver(stream uint16, ppi pion.PayloadProtocolIdentifier, data []byte) {
	m := Message{Stream: stream, PPID: uint32(ppi), Data: data}
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h != nil {
		h(m)
		return
	}
	select {
	case in.recv <- m:
	case <-in.closeCh:
	}
}

// serve implements Serve: messages queued so far go to h first, then h is
// installed for pion's read loop. Holding mu while draining keeps a
// concurrent deliver waiting, so h sees messages in order and never
// concurrently.
func (c *assocConn) serve(h func(Message)) error {
	in := c.inbox
	in.mu.Lock()
	if in.handler != nil {
		in.mu.Unlock()
		return errors.New("sctp: Serve called twice")
	}
	for drained := false; !drained; {
		select {
		case m := <-in.recv:
			h(m)
		default:
			drained = true
		}
	}
	in.handler = h
	in.mu.Unlock()
	select {
	case <-c.closeCh:
		return net.ErrClosed
	case <-c.drained:
		// pion's read loop, the only caller of h now, has exited.
		return c.terminalErr()
	}
}

// assocConn adapts a pion association to Conn.
type assocConn struct {
	assoc  *pion.Association
	inbox  *inbox
	local  *Addr
	remote *Addr
	log    *slog.Logger
	out    uint16 // negotiated outbound streams
	in     uint16 // negotiated inbound streams

	streams []atomic.Pointer[pion.Stream] // opened for sending, by id

	recv    chan Message
	closeCh chan struct{} // closed by Close
	drained chan struct{} // closed once the association ended and pion's read loop exited

	mu     sync.Mutex
	endErr error // why the association ended, first reason wins

	closeOnce sync.Once
	closeErr  error

	hb *heartbeat
}

func newAssocConn(assoc *pion.Association, in *inbox, local, remote *Addr, cfg Config) *assocConn {
	c := &assocConn{
		assoc:   assoc,
		local:   local,
		remote:  remote,
		log:     cfg.Logger.With("local", local.String(), "remote", remote.String()),
		out:     assoc.MaxOutboundStreams(),
		in:      assoc.MaxInboundStreams(),
		inbox:   in,
		recv:    in.recv,
		closeCh: in.closeCh,
		drained: make(chan struct{}),
	}
	c.streams = make([]atomic.Pointer[pion.Stream], c.out)
	go c.acceptLoop()
	if cfg.Heartbeat > 0 {
		c.hb = startHeartbeat(c, cfg.Heartbeat, cfg.MaxMissedHeartbeats)
	}
	return c
}

func (c *assocConn) LocalAddr() net.Addr     { return c.local }
func (c *assocConn) RemoteAddr() net.Addr    { return c.remote }
func (c *assocConn) OutboundStreams() uint16 { return c.out }

// Send implements Conn. pion copies data into its DATA chunks; the packet
// is written on this goroutine (WithDirectWrite), with no bundling delay.
func (c *assocConn) Send(stream uint16, ppid uint32, data []byte) error {
	if len(data) == 0 {
		return ErrEmptyMessage
	}
	if stream >= c.out {
		return fmt.Errorf("%w: stream %d, outbound streams %d", ErrInvalidStream, stream, c.out)
	}
	s := c.streams[stream].Load()
	if s == nil {
		var err error
		if s, err = c.openStream(stream); err != nil {
			return err
		}
	}
	if _, err := s.WriteSCTP(data, pion.PayloadProtocolIdentifier(ppid)); err != nil {
		return c.sendErr(err)
	}
	return nil
}

func (c *assocConn) openStream(id uint16) (*pion.Stream, error) {
	s, err := c.assoc.OpenStream(id, pion.PayloadTypeUnknown)
	if err != nil {
		return nil, c.sendErr(err)
	}
	// pion returns the same *Stream for a stream the peer opened first.
	if !c.streams[id].CompareAndSwap(nil, s) {
		return c.streams[id].Load(), nil
	}
	return s, nil
}

func (c *assocConn) sendErr(err error) error {
	select {
	case <-c.closeCh:
		return net.ErrClosed
	default:
	}
	if e := c.terminalErr(); e != nil {
		return fmt.Errorf("sctp: send: association ended: %w", e)
	}
	return fmt.Errorf("sctp: send: %w", err)
}

// Recv implements Conn.
func (c *assocConn) Recv() (Message, error) {
	select {
	case m := <-c.recv:
		return m, nil
	case <-c.closeCh:
		return Message{}, net.ErrClosed
	case <-c.drained:
		// pion's read loop has exited, so what is queued is all there is.
		select {
		case m := <-c.recv:
			return m, nil
		default:
			return Message{}, c.terminalErr()
		}
	}
}

// Close implements Conn: SHUTDOWN (RFC 9260 §9.2), ABORT when the peer does
// not complete it in time.
func (c *assocConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closeCh)
		if c.hb != nil {
			c.hb.stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWait(c.assoc.SRTT()))
		err := c.assoc.Shutdown(ctx)
		cancel()
		if err != nil && c.assoc.CloseReason() == nil {
			c.log.Debug("graceful shutdown failed, aborting", "err", err)
			c.assoc.Abort("closing")
		}
		if err := c.assoc.Close(); err != nil && !isClosedErr(err) {
			c.closeErr = fmt.Errorf("sctp: close: %w", err)
		}
		<-c.drained
	})
	return c.closeErr
}

// abort ends the association with an ABORT, recording why.
func (c *assocConn) abort(reason error) {
	c.setEnd(reason)
	c.assoc.Abort(reason.Error())
}

// acceptLoop records the streams the peer opens (so Send reuses them) and
// notices the end of the association: pion closes its accept queue when its
// read loop has exited, so every message has been delivered to recv by then.
func (c *assocConn) acceptLoop() {
	for {
		s, err := c.assoc.AcceptStream()
		if err != nil {
			c.setEnd(c.endReason())
			// Release the transport now (for a listener, the peer's slot in
			// the demultiplexer) rather than when the user calls Close.
			_ = c.assoc.Close()
			close(c.drained)
			return
		}
		if id := s.StreamIdentifier(); id < c.out {
			c.streams[id].CompareAndSwap(nil, s)
		}
	}
}

// endReason maps pion's reason for ending to our errors.
func (c *assocConn) endReason() error {
	select {
	case <-c.closeCh:
		return net.ErrClosed
	default:
	}
	err := c.assoc.CloseReason()
	if err == nil || isClosedErr(err) {
		// The transport was closed by pion after SHUTDOWN COMPLETE.
		return io.EOF
	}
	return fmt.Errorf("%w: %w", ErrAborted, err)
}

func (c *assocConn) setEnd(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr == nil {
		c.endErr = err
		c.log.Debug("association ended", "reason", err)
	}
}

func (c *assocConn) terminalErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}

// heartbeat sends a HEARTBEAT every interval and aborts the association after
// maxMissed consecutive ones went unanswered (RFC 9260 §8.3). It runs on a
// timer, so an idle association costs no goroutine.
type heartbeat struct {
	c         *assocConn
	interval  time.Duration
	maxMissed int

	mu       sync.Mutex
	timer    *time.Timer
	stopped  bool
	lastAcks uint64
	sent     bool
	missed   int
}

func startHeartbeat(c *assocConn, interval time.Duration, maxMissed int) *heartbeat {
	h := &heartbeat{c: c, interval: interval, maxMissed: maxMissed}
	h.mu.Lock()
	h.timer = time.AfterFunc(interval, h.tick)
	h.mu.Unlock()
	return h
}

func (h *heartbeat) tick() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	acks := h.c.assoc.HeartbeatAcks()
	switch {
	case acks != h.lastAcks:
		h.missed = 0
	case h.sent:
		h.missed++
	}
	h.lastAcks = acks
	if h.missed >= h.maxMissed {
		h.stopped = true
		h.mu.Unlock()
		h.c.log.Info("peer unreachable, aborting association", "missed_heartbeats", h.missed)
		h.c.abort(ErrPeerDead)
		return
	}
	h.c.assoc.ActiveHeartbeat()
	h.sent = true
	h.timer.Reset(h.interval)
	h.mu.Unlock()
}

func (h *heartbeat) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
}
