package gnb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
)

// Handover against two scripted AMF associations (the test plays the AMF
// between them) and a fake UPF.

type hoPair struct {
	a1, a2 *fakeAMF
	g1, g2 *GNB
	upf    *fakeUPF
}

func newHOPair(t *testing.T) *hoPair {
	t.Helper()
	h := &hoPair{a1: newFakeAMF(t), a2: newFakeAMF(t), upf: newFakeUPF(t)}
	cfg := gnbConfig()
	cfg.N3PeerPort = h.upf.port()
	h.g1 = h.a1.setup(cfg)
	cfg.GNBID = 8
	h.g2 = h.a2.setup(cfg)
	Neighbours(h.g1, h.g2)
	return h
}

var hoUL = ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: 0x100}

// sessionUE connects a UE on g1 (AMF UE NGAP ID 42) with PDU session 5
// (QFI 1) and returns its port, the fake UE, its stream and DL TEID.
func (h *hoPair) sessionUE(t *testing.T) (*Port, *ue, uint16, uint32) {
	t.Helper()
	p, u, stream := connectUE(t, h.a1, h.g1, 42)
	h.a1.send(stream, &ngap.InitialContextSetupRequest{
		AMFUENGAPID: 42, RANUENGAPID: p.RANUENGAPID(), GUAMI: guami, AllowedNSSAI: testSlices,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		UEAggregateMaxBitRate:  &ngap.AMBR{DL: 1e9, UL: 1e9},
		PDUSessionResourceSetupItems: []ngap.PDUSessionResourceSetupItemSUReq{
			{ID: 5, SNSSAI: testSlices[0], Transfer: setupTransfer(t, hoUL, 1)},
		},
	})
	if _, ok := h.a1.recv().m.(*ngap.InitialContextSetupResponse); !ok {
		t.Fatal("no Initial Context Setup Response")
	}
	u.wait(t) // ics
	u.wait(t) // setup
	s := p.Sessions()
	if len(s) != 1 {
		t.Fatalf("sessions %+v", s)
	}
	return p, u, stream, s[0].DL.TEID
}

type hoResult struct {
	start, end time.Time
	err        error
}

func runHandover(f func(context.Context, uint32) (time.Time, time.Time, error), target uint32) chan hoResult {
	ch := make(chan hoResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, e, err := f(ctx, target)
		ch <- hoResult{s, e, err}
	}()
	return ch
}

func waitResult(t *testing.T, ch chan hoResult) hoResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("handover did not end")
	}
	return hoResult{}
}

// downlink waits for the UE's next downlink packet.
func downlink(t *testing.T, u *ue) string {
	t.Helper()
	select {
	case d := <-u.data:
		return string(d.pkt)
	case <-time.After(3 * time.Second):
		t.Fatal("no downlink delivered")
	}
	return ""
}

func noDownlink(t *testing.T, u *ue) {
	t.Helper()
	select {
	case d := <-u.data:
		t.Fatalf("downlink %q delivered too early", d.pkt)
	case <-time.After(30 * time.Millisecond):
	}
}

