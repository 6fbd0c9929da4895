package upfu

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
)

// GTP-U path supervision (TS 29.281 §7.2.1, TS 23.007 §20.3.1): the UPF
// sends Echo Requests to every remote GTP-U peer that a FAR of an
// installed session forwards to, and a peer that answers none of a
// request and its N3 retransmissions is a path failure, reported to the
// PathReporter (UPF-C, which sends PFCP Node Reports); a failed peer that
// answers again is reported recovered. The peer set and the (peer, TEID)
// map that Error Indications are resolved with are kept by Install and
// Remove, on the control side; the workers only look them up and pass
// Echo Responses on through a bounded channel.

// Path supervision defaults (Config).
const (
	// DefaultEchoInterval is TS 29.281 §7.2.1's bound: Echo Requests no
	// more often than every 60 s on a path.
	DefaultEchoInterval = 60 * time.Second
	DefaultEchoT3       = 2 * time.Second
	DefaultEchoN3       = 3
)

// PathReporter receives the path events of supervision.
type PathReporter interface {
	// PathFailure: peer answered no Echo Request of a round (the request
	// and its retransmissions).
	PathFailure(peer netip.Addr)
	// PathRecovery: a peer reported failed answers again.
	PathRecovery(peer netip.Addr)
}

type pathReporterBox struct{ r PathReporter }

// SetPathReporter sets where path failures and recoveries go (UPF-C).
// Until it is set they are only counted and logged.
func (p *Pipeline) SetPathReporter(r PathReporter) { p.pathReporter.Store(&pathReporterBox{r}) }

// tunnel is a remote GTP-U tunnel: peer address and TEID.
type tunnel struct {
	peer netip.Addr
	teid uint32
}

type tunnelMap = map[tunnel]*entry

// tunnelsOf returns the distinct tunnels that s's FARs forward to: the
// Outer Header Creations of the FARs with FORW (TS 29.244 §5.2.3). A FAR
// that buffers or drops sends nothing, so its peer need not be watched
// and an Error Indication about it concerns no traffic.
func tunnelsOf(s *rules.Session) []tunnel {
	var out []tunnel
	for _, pdr := range s.PDRs {
		if pdr == nil || pdr.FAR == nil || pdr.FAR.Encap == nil || pdr.FAR.Action&rules.ActionForward == 0 {
			continue
		}
		t := tunnel{pdr.FAR.Encap.Peer.Addr().Unmap(), pdr.FAR.Encap.TEID}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func peersOf(ts []tunnel) []netip.Addr {
	var out []netip.Addr
	for _, t := range ts {
		if !slices.Contains(out, t.peer) {
			out = append(out, t.peer)
		}
	}
	return out
}

func (p *Pipeline) lookupTunnel(peer netip.Addr, teid uint32) *entry {
	return (*p.byTunnel[teid%shards].Load())[tunnel{peer, teid}]
}

// setTunnel copies the tunnel's shard with t set to e (nil: deleted).
func (p *Pipeline) setTunnel(t tunnel, e *entry) {
	sh := &p.byTunnel[t.teid%shards]
	cur := *sh.Load()
	next := make(tunnelMap, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	if e == nil {
		delete(next, t)
	} else {
		next[t] = e
	}
	sh.Store(&next)
}

// retunnelLocked moves the tunnel map and the peer set from old's tunnels
// to e's (either may be nil: a new or removed session). p.mu held.
func (p *Pipeline) retunnelLocked(old, e *entry) {
	var oldT, newT []tunnel
	if old != nil {
		oldT = old.tunnels
	}
	if e != nil {
		newT = e.tunnels
	}
	for _, t := range oldT {
		if !slices.Contains(newT, t) && p.lookupTunnel(t.peer, t.teid) == old {
			p.setTunnel(t, nil)
		}
	}
	for _, t := range newT {
		if p.lookupTunnel(t.peer, t.teid) != e {
			p.setTunnel(t, e)
		}
	}
	oldP, newP := peersOf(oldT), peersOf(newT)
	changed := false
	for _, a := range oldP {
		if !slices.Contains(newP, a) {
			if p.peerRefs[a]--; p.peerRefs[a] <= 0 {
				delete(p.peerRefs, a)
				changed = true
			}
		}
	}
	for _, a := range newP {
		if !slices.Contains(oldP, a) {
			if p.peerRefs[a]++; p.peerRefs[a] == 1 {
				changed = true
			}
		}
	}
	if changed {
		select {
		case p.pathKick <- struct{}{}:
		default: // a kick is pending: the supervisor reads the set then
		}
	}
}

// peers returns the supervised peer set.
func (p *Pipeline) peers() []netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]netip.Addr, 0, len(p.peerRefs))
	for a := range p.peerRefs {
		out = append(out, a)
	}
	return out
}

