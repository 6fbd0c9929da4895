package n2front

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// TestFailover: unit A serves the gNB, acknowledges some messages and dies
// (its socket closed, no goodbye); the gNB keeps sending; unit B, with a
// higher epoch, gets the association resumed with its NG Setup Request,
// exactly the unacknowledged messages in stamp order, then new ones, and
// its answers reach the gNB, whose association never dropped.
func TestFailover(t *testing.T) {
	r := newRig(t, nil)
	a := dialUnit(t, r.path, 1)
	if a.resume.Resumed {
		t.Fatal("first unit: association resumed")
	}
	if ra, ok := a.conn.RemoteAddr().(*sctp.Addr); !ok || ra.AddrPort.Addr().String() != "127.0.0.1" || !ra.UDP.IsValid() {
		t.Errorf("RemoteAddr %v: want the gNB's SCTP-over-UDP address", a.conn.RemoteAddr())
	}
	if got, want := a.conn.OutboundStreams(), r.gnb.OutboundStreams(); got == 0 || got > sctp.DefaultStreams || want == 0 {
		t.Errorf("OutboundStreams %d", got)
	}

	setup := setupRequest(t)
	r.send(setup)
	sm := a.expect(setup)
	a.send(setupResponse(t))
	if m := gnbRecv(t, r.down); !bytes.Equal(m.Data, setupResponse(t)) {
		t.Fatalf("gNB got % x, want the NG Setup Response", m.Data)
	}
	a.ack(sm.Stamp)

	var ups [][]byte
	for i := range 9 {
		ups = append(ups, uplinkNAS(t, i))
	}
	var stamps []uint64
	for _, b := range ups[:5] {
		r.send(b)
		m := a.expect(b)
		if len(stamps) > 0 && m.Stamp <= stamps[len(stamps)-1] {
			t.Fatalf("stamp %d after %d", m.Stamp, stamps[len(stamps)-1])
		}
		stamps = append(stamps, m.Stamp)
	}
	a.ack(stamps[0], stamps[1], stamps[3])
	eventually(t, "A's acks", func() bool { return r.front.Stats().Logged == 2 })

	a.link.conn.Close() // A dies: no goodbye
	eventually(t, "the front to notice A's death", func() bool { return !r.front.Stats().UnitActive })
	r.send(ups[5])
	r.send(ups[6])
	eventually(t, "the messages sent meanwhile logged", func() bool { return r.front.Stats().Logged == 4 })

	b := dialUnit(t, r.path, 2)
	if !b.resume.Resumed || !bytes.Equal(b.resume.NGSetupRequest, setup) {
		t.Fatalf("B's resume: %+v, want the NG Setup Request", b.resume)
	}
	if b.conn.RemoteAddr().String() != a.conn.RemoteAddr().String() {
		t.Errorf("B sees the gNB at %v, A at %v", b.conn.RemoteAddr(), a.conn.RemoteAddr())
	}
	if m := b.expect(ups[2]); m.Stamp != stamps[2] {
		t.Errorf("replayed with stamp %d, was %d", m.Stamp, stamps[2])
	}
	if m := b.expect(ups[4]); m.Stamp != stamps[4] {
		t.Errorf("replayed with stamp %d, was %d", m.Stamp, stamps[4])
	}
	m5 := b.expect(ups[5])
	m6 := b.expect(ups[6])
	r.send(ups[7])
	m7 := b.expect(ups[7])
	if !(stamps[4] < m5.Stamp && m5.Stamp < m6.Stamp && m6.Stamp < m7.Stamp) {
		t.Errorf("stamps %d %d %d %d not increasing", stamps[4], m5.Stamp, m6.Stamp, m7.Stamp)
	}

	// B answers the resume as a fresh NG Setup: the gNB asked nothing and
	// must not see it. Its next message reaches the gNB.
	b.send(setupResponse(t))
	dl := downlinkNAS(t, "from B")
	b.send(dl)
	if m := gnbRecv(t, r.down); !bytes.Equal(m.Data, dl) {
		t.Fatalf("gNB got % x, want B's downlink", m.Data)
	}
	s := r.front.Stats()
	if s.SwallowedAnswers != 1 || s.Replayed != 2 || s.Associations != 1 || s.Epoch != 2 || s.UnitsWelcomed != 2 {
		t.Errorf("stats %+v", s)
	}
	if n := r.inits.n.Load(); n != 1 {
		t.Errorf("%d INITs: the gNB's association was set up again", n)
	}
	// The gNB's association is the one it opened: it still carries traffic.
	r.send(ups[8])
	b.expect(ups[8])
}

