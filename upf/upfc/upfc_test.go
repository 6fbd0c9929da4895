package upfc

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// fakeDP records what UPF-C programs.
type fakeDP struct {
	mu        sync.Mutex
	installed map[uint64]*rules.Session
	installs  int
	removes   []uint64
}

func (d *fakeDP) Install(s *rules.Session) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.installed == nil {
		d.installed = make(map[uint64]*rules.Session)
	}
	d.installed[s.SEID] = s
	d.installs++
}

func (d *fakeDP) Remove(seid uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.installed, seid)
	d.removes = append(d.removes, seid)
}

func (d *fakeDP) get(seid uint64) *rules.Session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.installed[seid]
}

func (d *fakeDP) counts() (installs, removes, live int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.installs, len(d.removes), len(d.installed)
}

// fakeCP receives Session Report Requests.
type fakeCP struct {
	reports chan sentReport
	nodes   chan *pfcp.NodeReportRequest // Node Report Requests, when non-nil
	block   chan struct{}                // when non-nil, ReportSession waits for it
	sending func()                       // when non-nil, ReportSession calls it first
	cause   pfcp.Cause
	err     error
}

type sentReport struct {
	cpSEID uint64
	req    *pfcp.SessionReportRequest
}

func (f *fakeCP) ReportNode(ctx context.Context, req *pfcp.NodeReportRequest) (*pfcp.NodeReportResponse, error) {
	if f.nodes != nil {
		f.nodes <- req
	}
	return &pfcp.NodeReportResponse{Cause: pfcp.CauseRequestAccepted}, nil
}

func (f *fakeCP) ReportSession(ctx context.Context, cpSEID uint64, req *pfcp.SessionReportRequest) (*pfcp.SessionReportResponse, error) {
	if f.sending != nil {
		f.sending()
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.reports <- sentReport{cpSEID, req}
	if f.err != nil {
		return nil, f.err
	}
	cause := f.cause
	if cause == 0 {
		cause = pfcp.CauseRequestAccepted
	}
	return &pfcp.SessionReportResponse{Cause: cause}, nil
}

var (
	smfNode = pfcp.NodeID{IP: netip.MustParseAddr("10.0.0.1")}
	upfNode = pfcp.NodeID{IP: netip.MustParseAddr("10.0.0.2")}
	n3Addr  = netip.MustParseAddr("10.100.3.2")
	gnbAddr = netip.MustParseAddr("10.100.3.1")
	ueAddr  = netip.MustParseAddr("10.60.0.1")
)

func newUPFC(t *testing.T) (*UPFC, *fakeDP, *fakeCP) {
	return newUPFCWith(t, func(*Config) {})
}

// newUPFCWith is newUPFC with edit applied to the configuration.
func newUPFCWith(t *testing.T, edit func(*Config)) (*UPFC, *fakeDP, *fakeCP) {
	t.Helper()
	dp := &fakeDP{}
	cp := &fakeCP{reports: make(chan sentReport, 64)}
	cfg := Config{NodeID: upfNode, N3Addr: n3Addr, NetworkInstances: []string{"internet", "ims"}}
	edit(&cfg)
	c := New(cfg, dp, nil)
	resp := c.HandleAssociationSetup(context.Background(), cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()})
	if resp.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association setup: %v", resp.Cause)
	}
	return c, dp, cp
}

func ptr[T any](v T) *T { return &v }

// establishment returns a typical PDU session: uplink PDR 1 (N3 tunnel,
// CHOOSE), downlink PDR 2 (UE IP), a forwarding FAR 1 to the DN, FAR 2
// buffering with notification until the gNB tunnel is known, a QER with
// MBR, a URR with a volume threshold and a BAR.
func establishment(cpSEID uint64) *pfcp.SessionEstablishmentRequest {
	return &pfcp.SessionEstablishmentRequest{
		NodeID:  smfNode,
		CPFSEID: pfcp.FSEID{SEID: cpSEID, IPv4: smfNode.IP},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess,
				FTEID:           &pfcp.FTEID{Choose: true, ChooseID: 1},
				NetworkInstance: "internet", UEIP: &pfcp.UEIPAddress{IPv4: ueAddr}, QFIs: []uint8{9}},
				OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4), FARID: 1, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
			{ID: 2, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: "internet",
				UEIP:       &pfcp.UEIPAddress{IPv4: ueAddr, Destination: true},
				SDFFilters: []pfcp.SDFFilter{{FlowDescription: "permit out ip from any to assigned"}}},
				FARID: 2, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: pfcp.ActionBuffer | pfcp.ActionNotifyCP, BARID: ptr(uint8(1))},
		},
		CreateQERs: []pfcp.CreateQER{{ID: 1, QFI: 9, MBR: &pfcp.BitRate{UL: 8000, DL: 16000}}},
		CreateURRs: []pfcp.CreateURR{{ID: 1, Method: pfcp.MethodVolume, Triggers: pfcp.TriggerVolumeThreshold,
			VolumeThreshold: &pfcp.Volume{Total: 1 << 20, HasTotal: true}}},
		CreateBAR: &pfcp.CreateBAR{ID: 1, SuggestedBufferingPackets: 10},
		PDNType:   pfcp.PDNTypeIPv4,
	}
}

func establish(t testing.TB, c *UPFC, req *pfcp.SessionEstablishmentRequest) *pfcp.SessionEstablishmentResponse {
	t.Helper()
	resp := c.HandleSessionEstablishment(context.Background(), req)
	if resp.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("establishment: %v (offending IE %d, failed rule %+v)", resp.Cause, resp.OffendingIE, resp.FailedRuleID)
	}
	return resp
}

func TestAssociationSetupAndRelease(t *testing.T) {
	dp := &fakeDP{}
	c := New(Config{NodeID: upfNode, N3Addr: n3Addr}, dp, nil)
	ctx := context.Background()

	// No association yet: §6.3.2 session messages are refused.
	resp := c.HandleSessionEstablishment(ctx, establishment(1))
	if resp.Cause != pfcp.CauseNoEstablishedPFCPAssociation || resp.UPFSEID != nil {
		t.Fatalf("establishment without association: %v", resp.Cause)
	}
	if resp.NodeID != upfNode {
		t.Errorf("rejection Node ID %v", resp.NodeID)
	}

	if r := c.HandleAssociationSetup(ctx, nil, &pfcp.AssociationSetupRequest{RecoveryTime: time.Now()}); r.Cause != pfcp.CauseMandatoryIEMissing {
		t.Errorf("setup without Node ID: %v", r.Cause)
	}
	if r := c.HandleAssociationSetup(ctx, nil, &pfcp.AssociationSetupRequest{NodeID: smfNode}); r.Cause != pfcp.CauseMandatoryIEMissing {
		t.Errorf("setup without Recovery Time Stamp: %v", r.Cause)
	}

	cp := &fakeCP{reports: make(chan sentReport, 1)}
	setup := c.HandleAssociationSetup(ctx, cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()})
	if setup.Cause != pfcp.CauseRequestAccepted || setup.NodeID != upfNode || !setup.RecoveryTime.Equal(c.RecoveryTime()) || setup.RecoveryTime.IsZero() {
		t.Fatalf("setup response %+v", setup)
	}
	if setup.UPFunctionFeatures&FeatureFTUP == 0 || setup.UPFunctionFeatures&FeatureBUCP == 0 {
		t.Errorf("features %#x lack FTUP/BUCP", setup.UPFunctionFeatures)
	}
	if c.Stats().Associations != 1 {
		t.Errorf("associations %d", c.Stats().Associations)
	}

	// A session from another CP node is still refused.
	other := establishment(1)
	other.NodeID = pfcp.NodeID{FQDN: "smf2.example"}
	if r := c.HandleSessionEstablishment(ctx, other); r.Cause != pfcp.CauseNoEstablishedPFCPAssociation {
		t.Errorf("establishment from unassociated node: %v", r.Cause)
	}

	first := establish(t, c, establishment(1))
	// §6.2.6.2.2: a new setup from the same node replaces the association
	// and deletes its sessions.
	c.HandleAssociationSetup(ctx, cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()})
	if st := c.Stats(); st.Sessions != 0 || st.TEIDs != 0 || st.Associations != 1 {
		t.Fatalf("after re-setup: %+v", st)
	}
	if dp.get(first.UPFSEID.SEID) != nil {
		t.Error("session of the old association still installed")
	}

	second := establish(t, c, establishment(2))
	if second.UPFSEID.SEID == first.UPFSEID.SEID {
		t.Error("SEID reused")
	}
	if r := c.HandleAssociationRelease(ctx, &pfcp.AssociationReleaseRequest{NodeID: pfcp.NodeID{FQDN: "nobody"}}); r.Cause != pfcp.CauseNoEstablishedPFCPAssociation {
		t.Errorf("release of unknown association: %v", r.Cause)
	}
	rel := c.HandleAssociationRelease(ctx, &pfcp.AssociationReleaseRequest{NodeID: smfNode})
	if rel.Cause != pfcp.CauseRequestAccepted || rel.NodeID != upfNode {
		t.Fatalf("release: %+v", rel)
	}
	// §6.2.8.2: the sessions go with the association.
	if st := c.Stats(); st.Sessions != 0 || st.TEIDs != 0 || st.Associations != 0 {
		t.Fatalf("after release: %+v", st)
	}
	if _, _, live := dp.counts(); live != 0 {
		t.Errorf("%d sessions still installed", live)
	}
	if r := c.HandleSessionModification(ctx, second.UPFSEID.SEID, &pfcp.SessionModificationRequest{}); r.Cause != pfcp.CauseSessionContextNotFound {
		t.Errorf("modification after release: %v", r.Cause)
	}
}

