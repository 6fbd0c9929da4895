package amf

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sctp"
)

// stampConn is the AMF's end of an association through a test N2 front
// end: each gNB message gets the next front-wide stamp and is logged; a
// message that carries a stamp already is a replay and passes as it is.
// Acknowledgements are counted per stamp.
type stampConn struct {
	*memConn
	next *atomic.Uint64 // the front's stamps

	mu    sync.Mutex
	log   []sctp.Message
	acked map[uint64]int
}

func newStampConn(c *memConn, next *atomic.Uint64) *stampConn {
	return &stampConn{memConn: c, next: next, acked: map[uint64]int{}}
}

func (c *stampConn) Recv() (sctp.Message, error) {
	m, err := c.memConn.Recv()
	if err != nil || m.Stamp != 0 {
		return m, err
	}
	m.Stamp = c.next.Add(1)
	c.mu.Lock()
	c.log = append(c.log, m)
	c.mu.Unlock()
	return m, nil
}

func (c *stampConn) Ack(s uint64) {
	c.mu.Lock()
	c.acked[s]++
	c.mu.Unlock()
}

// logged returns the messages logged with stamps above after.
func (c *stampConn) logged(after uint64) []sctp.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []sctp.Message
	for _, m := range c.log {
		if m.Stamp > after {
			out = append(out, m)
		}
	}
	return out
}

func (c *stampConn) ackCount(s uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked[s]
}

