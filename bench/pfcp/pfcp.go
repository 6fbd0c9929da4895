// Package pfcp runs `tern bench pfcp`: one PFCP request/response for
// session establishment, modification and report (TS 29.244), against
// tern's real UPF-C and UPF-U rule install, over the UDP binding
// (loopback) and the direct in-process binding, interleaved in the same
// run, beside the reference that bounds the UDP binding on this machine:
// a raw UDP request/response round trip between two sockets (row rtt,
// variant udp-rtt). Each PFCP message over UDP is quoted as a ratio to it.
package pfcp

import (
	"context"
	"fmt"
	"net"
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

// Messages are the measured PFCP messages, in the order reported.
var Messages = []string{"establishment", "modification", "report"}

// Published single-PFCP-message latencies (benchmarks.md): L25GC / free5GC.
var Published = map[string][2]time.Duration{
	"establishment": {1390 * time.Microsecond, 1780 * time.Microsecond},
	"modification":  {530 * time.Microsecond, 860 * time.Microsecond},
	"report":        {230 * time.Microsecond, 450 * time.Microsecond},
}

// Run measures n session cycles per binding and the UDP round-trip
// reference, and returns the report.
func Run(ctx context.Context, n int) (*report.Doc, error) {
	var bindings []*pfcpBinding
	defer func() {
		for _, b := range bindings {
			b.close()
		}
	}()
	for _, udp := range []bool{false, true} {
		b, err := newPFCPBinding(ctx, udp)
		if err != nil {
			return nil, err
		}
		bindings = append(bindings, b)
	}
	rec := map[string]*report.Recorder{}
	for _, b := range bindings {
		rec[b.name] = report.NewRecorder()
	}
	// Rounds of 50 sessions per binding, alternating, so drift in machine
	// load hits both sides alike.
	const round = 50
	for done := 0; done < n; done += round {
		for _, b := range bindings {
			for i := done; i < min(done+round, n); i++ {
				b.cycle(ctx, uint64(i+1), rec[b.name])
			}
		}
	}
	doc := report.NewDoc("pfcp", map[string]any{"sessions": n, "udp": "loopback, one socket per side", "upf": "tern UPF-C + UPF-U rule install"})
	for _, msg := range Messages {
		for _, b := range bindings {
			s := rec[b.name].Summary(msg)
			res := report.LatencyResult(s, b.name, rec[b.name].Samples(msg))
			res.Extra = map[string]any{"l25gc_us": Published[msg][0].Microseconds(), "free5gc_us": Published[msg][1].Microseconds()}
			doc.Add(res)
		}
	}
	rtt, err := UDPRoundTrip(n)
	if err != nil {
		return nil, err
	}
	r := report.LatencyResult(report.Summarize("rtt", rtt, 0), "udp-rtt", nil)
	r.Extra = map[string]any{"bytes": udpRTTBytes}
	doc.Add(r)
	return doc, nil
}

// udpRTTBytes is the size of the reference's datagrams, about a PFCP
// Session Establishment Request's.
const udpRTTBytes = 300

// UDPRoundTrip measures n request/response round trips between two
// loopback UDP sockets, one echoing in its own goroutine, as the two PFCP
// endpoints are: what a PFCP message over UDP cannot beat.
func UDPRoundTrip(n int) ([]time.Duration, error) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			m, from, err := b.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if _, err := b.WriteToUDPAddrPort(buf[:m], from); err != nil {
				return
			}
		}
	}()
	to := b.LocalAddr().(*net.UDPAddr).AddrPort()
	msg := make([]byte, udpRTTBytes)
	buf := make([]byte, 2048)
	return report.Time(n, func() error {
		a.SetReadDeadline(time.Now().Add(time.Second)) // a lost datagram ends the run
		if _, err := a.WriteToUDPAddrPort(msg, to); err != nil {
			return err
		}
		_, _, err := a.ReadFromUDPAddrPort(buf)
		return err
	})
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
			// Two draws may give one port: neither is bound yet.
			for ports[i] == 0 || (i > 0 && ports[i] == ports[0]) {
				if ports[i], err = freeport.UDP(); err != nil {
					return nil, err
				}
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
