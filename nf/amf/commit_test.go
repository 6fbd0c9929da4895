package amf

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sctp"
)

// commitLog is one event list that a sink and the AMF's ends of the test
// associations write to, and the state the checks read: the last record
// the sink got of each UE context and which context each AMF UE NGAP ID
// belongs to. A check that fails is an error of the test.
type commitLog struct {
	t      testing.TB
	mu     sync.Mutex
	events []string
	last   map[uint64]*UERecord // by context ID
	owner  map[int64]uint64     // AMF UE NGAP ID -> context ID
	sink   bool                 // a RecordSink is set: the checks apply
}

func newCommitLog(t testing.TB) *commitLog {
	return &commitLog{t: t, last: map[uint64]*UERecord{}, owner: map[int64]uint64{}}
}

func (l *commitLog) add(format string, args ...any) {
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

// UERecord implements RecordSink: "record <id> <seq>".
func (l *commitLog) UERecord(r *UERecord, _ []byte) {
	b, err := wire.Append(nil, r)
	if err != nil {
		l.t.Errorf("sink: %v", err)
		return
	}
	var c UERecord
	if err := wire.Decode(b, &c); err != nil {
		l.t.Errorf("sink: %v", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add("record %d %d", r.ID, r.Seq)
	if p := l.last[r.ID]; p != nil && p.Seq+1 != r.Seq {
		l.t.Errorf("record %d: Seq %d after %d", r.ID, r.Seq, p.Seq)
	}
	l.last[r.ID] = &c
	for _, g := range c.legs() {
		l.owner[g.AMFUENGAPID] = c.ID
	}
}

// recordOf is the last record of the context that holds (or held) the
// connection with AMF UE NGAP ID id, and the leg as it records it (nil
// when the record no longer holds it). Under l.mu.
func (l *commitLog) recordOf(id int64) (*UERecord, *LegRecord) {
	ctx, ok := l.owner[id]
	if !ok {
		return nil, nil
	}
	r := l.last[ctx]
	for _, g := range r.legs() {
		if g.AMFUENGAPID == id {
			return r, g
		}
	}
	return r, nil
}

// recordByRAN is the last record holding a leg on gNB gid with RAN UE NGAP
// ID ran. Under l.mu.
func (l *commitLog) recordByRAN(gid ngap.GlobalGNBID, ran int64) *UERecord {
	for _, r := range l.last {
		for _, g := range r.legs() {
			if g.GNB == gid && g.RANUENGAPID == ran {
				return r
			}
		}
	}
	return nil
}

// nasSQN is the sequence number of a security protected 5GMM NAS PDU (TS
// 24.501 §9.1.1: EPD, header type, MAC, SQN), false for a plain one.
func nasSQN(pdu []byte) (uint8, bool) {
	if len(pdu) < 7 || pdu[0] != nas.EPD5GMM || pdu[1]&0x0F == 0 {
		return 0, false
	}
	return pdu[6], true
}

// countCovers reports whether NAS COUNT c of a record has reached the
// message with sequence number sqn (the low octet of its COUNT).
func countCovers(c NASCountRecord, sqn uint8) bool {
	return c.Used && uint8(uint8(c.Last)-sqn) < 128
}

// checkSend is the output commit check of an NGAP message the AMF sends:
// the record of the UE context that sent it already holds the state that
// produced it. Under l.mu.
func (l *commitLog) checkSend(m ngap.Message) string {
	switch v := m.(type) {
	case *ngap.Paging:
		for _, r := range l.last {
			if r.GUTI != nil && r.GUTI.TMSI == v.UEPagingIdentity.TMSI {
				if r.NASTimer.Timer != uint8(timerT3513) {
					return "paging before the record with T3513 running"
				}
				return ""
			}
		}
		return "paging a UE of which no record was committed"
	case *ngap.ErrorIndication, *ngap.NGSetupResponse, *ngap.NGSetupFailure:
		return ""
	}
	amfID, _ := ueIDsOf(m)
	if amfID == nil {
		return ""
	}
	if h, ok := m.(*ngap.HandoverCommand); ok {
		r, _ := l.recordOf(h.AMFUENGAPID)
		if r == nil || r.Target == nil || r.Target.State != uint8(legHandoverPrepared) {
			return "Handover Command before the record of the prepared target"
		}
	}
	r, leg := l.recordOf(*amfID)
	if r != nil && r.State.RM == uint8(rmGone) {
		return "" // the step removed the context: its tombstone is committed
	}
	if r == nil || leg == nil {
		return fmt.Sprintf("no committed record holds the connection %d", *amfID)
	}
	switch v := m.(type) {
	case *ngap.UEContextReleaseCommand:
		if leg.State != uint8(legReleasing) {
			return "UE Context Release Command before the record of the releasing leg"
		}
	case *ngap.DownlinkNASTransport:
		return checkDownlinkCount(r, v.NASPDU)
	case *ngap.InitialContextSetupRequest:
		return checkDownlinkCount(r, v.NASPDU)
	}
	return ""
}

func checkDownlinkCount(r *UERecord, pdu []byte) string {
	sqn, ok := nasSQN(pdu)
	if !ok {
		return ""
	}
	for _, c := range []*NASSecurityRecord{r.Security.Current, r.Security.Pending} {
		if c != nil && countCovers(c.Downlink, sqn) {
			return ""
		}
	}
	return fmt.Sprintf("NAS message with SQN %d sent before the record of its downlink COUNT", sqn)
}

// checkAck is the acknowledgement check of a stamped message m from gNB
// gid: the step that handled it is committed. Under l.mu.
func (l *commitLog) checkAck(gid ngap.GlobalGNBID, m ngap.Message) string {
	var r *UERecord
	var pdu []byte
	switch v := m.(type) {
	case *ngap.InitialUEMessage:
		r, pdu = l.recordByRAN(gid, v.RANUENGAPID), v.NASPDU
	case *ngap.UplinkNASTransport:
		if _, known := l.owner[v.AMFUENGAPID]; !known {
			return "" // refused on the reader: no UE step
		}
		r, _ = l.recordOf(v.AMFUENGAPID)
		pdu = v.NASPDU
	default:
		if amfID, _ := ueIDsOf(m); amfID != nil {
			if rr, _ := l.recordOf(*amfID); rr == nil {
				return fmt.Sprintf("acknowledged before any record of connection %d", *amfID)
			}
		}
		return ""
	}
	if r == nil {
		return "NAS message acknowledged before a record of its UE"
	}
	sqn, ok := nasSQN(pdu)
	if !ok || r.State.RM == uint8(rmGone) {
		return ""
	}
	for _, c := range []*NASSecurityRecord{r.Security.Current, r.Security.Pending} {
		if c != nil && countCovers(c.Uplink, sqn) {
			return ""
		}
	}
	return fmt.Sprintf("NAS message with SQN %d acknowledged before the record of its uplink COUNT", sqn)
}

// commitConn is the AMF's end of a test association: it logs what the AMF
// sends ("send <gnb> <message>") and checks it against the sink's records;
// with stamps it stamps what the gNB sends, as a front end does, and takes
// the acknowledgements (sctp.Acker).
type commitConn struct {
	*memConn
	log    *commitLog
	gnb    ngap.GlobalGNBID
	stamps bool

	mu    sync.Mutex
	next  uint64
	sent  map[uint64]ngap.Message // stamped, by stamp
	acked map[uint64]int
}

func (c *commitConn) Recv() (sctp.Message, error) {
	m, err := c.memConn.Recv()
	if err != nil || !c.stamps {
		return m, err
	}
	dec, derr := ngap.Decode(m.Data)
	c.mu.Lock()
	c.next++
	m.Stamp = c.next
	if derr == nil {
		c.sent[m.Stamp] = dec
	} else {
		c.sent[m.Stamp] = nil
	}
	c.mu.Unlock()
	return m, nil
}

func (c *commitConn) Send(stream uint16, ppid uint32, data []byte) error {
	m, err := ngap.Decode(data)
	if err != nil {
		c.log.t.Errorf("AMF sent undecodable NGAP: %v", err)
	}
	c.log.mu.Lock()
	c.log.add("send %d %T", c.gnb.GNBID, m)
	if c.log.sink {
		if why := c.log.checkSend(m); why != "" {
			c.log.t.Errorf("%T to gNB %d: %s", m, c.gnb.GNBID, why)
		}
	}
	c.log.mu.Unlock()
	return c.memConn.Send(stream, ppid, data)
}

// Ack implements sctp.Acker.
func (c *commitConn) Ack(stamp uint64) {
	c.mu.Lock()
	m, ok := c.sent[stamp]
	c.acked[stamp]++
	n := c.acked[stamp]
	c.mu.Unlock()
	if !ok {
		c.log.t.Errorf("gNB %d: acknowledged stamp %d never sent", c.gnb.GNBID, stamp)
		return
	}
	if n > 1 {
		c.log.t.Errorf("gNB %d: stamp %d (%T) acknowledged %d times", c.gnb.GNBID, stamp, m, n)
	}
	c.log.mu.Lock()
	c.log.add("ack %d %d", c.gnb.GNBID, stamp)
	if why := c.log.checkAck(c.gnb, m); why != "" && c.log.sink {
		c.log.t.Errorf("gNB %d: %T (stamp %d): %s", c.gnb.GNBID, m, stamp, why)
	}
	c.log.mu.Unlock()
}

// unacked is how many stamped messages are not acknowledged.
func (c *commitConn) unacked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for s := range c.sent {
		if c.acked[s] == 0 {
			n++
		}
	}
	return n
}

// commitGNB attaches gNB id (serving tac) to a through a commitConn and
// completes NG Setup.
func commitGNB(t testing.TB, a *AMF, l *commitLog, id, tac uint32, stamps bool) (*testGNB, *commitConn) {
	t.Helper()
	gEnd, amfEnd := memPipe(8)
	c := &commitConn{memConn: amfEnd, log: l, gnb: gnbID(id), stamps: stamps,
		sent: map[uint64]ngap.Message{}, acked: map[uint64]int{}}
	a.ServeConn(c)
	g := newTestGNB(t, gEnd)
	req := ngSetupRequest(testPLMN, tac, testSlice)
	req.GlobalRANNodeID.GNBID = id
	g.send(0, req)
	expect[*ngap.NGSetupResponse](t, g.recv())
	return g, c
}

// runCommitScene runs, on a fresh AMF (with the log as its RecordSink when
// sink), registration, PDU session establishment, a release to CM-IDLE and
// a service request, an N2 handover, a deregistration, and messages that
// change nothing; it returns the log and the AMF's ends of the two
// associations.
func runCommitScene(t *testing.T, sink, stamps bool) (*commitLog, []*commitConn) {
	hn, smf := newFakeHN(), newFakeSMF()
	a := newRecordAMF(t, hn, smf)
	smf.amf = a
	l := newCommitLog(t)
	if sink {
		l.sink = true
		a.SetRecordSink(l)
	}
	g1, c1 := commitGNB(t, a, l, 1, 1, stamps)
	g2, c2 := commitGNB(t, a, l, 2, 2, stamps)

	u := newTestUE(t, g1, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().Registrations == 1 })
	u.establish(1, "")
	waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == 1 })

	idleAmongOthers(t, a, u)
	u.serviceRequest(nas.ServiceData, bits(1), bits(1))
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	g1.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		PDUSessionResourceSetupItems: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ics-transfer")}}})
	waitFor(t, "user plane active", func() bool { return len(smf.callsOf("update")) >= 2 })

	// Messages that change nothing are acknowledged too.
	g1.send(0, &ngap.ErrorIndication{Cause: &ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified}})
	g1.send(1, &ngap.NASNonDeliveryIndication{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, NASPDU: []byte{1},
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnspecified}})
	g1.send(1, &ngap.UplinkNASTransport{AMFUENGAPID: 999999, RANUENGAPID: 5, NASPDU: []byte{1}, UserLocation: u.location()})
	expect[*ngap.ErrorIndication](t, g1.recv())

	req := prepareHandover(t, g1, g2, u, 700)
	g2.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 700, UserLocation: ngap.UserLocationNR{
		NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 0x20}, TAI: testTAI2}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, g1.recv()))
	u.g, u.ranID, u.amfID = g2, 700, req.AMFUENGAPID
	waitFor(t, "handover complete", func() bool { return a.Stats().HandoversCompleted == 1 })

	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })

	conns := []*commitConn{c1, c2}
	if stamps {
		waitFor(t, "every message acknowledged", func() bool { return c1.unacked() == 0 && c2.unacked() == 0 })
	}
	return l, conns
}