func TestEstablishmentCompiles(t *testing.T) {
	c, dp, _ := newUPFC(t)
	resp := establish(t, c, establishment(0x1234))
	if resp.NodeID != upfNode || resp.UPFSEID == nil || resp.UPFSEID.SEID == 0 || resp.UPFSEID.IPv4 != upfNode.IP {
		t.Fatalf("response %+v", resp)
	}
	if len(resp.CreatedPDRs) != 1 || resp.CreatedPDRs[0].ID != 1 || resp.CreatedPDRs[0].LocalFTEID == nil {
		t.Fatalf("created PDRs %+v", resp.CreatedPDRs)
	}
	fteid := resp.CreatedPDRs[0].LocalFTEID
	if fteid.TEID == 0 || fteid.IPv4 != n3Addr {
		t.Errorf("allocated F-TEID %+v", fteid)
	}

	s := dp.get(resp.UPFSEID.SEID)
	if s == nil {
		t.Fatal("nothing installed")
	}
	if s.SEID != resp.UPFSEID.SEID || s.CPSEID != 0x1234 || s.UEIPv4 != ueAddr {
		t.Errorf("session %d/%#x UE %v", s.SEID, s.CPSEID, s.UEIPv4)
	}
	if len(s.TEIDs) != 1 || s.TEIDs[0] != fteid.TEID {
		t.Errorf("TEIDs %v, want [%d]", s.TEIDs, fteid.TEID)
	}
	if len(s.PDRs) != 2 || s.PDRs[0].ID != 1 || s.PDRs[1].ID != 2 {
		t.Fatalf("PDRs %+v", s.PDRs)
	}
	ul, dl := s.PDRs[0], s.PDRs[1]
	if ul.Source != rules.InterfaceAccess || !ul.RemoveOuterHeader || ul.FAR.ID != 1 || ul.FAR.Action != rules.ActionForward ||
		ul.FAR.Dest != rules.InterfaceCore || ul.FAR.NetworkInstance != "internet" {
		t.Errorf("uplink PDR %+v FAR %+v", ul, ul.FAR)
	}
	if dl.Source != rules.InterfaceCore || dl.RemoveOuterHeader || dl.FAR.Action != rules.ActionBuffer|rules.ActionNotifyCP || dl.FAR.BARID != 1 {
		t.Errorf("downlink PDR %+v FAR %+v", dl, dl.FAR)
	}
	// The BAR the buffering FAR names bounds the buffer (§5.2.4).
	if s.BufferPackets != 10 {
		t.Errorf("buffer packets %d, want the BAR's 10", s.BufferPackets)
	}
	// Both PDRs share one QER and URR object.
	if len(ul.QERs) != 1 || ul.QERs[0] != dl.QERs[0] || ul.URRs[0] != dl.URRs[0] {
		t.Fatal("QER/URR not shared between PDRs")
	}
	q := ul.QERs[0]
	if q.QFI != 9 || !q.ULOpen || !q.DLOpen || q.MBRUL == nil || q.MBRUL.Rate() != 1_000_000 || q.MBRDL.Rate() != 2_000_000 {
		t.Errorf("QER %+v", q)
	}
	if u := ul.URRs[0]; u.Counters == nil || u.Threshold.Total != 1<<20 {
		t.Errorf("URR %+v", u)
	}

	// The classifiers find the PDRs as UPF-U will ask.
	ulHdr := &classify.Header{SourceInterface: 0, TEID: fteid.TEID, QFI: 9, UEIP: classify.AddrFromNetip(ueAddr),
		SrcIP: classify.AddrFromNetip(ueAddr), DstIP: classify.AddrFromNetip(netip.MustParseAddr("8.8.8.8")), Proto: 17}
	if idx, ok := s.Uplink.Lookup(ulHdr); !ok || s.PDRs[idx].ID != 1 {
		t.Errorf("uplink lookup: %d %v", idx, ok)
	}
	bad := *ulHdr
	bad.QFI = 5
	if _, ok := s.Uplink.Lookup(&bad); ok {
		t.Error("uplink lookup matched a wrong QFI")
	}
	bad = *ulHdr
	bad.TEID++
	if _, ok := s.Uplink.Lookup(&bad); ok {
		t.Error("uplink lookup matched a wrong TEID")
	}
	dlHdr := &classify.Header{SourceInterface: 1, UEIP: classify.AddrFromNetip(ueAddr),
		SrcIP: classify.AddrFromNetip(netip.MustParseAddr("8.8.8.8")), DstIP: classify.AddrFromNetip(ueAddr), Proto: 6}
	if idx, ok := s.Downlink.Lookup(dlHdr); !ok || s.PDRs[idx].ID != 2 {
		t.Errorf("downlink lookup: %d %v", idx, ok)
	}
	other := *dlHdr
	other.UEIP = classify.AddrFromNetip(netip.MustParseAddr("10.60.0.2"))
	other.DstIP = other.UEIP
	if _, ok := s.Downlink.Lookup(&other); ok {
		t.Error("downlink lookup matched another UE")
	}

	st := c.Stats()
	want := Stats{Associations: 1, Sessions: 1, PDRs: 2, FARs: 2, QERs: 1, URRs: 1, BARs: 1, TEIDs: 1}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

func TestChooseID(t *testing.T) {
	c, dp, _ := newUPFC(t)
	req := establishment(1)
	// A second uplink PDR on the same tunnel (same CHOOSE ID) and a third
	// with its own CHOOSE.
	extra := req.CreatePDRs[0]
	extra.ID, extra.Precedence, extra.PDI.QFIs = 3, 100, []uint8{5}
	third := req.CreatePDRs[0]
	third.ID, third.PDI.QFIs = 4, []uint8{6}
	third.PDI.FTEID = &pfcp.FTEID{Choose: true}
	req.CreatePDRs = append(req.CreatePDRs, extra, third)
	resp := establish(t, c, req)
	teid := map[uint16]uint32{}
	for _, p := range resp.CreatedPDRs {
		teid[p.ID] = p.LocalFTEID.TEID
	}
	if len(teid) != 3 || teid[1] != teid[3] || teid[1] == teid[4] {
		t.Fatalf("TEIDs by PDR %v: want 1 and 3 equal, 4 different", teid)
	}
	if st := c.Stats(); st.TEIDs != 2 {
		t.Errorf("allocated TEIDs %d, want 2", st.TEIDs)
	}
	if s := dp.get(resp.UPFSEID.SEID); len(s.TEIDs) != 2 {
		t.Errorf("session TEIDs %v", s.TEIDs)
	}
	// Another session gets different TEIDs, and cannot claim one already
	// allocated (§5.5.3: unique in the UPF).
	resp2 := establish(t, c, establishment(2))
	if got := resp2.CreatedPDRs[0].LocalFTEID.TEID; got == teid[1] || got == teid[4] {
		t.Errorf("second session got TEID %d again", got)
	}
	steal := establishment(3)
	steal.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: teid[1], IPv4: n3Addr}
	r := c.HandleSessionEstablishment(context.Background(), steal)
	if r.Cause != pfcp.CauseRuleCreationModificationFailure || r.FailedRuleID == nil || *r.FailedRuleID != (pfcp.RuleID{Type: pfcp.RuleTypePDR, ID: 1}) {
		t.Errorf("claiming a used TEID: %v %+v", r.Cause, r.FailedRuleID)
	}
	// A CP-assigned free TEID is accepted and not reported as created.
	own := establishment(4)
	own.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: 0xabcdef, IPv4: n3Addr}
	r4 := establish(t, c, own)
	if len(r4.CreatedPDRs) != 0 {
		t.Errorf("created PDRs for a CP-assigned TEID: %+v", r4.CreatedPDRs)
	}
	if s := dp.get(r4.UPFSEID.SEID); len(s.TEIDs) != 1 || s.TEIDs[0] != 0xabcdef {
		t.Errorf("TEIDs %v", s.TEIDs)
	}
}

// expect is the rejection a case must produce.
type expect struct {
	cause   pfcp.Cause
	ie      uint16
	rule    *pfcp.RuleID
	present bool // rule must be absent when nil
}

func ruleID(typ uint8, id uint32) *pfcp.RuleID { return &pfcp.RuleID{Type: typ, ID: id} }

func checkReject(t testing.TB, name string, cause pfcp.Cause, ie uint16, rule *pfcp.RuleID, want expect) {
	t.Helper()
	if cause != want.cause || ie != want.ie {
		t.Errorf("%s: cause %v IE %d, want %v IE %d", name, cause, ie, want.cause, want.ie)
	}
	switch {
	case want.rule == nil && rule != nil:
		t.Errorf("%s: failed rule %+v, want none", name, *rule)
	case want.rule != nil && (rule == nil || *rule != *want.rule):
		t.Errorf("%s: failed rule %+v, want %+v", name, rule, *want.rule)
	}
}

