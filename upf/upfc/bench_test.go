package upfc

import (
	"context"
	"testing"
	"time"

	"github.com/tern5g/tern/pfcp"
)

// BenchmarkSessionCycle is one PDU session's N4 life on UPF-C alone:
// establishment (CHOOSE, QER, URR, BAR), the modification that points the
// downlink at the gNB, and deletion, into a data path that only keeps the
// snapshots. Its allocations per op are the cost of UPF-C's bookkeeping.
func BenchmarkSessionCycle(b *testing.B) {
	dp := &fakeDP{}
	cp := &fakeCP{reports: make(chan sentReport, 1)}
	c := New(Config{NodeID: upfNode, N3Addr: n3Addr, NetworkInstances: []string{"internet", "ims"}}, dp, nil)
	ctx := context.Background()
	if r := c.HandleAssociationSetup(ctx, cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()}); r.Cause != pfcp.CauseRequestAccepted {
		b.Fatalf("association setup: %v", r.Cause)
	}
	req := establishment(1)
	mod := &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward), Forwarding: &pfcp.UpdateForwardingParameters{
			Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
				Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr}}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		resp := c.HandleSessionEstablishment(ctx, req)
		if resp.Cause != pfcp.CauseRequestAccepted {
			b.Fatalf("establishment: %v", resp.Cause)
		}
		seid := resp.UPFSEID.SEID
		if r := c.HandleSessionModification(ctx, seid, mod); r.Cause != pfcp.CauseRequestAccepted {
			b.Fatalf("modification: %v", r.Cause)
		}
		if r := c.HandleSessionDeletion(ctx, seid); r.Cause != pfcp.CauseRequestAccepted {
			b.Fatalf("deletion: %v", r.Cause)
		}
	}
}
