package nas

import (
	"bytes"
	"errors"
	"math"
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/free5gc/nas/ie"
	f5 "github.com/free5gc/nas/message"
)

// Extended PCO samples (TS 24.008 §10.5.6.3): UE asks for DNS IPv4 and the
// IPv4 link MTU; the network answers 8.8.8.8 and 1500.
var (
	pcoUE = []byte{0x80, 0x00, 0x0d, 0x00, 0x00, 0x10, 0x00}
	pcoNW = []byte{0x80, 0x00, 0x0d, 0x04, 8, 8, 8, 8, 0x00, 0x10, 0x02, 0x05, 0xdc}
)

func boolp(v bool) *bool { return &v }

func sh(psi, pti uint8) SMHeader { return SMHeader{SessionID: psi, TransactionID: pti} }

// dnFilter matches UDP from/to 10.100.6.0/24 port 5000.
func dnFilter(t testing.TB, id, dir uint8) PacketFilter {
	f, err := IPv4RemoteFilter(id, dir, netip.MustParsePrefix("10.100.6.0/24"), 17, 5000)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sampleSMMessages covers every 5GSM message and Service Reject. Those
// marked noF5 use IE codings free5gc/nas v1.3.0 mis-parses (it reads the
// "modify and delete packet filters" list as full filters).
func sampleSMMessages(t testing.TB) (msgs []Message, noF5 map[int]bool) {
	slice := tSlice
	return []Message{
		&PDUSessionEstablishmentRequest{
			SMHeader: sh(5, 1), IntegrityMaxDataRate: [2]byte{IntegrityMaxRateFull, IntegrityMaxRateFull},
			PDUSessionType: PDUSessionTypeIPv4, SSCMode: SSCMode1, Capability5GSM: []byte{0x01},
			MaxPacketFilters: 0x3FF, AlwaysOnRequested: true, ExtendedPCO: pcoUE,
		},
		&PDUSessionEstablishmentRequest{SMHeader: sh(1, 2)},
		&PDUSessionEstablishmentAccept{
			SMHeader: sh(5, 1), PDUSessionType: PDUSessionTypeIPv4, SSCMode: SSCMode2,
			QoSRules: []QoSRule{
				{ID: 1, Operation: QoSRuleCreate, Default: true, Filters: []PacketFilter{MatchAllFilter(1, FilterBidirectional)}, Precedence: 255, QFI: 1},
				{ID: 2, Operation: QoSRuleCreate, Filters: []PacketFilter{dnFilter(t, 2, FilterDownlink), dnFilter(t, 3, FilterUplink)}, Precedence: 10, Segregation: true, QFI: 2},
			},
			SessionAMBR: SessionAMBR{DL: 1_000_000_000, UL: 500_000_000},
			Cause:       CausePDUSessionTypeIPv4OnlyAllowed,
			PDUAddress:  &PDUAddress{Type: PDUSessionTypeIPv4, IPv4: netip.MustParseAddr("10.60.0.1")},
			SNSSAI:      &slice, AlwaysOn: boolp(false), EAPMessage: []byte{3, 1, 0, 4},
			QoSFlowDescriptions: []QoSFlowDescription{
				{QFI: 1, Operation: QoSFlowCreate, FiveQI: 9},
				{QFI: 2, Operation: QoSFlowCreate, FiveQI: 1, GFBR: &BitRates{UL: 64_000, DL: 128_000},
					MFBR: &BitRates{UL: 1_000_000, DL: 2_000_000}, AveragingWindow: 2000, EPSBearerIDs: []uint8{5}},
			},
			ExtendedPCO: pcoNW, DNN: "internet",
		},
		&PDUSessionEstablishmentAccept{
			SMHeader: sh(15, 254), PDUSessionType: PDUSessionTypeIPv4v6, SSCMode: SSCMode3,
			QoSRules:    []QoSRule{{ID: 1, Operation: QoSRuleCreate, Default: true, Filters: []PacketFilter{MatchAllFilter(1, FilterBidirectional)}, Precedence: 255, QFI: 9}},
			SessionAMBR: SessionAMBR{DL: 100_000, UL: 1_000},
			PDUAddress:  &PDUAddress{Type: PDUSessionTypeIPv4v6, IPv4: netip.MustParseAddr("10.61.255.254"), IPv6InterfaceID: [8]byte{0, 0, 0, 0, 0, 0, 0, 1}},
		},
		&PDUSessionEstablishmentReject{
			SMHeader: sh(5, 1), Cause: CauseMissingOrUnknownDNN, BackoffTimer: &GPRSTimer3{Unit: Timer3Unit1Min, Value: 5},
			AllowedSSCModes: 1, EAPMessage: []byte{4, 1, 0, 4}, ExtendedPCO: pcoNW,
		},
		&PDUSessionEstablishmentReject{SMHeader: sh(5, 1), Cause: CauseInsufficientResources5GSM},
		&PDUSessionModificationRequest{
			SMHeader: sh(5, 3), Capability5GSM: []byte{0x01}, Cause: CauseQoSNotAccepted, MaxPacketFilters: 16,
			AlwaysOnRequested: true, IntegrityMaxDataRate: &[2]byte{IntegrityMaxRateFull, IntegrityMaxRate64kbps},
			RequestedQoSRules:            []QoSRule{{ID: 3, Operation: QoSRuleCreate, Filters: []PacketFilter{dnFilter(t, 1, FilterBidirectional)}, Precedence: 20, QFI: 3}},
			RequestedQoSFlowDescriptions: []QoSFlowDescription{{QFI: 3, Operation: QoSFlowCreate, FiveQI: 5}},
			ExtendedPCO:                  pcoUE,
		},
		&PDUSessionModificationRequest{SMHeader: sh(5, 4)},
		&PDUSessionModificationReject{SMHeader: sh(5, 3), Cause: CauseRequestRejectedUnspecified, BackoffTimer: &GPRSTimer3{Unit: Timer3Unit2Sec, Value: 10}, ExtendedPCO: pcoNW},
		&PDUSessionModificationReject{SMHeader: sh(5, 3), Cause: CauseInsufficientResourcesForSliceAndDNN},
		&PDUSessionModificationCommand{
			SMHeader: sh(5, 0), Cause: CauseReactivationRequested,
			SessionAMBR: &SessionAMBR{DL: 2_000_000_000, UL: 1_000_000_000}, AlwaysOn: boolp(true),
			QoSRules: []QoSRule{
				{ID: 2, Operation: QoSRuleDelete},
				{ID: 1, Operation: QoSRuleModifyWithoutFilters, Default: true, Precedence: 254, QFI: 1},
				{ID: 4, Operation: QoSRuleModifyReplaceFilters, Filters: []PacketFilter{dnFilter(t, 4, FilterUplink)}, Precedence: 30, QFI: 4},
			},
			QoSFlowDescriptions: []QoSFlowDescription{
				{QFI: 2, Operation: QoSFlowDelete},
				{QFI: 1, Operation: QoSFlowModify, E: true, FiveQI: 8, MFBR: &BitRates{UL: 4_000_000_000, DL: 16_000_000_000}},
			},
			ExtendedPCO: pcoNW,
		},
		&PDUSessionModificationCommand{
			SMHeader: sh(5, 0),
			QoSRules: []QoSRule{{ID: 3, Operation: QoSRuleModifyDeleteFilters, Filters: []PacketFilter{{ID: 1}, {ID: 2}}, Precedence: 5, QFI: 3}},
		},
		&PDUSessionModificationCommand{SMHeader: sh(5, 0)},
		&PDUSessionModificationComplete{SMHeader: sh(5, 0), ExtendedPCO: pcoUE},
		&PDUSessionModificationComplete{SMHeader: sh(5, 0)},
		&PDUSessionModificationCommandReject{SMHeader: sh(5, 0), Cause: CauseSemanticErrorInQoSOperation, ExtendedPCO: pcoUE},
		&PDUSessionReleaseRequest{SMHeader: sh(5, 7), Cause: CauseRegularDeactivation, ExtendedPCO: pcoUE},
		&PDUSessionReleaseRequest{SMHeader: sh(5, 7)},
		&PDUSessionReleaseReject{SMHeader: sh(5, 7), Cause: CauseInvalidPDUSessionIdentity, ExtendedPCO: pcoNW},
		&PDUSessionReleaseCommand{
			SMHeader: sh(5, 7), Cause: CauseRegularDeactivation, BackoffTimer: &GPRSTimer3{Unit: Timer3UnitDeactivated},
			EAPMessage: []byte{4, 2, 0, 4}, ExtendedPCO: pcoNW, AccessType: Access3GPP,
		},
		&PDUSessionReleaseCommand{SMHeader: sh(5, 0), Cause: CauseNetworkFailure},
		&PDUSessionReleaseComplete{SMHeader: sh(5, 7), Cause: CauseRequestRejectedUnspecified, ExtendedPCO: pcoUE},
		&PDUSessionReleaseComplete{SMHeader: sh(5, 7)},
		&Status5GSM{SMHeader: sh(5, 7), Cause: CauseMessageTypeNonExistent5GSM},
		&ServiceReject{Cause: CauseCongestion, PDUSessionStatus: u16(0x0022), T3346: &GPRSTimer2{Unit: 1, Value: 5},
			EAPMessage: []byte{4, 3, 0, 4}, T3448: &GPRSTimer2{Unit: 0, Value: 10}},
		&ServiceReject{Cause: CauseUEIdentityCannotBeDerived},
	}, map[int]bool{11: true}
}

func TestSMRoundTrip(t *testing.T) {
	msgs, noF5 := sampleSMMessages(t)
	seen := map[MsgType]bool{}
	for i, m := range msgs {
		seen[m.MessageType()] = true
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode %T: %v", m, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode %T (% x): %v", m, b, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%d %T round trip:\n got %+v\nwant %+v", i, m, got, m)
		}
		sm, isSM := m.(SMMessage)
		if !isSM {
			if _, err := DecodeSM(b); !errors.Is(err, ErrNot5GSM) {
				t.Errorf("DecodeSM of a 5GMM message: %v", err)
			}
			if x, err := f5.ParseGMM(b); err != nil || uint8(x.MsgType()) != uint8(m.MessageType()) {
				t.Errorf("free5gc reads our %T (% x) as %v, %v", m, b, x, err)
			}
			continue
		}
		got2, err := DecodeSM(b)
		if err != nil || !reflect.DeepEqual(got2, m) {
			t.Errorf("DecodeSM %T: %v", m, err)
		}
		if got2 != nil && (got2.PDUSessionID() != sm.PDUSessionID() || got2.PTI() != sm.PTI()) {
			t.Errorf("%T header %d/%d", m, got2.PDUSessionID(), got2.PTI())
		}
		if b2, err := EncodeSM(sm); err != nil || !bytes.Equal(b2, b) {
			t.Errorf("EncodeSM %T differs: %v", m, err)
		}
		if noF5[i] {
			continue
		}
		x, err := parseF5GSM(b)
		if err != nil {
			t.Errorf("free5gc rejects our %T (% x): %v", m, b, err)
			continue
		}
		if uint8(x.MsgType()) != uint8(m.MessageType()) || x.PDUSessionID() != sm.PDUSessionID() || x.ProcedureTransactionID() != sm.PTI() {
			t.Errorf("free5gc reads %v %d/%d for %T", x.MsgType(), x.PDUSessionID(), x.ProcedureTransactionID(), m)
		}
	}
	if len(seen) != 14 {
		t.Errorf("samples cover %d message types, want 14", len(seen))
	}
}