func TestEstablishmentValidation(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(r *pfcp.SessionEstablishmentRequest)
		want   expect
	}{
		{"no node ID", func(r *pfcp.SessionEstablishmentRequest) { r.NodeID = pfcp.NodeID{} },
			expect{cause: pfcp.CauseMandatoryIEMissing, ie: pfcp.IENodeID}},
		{"no CP F-SEID", func(r *pfcp.SessionEstablishmentRequest) { r.CPFSEID = pfcp.FSEID{} },
			expect{cause: pfcp.CauseMandatoryIEMissing, ie: pfcp.IEFSEID}},
		{"no PDR", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs = nil },
			expect{cause: pfcp.CauseMandatoryIEMissing, ie: pfcp.IECreatePDR}},
		{"no FAR", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs = nil },
			expect{cause: pfcp.CauseMandatoryIEMissing, ie: pfcp.IECreateFAR}},
		{"unknown FAR", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[1].FARID = 9 },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 2)}},
		{"unknown QER", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[0].QERIDs = []uint32{1, 7} },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
		{"unknown URR", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[1].URRIDs = []uint32{3} },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 2)}},
		{"unknown BAR", func(r *pfcp.SessionEstablishmentRequest) { r.CreateBAR = nil },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 2)}},
		{"duplicate PDR", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[1].ID = 1 },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
		{"duplicate FAR", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[1].ID = 1 },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 1)}},
		{"duplicate QER", func(r *pfcp.SessionEstablishmentRequest) { r.CreateQERs = append(r.CreateQERs, r.CreateQERs[0]) },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeQER, 1)}},
		{"duplicate URR", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs = append(r.CreateURRs, r.CreateURRs[0]) },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeURR, 1)}},
		{"PDR without FAR ID", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[0].NoFARID = true },
			expect{cause: pfcp.CauseConditionalIEMissing, ie: pfcp.IEFARID}},
		{"FORW without forwarding parameters", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].Forwarding = nil },
			expect{cause: pfcp.CauseConditionalIEMissing, ie: pfcp.IEForwardingParameters}},
		{"DROP and FORW", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].ApplyAction |= pfcp.ActionDrop },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IEApplyAction}},
		{"no action", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].ApplyAction = 0 },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IEApplyAction}},
		{"NOCP without BUFF", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].ApplyAction |= pfcp.ActionNotifyCP },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IEApplyAction}},
		{"DUPL", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].ApplyAction |= pfcp.ActionDuplicate },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 1)}},
		{"outer header without address", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreateFARs[1] = pfcp.CreateFAR{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
				Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 1}}}
		}, expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: ieOuterHeaderCreation}},
		{"IPv6 outer header", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreateFARs[1] = pfcp.CreateFAR{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
				Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv6, TEID: 1}}}
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 2)}},
		{"unknown network instance", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].Forwarding.NetworkInstance = "nowhere" },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)}},
		{"no network instance with two N6", func(r *pfcp.SessionEstablishmentRequest) { r.CreateFARs[0].Forwarding.NetworkInstance = "" },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)}},
		{"no network instance to SGi-LAN with two N6", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreateFARs[0].Forwarding = &pfcp.ForwardingParameters{Destination: pfcp.InterfaceSGiLAN}
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)}},
		{"bad SDF filter", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreatePDRs[1].PDI.SDFFilters = []pfcp.SDFFilter{{FlowDescription: "permit out ip from nowhere to assigned"}}
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieSDFFilter, rule: ruleID(pfcp.RuleTypePDR, 2)}},
		{"QFI out of range", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[0].PDI.QFIs = []uint8{64} },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: ieQFI}},
		{"QER QFI out of range", func(r *pfcp.SessionEstablishmentRequest) { r.CreateQERs[0].QFI = 70 },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: ieQFI}},
		{"bad source interface", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[0].PDI.SourceInterface = 9 },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IESourceInterface}},
		{"F-TEID without address", func(r *pfcp.SessionEstablishmentRequest) { r.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: 5} },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IEFTEID}},
		{"F-TEID on another address", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: 5, IPv4: gnbAddr}
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
		{"two UE addresses", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreatePDRs[1].PDI.UEIP = &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.9"), Destination: true}
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 2)}},
		{"IPv6 UE address", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreatePDRs[1].PDI.UEIP = &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("2001:db8::1")}
		}, expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: ieUEIPAddress}},
		{"unsupported outer header removal", func(r *pfcp.SessionEstablishmentRequest) {
			r.CreatePDRs[0].OuterHeaderRemoval = ptr(pfcp.OuterHeaderRemovalUDPIPv4)
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
		{"URR without method", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs[0].Method = 0 },
			expect{cause: pfcp.CauseMandatoryIEIncorrect, ie: pfcp.IEMeasurementMethod}},
		{"VOLTH without threshold", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs[0].VolumeThreshold = nil },
			expect{cause: pfcp.CauseConditionalIEMissing, ie: ieVolumeThreshold}},
		{"PERIO without measurement period", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs[0].Triggers |= pfcp.TriggerPeriodic },
			expect{cause: pfcp.CauseConditionalIEMissing, ie: ieMeasurementPeriod}},
		{"start of traffic", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs[0].Triggers = pfcp.TriggerStartOfTraffic },
			expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: pfcp.IEReportingTriggers, rule: ruleID(pfcp.RuleTypeURR, 1)}},
		{"VOLQU without volume quota", func(r *pfcp.SessionEstablishmentRequest) { r.CreateURRs[0].Triggers |= pfcp.TriggerVolumeQuota },
			expect{cause: pfcp.CauseConditionalIEMissing, ie: ieVolumeQuota}},
		{"too many classifier rules", func(r *pfcp.SessionEstablishmentRequest) {
			fs := make([]pfcp.SDFFilter, 200)
			for i := range fs {
				fs[i].FlowDescription = "permit out 17 from any 1,2,3,4,5,6,7,8 to assigned"
			}
			r.CreatePDRs[1].PDI.SDFFilters = fs
		}, expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 2)}},
	}
	c, dp, _ := newUPFC(t)
	before := c.Stats()
	installs, _, _ := dp.counts()
	for _, tc := range cases {
		req := establishment(1)
		tc.mutate(req)
		resp := c.HandleSessionEstablishment(context.Background(), req)
		checkReject(t, tc.name, resp.Cause, resp.OffendingIE, resp.FailedRuleID, tc.want)
		if resp.UPFSEID != nil || len(resp.CreatedPDRs) != 0 {
			t.Errorf("%s: rejection carries F-SEID or created PDRs", tc.name)
		}
		if st := c.Stats(); st != before {
			t.Errorf("%s: state changed: %+v", tc.name, st)
		}
	}
	if n, _, _ := dp.counts(); n != installs {
		t.Errorf("rejected establishments installed %d sessions", n-installs)
	}
	// The same UPF-C still accepts a valid request.
	establish(t, c, establishment(1))
}

func TestModificationKeepsState(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	resp := establish(t, c, establishment(7))
	seid := resp.UPFSEID.SEID
	teid := resp.CreatedPDRs[0].LocalFTEID.TEID
	s0 := dp.get(seid)
	s0.PDRs[0].URRs[0].Counters.Add(rules.Uplink, 1000)
	s0.PDRs[0].URRs[0].Counters.Add(rules.Downlink, 500)

	// The gNB tunnel is known: the downlink FAR now forwards (TS 23.502
	// §4.3.2.2.1 step 16) and the CP moves to a new F-SEID.
	mod := &pfcp.SessionModificationRequest{
		CPFSEID: &pfcp.FSEID{SEID: 8, IPv4: smfNode.IP},
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward), Forwarding: &pfcp.UpdateForwardingParameters{
			Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
				Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr}}}},
	}
	mr := c.HandleSessionModification(ctx, seid, mod)
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %v %d %+v", mr.Cause, mr.OffendingIE, mr.FailedRuleID)
	}
	s1 := dp.get(seid)
	if s1 == s0 {
		t.Fatal("no new snapshot installed")
	}
	if s1.CPSEID != 8 {
		t.Errorf("CP SEID %d, want 8", s1.CPSEID)
	}
	far := s1.PDRs[1].FAR
	if far.Action != rules.ActionForward || far.Dest != rules.InterfaceAccess || far.Encap == nil ||
		far.Encap.TEID != 0x77 || far.Encap.Peer != netip.AddrPortFrom(gnbAddr, 2152) || far.BARID != 1 {
		t.Errorf("updated FAR %+v encap %+v", far, far.Encap)
	}
	// The old snapshot is untouched (UPF-U may still be reading it).
	if f := s0.PDRs[1].FAR; f.Action != rules.ActionBuffer|rules.ActionNotifyCP || f.Encap != nil {
		t.Errorf("old snapshot changed: %+v", f)
	}
	// Stateful objects are the same, with their counts.
	if s1.PDRs[0].QERs[0].MBRUL != s0.PDRs[0].QERs[0].MBRUL || s1.PDRs[0].QERs[0].MBRDL != s0.PDRs[0].QERs[0].MBRDL {
		t.Error("token buckets replaced by a FAR update")
	}
	if s1.PDRs[0].URRs[0].Counters != s0.PDRs[0].URRs[0].Counters {
		t.Fatal("URR counters replaced by a FAR update")
	}
	if u := s1.PDRs[0].URRs[0].Counters.Load(); u.Volume.Total != 1500 || u.Volume.UL != 1000 || u.Volume.DL != 500 {
		t.Errorf("counts after modification %+v", u)
	}
	if s1.TEIDs[0] != teid {
		t.Errorf("TEID changed to %d", s1.TEIDs[0])
	}

	// A QER update that changes the MBR replaces only that direction's bucket.
	mr = c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		UpdateQERs: []pfcp.UpdateQER{{ID: 1, MBR: &pfcp.BitRate{UL: 8000, DL: 32000}, Gate: &pfcp.GateStatus{DLClosed: true}}},
		UpdateURRs: []pfcp.UpdateURR{{ID: 1, VolumeThreshold: &pfcp.Volume{Total: 1 << 30, HasTotal: true}}},
	})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("QER update: %v", mr.Cause)
	}
	s2 := dp.get(seid)
	q := s2.PDRs[0].QERs[0]
	if q.MBRUL != s1.PDRs[0].QERs[0].MBRUL || q.MBRDL == s1.PDRs[0].QERs[0].MBRDL || q.MBRDL.Rate() != 4_000_000 || q.DLOpen || !q.ULOpen {
		t.Errorf("QER after update %+v", q)
	}
	if u := s2.PDRs[0].URRs[0]; u.Counters != s0.PDRs[0].URRs[0].Counters || u.Threshold.Total != 1<<30 {
		t.Errorf("URR after update %+v", u)
	}

	// Add a downlink PDR for another flow, with its own FAR, and a new
	// uplink PDR on a new tunnel; then remove them again.
	mr = c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionDrop}},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 3, Precedence: 10, FARID: 3, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore,
				UEIP:       &pfcp.UEIPAddress{IPv4: ueAddr, Destination: true},
				SDFFilters: []pfcp.SDFFilter{{FlowDescription: "permit out 17 from 192.0.2.0/24 to assigned 5000-5100"}}}},
			{ID: 4, Precedence: 10, FARID: 1, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess,
				FTEID: &pfcp.FTEID{Choose: true}, UEIP: &pfcp.UEIPAddress{IPv4: ueAddr}}},
		},
	})
	if mr.Cause != pfcp.CauseRequestAccepted || len(mr.CreatedPDRs) != 1 || mr.CreatedPDRs[0].ID != 4 {
		t.Fatalf("create: %v %+v", mr.Cause, mr.CreatedPDRs)
	}
	newTEID := mr.CreatedPDRs[0].LocalFTEID.TEID
	s3 := dp.get(seid)
	if len(s3.PDRs) != 4 || s3.PDRs[0].ID != 3 || s3.PDRs[1].ID != 4 || len(s3.TEIDs) != 2 || c.Stats().TEIDs != 2 {
		t.Fatalf("after create: %d PDRs, first %d, TEIDs %v", len(s3.PDRs), s3.PDRs[0].ID, s3.TEIDs)
	}
	h := &classify.Header{SourceInterface: 1, UEIP: classify.AddrFromNetip(ueAddr), DstIP: classify.AddrFromNetip(ueAddr),
		SrcIP: classify.AddrFromNetip(netip.MustParseAddr("192.0.2.9")), Proto: 17, SrcPort: 40000, DstPort: 5050}
	if idx, ok := s3.Downlink.Lookup(h); !ok || s3.PDRs[idx].ID != 3 {
		t.Errorf("downlink lookup of the filtered flow: %d %v", idx, ok)
	}
	h.DstPort = 6000
	if idx, ok := s3.Downlink.Lookup(h); !ok || s3.PDRs[idx].ID != 2 {
		t.Errorf("downlink lookup of other traffic: %d %v", idx, ok)
	}

	mr = c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		RemovePDRs: []uint16{3, 4}, RemoveFARs: []uint32{3},
	})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("remove: %v %+v", mr.Cause, mr.FailedRuleID)
	}
	if st := c.Stats(); st.PDRs != 2 || st.FARs != 2 || st.TEIDs != 1 {
		t.Errorf("after remove: %+v", st)
	}
	if s4 := dp.get(seid); len(s4.TEIDs) != 1 || s4.TEIDs[0] != teid || s4.TEIDs[0] == newTEID {
		t.Errorf("TEIDs after remove %v", s4.TEIDs)
	}
}

