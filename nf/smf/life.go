package smf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// n4Life is one life of a UPF as the SMF knows it: from the first
// association to the UPF's loss of its state (a restart, TS 29.244 §19A,
// or an association it says it no longer has), across re-associations
// that lost nothing. A session records the life it was established in
// (smContext.upLife) and every N4 request for it runs under the life's
// context, which ends with the life, before the SMF associates again and
// restores: a request the PFCP endpoint still retransmits (§6.4) stops
// there, so that it never reaches the restored session the new life gave
// the same SEID, and one not yet sent is not sent.
//
// Lives are numbered (gen: 1 for the first, +1 each time one ends), so
// that a record names the life a session was established in and a
// restored SMF can tell whether that is still the UPF's current one
// (record.go).
type n4Life struct {
	ctx    context.Context
	cancel context.CancelFunc
	gen    uint64
}

func newLife(parent context.Context, gen uint64) *n4Life {
	ctx, cancel := context.WithCancel(parent)
	return &n4Life{ctx: ctx, cancel: cancel, gen: gen}
}

func (l *n4Life) ended() bool { return l.ctx.Err() != nil }

// number is l's number, 0 for no life (nil).
func (l *n4Life) number() uint64 {
	if l == nil {
		return 0
	}
	return l.gen
}

// errLifeEnded is an N4 request not sent, or given up, because the UPF
// lost the state it was for.
var errLifeEnded = errors.New("the UPF lost its PFCP association since")

// n4Context bounds one N4 request sent in life: it ends at timeout, with
// ctx and with the life. When the life or ctx has ended already there is
// nothing to send: an error says why.
func n4Context(ctx context.Context, life *n4Life, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	switch {
	case life.ended():
		return nil, nil, errLifeEnded
	case ctx.Err() != nil:
		return nil, nil, fmt.Errorf("%w: %w", errNoAnswer, ctx.Err())
	case timeout <= 0:
		return nil, nil, fmt.Errorf("%w: no time left", errNoAnswer)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(life.ctx, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

// endLife ends u's current life: the UPF lost every PFCP session of the
// SMF. Its N4 requests in flight stop, and the UE addresses held back for
// it (quarantine) are free again: the UPF routes none of them now. Run by
// u's supervisor, inside a change of u's record (changeUPF), which orders
// it with the deletions that end meanwhile (deletionEnded).
func (s *SMF) endLife(u *upfNode) {
	old := u.life.Load()
	u.life.Store(newLife(s.group.Context(), old.gen+1))
	old.cancel()
	if n := u.quarantine.releaseAll(); n > 0 {
		s.log.Info("UE addresses held back for the UPF returned to their pools: it lost its sessions", "upf", u.name, "addresses", n)
	}
}

// quarantine holds the UE addresses of sessions whose deletion the UPF
// neither confirmed nor showed to be needless (no answer, or a
// rejection other than "Session context not found"): it may still route
// them to the deleted session, so a new UE given one would have its
// downlink sent to another UE's tunnel. They go back to their pools when
// the UPF's life ends (endLife).
type quarantine struct {
	mu    sync.Mutex
	addrs []quarantined
}

type quarantined struct {
	dnn *dnnConf // whose pool ip is of
	ip  netip.Addr
}

func (q *quarantine) add(dnn *dnnConf, ip netip.Addr) {
	q.mu.Lock()
	q.addrs = append(q.addrs, quarantined{dnn, ip})
	q.mu.Unlock()
}

func (q *quarantine) releaseAll() int {
	q.mu.Lock()
	addrs := q.addrs
	q.addrs = nil
	q.mu.Unlock()
	for _, a := range addrs {
		a.dnn.pool.release(a.ip)
	}
	return len(addrs)
}

// list copies the addresses held back.
func (q *quarantine) list() []quarantined {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.addrs)
}

func (q *quarantine) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.addrs)
}