// TestFencing: a unit whose epoch is not above the highest seen is refused
// and nothing it sends reaches a gNB; the unit it replaced loses its link.
func TestFencing(t *testing.T) {
	r := newRig(t, nil)
	a := dialUnit(t, r.path, 1)
	b := dialUnit(t, r.path, 2)
	select {
	case err := <-a.end:
		if !isLinkDown(err) || !errors.Is(err, io.EOF) {
			t.Errorf("A's Recv after B took over: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("A's association still up after B took over")
	}
	if err := a.conn.Send(0, ngap.PPID, downlinkNAS(t, "from A")); err == nil {
		t.Error("A's Send succeeded after B took over")
	}
	for _, epoch := range []uint64{1, 2} {
		if _, err := Dial(r.path, epoch); !errors.Is(err, ErrFenced) {
			t.Errorf("Dial epoch %d after epoch 2: %v, want ErrFenced", epoch, err)
		}
	}

	// The old primary tries to speak before it hears the refusal.
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: r.path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(appendHello(nil, 1)); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		c.Write(appendDownlink(nil, 1, 0, ngap.PPID, downlinkNAS(t, "stale")))
		c.Write(appendAssoc(nil, frameClose, 1))
	}
	buf := make([]byte, maxFrame)
	var fr frame
	c.SetReadDeadline(time.Now().Add(wait))
	if err := readFrame(c, buf, &fr); err != nil || fr.typ != frameRefuse || fr.reason != refuseStaleEpoch || fr.epoch != 2 {
		t.Fatalf("answer to a stale hello: %+v, %v", fr, err)
	}
	gnbQuiet(t, r.down, 200*time.Millisecond)

	// B still serves the gNB.
	dl := downlinkNAS(t, "from B")
	b.send(dl)
	if m := gnbRecv(t, r.down); !bytes.Equal(m.Data, dl) {
		t.Fatalf("gNB got % x, want B's", m.Data)
	}
	if s := r.front.Stats(); s.UnitsRefused != 3 || s.Epoch != 2 || s.Associations != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestAcks: acknowledging twice, an unknown stamp or 0 changes nothing and
// keeps the link; an acknowledged message is not replayed.
func TestAcks(t *testing.T) {
	r := newRig(t, nil)
	a := dialUnit(t, r.path, 1)
	m1, m2 := uplinkNAS(t, 1), uplinkNAS(t, 2)
	r.send(m1)
	r.send(m2)
	s1, s2 := a.expect(m1).Stamp, a.expect(m2).Stamp
	a.ack(s1, s1, s2+1000, 0, s1)
	eventually(t, "the ack", func() bool { return r.front.Stats().Logged == 1 })
	if s := r.front.Stats(); s.Acked != 1 || !s.UnitActive || s.MalformedFrames != 0 {
		t.Fatalf("stats %+v", s)
	}
	a.link.Close()
	b := dialUnit(t, r.path, 2)
	if m := b.expect(m2); m.Stamp != s2 {
		t.Fatalf("replayed stamp %d, want %d", m.Stamp, s2)
	}
	b.ack(s2, s2)
	eventually(t, "the log empty", func() bool { return r.front.Stats().Logged == 0 })
	m3 := uplinkNAS(t, 3)
	r.send(m3)
	b.expect(m3)
}

// TestLogBound: the replay log refuses what does not fit (counted), keeps
// what it holds for the next unit, and takes messages again once acks
// make room.
func TestLogBound(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxLogMessages = 3 })
	for i := range 5 {
		r.send(uplinkNAS(t, i))
	}
	eventually(t, "5 messages seen", func() bool { return r.front.Stats().Uplink == 5 })
	if s := r.front.Stats(); s.Logged != 3 || s.LogFull != 2 {
		t.Fatalf("stats %+v, want 3 logged, 2 refused", s)
	}
	u := dialUnit(t, r.path, 1)
	var stamps []uint64
	for i := range 3 {
		stamps = append(stamps, u.expect(uplinkNAS(t, i)).Stamp)
	}
	r.send(uplinkNAS(t, 5)) // still full
	eventually(t, "the 6th message seen", func() bool { return r.front.Stats().Uplink == 6 })
	u.ack(stamps...)
	eventually(t, "the acks", func() bool { return r.front.Stats().Logged == 0 })
	r.send(uplinkNAS(t, 6))
	u.expect(uplinkNAS(t, 6)) // not 3, 4 or 5: refused ones are gone
	if s := r.front.Stats(); s.LogFull != 3 {
		t.Fatalf("stats %+v", s)
	}

	// The byte bound.
	rb := newRig(t, func(c *Config) { c.MaxLogBytes = len(uplinkNAS(t, 0)) * 2 })
	for i := range 3 {
		rb.send(uplinkNAS(t, i))
	}
	eventually(t, "3 messages seen", func() bool { return rb.front.Stats().Uplink == 3 })
	if s := rb.front.Stats(); s.Logged != 2 || s.LogFull != 1 {
		t.Fatalf("byte bound: stats %+v", s)
	}
}

