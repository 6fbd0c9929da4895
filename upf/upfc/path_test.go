package upfc

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// forwardTo points session upSEID's downlink FAR 2 at the gNB tunnel teid.
func forwardTo(t testing.TB, c *UPFC, upSEID uint64, teid uint32) {
	t.Helper()
	r := c.HandleSessionModification(context.Background(), upSEID, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward), Forwarding: &pfcp.UpdateForwardingParameters{
			Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
				Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: teid, IPv4: gnbAddr}}}},
	})
	if r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %v", r.Cause)
	}
}

func dlFAR(t testing.TB, dp *fakeDP, seid uint64) *rules.FAR {
	t.Helper()
	s := dp.get(seid)
	for _, p := range s.PDRs {
		if p.FAR.ID == 2 {
			return p.FAR
		}
	}
	t.Fatalf("session %d has no FAR 2", seid)
	return nil
}

// An Error Indication report from UPF-U stops the FAR that forwards to
// the disowned tunnel (it buffers) and raises one Session Report Request
// with ERIR and the remote F-TEID (TS 29.244 §5.10, §7.5.8.4); another
// session on the same gNB keeps forwarding, and further Error Indications
// for the stopped tunnel are stale.
func TestErrorIndicationStopsTunnelAndReports(t *testing.T) {
	c, dp, cp := newUPFC(t)
	a := establish(t, c, establishment(0xa)).UPFSEID.SEID
	req := establishment(0xb)
	req.CreatePDRs[0].PDI.UEIP = &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.2")}
	req.CreatePDRs[1].PDI.UEIP = &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.2"), Destination: true}
	b := establish(t, c, req).UPFSEID.SEID
	forwardTo(t, c, a, 0x200)
	forwardTo(t, c, b, 0x300)

	ei := rules.Report{Kind: rules.ReportErrorIndication, RemoteTEID: 0x200, RemotePeer: gnbAddr}
	c.Report(a, ei)
	select {
	case r := <-cp.reports:
		e := r.req.ErrorIndicationReport
		if r.cpSEID != 0xa || r.req.ReportType != pfcp.ReportERIR || e == nil || len(e.RemoteFTEIDs) != 1 ||
			e.RemoteFTEIDs[0] != (pfcp.FTEID{TEID: 0x200, IPv4: gnbAddr}) {
			t.Fatalf("report %#x %+v", r.cpSEID, r.req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Session Report Request")
	}
	if f := dlFAR(t, dp, a); f.Action&rules.ActionForward != 0 || f.Action&rules.ActionBuffer == 0 {
		t.Errorf("session A's DL FAR action %#x, want buffer", f.Action)
	}
	if f := dlFAR(t, dp, b); f.Action != rules.ActionForward || f.Encap == nil || f.Encap.TEID != 0x300 {
		t.Errorf("session B's DL FAR %+v changed", f)
	}
	// The same tunnel again: nothing forwards there now.
	c.Report(a, ei)
	waitFor(t, func() bool { return c.Stats().ReportsDropped == 1 })
	if st := c.Stats(); st.ReportsSent != 1 {
		t.Errorf("stats %+v", st)
	}
	select {
	case r := <-cp.reports:
		t.Errorf("stale Error Indication reported: %+v", r.req)
	default:
	}
	// The SMF's reactivation points the FAR at a new tunnel: forwarding.
	forwardTo(t, c, a, 0x201)
	if f := dlFAR(t, dp, a); f.Action != rules.ActionForward || f.Encap.TEID != 0x201 {
		t.Errorf("after reactivation %+v", f)
	}
}

// Path events become Node Report Requests with a User Plane Path Failure
// or Recovery Report naming the peer (TS 29.244 §7.4.5.1).
func TestPathEventsSendNodeReports(t *testing.T) {
	c, _, cp := newUPFC(t)
	cp.nodes = make(chan *pfcp.NodeReportRequest, 4)
	c.PathFailure(gnbAddr)
	c.PathRecovery(gnbAddr)
	for i, want := range []uint8{pfcp.NodeReportUPFR, pfcp.NodeReportUPRR} {
		select {
		case r := <-cp.nodes:
			peers := r.PathFailurePeers
			if want == pfcp.NodeReportUPRR {
				peers = r.PathRecoveryPeers
			}
			if r.NodeID != upfNode || r.ReportType != want || len(peers) != 1 || peers[0] != gnbAddr {
				t.Errorf("node report %d: %+v", i, r)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("node report %d not sent", i)
		}
	}
	waitFor(t, func() bool { return c.Stats().NodeReportsSent == 2 })
}