// echoResponse is an Echo Response a worker received.
type echoResponse struct {
	peer netip.Addr
	seq  uint16
}

// pathState is the supervision of one peer.
type pathState struct {
	seq     uint16
	pending bool // an Echo Request with seq is unanswered
	tries   int  // retransmissions of it
	// due is when T3-RESPONSE expires (pending) or the next request goes.
	due  time.Time
	down bool
}

// supervise runs path supervision until ctx ends.
func (p *Pipeline) supervise(ctx context.Context) {
	paths := make(map[netip.Addr]*pathState)
	var seq uint16
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	resync := func(now time.Time) {
		cur := p.peers()
		for a, st := range paths {
			if !slices.Contains(cur, a) {
				// No session forwards there any more: supervision stops,
				// and a failed path is not reported recovered.
				if st.down {
					p.pathsDown.Add(-1)
				}
				delete(paths, a)
			}
		}
		for _, a := range cur {
			if paths[a] == nil {
				// The first request goes one interval on: the session
				// was just set up with a peer that answered NGAP, and
				// the peer is not sent more than one request per
				// interval (§7.2.1) when its sessions come and go.
				paths[a] = &pathState{due: now.Add(p.cfg.EchoInterval)}
			}
		}
		p.pathsSupervised.Store(int64(len(paths)))
	}
	resync(time.Now())
	for {
		now := time.Now()
		next := now.Add(time.Hour)
		for a, st := range paths {
			if !now.Before(st.due) {
				p.pathDue(a, st, &seq, now)
			}
			if st.due.Before(next) {
				next = st.due
			}
		}
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return
		case <-p.pathKick:
			resync(time.Now())
		case r := <-p.echoes:
			st := paths[r.peer]
			if st == nil || !st.pending || st.seq != r.seq {
				// A late answer to a request given up on, or one never
				// sent: it proves nothing about the current round.
				p.echoUnmatched.Add(1)
				continue
			}
			st.pending = false
			st.due = time.Now().Add(p.cfg.EchoInterval)
			if st.down {
				st.down = false
				p.pathsDown.Add(-1)
				p.log.Info("upfu: GTP-U path recovered", "peer", r.peer)
				if b := p.pathReporter.Load(); b != nil {
					b.r.PathRecovery(r.peer)
				}
			}
		case <-timer.C:
		}
	}
}

// pathDue acts on a peer whose timer expired: a new Echo Request, a
// retransmission, or, after N3 of them, a path failure (TS 29.281
// §7.2.1: T3-RESPONSE and N3-REQUESTS; TS 23.007 §20.3.1).
func (p *Pipeline) pathDue(a netip.Addr, st *pathState, seq *uint16, now time.Time) {
	switch {
	case !st.pending:
		*seq++
		st.seq, st.pending, st.tries = *seq, true, 0
	case st.tries < p.cfg.EchoN3:
		st.tries++ // the same request again, same sequence number
	default:
		st.pending = false
		st.due = now.Add(p.cfg.EchoInterval)
		if !st.down {
			st.down = true
			p.pathsDown.Add(1)
			p.pathFailures.Add(1)
			p.log.Warn("upfu: GTP-U path failure: the peer answers no Echo Request", "peer", a, "requests", p.cfg.EchoN3+1)
			if b := p.pathReporter.Load(); b != nil {
				b.r.PathFailure(a)
			}
		}
		// A failed path is still probed every interval, to see it recover.
		return
	}
	p.sendEcho(a, st.seq)
	st.due = now.Add(p.cfg.EchoT3)
}

// sendEcho sends an Echo Request to the peer's GTP-U port (TS 29.281
// §4.4.2.1) through the sink, like buffer drains.
func (p *Pipeline) sendEcho(a netip.Addr, seq uint16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := gtpu.AppendEchoRequest(p.ctlBytes(gtpu.EchoRequestLen)[:0], seq)
	p.ctlOut = append(p.ctlOut, Packet{Buf: b, Len: len(b), Peer: netip.AddrPortFrom(a, gtpu.Port), Port: PortN3})
	if p.sink.Load() != nil {
		p.echoSent.Add(1)
	}
	p.flushCtl()
}