// parseF5GSM runs free5gc's 5GSM parser. free5gc v1.3.0 does not implement
// some type-1 IEs (always-on PDU session indication, allowed SSC mode): it
// returns the message with an IE-to-do list, which is not a rejection.
func parseF5GSM(b []byte) (f5.GSMMessage, error) {
	x, err := f5.ParseGSM(b)
	var e *f5.Error
	if err != nil && x != nil && errors.As(err, &e) && e.MACFailure == nil {
		return x, nil
	}
	return x, err
}

// TestSMFree5GCReadsOurs checks the fields free5gc decodes from our main
// 5GSM encodings.
func TestSMFree5GCReadsOurs(t *testing.T) {
	msgs, _ := sampleSMMessages(t)
	parse := func(m Message) f5.GSMMessage {
		t.Helper()
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		x, err := parseF5GSM(b)
		if err != nil {
			t.Fatalf("free5gc: %v", err)
		}
		return x
	}

	req := parse(msgs[0]).(*f5.PDUSessEstReq)
	if req.IntegrityProtectionMaxDataRate.Uplink != 0xFF || req.IntegrityProtectionMaxDataRate.Downlink != 0xFF ||
		req.PDUSessType.Value != PDUSessionTypeIPv4 || req.SSCMode.Mode != SSCMode1 || !req.AlwaysonPDUSessReq.APSR ||
		req.ExtendedProtCfgOpts.FromMs == nil || !req.ExtendedProtCfgOpts.FromMs.DNSV4Req || !req.ExtendedProtCfgOpts.FromMs.IPv4LinkMTUReq {
		t.Errorf("establishment request as read by free5gc: %+v", req)
	}

	acc := parse(msgs[2]).(*f5.PDUSessEstAccept)
	if acc.SelectedPDUSessType.Value != PDUSessionTypeIPv4 || acc.SelectedSSCMode.Mode != SSCMode2 ||
		acc.Cause5GSM.Value != 50 || !bytes.Equal(acc.PDUAddr.IPv4, []byte{10, 60, 0, 1}) ||
		acc.SNSSAI.SST != 1 || acc.SNSSAI.SD != "010203" || acc.DNN.Value != "internet" ||
		acc.ExtendedProtCfgOpts.FromNw == nil || acc.ExtendedProtCfgOpts.FromNw.IPv4LinkMTU != 1500 {
		t.Errorf("establishment accept as read by free5gc: %+v", acc)
	}
	// 1 Gbps = unit 11 (1 Gbps) x 1; 500 Mbps = unit 7 (4 Mbps) x 125
	if a := acc.SessAMBR; a.UnitDownlink != 11 || a.ValueDownlink != 1 || a.UnitUplink != 7 || a.ValueUplink != 125 {
		t.Errorf("session-AMBR %+v", a)
	}
	rules := acc.AuthoQosRules.Rules
	if len(rules) != 2 {
		t.Fatalf("free5gc reads %d QoS rules", len(rules))
	}
	r0, r1 := rules[0], rules[1]
	if r0.RuleId != 1 || r0.OpCode != 1 || !r0.IsDefaultDQR || len(r0.PktFilterList) != 1 || !r0.PktFilterList[0].Contents.MatchAll ||
		r0.PktFilterList[0].Dir != FilterBidirectional || r0.Precedence != 255 || r0.QFI != 1 {
		t.Errorf("default rule as read by free5gc: %+v", r0)
	}
	if r1.RuleId != 2 || r1.IsDefaultDQR || len(r1.PktFilterList) != 2 || r1.Precedence != 10 || !r1.Segregation || r1.QFI != 2 {
		t.Fatalf("second rule as read by free5gc: %+v", r1)
	}
	for i, f := range r1.PktFilterList {
		c := f.Contents
		if f.Id != uint8(2+i) || f.Dir != uint8(1+i) || c.RemoteAddr != "10.100.6.0/24" || !c.HavePIorNH || c.PIorNH != 17 || c.RemotePortRange != "5000" {
			t.Errorf("filter %d as read by free5gc: %+v", i, f)
		}
	}
	fl := acc.AuthoQosFlowDescs.Descs
	if len(fl) != 2 || fl[0].QFI != 1 || fl[0].FiveQI != 9 || fl[1].QFI != 2 || fl[1].FiveQI != 1 ||
		fl[1].GFBRUplink != "64 Kbps" || fl[1].GFBRDownlink != "128 Kbps" || fl[1].MFBRUplink != "1 Mbps" || fl[1].MFBRDownlink != "2 Mbps" ||
		fl[1].AvgWin != 2000 || fl[1].EPSBearerIds.NumOfBearerId != 1 || fl[1].EPSBearerIds.Id[0] != 5 {
		t.Errorf("QoS flow descriptions as read by free5gc: %+v", fl)
	}

	rej := parse(msgs[4]).(*f5.PDUSessEstRej)
	if rej.Cause5GSM.Value != 27 || rej.BackoffTimerValue.Unit != Timer3Unit1Min || rej.BackoffTimerValue.Value != 5 {
		t.Errorf("establishment reject as read by free5gc: %+v", rej)
	}

	cmd := parse(msgs[10]).(*f5.PDUSessModCmd)
	if cmd.Cause5GSM.Value != 39 || cmd.SessAMBR.UnitDownlink != 11 || cmd.SessAMBR.ValueDownlink != 2 ||
		cmd.SessAMBR.UnitUplink != 11 || cmd.SessAMBR.ValueUplink != 1 {
		t.Errorf("modification command as read by free5gc: %+v", cmd)
	}
	if r := cmd.AuthoQosRules.Rules; len(r) != 3 || r[0].RuleId != 2 || r[0].OpCode != 2 || r[1].OpCode != 6 || r[1].Precedence != 254 ||
		r[2].OpCode != 4 || len(r[2].PktFilterList) != 1 || r[2].QFI != 4 {
		t.Errorf("modification command rules as read by free5gc: %+v", r)
	}
	if d := cmd.AuthoQosFlowDescs.Descs; len(d) != 2 || d[0].OpCode != 2 || d[0].EBit != 0 || d[1].OpCode != 3 || d[1].EBit != 1 ||
		d[1].FiveQI != 8 || d[1].MFBRUplink != "4 Gbps" || d[1].MFBRDownlink != "16 Gbps" {
		t.Errorf("modification command flows as read by free5gc: %+v", d)
	}

	rel := parse(msgs[19]).(*f5.PDUSessRelCmd)
	if rel.Cause5GSM.Value != 36 || rel.AccessType.Value != uint8(Access3GPP) || rel.BackoffTimerValue.Unit != Timer3UnitDeactivated ||
		!bytes.Equal(rel.EAPMsg.Eap, []byte{4, 2, 0, 4}) {
		t.Errorf("release command as read by free5gc: %+v", rel)
	}
	if st := parse(msgs[23]).(*f5.Status5GSM); st.Cause5GSM.Value != 97 {
		t.Errorf("5GSM status as read by free5gc: %+v", st)
	}

	b, _ := Encode(msgs[24])
	x, err := f5.ParseGMM(b)
	if err != nil {
		t.Fatal(err)
	}
	if sr := x.(*f5.SvcRej); sr.Cause5GMM.Value != 22 || sr.T3346Value.Unit != 1 || sr.T3346Value.Value != 5 ||
		sr.T3448Value.Value != 10 || !sr.PDUSessStatus.PSI[1] || !sr.PDUSessStatus.PSI[5] || sr.PDUSessStatus.PSI[2] {
		t.Errorf("service reject as read by free5gc: %+v", sr)
	}
}

