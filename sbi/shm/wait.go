package shm

import (
	"context"
	"time"
)

// Waiting for answers. There is no reader goroutine: the callers waiting on
// a client take turns reading the response ring. Whoever holds the reader
// token (c.reading) reads, sleeping on the ring's futex when it is empty,
// and hands each answer to its caller; the others wait on their waiter's
// channel and on c.turn, through which the token is offered when its holder
// leaves. A single caller thus reads its own answer from the ring the
// moment the futex wakes it: no goroutine hand-off on the path (a hand-off
// costs the Go scheduler a thread wake-up, as much as the futex itself).
// With many callers, an answer for someone else costs one channel send.
//
// Invariant: while a call is in flight, some caller holds the token or is
// about to try for it. A caller counts itself in c.inflight before it
// tries; a holder clears c.reading before it looks at c.inflight and offers
// the token if anyone is left (sequentially consistent atomics: one of the
// two sees the other).

// maxReaderSleep bounds a reading caller's futex sleep when its context can
// be cancelled, so that a cancellation (unlike a deadline, which the sleep
// itself honours) is noticed within it.
const maxReaderSleep = 2 * time.Millisecond

// wait waits for call id's answer in w (or its failure). It reports true if
// the context ended first and the call was abandoned.
func (c *Client) wait(ctx context.Context, w *waiter, id uint64) (abandoned bool) {
	defer c.passTurn()
	defer c.inflight.Add(-1)
	for {
		if w.pending.Load() != id {
			<-w.done
			return false
		}
		if c.reading.CompareAndSwap(false, true) {
			abandoned = c.read(ctx, w, id)
			c.reading.Store(false)
			if abandoned {
				return true
			}
			if w.pending.Load() != id {
				continue // answered
			}
			// The connection is being torn down: its teardown fails
			// the call once it has the token.
		}
		select {
		case <-w.done:
			return false
		case <-c.turn:
		case <-ctx.Done():
			if w.pending.CompareAndSwap(id, 0) {
				return true
			}
			<-w.done
			return false
		}
	}
}

// passTurn offers the reader token to a waiting caller if nobody holds it
// and calls are in flight. A stale offer is harmless: its taker just tries
// for the token.
func (c *Client) passTurn() {
	if !c.reading.Load() && c.inflight.Load() > 0 {
		select {
		case c.turn <- struct{}{}:
		default:
		}
	}
}

// read holds the reader token until call id is answered, failed, or
// abandoned at ctx's end (reported true).
func (c *Client) read(ctx context.Context, w *waiter, id uint64) bool {
	cn := c.cur.Load()
	if cn == nil {
		// Torn down: the teardown failed every call it found pending, ours
		// included, before it let go of the token.
		return false
	}
	for {
		if cn.stop.Load() {
			return false
		}
		c.drain(cn)
		if w.pending.Load() != id {
			return false
		}
		sleep := c.cfg.CheckInterval
		if ctx.Done() != nil {
			sleep = min(sleep, maxReaderSleep)
		}
		if dl, ok := ctx.Deadline(); ok {
			sleep = min(sleep, time.Until(dl))
		}
		if sleep <= 0 || ctx.Err() != nil {
			if w.pending.CompareAndSwap(id, 0) {
				return true
			}
			return false // answered meanwhile: the token is in w.done
		}
		if !cn.resp.poll(c.cfg.BusyPoll, &cn.stop) {
			w.ts = timespec(sleep)
			cn.resp.sleep(&cn.stop, &w.ts)
		}
	}
}

// drain hands every answer in the response ring to its caller.
func (c *Client) drain(cn *conn) {
	for {
		slot, h, what := cn.resp.peek()
		switch what {
		case peekEmpty:
			return
		case peekResync:
			c.st.corrupt.Add(1)
			continue
		}
		r, payload, err := decodeRecord(slot, cn.gen, cn.maxPayload)
		if err != nil {
			c.st.corrupt.Add(1)
		} else {
			c.deliver(r, payload)
		}
		cn.resp.release(h)
	}
}

// deliver gives an answer to its waiting caller, or counts it as late.
func (c *Client) deliver(r record, payload []byte) {
	w := c.ws.lookup(r.id)
	if w == nil || r.id>>idxBits == 0 {
		c.st.corrupt.Add(1)
		return
	}
	if !w.pending.CompareAndSwap(r.id, 0) {
		c.st.late.Add(1)
		return
	}
	if r.flags&flagBadAnswer != 0 {
		w.resp, w.err = nil, c.errBadAnswer
	} else {
		w.resp, w.err = append(w.dst[:0], payload...), nil
	}
	w.status = r.status
	w.done <- struct{}{}
}
