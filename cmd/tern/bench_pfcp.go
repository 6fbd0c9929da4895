package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/upf/upfc"
	"github.com/tern5g/tern/upf/upfu"
)

// Published single-PFCP-message latencies (benchmarks.md): L25GC / free5GC.
var pfcpPublished = map[string][2]time.Duration{
	"establishment": {1390 * time.Microsecond, 1780 * time.Microsecond},
	"modification":  {530 * time.Microsecond, 860 * time.Microsecond},
	"report":        {230 * time.Microsecond, 450 * time.Microsecond},
}

// benchPFCP measures one PFCP request/response for session establishment,
// modification and report, against tern's real UPF-C and UPF-U rule
// install, over the UDP binding (TS 29.244, loopback) and the direct
// in-process binding, interleaved in the same run.
func benchPFCP(args []string) error {
	fs := flag.NewFlagSet("bench pfcp", flag.ContinueOnError)
	n := fs.Int("n", 2000, "sessions per binding (each: establish, modify, report, delete)")
	jsonPath := fs.String("json", "", "write results (benchmarks.md format) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atLeast("n", *n, 1); err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Printf("tern bench pfcp on %s: %d sessions per binding\n", report.ThisMachine(), *n)

	var bindings []*pfcpBinding
	for _, udp := range []bool{false, true} {
		b, err := newPFCPBinding(ctx, udp)
		if err != nil {
			return err
		}
		defer b.close()
		bindings = append(bindings, b)
	}
	rec := map[string]*report.Recorder{}
	for _, b := range bindings {
		rec[b.name] = report.NewRecorder()
	}
	// Rounds of 50 sessions per binding, alternating, so drift in machine
	// load hits both sides alike.
	const round = 50
	for done := 0; done < *n; done += round {
		for _, b := range bindings {
			for i := done; i < min(done+round, *n); i++ {
				b.cycle(ctx, uint64(i+1), rec[b.name])
			}
		}
	}

	doc := report.NewDoc("pfcp", map[string]any{"sessions": *n, "udp": "loopback, one socket per side", "upf": "tern UPF-C + UPF-U rule install"})
	fmt.Printf("\n%-14s %-7s %10s %10s %10s %8s %14s %14s\n", "message", "binding", "median µs", "p90 µs", "p99 µs", "failed", "vs L25GC", "vs free5GC")
	sums := map[string]map[string]report.Summary{} // binding -> message -> summary
	for _, b := range bindings {
		sums[b.name] = map[string]report.Summary{}
		for _, s := range rec[b.name].Summaries() {
			sums[b.name][s.Procedure] = s
		}
	}
	for _, msg := range []string{"establishment", "modification", "report"} {
		for _, b := range bindings {
			s := sums[b.name][msg]
			s.Procedure = msg
			res := report.LatencyResult(s, b.name, rec[b.name].Samples(msg))
			res.Extra = map[string]any{"l25gc_us": pfcpPublished[msg][0].Microseconds(), "free5gc_us": pfcpPublished[msg][1].Microseconds()}
			doc.Add(res)
			fmt.Printf("%-14s %-7s %10.1f %10.1f %10.1f %8d %13.0fx %13.0fx\n", msg, b.name,
				us64(s.Median), us64(s.P90), us64(s.P99), s.Failures,
				ratio(pfcpPublished[msg][0], s.Median), ratio(pfcpPublished[msg][1], s.Median))
		}
	}
	fmt.Println("\n(ratios: published latency / ours; L25GC and free5GC figures from the L25GC paper, their hardware)")
	if *jsonPath != "" {
		if err := doc.WriteFile(*jsonPath); err != nil {
			return err
		}
		fmt.Printf("results: %s\n", *jsonPath)
	}
	return nil
}

func us64(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ratio(ref, ours time.Duration) float64 {
	if ours <= 0 {
		return 0
	}
	return float64(ref) / float64(ours)
}

// pfcpBinding is an SMF-side view of one UPF through one binding.
type pfcpBinding struct {
	name    string
	up      pfcp.UserPlane
	cp      *atomic.Pointer[pfcp.ControlPlane] // the UPF's way back to the SMF
	closers []func() error
}

// benchCP is the SMF side's report handler: it accepts every report.
type benchCP struct{}

func (benchCP) HandleSessionReport(ctx context.Context, seid uint64, req *pfcp.SessionReportRequest) *pfcp.SessionReportResponse {
	return &pfcp.SessionReportResponse{Cause: pfcp.CauseRequestAccepted}
}

func (benchCP) HandleNodeReport(ctx context.Context, req *pfcp.NodeReportRequest) *pfcp.NodeReportResponse {
	return &pfcp.NodeReportResponse{NodeID: req.NodeID, Cause: pfcp.CauseRequestAccepted}
}

// capturingUP remembers the ControlPlane handed to the UPF at association.
type capturingUP struct {
	pfcp.UPHandler
	cp *atomic.Pointer[pfcp.ControlPlane]
}

func (c capturingUP) HandleAssociationSetup(ctx context.Context, from pfcp.ControlPlane, req *pfcp.AssociationSetupRequest) *pfcp.AssociationSetupResponse {
	c.cp.Store(&from)
	return c.UPHandler.HandleAssociationSetup(ctx, from, req)
}

var (
	benchSMFNode = pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}
	benchN3      = netip.MustParseAddr("127.0.0.2")
	benchGNB     = netip.MustParseAddr("127.0.0.3")
)

func newPFCPBinding(ctx context.Context, udp bool) (*pfcpBinding, error) {
	pipe, err := upfu.New(upfu.Config{N3Addr: benchN3, NetworkInstances: []string{"internet"}}, nil)
	if err != nil {
		return nil, err
	}
	c := upfc.New(upfc.Config{NodeID: pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}, N3Addr: benchN3, NetworkInstances: []string{"internet"}}, pipe, nil)
	pipe.SetReporter(c)
	b := &pfcpBinding{name: "direct", cp: new(atomic.Pointer[pfcp.ControlPlane])}
	handler := capturingUP{UPHandler: c, cp: b.cp}
	if !udp {
		b.up = pfcp.Direct(handler, benchCP{})
	} else {
		b.name = "udp"
		ports := make([]int, 2)
		for i := range ports {
			if ports[i], err = freeport.UDP(); err != nil {
				return nil, err
			}
		}
		upfEP, err := pfcp.Listen(pfcp.EndpointConfig{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), NodeID: pfcp.NodeID{IP: netip.MustParseAddr("127.0.0.1")}, UP: handler})
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, upfEP.Close)
		smfEP, err := pfcp.Listen(pfcp.EndpointConfig{Addr: fmt.Sprintf("127.0.0.1:%d", ports[1]), NodeID: benchSMFNode, CP: benchCP{}})
		if err != nil {
			b.close()
			return nil, err
		}
		b.closers = append(b.closers, smfEP.Close)
		b.up = smfEP.UserPlane(upfEP.Addr())
	}
	resp, err := b.up.SetupAssociation(ctx, &pfcp.AssociationSetupRequest{NodeID: benchSMFNode, RecoveryTime: time.Now()})
	if err != nil || resp.Cause != pfcp.CauseRequestAccepted {
		b.close()
		return nil, fmt.Errorf("pfcp %s association: %v (cause %v)", b.name, err, causeOf(resp))
	}
	return b, nil
}

