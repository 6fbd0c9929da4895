package shm

import (
	"time"

	"golang.org/x/sys/unix"
)

// Serving model: a leader and standbys per channel, over a pool of workers.
//
// The leader is the one goroutine that sleeps on a channel's request-ring
// futex. A request wakes it; it copies the request out (under the channel's
// consumer mutex, so the ring stays single-consumer), sets the ring's wake
// word to "wake a standby" and runs the handler itself. Standbys sleep on a
// second futex (an event count), which producers ring only while the leader
// is in a handler: a request that finds the leader busy wakes a standby,
// which serves it the same way, first recruiting another standby from the
// pool if it was the last. So one slow handler blocks neither other clients
// (each channel has its own leader) nor this client's next request.
//
// Why not a reader that dispatches to a pool: handing a request to another
// goroutine costs the Go scheduler a thread wake-up, as much as the
// cross-process futex wake itself. Why not symmetric watchers on one futex:
// the kernel wakes futex waiters in FIFO order, so they would take turns,
// each finding its thread's P gone cold or retaken. With a leader,
// sequential traffic wakes the same thread every time and costs no
// hand-off; the standby sleeps undisturbed. (The leader also clears "wake
// a standby" before it publishes an answer: the client's next request,
// often provoked by that answer, would otherwise find the word still set
// and wake a standby for nothing, which measurably fattened the tail.)
//
// Workers are shared by all channels and never exit before Close: the
// steady state allocates nothing. When all MaxWorkers are busy, recruiting
// waits for one to return.
type worker struct {
	s      *Server
	assign chan role
	req    []byte // the request, copied out of the ring
	resp   []byte // the handler writes its answer here
	ts     unix.Timespec
}

// role is a worker's assignment: lead ch, or stand by in it.
type role struct {
	ch     *channel
	leader bool
}

// startLeader and recruit add a leader or a standby to ch.
func (s *Server) startLeader(ch *channel) {
	ch.roles.Add(1)
	s.assign(role{ch: ch, leader: true})
}

func (s *Server) recruit(ch *channel) {
	ch.roles.Add(1)
	ch.standbys.Add(1)
	s.assign(role{ch: ch})
}

// assign gives a worker the role r, which the caller counted already.
func (s *Server) assign(r role) {
	select {
	case w := <-s.idle:
		w.assign <- r
		return
	default:
	}
	if s.nworkers.Add(1) <= int32(s.cfg.MaxWorkers) {
		w := &worker{
			s:      s,
			assign: make(chan role, 1),
			req:    make([]byte, s.maxPayload),
			resp:   make([]byte, s.maxPayload),
			ts:     timespec(s.cfg.CheckInterval),
		}
		s.workerWG.Add(1)
		go w.run()
		w.assign <- r
		return
	}
	s.nworkers.Add(-1)
	select {
	case w := <-s.idle:
		w.assign <- r
	case <-s.done:
		if !r.leader {
			r.ch.standbys.Add(-1)
		}
		r.ch.roles.Done()
	}
}

func (w *worker) run() {
	defer w.s.workerWG.Done()
	for r := range w.assign {
		if r.leader {
			w.lead(r.ch)
		} else {
			w.standBy(r.ch)
		}
		w.s.idle <- w
	}
}

// The wake word of a channel's request ring says whom a producer must wake:
// the leader (asleep on the word), a standby (asleep on the event count)
// because the leader is in a handler, or nobody because a consumer is awake
// and will look at the ring. A producer's wake clears it, so whoever that
// wake reaches (or whoever goes to sleep next) sets it again from what it
// knows: the leader before it sleeps, a standby after it takes a request or
// before it sleeps, while the leader is busy. A standby only ever replaces
// "nobody" (compare-and-swap), never a sleeping leader.

