package pfcp

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

func ptr[T any](v T) *T { return &v }

var (
	smfAddr = netip.MustParseAddr("10.0.0.1")
	upfAddr = netip.MustParseAddr("10.100.3.2")
	gnbAddr = netip.MustParseAddr("10.100.3.1")
	ueAddr  = netip.MustParseAddr("10.60.0.7")
	t0      = time.Unix(1_790_000_000, 0)
)

func fullPDI() PDI {
	return PDI{
		SourceInterface: InterfaceAccess,
		FTEID:           &FTEID{TEID: 0x01020304, IPv4: upfAddr},
		NetworkInstance: "internet",
		UEIP:            &UEIPAddress{IPv4: ueAddr, Destination: false},
		SDFFilters: []SDFFilter{
			{FlowDescription: "permit out ip from any to assigned", ID: 7},
			{FlowDescription: "permit out udp from 10.100.6.2 5000-6000 to assigned"},
		},
		QFIs: []uint8{9, 5},
	}
}

func fullVolume() *Volume {
	return &Volume{Total: 1 << 40, UL: 12345, DL: 987654321, HasTotal: true, HasUL: true, HasDL: true}
}

func fullUsageReport(id uint32) UsageReport {
	return UsageReport{
		URRID: id, URSEQN: 3, Trigger: UsageTriggerVolumeThreshold | UsageTriggerTermination,
		Volume: Volume{UL: 100, DL: 200, HasUL: true, HasDL: true},
		Start:  t0, End: t0.Add(90 * time.Second),
	}
}