// TestAssociationEnds: the gNB's end reaches the unit as io.EOF after the
// messages before it, and drops its logged messages; the unit's Close
// shuts a gNB's association down; an association that comes while no
// unit is active waits for one.
func TestAssociationEnds(t *testing.T) {
	r := newRig(t, nil)
	u := dialUnit(t, r.path, 1)
	m := uplinkNAS(t, 1)
	r.send(m)
	r.gnb.Close()
	u.expect(m)
	select {
	case err := <-u.end:
		if err != io.EOF {
			t.Fatalf("Recv after the gNB's end: %v, want io.EOF", err)
		}
	case <-time.After(wait):
		t.Fatal("the unit did not see the gNB's end")
	}
	eventually(t, "the association gone", func() bool { return r.front.Stats().Associations == 0 })
	if s := r.front.Stats(); s.Logged != 0 || s.DroppedWithAssociation != 1 {
		t.Fatalf("stats %+v", s)
	}

	// Another gNB: the unit closes it.
	g2, down2 := r.dialGNB()
	c, res, err := u.link.Accept()
	if err != nil || res.Resumed {
		t.Fatalf("Accept: %v %+v", err, res)
	}
	c.Close()
	select {
	case _, ok := <-down2:
		if ok {
			t.Fatal("the gNB got a message, want the end of its association")
		}
	case <-time.After(wait):
		t.Fatal("the unit's Close did not end the gNB's association")
	}
	if _, err := c.Recv(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
	_ = g2

	// A gNB that comes while no unit is active waits, logged.
	u.link.Close()
	eventually(t, "no unit", func() bool { return !r.front.Stats().UnitActive })
	g3, _ := r.dialGNB()
	setup := setupRequest(t)
	if err := g3.Send(0, ngap.PPID, setup); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the setup logged", func() bool { return r.front.Stats().Logged == 1 })
	u2 := dialUnit(t, r.path, 2)
	if u2.resume.Resumed {
		t.Fatal("an association that never completed NG Setup resumed")
	}
	u2.expect(setup) // a plain NG Setup for the unit to answer
}

// TestMalformedFromUnit: a bad hello is refused, a malformed frame ends
// the unit's link and is counted; the front goes on.
func TestMalformedFromUnit(t *testing.T) {
	r := newRig(t, nil)
	raw := func(frames ...[]byte) *net.UnixConn {
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: r.path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		for _, f := range frames {
			if _, err := c.Write(f); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	// until reads frames until the link ends and returns the types seen.
	until := func(c *net.UnixConn) []uint8 {
		buf := make([]byte, maxFrame)
		var types []uint8
		c.SetReadDeadline(time.Now().Add(wait))
		for {
			var fr frame
			if err := readFrame(c, buf, &fr); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal("the front kept a link with a malformed frame")
				}
				return types
			}
			types = append(types, fr.typ)
		}
	}
	if got := until(raw([]byte{linkVersion})); len(got) != 1 || got[0] != frameRefuse {
		t.Errorf("short hello: got %v, want a refusal", got)
	}
	if got := until(raw([]byte{linkVersion + 1, frameHello, 0, 0, 0, 0, 0, 0, 0, 9})); len(got) != 1 || got[0] != frameRefuse {
		t.Errorf("hello of another version: got %v", got)
	}
	for i, bad := range [][]byte{
		{linkVersion, frameDownlink, 0, 0, 0, 1, 0, 0, 0, 0, 0, 60}, // empty message
		{linkVersion, frameAck, 1, 2, 3},                            // not whole stamps
		{linkVersion, frameUplink},                                  // a front's frame
		{linkVersion, 200},                                          // unknown type
	} {
		// A welcomed unit's link ends on the frame; what the front had
		// queued for it may or may not have left by then.
		until(raw(appendHello(nil, uint64(10+i)), bad))
		if s := r.front.Stats(); s.UnitsWelcomed != uint64(i+1) || s.MalformedFrames != uint64(i+3) {
			t.Errorf("frame % x: stats %+v", bad, s)
		}
	}
	eventually(t, "no unit", func() bool { return !r.front.Stats().UnitActive })
	if s := r.front.Stats(); s.MalformedFrames != 6 || s.UnitsRefused != 2 {
		t.Errorf("stats %+v", s)
	}
	// The front still serves.
	u := dialUnit(t, r.path, 100)
	m := uplinkNAS(t, 1)
	r.send(m)
	u.expect(m)
}

// TestMalformedFromFront: a unit ends its link on a malformed frame from
// the front, counts it and fails Accept and its conns.
func TestMalformedFromFront(t *testing.T) {
	path := t.TempDir() + "/fake.sock"
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, bad := range [][]byte{
		{linkVersion, frameOpen, 0, 0, 0, 1},                        // truncated
		{linkVersion, frameAck, 0, 0, 0, 0, 0, 0, 0, 1},             // a unit's frame
		appendOpen(nil, &frame{assoc: 1, resume: true, streams: 2}), // resume without NG Setup
		appendUplink(nil, 1, 0, 0, 60, []byte{1}),                   // stamp 0
	} {
		done, accepted := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			defer c.Close()
			buf := make([]byte, maxFrame)
			var fr frame
			readFrame(c, buf, &fr)
			c.Write(appendWelcome(nil, fr.epoch))
			c.Write(appendOpen(nil, &frame{assoc: 7, streams: 2}))
			<-accepted
			c.Write(bad)
			readFrame(c, buf, &fr) // until the unit hangs up
		}()
		l, err := Dial(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := l.Accept()
		close(accepted)
		if err != nil {
			t.Fatalf("Accept: %v", err)
		}
		if _, err := c.Recv(); !isLinkDown(err) {
			t.Errorf("frame % x: Recv %v, want ErrLinkDown", bad, err)
		}
		if _, _, err := l.Accept(); !isLinkDown(err) {
			t.Errorf("frame % x: Accept %v, want ErrLinkDown", bad, err)
		}
		if l.Malformed() != 1 {
			t.Errorf("frame % x: %d malformed counted", bad, l.Malformed())
		}
		l.Close()
		<-done
	}
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd: cannot count descriptors")
	}
	return len(ents)
}

