package gnb

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// The tests script a tiny AMF on a userspace SCTP listener: the test
// goroutine reads what the gNB sends and answers by hand.

var (
	plmn       = identity.PLMN{MCC: "208", MNC: "93"}
	testSlices = []identity.SNSSAI{{SST: 1, SD: 0x010203}}
	guami      = identity.GUAMI{PLMN: plmn, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8}}
)

func freeUDPPort(t *testing.T) int {
	t.Helper()
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

type fakeAMF struct {
	t    *testing.T
	l    sctp.Listener
	conn sctp.Conn
	cfg  sctp.Config
}

func newFakeAMF(t *testing.T) *fakeAMF {
	t.Helper()
	cfg := sctp.Config{Transport: sctp.TransportUDP, UDPPort: freeUDPPort(t)}
	l, err := sctp.Listen(cfg, "127.0.0.1:38412")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &fakeAMF{t: t, l: l, cfg: cfg}
}

// dial starts gNB dialing and has the AMF accept the association; it
// returns when the AMF holds the association, with the Dial outcome pending.
func (a *fakeAMF) dial(cfg Config) chan dialResult {
	a.t.Helper()
	cfg.AMFAddr, cfg.Transport = "127.0.0.1:38412", a.cfg
	ch := make(chan dialResult, 1)
	go func() {
		g, err := Dial(context.Background(), cfg)
		ch <- dialResult{g, err}
	}()
	c, err := a.l.Accept()
	if err != nil {
		a.t.Fatal(err)
	}
	a.conn = c
	a.t.Cleanup(func() { c.Close() })
	return ch
}

type dialResult struct {
	g   *GNB
	err error
}

type recvd struct {
	m      ngap.Message
	stream uint16
}

func (a *fakeAMF) recv() recvd {
	a.t.Helper()
	type res struct {
		msg sctp.Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := a.conn.Recv()
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			a.t.Fatal(r.err)
		}
		if r.msg.PPID != ngap.PPID {
			a.t.Fatalf("PPID %d", r.msg.PPID)
		}
		m, err := ngap.Decode(r.msg.Data)
		if err != nil {
			a.t.Fatal(err)
		}
		return recvd{m, r.msg.Stream}
	case <-time.After(3 * time.Second):
		a.t.Fatal("gNB sent nothing")
	}
	return recvd{}
}

func (a *fakeAMF) send(stream uint16, m ngap.Message) {
	a.t.Helper()
	b, err := ngap.Encode(m)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.conn.Send(stream, ngap.PPID, b); err != nil {
		a.t.Fatal(err)
	}
}

// setup answers NG Setup and returns the gNB.
func (a *fakeAMF) setup(cfg Config) *GNB {
	a.t.Helper()
	ch := a.dial(cfg)
	r := a.recv()
	req, ok := r.m.(*ngap.NGSetupRequest)
	if !ok || r.stream != 0 {
		a.t.Fatalf("want NG Setup Request on stream 0, got %T on %d", r.m, r.stream)
	}
	if req.GlobalRANNodeID.GNBID != cfg.GNBID || req.GlobalRANNodeID.PLMN != plmn ||
		len(req.SupportedTAs) != 1 || req.SupportedTAs[0].TAC != 1 ||
		len(req.SupportedTAs[0].BroadcastPLMNs) != 1 || req.SupportedTAs[0].BroadcastPLMNs[0].Slices[0] != testSlices[0] {
		a.t.Fatalf("NG Setup Request %+v", req)
	}
	a.send(0, &ngap.NGSetupResponse{
		AMFName: "fake-amf", ServedGUAMIs: []identity.GUAMI{guami}, RelativeAMFCapacity: 255,
		PLMNSupport: []ngap.PLMNSupport{{PLMN: plmn, Slices: testSlices}},
	})
	res := <-ch
	if res.err != nil {
		a.t.Fatal(res.err)
	}
	a.t.Cleanup(func() { res.g.Close() })
	return res.g
}

// ue records what the gNB delivers.
type ue struct {
	mu       sync.Mutex
	nas      [][]byte
	releases int
	evs      []string // "nas", "release", "ics", "paging", "setup", in order
	icsAt    []time.Time
	pagedAt  []time.Time
	got      chan struct{}
	// PDU sessions (session_test.go)
	setups   []sessionEvent
	released []sessionEvent
	data     chan dataEvent
}