// TestSMDecodeFree5GCBuilt decodes 5GSM messages marshalled by free5gc and
// checks that our encoder produces the same octets for the same content.
func TestSMDecodeFree5GCBuilt(t *testing.T) {
	matchAll := ie.PacketFilterContents{MatchAll: true, RemoteAddr: "any", LocalAddr: "any"}
	dn := ie.PacketFilterContents{RemoteAddr: "10.100.6.0/24", LocalAddr: "any", RemotePortRange: "5000", HavePIorNH: true, PIorNH: 17}
	// free5gc orders components remote address, remote port, protocol
	dnComponents := append(AppendIPv4RemoteComponent(nil, netip.MustParsePrefix("10.100.6.0/24")),
		ComponentRemotePort, 0x13, 0x88, ComponentProtocol, 17)
	slice := tSlice
	for _, c := range []struct {
		f5   interface{ MarshalBinary() ([]byte, error) }
		want Message
	}{
		{
			&f5.PDUSessEstReq{PDUSessId: 5, PTI: 1,
				IntegrityProtectionMaxDataRate: &ie.IntegrityProtectionMaxDataRate{Uplink: 0xFF, Downlink: 0xFF},
				PDUSessType:                    &ie.PDUSessType{Value: 1}, SSCMode: &ie.SSCMode{Mode: 1},
				ExtendedProtCfgOpts: &ie.ExtendedProtCfgOpts{FromMs: &ie.ExtCfgOptFromMs{DNSV4Req: true, IPv4LinkMTUReq: true}},
			},
			&PDUSessionEstablishmentRequest{SMHeader: sh(5, 1), IntegrityMaxDataRate: [2]byte{0xFF, 0xFF},
				PDUSessionType: PDUSessionTypeIPv4, SSCMode: SSCMode1, ExtendedPCO: pcoUE},
		},
		{
			&f5.PDUSessEstAccept{PDUSessId: 5, PTI: 1,
				SelectedPDUSessType: &ie.PDUSessType{Value: 1}, SelectedSSCMode: &ie.SSCMode{Mode: 2},
				AuthoQosRules: &ie.QosRules{Rules: []ie.QosRule{
					{RuleId: 1, OpCode: ie.OpCode_CreateNewQosRule, IsDefaultDQR: true, Precedence: 255, QFI: 1,
						PktFilterList: []ie.PacketFilter{{Dir: ie.PFD_BiDir, Id: 1, Contents: matchAll}}},
					{RuleId: 2, OpCode: ie.OpCode_CreateNewQosRule, Precedence: 10, QFI: 2,
						PktFilterList: []ie.PacketFilter{{Dir: ie.PFD_Downlink, Id: 2, Contents: dn}}},
				}},
				SessAMBR:  &ie.SessAMBR{UnitDownlink: ie.Rate_1Gbps, ValueDownlink: 1, UnitUplink: ie.Rate_4Mbps, ValueUplink: 125},
				Cause5GSM: &ie.Cause5GSM{Value: 50},
				PDUAddr:   &ie.PDUAddr{IPv4: []byte{10, 60, 0, 1}},
				SNSSAI:    &ie.SNSSAI{SST: 1, SD: "010203"},
				AuthoQosFlowDescs: &ie.QosFlowDescs{Descs: []ie.QosFlowDesc{
					{QFI: 1, OpCode: ie.QFD_Create, EBit: 1, FiveQI: 9, MFBRUplink: "1 Gbps", MFBRDownlink: "2 Mbps"},
				}},
				ExtendedProtCfgOpts: &ie.ExtendedProtCfgOpts{FromNw: &ie.ExtCfgOptFromNw{DNSIPv4Addr: net.IPv4(8, 8, 8, 8), IPv4LinkMTU: 1500}},
				DNN:                 &ie.DNN{Value: "internet"},
			},
			&PDUSessionEstablishmentAccept{SMHeader: sh(5, 1), PDUSessionType: PDUSessionTypeIPv4, SSCMode: SSCMode2,
				QoSRules: []QoSRule{
					{ID: 1, Operation: QoSRuleCreate, Default: true, Filters: []PacketFilter{MatchAllFilter(1, FilterBidirectional)}, Precedence: 255, QFI: 1},
					{ID: 2, Operation: QoSRuleCreate, Filters: []PacketFilter{{ID: 2, Direction: FilterDownlink, Components: dnComponents}}, Precedence: 10, QFI: 2},
				},
				SessionAMBR: SessionAMBR{DL: 1e9, UL: 5e8}, Cause: CausePDUSessionTypeIPv4OnlyAllowed,
				PDUAddress: &PDUAddress{Type: PDUSessionTypeIPv4, IPv4: netip.AddrFrom4([4]byte{10, 60, 0, 1})},
				SNSSAI:     &slice,
				QoSFlowDescriptions: []QoSFlowDescription{
					{QFI: 1, Operation: QoSFlowCreate, FiveQI: 9, MFBR: &BitRates{UL: 1e9, DL: 2e6}},
				},
				ExtendedPCO: pcoNW, DNN: "internet",
			},
		},
		{
			&f5.PDUSessEstRej{PDUSessId: 5, PTI: 1, Cause5GSM: &ie.Cause5GSM{Value: 27},
				BackoffTimerValue: &ie.GPRSTimer3{Unit: ie.TimerIncIn_1Minute, Value: 5}},
			&PDUSessionEstablishmentReject{SMHeader: sh(5, 1), Cause: CauseMissingOrUnknownDNN, BackoffTimer: &GPRSTimer3{Unit: Timer3Unit1Min, Value: 5}},
		},
		{
			&f5.PDUSessModReq{PDUSessId: 5, PTI: 3, Cause5GSM: &ie.Cause5GSM{Value: 37},
				IntegrityProtectionMaxDataRate: &ie.IntegrityProtectionMaxDataRate{Uplink: 0xFF, Downlink: 0}},
			&PDUSessionModificationRequest{SMHeader: sh(5, 3), Cause: CauseQoSNotAccepted, IntegrityMaxDataRate: &[2]byte{0xFF, 0}},
		},
		{
			&f5.PDUSessModRej{PDUSessId: 5, PTI: 3, Cause5GSM: &ie.Cause5GSM{Value: 31}},
			&PDUSessionModificationReject{SMHeader: sh(5, 3), Cause: CauseRequestRejectedUnspecified},
		},
		{
			&f5.PDUSessModCmd{PDUSessId: 5, PTI: 0,
				SessAMBR: &ie.SessAMBR{UnitDownlink: ie.Rate_1Gbps, ValueDownlink: 2, UnitUplink: ie.Rate_1Gbps, ValueUplink: 1},
				AuthoQosRules: &ie.QosRules{Rules: []ie.QosRule{
					{RuleId: 2, OpCode: ie.OpCode_DelExistingQosRule},
					{RuleId: 3, OpCode: ie.OpCode_ModifyReplaceAllPktFilters, Precedence: 30, QFI: 4,
						PktFilterList: []ie.PacketFilter{{Dir: ie.PFD_Uplink, Id: 4, Contents: dn}}},
				}},
				AuthoQosFlowDescs: &ie.QosFlowDescs{Descs: []ie.QosFlowDesc{
					{QFI: 2, OpCode: ie.QFD_Del},
					{QFI: 4, OpCode: ie.QFD_Mod, EBit: 1, FiveQI: 8, GFBRUplink: "1 Mbps", GFBRDownlink: "1 Mbps"},
				}},
			},
			&PDUSessionModificationCommand{SMHeader: sh(5, 0), SessionAMBR: &SessionAMBR{DL: 2e9, UL: 1e9},
				QoSRules: []QoSRule{
					{ID: 2, Operation: QoSRuleDelete},
					{ID: 3, Operation: QoSRuleModifyReplaceFilters, Filters: []PacketFilter{{ID: 4, Direction: FilterUplink, Components: dnComponents}}, Precedence: 30, QFI: 4},
				},
				QoSFlowDescriptions: []QoSFlowDescription{
					{QFI: 2, Operation: QoSFlowDelete},
					{QFI: 4, Operation: QoSFlowModify, E: true, FiveQI: 8, GFBR: &BitRates{UL: 1e6, DL: 1e6}},
				},
			},
		},
		{
			&f5.PDUSessModComplete{PDUSessId: 5, PTI: 0},
			&PDUSessionModificationComplete{SMHeader: sh(5, 0)},
		},
		{
			&f5.PDUSessModCmdRej{PDUSessId: 5, PTI: 0, Cause5GSM: &ie.Cause5GSM{Value: 83}},
			&PDUSessionModificationCommandReject{SMHeader: sh(5, 0), Cause: CauseSemanticErrorInQoSOperation},
		},
		{
			&f5.PDUSessRelReq{PDUSessId: 5, PTI: 7, Cause5GSM: &ie.Cause5GSM{Value: 36}},
			&PDUSessionReleaseRequest{SMHeader: sh(5, 7), Cause: CauseRegularDeactivation},
		},
		{
			&f5.PDUSessRelRej{PDUSessId: 5, PTI: 7, Cause5GSM: &ie.Cause5GSM{Value: 43}},
			&PDUSessionReleaseReject{SMHeader: sh(5, 7), Cause: CauseInvalidPDUSessionIdentity},
		},
		{
			&f5.PDUSessRelCmd{PDUSessId: 5, PTI: 7, Cause5GSM: &ie.Cause5GSM{Value: 36}, AccessType: &ie.AccessType{Value: 1}},
			&PDUSessionReleaseCommand{SMHeader: sh(5, 7), Cause: CauseRegularDeactivation, AccessType: Access3GPP},
		},
		{
			&f5.PDUSessRelComplete{PDUSessId: 5, PTI: 7},
			&PDUSessionReleaseComplete{SMHeader: sh(5, 7)},
		},
		{
			&f5.Status5GSM{PDUSessId: 5, PTI: 7, Cause5GSM: &ie.Cause5GSM{Value: 97}},
			&Status5GSM{SMHeader: sh(5, 7), Cause: CauseMessageTypeNonExistent5GSM},
		},
		{
			&f5.SvcRej{Cause5GMM: &ie.Cause5GMM{Value: 22}, T3346Value: &ie.GPRSTimer2{Unit: ie.TimerIncIn_1Min, Value: 5}},
			&ServiceReject{Cause: CauseCongestion, T3346: &GPRSTimer2{Unit: 1, Value: 5}},
		},
	} {
		b, err := c.f5.MarshalBinary()
		if err != nil {
			t.Fatalf("free5gc marshal %T: %v", c.f5, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Errorf("decode free5gc %T (% x): %v", c.f5, b, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("free5gc %T decodes as\n %+v\nwant\n %+v", c.f5, got, c.want)
		}
		ours, err := Encode(c.want)
		if err != nil || !bytes.Equal(ours, b) {
			t.Errorf("%T: we encode\n % x\nfree5gc\n % x (%v)", c.want, ours, b, err)
		}
	}
}

func TestSessionAMBRUnits(t *testing.T) {
	for _, c := range []struct {
		bps       uint64
		unit      uint8
		value     uint16
		roundTrip uint64
	}{
		{0, 1, 0, 0},
		{1_000, 1, 1, 1_000},
		{64_000, 4, 1, 64_000},
		{100_000_000, 7, 25, 100_000_000}, // 25 x 4 Mbps
		{1_000_000_000, 11, 1, 1_000_000_000},
		{4_000_000_000, 12, 1, 4_000_000_000},
		{65_535_000, 1, 65535, 65_535_000},
		{65_536_000, 5, 256, 65_536_000},
		{1_500, 1, 2, 2_000},                        // rounded up to whole Kbps
		{65_537_000, 2, 16385, 65_540_000},          // no exact unit: finest unit that fits, rounded up
		{256e15 * 3, 25, 3, 256e15 * 3},             // 768 Pbps
		{math.MaxUint64, 21, 18447, math.MaxUint64}, // rounds up past 2^64: saturates on decode
	} {
		u, v := encodeRate(c.bps)
		if u != c.unit || v != c.value {
			t.Errorf("%d bit/s -> unit %d value %d, want %d/%d", c.bps, u, v, c.unit, c.value)
		}
		got, err := decodeRate(u, v)
		if err != nil || got != c.roundTrip {
			t.Errorf("%d bit/s decodes back as %d (%v)", c.bps, got, err)
		}
	}
	if got, _ := decodeRate(30, 1); got != 256e15 {
		t.Errorf("unit 30 = %d, want 256 Pbps", got)
	}
	if _, err := decodeRate(0, 1); err == nil {
		t.Error("unit 0 accepted")
	}
	a, err := decodeSessionAMBR(encodeSessionAMBR(SessionAMBR{DL: 2e9, UL: 1e8}))
	if err != nil || a != (SessionAMBR{DL: 2e9, UL: 1e8}) {
		t.Errorf("session-AMBR round trip %+v %v", a, err)
	}
}

func TestPacketFilterHelpers(t *testing.T) {
	f, err := IPv4RemoteFilter(3, FilterUplink, netip.MustParsePrefix("10.100.6.7/24"), 6, 80)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x10, 10, 100, 6, 0, 255, 255, 255, 0, 0x30, 6, 0x50, 0, 80}
	if !bytes.Equal(f.Components, want) || f.ID != 3 || f.Direction != FilterUplink || f.MatchAll {
		t.Errorf("filter %+v, want components % x", f, want)
	}
	cs, err := f.ParseFilterComponents()
	if err != nil || len(cs) != 3 || cs[0].Type != ComponentIPv4Remote || !bytes.Equal(cs[2].Value, []byte{0, 80}) {
		t.Errorf("components %+v %v", cs, err)
	}
	host, _ := IPv4RemoteFilter(1, FilterDownlink, netip.MustParsePrefix("8.8.8.8/32"), 0, 0)
	if !bytes.Equal(host.Components, []byte{0x10, 8, 8, 8, 8, 255, 255, 255, 255}) {
		t.Errorf("host filter % x", host.Components)
	}
	if _, err := IPv4RemoteFilter(1, FilterDownlink, netip.MustParsePrefix("2001:db8::/32"), 0, 0); err == nil {
		t.Error("IPv6 prefix accepted")
	}
	if cs, err := MatchAllFilter(1, FilterBidirectional).ParseFilterComponents(); err != nil || len(cs) != 1 || cs[0].Type != ComponentMatchAll {
		t.Errorf("match-all components %+v %v", cs, err)
	}
	for _, bad := range [][]byte{{0x10, 1, 2}, {0x99, 1}, {0x30, 6, 0x01}} {
		if _, err := (PacketFilter{Components: bad}).ParseFilterComponents(); err == nil {
			t.Errorf("components % x parsed", bad)
		}
	}
}

func TestSMDecodeErrors(t *testing.T) {
	msgs, _ := sampleSMMessages(t)
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		// every strict prefix that cuts a mandatory part or an IE must fail
		for n := 0; n < len(b); n++ {
			got, err := Decode(b[:n])
			if err == nil && !reflect.DeepEqual(got, m) && !isOptionalBoundary(b[:n]) {
				t.Errorf("%T truncated to %d octets decoded as %+v", m, n, got)
			}
		}
	}
	for _, b := range [][]byte{
		{0x2e},
		{0x2e, 0x05, 0x01},             // no message type
		{0x2e, 0x05, 0x01, 0xc5},       // authentication command: not handled
		{0x2e, 0x05, 0x01, 0x99},       // unknown message type
		{0x2e, 0x05, 0x01, 0xc1, 0xff}, // integrity max data rate truncated
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x01, 0x01},                                              // QoS rules longer than the message
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x00, 0x05, 1, 0, 1, 0, 1},                               // session-AMBR of 5 octets
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x00, 0x06, 0, 0, 1, 1, 0, 1},                            // AMBR unit 0
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x05, 1, 0, 2, 0x40, 0x05, 0x06, 1, 0, 1, 1, 0, 1},       // delete rule with precedence
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x05, 1, 0, 2, 0xe0, 0, 0x06, 1, 0, 1, 1, 0, 1},          // rule operation code 7
		{0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x07, 1, 0, 4, 0x31, 0x31, 0, 0, 0x06, 1, 0, 1, 1, 0, 1}, // filter with no components
		{0x2e, 0x05, 0x01, 0xcb, 0x79, 0x00, 0x03, 0x01, 0x80, 0x00},                                  // QoS flow op code 4
		{0x2e, 0x05, 0x01, 0xcb, 0x79, 0x00, 0x05, 0x01, 0x20, 0x41, 0x01, 0x02},                      // 5QI of 2 octets, truncated
		{0x2e, 0x05, 0x01, 0xcb, 0x79, 0x00, 0x07, 0x01, 0x20, 0x41, 0x02, 0x02, 1, 1},                // GFBR of 2 octets
		{0x7e, 0x00, 0x4d}, // service reject without cause
	} {
		if m, err := Decode(b); err == nil {
			t.Errorf("Decode(% x) = %+v", b, m)
		}
		if m, err := DecodeSM(b); err == nil {
			t.Errorf("DecodeSM(% x) = %+v", b, m)
		}
	}
	if _, err := DecodeSM([]byte{0x7e, 0x00, 0x41}); !errors.Is(err, ErrNot5GSM) {
		t.Errorf("5GMM PDU: %v", err)
	}
	if _, err := DecodeSM([]byte{0x2e, 5, 1, 0x99}); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := DecodeSM(nil); err == nil {
		t.Error("empty PDU decoded")
	}
}

