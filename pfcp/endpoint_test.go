package pfcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// fakeUP is a small in-test UPF-C: it allocates UP SEIDs and F-TEIDs and
// counts what it handled.
type fakeUP struct {
	mu        sync.Mutex
	cp        ControlPlane
	sessions  map[uint64]*SessionEstablishmentRequest
	nextSEID  uint64
	calls     atomic.Int64
	establish atomic.Int64
}

func newFakeUP() *fakeUP {
	return &fakeUP{sessions: map[uint64]*SessionEstablishmentRequest{}, nextSEID: 0x1000}
}

func (f *fakeUP) HandleAssociationSetup(_ context.Context, from ControlPlane, req *AssociationSetupRequest) *AssociationSetupResponse {
	f.calls.Add(1)
	f.mu.Lock()
	f.cp = from
	f.mu.Unlock()
	return &AssociationSetupResponse{NodeID: NodeID{IP: upfAddr}, Cause: CauseRequestAccepted, RecoveryTime: t0, UPFunctionFeatures: 1}
}

func (f *fakeUP) HandleAssociationRelease(_ context.Context, req *AssociationReleaseRequest) *AssociationReleaseResponse {
	f.calls.Add(1)
	return &AssociationReleaseResponse{NodeID: NodeID{IP: upfAddr}, Cause: CauseRequestAccepted}
}

func (f *fakeUP) HandleSessionEstablishment(_ context.Context, req *SessionEstablishmentRequest) *SessionEstablishmentResponse {
	f.calls.Add(1)
	f.establish.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextSEID++
	seid := f.nextSEID
	f.sessions[seid] = req
	resp := &SessionEstablishmentResponse{NodeID: NodeID{IP: upfAddr}, Cause: CauseRequestAccepted, UPFSEID: &FSEID{SEID: seid, IPv4: upfAddr}}
	for _, p := range req.CreatePDRs {
		if p.PDI.FTEID != nil && p.PDI.FTEID.Choose {
			resp.CreatedPDRs = append(resp.CreatedPDRs, CreatedPDR{ID: p.ID, LocalFTEID: &FTEID{TEID: uint32(seid), IPv4: upfAddr}})
		}
	}
	return resp
}

func (f *fakeUP) HandleSessionModification(_ context.Context, seid uint64, req *SessionModificationRequest) *SessionModificationResponse {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sessions[seid]; !ok {
		return &SessionModificationResponse{Cause: CauseSessionContextNotFound}
	}
	resp := &SessionModificationResponse{Cause: CauseRequestAccepted}
	for _, id := range req.QueryURRs {
		resp.UsageReports = append(resp.UsageReports, UsageReport{URRID: id, URSEQN: 1, Trigger: UsageTriggerImmediate})
	}
	return resp
}

func (f *fakeUP) HandleSessionDeletion(_ context.Context, seid uint64) *SessionDeletionResponse {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sessions[seid]; !ok {
		return &SessionDeletionResponse{Cause: CauseSessionContextNotFound}
	}
	delete(f.sessions, seid)
	return &SessionDeletionResponse{Cause: CauseRequestAccepted}
}

type fakeCP struct {
	mu      sync.Mutex
	reports []uint64
	nodes   []*NodeReportRequest
}

func (c *fakeCP) HandleNodeReport(_ context.Context, req *NodeReportRequest) *NodeReportResponse {
	c.mu.Lock()
	c.nodes = append(c.nodes, req)
	c.mu.Unlock()
	return &NodeReportResponse{NodeID: NodeID{IP: smfAddr}, Cause: CauseRequestAccepted}
}

func (c *fakeCP) HandleSessionReport(_ context.Context, seid uint64, req *SessionReportRequest) *SessionReportResponse {
	c.mu.Lock()
	c.reports = append(c.reports, seid)
	c.mu.Unlock()
	return &SessionReportResponse{Cause: CauseRequestAccepted}
}

// captureTap records the SEIDs in the headers it sees.
type captureTap struct {
	mu      sync.Mutex
	packets []Header
}

func (c *captureTap) Packet(outbound bool, local, remote netip.AddrPort, b []byte) {
	h, _, _ := Decode(b)
	c.mu.Lock()
	c.packets = append(c.packets, h)
	c.mu.Unlock()
}

