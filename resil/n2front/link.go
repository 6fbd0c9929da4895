package n2front

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/sctp"
)

// Errors of the unit side.
var (
	// ErrFenced means the front refused the unit: its epoch is not above
	// the highest the front has seen (a newer unit took over).
	ErrFenced = errors.New("n2front: epoch fenced: a unit with an equal or higher epoch was seen")
	// ErrLinkDown is returned by Accept and by every Conn's Recv and Send
	// once the link to the front has ended (the front went away, or
	// replaced this unit). It wraps io.EOF for Recv's callers, and
	// sctp.ErrFrontLost: the association is not lost, only this unit's
	// hold on it.
	ErrLinkDown = fmt.Errorf("n2front: link to the front is down: %w (%w)", io.EOF, sctp.ErrFrontLost)
)

// Link timeouts of the unit side.
const (
	// dialTimeout bounds Dial's wait for the front's welcome.
	dialTimeout = 5 * time.Second
	// linkWriteTimeout is how long a write may wait for a front that does
	// not read: past it, the link is taken as dead.
	linkWriteTimeout = time.Second
)

// Resume is what a unit needs to take over an association that a unit
// before it served.
type Resume struct {
	// Resumed is set for an association that completed NG Setup with an
	// earlier unit: the gNB sends no NG Setup Request again and must not
	// receive an NG Setup Response (the front drops one).
	Resumed bool
	// NGSetupRequest is the request the last successful NG Setup Response
	// answered (TS 38.413 §9.2.6.1), set when Resumed.
	NGSetupRequest []byte
	// RANConfigurationUpdates are the RAN Configuration Updates (TS
	// 38.413 §9.2.6.4) acknowledged since, oldest first: applied over
	// the NG Setup Request, they give the gNB's configuration now.
	RANConfigurationUpdates [][]byte
}

// Link is a unit's link to the front.
type Link struct {
	conn    *net.UnixConn
	epoch   uint64
	wg      sync.WaitGroup
	done    chan struct{} // closed when the link has ended
	closing chan struct{} // closed by Close: the ack writer flushes and ends
	opened  chan struct{} // closed when Accept has passed the opened marker
	ackDone chan struct{} // closed when the ack writer has ended
	once    sync.Once

	malformed atomic.Uint64
	paused    atomic.Bool // Pause: Recv delivers nothing more

	mu        sync.Mutex
	err       error // why the link ended
	conns     map[uint32]*Conn
	accepting []accepted
	acceptSig chan struct{}
	acks      []uint64
	ackSig    chan struct{}
	// markerSeen: the front's opened marker came (once per link).
	markerSeen bool
}

// accepted is an open waiting for Accept, or (c nil) the opened marker.
type accepted struct {
	c *Conn
	r Resume
}

// Dial connects a unit with the given epoch to the front at path. The
// front answers with a welcome, or refuses an epoch not above every epoch
// it has seen (ErrFenced).
func Dial(path string, epoch uint64) (*Link, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("n2front: dial %s: %w", path, err)
	}
	buf := make([]byte, maxFrame)
	var fr frame
	c.SetDeadline(time.Now().Add(dialTimeout))
	if _, err = c.Write(appendHello(nil, epoch)); err == nil {
		err = readFrame(c, buf, &fr)
	}
	switch {
	case err != nil:
	case fr.typ == frameRefuse && fr.reason == refuseStaleEpoch:
		err = fmt.Errorf("%w (epoch %d, front's highest %d)", ErrFenced, epoch, fr.epoch)
	case fr.typ == frameRefuse:
		err = fmt.Errorf("n2front: front refused the hello (reason %d)", fr.reason)
	case fr.typ != frameWelcome || fr.epoch != epoch:
		err = fmt.Errorf("%w: type %d instead of the welcome for epoch %d", errMalformed, fr.typ, epoch)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("n2front: hello to %s: %w", path, err)
	}
	c.SetDeadline(time.Time{})
	l := &Link{
		conn: c, epoch: epoch, done: make(chan struct{}),
		closing: make(chan struct{}), ackDone: make(chan struct{}), opened: make(chan struct{}),
		conns:     make(map[uint32]*Conn),
		acceptSig: make(chan struct{}, 1),
		ackSig:    make(chan struct{}, 1),
	}
	l.wg.Add(2)
	go l.read(buf)
	go l.writeAcks()
	return l, nil
}