// TestHandoverN2Forwarding: the source's Handover Required (target, token,
// session), the target's admission (DL and forwarding tunnels), the
// command with a forwarding tunnel: the source forwards downlink there
// (DL PDU Session Container, the session's QFI) and passes the End Marker
// on; the target delivers forwarded packets first (those from before the
// UE arrived too) and the new path's after the End Marker of the
// forwarding tunnel; the source's release leaves the UE alone.
func TestHandoverN2Forwarding(t *testing.T) {
	h := newHOPair(t)
	p, u, stream, srcDL := h.sessionUE(t)
	ran1 := p.RANUENGAPID()
	// The execution hook runs once, between the Handover Command and the
	// Handover Notify (set before the handover's goroutine starts).
	var executions int
	var executed time.Time
	h.g1.cfg.OnHandoverExecution = func() { executions++; executed = time.Now() }
	res := runHandover(p.HandoverN2, 8)

	r := h.a1.recv()
	req, ok := r.m.(*ngap.HandoverRequired)
	if !ok || r.stream != stream || req.AMFUENGAPID != 42 || req.RANUENGAPID != ran1 || req.HandoverType != ngap.HandoverIntra5GS ||
		req.TargetID.GlobalGNBID.GNBID != 8 || req.TargetID.SelectedTAI != h.g2.TAI() || len(req.Sessions) != 1 || req.Sessions[0].ID != 5 {
		t.Fatalf("Handover Required %+v", r.m)
	}
	if _, err := ngap.DecodeHandoverRequiredTransfer(req.Sessions[0].Transfer); err != nil {
		t.Fatal(err)
	}
	token := tokenOf(req.SourceToTargetTransparentContainer)
	if len(token) != 12 || string(token[:4]) != "tern" {
		t.Fatalf("token %x", token)
	}
	h.a2.send(1, &ngap.HandoverRequest{AMFUENGAPID: 99, HandoverType: ngap.HandoverIntra5GS, Cause: req.Cause,
		UEAggregateMaxBitRate: ngap.AMBR{DL: 1e9, UL: 1e9}, UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		SecurityContext: ngap.SecurityContext{NextHopChainingCount: 1}, AllowedNSSAI: testSlices, GUAMI: guami,
		Sessions:                           []ngap.PDUSessionResourceSetupItemHOReq{{ID: 5, SNSSAI: testSlices[0], Transfer: setupTransfer(t, hoUL, 1)}},
		SourceToTargetTransparentContainer: req.SourceToTargetTransparentContainer})
	r = h.a2.recv()
	ack, ok := r.m.(*ngap.HandoverRequestAcknowledge)
	if !ok || ack.AMFUENGAPID != 99 || ack.RANUENGAPID == 0 || len(ack.Admitted) != 1 || ack.Admitted[0].ID != 5 || len(ack.TargetToSourceTransparentContainer) == 0 {
		t.Fatalf("Handover Request Acknowledge %+v", r.m)
	}
	at, err := ngap.DecodeHandoverRequestAcknowledgeTransfer(ack.Admitted[0].Transfer)
	if err != nil || at.DLForwardingTunnel == nil || at.DLTunnel.TEID == 0 || at.DLForwardingTunnel.TEID == at.DLTunnel.TEID ||
		len(at.QoSFlows) != 1 || at.QoSFlows[0].QFI != 1 || !at.QoSFlows[0].DataForwardingAccepted {
		t.Fatalf("acknowledge transfer %+v %v", at, err)
	}
	n3s, n3t := h.g1.N3Addr(), h.g2.N3Addr()
	// Before the UE arrives: a forwarded packet waits, a new-path one is held.
	h.upf.send(n3t, gtpu.AppendGPDU(nil, at.DLForwardingTunnel.TEID, 1, true, []byte("f0")))
	h.upf.send(n3t, gtpu.AppendGPDU(nil, at.DLTunnel.TEID, 1, true, []byte("n0")))
	noDownlink(t, u)

	fwd := ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: 0x777}
	ct, _ := ngap.EncodeHandoverCommandTransfer(&ngap.HandoverCommandTransfer{DLForwardingTunnel: &fwd, QoSFlowsToBeForwarded: []uint8{1}})
	commanded := time.Now()
	h.a1.send(stream, &ngap.HandoverCommand{AMFUENGAPID: 42, RANUENGAPID: ran1, HandoverType: ngap.HandoverIntra5GS,
		Handover: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: ct}}, TargetToSourceTransparentContainer: ack.TargetToSourceTransparentContainer})
	r = h.a1.recv()
	if st, ok := r.m.(*ngap.UplinkRANStatusTransfer); !ok || len(st.DRBs) != 1 || st.DRBs[0].DRBID != 5 {
		t.Fatalf("want Uplink RAN Status Transfer, got %+v", r.m)
	}
	r = h.a2.recv()
	notify, ok := r.m.(*ngap.HandoverNotify)
	if !ok || notify.AMFUENGAPID != 99 || notify.RANUENGAPID != ack.RANUENGAPID || notify.UserLocation.TAI != h.g2.TAI() {
		t.Fatalf("Handover Notify %+v", r.m)
	}
	hr := waitResult(t, res)
	if hr.err != nil || hr.start.IsZero() || !hr.end.After(hr.start) {
		t.Fatalf("handover %+v", hr)
	}
	if executions != 1 || executed.Before(commanded) || !executed.Before(hr.end) {
		t.Fatalf("execution hook ran %d times, at %v; want once between the command (%v) and the notify (%v)",
			executions, executed, commanded, hr.end)
	}
	if p.GNB() != h.g2 || p.RANUENGAPID() != ack.RANUENGAPID || p.AMFUENGAPID() != 99 || p.ServingTAI() != h.g2.TAI() {
		t.Fatalf("port at gNB %d, ids %d/%d", p.GNB().ID(), p.AMFUENGAPID(), p.RANUENGAPID())
	}
	if got := downlink(t, u); got != "f0" {
		t.Fatalf("first downlink at the target %q, want the forwarded f0", got)
	}

	// The source forwards what still reaches it.
	h.upf.send(n3s, gtpu.AppendGPDU(nil, srcDL, 1, true, []byte("s1")))
	b, gh := h.upf.recv()
	if gh.Type != gtpu.TypeGPDU || gh.TEID != 0x777 || !gh.HasPDUSessionContainer || gh.PDUType != gtpu.PDUTypeDL || gh.QFI != 1 ||
		string(gh.Payload(b)) != "s1" {
		t.Fatalf("forwarded G-PDU %+v %q", gh, gh.Payload(b))
	}
	// ... which comes back through the forwarding tunnel, then the End
	// Marker: from the UPF to the source, passed on to the tunnel.
	h.upf.send(n3t, gtpu.AppendGPDU(nil, at.DLForwardingTunnel.TEID, 1, true, []byte("s1")))
	if got := downlink(t, u); got != "s1" {
		t.Fatalf("downlink %q, want s1", got)
	}
	noDownlink(t, u) // n0 is still held
	h.upf.send(n3s, gtpu.AppendEndMarker(nil, srcDL))
	if _, gh := h.upf.recv(); gh.Type != gtpu.TypeEndMarker || gh.TEID != 0x777 {
		t.Fatalf("End Marker passed on %+v", gh)
	}
	h.upf.send(n3t, gtpu.AppendEndMarker(nil, at.DLForwardingTunnel.TEID))
	if got := downlink(t, u); got != "n0" {
		t.Fatalf("downlink %q, want the held n0 after the End Marker", got)
	}
	h.upf.send(n3t, gtpu.AppendGPDU(nil, at.DLTunnel.TEID, 1, true, []byte("n1")))
	if got := downlink(t, u); got != "n1" {
		t.Fatalf("downlink %q, want n1", got)
	}

	// The source's connection goes; the UE is not told.
	h.a1.send(stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: 42, RANUENGAPID: ran1,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkSuccessfulHandover}})
	if c, ok := h.a1.recv().m.(*ngap.UEContextReleaseComplete); !ok || len(c.PDUSessionIDs) != 1 {
		t.Fatalf("release complete %+v", c)
	}
	// Uplink goes through the target.
	if err := p.SendData(5, []byte("ul")); err != nil {
		t.Fatal(err)
	}
	if _, gh := h.upf.recv(); gh.TEID != hoUL.TEID || gh.PDUType != gtpu.PDUTypeUL {
		t.Fatalf("uplink %+v", gh)
	}
	deadline := time.Now().Add(2 * time.Second)
	for h.g1.N3Counters().TEIDs != 0 || h.g2.N3Counters().TEIDs != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("TEIDs: source %d, target %d; want 0 and 1", h.g1.N3Counters().TEIDs, h.g2.N3Counters().TEIDs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	u.mu.Lock()
	releases := u.releases
	u.mu.Unlock()
	c1, c2 := h.g1.Counters().Handover, h.g2.Counters().Handover
	if releases != 0 || c1.N2Started != 1 || c1.N2Completed != 1 || c1.Forwarded != 1 || c1.EndMarkersForwarded != 1 ||
		c2.N2Admitted != 1 || c2.EarlyForwarded != 1 || c2.ForwardedReceived != 2 || c2.Held != 1 || c2.HoldTimeouts != 0 {
		t.Fatalf("UE releases %d\nsource %+v\ntarget %+v", releases, c1, c2)
	}
}