func listen(t testing.TB, cfg EndpointConfig) *Endpoint {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	e, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func establishRequest(cpSEID uint64) *SessionEstablishmentRequest {
	return &SessionEstablishmentRequest{
		NodeID:  NodeID{IP: smfAddr},
		CPFSEID: FSEID{SEID: cpSEID, IPv4: smfAddr},
		CreatePDRs: []CreatePDR{
			{ID: 1, Precedence: 255, PDI: PDI{SourceInterface: InterfaceAccess, FTEID: &FTEID{Choose: true, ChooseID: 1},
				NetworkInstance: "internet", UEIP: &UEIPAddress{IPv4: ueAddr}, QFIs: []uint8{9}},
				OuterHeaderRemoval: ptr(OuterHeaderRemovalGTPUUDPIPv4), FARID: 1, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
			{ID: 2, Precedence: 255, PDI: PDI{SourceInterface: InterfaceCore, NetworkInstance: "internet",
				UEIP: &UEIPAddress{IPv4: ueAddr, Destination: true}}, FARID: 2, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
		},
		CreateFARs: []CreateFAR{
			{ID: 1, ApplyAction: ActionForward, Forwarding: &ForwardingParameters{Destination: InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: ActionBuffer | ActionNotifyCP, BARID: ptr[uint8](1)},
		},
		CreateQERs: []CreateQER{{ID: 1, MBR: &BitRate{UL: 100_000, DL: 200_000}, QFI: 9}},
		CreateURRs: []CreateURR{{ID: 1, Method: MethodVolume, Triggers: TriggerVolumeThreshold, VolumeThreshold: fullVolume()}},
		CreateBAR:  &CreateBAR{ID: 1, SuggestedBufferingPackets: 16},
		PDNType:    PDNTypeIPv4,
	}
}

func TestEndpointSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	up := newFakeUP()
	cp := &fakeCP{}
	tap := &captureTap{}
	upf := listen(t, EndpointConfig{NodeID: NodeID{IP: upfAddr}, UP: up})
	smf := listen(t, EndpointConfig{NodeID: NodeID{IP: smfAddr}, CP: cp, Tap: tap})
	client := smf.UserPlane(upf.Addr())

	if rec, err := client.Heartbeat(ctx); err != nil || !rec.Equal(upf.RecoveryTime()) {
		t.Fatalf("heartbeat: recovery %v (UPF's %v), %v", rec, upf.RecoveryTime(), err)
	}
	ar, err := client.SetupAssociation(ctx, &AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}, RecoveryTime: smf.RecoveryTime()})
	if err != nil || ar.Cause != CauseRequestAccepted || ar.NodeID.IP != upfAddr {
		t.Fatalf("association: %+v %v", ar, err)
	}
	er, err := client.EstablishSession(ctx, establishRequest(0xc0ffee))
	if err != nil || er.Cause != CauseRequestAccepted || er.UPFSEID == nil {
		t.Fatalf("establish: %+v %v", er, err)
	}
	if len(er.CreatedPDRs) != 1 || er.CreatedPDRs[0].LocalFTEID.IPv4 != upfAddr {
		t.Errorf("created PDRs %+v", er.CreatedPDRs)
	}
	upSEID := er.UPFSEID.SEID
	up.mu.Lock()
	got := up.sessions[upSEID]
	up.mu.Unlock()
	if got == nil || got.CPFSEID.SEID != 0xc0ffee || len(got.CreatePDRs) != 2 || got.CreatePDRs[0].PDI.FTEID.ChooseID != 1 {
		t.Fatalf("UPF saw %+v", got)
	}

	mr, err := client.ModifySession(ctx, upSEID, &SessionModificationRequest{
		UpdateFARs: []UpdateFAR{{ID: 2, ApplyAction: ptr(ActionForward), Forwarding: &UpdateForwardingParameters{
			Destination: InterfaceAccess, OuterHeaderCreation: &OuterHeaderCreation{Description: OuterHeaderCreationGTPUUDPIPv4, TEID: 5, IPv4: gnbAddr}}}},
		QueryURRs: []uint32{1},
	})
	if err != nil || mr.Cause != CauseRequestAccepted || len(mr.UsageReports) != 1 {
		t.Fatalf("modify: %+v %v", mr, err)
	}
	if mr, err := client.ModifySession(ctx, 12345, &SessionModificationRequest{}); err != nil || mr.Cause != CauseSessionContextNotFound {
		t.Fatalf("modify unknown: %+v %v", mr, err)
	}

	// The UPF reports through the ControlPlane it got at association.
	up.mu.Lock()
	toSMF := up.cp
	up.mu.Unlock()
	rr, err := toSMF.ReportSession(ctx, 0xc0ffee, &SessionReportRequest{ReportType: ReportDLDR, DownlinkDataReport: &DownlinkDataReport{PDRIDs: []uint16{2}}})
	if err != nil || rr.Cause != CauseRequestAccepted {
		t.Fatalf("report: %+v %v", rr, err)
	}
	// A Node Report (§7.4.5) takes the same way back, node-related.
	nr, err := toSMF.ReportNode(ctx, &NodeReportRequest{NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPFR,
		PathFailurePeers: []netip.Addr{gnbAddr}})
	if err != nil || nr.Cause != CauseRequestAccepted || nr.NodeID.IP != smfAddr {
		t.Fatalf("node report: %+v %v", nr, err)
	}
	cp.mu.Lock()
	if len(cp.reports) != 1 || cp.reports[0] != 0xc0ffee {
		t.Errorf("SMF got reports for %v", cp.reports)
	}
	if len(cp.nodes) != 1 || cp.nodes[0].NodeID.IP != upfAddr || len(cp.nodes[0].PathFailurePeers) != 1 ||
		cp.nodes[0].PathFailurePeers[0] != gnbAddr {
		t.Errorf("SMF got node reports %+v", cp.nodes)
	}
	cp.mu.Unlock()

	dr, err := client.DeleteSession(ctx, upSEID)
	if err != nil || dr.Cause != CauseRequestAccepted {
		t.Fatalf("delete: %+v %v", dr, err)
	}
	if dr, err := client.DeleteSession(ctx, upSEID); err != nil || dr.Cause != CauseSessionContextNotFound {
		t.Fatalf("second delete: %+v %v", dr, err)
	}

	// Headers carry the peer's SEID (§7.2.2.4.2): responses to the SMF carry
	// the CP SEID, the report response to the UPF carries the UP SEID.
	tap.mu.Lock()
	defer tap.mu.Unlock()
	var sawEstRsp, sawModRsp, sawReportRsp bool
	for _, h := range tap.packets {
		switch h.Type {
		case MsgSessionEstablishmentResponse:
			sawEstRsp = h.SEID == 0xc0ffee
		case MsgSessionModificationRequest:
			if h.SEID == upSEID {
				sawModRsp = true
			}
		case MsgSessionReportResponse:
			sawReportRsp = h.SEID == upSEID
		}
	}
	if !sawEstRsp || !sawModRsp || !sawReportRsp {
		t.Errorf("header SEIDs: est rsp %v mod req %v report rsp %v (%+v)", sawEstRsp, sawModRsp, sawReportRsp, tap.packets)
	}
	if s := upf.Stats(); s.Dropped != 0 || s.Retransmissions != 0 {
		t.Errorf("UPF stats %+v", s)
	}
}

// lossyRelay forwards datagrams between a client and a server and drops the
// first response it sees.
func lossyRelay(t *testing.T, server netip.AddrPort) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		var client netip.AddrPort
		dropped := false
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if from == server {
				if !dropped {
					dropped = true
					continue
				}
				_, _ = conn.WriteToUDPAddrPort(buf[:n], client)
				continue
			}
			client = from
			_, _ = conn.WriteToUDPAddrPort(buf[:n], server)
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

func TestRetransmissionAfterLostResponse(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	smf := listen(t, EndpointConfig{T1: 50 * time.Millisecond, N1: 3})
	relay := lossyRelay(t, upf.Addr())

	er, err := smf.UserPlane(relay).EstablishSession(context.Background(), establishRequest(1))
	if err != nil || er.Cause != CauseRequestAccepted {
		t.Fatalf("establish through lossy relay: %+v %v", er, err)
	}
	// The retransmitted request was answered from the cache: one session.
	if n := up.establish.Load(); n != 1 {
		t.Errorf("handler ran %d times", n)
	}
	if s := smf.Stats(); s.Retransmissions < 1 {
		t.Errorf("client stats %+v", s)
	}
	if s := upf.Stats(); s.DuplicatesAnswered < 1 {
		t.Errorf("server stats %+v", s)
	}
}

// rawPeer is a bare UDP socket that plays a peer byte by byte.
func rawPeer(t *testing.T) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func exchange(t *testing.T, conn *net.UDPConn, to netip.AddrPort, b []byte) []byte {
	t.Helper()
	if _, err := conn.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatal(err)
	}
	return readOne(t, conn)
}