// fullMessages returns one of each message with every IE populated.
func fullMessages() []Message {
	fwd := &ForwardingParameters{
		Destination:     InterfaceAccess,
		NetworkInstance: "internet",
		OuterHeaderCreation: &OuterHeaderCreation{
			Description: OuterHeaderCreationGTPUUDPIPv4, TEID: 0xa0b0c0d0, IPv4: gnbAddr,
		},
	}
	return []Message{
		&HeartbeatRequest{RecoveryTime: t0},
		&HeartbeatResponse{RecoveryTime: t0.Add(time.Hour)},
		&AssociationSetupRequest{NodeID: NodeID{IP: smfAddr}, RecoveryTime: t0, CPFunctionFeatures: 0x03},
		&AssociationSetupResponse{NodeID: NodeID{FQDN: "upf.tern.example"}, Cause: CauseRequestAccepted, RecoveryTime: t0,
			UPFunctionFeatures: 0x0102_0304_0506},
		&AssociationReleaseRequest{NodeID: NodeID{IP: netip.MustParseAddr("2001:db8::1")}},
		&AssociationReleaseResponse{NodeID: NodeID{IP: upfAddr}, Cause: CauseRequestAccepted},
		&VersionNotSupportedResponse{},
		&SessionEstablishmentRequest{
			NodeID:  NodeID{IP: smfAddr},
			CPFSEID: FSEID{SEID: 0x1122334455667788, IPv4: smfAddr},
			CreatePDRs: []CreatePDR{
				{ID: 1, Precedence: 255, PDI: fullPDI(), OuterHeaderRemoval: ptr(OuterHeaderRemovalGTPUUDPIPv4),
					FARID: 1, QERIDs: []uint32{1, 2}, URRIDs: []uint32{1}},
				{ID: 2, Precedence: 100, PDI: PDI{SourceInterface: InterfaceCore, NetworkInstance: "internet",
					UEIP: &UEIPAddress{IPv4: ueAddr, Destination: true}}, FARID: 2, QERIDs: []uint32{1}},
				{ID: 3, Precedence: 10, PDI: PDI{SourceInterface: InterfaceAccess, FTEID: &FTEID{Choose: true, ChooseID: 5}}, FARID: 1},
			},
			CreateFARs: []CreateFAR{
				{ID: 1, ApplyAction: ActionForward, Forwarding: &ForwardingParameters{Destination: InterfaceCore, NetworkInstance: "internet"}},
				{ID: 2, ApplyAction: ActionBuffer | ActionNotifyCP | 1<<9, Forwarding: fwd, BARID: ptr[uint8](1)},
			},
			CreateQERs: []CreateQER{
				{ID: 1, Gate: GateStatus{}, MBR: &BitRate{UL: 1_000_000, DL: 2_000_000}, GBR: &BitRate{UL: 1 << 38, DL: 7}, QFI: 9},
				{ID: 2, Gate: GateStatus{ULClosed: true, DLClosed: true}},
			},
			CreateURRs: []CreateURR{
				{ID: 1, Method: MethodVolume | MethodDuration, Triggers: TriggerVolumeThreshold | TriggerPeriodic | TriggerVolumeQuota,
					VolumeThreshold: fullVolume(), VolumeQuota: &Volume{DL: 5, HasDL: true}, MeasurementPeriod: time.Minute},
			},
			CreateBAR: &CreateBAR{ID: 1, SuggestedBufferingPackets: 32},
			PDNType:   PDNTypeIPv4,
		},
		&SessionEstablishmentResponse{
			NodeID: NodeID{IP: upfAddr}, Cause: CauseRuleCreationModificationFailure, OffendingIE: IECreateFAR,
			UPFSEID:      &FSEID{SEID: 42, IPv4: upfAddr},
			CreatedPDRs:  []CreatedPDR{{ID: 1, LocalFTEID: &FTEID{TEID: 77, IPv4: upfAddr}}, {ID: 2}},
			FailedRuleID: &RuleID{Type: RuleTypeFAR, ID: 2},
		},
		&SessionModificationRequest{
			CPFSEID:    &FSEID{SEID: 99, IPv4: smfAddr},
			RemovePDRs: []uint16{4, 5}, RemoveFARs: []uint32{4}, RemoveURRs: []uint32{9}, RemoveQERs: []uint32{8},
			RemoveBAR:  ptr[uint8](3),
			CreatePDRs: []CreatePDR{{ID: 6, Precedence: 1, PDI: fullPDI(), FARID: 6}},
			CreateFARs: []CreateFAR{{ID: 6, ApplyAction: ActionDrop}},
			CreateURRs: []CreateURR{{ID: 6, Method: MethodEvent, Triggers: TriggerStartOfTraffic}},
			CreateQERs: []CreateQER{{ID: 6, QFI: 1}},
			CreateBAR:  &CreateBAR{ID: 6},
			UpdatePDRs: []UpdatePDR{
				{ID: 2, Precedence: ptr[uint32](50), PDI: ptr(fullPDI()), OuterHeaderRemoval: ptr[uint8](0), FARID: ptr[uint32](3),
					QERIDs: []uint32{3}, URRIDs: []uint32{3}},
				{ID: 3},
			},
			UpdateFARs: []UpdateFAR{
				{ID: 2, ApplyAction: ptr(ActionForward), BARID: ptr[uint8](1), Forwarding: &UpdateForwardingParameters{
					Destination: InterfaceAccess, NetworkInstance: "internet", OuterHeaderCreation: fwd.OuterHeaderCreation,
					SendEndMarker: true}},
				{ID: 3},
				// Only the tunnel changes: no Destination Interface (§7.5.4.3-2, C).
				{ID: 4, Forwarding: &UpdateForwardingParameters{NoDestination: true, OuterHeaderCreation: &OuterHeaderCreation{
					Description: OuterHeaderCreationGTPUUDPIPv4, TEID: 0x0b0b, IPv4: gnbAddr}}},
			},
			UpdateURRs: []UpdateURR{
				{ID: 1, Method: ptr(MethodVolume), Triggers: ptr(TriggerVolumeQuota), VolumeThreshold: fullVolume(),
					VolumeQuota: fullVolume(), MeasurementPeriod: ptr(10 * time.Second)},
			},
			UpdateQERs: []UpdateQER{
				{ID: 1, Gate: &GateStatus{DLClosed: true}, MBR: &BitRate{UL: 1, DL: 2}, GBR: &BitRate{UL: 3, DL: 4}, QFI: ptr[uint8](5)},
			},
			UpdateBAR: &UpdateBAR{ID: 1, SuggestedBufferingPackets: ptr[uint8](10)},
			QueryURRs: []uint32{1, 2},
		},
		&SessionModificationResponse{
			Cause: CauseRequestAccepted, OffendingIE: IEUpdatePDR,
			CreatedPDRs:  []CreatedPDR{{ID: 6, LocalFTEID: &FTEID{TEID: 1234, IPv4: upfAddr}}},
			UsageReports: []UsageReport{fullUsageReport(1), fullUsageReport(2)},
			FailedRuleID: &RuleID{Type: RuleTypePDR, ID: 6},
		},
		&SessionDeletionRequest{},
		&SessionDeletionResponse{Cause: CauseSessionContextNotFound, OffendingIE: IEFSEID, UsageReports: []UsageReport{fullUsageReport(1)}},
		&SessionReportRequest{
			ReportType:         ReportDLDR | ReportUSAR,
			DownlinkDataReport: &DownlinkDataReport{PDRIDs: []uint16{2, 3}, QFIs: []uint8{9}},
			UsageReports:       []UsageReport{fullUsageReport(4)},
		},
		&SessionReportResponse{Cause: CauseRequestAccepted, OffendingIE: IEReportType},
		&SessionReportRequest{
			ReportType: ReportERIR,
			ErrorIndicationReport: &ErrorIndicationReport{RemoteFTEIDs: []FTEID{
				{TEID: 0xa0b0c0d0, IPv4: gnbAddr}, {TEID: 7, IPv4: netip.MustParseAddr("10.100.3.9")},
			}},
		},
		&NodeReportRequest{
			NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPFR | NodeReportUPRR,
			PathFailurePeers:  []netip.Addr{gnbAddr, netip.MustParseAddr("2001:db8::5")},
			PathRecoveryPeers: []netip.Addr{netip.MustParseAddr("10.100.3.9")},
		},
		&NodeReportResponse{NodeID: NodeID{IP: smfAddr}, Cause: CauseRequestAccepted, OffendingIE: IENodeReportType},
	}
}