func TestModificationValidationLeavesSessionUnchanged(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	resp := establish(t, c, establishment(7))
	seid := resp.UPFSEID.SEID
	teid := resp.CreatedPDRs[0].LocalFTEID.TEID

	cases := []struct {
		name string
		req  *pfcp.SessionModificationRequest
		want expect
	}{
		{"remove unknown PDR", &pfcp.SessionModificationRequest{RemovePDRs: []uint16{9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 9)}},
		{"remove unknown FAR", &pfcp.SessionModificationRequest{RemoveFARs: []uint32{9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 9)}},
		{"remove unknown QER", &pfcp.SessionModificationRequest{RemoveQERs: []uint32{9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeQER, 9)}},
		{"remove unknown URR", &pfcp.SessionModificationRequest{RemoveURRs: []uint32{9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeURR, 9)}},
		{"remove unknown BAR", &pfcp.SessionModificationRequest{RemoveBAR: ptr(uint8(9))},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeBAR, 9)}},
		{"remove a FAR still in use", &pfcp.SessionModificationRequest{RemoveFARs: []uint32{1}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
		{"remove a BAR still in use", &pfcp.SessionModificationRequest{RemoveBAR: ptr(uint8(1))},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 2)}},
		{"update unknown PDR", &pfcp.SessionModificationRequest{UpdatePDRs: []pfcp.UpdatePDR{{ID: 9}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 9)}},
		{"update unknown FAR", &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 9}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 9)}},
		{"update unknown QER", &pfcp.SessionModificationRequest{UpdateQERs: []pfcp.UpdateQER{{ID: 9}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeQER, 9)}},
		{"update unknown URR", &pfcp.SessionModificationRequest{UpdateURRs: []pfcp.UpdateURR{{ID: 9}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeURR, 9)}},
		{"update unknown BAR", &pfcp.SessionModificationRequest{UpdateBAR: &pfcp.UpdateBAR{ID: 9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeBAR, 9)}},
		{"query unknown URR", &pfcp.SessionModificationRequest{QueryURRs: []uint32{9}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeURR, 9)}},
		{"URR made periodic without a period", &pfcp.SessionModificationRequest{UpdateURRs: []pfcp.UpdateURR{{ID: 1, Triggers: ptr(pfcp.TriggerPeriodic)}}},
			expect{cause: pfcp.CauseConditionalIEMissing, ie: ieMeasurementPeriod}},
		{"PDR pointed at unknown FAR", &pfcp.SessionModificationRequest{UpdatePDRs: []pfcp.UpdatePDR{{ID: 2, FARID: ptr(uint32(5))}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 2)}},
		{"duplicate QER", &pfcp.SessionModificationRequest{CreateQERs: []pfcp.CreateQER{{ID: 1}}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeQER, 1)}},
		{"second BAR", &pfcp.SessionModificationRequest{CreateBAR: &pfcp.CreateBAR{ID: 2}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeBAR, 2)}},
		{"first forwarding parameters without destination", &pfcp.SessionModificationRequest{
			UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward), Forwarding: &pfcp.UpdateForwardingParameters{
				NoDestination: true, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
					Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 5, IPv4: gnbAddr}}}}},
			expect{cause: pfcp.CauseConditionalIEMissing, ie: pfcp.IEDestinationInterface}},
		{"FAR update breaks the action", &pfcp.SessionModificationRequest{
			UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward)}}},
			expect{cause: pfcp.CauseConditionalIEMissing, ie: pfcp.IEUpdateFAR}},
		// Valid changes before the failing one are not applied either,
		// and the TEID allocated for the new PDR is not kept.
		{"valid changes then a bad one", &pfcp.SessionModificationRequest{
			CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionDrop}},
			CreatePDRs: []pfcp.CreatePDR{{ID: 3, Precedence: 1, FARID: 3,
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}}}},
			UpdateFARs: []pfcp.UpdateFAR{{ID: 1, ApplyAction: ptr(pfcp.ActionDrop)}},
			RemoveQERs: []uint32{1}},
			expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)}},
	}
	before := c.Stats()
	snap := dp.get(seid)
	installs, _, _ := dp.counts()
	for _, tc := range cases {
		mr := c.HandleSessionModification(ctx, seid, tc.req)
		checkReject(t, tc.name, mr.Cause, mr.OffendingIE, mr.FailedRuleID, tc.want)
		if len(mr.CreatedPDRs) != 0 || len(mr.UsageReports) != 0 {
			t.Errorf("%s: rejection carries created PDRs or reports", tc.name)
		}
		if st := c.Stats(); st != before {
			t.Errorf("%s: stats changed to %+v", tc.name, st)
		}
		if dp.get(seid) != snap {
			t.Errorf("%s: a new snapshot was installed", tc.name)
		}
	}
	if n, _, _ := dp.counts(); n != installs {
		t.Errorf("rejected modifications installed %d snapshots", n-installs)
	}
	if r := c.HandleSessionModification(ctx, seid+1000, &pfcp.SessionModificationRequest{}); r.Cause != pfcp.CauseSessionContextNotFound {
		t.Errorf("unknown SEID: %v", r.Cause)
	}
	// The session still works as before.
	mr := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 1, Precedence: ptr(uint32(20))}}})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("valid modification after rejections: %v", mr.Cause)
	}
	if s := dp.get(seid); len(s.TEIDs) != 1 || s.TEIDs[0] != teid || s.PDRs[0].Precedence != 20 {
		t.Errorf("after valid modification: TEIDs %v, first PDR %+v", s.TEIDs, s.PDRs[0])
	}
}

func TestUpdatePDRChoose(t *testing.T) {
	c, dp, _ := newUPFC(t)
	resp := establish(t, c, establishment(1))
	seid, teid := resp.UPFSEID.SEID, resp.CreatedPDRs[0].LocalFTEID.TEID
	// A new PDI asking to CHOOSE again keeps the PDR's tunnel.
	pdi := establishment(1).CreatePDRs[0].PDI
	pdi.QFIs = []uint8{7}
	mr := c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 1, PDI: &pdi}}})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("update: %v", mr.Cause)
	}
	s := dp.get(seid)
	if len(s.TEIDs) != 1 || s.TEIDs[0] != teid {
		t.Errorf("TEIDs %v, want [%d]", s.TEIDs, teid)
	}
	h := &classify.Header{TEID: teid, QFI: 7, UEIP: classify.AddrFromNetip(ueAddr)}
	if _, ok := s.Uplink.Lookup(h); !ok {
		t.Error("updated QFI not matched")
	}
	// A PDI without F-TEID frees the tunnel.
	pdi.FTEID = nil
	mr = c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 1, PDI: &pdi}}})
	if mr.Cause != pfcp.CauseRequestAccepted || c.Stats().TEIDs != 0 || len(dp.get(seid).TEIDs) != 0 {
		t.Errorf("after dropping the F-TEID: %v, %d TEIDs", mr.Cause, c.Stats().TEIDs)
	}
}

func TestDeletionAndUsage(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	resp := establish(t, c, establishment(1))
	seid := resp.UPFSEID.SEID
	counters := dp.get(seid).PDRs[0].URRs[0].Counters
	counters.Add(rules.Uplink, 300)

	// Query URR: an immediate report, and the measurement restarts.
	mr := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{QueryURRs: []uint32{1}})
	if mr.Cause != pfcp.CauseRequestAccepted || len(mr.UsageReports) != 1 {
		t.Fatalf("query: %v %+v", mr.Cause, mr.UsageReports)
	}
	r := mr.UsageReports[0]
	if r.URRID != 1 || r.URSEQN != 0 || r.Trigger != pfcp.UsageTriggerImmediate || r.Volume.UL != 300 || !r.Volume.HasUL || r.Start.IsZero() || r.End.Before(r.Start) {
		t.Errorf("query report %+v", r)
	}
	counters.Add(rules.Downlink, 200)

	del := c.HandleSessionDeletion(ctx, seid)
	if del.Cause != pfcp.CauseRequestAccepted || len(del.UsageReports) != 1 {
		t.Fatalf("deletion: %v %+v", del.Cause, del.UsageReports)
	}
	r = del.UsageReports[0]
	if r.URSEQN != 1 || r.Trigger != pfcp.UsageTriggerTermination || r.Volume.Total != 200 || r.Volume.DL != 200 || r.Volume.UL != 0 {
		t.Errorf("final report %+v", r)
	}
	if _, removes, live := dp.counts(); removes != 1 || live != 0 {
		t.Errorf("data path: %d removes, %d live", removes, live)
	}
	if again := c.HandleSessionDeletion(ctx, seid); again.Cause != pfcp.CauseSessionContextNotFound {
		t.Errorf("second deletion: %v", again.Cause)
	}
	if st := c.Stats(); st.Sessions != 0 || st.TEIDs != 0 || st.URRs != 0 {
		t.Errorf("stats after deletion %+v", st)
	}
}

func TestRemoveURRReportsUsage(t *testing.T) {
	c, dp, _ := newUPFC(t)
	resp := establish(t, c, establishment(1))
	seid := resp.UPFSEID.SEID
	dp.get(seid).PDRs[0].URRs[0].Counters.Add(rules.Uplink, 42)
	mr := c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		RemoveURRs: []uint32{1},
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 1, URRIDs: []uint32{}}, {ID: 2, URRIDs: []uint32{}}},
	})
	if mr.Cause != pfcp.CauseRequestAccepted || len(mr.UsageReports) != 1 || mr.UsageReports[0].Volume.UL != 42 {
		t.Fatalf("remove URR: %v %+v", mr.Cause, mr.UsageReports)
	}
	if s := dp.get(seid); len(s.PDRs[0].URRs) != 0 || c.Stats().URRs != 0 {
		t.Error("URR still attached")
	}
}