// TestHandoverN2Refusals: a target configured to refuse answers Handover
// Failure; the source's preparation failure, its cancel after the command
// and a command for a target that never saw the request leave the UE on
// the source, where its downlink goes on.
func TestHandoverN2Refusals(t *testing.T) {
	h := newHOPair(t)
	p, u, stream, srcDL := h.sessionUE(t)
	ran1 := p.RANUENGAPID()
	stays := func(what string) {
		t.Helper()
		if p.GNB() != h.g1 || p.RANUENGAPID() != ran1 {
			t.Fatalf("after %s the UE is at gNB %d", what, p.GNB().ID())
		}
		h.upf.send(h.g1.N3Addr(), gtpu.AppendGPDU(nil, srcDL, 1, true, []byte(what)))
		if got := downlink(t, u); got != what {
			t.Fatalf("downlink after %s: %q", what, got)
		}
	}

	// The target refuses; the AMF answers the source's Handover Required
	// with Handover Preparation Failure.
	cause := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkCellNotAvailable}
	h.g2.SetHandoverAnswer(HandoverRefuse, &cause)
	res := runHandover(p.HandoverN2, 8)
	req := h.a1.recv().m.(*ngap.HandoverRequired)
	h.a2.send(1, &ngap.HandoverRequest{AMFUENGAPID: 99, UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		AllowedNSSAI: testSlices, GUAMI: guami, SourceToTargetTransparentContainer: req.SourceToTargetTransparentContainer,
		Sessions: []ngap.PDUSessionResourceSetupItemHOReq{{ID: 5, SNSSAI: testSlices[0], Transfer: setupTransfer(t, hoUL, 1)}}})
	if f, ok := h.a2.recv().m.(*ngap.HandoverFailure); !ok || f.AMFUENGAPID != 99 || f.Cause != cause {
		t.Fatalf("want Handover Failure, got %+v", f)
	}
	h.a1.send(stream, &ngap.HandoverPreparationFailure{AMFUENGAPID: 42, RANUENGAPID: ran1, Cause: cause})
	var he *HandoverError
	if hr := waitResult(t, res); !errors.As(hr.err, &he) || he.Cause == nil || *he.Cause != cause {
		t.Fatalf("handover: %v, want a Handover Preparation Failure", hr.err)
	}
	stays("refused")

	// The source cancels after the command.
	h.g2.SetHandoverAnswer(HandoverAccept, nil)
	h.g1.CancelHandovers(true)
	res = runHandover(p.HandoverN2, 8)
	h.a1.recv()
	ct, _ := ngap.EncodeHandoverCommandTransfer(&ngap.HandoverCommandTransfer{})
	h.a1.send(stream, &ngap.HandoverCommand{AMFUENGAPID: 42, RANUENGAPID: ran1, Handover: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: ct}},
		TargetToSourceTransparentContainer: []byte{0}})
	if c, ok := h.a1.recv().m.(*ngap.HandoverCancel); !ok || c.Cause.Value != ngap.RadioNetworkHandoverCancelled {
		t.Fatalf("want Handover Cancel, got %+v", c)
	}
	h.a1.send(stream, &ngap.HandoverCancelAcknowledge{AMFUENGAPID: 42, RANUENGAPID: ran1})
	if hr := waitResult(t, res); !errors.Is(hr.err, ErrHandoverCancelled) {
		t.Fatalf("handover: %v, want cancelled", hr.err)
	}
	stays("cancelled")

	// A command, but the target never admitted the UE: it comes back and
	// the source cancels.
	h.g1.CancelHandovers(false)
	res = runHandover(p.HandoverN2, 8)
	h.a1.recv()
	h.a1.send(stream, &ngap.HandoverCommand{AMFUENGAPID: 42, RANUENGAPID: ran1, Handover: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: ct}},
		TargetToSourceTransparentContainer: []byte{0}})
	if c, ok := h.a1.recv().m.(*ngap.HandoverCancel); !ok || c.Cause.Value != ngap.RadioNetworkHOFailureInTarget {
		t.Fatalf("want Handover Cancel, got %+v", c)
	}
	h.a1.send(stream, &ngap.HandoverCancelAcknowledge{AMFUENGAPID: 42, RANUENGAPID: ran1})
	if hr := waitResult(t, res); !errors.Is(hr.err, ErrTargetUnreachable) {
		t.Fatalf("handover: %v, want the target unreachable", hr.err)
	}
	stays("unreachable")

	if _, _, err := p.HandoverN2(context.Background(), 99); err == nil {
		t.Fatal("handover to a gNB that is not a neighbour")
	}
	if c := h.g1.Counters().Handover; c.N2PreparationFailures != 1 || c.N2Cancelled != 2 || c.N2Completed != 0 {
		t.Fatalf("source %+v", c)
	}
	if c := h.g2.Counters().Handover; c.N2Refused != 1 {
		t.Fatalf("target %+v", c)
	}
}