func TestRoundTripEveryMessage(t *testing.T) {
	for i, m := range fullMessages() {
		seid := uint64(0xdeadbeef00 + i)
		b, err := Encode(m, uint32(0xabcdef-i), seid)
		if err != nil {
			t.Fatalf("%T: encode: %v", m, err)
		}
		hdr, got, err := Decode(b)
		if err != nil {
			t.Fatalf("%T: decode: %v", m, err)
		}
		if hdr.Type != m.MessageType() || hdr.Seq != uint32(0xabcdef-i) {
			t.Errorf("%T: header %+v", m, hdr)
		}
		if isSessionMessage(hdr.Type) != hdr.HasSEID || (hdr.HasSEID && hdr.SEID != seid) {
			t.Errorf("%T: SEID in header %+v", m, hdr)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%T round trip:\n got %+v\nwant %+v", m, got, m)
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	if _, err := Encode(&HeartbeatRequest{}, 1<<24, 0); err == nil {
		t.Error("25-bit sequence number accepted")
	}
	if _, err := Encode(&AssociationSetupRequest{RecoveryTime: t0}, 1, 0); err == nil {
		t.Error("empty Node ID accepted")
	}
	if _, err := Encode(nil, 1, 0); err == nil {
		t.Error("nil message accepted")
	}
}

// TestCrossDecodeGoPFCP checks our encodings with go-pfcp's own message
// parsers, and decodes go-pfcp-built messages with ours.
func TestCrossDecodeGoPFCP(t *testing.T) {
	for _, m := range fullMessages() {
		b, err := Encode(m, 7, 0x55)
		if err != nil {
			t.Fatal(err)
		}
		gm, err := message.Parse(b)
		if err != nil {
			t.Fatalf("%T: go-pfcp parse: %v", m, err)
		}
		if gm.MessageType() != m.MessageType() || gm.Sequence() != 7 {
			t.Errorf("%T: go-pfcp sees type %d seq %d", m, gm.MessageType(), gm.Sequence())
		}
	}

	b, _ := Encode(fullMessages()[7], 1, 0)
	req, err := message.ParseSessionEstablishmentRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.CreatePDR) != 3 || len(req.CreateFAR) != 2 || len(req.CreateQER) != 2 || len(req.CreateURR) != 1 {
		t.Fatalf("go-pfcp counts: %d PDR %d FAR %d QER %d URR", len(req.CreatePDR), len(req.CreateFAR), len(req.CreateQER), len(req.CreateURR))
	}
	nid, _ := req.NodeID.NodeID()
	fs, _ := req.CPFSEID.FSEID()
	if nid != "10.0.0.1" || fs.SEID != 0x1122334455667788 || !fs.IPv4Address.Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("go-pfcp node %q fseid %+v", nid, fs)
	}
	// CreatePDR.FTEID() does not look inside PDI: descend.
	pdi, err := req.CreatePDR[0].PDI()
	if err != nil {
		t.Fatal(err)
	}
	var teid uint32
	var ni, fd string
	for _, x := range pdi {
		switch x.Type {
		case ie.FTEID:
			f, _ := x.FTEID()
			teid = f.TEID
		case ie.NetworkInstance:
			ni, _ = x.NetworkInstanceFQDN()
		case ie.SDFFilter:
			if fd == "" {
				f, _ := x.SDFFilter()
				fd = f.FlowDescription
			}
		}
	}
	if teid != 0x01020304 || ni != "internet" || fd != "permit out ip from any to assigned" {
		t.Errorf("go-pfcp PDI: teid %#x ni %q fd %q", teid, ni, fd)
	}
	if aa, _ := req.CreateFAR[1].ApplyAction(); len(aa) != 2 || aa[0] != 0x0c || aa[1] != 0x02 {
		t.Errorf("apply action octets %x", aa)
	}
	if ul, _ := req.CreateQER[0].MBRUL(); ul != 1_000_000 {
		t.Errorf("go-pfcp MBR UL %d", ul)
	}

	// The other direction: a go-pfcp-built request through our decoder.
	gb, err := message.NewSessionEstablishmentRequest(0, 0, 0, 9, 0,
		ie.NewNodeID("10.0.0.9", "", ""),
		ie.NewFSEID(5, net.ParseIP("10.0.0.9"), nil),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(200),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
				ie.NewFTEID(0x0d, 0, nil, nil, 1), // CH, CHID, V4
				ie.NewNetworkInstance("internet"),
				ie.NewUEIPAddress(0x02, "10.60.0.1", "", 0, 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(1)),
		ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x02),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
	).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hdr, got, err := Decode(gb)
	if err != nil {
		t.Fatal(err)
	}
	want := &SessionEstablishmentRequest{
		NodeID:  NodeID{IP: netip.MustParseAddr("10.0.0.9")},
		CPFSEID: FSEID{SEID: 5, IPv4: netip.MustParseAddr("10.0.0.9")},
		CreatePDRs: []CreatePDR{{ID: 1, Precedence: 200, PDI: PDI{
			SourceInterface: InterfaceAccess, FTEID: &FTEID{Choose: true, ChooseID: 1}, NetworkInstance: "internet",
			UEIP: &UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.1")}},
			OuterHeaderRemoval: ptr[uint8](0), FARID: 1}},
		CreateFARs: []CreateFAR{{ID: 1, ApplyAction: ActionForward, Forwarding: &ForwardingParameters{Destination: InterfaceCore}}},
	}
	if hdr.Seq != 9 || !reflect.DeepEqual(got, want) {
		t.Errorf("go-pfcp request decoded as %+v (hdr %+v)", got, hdr)
	}
}