func TestCyclesLeaveNothing(t *testing.T) {
	c, dp, _ := newUPFCWith(t, func(c *Config) { c.TEIDPlaces = 64 })
	ctx := context.Background()
	seen := make(map[uint64]bool)
	for i := range 1000 {
		resp := establish(t, c, establishment(uint64(i)))
		seid := resp.UPFSEID.SEID
		if seen[seid] {
			t.Fatalf("cycle %d: SEID %d reused", i, seid)
		}
		seen[seid] = true
		mr := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
			CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionDrop}},
			CreatePDRs: []pfcp.CreatePDR{{ID: 3, Precedence: 1, FARID: 3,
				PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}}}},
		})
		if mr.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("cycle %d: modification %v", i, mr.Cause)
		}
		if i%2 == 0 {
			// A rejected modification in between must not leak a TEID.
			c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
				CreatePDRs: []pfcp.CreatePDR{{ID: 4, Precedence: 1, FARID: 99,
					PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true}}}},
			})
		}
		if del := c.HandleSessionDeletion(ctx, seid); del.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("cycle %d: deletion %v", i, del.Cause)
		}
	}
	want := Stats{Associations: 1}
	if st := c.Stats(); st != want {
		t.Errorf("after 1000 cycles: %+v", st)
	}
	if _, _, live := dp.counts(); live != 0 {
		t.Errorf("%d sessions left in the data path", live)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.teids) != 0 || len(c.sessions) != 0 || len(c.places) != 0 {
		t.Errorf("tables: %d TEIDs, %d sessions, %d places", len(c.teids), len(c.sessions), len(c.places))
	}
}

// TestTEIDPlaces: allocated TEIDs keep off the places of live ones, also
// after the places wrapped around a long-lived session, while one is free.
func TestTEIDPlaces(t *testing.T) {
	const places = 8
	c, _, _ := newUPFCWith(t, func(c *Config) { c.TEIDPlaces = places })
	ctx := context.Background()
	teid := func(r *pfcp.SessionEstablishmentResponse) uint32 {
		t.Helper()
		if len(r.CreatedPDRs) != 1 || r.CreatedPDRs[0].LocalFTEID == nil {
			t.Fatalf("created PDRs %+v", r.CreatedPDRs)
		}
		return r.CreatedPDRs[0].LocalFTEID.TEID
	}
	used := map[uint32]uint32{} // place -> TEID
	hold := func(id uint32) {
		t.Helper()
		if other, ok := used[id%places]; ok {
			t.Fatalf("TEID %#x at the place of live TEID %#x", id, other)
		}
		used[id%places] = id
	}
	hold(teid(establish(t, c, establishment(1)))) // lives throughout
	for i := range 3*places + 3 {                 // wrap the places thrice and more
		r := establish(t, c, establishment(uint64(100+i)))
		c.HandleSessionDeletion(ctx, r.UPFSEID.SEID)
	}
	for i := range places - 1 {
		hold(teid(establish(t, c, establishment(uint64(2+i)))))
	}
	// No place is free: any free TEID will do.
	if id := teid(establish(t, c, establishment(50))); id == 0 {
		t.Fatal("TEID 0")
	}
}

func waitReport(t testing.TB, cp *fakeCP) sentReport {
	t.Helper()
	select {
	case r := <-cp.reports:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no Session Report Request")
	}
	return sentReport{}
}

func TestReports(t *testing.T) {
	c, dp, cp := newUPFC(t)
	resp := establish(t, c, establishment(0x55))
	seid := resp.UPFSEID.SEID

	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2, QFI: 9})
	r := waitReport(t, cp)
	if r.cpSEID != 0x55 || r.req.ReportType != pfcp.ReportDLDR || r.req.DownlinkDataReport == nil ||
		len(r.req.DownlinkDataReport.PDRIDs) != 1 || r.req.DownlinkDataReport.PDRIDs[0] != 2 ||
		len(r.req.DownlinkDataReport.QFIs) != 1 || r.req.DownlinkDataReport.QFIs[0] != 9 {
		t.Errorf("downlink data report %+v %+v", r, r.req.DownlinkDataReport)
	}

	// Usage reports number themselves per URR, across modifications.
	vol := rules.Volume{Total: 2 << 20, UL: 1 << 20, DL: 1 << 20}
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 1, URRID: 1, Volume: vol})
	r = waitReport(t, cp)
	if r.req.ReportType != pfcp.ReportUSAR || len(r.req.UsageReports) != 1 {
		t.Fatalf("usage report %+v", r.req)
	}
	u := r.req.UsageReports[0]
	if u.URRID != 1 || u.URSEQN != 0 || u.Trigger != pfcp.UsageTriggerVolumeThreshold || u.Volume.Total != vol.Total || !u.Volume.HasTotal {
		t.Errorf("usage report %+v", u)
	}
	if mr := c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 1, ApplyAction: ptr(pfcp.ActionDrop)}}}); mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatal(mr.Cause)
	}
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 1, URRID: 1, Volume: vol})
	if u := waitReport(t, cp).req.UsageReports[0]; u.URSEQN != 1 {
		t.Errorf("second UR-SEQN %d", u.URSEQN)
	}

	// Stale reports (unknown session, PDR or URR) are dropped.
	c.Report(seid+99, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 77})
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, URRID: 77})
	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	waitReport(t, cp) // the valid one, after the stale ones
	waitFor(t, func() bool { st := c.Stats(); return st.ReportsDropped == 3 && st.ReportsSent == 4 })
	_ = dp
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}

func TestReportNeverBlocks(t *testing.T) {
	dp := &fakeDP{}
	cp := &fakeCP{reports: make(chan sentReport, 16), block: make(chan struct{})}
	c := New(Config{NodeID: upfNode, N3Addr: n3Addr, ReportQueue: 4}, dp, nil)
	c.HandleAssociationSetup(context.Background(), cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()})
	seid := establish(t, c, establishment(1)).UPFSEID.SEID
	// The CP does not answer: the first report is in flight, four wait,
	// the rest are dropped, and Report returns every time.
	done := make(chan struct{})
	go func() {
		for range 20 {
			c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Report blocked on a stuck CP")
	}
	// At most one batch in flight plus a full queue get through.
	dropped := c.Stats().ReportsDropped
	if dropped < 20-2*4 || dropped == 20 {
		t.Fatalf("%d of 20 reports dropped with a queue of 4", dropped)
	}
	close(cp.block)
	for range 20 - int(dropped) {
		waitReport(t, cp)
	}
	waitFor(t, func() bool { st := c.Stats(); return st.ReportsSent+st.ReportsDropped == 20 })
}

func TestReportFailures(t *testing.T) {
	c, _, cp := newUPFC(t)
	seid := establish(t, c, establishment(1)).UPFSEID.SEID
	cp.err = errors.New("peer unreachable")
	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	waitReport(t, cp)
	waitFor(t, func() bool { return c.Stats().ReportsFailed == 1 })
	cp.err, cp.cause = nil, pfcp.CauseSessionContextNotFound
	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	waitReport(t, cp)
	waitFor(t, func() bool { return c.Stats().ReportsFailed == 2 })
}

func TestMultiRulePDR(t *testing.T) {
	for _, kind := range []classify.Kind{"", classify.KindLinear, classify.KindRankedTuple} {
		c, dp, _ := newUPFCWith(t, func(cfg *Config) { cfg.Classifier = kind })
		req := establishment(1)
		// PDR 5: two SDF filters (one with two port ranges) x two QFIs.
		req.CreatePDRs = append(req.CreatePDRs, pfcp.CreatePDR{ID: 5, Precedence: 50, FARID: 2,
			PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ueAddr, Destination: true},
				SDFFilters: []pfcp.SDFFilter{
					{FlowDescription: "permit out 6 from 198.51.100.0/24 80,443 to assigned"},
					{FlowDescription: "permit out 17 from 203.0.113.7 to assigned 9000"},
				}}})
		resp := establish(t, c, req)
		s := dp.get(resp.UPFSEID.SEID)
		if s.PDRs[0].ID != 5 {
			t.Fatalf("%s: PDR order %d first", kind, s.PDRs[0].ID)
		}
		if s.Downlink.Len() != 4 {
			t.Errorf("%s: downlink rules %d, want 4", kind, s.Downlink.Len())
		}
		hdr := func(src string, proto uint8, sp, dp uint16) *classify.Header {
			return &classify.Header{SourceInterface: 1, UEIP: classify.AddrFromNetip(ueAddr), DstIP: classify.AddrFromNetip(ueAddr),
				SrcIP: classify.AddrFromNetip(netip.MustParseAddr(src)), Proto: proto, SrcPort: sp, DstPort: dp}
		}
		for _, tc := range []struct {
			h    *classify.Header
			want uint16
		}{
			{hdr("198.51.100.3", 6, 443, 50000), 5},
			{hdr("198.51.100.3", 6, 80, 50000), 5},
			{hdr("198.51.100.3", 6, 8080, 50000), 2},
			{hdr("203.0.113.7", 17, 1234, 9000), 5},
			{hdr("203.0.113.8", 17, 1234, 9000), 2},
		} {
			idx, ok := s.Downlink.Lookup(tc.h)
			if !ok || int(idx) >= len(s.PDRs) || s.PDRs[idx].ID != tc.want {
				t.Errorf("%s: lookup %+v -> %d %v, want PDR %d", kind, tc.h.SrcIP.Netip(), idx, ok, tc.want)
			}
		}
	}
}