func readOne(t *testing.T, conn *net.UDPConn) []byte {
	t.Helper()
	buf := make([]byte, 65535)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return buf[:n]
}

func TestDuplicateRequestAnsweredFromCache(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)
	req, err := Encode(establishRequest(77), 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := exchange(t, peer, upf.Addr(), req)
	second := exchange(t, peer, upf.Addr(), req)
	if string(first) != string(second) {
		t.Error("retransmitted request got a different response")
	}
	hdr, m, err := Decode(first)
	if err != nil || hdr.Seq != 4242 || hdr.SEID != 77 || m.(*SessionEstablishmentResponse).Cause != CauseRequestAccepted {
		t.Fatalf("response %+v %+v %v", hdr, m, err)
	}
	if n := up.establish.Load(); n != 1 {
		t.Errorf("handler ran %d times", n)
	}
	// A new sequence number is a new request.
	req2, _ := Encode(establishRequest(78), 4243, 0)
	exchange(t, peer, upf.Addr(), req2)
	if n := up.establish.Load(); n != 2 {
		t.Errorf("handler ran %d times after a new request", n)
	}
}

// encodeSeq encodes m with sequence number seq, or fails the test.
func encodeSeq(t *testing.T, m Message, seq uint32) []byte {
	t.Helper()
	b, err := Encode(m, seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSequenceReusedForOtherRequest: a peer's request with the sequence
// number of a cached one but other content is a new request (§6.4), not a
// retransmission to answer from the cache.
func TestSequenceReusedForOtherRequest(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{NodeID: NodeID{IP: upfAddr}, UP: up})
	peer := rawPeer(t)

	hdr, m, err := Decode(exchange(t, peer, upf.Addr(), encodeSeq(t, &HeartbeatRequest{RecoveryTime: t0}, 77)))
	if _, ok := m.(*HeartbeatResponse); err != nil || !ok || hdr.Seq != 77 {
		t.Fatalf("heartbeat answer %+v %T %v", hdr, m, err)
	}
	setup := encodeSeq(t, &AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}, RecoveryTime: t0}, 77)
	hdr, m, err = Decode(exchange(t, peer, upf.Addr(), setup))
	if r, ok := m.(*AssociationSetupResponse); err != nil || !ok || hdr.Seq != 77 || r.Cause != CauseRequestAccepted {
		t.Fatalf("association setup with a reused sequence number answered %+v %+v %v", hdr, m, err)
	}
	if n := up.calls.Load(); n != 1 {
		t.Errorf("association handler ran %d times", n)
	}
	// The setup replaced the heartbeat in the cache: its retransmission is
	// answered from there.
	hdr, m, _ = Decode(exchange(t, peer, upf.Addr(), setup))
	if _, ok := m.(*AssociationSetupResponse); !ok || hdr.Seq != 77 {
		t.Errorf("retransmitted setup answered %+v %T", hdr, m)
	}
	if s := upf.Stats(); s.ReusedSequences != 1 || s.DuplicatesAnswered != 1 || up.calls.Load() != 1 {
		t.Errorf("stats %+v, handler calls %d", s, up.calls.Load())
	}
}