// TestUnitCycles: 1,000 units come and go (each a failover, half of them
// replacing a live unit, half after the previous one hung up); every
// goroutine and descriptor of theirs is returned, and the gNB's messages
// keep flowing.
func TestUnitCycles(t *testing.T) {
	// Each unit is replaced while its link is up: the wait for a live
	// link to end (RetireWait) is not what this test is about.
	r := newRig(t, func(c *Config) { c.RetireWait = time.Millisecond })
	// Warm up: the front's and the gNB's goroutines, the first link.
	first := dialUnit(t, r.path, 1)
	first.link.Close()
	eventually(t, "no unit", func() bool { return !r.front.Stats().UnitActive })
	runtime.GC()
	goroutines, fds := runtime.NumGoroutine(), countFDs(t)

	var prev *Link
	for i := range 1000 {
		l, err := Dial(r.path, uint64(i+2))
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if prev != nil {
			prev.Close()
		}
		c, _, err := l.Accept()
		if err != nil {
			t.Fatalf("cycle %d: Accept: %v", i, err)
		}
		if i%100 == 0 {
			m := uplinkNAS(t, i)
			r.send(m)
			got, err := c.Recv()
			if err != nil || !bytes.Equal(got.Data, m) {
				t.Fatalf("cycle %d: Recv % x, %v", i, got.Data, err)
			}
			c.(sctp.Acker).Ack(got.Stamp)
			// A replaced unit's acks do not count: let this one land.
			eventually(t, "the ack", func() bool { return r.front.Stats().Logged == 0 })
		}
		if i%2 == 0 {
			l.Close()
			prev = nil
		} else {
			prev = l
		}
	}
	if prev != nil {
		prev.Close()
	}
	eventually(t, "no unit", func() bool { return !r.front.Stats().UnitActive })
	eventually(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= goroutines })
	eventually(t, "descriptors back", func() bool { return countFDs(t) <= fds })
	if s := r.front.Stats(); s.UnitsWelcomed != 1001 || s.Associations != 1 || s.MalformedFrames != 0 {
		t.Errorf("stats %+v", s)
	}
	if n := r.inits.n.Load(); n != 1 {
		t.Errorf("%d INITs", n)
	}
}

