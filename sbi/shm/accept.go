package shm

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// channel is the server's view of one client connection slot.
type channel struct {
	idx   int
	state *atomic.Uint32 // descState in the mapping
	dgen  *atomic.Uint32 // descGen in the mapping
	req   ring           // client -> server; this server consumes
	resp  ring           // server -> client; this server's workers produce

	gen        uint32       // generation of the current connection
	stop       atomic.Bool  // set to make its roles return
	consMu     sync.Mutex   // serialises the goroutines consuming req (keeps it SPSC)
	respMu     sync.Mutex   // serialises the workers producing into resp
	standbys   atomic.Int32 // standby goroutines (not running a handler); see serve.go
	leaderBusy atomic.Bool  // the leader is running a handler
	roles      sync.WaitGroup
	phase      atomic.Int32 // phaseIdle, phaseLive, phaseReclaiming
	lock       *os.File     // the client's lock file, opened on first probe
}

const (
	phaseIdle = iota
	phaseLive
	phaseReclaiming
)

// acceptLoop sleeps on the doorbell; it wakes when a client asks to connect
// or close, and every CheckInterval to probe the clients' locks.
func (s *Server) acceptLoop() {
	defer s.acceptWG.Done()
	ts := timespec(s.cfg.CheckInterval)
	next := time.Now()
	for {
		select {
		case <-s.done:
			return
		default:
		}
		v := s.bell.Load()
		probe := false
		if now := time.Now(); !now.Before(next) {
			probe, next = true, now.Add(s.cfg.CheckInterval)
		}
		for _, ch := range s.chans {
			s.check(ch, probe)
		}
		futexWait(s.bell, v, &ts)
	}
}

func (s *Server) check(ch *channel, probe bool) {
	phase := ch.phase.Load()
	if phase == phaseReclaiming {
		return
	}
	st := ch.state.Load()
	switch {
	case st == chanFree && phase == phaseIdle:
	case st == chanConnect && phase == phaseIdle:
		s.accept(ch)
	case st == chanActive && !probe:
	default:
		// Closing, due for a probe, or a state that makes no sense (a
		// scribbled descriptor): free the channel if its client is gone.
		s.probe(ch)
	}
}

// accept starts serving a channel a client claimed. The client holds the
// channel's lock, so nobody else touches the rings until it is active.
func (s *Server) accept(ch *channel) {
	ch.req.reset()
	ch.resp.reset()
	// The generation is unique per pool generation and connection, so a
	// record left from an earlier connection of this slot is recognised.
	s.chanSeq++
	ch.gen = uint32(s.gen)<<20 ^ s.chanSeq
	if ch.gen == 0 { // 0 marks a free descriptor
		ch.gen = 1
	}
	ch.dgen.Store(ch.gen)
	ch.stop.Store(false)
	ch.phase.Store(phaseLive)
	s.st.clients.Add(1)
	s.startLeader(ch)
	s.recruit(ch)
	ch.state.Store(chanActive)
	futexWake(ch.state, 1)
}

// probe frees ch if its client no longer holds its lock.
func (s *Server) probe(ch *channel) {
	if ch.lock == nil {
		f, err := openLock(s.p.clientLock(ch.idx))
		if err != nil {
			return
		}
		ch.lock = f
	}
	ok, err := tryLock(ch.lock, unix.LOCK_EX)
	if err != nil || !ok {
		return
	}
	s.reclaim(ch)
}

// reclaim stops ch's roles, gives its ring pages back and marks it free; it
// holds the client's lock until then so that no new client claims the slot
// half-way. It runs in its own goroutine because a handler still running for
// the dead client may take long, and the doorbell must keep being answered.
func (s *Server) reclaim(ch *channel) {
	wasLive := ch.phase.Load() == phaseLive
	ch.phase.Store(phaseReclaiming)
	ch.stop.Store(true)
	ch.req.kick()
	s.workerWG.Add(1)
	go func() {
		defer s.workerWG.Done()
		ch.roles.Wait()
		off := s.geo.ringOff(ch.idx, 0)
		freeRange(s.pool.mem, off, 2*s.geo.ringBytes(), off, s.geo.ringOff(ch.idx, 1))
		ch.dgen.Store(0)
		ch.state.Store(chanFree)
		unlock(ch.lock)
		if wasLive {
			s.st.clients.Add(^uint64(0))
			s.st.peerRestarts.Add(1)
		}
		ch.phase.Store(phaseIdle)
	}()
}