// TestHandoverXn: the target takes the UE and sends Path Switch Request
// (the source's AMF UE NGAP ID, the UE security capabilities of the
// Initial Context Setup, per session its DL tunnel and QoS flows); the
// source forwards in-process until the End Marker, the target holds the
// new path's packets behind it; the acknowledgement brings the new AMF UE
// NGAP ID and UL tunnel. The source forgets the UE without NGAP.
func TestHandoverXn(t *testing.T) {
	h := newHOPair(t)
	p, u, _, srcDL := h.sessionUE(t)
	res := runHandover(p.HandoverXn, 8)
	r := h.a2.recv()
	psr, ok := r.m.(*ngap.PathSwitchRequest)
	if !ok || psr.SourceAMFUENGAPID != 42 || psr.RANUENGAPID == 0 || psr.UserLocation.TAI != h.g2.TAI() ||
		psr.UESecurityCapabilities != ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0) || len(psr.ToBeSwitched) != 1 {
		t.Fatalf("Path Switch Request %+v", r.m)
	}
	tr, err := ngap.DecodePathSwitchRequestTransfer(psr.ToBeSwitched[0].Transfer)
	if err != nil || tr.DLTunnel.Addr != h.g2.N3Addr().Addr() || len(tr.QoSFlows) != 1 || tr.QoSFlows[0] != 1 {
		t.Fatalf("path switch request transfer %+v %v", tr, err)
	}
	// Old path -> forwarded to the UE at the target; new path held.
	h.upf.send(h.g1.N3Addr(), gtpu.AppendGPDU(nil, srcDL, 1, true, []byte("o1")))
	if got := downlink(t, u); got != "o1" {
		t.Fatalf("downlink %q", got)
	}
	h.upf.send(h.g2.N3Addr(), gtpu.AppendGPDU(nil, tr.DLTunnel.TEID, 1, true, []byte("n1")))
	noDownlink(t, u)
	newUL := ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: 0x200}
	at, _ := ngap.EncodePathSwitchRequestAcknowledgeTransfer(&ngap.PathSwitchRequestAcknowledgeTransfer{ULTunnel: &newUL})
	h.a2.send(r.stream, &ngap.PathSwitchRequestAcknowledge{AMFUENGAPID: 77, RANUENGAPID: psr.RANUENGAPID,
		SecurityContext: ngap.SecurityContext{NextHopChainingCount: 2}, Switched: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: at}}, AllowedNSSAI: testSlices})
	hr := waitResult(t, res)
	if hr.err != nil || !hr.end.After(hr.start) || p.GNB() != h.g2 || p.AMFUENGAPID() != 77 || p.RANUENGAPID() != psr.RANUENGAPID {
		t.Fatalf("handover %+v; port at %d ids %d/%d", hr, p.GNB().ID(), p.AMFUENGAPID(), p.RANUENGAPID())
	}
	h.upf.send(h.g1.N3Addr(), gtpu.AppendEndMarker(nil, srcDL))
	if got := downlink(t, u); got != "n1" {
		t.Fatalf("downlink %q after the End Marker, want n1", got)
	}
	if err := p.SendData(5, []byte("ul")); err != nil {
		t.Fatal(err)
	}
	if _, gh := h.upf.recv(); gh.TEID != 0x200 {
		t.Fatalf("uplink to TEID %#x, want the acknowledged 0x200", gh.TEID)
	}
	deadline := time.Now().Add(2 * time.Second)
	for h.g1.N3Counters().TEIDs != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the source kept its tunnel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.g1.mu.Lock()
	left := len(h.g1.byRAN)
	h.g1.mu.Unlock()
	if left != 0 {
		t.Fatalf("the source still has %d UE connections", left)
	}
	c1, c2 := h.g1.Counters().Handover, h.g2.Counters().Handover
	if c1.Forwarded != 1 || c1.EndMarkersForwarded != 1 || c2.PathSwitches != 1 || c2.PathSwitchAcks != 1 || c2.Held != 1 {
		t.Fatalf("source %+v\ntarget %+v", c1, c2)
	}
}

