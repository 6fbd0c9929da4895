package upfu_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/upfc"
	"github.com/tern5g/tern/upf/upfu"
)

type acceptCP struct{}

func (acceptCP) ReportNode(context.Context, *pfcp.NodeReportRequest) (*pfcp.NodeReportResponse, error) {
	return &pfcp.NodeReportResponse{Cause: pfcp.CauseRequestAccepted}, nil
}

func (acceptCP) ReportSession(context.Context, uint64, *pfcp.SessionReportRequest) (*pfcp.SessionReportResponse, error) {
	return &pfcp.SessionReportResponse{Cause: pfcp.CauseRequestAccepted}, nil
}

// 2,000 PDU sessions through UPF-C and UPF-U: established buffering (paging,
// with a BAR), a few downlink packets buffered, then drained to the gNB,
// deleted with the buffer full, or handed over (indirect forwarding PDR,
// path switch with End Marker) and deleted. Every TEID and every buffered
// byte comes back.
func TestCyclesReturnTEIDsAndBuffers(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	snk := &sink{}
	p.SetSink(snk)
	c := upfc.New(upfc.Config{NodeID: pfcp.NodeID{IP: n3Addr}, N3Addr: n3Addr, NetworkInstances: netInst}, p, nil)
	p.SetReporter(c)
	ctx := context.Background()
	smf := pfcp.NodeID{IP: netip.MustParseAddr("10.0.0.1")}
	if r := c.HandleAssociationSetup(ctx, acceptCP{}, &pfcp.AssociationSetupRequest{NodeID: smf, RecoveryTime: time.Now()}); r.Cause != pfcp.CauseRequestAccepted {
		t.Fatal(r.Cause)
	}
	ohc := func(teid uint32, peer netip.AddrPort) *pfcp.OuterHeaderCreation {
		return &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: teid, IPv4: peer.Addr()}
	}
	modify := func(seid uint64, req *pfcp.SessionModificationRequest) *pfcp.SessionModificationResponse {
		t.Helper()
		mr := c.HandleSessionModification(ctx, seid, req)
		if mr.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("modification: %v %+v", mr.Cause, mr.FailedRuleID)
		}
		return mr
	}
	w := p.NewWorker()
	in := make([]upfu.Packet, 3)
	const cycles = 2000
	var drained, discarded, endMarkers int
	for i := range cycles {
		ue := netip.AddrFrom4([4]byte{10, 60, byte(i >> 8), byte(i)})
		est := c.HandleSessionEstablishment(ctx, &pfcp.SessionEstablishmentRequest{
			NodeID: smf, CPFSEID: pfcp.FSEID{SEID: uint64(i + 1), IPv4: smf.IP},
			CreatePDRs: []pfcp.CreatePDR{
				{ID: 1, Precedence: 255, FARID: 1, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}, UEIP: &pfcp.UEIPAddress{IPv4: ue}}},
				{ID: 2, Precedence: 255, FARID: 2, QERIDs: []uint32{1},
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ue, Destination: true}}},
			},
			CreateFARs: []pfcp.CreateFAR{
				{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
				{ID: 2, ApplyAction: pfcp.ActionBuffer | pfcp.ActionNotifyCP, BARID: ptr(uint8(1))},
			},
			CreateQERs: []pfcp.CreateQER{{ID: 1, QFI: 9}},
			CreateBAR:  &pfcp.CreateBAR{ID: 1, SuggestedBufferingPackets: 2},
		})
		if est.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("cycle %d: establishment %v", i, est.Cause)
		}
		seid := est.UPFSEID.SEID
		for k := range in {
			in[k] = dlPacket(ue, uint16(k), 100+k)
		}
		w.Downlink(in, nil) // the BAR's count: 2 buffered, 1 dropped
		switch i % 3 {
		case 0: // paging succeeded: the buffer drains to the gNB
			modify(seid, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
				Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, OuterHeaderCreation: ohc(0x200, gnb)}}}})
			drained += 2
		case 1: // the session goes with its buffer
			discarded += 2
		case 2: // handover with indirect forwarding, then the path switch
			modify(seid, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
				Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, OuterHeaderCreation: ohc(0x200, gnb)}}}})
			drained += 2
			modify(seid, &pfcp.SessionModificationRequest{
				CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
					Destination: pfcp.InterfaceAccess, OuterHeaderCreation: ohc(0xf00d, gnb2)}}},
				CreatePDRs: []pfcp.CreatePDR{{ID: 3, Precedence: 255, FARID: 3,
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}}}},
				UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionBuffer)}}, // smart buffering
			})
			w.Downlink(in[:1], nil)
			modify(seid, &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
				Forwarding: &pfcp.UpdateForwardingParameters{NoDestination: true, OuterHeaderCreation: ohc(0x300, gnb2), SendEndMarker: true}}}})
			drained++
			endMarkers++
			modify(seid, &pfcp.SessionModificationRequest{RemovePDRs: []uint16{3}, RemoveFARs: []uint32{3}})
		}
		if del := c.HandleSessionDeletion(ctx, seid); del.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("cycle %d: deletion %v", i, del.Cause)
		}
		if i%500 == 0 {
			if st := p.Stats(); st.BufferedBytes != 0 || st.Buffered != 0 {
				t.Fatalf("cycle %d: %d packets, %d bytes left buffered", i, st.Buffered, st.BufferedBytes)
			}
		}
	}
	cs, ps := c.Stats(), p.Stats()
	if cs.TEIDs != 0 || cs.Sessions != 0 || ps.Sessions != 0 {
		t.Errorf("left: UPF-C %+v, UPF-U %d sessions", cs, ps.Sessions)
	}
	if ps.Buffered != 0 || ps.BufferedBytes != 0 {
		t.Errorf("left buffered: %d packets, %d bytes", ps.Buffered, ps.BufferedBytes)
	}
	snk.mu.Lock()
	sent := len(snk.pkts)
	snk.mu.Unlock()
	if sent != drained+endMarkers || ps.EndMarkersSent != uint64(endMarkers) || ps.Drops["buffer-discarded"] != uint64(discarded) ||
		ps.Drops["buffer-full"] != cycles || ps.BufferedTotal != uint64(drained+discarded) {
		t.Errorf("sink got %d (want %d drained + %d End Markers); stats %+v", sent, drained, endMarkers, ps)
	}
}