// Epoch is the epoch the link was welcomed with.
func (l *Link) Epoch() uint64 { return l.epoch }

// Done is closed once the link has ended.
func (l *Link) Done() <-chan struct{} { return l.done }

// Malformed counts the malformed frames the front sent (the first ends
// the link).
func (l *Link) Malformed() uint64 { return l.malformed.Load() }

// Accept returns the next association the front opens: a Conn (it
// implements sctp.Conn and sctp.Acker) and what the unit needs to take the
// association over. After the link ended it returns ErrLinkDown.
func (l *Link) Accept() (sctp.Conn, Resume, error) {
	for {
		l.mu.Lock()
		if len(l.accepting) > 0 {
			a := l.accepting[0]
			l.accepting[0] = accepted{}
			l.accepting = l.accepting[1:]
			if len(l.accepting) > 0 {
				signal(l.acceptSig)
			}
			l.mu.Unlock()
			if a.c == nil {
				close(l.opened) // the front sends the marker once per link
				continue
			}
			return a.c, a.r, nil
		}
		err := l.err
		l.mu.Unlock()
		if err != nil {
			return nil, Resume{}, err
		}
		select {
		case <-l.acceptSig:
		case <-l.done:
		}
	}
}

// Opened is closed once Accept has returned every association the front
// opened when it welcomed the unit (the front's marker after those opens,
// issue 36 §3): for a unit that took over, the gNBs that were not resumed
// by then will not be. A caller that serves each association Accept
// returns before it calls Accept again knows, once Opened is closed, that
// it has served all of them. Associations set up later still come through
// Accept.
func (l *Link) Opened() <-chan struct{} { return l.opened }

// Pause stops delivering the front's messages to the unit: from now on
// every Conn's Recv blocks until the link ends or the Conn is closed, and
// what arrives stays unacknowledged, for the front to replay to the next
// unit. Sends and acknowledgements go on. Pause returns once every Conn's
// reader has come back to Recv (it is done with the last message it got:
// whatever that message made the unit do is queued there by then), or with
// ctx's error. A unit that drains (a planned handover to its standby)
// pauses, lets its steps in flight finish, then closes the link. Pause is
// for good: nothing resumes delivery.
func (l *Link) Pause(ctx context.Context) error {
	l.paused.Store(true)
	for {
		l.mu.Lock()
		conns := make([]*Conn, 0, len(l.conns))
		for _, c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		busy := 0
		for _, c := range conns {
			signal(c.sig) // a Recv waiting for a message now waits for the end
			c.mu.Lock()
			if c.handling && !c.closed && c.endErr == nil {
				busy++
			}
			c.mu.Unlock()
		}
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("n2front: pause: %d associations' readers still busy: %w", busy, ctx.Err())
		case <-l.done:
			return nil
		case <-time.After(time.Millisecond):
		}
	}
}

// Close sends the acknowledgements queued so far, ends the link (the
// front takes the unit as failed) and waits for its goroutines.
func (l *Link) Close() error {
	l.once.Do(func() { close(l.closing) })
	<-l.ackDone
	// Hang up our side first and let the front close: a Unix socket
	// closed with frames unread (a paused unit's) resets the peer, which
	// may then lose the frames it had not read yet, the last
	// acknowledgements among them, and replay their messages.
	l.conn.CloseWrite()
	select {
	case <-l.done:
	case <-time.After(closeWait):
	}
	l.conn.Close()
	l.wg.Wait()
	return nil
}