// sends is the "send" events of the log, in order.
func (l *commitLog) sends() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if strings.HasPrefix(e, "send ") {
			out = append(out, e)
		}
	}
	return out
}

// TestOutputCommit: with a RecordSink, every NGAP message a UE's step
// sends leaves after the record of that step (commitLog.checkSend: the
// record holds the connection, its leg's release, the NAS COUNT of the
// message, the prepared handover target, the paging timer), and without a
// sink the AMF sends the same messages in the same order.
func TestOutputCommit(t *testing.T) {
	with, _ := runCommitScene(t, true, false)
	without, _ := runCommitScene(t, false, false)
	if t.Failed() {
		return
	}
	ws, wos := with.sends(), without.sends()
	if !slices.Equal(ws, wos) {
		t.Errorf("sends with a sink differ from those without:\n with:    %q\n without: %q", ws, wos)
	}
	if len(ws) < 10 {
		t.Errorf("only %d sends: the scene did not run", len(ws))
	}
}

// TestOutputCommitPaging: Paging, sent by the step that a
// N1N2MessageTransfer for an idle UE posts, leaves after the record of
// the step that started T3513.
func TestOutputCommitPaging(t *testing.T) {
	hn, smf := newFakeHN(), newFakeSMF()
	a := newRecordAMF(t, hn, smf)
	smf.amf = a
	l := newCommitLog(t)
	l.sink = true
	a.SetRecordSink(l)
	g1, _ := commitGNB(t, a, l, 1, 1, false)
	u := newTestUE(t, g1, hn, "0000000001")
	u.register()
	u.establish(1, "")
	waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == 1 })
	idleAmongOthers(t, a, u)
	if _, err := a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(1, 2)); err != nil {
		t.Fatal(err)
	}
	expect[*ngap.Paging](t, g1.recv())
}

// TestFrontEndAcks: on associations that stamp their messages, every
// stamped message is acknowledged exactly once (commitConn.Ack), never
// before the record of the step that handled it reached the sink
// (commitLog.checkAck: the UE's record holds the uplink NAS COUNT of the
// message), messages that change nothing included (an Error Indication, a
// NAS Non Delivery Indication, a message for an unknown connection).
func TestFrontEndAcks(t *testing.T) {
	l, conns := runCommitScene(t, true, true)
	total := 0
	for _, c := range conns {
		c.mu.Lock()
		total += len(c.sent)
		c.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := 0
	for _, e := range l.events {
		if strings.HasPrefix(e, "ack ") {
			acks++
		}
	}
	if acks != total || total < 15 {
		t.Errorf("%d acknowledgements of %d stamped messages", acks, total)
	}
}

// TestFrontEndAcksWithoutSink: without a RecordSink, stamped messages are
// acknowledged all the same, each once, after the step that handled them.
func TestFrontEndAcksWithoutSink(t *testing.T) {
	runCommitScene(t, false, true)
}