// isOptionalBoundary reports whether prefix is itself a valid message: one
// that ends right after a complete IE, so it re-encodes to the same octets
// (the original message with fewer optional IEs).
func isOptionalBoundary(prefix []byte) bool {
	got, err := Decode(prefix)
	if err != nil {
		return false
	}
	out, err := Encode(got)
	return err == nil && bytes.Equal(out, prefix)
}

func TestSMEncodeErrors(t *testing.T) {
	rule := QoSRule{ID: 1, Operation: QoSRuleCreate, Filters: []PacketFilter{MatchAllFilter(1, 3)}, QFI: 1}
	for _, m := range []Message{
		&PDUSessionEstablishmentAccept{PDUSessionType: 1, SSCMode: 1},                       // no QoS rule
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 0}}},          // bad operation
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 1, QFI: 64}}}, // QFI > 63
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: QoSRuleDelete, Filters: []PacketFilter{{ID: 1}}}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 1, Filters: []PacketFilter{{ID: 1, Direction: 3}}}}}, // empty filter
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 1, Filters: []PacketFilter{{ID: 16, Direction: 3, MatchAll: true}}}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 1, Filters: []PacketFilter{{ID: 1, MatchAll: true, Components: []byte{0x30, 6}}}}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{{ID: 1, Operation: 1, Filters: make([]PacketFilter, 16)}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, PDUAddress: &PDUAddress{Type: PDUSessionTypeIPv4}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, PDUAddress: &PDUAddress{Type: PDUSessionTypeEthernet}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, DNN: "a..b"},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, QoSFlowDescriptions: []QoSFlowDescription{{QFI: 1, Operation: 7}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, QoSFlowDescriptions: []QoSFlowDescription{{QFI: 1, Operation: QoSFlowDelete, FiveQI: 9}}},
		&PDUSessionEstablishmentAccept{QoSRules: []QoSRule{rule}, QoSFlowDescriptions: []QoSFlowDescription{{QFI: 1, Operation: 1, EPSBearerIDs: []uint8{16}}}},
		&PDUSessionEstablishmentRequest{MaxPacketFilters: 0x800},
		&PDUSessionEstablishmentReject{},
		&PDUSessionModificationReject{},
		&PDUSessionModificationCommandReject{},
		&PDUSessionReleaseReject{},
		&PDUSessionReleaseCommand{},
		&Status5GSM{},
		&ServiceReject{},
		&PDUSessionModificationCommand{QoSRules: []QoSRule{{ID: 1, Operation: QoSRuleModifyWithoutFilters, Filters: []PacketFilter{{ID: 1}}}}},
		&PDUSessionModificationCommand{QoSRules: []QoSRule{{ID: 1, Operation: QoSRuleModifyDeleteFilters, Filters: []PacketFilter{{ID: 17}}}}},
	} {
		if b, err := Encode(m); err == nil {
			t.Errorf("Encode(%+v) = % x", m, b)
		}
	}
}