// blockingUP holds session establishments until release is closed.
type blockingUP struct {
	*fakeUP
	release chan struct{}
}

func (b *blockingUP) HandleSessionEstablishment(ctx context.Context, req *SessionEstablishmentRequest) *SessionEstablishmentResponse {
	<-b.release
	return b.fakeUP.HandleSessionEstablishment(ctx, req)
}

// TestSequenceReusedWhileInFlight: another request under the sequence
// number of one still being handled is served, not taken for its
// retransmission; the answer to the superseded one is not sent, since the
// peer would match it to the new request.
func TestSequenceReusedWhileInFlight(t *testing.T) {
	up := &blockingUP{fakeUP: newFakeUP(), release: make(chan struct{})}
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)
	if _, err := peer.WriteToUDPAddrPort(encodeSeq(t, establishRequest(1), 50), upf.Addr()); err != nil {
		t.Fatal(err)
	}
	hdr, m, err := Decode(exchange(t, peer, upf.Addr(), encodeSeq(t, &HeartbeatRequest{RecoveryTime: t0}, 50)))
	if _, ok := m.(*HeartbeatResponse); err != nil || !ok || hdr.Seq != 50 {
		t.Fatalf("heartbeat under an in-flight sequence number answered %+v %T %v", hdr, m, err)
	}
	close(up.release)
	_ = peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := peer.ReadFromUDPAddrPort(make([]byte, 2048)); err == nil {
		t.Errorf("answer to the superseded request sent (%d octets)", n)
	}
	if s := upf.Stats(); s.ReusedSequences != 1 || up.establish.Load() != 1 {
		t.Errorf("stats %+v, handler ran %d times", s, up.establish.Load())
	}
}

