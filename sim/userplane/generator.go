// Package userplane is the simulated UEs' data: traffic generators built
// on in-memory IPv4 packets (package ipv4pkt) with the matching receive side
// (an echo prober that measures round trips and counts losses, a bulk UDP
// sender that counts what it sent and what came back), and, with root, one
// TUN device per PDU session with policy routing so that ordinary tools
// (ping, curl, iperf3) run over the session (the way UERANSIM's uesimtun
// devices work).
//
// The package knows nothing of GTP-U or NAS: a session is reached through a
// Sender (the UE's uplink) and gives downlink packets to whatever Receiver
// is attached.
package userplane

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/tern5g/tern/internal/ipv4pkt"
)

// SendFunc sends one uplink IP packet through a session. The callee does
// not keep pkt.
type SendFunc func(pkt []byte) error

// Receiver takes downlink packets of a session. Receive reports whether
// the packet was meant for it (then nobody else gets it). It is called on
// the gNB's receiving goroutine and must not block.
type Receiver interface {
	Receive(pkt []byte) bool
}

// PingConfig is one run of echo requests.
type PingConfig struct {
	Src, Dst netip.Addr
	ID       uint16        // ICMP identifier; replies must carry it
	Count    int           // echo requests to send (default 1)
	Interval time.Duration // between requests (default 10 ms; negative = back to back)
	Size     int           // echo payload bytes (default 56, as ping); at least 8 carry the send time
	// Timeout is how long to wait for replies after the last request
	// (default 1 s). A request without a reply by then is lost.
	Timeout time.Duration
}

// PingResult counts a run honestly: every request is either answered (one
// RTT) or lost.
type PingResult struct {
	Sent, Received int
	Lost           int
	SendErrors     int // requests the session refused to send (also counted lost)
	Duplicates     int // replies for a sequence number already answered
	RTTs           []time.Duration
}

// Pinger sends ICMP echo requests through a session and matches the
// replies: attach it as the session's Receiver for the duration of Run.
type Pinger struct {
	cfg PingConfig

	mu      sync.Mutex
	sentAt  []time.Time // by sequence number; zero = not sent (or send failed)
	replied []bool
	res     PingResult
	all     chan struct{} // closed when every sent request has its reply and sending is over
	closed  bool
	sending bool
}

