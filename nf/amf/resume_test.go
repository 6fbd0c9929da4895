package amf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// TestResumeConn: UEs register through gNB A on AMF 1 (with a sink
// collecting records); AMF 2 restores the records and resumes a new
// association of A with A's NG Setup Request. No NG Setup Response is sent
// on it; downlink NAS for a connected UE (a deregistration from the
// network) goes out on it with the NGAP IDs of AMF 1, and the UE's uplink
// NAS on it is served on that connection; an idle UE's Service Request is served; requests that do not
// decode or that NG Setup would refuse are refused, the association
// untouched.
func TestResumeConn(t *testing.T) {
	hn, smf := newFakeHN(), newFakeSMF()
	a1 := newRecordAMF(t, hn, smf)
	a1.SetRecordSink(newRecordingSink(t))
	gA := setupGNBAs(t, a1, 1, 1)
	connected := newTestUE(t, gA, hn, "0000000001")
	connected.register()
	idle := newTestUE(t, gA, hn, "0000000002")
	idle.register()
	waitFor(t, "registered", func() bool { return a1.Stats().Registrations == 2 })
	idleAmongOthers(t, a1, idle)
	recs := decodeRecords(t, records(t, a1))
	a1.Close()

	a2 := newRecordAMF(t, hn, smf)
	if err := a2.Restore(recs); err != nil {
		t.Fatal(err)
	}
	setupA := ngSetupRequest(testPLMN, 1, testSlice)
	setupA.GlobalRANNodeID.GNBID = 1
	b, err := ngap.Encode(setupA)
	if err != nil {
		t.Fatal(err)
	}

	// Refused: not NGAP, not an NG Setup Request, a TA the AMF does not
	// serve. The association stays as it was: open, nothing sent.
	gEnd, amfEnd := memPipe(8)
	wrongTA := ngSetupRequest(testPLMN, 9, testSlice)
	wrongTA.GlobalRANNodeID.GNBID = 1
	notSetup, err := ngap.Encode(&ngap.ErrorIndication{})
	if err != nil {
		t.Fatal(err)
	}
	badTA, err := ngap.Encode(wrongTA)
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string][]byte{"garbage": {0xde, 0xad}, "not NG Setup": notSetup, "TA not served": badTA} {
		if err := a2.ResumeConn(amfEnd, req); err == nil {
			t.Errorf("%s: resumed", name)
		}
	}
	select {
	case <-amfEnd.closed:
		t.Fatal("a refused association was closed")
	case m := <-gEnd.in:
		t.Fatalf("a refused association got %d octets", len(m.Data))
	default:
	}
	if s := a2.Stats(); s.GNBs != 0 {
		t.Fatalf("refused requests left %d gNBs", s.GNBs)
	}

	if err := a2.ResumeConn(amfEnd, b); err != nil {
		t.Fatal(err)
	}
	gB := newTestGNB(t, gEnd)
	connected.g, idle.g = gB, gB
	if s := a2.Stats(); s.GNBs != 1 || s.NGSetups != 0 {
		t.Errorf("stats %+v: want one gNB and no NG Setup answered", s)
	}

	// Downlink for a restored connection: a deregistration from the
	// network goes out on the resumed association with the NGAP IDs AMF 1
	// gave (recvNAS checks them); it is the first message on it, no NG
	// Setup Response came before.
	ids := [2]int64{connected.amfID, connected.ranID}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a2.Deregister(ctx, connected.supi, nas.Cause5GSServicesNotAllowed, false); err != nil {
		t.Fatal(err)
	}
	expect[*nas.DeregistrationRequestUETerminated](t, connected.recvNAS())
	// The UE's uplink NAS on it is served on the same connection.
	connected.sendUL(&nas.DeregistrationAcceptUETerminated{})
	connected.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, connected.recvNGAP()))
	if got := [2]int64{connected.amfID, connected.ranID}; got != ids {
		t.Fatalf("NGAP IDs %v, want %v", got, ids)
	}
	waitFor(t, "network deregistration done", func() bool { return a2.Stats().NetworkDeregistrations == 1 })

	// The idle UE comes back with a Service Request on a new connection.
	idle.serviceRequest(nas.ServiceSignalling, nil, nil)
	ics := expect[*ngap.InitialContextSetupRequest](t, idle.recvNGAP())
	expect[*nas.ServiceAccept](t, idle.openNAS(ics.NASPDU))
	waitFor(t, "the idle UE connected, the other gone", func() bool {
		s := a2.Stats()
		return s.UEContexts == 1 && s.ConnectedUEs == 1
	})
}