func causeOf(r *pfcp.AssociationSetupResponse) any {
	if r == nil {
		return "none"
	}
	return r.Cause
}

func (b *pfcpBinding) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// cycle runs one session's life as an SMF drives it (TS 23.502
// §4.3.2.2.1 steps 10a and 16a, a usage report, release), timing the first
// three messages.
func (b *pfcpBinding) cycle(ctx context.Context, cpSEID uint64, rec *report.Recorder) {
	ue := netip.AddrFrom4([4]byte{10, 60, byte(cpSEID >> 8), byte(cpSEID)})
	est := benchEstablishment(cpSEID, ue)
	t0 := time.Now()
	er, err := b.up.EstablishSession(ctx, est)
	d := time.Since(t0)
	if err != nil || er.Cause != pfcp.CauseRequestAccepted || er.UPFSEID == nil {
		rec.Fail("establishment")
		return
	}
	rec.Observe("establishment", d)
	seid := er.UPFSEID.SEID

	// The gNB's tunnel is known: the DL FAR forwards to it.
	act := pfcp.ActionForward
	mod := &pfcp.SessionModificationRequest{UpdateFARs: []pfcp.UpdateFAR{{
		ID: 2, ApplyAction: &act,
		Forwarding: &pfcp.UpdateForwardingParameters{Destination: pfcp.InterfaceAccess, OuterHeaderCreation: &pfcp.OuterHeaderCreation{
			Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: uint32(cpSEID), IPv4: benchGNB}},
	}}}
	t0 = time.Now()
	mr, err := b.up.ModifySession(ctx, seid, mod)
	d = time.Since(t0)
	if err != nil || mr.Cause != pfcp.CauseRequestAccepted {
		rec.Fail("modification")
	} else {
		rec.Observe("modification", d)
	}

	if cp := b.cp.Load(); cp != nil {
		rep := &pfcp.SessionReportRequest{ReportType: pfcp.ReportUSAR, UsageReports: []pfcp.UsageReport{{
			URRID: 1, URSEQN: 1, Trigger: pfcp.UsageTriggerVolumeThreshold,
			Volume: pfcp.Volume{Total: 1 << 20, UL: 1 << 19, DL: 1 << 19, HasTotal: true, HasUL: true, HasDL: true}}}}
		t0 = time.Now()
		rr, err := (*cp).ReportSession(ctx, cpSEID, rep)
		d = time.Since(t0)
		if err != nil || rr.Cause != pfcp.CauseRequestAccepted {
			rec.Fail("report")
		} else {
			rec.Observe("report", d)
		}
	} else {
		rec.Fail("report")
	}

	if dr, err := b.up.DeleteSession(ctx, seid); err != nil || dr.Cause != pfcp.CauseRequestAccepted {
		fmt.Fprintf(os.Stderr, "pfcp %s: delete session %d: %v\n", b.name, seid, err)
	}
}