// TestFrontClose: Close ends the links (units see ErrLinkDown) and the
// gNB associations, and returns every goroutine.
func TestFrontClose(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newRig(t, nil)
	u := dialUnit(t, r.path, 1)
	if err := r.front.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-u.end:
		if !isLinkDown(err) {
			t.Errorf("unit's Recv after the front closed: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("unit still up after the front closed")
	}
	select {
	case _, ok := <-r.down:
		if ok {
			t.Fatal("gNB got a message")
		}
	case <-time.After(wait):
		t.Fatal("gNB association still up after the front closed")
	}
	u.link.Close()
	r.gnb.Close()
	eventually(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= before+1 })
	if _, err := os.Stat(r.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit socket left behind: %v", err)
	}
	// A new front takes the path over.
	f2, err := New(Config{UnitPath: r.path})
	if err != nil {
		t.Fatal(err)
	}
	f2.Close()
}

// TestStaleSocket: a socket a dead front left is replaced; a live front's
// is not.
func TestStaleSocket(t *testing.T) {
	f, path := newFront(t, nil)
	if _, err := New(Config{UnitPath: path}); err == nil {
		t.Fatal("a second front took a live front's socket")
	}
	f.Close()
	// What a killed front leaves: the socket file, nobody listening.
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	f2, err := New(Config{UnitPath: path})
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	f2.Close()
}

// TestCloseSendsAcks: a unit that acknowledges and closes its link has
// its acknowledgements counted: the next unit is not sent the message.
func TestCloseSendsAcks(t *testing.T) {
	r := newRig(t, nil)
	a := dialUnit(t, r.path, 1)
	m1, m2 := uplinkNAS(t, 1), uplinkNAS(t, 2)
	r.send(m1)
	a.ack(a.expect(m1).Stamp)
	a.link.Close()
	eventually(t, "no unit", func() bool { return !r.front.Stats().UnitActive })
	b := dialUnit(t, r.path, 2)
	r.send(m2)
	b.expect(m2)
}

// TestReplayLogCompacts: acknowledgements out of order leave holes that
// the log compacts, so its memory follows what is live.
func TestReplayLogCompacts(t *testing.T) {
	var l replayLog
	for s := uint64(1); s <= 10000; s++ {
		l.push(entry{stamp: s, data: []byte{1}})
	}
	for s := uint64(2); s <= 10000; s++ { // the first stays unacknowledged
		if !l.ack(s) {
			t.Fatalf("ack %d refused", s)
		}
	}
	if l.live != 1 || l.bytes != 1 || len(l.entries)-l.head > 64 {
		t.Fatalf("live %d bytes %d entries %d", l.live, l.bytes, len(l.entries)-l.head)
	}
	if l.ack(2) || l.ack(0) || l.ack(20000) {
		t.Fatal("acked a stamp not in the log")
	}
	var got []uint64
	l.each(func(e *entry) { got = append(got, e.stamp) })
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("left %v", got)
	}
	l.ack(1)
	if l.live != 0 || len(l.entries) != 0 {
		t.Fatalf("live %d entries %d after the last ack", l.live, len(l.entries))
	}
}