// TestResumeSendsWhatWasKept: a restored step that sends to a UE while its
// gNB is detached (here a deregistration from the network; in a takeover,
// an SMF finishing an establishment it had in flight) does not lose the
// message: the gNB gets it first when it is resumed, with the UE's NGAP
// IDs. A gNB that ResumeDone gives up drops what was kept.
func TestResumeSendsWhatWasKept(t *testing.T) {
	hn, smf := newFakeHN(), newFakeSMF()
	a1 := newRecordAMF(t, hn, smf)
	a1.SetRecordSink(newRecordingSink(t))
	gA := setupGNBAs(t, a1, 1, 1)
	connected := newTestUE(t, gA, hn, "0000000001")
	connected.register()
	waitFor(t, "registered", func() bool { return a1.Stats().Registrations == 1 })
	recs := decodeRecords(t, records(t, a1))
	a1.Close()

	a2 := newRecordAMF(t, hn, smf)
	if err := a2.Restore(recs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a2.Deregister(ctx, connected.supi, nas.Cause5GSServicesNotAllowed, false); err != nil {
		t.Fatalf("a send to a UE of a gNB not resumed yet: %v", err)
	}
	setupA := ngSetupRequest(testPLMN, 1, testSlice)
	setupA.GlobalRANNodeID.GNBID = 1
	b, err := ngap.Encode(setupA)
	if err != nil {
		t.Fatal(err)
	}
	gEnd, amfEnd := memPipe(8)
	if err := a2.ResumeConn(amfEnd, b); err != nil {
		t.Fatal(err)
	}
	connected.g = newTestGNB(t, gEnd)
	ids := [2]int64{connected.amfID, connected.ranID}
	expect[*nas.DeregistrationRequestUETerminated](t, connected.recvNAS())
	if got := [2]int64{connected.amfID, connected.ranID}; got != ids {
		t.Fatalf("NGAP IDs %v, want %v", got, ids)
	}
	// The message kept, not a retransmission of a lost one.
	if s := a2.Stats(); s.Retransmissions != 0 {
		t.Fatalf("%d retransmissions: the first Deregistration Request was lost", s.Retransmissions)
	}
}

// lostFrontConn is an association held by an N2 front end whose link the test
// cuts: Recv then fails with sctp.ErrFrontLost.
type lostFrontConn struct {
	*memConn
	lost chan struct{}
}

func (c *lostFrontConn) Recv() (sctp.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.lost:
		return sctp.Message{}, fmt.Errorf("link down: %w", sctp.ErrFrontLost)
	}
}

// TestFrontLostKeepsConnections: when the unit loses its N2 front end, its
// associations live on there for the next unit: the AMF loses none of
// their UE connections, and records no such step for its successor.
func TestFrontLostKeepsConnections(t *testing.T) {
	hn, smf := newFakeHN(), newFakeSMF()
	a := newRecordAMF(t, hn, smf)
	sink := newRecordingSink(t)
	a.SetRecordSink(sink)
	gEnd, amfEnd := memPipe(8)
	fc := &lostFrontConn{memConn: amfEnd, lost: make(chan struct{})}
	a.ServeConn(fc)
	g := newTestGNB(t, gEnd)
	req := ngSetupRequest(testPLMN, 1, testSlice)
	req.GlobalRANNodeID.GNBID = 1
	g.send(0, req)
	expect[*ngap.NGSetupResponse](t, g.recv())
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().Registrations == 1 })
	before := a.Stats()
	if before.ConnectedUEs != 1 {
		t.Fatalf("%d UEs connected before, want 1", before.ConnectedUEs)
	}
	close(fc.lost)
	waitFor(t, "the association closed", func() bool {
		select {
		case <-fc.closed:
			return true
		default:
			return false
		}
	})
	time.Sleep(20 * time.Millisecond) // a loss handling would have run by now
	if s := a.Stats(); s.ConnectedUEs != 1 || s.IdleUEs != 0 {
		t.Fatalf("after the front end was lost: %d connected, %d idle: a connection was lost", s.ConnectedUEs, s.IdleUEs)
	}
}