func TestPDRClassifier(t *testing.T) {
	var tb tableBuilder
	tb.add(0, []classify.Rule{{Precedence: 1, Has: classify.FieldProto, Proto: 6}, {Precedence: 1, Has: classify.FieldProto, Proto: 17}})
	tb.add(1, []classify.Rule{{Precedence: 2}})
	cl, err := tb.build(classify.KindLinear)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := cl.Lookup(&classify.Header{Proto: 17}); !ok || id != 0 {
		t.Errorf("lookup UDP: %d %v", id, ok)
	}
	if id, ok := cl.Lookup(&classify.Header{Proto: 1}); !ok || id != 1 {
		t.Errorf("lookup ICMP: %d %v", id, ok)
	}
	if err := cl.Insert(classify.Rule{ID: 2, Precedence: 0, Has: classify.FieldProto, Proto: 1}); err != nil {
		t.Fatal(err)
	}
	if id, ok := cl.Lookup(&classify.Header{Proto: 1}); !ok || id != 2 {
		t.Errorf("after insert: %d %v", id, ok)
	}
	if err := cl.Delete(0); err != nil {
		t.Fatal(err)
	}
	if id, ok := cl.Lookup(&classify.Header{Proto: 6}); !ok || id != 1 {
		t.Errorf("after delete: %d %v", id, ok)
	}
	if err := cl.Delete(0); !errors.Is(err, classify.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if cl.Len() != 2 {
		t.Errorf("len %d", cl.Len())
	}
}

// Sessions carry their rules as lists too, IDs being PDR indexes, the
// same with or without per-session classifiers (NoSessionTables, for a
// UPF-wide table); the lists classify as the session's own table does.
func TestSessionRuleLists(t *testing.T) {
	var lists [2][2][]classify.Rule
	for i, noTables := range []bool{false, true} {
		c, dp, _ := newUPFCWith(t, func(cfg *Config) { cfg.NoSessionTables = noTables })
		req := establishment(1)
		req.CreatePDRs = append(req.CreatePDRs, pfcp.CreatePDR{ID: 5, Precedence: 50, FARID: 2,
			PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, UEIP: &pfcp.UEIPAddress{IPv4: ueAddr, Destination: true},
				SDFFilters: []pfcp.SDFFilter{{FlowDescription: "permit out 6 from 198.51.100.0/24 80,443 to assigned"}}}})
		s := dp.get(establish(t, c, req).UPFSEID.SEID)
		if (s.Uplink == nil) != noTables || (s.Downlink == nil) != noTables {
			t.Errorf("noTables %v: classifiers %v %v", noTables, s.Uplink, s.Downlink)
		}
		if len(s.UplinkRules) == 0 || len(s.DownlinkRules) != 3 {
			t.Fatalf("noTables %v: rule lists %d up, %d down", noTables, len(s.UplinkRules), len(s.DownlinkRules))
		}
		lists[i] = [2][]classify.Rule{s.UplinkRules, s.DownlinkRules}
		if noTables {
			continue
		}
		// The downlink list, numbered afresh, gives the table's answers.
		down := slices.Clone(s.DownlinkRules)
		for n := range down {
			down[n].ID = uint32(n)
		}
		lin, err := classify.NewLinear(down)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range []string{"198.51.100.3", "192.0.2.1"} {
			for _, sp := range []uint16{80, 443, 8080} {
				h := &classify.Header{SourceInterface: 1, UEIP: classify.AddrFromNetip(ueAddr), DstIP: classify.AddrFromNetip(ueAddr),
					SrcIP: classify.AddrFromNetip(netip.MustParseAddr(src)), Proto: 6, SrcPort: sp, DstPort: 50000}
				want, wok := s.Downlink.Lookup(h)
				got, gok := lin.Lookup(h)
				if wok != gok || gok && s.DownlinkRules[got].ID != want {
					t.Errorf("%s:%d: table PDR index %d %v, list rule %d %v", src, sp, want, wok, got, gok)
				}
			}
		}
	}
	if !reflect.DeepEqual(lists[0], lists[1]) {
		t.Errorf("rule lists differ without tables:\n%+v\n%+v", lists[0], lists[1])
	}
}

// The BAR's Suggested Buffering Packets Count reaches the data path while a
// FAR names the BAR (TS 29.244 §5.2.4, §7.5.2.6, §7.5.4.11).
func TestBARBoundsBuffer(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	seid := establish(t, c, establishment(1)).UPFSEID.SEID
	if n := dp.get(seid).BufferPackets; n != 10 {
		t.Fatalf("established: %d", n)
	}
	modify := func(req *pfcp.SessionModificationRequest) int {
		t.Helper()
		if mr := c.HandleSessionModification(ctx, seid, req); mr.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("modification: %v %+v", mr.Cause, mr.FailedRuleID)
		}
		return dp.get(seid).BufferPackets
	}
	if n := modify(&pfcp.SessionModificationRequest{UpdateBAR: &pfcp.UpdateBAR{ID: 1, SuggestedBufferingPackets: ptr(uint8(3))}}); n != 3 {
		t.Errorf("after Update BAR: %d, want 3", n)
	}
	// The FAR forwards and names no BAR: the data path's default.
	if n := modify(&pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
		Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
			Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 5, IPv4: gnbAddr}}}}}); n != 3 {
		t.Errorf("FAR still names the BAR: %d, want 3", n)
	}
	c.mu.Lock()
	s := c.sessions[seid].clone()
	c.mu.Unlock()
	spec := s.fars[2].spec // the clone shares farState: replace, never edit
	spec.BARID = nil
	s.fars[2] = &farState{spec: spec}
	snap, rej := c.compile(s, nil)
	if rej != nil || snap.BufferPackets != 0 {
		t.Errorf("no FAR names the BAR: %d (%v)", snap.BufferPackets, rej)
	}
}

// Handover (TS 23.502 §4.9.1.2.2 step 6, §4.9.1.3.3 step 4): Update FAR
// with a new Outer Header Creation and SNDEM marks the FAR of that one
// snapshot, for UPF-U to send End Markers; the next snapshot is unmarked.
func TestSendEndMarkerCompiles(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	seid := establish(t, c, establishment(1)).UPFSEID.SEID
	target := netip.MustParseAddr("10.100.3.9")
	tunnel := func(teid uint32, addr netip.Addr, sndem bool) *pfcp.SessionModificationRequest {
		return &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
			Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, SendEndMarker: sndem,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: teid, IPv4: addr}}}}}
	}
	modify := func(req *pfcp.SessionModificationRequest) *rules.FAR {
		t.Helper()
		if mr := c.HandleSessionModification(ctx, seid, req); mr.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("modification: %v %+v", mr.Cause, mr.FailedRuleID)
		}
		return dp.get(seid).PDRs[1].FAR
	}
	if f := modify(tunnel(0x77, gnbAddr, false)); f.SendEndMarker || f.Encap.TEID != 0x77 {
		t.Fatalf("first tunnel: %+v", f)
	}
	f := modify(tunnel(0x88, target, true))
	if !f.SendEndMarker || f.Encap.TEID != 0x88 || f.Encap.Peer != netip.AddrPortFrom(target, 2152) {
		t.Fatalf("switch with SNDEM: %+v %+v", f, f.Encap)
	}
	if s := dp.get(seid); s.PDRs[0].FAR.SendEndMarker {
		t.Error("the uplink FAR is marked too")
	}
	// Only the tunnel changes (no Destination Interface): the FAR keeps
	// forwarding to the access.
	f = modify(&pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{ID: 2, Forwarding: &pfcp.UpdateForwardingParameters{
		NoDestination: true, SendEndMarker: true,
		OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x99, IPv4: gnbAddr}}}}})
	if !f.SendEndMarker || f.Dest != rules.InterfaceAccess || f.Encap.TEID != 0x99 || f.Action != rules.ActionForward {
		t.Fatalf("tunnel-only update: %+v", f)
	}
	// SNDEM is for its modification only.
	if f := modify(&pfcp.SessionModificationRequest{UpdateQERs: []pfcp.UpdateQER{{ID: 1, Gate: &pfcp.GateStatus{}}}}); f.SendEndMarker {
		t.Error("SNDEM carried into a later snapshot")
	}
}

// Indirect data forwarding (TS 23.502 §4.9.1.3.2-3): a PDR from the access
// with a CHOOSE F-TEID and no UE IP address, whose FAR re-encapsulates to
// the target NG-RAN's DL forwarding tunnel (Destination Interface access).
// UPF-C accepts it next to the session's PDRs, announces the TEID, and
// frees it when the PDR goes.
func TestIndirectForwardingPDR(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	resp := establish(t, c, establishment(1))
	seid, ulTEID := resp.UPFSEID.SEID, resp.CreatedPDRs[0].LocalFTEID.TEID
	target := netip.MustParseAddr("10.100.3.9")
	mr := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		CreateFARs: []pfcp.CreateFAR{{ID: 3, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
			Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
				Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0xf00d, IPv4: target}}}},
		CreatePDRs: []pfcp.CreatePDR{{ID: 3, Precedence: 255, FARID: 3,
			PDI:                pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true, ChooseID: 2}},
			OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4)}},
	})
	if mr.Cause != pfcp.CauseRequestAccepted || len(mr.CreatedPDRs) != 1 || mr.CreatedPDRs[0].ID != 3 || mr.CreatedPDRs[0].LocalFTEID == nil {
		t.Fatalf("forwarding PDR: %v %+v %+v", mr.Cause, mr.FailedRuleID, mr.CreatedPDRs)
	}
	fwdTEID := mr.CreatedPDRs[0].LocalFTEID.TEID
	if fwdTEID == ulTEID || fwdTEID == 0 || mr.CreatedPDRs[0].LocalFTEID.IPv4 != n3Addr {
		t.Fatalf("forwarding F-TEID %+v (uplink TEID %#x)", mr.CreatedPDRs[0].LocalFTEID, ulTEID)
	}
	s := dp.get(seid)
	if len(s.TEIDs) != 2 || s.UEIPv4 != ueAddr || c.Stats().TEIDs != 2 {
		t.Fatalf("TEIDs %v UE %v", s.TEIDs, s.UEIPv4)
	}
	// A downlink packet (DN -> UE) in the forwarding tunnel, as UPF-U
	// classifies it: inner source = the DN server, QFI of the flow.
	h := &classify.Header{SourceInterface: 0, TEID: fwdTEID, QFI: 9, UEIP: classify.AddrFromNetip(netip.MustParseAddr("8.8.8.8")),
		SrcIP: classify.AddrFromNetip(netip.MustParseAddr("8.8.8.8")), DstIP: classify.AddrFromNetip(ueAddr), Proto: 17}
	idx, ok := s.Uplink.Lookup(h)
	if !ok || s.PDRs[idx].ID != 3 {
		t.Fatalf("forwarding tunnel lookup: %d %v", idx, ok)
	}
	if f := s.PDRs[idx].FAR; f.Dest != rules.InterfaceAccess || f.Encap == nil || f.Encap.TEID != 0xf00d ||
		f.Encap.Peer != netip.AddrPortFrom(target, 2152) || f.Action != rules.ActionForward {
		t.Errorf("forwarding FAR %+v", f)
	}
	// The session's own uplink PDR still needs its TEID and UE address.
	h.TEID = ulTEID
	if idx, ok := s.Uplink.Lookup(h); ok && s.PDRs[idx].ID == 3 {
		t.Error("the forwarding PDR matches the uplink tunnel")
	}

	// Handover done: Remove PDR/FAR frees the TEID.
	mr = c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{RemovePDRs: []uint16{3}, RemoveFARs: []uint32{3}})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("remove: %v", mr.Cause)
	}
	if s := dp.get(seid); len(s.TEIDs) != 1 || s.TEIDs[0] != ulTEID || c.Stats().TEIDs != 1 {
		t.Errorf("after removal: TEIDs %v, %d allocated", s.TEIDs, c.Stats().TEIDs)
	}
	c.mu.Lock()
	_, held := c.teids[fwdTEID]
	c.mu.Unlock()
	if held {
		t.Error("forwarding TEID still allocated")
	}
}