func newUE() *ue { return &ue{got: make(chan struct{}, 16), data: make(chan dataEvent, 64)} }

func (u *ue) HandleNAS(pdu []byte) {
	u.mu.Lock()
	u.nas = append(u.nas, append([]byte(nil), pdu...))
	u.evs = append(u.evs, "nas")
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) HandleRelease(time.Time) {
	u.mu.Lock()
	u.releases++
	u.evs = append(u.evs, "release")
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) HandleContextSetup(sentAt time.Time) {
	u.mu.Lock()
	u.icsAt = append(u.icsAt, sentAt)
	u.evs = append(u.evs, "ics")
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) HandlePaging(receivedAt time.Time) {
	u.mu.Lock()
	u.pagedAt = append(u.pagedAt, receivedAt)
	u.evs = append(u.evs, "paging")
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) eventList() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.evs...)
}

func (u *ue) wait(t *testing.T) {
	t.Helper()
	select {
	case <-u.got:
	case <-time.After(3 * time.Second):
		t.Fatal("nothing delivered to the UE")
	}
}

func gnbConfig() Config {
	return Config{GNBID: 7, PLMN: plmn, TAC: 1, Slices: testSlices}
}

func TestNGSetup(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	if got := g.AMF(); got.AMFName != "fake-amf" || len(got.ServedGUAMIs) != 1 || got.ServedGUAMIs[0] != guami {
		t.Fatalf("AMF %+v", got)
	}
	if g.Err() != nil {
		t.Fatal(g.Err())
	}
}

func TestNGSetupFailure(t *testing.T) {
	a := newFakeAMF(t)
	ch := a.dial(gnbConfig())
	a.recv()
	ttw := ngap.TimeToWait5s
	a.send(0, &ngap.NGSetupFailure{Cause: ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnknownPLMNOrSNPN}, TimeToWait: &ttw})
	res := <-ch
	var sf *SetupFailureError
	if !errors.As(res.err, &sf) || sf.Cause.Group != ngap.CauseMisc || sf.Cause.Value != ngap.MiscUnknownPLMNOrSNPN ||
		sf.TimeToWait == nil || *sf.TimeToWait != ttw {
		t.Fatalf("err %v", res.err)
	}
}