// closeWait bounds Close's wait for the front to hang up after the unit
// did.
const closeWait = time.Second

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// read dispatches the front's frames until the link ends.
func (l *Link) read(buf []byte) {
	defer l.wg.Done()
	var fr frame
	var err error
	for err == nil {
		if err = readFrame(l.conn, buf, &fr); err != nil {
			break
		}
		switch fr.typ {
		case frameOpen:
			err = l.open(&fr)
		case frameUplink:
			l.mu.Lock()
			c := l.conns[fr.assoc]
			l.mu.Unlock()
			if c != nil { // else the unit closed it and the front has not yet seen that
				c.push(sctp.Message{Stream: fr.stream, PPID: fr.ppid, Stamp: fr.stamp,
					Data: append([]byte(nil), fr.data...)})
			}
		case frameOpened:
			l.mu.Lock()
			if l.markerSeen {
				err = fmt.Errorf("%w: a second opened marker", errMalformed)
			} else {
				l.markerSeen = true
				l.accepting = append(l.accepting, accepted{})
				signal(l.acceptSig)
			}
			l.mu.Unlock()
		case frameClosed:
			l.mu.Lock()
			c := l.conns[fr.assoc]
			delete(l.conns, fr.assoc)
			l.mu.Unlock()
			if c != nil {
				c.end(io.EOF) // the gNB's association ended
			}
		default:
			err = fmt.Errorf("%w: type %d from the front", errMalformed, fr.typ)
		}
	}
	if errors.Is(err, errMalformed) {
		l.malformed.Add(1)
	}
	l.conn.Close()
	l.mu.Lock()
	l.err = ErrLinkDown
	conns := l.conns
	l.conns = nil
	l.accepting = nil // each is in conns too
	l.mu.Unlock()
	for _, c := range conns {
		c.end(ErrLinkDown)
	}
	close(l.done)
}

func (l *Link) open(fr *frame) error {
	c := &Conn{link: l, id: fr.assoc, out: fr.streams,
		local:  &sctp.Addr{AddrPort: fr.local.AddrPort, UDP: fr.local.UDP},
		remote: &sctp.Addr{AddrPort: fr.remote.AddrPort, UDP: fr.remote.UDP},
		sig:    make(chan struct{}, 1)}
	r := Resume{Resumed: fr.resume}
	if fr.resume {
		r.NGSetupRequest = append([]byte(nil), fr.setup...)
		for _, u := range fr.updates {
			r.RANConfigurationUpdates = append(r.RANConfigurationUpdates, append([]byte(nil), u...))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.conns[fr.assoc]; dup {
		return fmt.Errorf("%w: association %d opened twice", errMalformed, fr.assoc)
	}
	l.conns[fr.assoc] = c
	l.accepting = append(l.accepting, accepted{c, r})
	signal(l.acceptSig)
	return nil
}

// write sends one frame; a front that does not take it in
// linkWriteTimeout ends the link.
func (l *Link) write(b []byte) error {
	l.conn.SetWriteDeadline(time.Now().Add(linkWriteTimeout))
	if _, err := l.conn.Write(b); err != nil {
		l.conn.Close()
		return fmt.Errorf("%w (%w)", ErrLinkDown, err)
	}
	return nil
}

// ack queues a stamp for the ack writer: Ack never waits for the link.
func (l *Link) ack(stamp uint64) {
	l.mu.Lock()
	if l.err == nil {
		l.acks = append(l.acks, stamp)
	}
	l.mu.Unlock()
	signal(l.ackSig)
}

// writeAcks sends queued acknowledgements, as many per frame as have
// gathered: under load one frame carries the acks of many steps.
func (l *Link) writeAcks() {
	defer l.wg.Done()
	defer close(l.ackDone)
	var batch []uint64
	var buf []byte
	for closing := false; !closing; {
		select {
		case <-l.ackSig:
		case <-l.closing:
			closing = true
		case <-l.done:
			return
		}
		l.mu.Lock()
		batch, l.acks = l.acks, batch[:0]
		l.mu.Unlock()
		for i := 0; i < len(batch); i += maxAckBatch {
			buf = appendAck(buf[:0], batch[i:min(i+maxAckBatch, len(batch))])
			if l.write(buf) != nil {
				return
			}
		}
	}
}

// Conn is one gNB association as a unit sees it through the front. It
// implements sctp.Conn and sctp.Acker.
type Conn struct {
	link          *Link
	id            uint32
	out           uint16
	local, remote *sctp.Addr

	mu     sync.Mutex
	q      []sctp.Message
	qh     int
	closed bool  // by Close
	endErr error // the association or the link ended
	// handling: Recv returned a message and was not called again since
	// (the reader is handling it); Pause waits for it to come back.
	handling bool
	sig      chan struct{}
}

var (
	_ sctp.Conn  = (*Conn)(nil)
	_ sctp.Acker = (*Conn)(nil)
)

func (c *Conn) push(m sctp.Message) {
	c.mu.Lock()
	if !c.closed && c.endErr == nil {
		c.q = append(c.q, m)
	}
	c.mu.Unlock()
	signal(c.sig)
}

// end records why the association ended: after the gNB's end (io.EOF)
// the messages received before are still delivered; after the link's
// end (ErrLinkDown) they are not: a unit whose link is gone has been
// replaced or has lost its front.
func (c *Conn) end(err error) {
	c.mu.Lock()
	if c.endErr == nil {
		c.endErr = err
		if errors.Is(err, ErrLinkDown) {
			clear(c.q)
			c.q, c.qh = nil, 0
		}
	}
	c.mu.Unlock()
	signal(c.sig)
}

// Recv returns the next message of the gNB, with its stamp. After the gNB
// ended the association it returns io.EOF; after Close, net.ErrClosed;
// after the link ended, ErrLinkDown.
func (c *Conn) Recv() (sctp.Message, error) {
	c.mu.Lock()
	c.handling = false
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return sctp.Message{}, net.ErrClosed
		}
		if c.link.paused.Load() {
			err := c.endErr
			c.mu.Unlock()
			if err != nil {
				return sctp.Message{}, err
			}
			select {
			case <-c.sig: // closed, or another message queued: look again
			case <-c.link.done:
			}
			continue
		}
		if c.qh < len(c.q) {
			m := c.q[c.qh]
			c.q[c.qh] = sctp.Message{}
			if c.qh++; c.qh == len(c.q) {
				c.q, c.qh = c.q[:0], 0
			} else {
				signal(c.sig) // for a concurrent Recv
			}
			c.handling = true
			c.mu.Unlock()
			return m, nil
		}
		err := c.endErr
		c.mu.Unlock()
		if err != nil {
			return sctp.Message{}, err
		}
		<-c.sig
	}
}