// TestUpdateForwardingParametersOnTheWire checks the Update FAR of a handover
// (TS 23.502 §4.9.1.2.2 step 6) as go-pfcp reads it: Update Forwarding
// Parameters (IE type 11, not Forwarding Parameters, type 4) with the new
// Outer Header Creation and PFCPSMReq-Flags SNDEM (IE type 49, §8.2.31); and
// go-pfcp's encoding of the same through our decoder.
func TestUpdateForwardingParametersOnTheWire(t *testing.T) {
	ohc := &OuterHeaderCreation{Description: OuterHeaderCreationGTPUUDPIPv4, TEID: 0x77, IPv4: gnbAddr}
	req := &SessionModificationRequest{UpdateFARs: []UpdateFAR{{ID: 2,
		Forwarding: &UpdateForwardingParameters{NoDestination: true, OuterHeaderCreation: ohc, SendEndMarker: true}}}}
	b, err := Encode(req, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := message.ParseSessionModificationRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(gm.UpdateFAR) != 1 {
		t.Fatalf("go-pfcp sees %d Update FARs", len(gm.UpdateFAR))
	}
	kids, err := gm.UpdateFAR[0].UpdateFAR()
	if err != nil {
		t.Fatal(err)
	}
	var ufp *ie.IE
	for _, k := range kids {
		if k.Type == ie.ForwardingParameters {
			t.Error("Update FAR carries Forwarding Parameters (type 4)")
		}
		if k.Type == ie.UpdateForwardingParameters {
			ufp = k
		}
	}
	if ufp == nil || ufp.Type != 11 {
		t.Fatalf("no Update Forwarding Parameters (type 11) in %+v", kids)
	}
	members, err := ufp.UpdateForwardingParameters()
	if err != nil {
		t.Fatal(err)
	}
	var sndem, dest bool
	var teid uint32
	for _, k := range members {
		switch k.Type {
		case ie.PFCPSMReqFlags:
			sndem = k.HasSNDEM() && !k.HasDROBU() && !k.HasQAURR()
		case ie.DestinationInterface:
			dest = true
		case ie.OuterHeaderCreation:
			o, err := k.OuterHeaderCreation()
			if err != nil {
				t.Fatal(err)
			}
			teid = o.TEID
		}
	}
	if !sndem || dest || teid != 0x77 {
		t.Errorf("go-pfcp sees SNDEM %v, destination interface %v, TEID %#x", sndem, dest, teid)
	}

	// go-pfcp's encoding, with other PFCPSMReq-Flags bits and no
	// Destination Interface, through our decoder.
	gb, err := message.NewSessionModificationRequest(0, 0, 9, 3, 0,
		ie.NewUpdateFAR(ie.NewFARID(2),
			ie.NewUpdateForwardingParameters(
				ie.NewOuterHeaderCreation(0x0100, 0x77, "10.100.3.1", "", 0, 0, 0),
				ie.NewPFCPSMReqFlags(0x01|0x02))), // DROBU|SNDEM
		ie.NewUpdateFAR(ie.NewFARID(3),
			ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore), ie.NewPFCPSMReqFlags(0x04))),
	).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := Decode(gb)
	if err != nil {
		t.Fatal(err)
	}
	want := &SessionModificationRequest{UpdateFARs: []UpdateFAR{
		{ID: 2, Forwarding: &UpdateForwardingParameters{NoDestination: true, OuterHeaderCreation: ohc, SendEndMarker: true}},
		{ID: 3, Forwarding: &UpdateForwardingParameters{Destination: InterfaceCore}},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("decoded %+v\nwant %+v", m.(*SessionModificationRequest).UpdateFARs, want.UpdateFARs)
	}
	// A PFCPSMReq-Flags IE without its octet is refused.
	bad := encodeRaw(t, MsgSessionModificationRequest, 1, ie.NewUpdateFAR(ie.NewFARID(2),
		ie.NewUpdateForwardingParameters(ie.New(ie.PFCPSMReqFlags, nil))))
	var ieErr *IEError
	if _, _, err := Decode(bad); !errors.As(err, &ieErr) || ieErr.OffendingIE != ie.PFCPSMReqFlags {
		t.Errorf("empty PFCPSMReq-Flags: %v", err)
	}
}