func TestUEAssociatedSignalling(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	u := newUE()
	p := g.NewPort(u)

	stmsi := identity.STMSI{SetID: 0x3F8, TMSI: 0x1234}
	if _, err := p.SendInitial([]byte{0x7e, 0x00, 0x41}, ngap.RRCMOData, &stmsi); err != nil {
		t.Fatal(err)
	}
	r := a.recv()
	init, ok := r.m.(*ngap.InitialUEMessage)
	if !ok || r.stream == 0 || init.RANUENGAPID != p.RANUENGAPID() || !bytes.Equal(init.NASPDU, []byte{0x7e, 0x00, 0x41}) ||
		init.FiveGSTMSI == nil || *init.FiveGSTMSI != stmsi || init.UserLocation.TAI.TAC != 1 ||
		init.RRCEstablishmentCause != ngap.RRCMOData || !init.UEContextRequest {
		t.Fatalf("Initial UE Message %+v on stream %d", r.m, r.stream)
	}
	ueStream, ran := r.stream, init.RANUENGAPID

	// Uplink before the AMF answered: no AMF UE NGAP ID yet.
	if _, err := p.SendUplink([]byte{0x7e}); err == nil {
		t.Fatal("uplink without AMF UE NGAP ID succeeded")
	}
	a.send(ueStream, &ngap.DownlinkNASTransport{AMFUENGAPID: 42, RANUENGAPID: ran, NASPDU: []byte{0x7e, 0x00, 0x56}})
	u.wait(t)
	if p.AMFUENGAPID() != 42 || !bytes.Equal(u.nas[0], []byte{0x7e, 0x00, 0x56}) {
		t.Fatalf("downlink: amf id %d nas %x", p.AMFUENGAPID(), u.nas)
	}

	if _, err := p.SendUplink([]byte{0x7e, 0x00, 0x57}); err != nil {
		t.Fatal(err)
	}
	r = a.recv()
	if ul, ok := r.m.(*ngap.UplinkNASTransport); !ok || r.stream != ueStream || ul.AMFUENGAPID != 42 || ul.RANUENGAPID != ran {
		t.Fatalf("uplink %+v on %d", r.m, r.stream)
	}

	a.send(ueStream, &ngap.InitialContextSetupRequest{
		AMFUENGAPID: 42, RANUENGAPID: ran, GUAMI: guami, AllowedNSSAI: testSlices,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		NASPDU:                 []byte{0x7e, 0x02, 1, 2, 3, 4, 5, 0x7e, 0x00, 0x42},
	})
	r = a.recv()
	if resp, ok := r.m.(*ngap.InitialContextSetupResponse); !ok || resp.AMFUENGAPID != 42 || resp.RANUENGAPID != ran {
		t.Fatalf("want Initial Context Setup Response, got %+v", r.m)
	}
	u.wait(t)
	u.wait(t)
	if len(u.nas) != 2 {
		t.Fatalf("ICS NAS PDU not delivered: %x", u.nas)
	}
	// The Response's instant comes first, then the NAS PDU.
	if ev := u.eventList(); len(ev) != 3 || ev[1] != "ics" || ev[2] != "nas" || len(u.icsAt) != 1 || u.icsAt[0].IsZero() {
		t.Fatalf("events %v, ICS response at %v", ev, u.icsAt)
	}

	a.send(ueStream, &ngap.UEContextReleaseCommand{AMFUENGAPID: 42, RANUENGAPID: ran,
		Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASDeregister}})
	r = a.recv()
	if c, ok := r.m.(*ngap.UEContextReleaseComplete); !ok || c.AMFUENGAPID != 42 || c.RANUENGAPID != ran {
		t.Fatalf("want UE Context Release Complete, got %+v", r.m)
	}
	u.wait(t)
	if u.releases != 1 || p.RANUENGAPID() != 0 {
		t.Fatalf("releases %d, ran id %d", u.releases, p.RANUENGAPID())
	}

	// A new connection gets a new RAN UE NGAP ID.
	if _, err := p.SendInitial([]byte{0x7e, 0x00, 0x41}, ngap.RRCMTAccess, nil); err != nil {
		t.Fatal(err)
	}
	r = a.recv()
	if init := r.m.(*ngap.InitialUEMessage); init.RANUENGAPID == ran || init.FiveGSTMSI != nil || init.RRCEstablishmentCause != ngap.RRCMTAccess {
		t.Fatalf("second connection %+v", init)
	}
	// AMF-ID-only release finds the UE by its AMF UE NGAP ID.
	a.send(r.stream, &ngap.DownlinkNASTransport{AMFUENGAPID: 43, RANUENGAPID: p.RANUENGAPID(), NASPDU: []byte{0x7e, 0, 0x5b, 1}})
	u.wait(t)
	a.send(r.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: 43, AMFIDOnly: true,
		Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease}})
	if _, ok := a.recv().m.(*ngap.UEContextReleaseComplete); !ok {
		t.Fatal("no release complete")
	}
	u.wait(t)
	if u.releases != 2 {
		t.Fatal("AMF-ID-only release not delivered")
	}
}

func TestUnknownUEAndGarbage(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	a.send(1, &ngap.DownlinkNASTransport{AMFUENGAPID: 9, RANUENGAPID: 999, NASPDU: []byte{0x7e, 0, 0x5b, 1}})
	r := a.recv()
	ei, ok := r.m.(*ngap.ErrorIndication)
	if !ok || ei.Cause == nil || ei.Cause.Value != ngap.RadioNetworkUnknownLocalUENGAPID || ei.RANUENGAPID == nil || *ei.RANUENGAPID != 999 {
		t.Fatalf("want Error Indication for unknown UE, got %+v", r.m)
	}
	// Garbage: the gNB reports it and keeps the association.
	if err := a.conn.Send(0, ngap.PPID, []byte{0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.recv().m.(*ngap.ErrorIndication); !ok {
		t.Fatal("no Error Indication for a garbled PDU")
	}
	a.send(0, &ngap.ErrorIndication{Cause: &ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolUnspecified}})
	deadline := time.Now().Add(3 * time.Second)
	for g.Counters().ErrorIndications != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c := g.Counters()
	if c.ErrorIndications != 1 || c.DecodeErrors != 1 || c.UnknownUE != 1 || g.Err() != nil {
		t.Fatalf("counters %+v err %v", c, g.Err())
	}
}

func TestCloseEndsReader(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	a.conn.Close()
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("reader still running after the AMF closed the association")
	}
	if g.Err() == nil {
		t.Fatal("no error after the association ended")
	}
}