// Send sends a message to the gNB through the front. Whether the gNB's
// association takes it is not reported back: a failure there ends the
// association, which Recv reports.
func (c *Conn) Send(stream uint16, ppid uint32, data []byte) error {
	if len(data) == 0 {
		return sctp.ErrEmptyMessage
	}
	if stream >= c.out {
		return fmt.Errorf("%w: stream %d, outbound streams %d", sctp.ErrInvalidStream, stream, c.out)
	}
	if len(data) > maxMessage {
		return fmt.Errorf("n2front: message of %d bytes, above %d", len(data), maxMessage)
	}
	c.mu.Lock()
	closed, err := c.closed, c.endErr
	c.mu.Unlock()
	switch {
	case closed:
		return net.ErrClosed
	case err != nil:
		return fmt.Errorf("n2front: send: association ended: %w", err)
	}
	return c.link.write(appendDownlink(make([]byte, 0, 12+frameHeaderLen+len(data)), c.id, stream, ppid, data))
}

// Ack acknowledges a stamp (sctp.Acker): the front drops the message from
// its replay log. 0 is ignored; a stamp acknowledged twice is harmless.
func (c *Conn) Ack(stamp uint64) {
	if stamp != 0 {
		c.link.ack(stamp)
	}
}

// Close asks the front to shut the gNB's association down.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ended := c.endErr != nil
	clear(c.q)
	c.q, c.qh = nil, 0
	c.mu.Unlock()
	signal(c.sig)
	l := c.link
	l.mu.Lock()
	if l.conns[c.id] == c {
		delete(l.conns, c.id)
	}
	l.mu.Unlock()
	if ended {
		return nil
	}
	if err := l.write(appendAssoc(nil, frameClose, c.id)); err != nil && !errors.Is(err, ErrLinkDown) {
		return err
	}
	return nil
}

func (c *Conn) LocalAddr() net.Addr     { return c.local }
func (c *Conn) RemoteAddr() net.Addr    { return c.remote }
func (c *Conn) OutboundStreams() uint16 { return c.out }
