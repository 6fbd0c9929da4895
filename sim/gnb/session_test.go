package gnb

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/ngap"
)

// PDU session resource handling and the N3 endpoint, against the scripted
// AMF and a fake UPF (a plain UDP socket).

type sessionEvent struct {
	psi    uint8
	sentAt time.Time
	err    error
}

type dataEvent struct {
	psi uint8
	pkt []byte
}

func (u *ue) HandleSessionSetup(psi uint8, sentAt time.Time, err error) {
	u.mu.Lock()
	u.setups = append(u.setups, sessionEvent{psi, sentAt, err})
	u.evs = append(u.evs, "setup")
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) HandleSessionReleased(psi uint8, sentAt time.Time) {
	u.mu.Lock()
	u.released = append(u.released, sessionEvent{psi: psi, sentAt: sentAt})
	u.mu.Unlock()
	u.got <- struct{}{}
}

func (u *ue) HandleData(psi uint8, pkt []byte) {
	u.data <- dataEvent{psi, append([]byte(nil), pkt...)}
}

func (u *ue) events() (nas [][]byte, setups, released []sessionEvent) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.nas...), append([]sessionEvent(nil), u.setups...), append([]sessionEvent(nil), u.released...)
}

// fakeUPF is the far end of N3.
type fakeUPF struct {
	t    *testing.T
	conn *net.UDPConn
}

func newFakeUPF(t *testing.T) *fakeUPF {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fakeUPF{t: t, conn: c}
}

func (f *fakeUPF) port() uint16 { return f.conn.LocalAddr().(*net.UDPAddr).AddrPort().Port() }

func (f *fakeUPF) recv() ([]byte, gtpu.Header) {
	f.t.Helper()
	buf := make([]byte, 65536)
	f.conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	n, _, err := f.conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		f.t.Fatalf("fake UPF: %v", err)
	}
	var h gtpu.Header
	if err := gtpu.Parse(buf[:n], &h); err != nil {
		f.t.Fatalf("fake UPF got non-GTP-U: %v", err)
	}
	return buf[:n], h
}

func (f *fakeUPF) send(to netip.AddrPort, b []byte) {
	f.t.Helper()
	if _, err := f.conn.WriteToUDPAddrPort(b, to); err != nil {
		f.t.Fatal(err)
	}
}

// connectUE opens a signalling connection for a fresh port and has the
// AMF learn it; it returns the port, the fake UE and the UE's stream.
func connectUE(t *testing.T, a *fakeAMF, g *GNB, amfID int64) (*Port, *ue, uint16) {
	t.Helper()
	u := newUE()
	p := g.NewPort(u)
	if _, err := p.SendInitial([]byte{0x7e, 0x00, 0x41}, ngap.RRCMOSignalling, nil); err != nil {
		t.Fatal(err)
	}
	r := a.recv()
	a.send(r.stream, &ngap.DownlinkNASTransport{AMFUENGAPID: amfID, RANUENGAPID: p.RANUENGAPID(), NASPDU: []byte{0x7e, 0x00, 0x56}})
	u.wait(t)
	return p, u, r.stream
}