// lead is the leader's life in ch.
func (w *worker) lead(ch *channel) {
	s := w.s
	defer ch.roles.Done()
	for !ch.stop.Load() {
		r, n, ok := w.take(ch)
		if !ok {
			if !ch.req.poll(s.cfg.BusyPoll, &ch.stop) {
				ch.req.sleep(&ch.stop, &w.ts)
			}
			continue
		}
		ch.leaderBusy.Store(true)
		if ch.standbys.Load() == 0 {
			s.recruit(ch)
		}
		// Until the handler returns, producers wake a standby.
		ch.req.wake.Store(wakeStandby)
		if !ch.req.empty() {
			ch.req.nudge()
		}
		w.serve(ch, r, w.req[:n], true)
	}
}

// standBy is a standby's life in ch, until it serves a request and finds
// the channel has standbys enough without it.
func (w *worker) standBy(ch *channel) {
	s := w.s
	defer ch.roles.Done()
	for {
		if ch.stop.Load() {
			ch.standbys.Add(-1)
			return
		}
		w.rearm(ch)
		seq := ch.req.standby.Load()
		r, n, ok := w.take(ch)
		if !ok {
			ch.req.sleepStandby(seq, &ch.stop, &w.ts)
			continue
		}
		if ch.standbys.Add(-1) == 0 {
			s.recruit(ch)
		}
		w.rearm(ch)
		if !ch.req.empty() {
			ch.req.nudge()
		}
		w.serve(ch, r, w.req[:n], false)
		if ch.stop.Load() || ch.standbys.Load() > 0 {
			return
		}
		ch.standbys.Add(1)
	}
}

// rearm points producers at the standbys again while the leader is busy
// (a producer's wake cleared the word).
func (w *worker) rearm(ch *channel) {
	if ch.leaderBusy.Load() {
		ch.req.wake.CompareAndSwap(wakeNone, wakeStandby)
	}
}

// take copies the next valid request out of ch's ring into w.req.
func (w *worker) take(ch *channel) (record, int, bool) {
	s := w.s
	ch.consMu.Lock()
	defer ch.consMu.Unlock()
	for {
		slot, h, what := ch.req.peek()
		switch what {
		case peekEmpty:
			return record{}, 0, false
		case peekResync:
			s.st.corrupt.Add(1)
			continue
		}
		r, payload, err := decodeRecord(slot, ch.gen, s.maxPayload)
		if err != nil {
			s.st.corrupt.Add(1)
			ch.req.release(h)
			continue
		}
		n := copy(w.req, payload)
		ch.req.release(h)
		return r, n, true
	}
}

// serve runs the handler and publishes its answer.
func (w *worker) serve(ch *channel, r record, req []byte, leader bool) {
	s := w.s
	n, status := s.h(r.op, req, w.resp[:s.maxPayload:s.maxPayload])
	if leader {
		// The leader looks at the ring again right after publishing: a
		// request the answer provokes need not wake a standby.
		ch.leaderBusy.Store(false)
		ch.req.wake.CompareAndSwap(wakeStandby, wakeNone)
	}
	out := record{id: r.id, gen: ch.gen, op: r.op, status: status}
	var body []byte
	if n < 0 || n > s.maxPayload {
		out.flags = flagBadAnswer
	} else {
		body = w.resp[:n]
	}
	backoff := 20 * time.Microsecond
	ch.respMu.Lock()
	for {
		slot, t, ok := ch.resp.reserve()
		if ok {
			encodeRecord(slot, out, body)
			s.st.calls.Add(1) // before the client can see the answer
			ch.resp.publish(t)
			ch.respMu.Unlock()
			return
		}
		if ch.stop.Load() {
			ch.respMu.Unlock()
			s.st.late.Add(1)
			return
		}
		// Full: the client drains the ring whenever a call waits, so this
		// lasts only while it has no call waiting. Back off without the
		// lock.
		ch.resp.kick()
		ch.respMu.Unlock()
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Millisecond)
		ch.respMu.Lock()
	}
}