// stored is what a record store holds of s: the last record of each
// context, decoded.
func (s *recordingSink) stored(t testing.TB) []UERecord {
	t.Helper()
	s.mu.Lock()
	ids := make([]uint64, 0, len(s.got))
	for id := range s.got {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	var out []UERecord
	for _, id := range ids {
		var r UERecord
		if err := wire.Decode(s.last(id), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// takeoverFixture: AMF 1 serves gNB 1 through a stamping front end (its
// acknowledgements are counted but, as if lost with the unit, never drop
// anything from the log); a takeover restores AMF 2 from what AMF 1's
// sink stored and resumes gNB 1 on a new association of the same front.
type takeoverFixture struct {
	t      *testing.T
	hn     *fakeHN
	smf    *fakeSMF
	a1, a2 *AMF
	sink   *recordingSink
	stamps atomic.Uint64
	c1, c2 *stampConn
	g1, g2 *testGNB
	setup  []byte
}

func newTakeoverFixture(t *testing.T) *takeoverFixture {
	f := &takeoverFixture{t: t, hn: newFakeHN(), smf: newFakeSMF()}
	f.a1 = newRecordAMF(t, f.hn, f.smf)
	f.sink = newRecordingSink(t)
	f.a1.SetRecordSink(f.sink)
	gEnd, amfEnd := memPipe(8)
	f.c1 = newStampConn(amfEnd, &f.stamps)
	f.a1.ServeConn(f.c1)
	f.g1 = newTestGNB(t, gEnd)
	req := ngSetupRequest(testPLMN, 1, testSlice)
	req.GlobalRANNodeID.GNBID = 1
	b, err := ngap.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	f.setup = b
	f.g1.sendRaw(0, b)
	expect[*ngap.NGSetupResponse](t, f.g1.recv())
	return f
}

// takeOver kills AMF 1 (its last steps' records are in the store) and
// restores AMF 2 from the store, gNB 1 resumed: nothing is replayed yet.
func (f *takeoverFixture) takeOver() {
	t := f.t
	t.Helper()
	recs := f.sink.stored(t)
	f.a1.Close()
	f.a2 = newRecordAMF(t, f.hn, f.smf)
	f.a2.SetRecordSink(newRecordingSink(t)) // a unit's: its steps hold their outputs
	if err := f.a2.Restore(recs); err != nil {
		t.Fatal(err)
	}
	gEnd, amfEnd := memPipe(8)
	f.c2 = newStampConn(amfEnd, &f.stamps)
	if err := f.a2.ResumeConn(f.c2, f.setup); err != nil {
		t.Fatal(err)
	}
	f.g2 = newTestGNB(t, gEnd)
}

// replay delivers the messages AMF 1 got, stamped after after, to AMF 2
// with their stamps, as the front replays its log, and waits until each
// is acknowledged.
func (f *takeoverFixture) replay(after uint64) []uint64 {
	t := f.t
	t.Helper()
	var stamps []uint64
	for _, m := range f.c1.logged(after) {
		f.c2.memConn.in <- m
		stamps = append(stamps, m.Stamp)
	}
	for _, s := range stamps {
		waitFor(t, "the replayed message acknowledged", func() bool { return f.c2.ackCount(s) > 0 })
	}
	return stamps
}

// noMessage fails when g got an NGAP message within a short while.
func noMessage(t *testing.T, g *testGNB, what string) {
	t.Helper()
	select {
	case m := <-g.in:
		msg, _ := ngap.Decode(m.Data)
		t.Fatalf("%s: the gNB got %T %+v", what, msg, msg)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestReplayedMessagesAppliedOnce: a UE deregisters (its context and
// connection gone) and another is in the middle of its registration
// (Initial UE Message and Authentication Response handled, the Security
// Mode Command sent) when AMF 1 dies with none of those messages
// acknowledged to the front. AMF 2 restores, the front replays all of
// them: each is acknowledged and none runs again: no second context for
// the replayed Initial UE Message, no Error Indication for the release of
// the connection that is gone, no second challenge; the outputs of the
// UE's last step (the Security Mode Command, which may not have left) are
// sent again, once. The UE then finishes its registration on AMF 2 with
// the NGAP IDs of AMF 1.
func TestReplayedMessagesAppliedOnce(t *testing.T) {
	f := newTakeoverFixture(t)
	leaving := newTestUE(t, f.g1, f.hn, "0000000001")
	leaving.register()
	waitFor(t, "registered", func() bool { return f.a1.Stats().Registrations == 1 })
	waitFor(t, "AMF 1 done with its steps", func() bool { return f.c1.ackCount(f.stamps.Load()) > 0 })
	before := f.stamps.Load() // the front's log is acknowledged up to here
	leaving.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: leaving.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *leaving.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, leaving.recvNAS())
	leaving.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, leaving.recvNGAP()))
	waitFor(t, "the leaving UE's context gone", func() bool { return f.a1.Stats().UEContexts == 0 })

	u := newTestUE(t, f.g1, f.hn, "0000000002")
	req := u.registrationRequest(u.suci(), nas.RegistrationInitial)
	u.sendInitial(req, nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	dl := expect[*ngap.DownlinkNASTransport](t, u.recvNGAP())
	smc := expect[*nas.SecurityModeCommand](t, u.openNAS(dl.NASPDU))
	waitFor(t, "AMF 1 done with its steps", func() bool {
		return f.c1.ackCount(f.stamps.Load()) > 0
	})

	f.takeOver()
	u.g = f.g2
	stamps := f.replay(before)
	if len(stamps) != 4 {
		t.Fatalf("%d messages replayed, want 4 (UL NAS, Release Complete, Initial UE Message, UL NAS)", len(stamps))
	}
	st := f.a2.Stats()
	if st.UEContexts != 1 || st.ReplayDuplicates != 4 || st.ErrorIndications != 0 || st.Authentications != 0 || st.OutputsResent != 1 {
		t.Fatalf("after the replay: %d contexts, %d duplicates, %d Error Indications, %d authentications, %d outputs resent; want 1, 4, 0, 0, 1",
			st.UEContexts, st.ReplayDuplicates, st.ErrorIndications, st.Authentications, st.OutputsResent)
	}
	// The last step of the registering UE (its Authentication Response)
	// may not have sent its Security Mode Command before AMF 1 died: the
	// replay of its message sends it again, the same bytes (the UE
	// discards a copy it has by its NAS COUNT), and nothing else.
	again := expect[*ngap.DownlinkNASTransport](t, f.g2.recv())
	if !bytes.Equal(again.NASPDU, dl.NASPDU) || again.AMFUENGAPID != dl.AMFUENGAPID || again.RANUENGAPID != dl.RANUENGAPID {
		t.Fatalf("sent again: %+v, want the Security Mode Command %+v", again, dl)
	}
	noMessage(t, f.g2, "after the replay")
	for _, s := range stamps {
		if n := f.c2.ackCount(s); n != 1 {
			t.Errorf("stamp %d acknowledged %d times, want once", s, n)
		}
	}

	// The UE answers the command it got from AMF 1 and registers.
	u.answerSMC(smc, req)
	u.acceptRegistration(u.recvNAS())
	waitFor(t, "registered on AMF 2", func() bool { return f.a2.Stats().Registrations == 1 })
	if st := f.a2.Stats(); st.UEContexts != 1 || st.ErrorIndications != 0 {
		t.Fatalf("after the registration: %d contexts, %d Error Indications", st.UEContexts, st.ErrorIndications)
	}
}