func setupTransfer(t *testing.T, ul ngap.GTPTunnel, qfis ...uint8) []byte {
	t.Helper()
	tr := &ngap.PDUSessionResourceSetupRequestTransfer{
		SessionAMBR:    &ngap.AMBR{DL: 1e9, UL: 5e8},
		ULTunnel:       ul,
		PDUSessionType: ngap.PDUSessionTypeIPv4,
	}
	for _, q := range qfis {
		tr.QoSFlows = append(tr.QoSFlows, ngap.QoSFlowSetupRequestItem{QFI: q, FiveQI: 9, PriorityLevelARP: 8})
	}
	b, err := ngap.EncodeSetupRequestTransfer(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPDUSessionSetupUserPlaneRelease(t *testing.T) {
	a := newFakeAMF(t)
	upf := newFakeUPF(t)
	cfg := gnbConfig()
	cfg.N3PeerPort = upf.port()
	g := a.setup(cfg)
	p, u, stream := connectUE(t, a, g, 42)
	ran := p.RANUENGAPID()

	ul := ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: 0x100}
	accept := []byte{0x7e, 0x02, 9, 9, 9, 9, 1}
	a.send(stream, &ngap.PDUSessionResourceSetupRequest{
		AMFUENGAPID: 42, RANUENGAPID: ran,
		Items: []ngap.PDUSessionResourceSetupItemSUReq{
			{ID: 5, NASPDU: accept, SNSSAI: testSlices[0], Transfer: setupTransfer(t, ul, 1)},
			{ID: 6, NASPDU: []byte{0x7e, 0x02, 6}, SNSSAI: testSlices[0], Transfer: []byte{0xff}}, // garbled
		},
	})
	r := a.recv()
	resp, ok := r.m.(*ngap.PDUSessionResourceSetupResponse)
	if !ok || resp.AMFUENGAPID != 42 || resp.RANUENGAPID != ran || r.stream != stream ||
		len(resp.Setup) != 1 || resp.Setup[0].ID != 5 || len(resp.Failed) != 1 || resp.Failed[0].ID != 6 {
		t.Fatalf("setup response %+v", r.m)
	}
	st, err := ngap.DecodeSetupResponseTransfer(resp.Setup[0].Transfer)
	if err != nil {
		t.Fatal(err)
	}
	if st.DLTunnel.Addr != g.N3Addr().Addr() || st.DLTunnel.TEID == 0 || len(st.QoSFlows) != 1 || st.QoSFlows[0] != 1 {
		t.Fatalf("setup response transfer %+v (N3 %s)", st, g.N3Addr())
	}
	if ft, err := ngap.DecodeSetupUnsuccessfulTransfer(resp.Failed[0].Transfer); err != nil || ft.Cause.Group != ngap.CauseProtocol {
		t.Fatalf("unsuccessful transfer %+v %v", ft, err)
	}
	for range 3 { // the accept, two setup reports
		u.wait(t)
	}
	nasPDUs, setups, _ := u.events()
	if len(nasPDUs) != 2 || !bytes.Equal(nasPDUs[1], accept) {
		t.Fatalf("NAS delivered %x (the failed session's NAS-PDU must not be)", nasPDUs)
	}
	var se *SetupError
	if len(setups) != 2 || setups[0].psi != 5 || setups[0].err != nil || setups[0].sentAt.IsZero() ||
		setups[1].psi != 6 || !errors.As(setups[1].err, &se) || se.ID != 6 {
		t.Fatalf("setup reports %+v", setups)
	}
	if s := p.Sessions(); len(s) != 1 || s[0].ID != 5 || s[0].UL != ul || s[0].DL.TEID != st.DLTunnel.TEID {
		t.Fatalf("sessions %+v", s)
	}

	// Uplink: UE packet -> G-PDU with a UL PDU Session Container.
	pkt := []byte{0x45, 0, 0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err := p.SendData(5, pkt); err != nil {
		t.Fatal(err)
	}
	b, h := upf.recv()
	if h.Type != gtpu.TypeGPDU || h.TEID != 0x100 || !h.HasPDUSessionContainer || h.PDUType != gtpu.PDUTypeUL || h.QFI != 1 ||
		!bytes.Equal(h.Payload(b), pkt) {
		t.Fatalf("uplink G-PDU %+v payload %x", h, h.Payload(b))
	}
	if err := p.SendData(6, pkt); !errors.Is(err, ErrNoSession) {
		t.Fatalf("uplink on a failed session: %v", err)
	}

	// Downlink: G-PDU to our TEID -> the UE's session.
	n3 := g.N3Addr()
	upf.send(n3, gtpu.AppendGPDU(nil, st.DLTunnel.TEID, 1, true, pkt))
	select {
	case d := <-u.data:
		if d.psi != 5 || !bytes.Equal(d.pkt, pkt) {
			t.Fatalf("downlink %d %x", d.psi, d.pkt)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("downlink not delivered")
	}

	// Echo Request answered; unknown TEID answered with Error Indication.
	upf.send(n3, gtpu.AppendEchoRequest(nil, 77))
	if _, h := upf.recv(); h.Type != gtpu.TypeEchoResponse || h.Seq != 77 {
		t.Fatalf("echo response %+v", h)
	}
	upf.send(n3, gtpu.AppendGPDU(nil, 0xdead, 1, true, pkt))
	b, h = upf.recv()
	if h.Type != gtpu.TypeErrorIndication {
		t.Fatalf("want Error Indication, got %+v", h)
	}
	if ei, err := gtpu.ParseErrorIndication(b); err != nil || ei.TEID != 0xdead {
		t.Fatalf("error indication %+v %v", ei, err)
	}

	// Modify: add QFI 2; unknown session 9 fails.
	mt, err := ngap.EncodeModifyRequestTransfer(&ngap.PDUSessionResourceModifyRequestTransfer{
		QoSFlowsAddOrModify: []ngap.QoSFlowSetupRequestItem{{QFI: 2, FiveQI: 7, PriorityLevelARP: 8}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.send(stream, &ngap.PDUSessionResourceModifyRequest{AMFUENGAPID: 42, RANUENGAPID: ran, Items: []ngap.PDUSessionResourceModifyItemModReq{
		{ID: 5, NASPDU: []byte{0x7e, 0x02, 0xcb}, Transfer: mt},
		{ID: 9, Transfer: mt},
	}})
	r = a.recv()
	mr, ok := r.m.(*ngap.PDUSessionResourceModifyResponse)
	if !ok || len(mr.Modified) != 1 || mr.Modified[0].ID != 5 || len(mr.Failed) != 1 || mr.Failed[0].ID != 9 {
		t.Fatalf("modify response %+v", r.m)
	}
	if mrt, err := ngap.DecodeModifyResponseTransfer(mr.Modified[0].Transfer); err != nil || len(mrt.QoSFlows) != 1 || mrt.QoSFlows[0] != 2 {
		t.Fatalf("modify response transfer %+v %v", mrt, err)
	}
	u.wait(t)

	// Modify: the UPF's end of the tunnel moves (UL NG-U UP TNL Modify
	// List, TS 38.413 §8.2.3.2); the uplink follows it.
	moved := ngap.GTPTunnel{Addr: ul.Addr, TEID: 0x200}
	mt, err = ngap.EncodeModifyRequestTransfer(&ngap.PDUSessionResourceModifyRequestTransfer{
		ULTunnels: []ngap.ULTunnelModifyItem{{UL: moved, DL: st.DLTunnel}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.send(stream, &ngap.PDUSessionResourceModifyRequest{AMFUENGAPID: 42, RANUENGAPID: ran, Items: []ngap.PDUSessionResourceModifyItemModReq{
		{ID: 5, Transfer: mt},
	}})
	if mr, ok := a.recv().m.(*ngap.PDUSessionResourceModifyResponse); !ok || len(mr.Modified) != 1 {
		t.Fatalf("modify response %+v", mr)
	}
	if err := p.SendData(5, pkt); err != nil {
		t.Fatal(err)
	}
	if _, h := upf.recv(); h.Type != gtpu.TypeGPDU || h.TEID != moved.TEID {
		t.Fatalf("uplink after the tunnel moved: %+v", h)
	}
	if s := p.Sessions(); len(s) != 1 || s[0].UL != moved {
		t.Fatalf("sessions %+v", s)
	}
	// An item whose DL tunnel is not the session's (same TEID, another
	// address; or another TEID) moves nothing and fails the session.
	for _, dl := range []ngap.GTPTunnel{
		{Addr: netip.MustParseAddr("192.0.2.99"), TEID: st.DLTunnel.TEID},
		{Addr: st.DLTunnel.Addr, TEID: st.DLTunnel.TEID + 1},
	} {
		mt, err = ngap.EncodeModifyRequestTransfer(&ngap.PDUSessionResourceModifyRequestTransfer{
			ULTunnels: []ngap.ULTunnelModifyItem{{UL: ngap.GTPTunnel{Addr: ul.Addr, TEID: 0x300}, DL: dl}},
		})
		if err != nil {
			t.Fatal(err)
		}
		a.send(stream, &ngap.PDUSessionResourceModifyRequest{AMFUENGAPID: 42, RANUENGAPID: ran, Items: []ngap.PDUSessionResourceModifyItemModReq{
			{ID: 5, Transfer: mt},
		}})
		mr, ok := a.recv().m.(*ngap.PDUSessionResourceModifyResponse)
		if !ok || len(mr.Modified) != 0 || len(mr.Failed) != 1 || mr.Failed[0].ID != 5 {
			t.Fatalf("modify response to a UL tunnel item for DL tunnel %+v: %+v", dl, mr)
		}
		if ut, err := ngap.DecodeModifyUnsuccessfulTransfer(mr.Failed[0].Transfer); err != nil ||
			ut.Cause != (ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolSemanticError}) {
			t.Fatalf("modify unsuccessful transfer %+v %v", ut, err)
		}
		if s := p.Sessions(); len(s) != 1 || s[0].UL != moved {
			t.Fatalf("sessions after a UL tunnel item for DL tunnel %+v: %+v", dl, s)
		}
	}

	// Release: NAS delivered, session gone, the old TEID unknown.
	rct, err := ngap.EncodeReleaseCommandTransfer(&ngap.PDUSessionResourceReleaseCommandTransfer{Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease}})
	if err != nil {
		t.Fatal(err)
	}
	a.send(stream, &ngap.PDUSessionResourceReleaseCommand{AMFUENGAPID: 42, RANUENGAPID: ran,
		NASPDU: []byte{0x7e, 0x02, 0xd3}, Items: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: rct}}})
	r = a.recv()
	rr, ok := r.m.(*ngap.PDUSessionResourceReleaseResponse)
	if !ok || len(rr.Released) != 1 || rr.Released[0].ID != 5 {
		t.Fatalf("release response %+v", r.m)
	}
	if _, err := ngap.DecodeReleaseResponseTransfer(rr.Released[0].Transfer); err != nil {
		t.Fatal(err)
	}
	u.wait(t)
	u.wait(t)
	nasPDUs, _, released := u.events()
	if len(nasPDUs) != 4 || len(released) != 1 || released[0].psi != 5 || released[0].sentAt.IsZero() {
		t.Fatalf("after release: nas %d, released %+v", len(nasPDUs), released)
	}
	if err := p.SendData(5, pkt); !errors.Is(err, ErrNoSession) {
		t.Fatalf("uplink after release: %v", err)
	}
	upf.send(n3, gtpu.AppendGPDU(nil, st.DLTunnel.TEID, 1, true, pkt))
	if _, h := upf.recv(); h.Type != gtpu.TypeErrorIndication {
		t.Fatalf("downlink to a released TEID: %+v", h)
	}
	c := g.N3Counters()
	if c.Uplink != 2 || c.Downlink != 1 || c.UnknownTEID != 2 || c.EchoRequests != 1 {
		t.Fatalf("N3 counters %+v", c)
	}
}

func TestPDUSessionsGoWithTheUEContext(t *testing.T) {
	a := newFakeAMF(t)
	upf := newFakeUPF(t)
	cfg := gnbConfig()
	cfg.N3PeerPort = upf.port()
	g := a.setup(cfg)
	p, u, stream := connectUE(t, a, g, 7)
	ran := p.RANUENGAPID()
	ul := ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: 1}

	// Sessions set up with Initial Context Setup (e.g. after a service
	// request); a duplicate ID fails.
	a.send(stream, &ngap.InitialContextSetupRequest{
		AMFUENGAPID: 7, RANUENGAPID: ran, GUAMI: guami, AllowedNSSAI: testSlices,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		UEAggregateMaxBitRate:  &ngap.AMBR{DL: 1e9, UL: 1e9},
		PDUSessionResourceSetupItems: []ngap.PDUSessionResourceSetupItemSUReq{
			{ID: 1, SNSSAI: testSlices[0], Transfer: setupTransfer(t, ul, 1)},
			{ID: 2, SNSSAI: testSlices[0], Transfer: setupTransfer(t, ul, 5, 6)},
			{ID: 2, SNSSAI: testSlices[0], Transfer: setupTransfer(t, ul, 5)},
		},
	})
	r := a.recv()
	ics, ok := r.m.(*ngap.InitialContextSetupResponse)
	if !ok || len(ics.PDUSessionResourceSetupItems) != 2 || len(ics.PDUSessionResourceFailedItems) != 1 {
		t.Fatalf("ICS response %+v", r.m)
	}
	ft, err := ngap.DecodeSetupUnsuccessfulTransfer(ics.PDUSessionResourceFailedItems[0].Transfer)
	if err != nil || ft.Cause.Value != ngap.RadioNetworkMultiplePDUSessionIDInstances {
		t.Fatalf("duplicate session: %+v %v", ft, err)
	}
	st, err := ngap.DecodeSetupResponseTransfer(ics.PDUSessionResourceSetupItems[1].Transfer)
	if err != nil || len(st.QoSFlows) != 2 {
		t.Fatalf("two-flow session %+v %v", st, err)
	}
	for range 3 { // the response's instant, two setup reports
		u.wait(t)
	}
	if ev := u.eventList(); len(ev) < 3 || ev[len(ev)-3] != "ics" || ev[len(ev)-1] != "setup" {
		t.Fatalf("events %v: want the ICS response before the setup reports", ev)
	}

	a.send(stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: 7, RANUENGAPID: ran,
		Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease}})
	r = a.recv()
	c, ok := r.m.(*ngap.UEContextReleaseComplete)
	if !ok || len(c.PDUSessionIDs) != 2 || c.PDUSessionIDs[0] != 1 || c.PDUSessionIDs[1] != 2 {
		t.Fatalf("release complete %+v", r.m)
	}
	u.wait(t)
	if len(p.Sessions()) != 0 {
		t.Fatalf("sessions left %+v", p.Sessions())
	}
	upf.send(g.N3Addr(), gtpu.AppendGPDU(nil, st.DLTunnel.TEID, 5, true, []byte{0x45}))
	if _, h := upf.recv(); h.Type != gtpu.TypeErrorIndication {
		t.Fatalf("downlink after context release: %+v", h)
	}
}

func TestN3AddressChecked(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:2152", "[::1]:2152", "nonsense"} {
		if _, err := listenN3(addr, nil, 0); err == nil {
			t.Errorf("N3 address %q accepted", addr)
		}
	}
}