// TestDownlinkDataReportOnTheWire checks the Session Report Request of a
// buffering UPF (§7.5.8.2) as go-pfcp reads it: the PDR ID and a Downlink
// Data Service Information (§8.2.27) with the QFII flag and the QFI.
func TestDownlinkDataReportOnTheWire(t *testing.T) {
	b, err := Encode(&SessionReportRequest{ReportType: ReportDLDR,
		DownlinkDataReport: &DownlinkDataReport{PDRIDs: []uint16{2}, QFIs: []uint8{9}}}, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := message.ParseSessionReportRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if gm.DownlinkDataReport == nil {
		t.Fatal("no Downlink Data Report")
	}
	kids, err := gm.DownlinkDataReport.DownlinkDataReport()
	if err != nil {
		t.Fatal(err)
	}
	var pdr uint16
	var dsi []byte
	for _, k := range kids {
		switch k.Type {
		case ie.PDRID:
			pdr, _ = k.PDRID()
		case ie.DownlinkDataServiceInformation:
			dsi = k.Payload
		}
	}
	// Octet 5: QFII (bit 2) without PPI; then the QFI.
	if pdr != 2 || !bytes.Equal(dsi, []byte{0x02, 9}) {
		t.Errorf("go-pfcp sees PDR %d, DL Data Service Information % x", pdr, dsi)
	}
}

// TestNodeReportOnTheWire checks a User Plane Path Failure Report (§7.4.5.1)
// as go-pfcp reads it: Node Report Type with UPFR, and a Remote GTP-U Peer
// (§8.2.70) with the V4 flag and the gNB address.
func TestNodeReportOnTheWire(t *testing.T) {
	b, err := Encode(&NodeReportRequest{NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPFR,
		PathFailurePeers: []netip.Addr{gnbAddr}}, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := message.ParseNodeReportRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if gm.NodeReportType == nil || gm.UserPlanePathFailureReport == nil {
		t.Fatalf("go-pfcp sees no Node Report Type or no path failure report: %+v", gm)
	}
	if typ, err := gm.NodeReportType.NodeReportType(); err != nil || typ != 0x01 {
		t.Errorf("Node Report Type %#x %v, want UPFR", typ, err)
	}
	kids, err := gm.UserPlanePathFailureReport.UserPlanePathFailureReport()
	if err != nil || len(kids) != 1 {
		t.Fatalf("path failure report members %v %v", kids, err)
	}
	peer, err := kids[0].RemoteGTPUPeer()
	if err != nil || !peer.IPv4Address.Equal(net.IP(gnbAddr.AsSlice())) {
		t.Errorf("remote GTP-U peer %+v %v, want %s", peer, err, gnbAddr)
	}
	// A report type whose report is missing is a conditional IE error.
	raw := encodeRaw(t, MsgNodeReportRequest, 0, ie.NewNodeID(upfAddr.String(), "", ""), ie.NewNodeReportType(0x01))
	var ieErr *IEError
	if _, _, err := Decode(raw); !errors.As(err, &ieErr) || ieErr.Cause != CauseConditionalIEMissing ||
		ieErr.OffendingIE != IEUserPlanePathFailureReport {
		t.Errorf("UPFR without the report: %v", err)
	}
	// A Remote GTP-U Peer without an address flag is malformed.
	raw = encodeRaw(t, MsgNodeReportRequest, 0, ie.NewNodeID(upfAddr.String(), "", ""), ie.NewNodeReportType(0x01),
		ie.NewGroupedIE(ie.UserPlanePathFailureReport, ie.New(ie.RemoteGTPUPeer, []byte{0})))
	if _, _, err := Decode(raw); !errors.As(err, &ieErr) || ieErr.OffendingIE != IERemoteGTPUPeer {
		t.Errorf("peer without address: %v", err)
	}
}

// TestErrorIndicationReportOnTheWire checks §7.5.8.4 as go-pfcp reads it:
// the Remote F-TEID with the gNB's TEID and address.
func TestErrorIndicationReportOnTheWire(t *testing.T) {
	b, err := Encode(&SessionReportRequest{ReportType: ReportERIR,
		ErrorIndicationReport: &ErrorIndicationReport{RemoteFTEIDs: []FTEID{{TEID: 0x55, IPv4: gnbAddr}}}}, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := message.ParseSessionReportRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if gm.ErrorIndicationReport == nil {
		t.Fatal("no Error Indication Report")
	}
	kids, err := ie.ParseMultiIEs(gm.ErrorIndicationReport.Payload)
	if err != nil || len(kids) != 1 || kids[0].Type != ie.FTEID {
		t.Fatalf("Error Indication Report members %v %v", kids, err)
	}
	f, err := kids[0].FTEID()
	if err != nil || f.TEID != 0x55 || !f.IPv4Address.Equal(net.IP(gnbAddr.AsSlice())) {
		t.Errorf("go-pfcp sees remote F-TEID %+v %v", f, err)
	}
	// The Remote F-TEID is mandatory in the report.
	raw := encodeRaw(t, MsgSessionReportRequest, 5, ie.NewReportType(0, 0, 1, 0), ie.NewGroupedIE(ie.ErrorIndicationReport, ie.NewPDRID(1)))
	var ieErr *IEError
	if _, _, err := Decode(raw); !errors.As(err, &ieErr) || ieErr.Cause != CauseMandatoryIEMissing || ieErr.OffendingIE != IEFTEID {
		t.Errorf("report without Remote F-TEID: %v", err)
	}
}

// encodeRaw builds a message from go-pfcp IEs, bypassing our encoder's
// guarantees, to feed the decoder what a faulty peer could send.
func encodeRaw(t *testing.T, typ uint8, seid uint64, ies ...*ie.IE) []byte {
	t.Helper()
	var payload []byte
	for _, x := range ies {
		b, err := x.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		payload = append(payload, b...)
	}
	var h *message.Header
	if isSessionMessage(typ) {
		h = message.NewHeaderSessionRelated(1, 0, 0, 1, typ, seid, 3, 0, payload)
	} else {
		h = message.NewHeaderNodeRelated(1, typ, 3, payload)
	}
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMandatoryIEChecks(t *testing.T) {
	nodeID := ie.NewNodeID("10.0.0.1", "", "")
	fseid := ie.NewFSEID(1, net.ParseIP("10.0.0.1"), nil)
	pdi := ie.NewPDI(ie.NewSourceInterface(0))
	pdr := ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(1), pdi)
	far := ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(2))
	rts := ie.NewRecoveryTimeStamp(t0)
	cases := []struct {
		name  string
		b     []byte
		cause Cause
		ie    uint16
	}{
		{"heartbeat no recovery", encodeRaw(t, MsgHeartbeatRequest, 0), CauseMandatoryIEMissing, IERecoveryTimeStamp},
		{"assoc no node id", encodeRaw(t, MsgAssociationSetupRequest, 0, rts), CauseMandatoryIEMissing, IENodeID},
		{"assoc node id short", encodeRaw(t, MsgAssociationSetupRequest, 0, ie.New(ie.NodeID, []byte{0, 10}), rts),
			CauseMandatoryIEIncorrect, IENodeID},
		{"assoc node id bad type", encodeRaw(t, MsgAssociationSetupRequest, 0, ie.New(ie.NodeID, []byte{7, 1, 2, 3, 4}), rts),
			CauseMandatoryIEIncorrect, IENodeID},
		{"release no node id", encodeRaw(t, MsgAssociationReleaseRequest, 0), CauseMandatoryIEMissing, IENodeID},
		{"est no node id", encodeRaw(t, MsgSessionEstablishmentRequest, 0, fseid, pdr, far), CauseMandatoryIEMissing, IENodeID},
		{"est no fseid", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, pdr, far), CauseMandatoryIEMissing, IEFSEID},
		{"est fseid short", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, ie.New(ie.FSEID, []byte{2, 0, 0}), pdr, far),
			CauseMandatoryIEIncorrect, IEFSEID},
		{"est no pdr", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, far), CauseMandatoryIEMissing, IECreatePDR},
		{"est no far", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr), CauseMandatoryIEMissing, IECreateFAR},
		{"pdr no id", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid,
			ie.NewCreatePDR(ie.NewPrecedence(1), pdi), far), CauseMandatoryIEMissing, IEPDRID},
		{"pdr no precedence", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid,
			ie.NewCreatePDR(ie.NewPDRID(1), pdi), far), CauseMandatoryIEMissing, IEPrecedence},
		{"pdr no pdi", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid,
			ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(1)), far), CauseMandatoryIEMissing, IEPDI},
		{"pdi no source", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid,
			ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(1), ie.NewPDI(ie.NewQFI(1))), far), CauseMandatoryIEMissing, IESourceInterface},
		{"pdi fteid short", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid,
			ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(1), ie.NewPDI(ie.NewSourceInterface(0), ie.New(ie.FTEID, []byte{1, 0}))), far),
			CauseMandatoryIEIncorrect, IEFTEID},
		{"far no apply action", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr,
			ie.NewCreateFAR(ie.NewFARID(1))), CauseMandatoryIEMissing, IEApplyAction},
		{"forwarding no destination", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr,
			ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(2), ie.NewForwardingParameters(ie.NewNetworkInstance("x")))),
			CauseMandatoryIEMissing, IEDestinationInterface},
		{"qer no gate", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr, far,
			ie.NewCreateQER(ie.NewQERID(1))), CauseMandatoryIEMissing, IEGateStatus},
		{"urr no triggers", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr, far,
			ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0))), CauseMandatoryIEMissing, IEReportingTriggers},
		{"bar no id", encodeRaw(t, MsgSessionEstablishmentRequest, 0, nodeID, fseid, pdr, far,
			ie.NewCreateBAR(ie.NewSuggestedBufferingPacketsCount(3))), CauseMandatoryIEMissing, IEBARID},
		{"mod update far no id", encodeRaw(t, MsgSessionModificationRequest, 1,
			ie.NewUpdateFAR(ie.NewApplyAction(2))), CauseMandatoryIEMissing, IEFARID},
		{"mod remove pdr empty", encodeRaw(t, MsgSessionModificationRequest, 1, ie.NewRemovePDR(nil)), CauseMandatoryIEMissing, IEPDRID},
		{"mod query urr empty", encodeRaw(t, MsgSessionModificationRequest, 1, ie.NewQueryURR(nil)), CauseMandatoryIEMissing, IEURRID},
		{"report no type", encodeRaw(t, MsgSessionReportRequest, 1), CauseMandatoryIEMissing, IEReportType},
		{"report usage no seqn", encodeRaw(t, MsgSessionReportRequest, 1, ie.NewReportType(0, 0, 1, 0),
			ie.NewUsageReportWithinSessionReportRequest(ie.NewURRID(1), ie.NewUsageReportTrigger(1, 0, 0))),
			CauseMandatoryIEMissing, 104},
		{"response no cause", encodeRaw(t, MsgSessionDeletionResponse, 1), CauseMandatoryIEMissing, IECause},
	}
	for _, c := range cases {
		hdr, m, err := Decode(c.b)
		var ieErr *IEError
		if !errors.As(err, &ieErr) {
			t.Errorf("%s: err %v, want *IEError", c.name, err)
			continue
		}
		if ieErr.Cause != c.cause || ieErr.OffendingIE != c.ie {
			t.Errorf("%s: got cause %d IE %d, want %d IE %d (%v)", c.name, ieErr.Cause, ieErr.OffendingIE, c.cause, c.ie, err)
		}
		if m == nil || hdr.Type != c.b[1] || hdr.Seq != 3 {
			t.Errorf("%s: header %+v message %v", c.name, hdr, m)
		}
	}
	// A partial message carries what was decoded before the problem.
	_, m, _ := Decode(cases[8].b)
	if r := m.(*SessionEstablishmentRequest); r.CPFSEID.SEID != 1 || len(r.CreateFARs) != 1 {
		t.Errorf("partial establishment %+v", r)
	}
}

