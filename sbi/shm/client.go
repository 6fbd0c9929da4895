package shm

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Client calls one service. It is safe for concurrent use: callers share the
// request ring through a mutex (so the ring keeps a single producer), and
// the response ring through a reader token: one waiting caller at a time
// reads it, handing other callers' answers to them by request ID (see
// wait.go).
type Client struct {
	cfg     Config
	p       paths
	srvLock *os.File // probed (never held) to see whether the server lives

	mu       sync.Mutex           // the request ring's producer side, and swaps of cur
	cur      atomic.Pointer[conn] // nil while the server is down
	ws       waiters
	reading  atomic.Bool   // the reader token: held by the caller reading the response ring
	turn     chan struct{} // offers the token to a waiting caller; cap 1
	inflight atomic.Int32  // calls published and not yet returned
	st       counters

	errDown, errClosed, errBadAnswer error // built once: failing fast allocates nothing

	done   chan struct{}
	closed atomic.Bool
	monWG  sync.WaitGroup

	// connMu serialises attaching and detaching: the monitor's probes, a
	// call that finds the client detached, Close. It guards the fields
	// below.
	connMu    sync.Mutex
	lastGen   uint64
	connected bool
}

// Dial attaches to the service name in cfg.Dir. It succeeds even when no
// server is up yet: calls then fail with ErrPeerDown until one is. The
// client connects (and reconnects after a server restart) by itself within
// CheckInterval, and at once when a call finds it detached.
func Dial(cfg Config, name string) (*Client, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ensureDir(cfg.Dir); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:          cfg,
		p:            newPaths(cfg.Dir, name),
		ws:           newWaiters(cfg.MaxInFlight),
		done:         make(chan struct{}),
		turn:         make(chan struct{}, 1),
		errDown:      fmt.Errorf("shm: service %q: %w", name, ErrPeerDown),
		errClosed:    fmt.Errorf("shm: client of %q: %w", name, ErrClosed),
		errBadAnswer: fmt.Errorf("shm: service %q: handler answer length out of range: %w", name, ErrTooLarge),
	}
	if c.srvLock, err = openLock(c.p.serverLock); err != nil {
		return nil, err
	}
	_ = c.tryConnect() // a server that is not up yet is not an error
	c.monWG.Add(1)
	go c.monitor()
	return c, nil
}

// Connected reports whether the client is attached to a live server.
func (c *Client) Connected() bool { return c.cur.Load() != nil }

// MaxMessage is the largest request the current server accepts (0 while
// down).
func (c *Client) MaxMessage() int {
	if cn := c.cur.Load(); cn != nil {
		return cn.maxPayload
	}
	return 0
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats { return c.st.snapshot() }

// Call sends req as operation op and waits for the answer, which it appends
// to dst[:0] (pass a buffer with room for it to avoid allocating). It
// returns at ctx's deadline or cancellation (an error wrapping ErrTimeout and
// the context's error; an answer that comes later is dropped and counted as
// Late), and at once with an error wrapping ErrPeerDown when the server is
// down or dies during the call.
func (c *Client) Call(ctx context.Context, op uint16, req []byte, dst []byte) (resp []byte, status uint16, err error) {
	cn := c.cur.Load()
	if cn == nil {
		if cn = c.connectNow(); cn == nil {
			return nil, 0, c.downErr()
		}
	}
	if len(req) > cn.maxPayload {
		return nil, 0, tooLarge(len(req), cn.maxPayload)
	}
	var w *waiter
	select {
	case w = <-c.ws.free:
	default:
		select {
		case w = <-c.ws.free:
		case <-ctx.Done():
			c.st.timeouts.Add(1)
			return nil, 0, c.timeoutErr(ctx)
		case <-c.done:
			return nil, 0, c.errClosed
		}
	}
	w.seq++
	id := w.seq<<idxBits | w.idx
	w.dst = dst
	w.pending.Store(id)
	c.inflight.Add(1)
	if err := c.send(ctx, record{id: id, op: op}, req); err != nil {
		if !w.pending.CompareAndSwap(id, 0) {
			<-w.done // a teardown failed the call meanwhile: take its token
		}
		c.inflight.Add(-1)
		c.release(w)
		return nil, 0, err
	}
	if c.wait(ctx, w, id) {
		c.release(w)
		c.st.timeouts.Add(1)
		return nil, 0, c.timeoutErr(ctx)
	}
	resp, status, err = w.resp, w.status, w.err
	c.release(w)
	if err != nil {
		if err == c.errDown {
			c.st.peerDown.Add(1)
		}
		return nil, 0, err
	}
	c.st.calls.Add(1)
	return resp, status, nil
}

// send publishes one request on the current connection.
func (c *Client) send(ctx context.Context, r record, req []byte) error {
	c.mu.Lock()
	for {
		cn := c.cur.Load()
		if cn == nil {
			c.mu.Unlock()
			return c.downErr()
		}
		if len(req) > cn.maxPayload {
			c.mu.Unlock()
			return tooLarge(len(req), cn.maxPayload)
		}
		if slot, t, ok := cn.req.reserve(); ok {
			r.gen = cn.gen
			encodeRecord(slot, r, req)
			cn.req.publish(t)
			c.mu.Unlock()
			return nil
		}
		// Full: the server's leader drains it unless every worker is busy.
		// Back off without the lock, so that the monitor can tear a dead
		// connection down meanwhile.
		cn.req.kick()
		c.mu.Unlock()
		if ctx.Err() != nil {
			c.st.timeouts.Add(1)
			return c.timeoutErr(ctx)
		}
		time.Sleep(20 * time.Microsecond)
		c.mu.Lock()
	}
}

// connectNow attaches to the server if one is up, for a call that found
// the client detached (a server that just restarted is reached without
// waiting for the monitor's next probe); nil when none is.
func (c *Client) connectNow() *conn {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if cn := c.cur.Load(); cn != nil || c.closed.Load() {
		return cn
	}
	_ = c.tryConnect()
	return c.cur.Load()
}

func (c *Client) release(w *waiter) {
	w.dst, w.resp, w.err = nil, nil, nil
	c.ws.free <- w
}

func (c *Client) downErr() error {
	if c.closed.Load() {
		return c.errClosed
	}
	c.st.peerDown.Add(1)
	return c.errDown
}

func (c *Client) timeoutErr(ctx context.Context) error {
	cause := ctx.Err()
	if cause == nil { // the reader saw the deadline pass before the context's timer fired
		cause = context.DeadlineExceeded
	}
	return fmt.Errorf("shm: call to %q: %w (%w)", c.p.name, ErrTimeout, cause)
}

func tooLarge(n, max int) error {
	return fmt.Errorf("shm: request of %d bytes exceeds the %d-byte slot payload: %w", n, max, ErrTooLarge)
}

// Close fails the outstanding calls with ErrClosed, detaches (the server
// frees the channel) and stops the client's goroutines.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.done)
	c.monWG.Wait()
	c.connMu.Lock()
	if cn := c.cur.Load(); cn != nil {
		c.teardown(cn, c.errClosed)
	}
	c.connMu.Unlock()
	return c.srvLock.Close()
}
