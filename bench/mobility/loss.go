package mobility

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tern5g/tern/internal/poll"
)

// Loss says where the packets a stream window lost went. A packet the
// window counts as lost was sent and never received, even after the wait
// for those in flight when the window ended (those are late, Window.Late:
// delivered, not lost); each is counted once in one of the places below,
// from the generator to the UE, or in Unattributed (issue 37: a bench lost
// 144 packets once with every drop counter it showed at zero). The
// counters are the bed's over the window; the bed carries only the stream,
// so what they count is the stream's, and where they count more than was
// lost, Overattributed says by how much rather than hiding it.
type Loss struct {
	Lost int `json:"lost"`
	// Generator: packets the UPF's N6 refused (InjectDownlink failed).
	Generator int64 `json:"generator"`
	// UPF: the UPF pipeline's drops by reason; UPFSendErrors, its N3
	// sends that failed; UPFBuffered, how many more packets its buffers
	// held once the in-flight ones had landed than at the window's start.
	UPF           map[string]uint64 `json:"upf,omitempty"`
	UPFSendErrors uint64            `json:"upf_send_errors"`
	UPFBuffered   int               `json:"upf_buffered"`
	// N3Socket: datagrams the kernel dropped at the gNBs' N3 sockets
	// because their receive buffers were full (/proc/net/udp "drops"), a
	// reader that fell behind; N3SocketUnknown says a socket's counters
	// could not be read.
	N3Socket        uint64 `json:"n3_socket"`
	N3SocketUnknown bool   `json:"n3_socket_unknown,omitempty"`
	// RAN: the gNBs' drops (forwarding and hold buffers full, forwarding
	// after the End Marker, G-PDUs for a TEID they no longer have).
	RAN RANDrops `json:"ran"`
	// UE: packets for a session the UE did not have, or that the stream
	// did not take.
	UE int64 `json:"ue"`
	// Unattributed: lost packets none of the above accounts for.
	Unattributed int `json:"unattributed"`
	// Overattributed: how many more drops the counters above count than
	// packets were lost (they count a packet of another window, or one
	// that was delivered after all); 0 where they count no more.
	Overattributed int `json:"overattributed,omitempty"`
}

// RANDrops are the simulated gNBs' downlink drops.
type RANDrops struct {
	Forwarding  int64 `json:"forwarding"`
	Held        int64 `json:"held"`
	UnknownTEID int64 `json:"unknown_teid"`
}

func (d RANDrops) total() int64 { return d.Forwarding + d.Held + d.UnknownTEID }

// attributed is how many lost packets the counters account for.
func (l Loss) attributed() int64 {
	n := l.Generator + int64(l.UPFSendErrors) + int64(l.UPFBuffered) + int64(l.N3Socket) + l.RAN.total() + l.UE
	for _, v := range l.UPF {
		n += int64(v)
	}
	return n
}

// add sums another window's loss into l.
func (l *Loss) add(o Loss) {
	l.Lost += o.Lost
	l.Generator += o.Generator
	for k, v := range o.UPF {
		if l.UPF == nil {
			l.UPF = map[string]uint64{}
		}
		l.UPF[k] += v
	}
	l.UPFSendErrors += o.UPFSendErrors
	l.UPFBuffered += o.UPFBuffered
	l.N3Socket += o.N3Socket
	l.N3SocketUnknown = l.N3SocketUnknown || o.N3SocketUnknown
	l.RAN.Forwarding += o.RAN.Forwarding
	l.RAN.Held += o.RAN.Held
	l.RAN.UnknownTEID += o.RAN.UnknownTEID
	l.UE += o.UE
	l.Unattributed += o.Unattributed
	l.Overattributed += o.Overattributed
}