// benchEstablishment is the rule set tern's SMF installs for a new IPv4 PDU
// session: UL PDR (CHOOSE F-TEID, outer header removal, QFI 1) and DL PDR
// (UE IP), UL FAR forwarding to the DN, DL FAR buffering until the gNB
// tunnel is known, a session-AMBR QER and a volume URR.
func benchEstablishment(cpSEID uint64, ue netip.Addr) *pfcp.SessionEstablishmentRequest {
	ohr := pfcp.OuterHeaderRemovalGTPUUDPIPv4
	return &pfcp.SessionEstablishmentRequest{
		NodeID:  benchSMFNode,
		CPFSEID: pfcp.FSEID{SEID: cpSEID, IPv4: benchSMFNode.IP},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess, FTEID: &pfcp.FTEID{Choose: true, ChooseID: 1},
				NetworkInstance: "internet", UEIP: &pfcp.UEIPAddress{IPv4: ue}, QFIs: []uint8{1}},
				OuterHeaderRemoval: &ohr, FARID: 1, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
			{ID: 2, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: "internet",
				UEIP: &pfcp.UEIPAddress{IPv4: ue, Destination: true}},
				FARID: 2, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: "internet"}},
			{ID: 2, ApplyAction: pfcp.ActionBuffer | pfcp.ActionNotifyCP},
		},
		CreateQERs: []pfcp.CreateQER{{ID: 1, MBR: &pfcp.BitRate{UL: 1_000_000, DL: 1_000_000}, QFI: 1}},
		CreateURRs: []pfcp.CreateURR{{ID: 1, Method: pfcp.MethodVolume, Triggers: pfcp.TriggerVolumeThreshold,
			VolumeThreshold: &pfcp.Volume{Total: 1 << 30, HasTotal: true}}},
		PDNType: pfcp.PDNTypeIPv4,
	}
}