// TestHandoverXnFailure: Path Switch Request Failure: the target releases
// the UE, the source asks the AMF to release its connection.
func TestHandoverXnFailure(t *testing.T) {
	h := newHOPair(t)
	p, u, stream, _ := h.sessionUE(t)
	ran1 := p.RANUENGAPID()
	res := runHandover(p.HandoverXn, 8)
	r := h.a2.recv()
	psr := r.m.(*ngap.PathSwitchRequest)
	ut, _ := ngap.EncodePathSwitchRequestUnsuccessfulTransfer(&ngap.PathSwitchRequestUnsuccessfulTransfer{
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnspecified}})
	h.a2.send(r.stream, &ngap.PathSwitchRequestFailure{AMFUENGAPID: 42, RANUENGAPID: psr.RANUENGAPID,
		Released: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: ut}}})
	var he *HandoverError
	if hr := waitResult(t, res); !errors.As(hr.err, &he) || he.Message != "Path Switch Request Failure" {
		t.Fatalf("handover: %v", hr.err)
	}
	r = h.a1.recv()
	if rr, ok := r.m.(*ngap.UEContextReleaseRequest); !ok || rr.RANUENGAPID != ran1 || r.stream != stream ||
		rr.Cause.Value != ngap.RadioNetworkRadioConnectionWithUELost {
		t.Fatalf("source: want UE Context Release Request, got %+v", r.m)
	}
	u.wait(t)
	u.mu.Lock()
	releases := u.releases
	u.mu.Unlock()
	if releases != 1 || p.RANUENGAPID() != 0 || len(p.Sessions()) != 0 || h.g2.N3Counters().TEIDs != 0 {
		t.Fatalf("UE releases %d, ran id %d, sessions %+v, target TEIDs %d", releases, p.RANUENGAPID(), p.Sessions(), h.g2.N3Counters().TEIDs)
	}
	// The UE camps at the target: its paging identity went with it.
	stmsi := identity.STMSI{SetID: 0x3F8, TMSI: 5}
	p.SetPagingIdentity(&stmsi)
	h.a2.send(0, &ngap.Paging{UEPagingIdentity: stmsi, TAIListForPaging: []identity.TAI{h.g2.TAI()}})
	u.wait(t)
	if ev := u.eventList(); ev[len(ev)-1] != "paging" {
		t.Fatalf("events %v", ev)
	}
}

// TestN3Flush: a flush returns once the reader has handled what reached
// the socket before it, and its marker is neither counted nor answered.
func TestN3Flush(t *testing.T) {
	h := newHOPair(t)
	_, u, _, teid := h.sessionUE(t)
	n := h.g1.n3
	for i := range 50 {
		h.upf.send(n.Addr(), gtpu.AppendGPDU(nil, teid, 1, true, fmt.Appendf(nil, "pkt-%d", i)))
	}
	if !n.flush(5 * time.Second) {
		t.Fatal("flush timed out")
	}
	if got := len(u.data); got != 50 {
		t.Errorf("%d packets delivered by the time the flush returned, want 50", got)
	}
	if c := h.g1.N3Counters(); c.Malformed != 0 || c.EchoRequests != 0 || c.UnknownTEID != 0 {
		t.Errorf("counters %+v", c)
	}
}