// TestTrueRetransmissionFromCache: identical octets under the same
// sequence number are a retransmission, answered from the cache.
func TestTrueRetransmissionFromCache(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)
	req := encodeSeq(t, establishRequest(5), 900)
	first := exchange(t, peer, upf.Addr(), req)
	for range 2 {
		if again := exchange(t, peer, upf.Addr(), req); string(again) != string(first) {
			t.Fatal("retransmission got another answer")
		}
	}
	if s := upf.Stats(); s.DuplicatesAnswered != 2 || s.ReusedSequences != 0 || up.establish.Load() != 1 {
		t.Errorf("stats %+v, handler ran %d times", s, up.establish.Load())
	}
}

// TestRestartedPeerGetsFreshAnswers: after a peer shows a new Recovery
// Time Stamp, the same request under the same sequence number is a new one
// (the restarted peer numbers from scratch), whatever the cache holds.
func TestRestartedPeerGetsFreshAnswers(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)

	life := func(recovery time.Time) []uint64 {
		exchange(t, peer, upf.Addr(), encodeSeq(t, &HeartbeatRequest{RecoveryTime: recovery}, 1))
		var seids []uint64
		for i := range 3 {
			_, m, err := Decode(exchange(t, peer, upf.Addr(), encodeSeq(t, establishRequest(uint64(10+i)), uint32(2+i))))
			if err != nil {
				t.Fatal(err)
			}
			seids = append(seids, m.(*SessionEstablishmentResponse).UPFSEID.SEID)
		}
		return seids
	}
	before := life(t0)
	after := life(t0.Add(time.Minute))
	if n := up.establish.Load(); n != 6 {
		t.Fatalf("handler ran %d times for 3 sessions in each of 2 lives", n)
	}
	for i := range before {
		if before[i] == after[i] {
			t.Errorf("session %d after the restart got the cached answer (SEID %#x)", i, after[i])
		}
	}
	// A Recovery Time Stamp that goes back is a restart too.
	life(t0)
	if n := up.establish.Load(); n != 9 {
		t.Errorf("handler ran %d times after a recovery time stamp went back", n)
	}
	if s := upf.Stats(); s.PeerRestarts != 2 || s.DuplicatesAnswered != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestReassociationDropsCache: an Association Setup Request starts the
// peer afresh: its earlier requests are not answered from the cache.
func TestReassociationDropsCache(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)
	est := encodeSeq(t, establishRequest(3), 10)
	exchange(t, peer, upf.Addr(), est)
	exchange(t, peer, upf.Addr(), est)
	if up.establish.Load() != 1 {
		t.Fatalf("retransmission handled again")
	}
	// Same Recovery Time Stamp: a re-association, not a restart.
	setup := &AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}, RecoveryTime: t0}
	exchange(t, peer, upf.Addr(), encodeSeq(t, &HeartbeatRequest{RecoveryTime: t0}, 1))
	exchange(t, peer, upf.Addr(), encodeSeq(t, setup, 2))
	exchange(t, peer, upf.Addr(), est)
	if n := up.establish.Load(); n != 2 {
		t.Errorf("handler ran %d times; the request after re-association was answered from the cache", n)
	}
	if s := upf.Stats(); s.PeerRestarts != 0 || s.DuplicatesAnswered != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestRecoveryFromResponses: the Recovery Time Stamp in a peer's