// TestRuleIDZeroForwards: a session whose rules are all numbered 0 (valid
// IDs, TS 29.244 §8.2.36, §8.2.74, §8.2.75, §8.2.54) carries traffic
// through UPF-C into UPF-U: uplink to N6, downlink to the gNB.
func TestRuleIDZeroForwards(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	c := upfc.New(upfc.Config{NodeID: pfcp.NodeID{IP: n3Addr}, N3Addr: n3Addr, NetworkInstances: netInst}, p, nil)
	ctx := context.Background()
	smf := pfcp.NodeID{IP: netip.MustParseAddr("10.0.0.1")}
	if r := c.HandleAssociationSetup(ctx, acceptCP{}, &pfcp.AssociationSetupRequest{NodeID: smf, RecoveryTime: time.Now()}); r.Cause != pfcp.CauseRequestAccepted {
		t.Fatal(r.Cause)
	}
	est := c.HandleSessionEstablishment(ctx, &pfcp.SessionEstablishmentRequest{
		NodeID: smf, CPFSEID: pfcp.FSEID{SEID: 1, IPv4: smf.IP},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 0, Precedence: 255, FARID: 0, QERIDs: []uint32{0}, URRIDs: []uint32{0}, OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4),
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}, UEIP: &pfcp.UEIPAddress{IPv4: ueIP}}},
			{ID: 1, Precedence: 255, FARID: 1, QERIDs: []uint32{0}, URRIDs: []uint32{0},
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ueIP, Destination: true}}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 0, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "ims"}},
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: dlTEID, IPv4: gnb.Addr()}}},
		},
		CreateQERs: []pfcp.CreateQER{{ID: 0, QFI: qfi}},
		CreateURRs: []pfcp.CreateURR{{ID: 0, Method: pfcp.MethodVolume}},
	})
	if est.Cause != pfcp.CauseRequestAccepted || len(est.CreatedPDRs) != 1 {
		t.Fatalf("establishment: %v (IE %d, rule %+v)", est.Cause, est.OffendingIE, est.FailedRuleID)
	}
	w := p.NewWorker()
	inner := ipv4UDP(ueIP, dnIP, 1000, 53, 100)
	if out := w.Uplink([]upfu.Packet{ulPacket(est.CreatedPDRs[0].LocalFTEID.TEID, inner)}, nil); len(out) != 1 || out[0].Port != 1 {
		t.Fatalf("uplink: %d outputs; stats %+v", len(out), p.Stats())
	}
	if out := w.Downlink([]upfu.Packet{dlPacket(ueIP, 53, 100)}, nil); len(out) != 1 || out[0].Peer != gnb {
		t.Fatalf("downlink: %d outputs; stats %+v", len(out), p.Stats())
	}
	del := c.HandleSessionDeletion(ctx, est.UPFSEID.SEID)
	if len(del.UsageReports) != 1 || del.UsageReports[0].URRID != 0 || del.UsageReports[0].Volume.Total != 200 {
		t.Errorf("URR 0 final report %+v", del.UsageReports)
	}
}

func ptr[T any](v T) *T { return &v }