// NewPinger checks cfg and fills its defaults.
func NewPinger(cfg PingConfig) (*Pinger, error) {
	if !cfg.Src.Is4() || !cfg.Dst.Is4() {
		return nil, fmt.Errorf("userplane: ping %s -> %s: IPv4 addresses needed", cfg.Src, cfg.Dst)
	}
	if cfg.Count <= 0 {
		cfg.Count = 1
	}
	if cfg.Count > 1<<16 {
		return nil, fmt.Errorf("userplane: ping count %d: at most 65536 (16-bit sequence numbers)", cfg.Count)
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Millisecond
	}
	if cfg.Size <= 0 {
		cfg.Size = 56
	}
	if cfg.Size < 8 {
		cfg.Size = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	return &Pinger{
		cfg:     cfg,
		sentAt:  make([]time.Time, cfg.Count),
		replied: make([]bool, cfg.Count),
		all:     make(chan struct{}),
	}, nil
}

// Receive consumes the echo replies of this run.
func (p *Pinger) Receive(pkt []byte) bool {
	ip, err := ipv4pkt.ParseIPv4(pkt)
	if err != nil || ip.Protocol != ipv4pkt.ProtoICMP || ip.Src != p.cfg.Dst || ip.Dst != p.cfg.Src {
		return false
	}
	e, ok := ipv4pkt.ParseICMPEcho(ip.Payload)
	if !ok || e.Type != ipv4pkt.ICMPEchoReply || e.ID != p.cfg.ID {
		return false
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := int(e.Seq)
	if seq >= len(p.sentAt) || p.sentAt[seq].IsZero() {
		return true // ours, but for nothing we sent: ignore
	}
	if p.replied[seq] {
		p.res.Duplicates++
		return true
	}
	p.replied[seq] = true
	p.res.Received++
	p.res.RTTs = append(p.res.RTTs, now.Sub(p.sentAt[seq]))
	p.checkDoneLocked()
	return true
}

func (p *Pinger) checkDoneLocked() {
	if !p.sending && !p.closed && p.res.Received == p.res.Sent {
		p.closed = true
		close(p.all)
	}
}

// Run sends the requests with send and waits for the replies (which reach
// the Pinger through Receive). It returns an error only if ctx ends; loss
// is in the result.
func (p *Pinger) Run(ctx context.Context, send SendFunc) (PingResult, error) {
	payload := make([]byte, p.cfg.Size)
	for i := range payload[8:] {
		payload[8+i] = byte(i)
	}
	buf := make([]byte, 0, ipv4pkt.HeaderLen+8+p.cfg.Size)
	p.mu.Lock()
	p.sending = true
	p.mu.Unlock()
	var tick *time.Ticker
	if p.cfg.Interval > 0 && p.cfg.Count > 1 {
		tick = time.NewTicker(p.cfg.Interval)
		defer tick.Stop()
	}
	var ctxErr error
	for seq := 0; seq < p.cfg.Count; seq++ {
		if seq > 0 && tick != nil {
			select {
			case <-tick.C:
			case <-ctx.Done():
				ctxErr = ctx.Err()
			}
		}
		if ctxErr != nil {
			break
		}
		now := time.Now()
		binary.BigEndian.PutUint64(payload, uint64(now.UnixNano()))
		buf = ipv4pkt.AppendICMPEcho(buf[:0], p.cfg.Src, p.cfg.Dst, p.cfg.ID, uint16(seq), payload)
		p.mu.Lock()
		p.sentAt[seq] = now
		p.res.Sent++
		p.mu.Unlock()
		if err := send(buf); err != nil {
			p.mu.Lock()
			p.sentAt[seq] = time.Time{}
			p.res.SendErrors++
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	p.sending = false
	p.checkDoneLocked()
	p.mu.Unlock()
	if ctxErr == nil {
		t := time.NewTimer(p.cfg.Timeout)
		select {
		case <-p.all:
		case <-t.C:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		t.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	res := p.res
	res.RTTs = append([]time.Duration(nil), p.res.RTTs...)
	res.Lost = res.Sent - res.Received
	if ctxErr != nil {
		return res, fmt.Errorf("userplane: ping %s: %w", p.cfg.Dst, ctxErr)
	}
	return res, nil
}

// TransferConfig is a short bulk UDP transfer.
type TransferConfig struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16 // default 40000 and 9 (discard)
	Bytes            int    // payload bytes to send in all (default 1 MiB)
	Size             int    // payload bytes per datagram (default 1200)
	// Rate caps the offered load in bit/s of payload; 0 = as fast as the
	// session takes them.
	Rate int64
	// Linger is how long to wait after the last datagram for traffic from
	// Dst:DstPort (an echo service) (default 200 ms).
	Linger time.Duration
	// Echo says the far end echoes every datagram (UDP echo, port 7): the
	// transfer then waits (up to Linger) for all of them and counts the
	// missing ones as lost.
	Echo bool
}

// TransferResult is what a transfer sent and what came back.
type TransferResult struct {
	PacketsSent, BytesSent int64 // payload bytes handed to the session
	SendErrors             int64
	Duration               time.Duration // first send to last send
	PacketsReceived        int64         // datagrams from Dst:DstPort to Src:SrcPort
	BytesReceived          int64
	Lost                   int64 // with Echo: datagrams sent but not echoed
}

// UplinkBps is the offered uplink throughput (payload bits per second).
func (r TransferResult) UplinkBps() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.BytesSent) * 8 / r.Duration.Seconds()
}

// Transfer sends a stream of UDP datagrams and counts what returns; attach
// it as the session's Receiver for the duration of Run.
type Transfer struct {
	cfg TransferConfig

	mu       sync.Mutex
	res      TransferResult
	sending  bool
	complete chan struct{} // with Echo: every datagram came back
	closed   bool
}

// NewTransfer checks cfg and fills its defaults.
func NewTransfer(cfg TransferConfig) (*Transfer, error) {
	if !cfg.Src.Is4() || !cfg.Dst.Is4() {
		return nil, fmt.Errorf("userplane: transfer %s -> %s: IPv4 addresses needed", cfg.Src, cfg.Dst)
	}
	if cfg.SrcPort == 0 {
		cfg.SrcPort = 40000
	}
	if cfg.DstPort == 0 {
		cfg.DstPort = 9
	}
	if cfg.Bytes <= 0 {
		cfg.Bytes = 1 << 20
	}
	if cfg.Size <= 0 {
		cfg.Size = 1200
	}
	if cfg.Size > 65507 {
		return nil, errors.New("userplane: transfer datagram size above 65507")
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 200 * time.Millisecond
	}
	return &Transfer{cfg: cfg, complete: make(chan struct{})}, nil
}

// Receive counts the datagrams coming back from the far end.
func (t *Transfer) Receive(pkt []byte) bool {
	ip, err := ipv4pkt.ParseIPv4(pkt)
	if err != nil || ip.Protocol != ipv4pkt.ProtoUDP || ip.Src != t.cfg.Dst || ip.Dst != t.cfg.Src {
		return false
	}
	u, ok := ipv4pkt.ParseUDP(ip.Payload)
	if !ok || u.SrcPort != t.cfg.DstPort || u.DstPort != t.cfg.SrcPort {
		return false
	}
	t.mu.Lock()
	t.res.PacketsReceived++
	t.res.BytesReceived += int64(len(u.Payload))
	t.checkDoneLocked()
	t.mu.Unlock()
	return true
}

func (t *Transfer) checkDoneLocked() {
	if t.cfg.Echo && !t.sending && !t.closed && t.res.PacketsReceived >= t.res.PacketsSent {
		t.closed = true
		close(t.complete)
	}
}

// Run sends the datagrams with send, paced to cfg.Rate, then lingers for
// returning traffic. It returns an error only if ctx ends.
func (t *Transfer) Run(ctx context.Context, send SendFunc) (TransferResult, error) {
	payload := make([]byte, t.cfg.Size)
	buf := make([]byte, 0, ipv4pkt.HeaderLen+8+t.cfg.Size)
	t.mu.Lock()
	t.sending = true
	t.mu.Unlock()
	start := time.Now()
	var sent int
	var ctxErr error
	for sent < t.cfg.Bytes {
		n := min(t.cfg.Size, t.cfg.Bytes-sent)
		if t.cfg.Rate > 0 {
			// Pace: the n bytes may leave once sent*8/Rate has elapsed.
			due := start.Add(time.Duration(float64(sent) * 8 / float64(t.cfg.Rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				tm := time.NewTimer(d)
				select {
				case <-tm.C:
				case <-ctx.Done():
					tm.Stop()
					ctxErr = ctx.Err()
				}
			}
		} else if err := ctx.Err(); err != nil {
			ctxErr = err
		}
		if ctxErr != nil {
			break
		}
		binary.BigEndian.PutUint64(payload, uint64(sent))
		buf = ipv4pkt.AppendUDP(buf[:0], t.cfg.Src, t.cfg.Dst, t.cfg.SrcPort, t.cfg.DstPort, payload[:n])
		err := send(buf)
		t.mu.Lock()
		if err != nil {
			t.res.SendErrors++
		} else {
			t.res.PacketsSent++
			t.res.BytesSent += int64(n)
		}
		t.mu.Unlock()
		sent += n
	}
	t.mu.Lock()
	t.res.Duration = time.Since(start)
	t.sending = false
	t.checkDoneLocked()
	t.mu.Unlock()
	if ctxErr == nil {
		tm := time.NewTimer(t.cfg.Linger)
		select {
		case <-t.complete:
		case <-tm.C:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		tm.Stop()
	}
	t.mu.Lock()
	res := t.res
	t.mu.Unlock()
	if t.cfg.Echo {
		res.Lost = max(0, res.PacketsSent-res.PacketsReceived) + res.SendErrors
	} else {
		res.Lost = res.SendErrors
	}
	if ctxErr != nil {
		return res, fmt.Errorf("userplane: transfer to %s: %w", t.cfg.Dst, ctxErr)
	}
	return res, nil
}
