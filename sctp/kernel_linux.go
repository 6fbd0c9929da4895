//go:build linux

package sctp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	ksctp "github.com/ishidawataru/sctp"
)

// KernelAvailable reports whether the kernel can open SCTP sockets. The
// answer is probed once per process.
func KernelAvailable() bool { return kernelProbe() }

var kernelProbe = sync.OnceValue(func() bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, syscall.IPPROTO_SCTP)
	if err != nil {
		return false // EPROTONOSUPPORT without the sctp module
	}
	_ = syscall.Close(fd)
	return true
})

// Socket options not named by ishidawataru/sctp (linux/sctp.h).
const (
	sctpNoDelay        = 3   // SCTP_NODELAY
	sctpPeerAddrParams = 9   // SCTP_PEER_ADDR_PARAMS
	sppHBEnable        = 1   // SPP_HB_ENABLE
	paddrParamsLen     = 156 // sizeof(struct sctp_paddrparams), packed, aligned(4)
)

func toSCTPAddr(ap netip.AddrPort) *ksctp.SCTPAddr {
	return &ksctp.SCTPAddr{IPAddrs: []net.IPAddr{{IP: ap.Addr().AsSlice()}}, Port: int(ap.Port())}
}

func fromSCTPAddr(a net.Addr) *Addr {
	sa, ok := a.(*ksctp.SCTPAddr)
	if !ok || sa == nil || len(sa.IPAddrs) == 0 {
		return &Addr{}
	}
	ip, _ := netip.AddrFromSlice(sa.IPAddrs[0].IP)
	return &Addr{AddrPort: netip.AddrPortFrom(ip.Unmap(), uint16(sa.Port))}
}

type kernelListener struct {
	ln     *ksctp.SCTPListener
	addr   *Addr
	cfg    Config
	closed atomic.Bool
}

func listenKernel(cfg Config, addr string) (Listener, error) {
	ap, err := resolveAddr(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	ln, err := ksctp.ListenSCTPExt("sctp", toSCTPAddr(ap), ksctp.InitMsg{NumOstreams: cfg.Streams, MaxInstreams: cfg.Streams})
	if err != nil {
		return nil, fmt.Errorf("sctp: kernel listen %s: %w", ap, err)
	}
	if cfg.Tap != nil {
		cfg.Logger.Info("packet tap ignored: kernel SCTP packets are not visible to the process")
	}
	a := fromSCTPAddr(ln.Addr())
	if !a.AddrPort.IsValid() {
		a = &Addr{AddrPort: ap}
	}
	return &kernelListener{ln: ln, addr: a, cfg: cfg}, nil
}

func (l *kernelListener) Accept() (Conn, error) {
	c, err := l.ln.AcceptSCTP()
	if err != nil {
		if l.closed.Load() {
			return nil, fmt.Errorf("sctp: accept: %w", net.ErrClosed)
		}
		return nil, fmt.Errorf("sctp: kernel accept: %w", err)
	}
	kc, err := newKernelConn(c, l.cfg)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return kc, nil
}

func (l *kernelListener) Addr() net.Addr { return l.addr }

func (l *kernelListener) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	if err := l.ln.Close(); err != nil {
		return fmt.Errorf("sctp: close listener: %w", err)
	}
	return nil
}

func dialKernel(ctx context.Context, cfg Config, addr string) (Conn, error) {
	ap, err := resolveAddr(ctx, addr)
	if err != nil {
		return nil, err
	}
	type result struct {
		c   *ksctp.SCTPConn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The library's connect blocks and takes no context.
		c, err := ksctp.DialSCTPExt("sctp", nil, toSCTPAddr(ap), ksctp.InitMsg{NumOstreams: cfg.Streams, MaxInstreams: cfg.Streams})
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("sctp: kernel dial %s: %w", ap, r.err)
		}
		kc, err := newKernelConn(r.c, cfg)
		if err != nil {
			_ = r.c.Close()
			return nil, err
		}
		return kc, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				_ = r.c.Close()
			}
		}()
		return nil, fmt.Errorf("sctp: kernel dial %s: %w", ap, ctx.Err())
	}
}

