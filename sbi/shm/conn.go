package shm

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// conn is a client's attachment to one server incarnation: the mapping of
// that server's pool and the channel it claimed there.
type conn struct {
	m          *mapping
	maxPayload int
	ch         int
	gen        uint32 // channel generation, stamped into every record
	poolGen    uint64
	state      *atomic.Uint32
	dgen       *atomic.Uint32
	bell       *atomic.Uint32
	req, resp  ring
	lock       *os.File // the channel's client lock, held for the conn's life

	stop atomic.Bool // set by teardown: readers leave the rings alone
}

// tryConnect attaches to the server if one is up. connMu held (or Dial,
// before anything else runs).
func (c *Client) tryConnect() error {
	cn, err := c.connect()
	if err != nil {
		return err
	}
	if c.connected && cn.poolGen != c.lastGen {
		c.st.peerRestarts.Add(1)
	}
	c.connected, c.lastGen = true, cn.poolGen
	c.mu.Lock()
	c.cur.Store(cn)
	c.mu.Unlock()
	c.st.clients.Store(1)
	return nil
}

func (c *Client) connect() (*conn, error) {
	alive, err := heldByOther(c.srvLock)
	if err != nil {
		return nil, err
	}
	if !alive {
		return nil, errNoServer
	}
	f, err := os.OpenFile(c.p.pool, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open pool: %w", err)
	}
	m, err := mapFile(f, -1)
	f.Close() // the mapping keeps the file
	if err != nil {
		return nil, err
	}
	g, poolGen, err := readGeometry(m.mem, int64(len(m.mem)))
	if err != nil {
		m.unmap()
		return nil, fmt.Errorf("shm: %s: %w", c.p.pool, err)
	}
	for i := 0; i < g.maxClients; i++ {
		cn, err := c.claim(m, g, i)
		if err != nil {
			m.unmap()
			return nil, err
		}
		if cn != nil {
			cn.poolGen = poolGen
			return cn, nil
		}
	}
	m.unmap()
	return nil, fmt.Errorf("shm: service %q: all %d channels in use", c.p.name, g.maxClients)
}

// claim tries to take channel i: its lock first (the kernel arbitrates
// between clients and releases it when we die), then the handshake with the
// server. It returns nil, nil when the channel is taken.
func (c *Client) claim(m *mapping, g geometry, i int) (*conn, error) {
	d := g.descOff(i)
	state := m.mem.u32(d + descState)
	if state.Load() != chanFree {
		return nil, nil
	}
	lf, err := openLock(c.p.clientLock(i))
	if err != nil {
		return nil, err
	}
	if ok, err := tryLock(lf, unix.LOCK_EX); err != nil || !ok {
		lf.Close()
		return nil, err
	}
	if state.Load() != chanFree { // a dead client's slot the server has not freed yet
		unlock(lf)
		lf.Close()
		return nil, nil
	}
	m.mem.u32(d + descClientPID).Store(uint32(os.Getpid()))
	state.Store(chanConnect)
	bell := m.mem.u32(hdrDoorbell)
	bell.Add(1)
	futexWake(bell, 1)
	ts := timespec(5 * time.Millisecond)
	deadline := time.Now().Add(c.cfg.ConnectTimeout)
	for {
		s := state.Load()
		if s == chanActive {
			break
		}
		if s != chanConnect || time.Now().After(deadline) {
			// Leave the descriptor as it is: the server (if any) frees it
			// once it finds the lock released.
			unlock(lf)
			lf.Close()
			return nil, fmt.Errorf("shm: service %q did not accept channel %d within %v", c.p.name, i, c.cfg.ConnectTimeout)
		}
		futexWait(state, s, &ts)
	}
	return &conn{
		m:          m,
		maxPayload: g.maxPayload(),
		ch:         i,
		gen:        m.mem.u32(d + descGen).Load(),
		state:      state,
		dgen:       m.mem.u32(d + descGen),
		bell:       bell,
		req:        newRing(m.mem, g.ringOff(i, 0), g),
		resp:       newRing(m.mem, g.ringOff(i, 1), g),
		lock:       lf,
	}, nil
}

// monitor probes the server every CheckInterval: a connection whose server
// lost its lock, replaced the pool or reset our channel is torn down (its
// calls fail with ErrPeerDown at once), and while down it tries to
// connect.
func (c *Client) monitor() {
	defer c.monWG.Done()
	t := time.NewTicker(c.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.connMu.Lock()
		if cn := c.cur.Load(); cn != nil && !c.alive(cn) {
			c.teardown(cn, c.errDown)
		}
		if c.cur.Load() == nil {
			_ = c.tryConnect()
		}
		c.connMu.Unlock()
	}
}

func (c *Client) alive(cn *conn) bool {
	held, err := heldByOther(c.srvLock)
	if err != nil || !held {
		return false
	}
	return inodeOf(c.p.pool) == cn.m.ino && cn.state.Load() == chanActive && cn.dgen.Load() == cn.gen
}

// teardown detaches cn and fails its outstanding calls with err. connMu
// held.
func (c *Client) teardown(cn *conn, err error) {
	c.mu.Lock()
	c.cur.CompareAndSwap(cn, nil)
	c.mu.Unlock()
	c.st.clients.Store(0)
	// Take the reader token, so that no caller is reading the rings when
	// they are unmapped; a reader asleep on the futex is woken to leave.
	cn.stop.Store(true)
	for !c.reading.CompareAndSwap(false, true) {
		cn.resp.kick()
		time.Sleep(50 * time.Microsecond)
	}
	defer c.passTurn()
	defer c.reading.Store(false)
	c.ws.failAll(err)
	// Nothing of ours touches the rings any more. Mark the channel closing
	// and drop its lock before ringing the doorbell, so that a live server
	// (on Close) frees it at once instead of at its next probe.
	closing := cn.state.CompareAndSwap(chanActive, chanClosing)
	unlock(cn.lock)
	cn.lock.Close()
	if closing {
		cn.bell.Add(1)
		futexWake(cn.bell, 1)
	}
	cn.m.unmap()
}
