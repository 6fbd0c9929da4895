// Package sctp is tern's N2 transport: one SCTP abstraction (listen, accept,
// dial; messages carry stream id and PPID) with two implementations.
//
//   - kernel: Linux kernel SCTP through github.com/ishidawataru/sctp, used
//     wherever the kernel has SCTP (real gNBs and RAN simulators use it).
//   - udp: userspace SCTP (github.com/pion/sctp, patched for interoperability,
//     see third_party/pionsctp/README.md) encapsulated in UDP per RFC 6951,
//     on UDP port 9899 by default. One UDP socket serves every association
//     of a listener.
//
// Transport "auto" picks kernel when KernelAvailable reports it and udp
// otherwise.
package sctp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// Transport selects the SCTP implementation.
type Transport string

// Transports.
const (
	TransportAuto   Transport = "auto"   // kernel when available, else udp
	TransportKernel Transport = "kernel" // Linux kernel SCTP
	TransportUDP    Transport = "udp"    // userspace SCTP over UDP (RFC 6951)
)

// Defaults applied to a zero Config.
const (
	// DefaultUDPPort is the IANA port for SCTP over UDP (RFC 6951 §5.1).
	DefaultUDPPort = 9899
	// DefaultStreams is the number of outbound streams requested (and
	// inbound streams allowed).
	DefaultStreams = 16
	// DefaultHeartbeat is the HEARTBEAT interval (RFC 9260 §15 HB.interval).
	DefaultHeartbeat = 30 * time.Second
	// DefaultMaxMissedHeartbeats is how many consecutive unanswered
	// HEARTBEATs declare the peer dead (RFC 9260 §15 Path.Max.Retrans).
	DefaultMaxMissedHeartbeats = 5
	// DefaultHandshakeTimeout bounds how long a listener keeps state for a
	// peer that sent INIT but did not complete the handshake.
	DefaultHandshakeTimeout = 10 * time.Second
)

// Config configures Listen and Dial. The zero value is usable.
type Config struct {
	// Transport picks the implementation; "" means auto.
	Transport Transport `yaml:"transport"`
	// UDPPort is the RFC 6951 encapsulation port (default 9899). A listener
	// binds it; a dialer sends to it from an ephemeral port.
	UDPPort int `yaml:"udpPort"`
	// Streams is the number of outbound streams requested and inbound
	// streams allowed (default 16). The usable outbound count after the
	// handshake is Conn.OutboundStreams.
	Streams uint16 `yaml:"streams,omitempty"`
	// Heartbeat is the HEARTBEAT interval (default 30s); negative disables
	// heartbeats.
	Heartbeat time.Duration `yaml:"heartbeat,omitempty"`
	// MaxMissedHeartbeats is the number of consecutive unanswered
	// HEARTBEATs after which the association is aborted (default 5).
	MaxMissedHeartbeats int `yaml:"maxMissedHeartbeats,omitempty"`
	// HandshakeTimeout bounds a listener's half-open associations
	// (default 10s). Userspace only.
	HandshakeTimeout time.Duration `yaml:"handshakeTimeout,omitempty"`
	// Tap, when set, sees every UDP datagram sent and received (userspace
	// transport only; kernel SCTP packets are not visible to us).
	Tap PacketTap `yaml:"-"`
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger `yaml:"-"`
}

// PacketTap observes encapsulated SCTP packets, e.g. to write a pcap of N2.
// It is called synchronously on the I/O path: keep it fast and do not retain
// udpPayload after returning.
type PacketTap interface {
	Packet(outbound bool, local, remote netip.AddrPort, udpPayload []byte)
}

// Message is one SCTP user message.
type Message struct {
	Stream uint16
	PPID   uint32 // plain host value, e.g. 60 for NGAP
	Data   []byte
	// Stamp is the number an N2 front end gave the message (issue 36 §3,
	// docs/resiliency.md): it logs the message until the unit that
	// handles it acknowledges the stamp (Acker), and replays it to a
	// replica after a failover otherwise. 0 on a plain association.
	Stamp uint64
}

// ErrFrontLost is what a Conn whose association an N2 front end holds
// fails with when the link to that front end is gone: the association
// itself lives on there, and the unit that takes over gets it. A receiver
// must not handle it as an association that ended (no connection of it is
// lost: they are its successor's).
var ErrFrontLost = errors.New("sctp: link to the N2 front end lost (the association lives on there)")

// Acker is implemented by a Conn whose messages carry stamps (Message.Stamp):
// a front end's link to the unit behind it. The receiver acknowledges a
// stamp once the state the message changed is committed (held by a
// replica), or once it is done with a message that changed nothing; the
// front end then drops the message from its replay log. Acknowledging a
// stamp twice, or 0, is harmless.
type Acker interface {
	Ack(stamp uint64)
}

// Conn is one SCTP association.
type Conn interface {
	// Send queues data as one user message on stream with the given PPID and
	// puts it on the wire at once. stream must be below OutboundStreams.
	Send(stream uint16, ppid uint32, data []byte) error
	// Recv returns the next whole user message from any stream; messages of
	// one stream arrive in order. After the peer shuts the association down
	// it returns io.EOF; after Close, net.ErrClosed.
	Recv() (Message, error)
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// OutboundStreams is the negotiated number of outbound streams,
	// min(requested, peer's MIS) (RFC 9260 §5.1.1).
	OutboundStreams() uint16
	// Close ends the association gracefully (SHUTDOWN), falling back to
	// ABORT when the peer does not answer.
	Close() error
}

