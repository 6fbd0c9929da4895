package sctp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	pion "github.com/pion/sctp"
	"github.com/pion/transport/v5/deadline"
)

const (
	// maxPendingHandshakes caps associations between INIT and COOKIE ECHO,
	// so that an INIT flood cannot exhaust memory.
	maxPendingHandshakes = 1024
	// vconnQueueLen is the number of datagrams queued per association;
	// beyond it datagrams are dropped (SCTP retransmits) rather than
	// stalling the one socket every association shares.
	vconnQueueLen = 512
	// maxDatagram is the largest UDP payload.
	maxDatagram    = 65535
	acceptQueueLen = 128
)

// udpListener serves every association on one UDP socket (RFC 6951 §5.4:
// associations are told apart by the remote UDP address). Each remote gets a
// vconn, the net.Conn its pion association reads from and writes to.
//
// Accepted associations keep using the socket after Listener.Close, as
// accepted TCP connections outlive their listener; the socket closes when the
// listener and its last association are closed.
type udpListener struct {
	cfg      Config
	log      *slog.Logger
	pc       *net.UDPConn
	addr     *Addr
	local    netip.AddrPort // bound UDP address, for the tap
	sctpPort uint16

	acceptq  chan *assocConn
	closing  chan struct{}
	loopDone chan struct{}

	mu      sync.RWMutex
	assocs  map[netip.AddrPort]*vconn
	pending int
	refs    int // the listener itself + every vconn; the socket closes at zero

	closeOnce sync.Once
}

func listenUDP(cfg Config, addr string) (Listener, error) {
	ap, err := resolveAddr(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("sctp: listen %q: SCTP port must not be zero", addr)
	}
	udpAddr := netip.AddrPortFrom(ap.Addr(), uint16(cfg.UDPPort))
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(udpAddr))
	if err != nil {
		return nil, fmt.Errorf("sctp: listen UDP %s: %w", udpAddr, err)
	}
	local := unmapAddrPort(pc.LocalAddr().(*net.UDPAddr).AddrPort())
	l := &udpListener{
		cfg:      cfg,
		log:      cfg.Logger.With("listen", ap.String(), "udp", local.String()),
		pc:       pc,
		addr:     &Addr{AddrPort: ap, UDP: local},
		local:    local,
		sctpPort: ap.Port(),
		acceptq:  make(chan *assocConn, acceptQueueLen),
		closing:  make(chan struct{}),
		loopDone: make(chan struct{}),
		assocs:   make(map[netip.AddrPort]*vconn),
		refs:     1,
	}
	go l.readLoop()
	l.log.Debug("SCTP over UDP listener started")
	return l, nil
}

func (l *udpListener) Addr() net.Addr { return l.addr }

// Accept implements Listener.
func (l *udpListener) Accept() (Conn, error) {
	select {
	case <-l.closing:
		return nil, fmt.Errorf("sctp: accept: %w", net.ErrClosed)
	default:
	}
	select {
	case c := <-l.acceptq:
		c.log.Debug("association accepted")
		return c, nil
	case <-l.closing:
		return nil, fmt.Errorf("sctp: accept: %w", net.ErrClosed)
	}
}

// Close implements Listener: no new associations; queued and half-open ones
// are aborted; accepted ones stay up.
func (l *udpListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.mu.Lock()
		var half []*vconn
		for _, vc := range l.assocs {
			if !vc.accepted {
				half = append(half, vc)
			}
		}
		l.mu.Unlock()
		for _, vc := range half {
			_ = vc.Close() // ends the handshake, see handshake
		}
		for {
			select {
			case c := <-l.acceptq:
				c.abort(fmt.Errorf("%w: listener closed", ErrAborted))
				_ = c.Close()
				continue
			default:
			}
			break
		}
		l.release()
	})
	return nil
}

// release drops one reference to the socket.
func (l *udpListener) release() {
	l.mu.Lock()
	l.refs--
	last := l.refs == 0
	l.mu.Unlock()
	if last {
		_ = l.pc.Close()
		<-l.loopDone
	}
}

func (l *udpListener) readLoop() {
	defer close(l.loopDone)
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := l.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Debug("UDP read", "err", err)
			continue
		}
		from = unmapAddrPort(from)
		if l.cfg.Tap != nil {
			l.cfg.Tap.Packet(false, l.local, from, buf[:n])
		}
		l.dispatch(from, buf[:n])
	}
}

// dispatch hands a datagram to the association of its sender, or opens one
// for an INIT. b is only valid during the call.
func (l *udpListener) dispatch(from netip.AddrPort, b []byte) {
	l.mu.RLock()
	vc := l.assocs[from]
	l.mu.RUnlock()
	if vc != nil {
		vc.deliver(b)
		return
	}
	info, err := inspectPacket(b)
	if err != nil {
		l.log.Debug("dropping malformed packet", "from", from, "err", err)
		return
	}
	if !info.isInit() {
		l.replyOOTB(from, info, false) // RFC 9260 §8.4
		return
	}
	if info.dstPort != l.sctpPort {
		l.log.Debug("INIT for another SCTP port", "from", from, "port", info.dstPort)
		l.replyOOTB(from, info, true)
		return
	}
	vc, err = l.newVconn(from)
	if err != nil {
		l.log.Info("rejecting INIT", "from", from, "err", err)
		l.replyOOTB(from, info, true)
		return
	}
	vc.deliver(b)
	go l.handshake(vc, from, info.srcPort)
}