func TestSMDecodeSkipsUnknownOptionalIEs(t *testing.T) {
	b, err := Encode(&PDUSessionReleaseCommand{SMHeader: sh(5, 1), Cause: CauseRegularDeactivation})
	if err != nil {
		t.Fatal(err)
	}
	// 5GSM congestion re-attempt indicator (TLV 0x61), service-level-AA
	// container (TLV-E 0x72), then access type
	b = append(b, 0x61, 0x01, 0x01, 0x72, 0x00, 0x01, 0xff, 0xD2)
	m, err := DecodeSM(b)
	if err != nil {
		t.Fatal(err)
	}
	if rc := m.(*PDUSessionReleaseCommand); rc.AccessType != AccessNon3GPP || rc.Cause != CauseRegularDeactivation {
		t.Errorf("%+v", rc)
	}
	// the RQ timer (TV 0x56) of an accept is skipped with its fixed length
	acc, _ := sampleSMMessages(t)
	ab, _ := Encode(acc[3])
	ab = append(ab, 0x56, 0x21, 0x59, 0x1a)
	m, err = DecodeSM(ab)
	if err != nil || m.(*PDUSessionEstablishmentAccept).Cause != CauseInsufficientResources5GSM {
		t.Errorf("accept with RQ timer: %+v %v", m, err)
	}
}

func TestCause5GSMString(t *testing.T) {
	if s := CauseMissingOrUnknownDNN.String(); s != "#27 missing or unknown DNN" {
		t.Error(s)
	}
	if s := Cause5GSM(200).String(); s != "#200" {
		t.Error(s)
	}
	if s := MsgPDUSessionEstablishmentAccept.String(); s != "PDUSessionEstablishmentAccept" {
		t.Error(s)
	}
}