// Serve calls h with every message of c, in the order Recv would return
// them, until the association ends; it then returns the error Recv would
// (io.EOF after the peer's SHUTDOWN, net.ErrClosed after Close).
//
// Where the transport allows (userspace SCTP), h runs on the goroutine that
// processes c's incoming packets, so a message is handled without a
// goroutine handoff: for request/response signalling on a lightly loaded
// host the handoff (which may wake an idle CPU) costs more than handling
// the message. h therefore must not block for long (no further packet of c
// is processed meanwhile) and must not call c.Close; it may call c.Send.
// Other transports loop on Recv.
func Serve(c Conn, h func(Message)) error {
	if s, ok := c.(interface{ serve(func(Message)) error }); ok {
		return s.serve(h)
	}
	for {
		m, err := c.Recv()
		if err != nil {
			return err
		}
		h(m)
	}
}

// Listener accepts SCTP associations.
type Listener interface {
	Accept() (Conn, error)
	Addr() net.Addr
	Close() error
}

// Errors.
var (
	// ErrInvalidStream is returned by Send for a stream id at or above the
	// negotiated outbound stream count.
	ErrInvalidStream = errors.New("sctp: stream id not below negotiated outbound streams")
	// ErrEmptyMessage is returned by Send for empty data: SCTP cannot carry
	// an empty user message (RFC 9260 §3.3.1).
	ErrEmptyMessage = errors.New("sctp: empty message")
	// ErrPeerDead means the peer stopped answering HEARTBEATs.
	ErrPeerDead = errors.New("sctp: peer unreachable (heartbeats unanswered)")
	// ErrAborted means the association ended abnormally (ABORT sent or
	// received, protocol error).
	ErrAborted = errors.New("sctp: association aborted")
	// ErrKernelUnavailable means kernel SCTP was requested but the kernel
	// has none.
	ErrKernelUnavailable = errors.New("sctp: kernel SCTP not available")
)

// Listen starts accepting associations on addr ("127.0.0.1:38412"; the port
// is the SCTP port).
func Listen(cfg Config, addr string) (Listener, error) {
	cfg = cfg.withDefaults()
	t, err := cfg.transport()
	if err != nil {
		return nil, err
	}
	if t == TransportKernel {
		return listenKernel(cfg, addr)
	}
	return listenUDP(cfg, addr)
}

// Dial establishes an association with addr ("10.0.0.1:38412").
func Dial(ctx context.Context, cfg Config, addr string) (Conn, error) {
	cfg = cfg.withDefaults()
	t, err := cfg.transport()
	if err != nil {
		return nil, err
	}
	if t == TransportKernel {
		return dialKernel(ctx, cfg, addr)
	}
	return dialUDP(ctx, cfg, addr)
}

func (c Config) withDefaults() Config {
	if c.Transport == "" {
		c.Transport = TransportAuto
	}
	if c.UDPPort == 0 {
		c.UDPPort = DefaultUDPPort
	}
	if c.Streams == 0 {
		c.Streams = DefaultStreams
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.MaxMissedHeartbeats <= 0 {
		c.MaxMissedHeartbeats = DefaultMaxMissedHeartbeats
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// transport resolves auto and validates the choice.
func (c Config) transport() (Transport, error) {
	switch c.Transport {
	case TransportAuto:
		if KernelAvailable() {
			return TransportKernel, nil
		}
		return TransportUDP, nil
	case TransportKernel:
		if !KernelAvailable() {
			return "", ErrKernelUnavailable
		}
		return TransportKernel, nil
	case TransportUDP:
		if c.UDPPort < 1 || c.UDPPort > 65535 {
			return "", fmt.Errorf("sctp: invalid UDP port %d", c.UDPPort)
		}
		return TransportUDP, nil
	default:
		return "", fmt.Errorf("sctp: unknown transport %q (want auto, kernel or udp)", c.Transport)
	}
}

// Addr is an SCTP endpoint address. For SCTP over UDP, UDP is the
// encapsulation endpoint the packets travel between.
type Addr struct {
	AddrPort netip.AddrPort // IP and SCTP port
	UDP      netip.AddrPort // zero for kernel SCTP
}

// Network returns "sctp" or, for SCTP over UDP, "sctp/udp".
func (a *Addr) Network() string {
	if a.UDP.IsValid() {
		return "sctp/udp"
	}
	return "sctp"
}

// String returns "ip:port" (the SCTP port).
func (a *Addr) String() string { return a.AddrPort.String() }

// resolveAddr parses "host:port", resolving a host name if needed.
func resolveAddr(ctx context.Context, addr string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return unmapAddrPort(ap), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sctp: address %q: %w", addr, err)
	}
	p, err := net.DefaultResolver.LookupPort(ctx, "udp", port)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sctp: address %q: %w", addr, err)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sctp: resolve %q: %w", host, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("sctp: resolve %q: no addresses", host)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(p)), nil
}

func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