func TestMalformedInput(t *testing.T) {
	valid := make([][]byte, 0, 16)
	for _, m := range fullMessages() {
		b, err := Encode(m, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		valid = append(valid, b)
	}
	// Truncations: never a panic; a cut header or length is ErrTruncated /
	// ErrBadLength.
	for _, b := range valid {
		for n := 0; n < len(b); n++ {
			_, _, err := Decode(b[:n])
			if err == nil {
				t.Fatalf("type %d cut to %d octets decoded", b[1], n)
			}
			if n < 8 && !errors.Is(err, ErrTruncated) {
				t.Fatalf("cut to %d: %v", n, err)
			}
		}
	}
	// Length field larger or smaller than the message.
	b := append([]byte(nil), valid[7]...)
	b[2], b[3] = 0xff, 0xff
	if _, _, err := Decode(b); !errors.Is(err, ErrBadLength) {
		t.Errorf("long length: %v", err)
	}
	b[2], b[3] = 0, 4
	if _, _, err := Decode(b); !errors.Is(err, ErrBadLength) {
		t.Errorf("short length: %v", err)
	}
	// An IE whose length runs past the message: Invalid Length on that IE.
	b = append([]byte(nil), valid[0]...)
	b[8+3] = 200
	var ieErr *IEError
	if _, _, err := Decode(b); !errors.As(err, &ieErr) || ieErr.Cause != CauseInvalidLength || ieErr.OffendingIE != IERecoveryTimeStamp {
		t.Errorf("overlong IE: %v", err)
	}
	// Unknown message type and other versions.
	hdr, m, err := Decode([]byte{0x20, 200, 0, 4, 0, 0, 9, 0})
	if !errors.Is(err, ErrUnknownMessageType) || m != nil || hdr.Type != 200 || hdr.Seq != 9 {
		t.Errorf("unknown type: %v %+v", err, hdr)
	}
	hdr, _, err = Decode([]byte{0x40, 1, 0, 4, 0, 0, 9, 0})
	if !errors.Is(err, ErrVersionNotSupported) || hdr.Seq != 9 {
		t.Errorf("version 2: %v %+v", err, hdr)
	}
	// S flag on a node message.
	if _, _, err := Decode([]byte{0x21, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}); err == nil {
		t.Error("node message with SEID accepted")
	}
	// Byte flips everywhere in every message: no panic.
	for _, v := range valid {
		for i := range v {
			for _, x := range []byte{0xff, 0x00, 0x80, 0x01} {
				b := append([]byte(nil), v...)
				b[i] ^= x
				_, _, _ = Decode(b)
			}
		}
	}
}

func TestVersionNotSupportedEncoding(t *testing.T) {
	b := EncodeVersionNotSupported(0x123456)
	hdr, m, err := Decode(b)
	if err != nil || hdr.Type != MsgVersionNotSupportedResponse || hdr.Seq != 0x123456 || hdr.HasSEID {
		t.Fatalf("%+v %v %v", hdr, m, err)
	}
	if _, err := message.ParseVersionNotSupportedResponse(b); err != nil {
		t.Errorf("go-pfcp: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for i, m := range fullMessages() {
		b, err := Encode(m, uint32(i), uint64(i))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x20, 1, 0, 4, 0, 0, 1, 0})
	// Update FAR with Update Forwarding Parameters: Outer Header Creation
	// and PFCPSMReq-Flags (DROBU|SNDEM), no Destination Interface.
	gb, err := message.NewSessionModificationRequest(0, 0, 9, 3, 0,
		ie.NewUpdateFAR(ie.NewFARID(2), ie.NewUpdateForwardingParameters(
			ie.NewOuterHeaderCreation(0x0100, 0x77, "10.100.3.1", "", 0, 0, 0), ie.NewPFCPSMReqFlags(0x03)))).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gb)
	f.Fuzz(func(t *testing.T, b []byte) {
		hdr, m, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes cleanly must encode again and decode to the same.
		out, err := Encode(m, hdr.Seq, hdr.SEID)
		if err != nil {
			return // e.g. an empty FQDN Node ID cannot be re-encoded
		}
		_, m2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", m, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encode changed %T:\n%+v\n%+v", m, m, m2)
		}
	})
}