// TestRuleIDZero: TS 29.244 reserves no rule ID (§8.2.36, §8.2.54,
// §8.2.74, §8.2.75), so a CP that numbers PDRs, FARs, QERs and URRs from
// 0 establishes, and its PDR 0 forwards through FAR 0 with QER 0 and URR 0.
func TestRuleIDZero(t *testing.T) {
	c, dp, _ := newUPFC(t)
	req := establishment(1)
	req.CreatePDRs[0].ID, req.CreatePDRs[0].FARID = 0, 0
	req.CreatePDRs[0].QERIDs, req.CreatePDRs[0].URRIDs = []uint32{0}, []uint32{0}
	req.CreatePDRs[1].QERIDs, req.CreatePDRs[1].URRIDs = []uint32{0}, []uint32{0}
	req.CreateFARs[0].ID = 0
	req.CreateQERs[0].ID = 0
	req.CreateURRs[0].ID = 0
	resp := establish(t, c, req)
	if len(resp.CreatedPDRs) != 1 || resp.CreatedPDRs[0].ID != 0 {
		t.Fatalf("created PDRs %+v", resp.CreatedPDRs)
	}
	s := dp.get(resp.UPFSEID.SEID)
	h := &classify.Header{SourceInterface: 0, TEID: resp.CreatedPDRs[0].LocalFTEID.TEID, QFI: 9, UEIP: classify.AddrFromNetip(ueAddr),
		SrcIP: classify.AddrFromNetip(ueAddr), DstIP: classify.AddrFromNetip(netip.MustParseAddr("8.8.8.8")), Proto: 17}
	idx, ok := s.Uplink.Lookup(h)
	if !ok {
		t.Fatal("uplink lookup found no PDR")
	}
	p := s.PDRs[idx]
	if p.ID != 0 || p.FAR == nil || p.FAR.ID != 0 || p.FAR.Action != rules.ActionForward || p.FAR.Dest != rules.InterfaceCore ||
		len(p.QERs) != 1 || p.QERs[0].ID != 0 || len(p.URRs) != 1 || p.URRs[0].ID != 0 {
		t.Fatalf("uplink PDR %+v FAR %+v", p, p.FAR)
	}
	// An update can point a PDR at FAR 0, and remove rule 0.
	mr := c.HandleSessionModification(context.Background(), resp.UPFSEID.SEID, &pfcp.SessionModificationRequest{
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 2, FARID: ptr(uint32(0))}}, RemoveFARs: []uint32{2}})
	if mr.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("modification: %v (IE %d, rule %+v)", mr.Cause, mr.OffendingIE, mr.FailedRuleID)
	}
	if s := dp.get(resp.UPFSEID.SEID); s.PDRs[1].ID != 2 || s.PDRs[1].FAR.ID != 0 {
		t.Errorf("PDR 2 after update: %+v", s.PDRs[1])
	}
	mr = c.HandleSessionModification(context.Background(), resp.UPFSEID.SEID, &pfcp.SessionModificationRequest{RemoveURRs: []uint32{0},
		UpdatePDRs: []pfcp.UpdatePDR{{ID: 0, URRIDs: []uint32{}}, {ID: 2, URRIDs: []uint32{}}}})
	if mr.Cause != pfcp.CauseRequestAccepted || len(mr.UsageReports) != 1 || mr.UsageReports[0].URRID != 0 {
		t.Errorf("removing URR 0: %v, reports %+v", mr.Cause, mr.UsageReports)
	}
}

// TestForwardingParametersApplyToForwarding: a FAR's Forwarding Parameters
// are conditional on FORW (TS 29.244 §7.5.2.3-1). On a DROP FAR they do
// nothing, so a zeroed Outer Header Creation there does not fail the
// session; it does once an update makes the FAR forward with it.
func TestForwardingParametersApplyToForwarding(t *testing.T) {
	c, dp, _ := newUPFC(t)
	req := establishment(1)
	req.CreateFARs[1] = pfcp.CreateFAR{ID: 2, ApplyAction: pfcp.ActionDrop, Forwarding: &pfcp.ForwardingParameters{
		Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{}}}
	resp := establish(t, c, req)
	seid := resp.UPFSEID.SEID
	if f := dp.get(seid).PDRs[1].FAR; f.ID != 2 || f.Action != rules.ActionDrop || f.Encap != nil {
		t.Fatalf("DROP FAR compiled as %+v", f)
	}
	installs, _, _ := dp.counts()
	mr := c.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward)}}})
	checkReject(t, "DROP FAR made to forward with its zeroed outer header", mr.Cause, mr.OffendingIE, mr.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypeFAR, 2)})
	if n, _, _ := dp.counts(); n != installs || dp.get(seid).PDRs[1].FAR.Action != rules.ActionDrop {
		t.Error("rejected modification changed the session")
	}
}

// TestNetworkInstanceNeededToChoose: a FAR forwarding to the core without a
// Network Instance leaves UPF-U no N6 to choose when there are several; it
// is rejected as a rule that cannot be created (§7.5.3.1) instead of
// accepted with its packets dropped. With one N6 there is nothing to choose.
func TestNetworkInstanceNeededToChoose(t *testing.T) {
	unnamed := func() *pfcp.SessionEstablishmentRequest {
		req := establishment(1)
		req.CreateFARs[0].Forwarding.NetworkInstance = ""
		return req
	}
	two, _, _ := newUPFC(t)
	resp := two.HandleSessionEstablishment(context.Background(), unnamed())
	checkReject(t, "two N6", resp.Cause, resp.OffendingIE, resp.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)})

	// A FAR that starts forwarding by an update is checked the same way.
	seid := establish(t, two, establishment(2)).UPFSEID.SEID
	mr := two.HandleSessionModification(context.Background(), seid, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, ApplyAction: ptr(pfcp.ActionForward),
			Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceCore}}}})
	checkReject(t, "two N6, update", mr.Cause, mr.OffendingIE, mr.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 2)})

	one, dp, _ := newUPFCWith(t, func(cfg *Config) { cfg.NetworkInstances = []string{"internet"} })
	resp = establish(t, one, unnamed())
	if f := dp.get(resp.UPFSEID.SEID).PDRs[0].FAR; f.ID != 1 || f.Action != rules.ActionForward || f.NetworkInstance != "" {
		t.Errorf("FAR with one N6 compiled as %+v", f)
	}
}

// TestRestartedSMFLosesItsSessions: an SMF that restarted sets the
// association up again with a new Recovery Time Stamp; its sessions from
// before are deleted with their TEIDs (TS 29.244 §6.2.6.2.2, TS 23.007
// §19A), so that it cannot be answered for sessions it no longer knows.
func TestRestartedSMFLosesItsSessions(t *testing.T) {
	c, dp, cp := newUPFC(t)
	ctx := context.Background()
	var seids []uint64
	var teids []uint32
	for i := range 3 {
		r := establish(t, c, establishment(uint64(100+i)))
		seids = append(seids, r.UPFSEID.SEID)
		teids = append(teids, r.CreatedPDRs[0].LocalFTEID.TEID)
	}
	setup := c.HandleAssociationSetup(ctx, cp, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now().Add(time.Minute)})
	if setup.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("re-association: %v", setup.Cause)
	}
	if st := c.Stats(); st.Associations != 1 || st.Sessions != 0 || st.TEIDs != 0 {
		t.Fatalf("after re-association: %+v", st)
	}
	for _, seid := range seids {
		if dp.get(seid) != nil {
			t.Errorf("session %#x still in the data path", seid)
		}
		if r := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{}); r.Cause != pfcp.CauseSessionContextNotFound {
			t.Errorf("session %#x after re-association: %v", seid, r.Cause)
		}
	}
	// The TEIDs are free again: the restarted SMF may even set one itself.
	req := establishment(200)
	req.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: teids[0], IPv4: n3Addr}
	establish(t, c, req)
}

// TestAssociationTakenOverByAnotherPeer: a Setup Request from another
// address with the Node ID of an existing association replaces it (TS
// 29.244 §6.2.6.2.2): the old association's sessions are deleted (tern
// does not take PFCP Session Retention Information, so it never sets
// PSREI), and reports go to the new peer.
func TestAssociationTakenOverByAnotherPeer(t *testing.T) {
	c, dp, oldCP := newUPFC(t)
	ctx := context.Background()
	old := establish(t, c, establishment(1))

	newCP := &fakeCP{reports: make(chan sentReport, 4)}
	setup := c.HandleAssociationSetup(ctx, newCP, &pfcp.AssociationSetupRequest{NodeID: smfNode, RecoveryTime: time.Now()})
	if setup.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("setup from the other peer: %v", setup.Cause)
	}
	if st := c.Stats(); st.Associations != 1 || st.Sessions != 0 || st.TEIDs != 0 || dp.get(old.UPFSEID.SEID) != nil {
		t.Fatalf("after the take-over: %+v", st)
	}
	seid := establish(t, c, establishment(2)).UPFSEID.SEID
	c.Report(seid, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	if r := waitReport(t, newCP); r.cpSEID != 2 {
		t.Errorf("report to CP SEID %#x", r.cpSEID)
	}
	select {
	case r := <-oldCP.reports:
		t.Errorf("the replaced peer got a report: %+v", r)
	default:
	}
}

// A FAR forwarding to the access side must say how to reach it: without
// Outer Header Creation UPF-U would send the packets out N6 (§7.5.2.3-2).
func TestForwardToAccessNeedsOuterHeader(t *testing.T) {
	c, _, _ := newUPFC(t)
	req := establishment(0x70)
	req.CreateFARs[1] = pfcp.CreateFAR{ID: 2, ApplyAction: pfcp.ActionForward,
		Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess}}
	r := c.HandleSessionEstablishment(context.Background(), req)
	if r.Cause != pfcp.CauseConditionalIEMissing || r.OffendingIE != ieOuterHeaderCreation {
		t.Fatalf("forward to access without outer header: cause %v, offending IE %d", r.Cause, r.OffendingIE)
	}
}