// kernelConn is one kernel SCTP association (one-to-one style socket).
type kernelConn struct {
	c             *ksctp.SCTPConn
	local, remote *Addr
	out           uint16
	log           *slog.Logger
	closed        atomic.Bool
	buf           []byte
	recvMu        sync.Mutex
}

func newKernelConn(c *ksctp.SCTPConn, cfg Config) (*kernelConn, error) {
	// DATA_IO gives each read its stream and PPID. No other events: the
	// library hands notifications back as data when no handler is set.
	if err := c.SubscribeEvents(ksctp.SCTP_EVENT_DATA_IO); err != nil {
		return nil, fmt.Errorf("sctp: subscribe events: %w", err)
	}
	// Latency over bundling: send each message at once.
	one := int32(1)
	if _, _, err := c.Setsockopt(sctpNoDelay, uintptr(unsafe.Pointer(&one)), 4); err != nil {
		return nil, fmt.Errorf("sctp: SCTP_NODELAY: %w", err)
	}
	if cfg.Heartbeat > 0 {
		if err := setHeartbeat(c, cfg); err != nil {
			return nil, err
		}
	}
	st, err := c.GetStatus()
	if err != nil {
		return nil, fmt.Errorf("sctp: SCTP_STATUS: %w", err)
	}
	kc := &kernelConn{
		c:      c,
		local:  fromSCTPAddr(c.LocalAddr()),
		remote: fromSCTPAddr(c.RemoteAddr()),
		out:    st.Ostreams,
		buf:    make([]byte, maxDatagram),
	}
	kc.log = cfg.Logger.With("local", kc.local.String(), "remote", kc.remote.String())
	return kc, nil
}

// setHeartbeat sets HB.interval and Path.Max.Retrans for the association
// (RFC 6458 §8.1.12, SCTP_PEER_ADDR_PARAMS with a wildcard address).
func setHeartbeat(c *ksctp.SCTPConn, cfg Config) error {
	var p [paddrParamsLen]byte
	binary.NativeEndian.PutUint32(p[132:], uint32(cfg.Heartbeat.Milliseconds()))
	binary.NativeEndian.PutUint16(p[136:], uint16(min(cfg.MaxMissedHeartbeats, 0xffff)))
	binary.NativeEndian.PutUint32(p[146:], sppHBEnable)
	if _, _, err := c.Setsockopt(sctpPeerAddrParams, uintptr(unsafe.Pointer(&p[0])), paddrParamsLen); err != nil {
		return fmt.Errorf("sctp: SCTP_PEER_ADDR_PARAMS: %w", err)
	}
	return nil
}

func (k *kernelConn) Send(stream uint16, ppid uint32, data []byte) error {
	if len(data) == 0 {
		return ErrEmptyMessage
	}
	if stream >= k.out {
		return fmt.Errorf("%w: stream %d, outbound streams %d", ErrInvalidStream, stream, k.out)
	}
	// The library converts PPID to network byte order itself.
	if _, err := k.c.SCTPWrite(data, &ksctp.SndRcvInfo{Stream: stream, PPID: ppid}); err != nil {
		if k.closed.Load() {
			return net.ErrClosed
		}
		return fmt.Errorf("sctp: send: %w", err)
	}
	return nil
}

func (k *kernelConn) Recv() (Message, error) {
	k.recvMu.Lock()
	defer k.recvMu.Unlock()
	n, info, err := k.c.SCTPRead(k.buf)
	if k.closed.Load() {
		return Message{}, net.ErrClosed
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Message{}, io.EOF
		}
		return Message{}, fmt.Errorf("sctp: recv: %w", err)
	}
	if n <= 0 {
		return Message{}, io.EOF
	}
	m := Message{Data: append([]byte(nil), k.buf[:n]...)}
	if info != nil {
		m.Stream, m.PPID = info.Stream, info.PPID
	}
	return m, nil
}

func (k *kernelConn) LocalAddr() net.Addr     { return k.local }
func (k *kernelConn) RemoteAddr() net.Addr    { return k.remote }
func (k *kernelConn) OutboundStreams() uint16 { return k.out }

// Close sends SHUTDOWN (SCTP_EOF) and closes the socket.
func (k *kernelConn) Close() error {
	if k.closed.Swap(true) {
		return nil
	}
	if err := k.c.Close(); err != nil {
		return fmt.Errorf("sctp: close: %w", err)
	}
	return nil
}