// TestRuleIDZero: rule IDs have no reserved value (§8.2.36, §8.2.54,
// §8.2.74, §8.2.75), so 0 goes on the wire and comes back, and a Create
// PDR without FAR ID is told apart from one naming FAR 0.
func TestRuleIDZero(t *testing.T) {
	req := &SessionEstablishmentRequest{
		NodeID:  NodeID{IP: smfAddr},
		CPFSEID: FSEID{SEID: 1, IPv4: smfAddr},
		CreatePDRs: []CreatePDR{
			{ID: 0, Precedence: 1, PDI: PDI{SourceInterface: InterfaceAccess}, FARID: 0, QERIDs: []uint32{0}, URRIDs: []uint32{0}},
			{ID: 1, Precedence: 1, PDI: PDI{SourceInterface: InterfaceCore}, NoFARID: true},
		},
		CreateFARs: []CreateFAR{{ID: 0, ApplyAction: ActionDrop}},
		CreateQERs: []CreateQER{{ID: 0}},
		CreateURRs: []CreateURR{{ID: 0, Method: MethodVolume}},
	}
	b, err := Encode(req, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Errorf("decoded %+v, want %+v", got, req)
	}
	var raw message.SessionEstablishmentRequest
	if err := raw.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if id, err := raw.CreatePDR[0].FARID(); err != nil || id != 0 {
		t.Errorf("FAR ID 0 on the wire: %d, %v", id, err)
	}
	if _, err := raw.CreatePDR[1].FARID(); err == nil {
		t.Error("a PDR without FAR ID got one on the wire")
	}
}