// Heartbeat Response counts too (the endpoint's own heartbeats).
func TestRecoveryFromResponses(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	peer := rawPeer(t)
	peerAddr := peer.LocalAddr().(*net.UDPAddr).AddrPort()
	est := encodeSeq(t, establishRequest(3), 10)
	exchange(t, peer, upf.Addr(), est)

	// The peer answers two heartbeats of ours, the second after a restart.
	for i, rt := range []time.Time{t0, t0.Add(time.Hour)} {
		done := make(chan error, 1)
		go func() {
			_, err := upf.UserPlane(peerAddr).Heartbeat(context.Background())
			done <- err
		}()
		hdr, _, err := Decode(readOne(t, peer))
		if err != nil || hdr.Type != MsgHeartbeatRequest {
			t.Fatalf("heartbeat %d: %+v %v", i, hdr, err)
		}
		if _, err := peer.WriteToUDPAddrPort(encodeSeq(t, &HeartbeatResponse{RecoveryTime: rt}, hdr.Seq), upf.Addr()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	exchange(t, peer, upf.Addr(), est)
	if s := upf.Stats(); s.PeerRestarts != 1 || up.establish.Load() != 2 {
		t.Errorf("stats %+v, handler ran %d times", s, up.establish.Load())
	}
}

func TestEndpointProtocolErrors(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{NodeID: NodeID{IP: upfAddr}, UP: up})
	peer := rawPeer(t)

	// Heartbeat is answered by the endpoint with its recovery time.
	hb, _ := Encode(&HeartbeatRequest{RecoveryTime: t0}, 1, 0)
	hdr, m, err := Decode(exchange(t, peer, upf.Addr(), hb))
	if err != nil || hdr.Seq != 1 || !m.(*HeartbeatResponse).RecoveryTime.Equal(upf.RecoveryTime()) {
		t.Errorf("heartbeat answer %+v %+v %v", hdr, m, err)
	}

	// Version 2: Version Not Supported Response with the same sequence number.
	hdr, _, err = Decode(exchange(t, peer, upf.Addr(), []byte{0x40, 1, 0, 4, 0, 0, 2, 0}))
	if err != nil || hdr.Type != MsgVersionNotSupportedResponse || hdr.Seq != 2 {
		t.Errorf("version answer %+v %v", hdr, err)
	}

	// A Create PDR without PDI: Mandatory IE missing, Offending IE = PDI.
	// The answer's header SEID is the CP SEID from the request's F-SEID.
	raw := encodeRaw(t, MsgSessionEstablishmentRequest, 0,
		ie.NewNodeID("10.0.0.1", "", ""), ie.NewFSEID(1, net.ParseIP("10.0.0.1"), nil),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(1)),
		ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(2)))
	hdr, m, err = Decode(exchange(t, peer, upf.Addr(), raw))
	r, _ := m.(*SessionEstablishmentResponse)
	if err != nil || r == nil || r.Cause != CauseMandatoryIEMissing || r.OffendingIE != IEPDI || hdr.SEID != 1 {
		t.Errorf("missing PDI answer %+v %+v %v", hdr, m, err)
	}
	if up.establish.Load() != 0 {
		t.Error("handler ran for a request with a missing mandatory IE")
	}

	// Undecodable and unknown messages are dropped and counted; a heartbeat
	// after them proves the endpoint still answers.
	for _, junk := range [][]byte{{1, 2, 3}, {0x20, 200, 0, 4, 0, 0, 5, 0}, {0x20, 1, 0, 200, 0, 0, 5, 0}} {
		if _, err := peer.WriteToUDPAddrPort(junk, upf.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	hb, _ = Encode(&HeartbeatRequest{RecoveryTime: t0}, 6, 0)
	hdr, _, _ = Decode(exchange(t, peer, upf.Addr(), hb))
	if hdr.Seq != 6 {
		t.Errorf("answer after junk: %+v", hdr)
	}
	if s := upf.Stats(); s.Dropped != 3 || s.VersionNotSupported != 1 || s.MandatoryIEErrors != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestRequestTimeout(t *testing.T) {
	silent := rawPeer(t)
	smf := listen(t, EndpointConfig{T1: 20 * time.Millisecond, N1: 2})
	_, err := smf.UserPlane(silent.LocalAddr().(*net.UDPAddr).AddrPort()).Heartbeat(context.Background())
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v", err)
	}
	// The original plus N1 retransmissions reached the peer, all identical.
	first := readOne(t, silent)
	for i := 0; i < 2; i++ {
		if again := readOne(t, silent); string(again) != string(first) {
			t.Error("retransmission differs from the original")
		}
	}
	if s := smf.Stats(); s.Retransmissions != 2 || s.Timeouts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A request whose context ends is given up at once: it is not sent
// again. The SMF relies on it to stop a deletion it is retransmitting to
// a UPF that restarted before the restored sessions reuse its SEID.
func TestCancelledRequestNotRetransmitted(t *testing.T) {
	silent := rawPeer(t)
	smf := listen(t, EndpointConfig{T1: 20 * time.Millisecond, N1: 10})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := smf.UserPlane(silent.LocalAddr().(*net.UDPAddr).AddrPort()).DeleteSession(ctx, 7)
		done <- err
	}()
	readOne(t, silent) // the original
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	retrans := smf.Stats().Retransmissions
	buf := make([]byte, 65535)
	_ = silent.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	for {
		if _, _, err := silent.ReadFromUDPAddrPort(buf); err != nil {
			break // nothing more came
		}
		retrans--
		if retrans < 0 {
			t.Fatal("a retransmission after the request was given up")
		}
	}
}

func TestCloseFailsOutstanding(t *testing.T) {
	silent := rawPeer(t)
	smf, err := Listen(EndpointConfig{Addr: "127.0.0.1:0", T1: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := smf.UserPlane(silent.LocalAddr().(*net.UDPAddr).AddrPort()).Heartbeat(context.Background())
		done <- err
	}()
	readOne(t, silent)
	if err := smf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("outstanding request: %v", err)
	}
}

func TestDirect(t *testing.T) {
	ctx := context.Background()
	up := newFakeUP()
	cp := &fakeCP{}
	d := Direct(up, cp)
	if _, err := d.SetupAssociation(ctx, &AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}}); err != nil {
		t.Fatal(err)
	}
	er, err := d.EstablishSession(ctx, establishRequest(5))
	if err != nil || er.Cause != CauseRequestAccepted {
		t.Fatal(er, err)
	}
	if mr, err := d.ModifySession(ctx, er.UPFSEID.SEID, &SessionModificationRequest{}); err != nil || mr.Cause != CauseRequestAccepted {
		t.Fatal(mr, err)
	}
	if rr, err := up.cp.ReportSession(ctx, 5, &SessionReportRequest{ReportType: ReportUSAR}); err != nil || rr.Cause != CauseRequestAccepted {
		t.Fatal(rr, err)
	}
	if len(cp.reports) != 1 || cp.reports[0] != 5 {
		t.Errorf("reports %v", cp.reports)
	}
	nodeReport := &NodeReportRequest{NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPRR, PathRecoveryPeers: []netip.Addr{gnbAddr}}
	if nr, err := up.cp.ReportNode(ctx, nodeReport); err != nil || nr.Cause != CauseRequestAccepted {
		t.Fatal(nr, err)
	}
	if len(cp.nodes) != 1 || cp.nodes[0] != nodeReport {
		t.Errorf("node reports %v", cp.nodes)
	}
	if dr, err := d.DeleteSession(ctx, er.UPFSEID.SEID); err != nil || dr.Cause != CauseRequestAccepted {
		t.Fatal(dr, err)
	}
	if _, err := d.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.EstablishSession(cancelled, establishRequest(6)); err == nil {
		t.Error("cancelled context accepted")
	}
	noCP := Direct(newFakeUP(), nil)
	_, _ = noCP.SetupAssociation(ctx, &AssociationSetupRequest{})
	if _, err := noCP.(*direct).cp.ReportSession(ctx, 1, &SessionReportRequest{}); !errors.Is(err, ErrNoControlPlane) {
		t.Errorf("report without CP: %v", err)
	}
	if _, err := noCP.(*direct).cp.ReportNode(ctx, nodeReport); !errors.Is(err, ErrNoControlPlane) {
		t.Errorf("node report without CP: %v", err)
	}
}

