package shm

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Handler answers one request: it writes the answer into resp (len(resp) =
// cap(resp) = the largest message) and returns its length and a status that
// the binding gives meaning to. req and resp belong to the server and are
// reused once the handler returns: copy what must outlive the call. It is
// called concurrently from several goroutines.
type Handler func(op uint16, req []byte, resp []byte) (n int, status uint16)

// Server serves one service name: it owns the pool file and answers the
// requests of every client that attaches.
type Server struct {
	cfg        Config
	p          paths
	h          Handler
	lock       *os.File
	pool       *mapping
	geo        geometry
	maxPayload int
	chans      []*channel
	bell       *atomic.Uint32
	gen        uint64
	chanSeq    uint32 // acceptor only

	idle     chan *worker // workers waiting for a role; cap MaxWorkers
	nworkers atomic.Int32

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	acceptWG  sync.WaitGroup
	workerWG  sync.WaitGroup // workers and reclaimers
	st        counters
}

// Listen creates a new pool for name in cfg.Dir, replacing any left by an
// earlier server (whose clients then reconnect to this one), and serves it
// until Close. It fails if another live server holds the name.
func Listen(cfg Config, name string, h Handler) (*Server, error) {
	if h == nil {
		return nil, errors.New("shm: Listen: nil handler")
	}
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
	s := &Server{cfg: cfg, p: newPaths(cfg.Dir, name), h: h, geo: cfg.geometry(), done: make(chan struct{})}
	s.maxPayload = s.geo.maxPayload()
	if s.lock, err = openLock(s.p.serverLock); err != nil {
		return nil, err
	}
	if err := s.takeLock(); err != nil {
		s.lock.Close()
		return nil, err
	}
	s.gen = previousGen(s.lock) + 1
	if err = recordGen(s.lock, s.gen); err == nil {
		s.pool, err = createPool(s.p, s.geo, s.gen)
	}
	if err != nil {
		unlock(s.lock)
		s.lock.Close()
		return nil, err
	}
	m := s.pool.mem
	s.bell = m.u32(hdrDoorbell)
	s.idle = make(chan *worker, cfg.MaxWorkers)
	s.chans = make([]*channel, s.geo.maxClients)
	for i := range s.chans {
		d := s.geo.descOff(i)
		s.chans[i] = &channel{
			idx:   i,
			state: m.u32(d + descState),
			dgen:  m.u32(d + descGen),
			req:   newRing(m, s.geo.ringOff(i, 0), s.geo),
			resp:  newRing(m, s.geo.ringOff(i, 1), s.geo),
		}
	}
	s.acceptWG.Add(1)
	go s.acceptLoop()
	return s, nil
}

// takeLock takes the server lock. Clients probe it with a shared lock for a
// few microseconds at a time, so a failure is retried for a while before it
// is taken to mean that another server is alive.
func (s *Server) takeLock() error {
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		ok, err := tryLock(s.lock, unix.LOCK_EX)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shm: service %q is already served (%s is locked)", s.p.name, s.p.serverLock)
		}
		time.Sleep(time.Millisecond)
	}
}

// previousGen reads the generation of the last server from the lock file
// (which outlives pools: Close removes its pool), so that the new one
// differs; 0 if there was none.
func previousGen(lock *os.File) uint64 {
	var b [64]byte
	n, _ := lock.ReadAt(b[:], 0)
	var gen uint64
	fmt.Sscanf(string(b[:n]), "gen %d", &gen)
	return gen
}

// recordGen writes the server's generation and pid into its lock file, for
// the next server and for people looking at the directory.
func recordGen(lock *os.File, gen uint64) error {
	if err := lock.Truncate(0); err != nil {
		return fmt.Errorf("shm: %s: %w", lock.Name(), err)
	}
	if _, err := lock.WriteAt(fmt.Appendf(nil, "gen %d pid %d\n", gen, os.Getpid()), 0); err != nil {
		return fmt.Errorf("shm: %s: %w", lock.Name(), err)
	}
	return nil
}

// createPool builds the pool in a fresh file and renames it into place, so
// that a client never maps a half-initialised pool and clients of a previous
// server keep their (now orphaned) mapping until they notice.
func createPool(p paths, g geometry, gen uint64) (*mapping, error) {
	_ = os.Remove(p.poolNew)
	f, err := os.OpenFile(p.poolNew, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: create pool: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(g.size()); err != nil {
		os.Remove(p.poolNew)
		return nil, fmt.Errorf("shm: size pool %s to %d bytes: %w", p.poolNew, g.size(), err)
	}
	m, err := mapFile(f, g.size())
	if err != nil {
		os.Remove(p.poolNew)
		return nil, err
	}
	w := m.mem
	w.u64(hdrMagic).Store(poolMagic)
	w.u32(hdrVersion).Store(poolVersion)
	w.u64(hdrGen).Store(gen)
	w.u32(hdrMaxClients).Store(uint32(g.maxClients))
	w.u32(hdrRingSlots).Store(uint32(g.slots))
	w.u32(hdrSlotBytes).Store(uint32(g.slotBytes))
	w.u32(hdrServerPID).Store(uint32(os.Getpid()))
	w.u64(hdrSize).Store(uint64(g.size()))
	w.u32(hdrReady).Store(1)
	if err := os.Rename(p.poolNew, p.pool); err != nil {
		m.unmap()
		os.Remove(p.poolNew)
		return nil, fmt.Errorf("shm: publish pool %s: %w", p.pool, err)
	}
	return m, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats { return s.st.snapshot() }

// MaxMessage is the largest request or answer the pool carries.
func (s *Server) MaxMessage() int { return s.maxPayload }

// Close stops serving: it waits for running handlers to return, removes the
// pool file (clients see ErrPeerDown and wait for a new server) and releases
// the lock.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	close(s.done)
	s.bell.Add(1)
	futexWake(s.bell, 1)
	s.acceptWG.Wait()
	for _, ch := range s.chans {
		if ch.phase.Load() == phaseLive {
			ch.stop.Store(true)
			ch.req.kick()
		}
	}
	for _, ch := range s.chans {
		ch.roles.Wait()
	}
	// Every worker is idle now (or about to be): stop them all.
	for n := s.nworkers.Load(); n > 0; n-- {
		close((<-s.idle).assign)
	}
	s.workerWG.Wait()
	for _, ch := range s.chans {
		if ch.lock != nil {
			ch.lock.Close()
		}
	}
	var errs []error
	if inodeOf(s.p.pool) == s.pool.ino {
		if err := os.Remove(s.p.pool); err != nil {
			errs = append(errs, fmt.Errorf("shm: remove %s: %w", s.p.pool, err))
		}
	}
	if err := s.pool.unmap(); err != nil {
		errs = append(errs, fmt.Errorf("shm: unmap %s: %w", s.p.pool, err))
	}
	unlock(s.lock)
	if err := s.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