func (l *udpListener) newVconn(from netip.AddrPort) (*vconn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closing:
		return nil, net.ErrClosed
	default:
	}
	if l.pending >= maxPendingHandshakes {
		return nil, errors.New("too many pending handshakes")
	}
	vc := &vconn{
		l:        l,
		remote:   from,
		in:       make(chan *[]byte, vconnQueueLen),
		closed:   make(chan struct{}),
		deadline: deadline.New(),
	}
	l.assocs[from] = vc
	l.pending++
	l.refs++
	return vc, nil
}

// handshake runs pion's server side of the four-way handshake on vc.
func (l *udpListener) handshake(vc *vconn, from netip.AddrPort, peerPort uint16) {
	// pion has no handshake deadline: closing vc ends a stuck one.
	timer := time.AfterFunc(l.cfg.HandshakeTimeout, func() { _ = vc.Close() })
	in := newInbox()
	opts := append([]pion.ServerOption{
		pion.WithNetConn(vc),
		pion.WithName(from.String()),
		pion.WithLoggerFactory(pionLoggerFactory{l.cfg.Logger}),
		pion.WithEnableInterleaving(false),
		pion.WithStreams(l.cfg.Streams, l.cfg.Streams),
	}, serverOptions(lowLatencyOptions(in))...)
	assoc, err := pion.ServerWithOptions(opts...)
	timer.Stop()
	l.mu.Lock()
	l.pending--
	vc.accepted = err == nil
	l.mu.Unlock()
	if err != nil {
		l.log.Debug("handshake failed", "from", from, "err", err)
		_ = vc.Close()
		return
	}
	remote := &Addr{AddrPort: netip.AddrPortFrom(from.Addr(), peerPort), UDP: from}
	local := &Addr{AddrPort: netip.AddrPortFrom(l.addr.AddrPort.Addr(), l.sctpPort), UDP: l.local}
	c := newAssocConn(assoc, in, local, remote, l.cfg)
	select {
	case l.acceptq <- c:
	case <-l.closing:
		c.abort(fmt.Errorf("%w: listener closed", ErrAborted))
		_ = c.Close()
	}
}

func (l *udpListener) replyOOTB(to netip.AddrPort, info packetInfo, reject bool) {
	reply := ootbReply(info, reject)
	if reply == nil {
		return
	}
	l.write(reply, to)
}

func (l *udpListener) write(b []byte, to netip.AddrPort) (int, error) {
	if l.cfg.Tap != nil {
		l.cfg.Tap.Packet(true, l.local, to, b)
	}
	return l.pc.WriteToUDPAddrPort(b, to)
}

// remove forgets vc and drops its socket reference.
func (l *udpListener) remove(vc *vconn) {
	l.mu.Lock()
	if l.assocs[vc.remote] == vc {
		delete(l.assocs, vc.remote)
	}
	l.mu.Unlock()
	l.release()
}

// datagramPool recycles the buffers that carry datagrams from the read loop
// to an association's reader.
var datagramPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// vconn is one association's view of the shared socket: a connected net.Conn
// for pion.
type vconn struct {
	l        *udpListener
	remote   netip.AddrPort
	in       chan *[]byte
	closed   chan struct{}
	deadline *deadline.Deadline
	accepted bool // guarded by l.mu

	closeOnce sync.Once
}

// deliver queues a copy of b, dropping it when the association is closed or
// does not keep up.
func (vc *vconn) deliver(b []byte) {
	p := datagramPool.Get().(*[]byte)
	*p = append((*p)[:0], b...)
	select {
	case <-vc.closed:
		datagramPool.Put(p)
	case vc.in <- p:
	default:
		datagramPool.Put(p)
		vc.l.log.Debug("association queue full, dropping datagram", "from", vc.remote)
	}
}

func (vc *vconn) Read(b []byte) (int, error) {
	select {
	case p := <-vc.in:
		n := copy(b, *p)
		datagramPool.Put(p)
		return n, nil
	case <-vc.closed:
		return 0, io.EOF
	case <-vc.deadline.Done():
		return 0, os.ErrDeadlineExceeded
	}
}

func (vc *vconn) Write(b []byte) (int, error) {
	select {
	case <-vc.closed:
		return 0, net.ErrClosed
	default:
	}
	return vc.l.write(b, vc.remote)
}

func (vc *vconn) Close() error {
	vc.closeOnce.Do(func() {
		close(vc.closed)
		vc.l.remove(vc)
	})
	return nil
}

func (vc *vconn) LocalAddr() net.Addr  { return net.UDPAddrFromAddrPort(vc.l.local) }
func (vc *vconn) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(vc.remote) }

func (vc *vconn) SetDeadline(t time.Time) error { return vc.SetReadDeadline(t) }

func (vc *vconn) SetReadDeadline(t time.Time) error {
	vc.deadline.Set(t)
	return nil
}

// SetWriteDeadline is a no-op: writes to a UDP socket do not block.
func (vc *vconn) SetWriteDeadline(time.Time) error { return nil }