// TestSDFFilterTernCannotHonour: an SDF filter is matched by its flow
// description only, so one without it, or with a ToS, SPI or flow label,
// is refused with its IE rather than widened to match everything (found by
// FuzzDecode: an empty filter decoded and then could not be re-encoded).
func TestSDFFilterTernCannotHonour(t *testing.T) {
	for name, f := range map[string]*ie.IE{
		"empty":          ie.NewSDFFilter("", "", "", "", 0),
		"tos only":       ie.NewSDFFilter("", "0a0b", "", "", 0),
		"fd and spi":     ie.NewSDFFilter("permit out ip from any to assigned", "", "00000001", "", 0),
		"fd and a label": ie.NewSDFFilter("permit out ip from any to assigned", "", "", "000001", 0),
	} {
		b, err := message.NewSessionEstablishmentRequest(0, 0, 0, 9, 0,
			ie.NewNodeID("10.0.0.9", "", ""), ie.NewFSEID(5, net.ParseIP("10.0.0.9"), nil),
			ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(200),
				ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), f), ie.NewFARID(1)),
			ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x01)),
		).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var ieErr *IEError
		if _, _, err := Decode(b); !errors.As(err, &ieErr) || ieErr.OffendingIE != ie.SDFFilter || ieErr.Cause != CauseMandatoryIEIncorrect {
			t.Errorf("%s: %v, want Mandatory IE incorrect on the SDF Filter", name, err)
		}
	}
}

// TestRestorationIndicationOnTheWire checks the PFCPSEReq-Flags IE (type
// 186, §8.2.136) of a session established again after a UP function
// restart (TS 23.527 §4.3.2): RESTI is octet 5 bit 1 as go-pfcp reads it,
// absent when not set (§7.5.2.1: present only with a flag set), and
// go-pfcp's encoding, with another flag beside it, reads back.
func TestRestorationIndicationOnTheWire(t *testing.T) {
	req := &SessionEstablishmentRequest{
		NodeID:  NodeID{IP: smfAddr},
		CPFSEID: FSEID{SEID: 5, IPv4: smfAddr},
		CreatePDRs: []CreatePDR{{ID: 1, PDI: PDI{SourceInterface: InterfaceAccess,
			FTEID: &FTEID{TEID: 0x2a, IPv4: upfAddr}}, FARID: 1}},
		CreateFARs: []CreateFAR{{ID: 1, ApplyAction: ActionDrop}},
		RESTI:      true,
	}
	for _, resti := range []bool{true, false} {
		req.RESTI = resti
		b, err := Encode(req, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		gm, err := message.ParseSessionEstablishmentRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !resti && gm.PFCPSEReqFlags != nil:
			t.Errorf("PFCPSEReq-Flags %v sent without RESTI", gm.PFCPSEReqFlags)
		case resti && (gm.PFCPSEReqFlags == nil || !gm.PFCPSEReqFlags.HasRESTI()):
			t.Errorf("go-pfcp sees PFCPSEReq-Flags %v, want RESTI", gm.PFCPSEReqFlags)
		case resti && gm.PFCPSEReqFlags.Payload[0] != 0x01:
			t.Errorf("PFCPSEReq-Flags octet %#x, want RESTI alone", gm.PFCPSEReqFlags.Payload[0])
		}
	}

	for _, c := range []struct {
		flags uint8
		want  bool
	}{{0x01 | 0x02, true}, {0x02, false}} { // RESTI|SUMPC, SUMPC alone
		gb, err := message.NewSessionEstablishmentRequest(0, 0, 0, 3, 0,
			ie.NewNodeID(smfAddr.String(), "", ""), ie.NewFSEID(5, net.ParseIP(smfAddr.String()), nil),
			ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
				ie.NewFTEID(0x01, 0x2a, net.ParseIP(upfAddr.String()), nil, 0)), ie.NewFARID(1)),
			ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x01)),
			ie.NewPFCPSEReqFlags(c.flags),
		).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, m, err := Decode(gb)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(*SessionEstablishmentRequest).RESTI; got != c.want {
			t.Errorf("flags %#x decoded as RESTI %v", c.flags, got)
		}
	}
	// A PFCPSEReq-Flags IE without its octet is refused.
	bad := encodeRaw(t, MsgSessionEstablishmentRequest, 1, ie.NewNodeID(smfAddr.String(), "", ""),
		ie.NewFSEID(5, net.ParseIP(smfAddr.String()), nil),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess)), ie.NewFARID(1)),
		ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x01)), ie.New(ie.PFCPSEReqFlags, nil))
	var ieErr *IEError
	if _, _, err := Decode(bad); !errors.As(err, &ieErr) || ieErr.OffendingIE != ie.PFCPSEReqFlags {
		t.Errorf("empty PFCPSEReq-Flags: %v", err)
	}
}