// TestLinkCloseFlushesAcks: Close sends every acknowledgement queued
// before it, however the ack writer was scheduled (200 rounds against a
// fake front that counts what it receives).
func TestLinkCloseFlushesAcks(t *testing.T) {
	path := t.TempDir() + "/fake.sock"
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for round := range 200 {
		got := make(chan int, 1)
		go func() {
			c, err := ln.AcceptUnix()
			if err != nil {
				got <- -1
				return
			}
			defer c.Close()
			buf := make([]byte, maxFrame)
			var fr frame
			readFrame(c, buf, &fr)
			c.Write(appendWelcome(nil, fr.epoch))
			c.Write(appendOpen(nil, &frame{assoc: 1, streams: 1}))
			n := 0
			for readFrame(c, buf, &fr) == nil {
				if fr.typ == frameAck {
					n += len(fr.stamps)
				}
			}
			got <- n
		}()
		l, err := Dial(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		for s := range uint64(10) {
			c.(sctp.Acker).Ack(s + 1)
		}
		l.Close()
		if n := <-got; n != 10 {
			t.Fatalf("round %d: the front got %d of 10 acks", round, n)
		}
	}
}

// TestPauseAndDrain is a planned handover: unit A pauses, what comes after
// is not delivered to it, it acknowledges what it handled and closes the
// link; unit B gets exactly what A did not acknowledge.
func TestPauseAndDrain(t *testing.T) {
	r := newRig(t, nil)
	a := dialUnit(t, r.path, 1)
	setup := setupRequest(t)
	r.send(setup)
	sm := a.expect(setup)
	a.send(setupResponse(t))
	gnbRecv(t, r.down)
	a.ack(sm.Stamp)

	first := uplinkNAS(t, 0)
	r.send(first)
	m := a.expect(first)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.link.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	later := uplinkNAS(t, 1)
	r.send(later)
	eventually(t, "the message after the pause logged", func() bool { return r.front.Stats().Logged == 2 })
	got := make(chan error, 1)
	go func() {
		_, err := a.conn.Recv()
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Recv after Pause returned (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	// A finishes the step it had: its answer still reaches the gNB, and
	// its acknowledgement goes out with Close.
	a.send(downlinkNAS(t, "answer"))
	if d := gnbRecv(t, r.down); !bytes.Equal(d.Data, downlinkNAS(t, "answer")) {
		t.Fatalf("gNB got % x after the pause", d.Data)
	}
	a.ack(m.Stamp)
	a.link.Close()
	select {
	case err := <-got:
		if !errors.Is(err, ErrLinkDown) {
			t.Fatalf("the paused Recv ended with %v, want ErrLinkDown", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the paused Recv did not end with the link")
	}

	b := dialUnit(t, r.path, 2)
	if mb := b.expect(later); mb.Stamp <= m.Stamp {
		t.Errorf("replayed stamp %d not after %d", mb.Stamp, m.Stamp)
	}
	if l := r.front.Stats().Logged; l != 1 {
		t.Errorf("%d messages logged, want the one B has not acknowledged", l)
	}
}

// TestOpenedMarker: after the opens of the associations it holds, the
// front sends a unit its marker (issue 36 §3): Link.Opened closes once
// Accept has returned each of those opens, not before, and an association
// set up later comes through Accept after it. A unit that takes over gets
// the marker after its resumed opens too.
func TestOpenedMarker(t *testing.T) {
	r := newRig(t, nil)
	eventually(t, "the gNB's association", func() bool { return r.front.Stats().Associations == 1 })
	opened := func(l *Link) bool {
		select {
		case <-l.Opened():
			return true
		default:
			return false
		}
	}

	a := dialUnit(t, r.path, 1)
	time.Sleep(20 * time.Millisecond) // the marker is in the link by now
	if opened(a.link) {
		t.Fatal("Opened closed before Accept passed the marker")
	}
	later := make(chan sctp.Conn, 1)
	go func() {
		c, _, err := a.link.Accept()
		if err == nil {
			later <- c
		}
	}()
	eventually(t, "Opened closed", func() bool { return opened(a.link) })
	r.dialGNB()
	select {
	case c := <-later:
		if c == nil {
			t.Fatal("a nil association")
		}
	case <-time.After(wait):
		t.Fatal("the association set up after the marker did not come through Accept")
	}

	a.link.conn.Close() // A dies
	eventually(t, "the front to notice A's death", func() bool { return !r.front.Stats().UnitActive })
	l, err := Dial(r.path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 2 {
		if _, _, err := l.Accept(); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if opened(l) {
			t.Fatalf("Opened closed after %d of 2 opens", i+1)
		}
	}
	go l.Accept()
	eventually(t, "B's Opened closed", func() bool { return opened(l) })
}

// TestPauseWaitsForReaders: Pause returns only once the reader of every
// association is back in Recv, done with the message it took.
func TestPauseWaitsForReaders(t *testing.T) {
	l := &Link{conns: make(map[uint32]*Conn), done: make(chan struct{})}
	c := &Conn{link: l, id: 1, sig: make(chan struct{}, 1)}
	l.conns[1] = c
	c.push(sctp.Message{Data: []byte{1}, Stamp: 1})
	c.push(sctp.Message{Data: []byte{2}, Stamp: 2})
	if _, err := c.Recv(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Pause(short); err == nil {
		t.Fatal("Pause returned while the reader was busy with a message")
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Recv() // back: done with message 1; message 2 is not delivered
		got <- err
	}()
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := l.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("Recv after Pause returned (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(l.done)
	c.end(ErrLinkDown)
	if err := <-got; !errors.Is(err, ErrLinkDown) {
		t.Fatalf("Recv at the link's end: %v", err)
	}
}