// String is the attribution in words: "144 lost: 130 dropped by the
// kernel at the gNBs' N3 sockets (receive buffer full), 14 dropped at the
// UE (no such session); 0 unattributed".
func (l Loss) String() string {
	var parts []string
	add := func(n int64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(l.Generator, "refused by the UPF's N6 (generator)")
	for _, k := range slices.Sorted(maps.Keys(l.UPF)) {
		add(int64(l.UPF[k]), "dropped by the UPF ("+k+")")
	}
	add(int64(l.UPFSendErrors), "failed UPF N3 sends")
	add(int64(l.UPFBuffered), "still in the UPF's buffers (held since the window began)")
	add(int64(l.N3Socket), "dropped by the kernel at the gNBs' N3 sockets (receive buffer full)")
	add(l.RAN.Forwarding, "dropped by a source gNB (forwarding)")
	add(l.RAN.Held, "dropped by a target gNB (hold buffer full)")
	add(l.RAN.UnknownTEID, "for a TEID the gNB no longer has")
	add(l.UE, "dropped at the UE (no such session)")
	s := fmt.Sprintf("%d lost: %s; %d unattributed", l.Lost, strings.Join(parts, ", "), l.Unattributed)
	if len(parts) == 0 {
		s = fmt.Sprintf("%d lost; %d unattributed", l.Lost, l.Unattributed)
	}
	if l.Overattributed > 0 {
		s += fmt.Sprintf("; the counters count %d more drops than were lost (another window's packets, or delivered ones)", l.Overattributed)
	}
	if l.N3SocketUnknown {
		s += " (the gNBs' socket drops could not be read)"
	}
	return s
}

// lossCounters are the bed's counters of every place a stream packet can
// be dropped or held, for one UE.
type lossCounters struct {
	refused       int64
	upf           map[string]uint64
	upfTxErrors   uint64
	socket        uint64
	socketUnknown bool
	ran           RANDrops
	ue            int64
	buffered      int // packets in the UPF's buffers
}

func (b *bed) lossCounters(bu *benchUE) lossCounters {
	st := b.core.UPF.Stats()
	c := lossCounters{refused: bu.stream.Refused(), upf: st.Pipeline.Drops, upfTxErrors: st.Driver.TxErrors, buffered: st.Pipeline.Buffered}
	for _, g := range b.gnbs {
		h := g.Counters().Handover
		c.ran.Forwarding += h.ForwardDropped
		c.ran.Held += h.HeldDropped
		c.ran.UnknownTEID += g.N3Counters().UnknownTEID
		if k, err := g.N3Socket(); err == nil {
			c.socket += k.Drops
		} else {
			c.socketUnknown = true
		}
	}
	c.ue = bu.u.Stats().DroppedDownlink
	if ds, ok := bu.u.DataStats(bu.psi); ok {
		c.ue += ds.Unclaimed
	}
	return c
}

// Bounds of the wait for a window's in-flight packets before its losses
// are attributed: the wait ends once nothing has arrived for inFlightQuiet,
// or after inFlightWait (longer than the gNBs' forwarding timeout, the
// longest any of them holds a packet).
const (
	inFlightQuiet = 100 * time.Millisecond
	inFlightWait  = 1500 * time.Millisecond
)

// attributeLoss settles window w of bu's stream, sent in [from, to)
// (settle), and says where the packets it lost went, given the counters
// at the window's start. A window that lost nothing costs nothing.
func (b *bed) attributeLoss(ctx context.Context, bu *benchUE, before lossCounters, w Window, from, to int64, threshold time.Duration) (Window, Loss) {
	w = settle(ctx, bu.stream, w, from, to, threshold)
	if w.Lost == 0 {
		return w, Loss{}
	}
	return w, account(w.Lost, before, b.lossCounters(bu))
}

// settle waits for the packets of window w (s's, sent in [from, to)) that
// were still in flight when it was analysed (UPF, sockets, gNB buffers)
// and analyses it again: those that arrived since are received and
// counted in Late, not lost. It waits only where w lost packets.
func settle(ctx context.Context, s *Stream, w Window, from, to int64, threshold time.Duration) Window {
	if w.Lost == 0 {
		return w
	}
	received := w.Received
	quiet := time.Now()
	poll.Until(ctx, inFlightWait, 10*time.Millisecond, func() bool {
		if n := s.Analyze(from, to, time.Hour).Received; n != received {
			received, quiet = n, time.Now()
		}
		return time.Since(quiet) >= inFlightQuiet
	})
	final := s.Analyze(from, to, threshold)
	final.Late = w.Late + final.Received - w.Received
	return final
}

// account attributes lost packets to the counters' changes from before to
// after.
func account(lost int, before, after lossCounters) Loss {
	l := Loss{Lost: lost}
	l.Generator = after.refused - before.refused
	for k, v := range after.upf {
		if d := v - before.upf[k]; d > 0 {
			if l.UPF == nil {
				l.UPF = map[string]uint64{}
			}
			l.UPF[k] = d
		}
	}
	l.UPFSendErrors = after.upfTxErrors - before.upfTxErrors
	// Packets buffered before the window are an earlier window's; where
	// the buffers shrank, none of this window's is in them.
	l.UPFBuffered = max(0, after.buffered-before.buffered)
	l.N3Socket = after.socket - before.socket
	l.N3SocketUnknown = after.socketUnknown || before.socketUnknown
	l.RAN = RANDrops{
		Forwarding:  after.ran.Forwarding - before.ran.Forwarding,
		Held:        after.ran.Held - before.ran.Held,
		UnknownTEID: after.ran.UnknownTEID - before.ran.UnknownTEID,
	}
	l.UE = after.ue - before.ue
	switch a := int(l.attributed()); {
	case a < lost:
		l.Unattributed = lost - a
	case a > lost:
		l.Overattributed = a - lost
	}
	return l
}