func BenchmarkEstablishDirect(b *testing.B) {
	ctx := context.Background()
	up := newFakeUP()
	d := Direct(up, nil)
	req := establishRequest(1)
	b.ReportAllocs()
	for b.Loop() {
		r, err := d.EstablishSession(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.DeleteSession(ctx, r.UPFSEID.SEID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEstablishUDP measures one establishment plus one deletion over
// PFCP on loopback (two request/response exchanges per iteration).
func BenchmarkEstablishUDP(b *testing.B) {
	ctx := context.Background()
	up := newFakeUP()
	upf := listen(b, EndpointConfig{UP: up})
	smf := listen(b, EndpointConfig{})
	client := smf.UserPlane(upf.Addr())
	req := establishRequest(1)
	b.ReportAllocs()
	for b.Loop() {
		r, err := client.EstablishSession(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := client.DeleteSession(ctx, r.UPFSEID.SEID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecEstablishmentRequest(b *testing.B) {
	req := establishRequest(1)
	b.ReportAllocs()
	for b.Loop() {
		out, err := Encode(req, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Decode(out); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRestartWithinTheSecond: a peer that restarts within the same second
// keeps its Recovery Time Stamp (one-second resolution), so only its
// sequence numbers tell its requests from its predecessor's: they start
// anywhere, and the same session request is handled afresh, not answered
// with the predecessor's cached response.
func TestRestartWithinTheSecond(t *testing.T) {
	up := newFakeUP()
	upf := listen(t, EndpointConfig{UP: up})
	addr := fmt.Sprintf("127.0.0.1:%d", freeUDPPortForTest(t))
	for life := 1; life <= 2; life++ {
		smf, err := Listen(EndpointConfig{Addr: addr, NodeID: NodeID{IP: smfAddr}, CP: benchCPForTest{}, RecoveryTime: t0})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := smf.UserPlane(upf.Addr()).EstablishSession(context.Background(), establishRequest(7)); err != nil {
			t.Fatal(err)
		}
		smf.Close()
		if n := up.establish.Load(); n != int64(life) {
			t.Fatalf("life %d: the UP handled %d establishments; the restarted peer got a cached answer", life, n)
		}
	}
}

func freeUDPPortForTest(t *testing.T) int {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// benchCPForTest accepts every report.
type benchCPForTest struct{}

func (benchCPForTest) HandleSessionReport(ctx context.Context, seid uint64, req *SessionReportRequest) *SessionReportResponse {
	return &SessionReportResponse{Cause: CauseRequestAccepted}
}

func (benchCPForTest) HandleNodeReport(ctx context.Context, req *NodeReportRequest) *NodeReportResponse {
	return &NodeReportResponse{NodeID: req.NodeID, Cause: CauseRequestAccepted}
}

// The ControlPlane a UPF gets at association setup over UDP names the
// SMF's address (Peer), which UPF-C records for another instance.
func TestControlPlanePeer(t *testing.T) {
	ctx := context.Background()
	up := newFakeUP()
	upf := listen(t, EndpointConfig{NodeID: NodeID{IP: upfAddr}, UP: up})
	smf := listen(t, EndpointConfig{NodeID: NodeID{IP: smfAddr}, CP: &fakeCP{}})
	if _, err := smf.UserPlane(upf.Addr()).SetupAssociation(ctx, &AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}, RecoveryTime: smf.RecoveryTime()}); err != nil {
		t.Fatal(err)
	}
	up.mu.Lock()
	cp := up.cp
	up.mu.Unlock()
	p, ok := cp.(interface{ Peer() netip.AddrPort })
	if !ok {
		t.Fatalf("%T has no Peer", cp)
	}
	if got := p.Peer(); got != smf.Addr() {
		t.Errorf("Peer %v, want the SMF's %v", got, smf.Addr())
	}
}