// TestRestorationKeepsTEIDs: after a restart (a fresh UPF-C with a later
// Recovery Time Stamp) an SMF establishes some of its sessions again with
// the F-TEIDs this UPF had allocated and RESTI (TS 23.527 §4.3.2, TS
// 29.244 §5.5.1, §8.2.136). Those TEIDs are held: CHOOSE never hands them
// out again; nor does it hand out a TEID of the previous life that was not
// restored (a gNB may still send on it), nor a SEID of the previous life
// (a deletion the SMF still retransmits would delete the session that got
// it). A restoration that names a TEID a live session holds is refused.
func TestRestorationKeepsTEIDs(t *testing.T) {
	before := time.Unix(1_790_000_000, 0)
	life := func(recovery time.Time) (*UPFC, *fakeDP) {
		c, dp, _ := newUPFCWith(t, func(c *Config) { c.RecoveryTime, c.TEIDPlaces = recovery, 4096 })
		return c, dp
	}
	old, _ := life(before)
	oldTEIDs, oldSEIDs := map[uint32]bool{}, map[uint64]bool{}
	var teids []uint32
	for i := range 1000 {
		resp := establish(t, old, establishment(uint64(i+1)))
		teid := resp.CreatedPDRs[0].LocalFTEID.TEID
		oldTEIDs[teid], oldSEIDs[resp.UPFSEID.SEID] = true, true
		teids = append(teids, teid)
	}

	c, dp := life(before.Add(time.Second))
	restore := func(cpSEID uint64, teid uint32) *pfcp.SessionEstablishmentRequest {
		req := establishment(cpSEID)
		req.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: teid, IPv4: n3Addr}
		req.RESTI = true
		return req
	}
	restored := map[uint32]bool{teids[1]: true, teids[500]: true}
	for teid := range restored {
		resp := establish(t, c, restore(uint64(teid), teid))
		if len(resp.CreatedPDRs) != 0 {
			t.Errorf("restored session announces F-TEIDs %+v it was given", resp.CreatedPDRs)
		}
		if got := dp.get(resp.UPFSEID.SEID).TEIDs; !slices.Equal(got, []uint32{teid}) {
			t.Errorf("restored session installed with TEIDs %#x, want %#x", got, teid)
		}
		if oldSEIDs[resp.UPFSEID.SEID] {
			t.Errorf("restored session got SEID %#x of the UPF's previous life", resp.UPFSEID.SEID)
		}
	}
	seen := map[uint32]bool{}
	for i := range 1000 {
		resp := establish(t, c, establishment(uint64(2000+i)))
		teid := resp.CreatedPDRs[0].LocalFTEID.TEID
		switch {
		case restored[teid] || seen[teid]:
			t.Fatalf("CHOOSE handed out TEID %#x twice", teid)
		case oldTEIDs[teid]:
			t.Fatalf("CHOOSE handed out TEID %#x of the UPF's previous life", teid)
		case oldSEIDs[resp.UPFSEID.SEID]:
			t.Fatalf("session got SEID %#x of the UPF's previous life", resp.UPFSEID.SEID)
		}
		seen[teid] = true
	}
	resp := c.HandleSessionEstablishment(context.Background(), restore(200, teids[500]))
	checkReject(t, "restoring a held TEID", resp.Cause, resp.OffendingIE, resp.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)})
	if st := c.Stats(); st.Restored != 2 || st.TEIDs != 1002 {
		t.Errorf("stats %+v, want 2 restored sessions and 1002 TEIDs", st)
	}
}

// simulatorEstablishment is a PFCP Session Establishment Request as an SMF
// simulator that never names a Network Instance builds it with go-pfcp
// (omec-project/pfcpsim's session builders): an uplink PDR matched by the
// CP-chosen F-TEID alone, a downlink PDR with the UE address, an uplink
// FAR to the core with only a Destination Interface, a dropping downlink
// FAR with a zero Outer Header Creation, and QERs with gate and MBR.
func simulatorEstablishment(t testing.TB, cpSEID uint64, teid uint32, ue string) *pfcp.SessionEstablishmentRequest {
	t.Helper()
	smf, n3 := net.ParseIP(smfNode.IP.String()), net.ParseIP(n3Addr.String())
	b, err := message.NewSessionEstablishmentRequest(0, 0, 0, 1, 0,
		ie.NewNodeID(smfNode.IP.String(), "", ""),
		ie.NewFSEID(cpSEID, smf, nil),
		ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100), ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(1),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x01, teid, n3, nil, 0)),
			ie.NewQERID(4), ie.NewQERID(1)),
		ie.NewCreatePDR(ie.NewPDRID(2), ie.NewPrecedence(100), ie.NewFARID(2),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x2, ue, "", 0, 0)),
			ie.NewQERID(4), ie.NewQERID(2)),
		ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x02),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		ie.NewCreateFAR(ie.NewFARID(2), ie.NewApplyAction(0x01),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
				ie.NewOuterHeaderCreation(0x100, 0, "0.0.0.0", "", 0, 0, 0))),
		ie.NewCreateQER(ie.NewQERID(4), ie.NewQFI(0), ie.NewGateStatus(0, 0), ie.NewMBR(60000, 60000)),
		ie.NewCreateQER(ie.NewQERID(1), ie.NewQFI(0), ie.NewGateStatus(0, 0), ie.NewMBR(50000, 30000)),
		ie.NewCreateQER(ie.NewQERID(2), ie.NewQFI(0), ie.NewGateStatus(0, 0), ie.NewMBR(50000, 30000)),
	).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := pfcp.Decode(b)
	if err != nil {
		t.Fatalf("the simulator's request does not decode: %v", err)
	}
	return m.(*pfcp.SessionEstablishmentRequest)
}

// TestNetworkInstanceFromUEAddress: on a UPF with two N6 networks, a FAR
// to the core without a Network Instance goes to the network whose pool
// holds the session's UE address (TS 29.244 §7.5.2.3-2: the IE is
// optional); it is refused, naming the FAR and the IE, only where the
// address does not decide: in no pool, in two, or no address at all.
func TestNetworkInstanceFromUEAddress(t *testing.T) {
	pools := map[string]netip.Prefix{
		"internet": netip.MustParsePrefix("10.60.0.0/16"),
		"ims":      netip.MustParsePrefix("10.61.0.0/16"),
		"overlap":  netip.MustParsePrefix("10.62.0.0/16"),
		"overlap2": netip.MustParsePrefix("10.62.128.0/17"),
	}
	c, dp, _ := newUPFCWith(t, func(cfg *Config) {
		cfg.NetworkInstances = []string{"internet", "ims", "overlap", "overlap2"}
		cfg.NetworkPools = pools
	})
	for i, ue := range []struct{ addr, network string }{{"10.60.0.7", "internet"}, {"10.61.3.4", "ims"}} {
		resp := c.HandleSessionEstablishment(context.Background(), simulatorEstablishment(t, uint64(1+i), uint32(0x100+i), ue.addr))
		if resp.Cause != pfcp.CauseRequestAccepted {
			t.Fatalf("UE %s: %v (offending IE %d, failed rule %+v)", ue.addr, resp.Cause, resp.OffendingIE, resp.FailedRuleID)
		}
		for _, p := range dp.get(resp.UPFSEID.SEID).PDRs {
			if p.ID == 1 && p.FAR.NetworkInstance != ue.network {
				t.Errorf("UE %s: uplink FAR compiled with network instance %q, want %q", ue.addr, p.FAR.NetworkInstance, ue.network)
			}
		}
	}
	for _, ue := range []string{"192.0.2.1", "10.62.200.1"} { // no pool; two pools
		resp := c.HandleSessionEstablishment(context.Background(), simulatorEstablishment(t, 9, 0x200, ue))
		checkReject(t, "UE "+ue, resp.Cause, resp.OffendingIE, resp.FailedRuleID,
			expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)})
	}
	noUE := establishment(10)
	noUE.CreateFARs[0].Forwarding.NetworkInstance = ""
	for i := range noUE.CreatePDRs {
		noUE.CreatePDRs[i].PDI.UEIP = nil
	}
	resp := c.HandleSessionEstablishment(context.Background(), noUE)
	checkReject(t, "no UE address", resp.Cause, resp.OffendingIE, resp.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, ie: ieNetworkInstance, rule: ruleID(pfcp.RuleTypeFAR, 1)})
	if st := c.Stats(); st.Sessions != 2 || st.TEIDs != 2 {
		t.Errorf("stats %+v, want the two sessions that chose", st)
	}
}

// TestRepeatedEstablishment: a CP function that asks again for a session
// it has at the UPF (same association, same CP F-SEID: an SMF that took
// over from one that died before it recorded the answer, issue 36) gets
// that session, its F-SEID and chosen F-TEID, and no second session;
// once deleted, the CP F-SEID names a new session again; another CP
// F-SEID is another session.
func TestRepeatedEstablishment(t *testing.T) {
	c, dp, _ := newUPFC(t)
	ctx := context.Background()
	first := establish(t, c, establishment(7))
	again := establish(t, c, establishment(7))
	if *again.UPFSEID != *first.UPFSEID || !reflect.DeepEqual(again.CreatedPDRs, first.CreatedPDRs) || len(first.CreatedPDRs) != 1 {
		t.Errorf("repeated establishment answered %+v %+v, the first %+v %+v", again.UPFSEID, again.CreatedPDRs, first.UPFSEID, first.CreatedPDRs)
	}
	if st := c.Stats(); st.Sessions != 1 || st.TEIDs != 1 || st.Repeated != 1 {
		t.Errorf("after a repeated establishment: %+v", st)
	}
	if _, _, live := dp.counts(); live != 1 {
		t.Errorf("%d sessions in the data path, want 1", live)
	}
	other := establish(t, c, establishment(8))
	if other.UPFSEID.SEID == first.UPFSEID.SEID {
		t.Error("another CP F-SEID got the same session")
	}
	if del := c.HandleSessionDeletion(ctx, first.UPFSEID.SEID); del.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("deletion: %v", del.Cause)
	}
	fresh := establish(t, c, establishment(7))
	if fresh.UPFSEID.SEID == first.UPFSEID.SEID {
		t.Error("the deleted session answered a new establishment")
	}
	if st := c.Stats(); st.Sessions != 2 || st.TEIDs != 2 {
		t.Errorf("after deletion and a new establishment: %+v", st)
	}
}
