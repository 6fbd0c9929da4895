package ngap

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"

	"github.com/tern5g/tern/identity"
)

var (
	targetGNB = TargetRANNodeID{
		GlobalGNBID: GlobalGNBID{PLMN: plmn, GNBID: 0x000102, BitLen: 24},
		SelectedTAI: identity.TAI{PLMN: plmn, TAC: 0x303399},
	}
	fwdTunnel   = GTPTunnel{Addr: netip.MustParseAddr("10.100.3.9"), TEID: 0x0000F00D}
	ulFwdTunnel = GTPTunnel{Addr: netip.MustParseAddr("2001:db8::9"), TEID: 0x0000BEEF}

	psReqT    = &PathSwitchRequestTransfer{DLTunnel: gnbTunnel, DLTunnelReused: true, QoSFlows: []uint8{1, 63}}
	psReqMinT = &PathSwitchRequestTransfer{DLTunnel: v6Tunnel, QoSFlows: []uint8{0}}
	psAckT    = &PathSwitchRequestAcknowledgeTransfer{ULTunnel: &upfTunnel}
	psAckMinT = &PathSwitchRequestAcknowledgeTransfer{}
	psFailT   = &PathSwitchRequestUnsuccessfulTransfer{Cause: Cause{CauseTransport, TransportResourceUnavailable}}
	psSetupT  = &PathSwitchRequestSetupFailedTransfer{Cause: Cause{CauseRadioNetwork, RadioNetworkUPIntegrityProtectionNotPossible}}
	hoRqdT    = &HandoverRequiredTransfer{DirectForwardingPathAvailable: true}
	hoRqdMinT = &HandoverRequiredTransfer{}
	hoCmdT    = &HandoverCommandTransfer{DLForwardingTunnel: &fwdTunnel, QoSFlowsToBeForwarded: []uint8{1, 2}, ULForwardingTunnel: &ulFwdTunnel}
	hoCmdMinT = &HandoverCommandTransfer{}
	hoAckT    = &HandoverRequestAcknowledgeTransfer{
		DLTunnel: gnbTunnel, DLForwardingTunnel: &fwdTunnel,
		QoSFlows:       []QoSFlowWithDataForwarding{{QFI: 1, DataForwardingAccepted: true}, {QFI: 2}},
		FailedQoSFlows: []QoSFlowWithCause{{QFI: 3, Cause: Cause{CauseRadioNetwork, RadioNetworkNotSupported5QIValue}}},
	}
	hoAckMinT  = &HandoverRequestAcknowledgeTransfer{DLTunnel: v6Tunnel, QoSFlows: []QoSFlowWithDataForwarding{{QFI: 9}}}
	hoAllocT   = &HandoverResourceAllocationUnsuccessfulTransfer{Cause: Cause{CauseRadioNetwork, RadioNetworkNoRadioResourcesAvailableInTarget}}
	hoAllocMax = &HandoverResourceAllocationUnsuccessfulTransfer{Cause: Cause{CauseMisc, MiscUnspecified}, CriticalityDiagnostics: func() *CriticalityDiagnostics {
		pc := ProcHandoverResourceAllocation
		return &CriticalityDiagnostics{ProcedureCode: &pc}
	}()}
	hoPrepT = &HandoverPreparationUnsuccessfulTransfer{Cause: Cause{CauseRadioNetwork, RadioNetworkHOFailureInTarget}}

	// ueranemu's Source NG-RAN Node to Target NG-RAN Node Transparent
	// Container (free5gc message/handover_required_test.go), which Wireshark
	// dissects
	s2tContainer = []byte{
		0x40, 0x03, 0x00, 0x00, 0x11, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x02, 0xf8, 0x39, 0x00, 0x01,
		0x02, 0x00, 0x10, 0x00, 0x00, 0x02, 0xf8, 0x39, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x0a,
	}
	// a Target NG-RAN Node to Source NG-RAN Node Transparent Container whose
	// RRC container stands in for an RRC HandoverCommand
	t2sContainer = must(ie.MarshalBinary(&ie.TargetNGRANNodeToSourceNGRANNodeTransparentContainer{
		RRCContainer: &ie.RRCContainer{Value: aper.OctetString{0x08, 0x17, 0xf5, 0x55, 0x28, 0x22}},
	}))
)

func securityContext(ncc uint8) SecurityContext {
	s := SecurityContext{NextHopChainingCount: ncc}
	for i := range s.NextHopNH {
		s.NextHopNH[i] = byte(0xA0 + i)
	}
	return s
}

// sampleMobilityMessages returns the paging and mobility messages, each with
// all its optional IEs and with none, carrying the sample transfers.
func sampleMobilityMessages(diag *CriticalityDiagnostics) []Message {
	drx := PagingDRX64
	caps := UESecurityCapabilities{NREncryption: 0xE000, NRIntegrity: 0x6000, EUTRAEncryption: 0xC000, EUTRAIntegrity: 0x4000}
	items := func(tr ...[]byte) []PDUSessionResourceItem {
		l := make([]PDUSessionResourceItem, len(tr))
		for i, b := range tr {
			l[i] = PDUSessionResourceItem{ID: uint8(1 + i*4), Transfer: b}
		}
		return l
	}
	psReq, psReqMin := must(EncodePathSwitchRequestTransfer(psReqT)), must(EncodePathSwitchRequestTransfer(psReqMinT))
	psAck, psAckMin := must(EncodePathSwitchRequestAcknowledgeTransfer(psAckT)), must(EncodePathSwitchRequestAcknowledgeTransfer(psAckMinT))
	psFail := must(EncodePathSwitchRequestUnsuccessfulTransfer(psFailT))
	psSetup := must(EncodePathSwitchRequestSetupFailedTransfer(psSetupT))
	hoRqd, hoRqdMin := must(EncodeHandoverRequiredTransfer(hoRqdT)), must(EncodeHandoverRequiredTransfer(hoRqdMinT))
	hoCmd, hoCmdMin := must(EncodeHandoverCommandTransfer(hoCmdT)), must(EncodeHandoverCommandTransfer(hoCmdMinT))
	hoPrep := must(EncodeHandoverPreparationUnsuccessfulTransfer(hoPrepT))
	hoAck, hoAckMin := must(EncodeHandoverRequestAcknowledgeTransfer(hoAckT)), must(EncodeHandoverRequestAcknowledgeTransfer(hoAckMinT))
	hoAlloc, hoAllocMaxB := must(EncodeHandoverResourceAllocationUnsuccessfulTransfer(hoAllocT)), must(EncodeHandoverResourceAllocationUnsuccessfulTransfer(hoAllocMax))
	drbs := []DRBStatus{
		{DRBID: 1, UL: COUNTValue{SNLength: 12, PDCPSN: 4095, HFN: 1<<20 - 1}, DL: COUNTValue{SNLength: 12, PDCPSN: 907, HFN: 987}},
		{DRBID: 32, UL: COUNTValue{SNLength: 18, PDCPSN: 1<<18 - 1, HFN: 1<<14 - 1}, DL: COUNTValue{SNLength: 18, PDCPSN: 5, HFN: 0},
			ULReceiveStatus: []byte{0xA5, 0x80}, ULReceiveStatusBits: 9},
		{DRBID: 4, UL: COUNTValue{SNLength: 12, PDCPSN: 1, HFN: 2}, DL: COUNTValue{SNLength: 18, PDCPSN: 3, HFN: 4},
			ULReceiveStatus: bytes.Repeat([]byte{0x5A}, 256), ULReceiveStatusBits: 2048},
	}
	// a bitmap in two fragments (16384 + 8 bits), in one sample only: big
	// inputs slow the fuzzers down
	bigDRB := DRBStatus{DRBID: 5, UL: COUNTValue{SNLength: 18, PDCPSN: 6, HFN: 7}, DL: COUNTValue{SNLength: 12, PDCPSN: 8, HFN: 9},
		ULReceiveStatus: bytes.Repeat([]byte{0x3C}, 2049), ULReceiveStatusBits: 16392}
	setupItems := []PDUSessionResourceSetupItemHOReq{
		{ID: 1, SNSSAI: sl1, Transfer: must(EncodeSetupRequestTransfer(setupReqT))},
		{ID: 255, SNSSAI: sl2, Transfer: must(EncodeSetupRequestTransfer(setupReqMinT))},
	}
	return []Message{
		&Paging{
			UEPagingIdentity: identity.STMSI{SetID: 0x3FF, Pointer: 0x3F, TMSI: 0xDEADBEEF}, PagingDRX: &drx,
			TAIListForPaging: []identity.TAI{tai, {PLMN: plmn3, TAC: 0xABCDEF}}, PagingPriority: 8, PagingOriginNon3GPP: true,
		},
		&Paging{UEPagingIdentity: identity.STMSI{SetID: 1, Pointer: 1, TMSI: 1}, TAIListForPaging: []identity.TAI{tai}},
		&PathSwitchRequest{
			RANUENGAPID: 1<<32 - 1, SourceAMFUENGAPID: 1<<40 - 1, UserLocation: loc, UESecurityCapabilities: caps,
			ToBeSwitched: items(psReq, psReqMin), FailedToSetup: items(psSetup),
		},
		&PathSwitchRequest{RANUENGAPID: 7, SourceAMFUENGAPID: 3, UserLocation: loc, ToBeSwitched: items(psReqMin)},
		&PathSwitchRequestAcknowledge{
			AMFUENGAPID: 3, RANUENGAPID: 7, UESecurityCapabilities: &caps, SecurityContext: securityContext(7),
			Switched: items(psAck, psAckMin), Released: items(psFail), AllowedNSSAI: []identity.SNSSAI{sl1, sl2},
			CriticalityDiagnostics: diag,
		},
		&PathSwitchRequestAcknowledge{AMFUENGAPID: 3, RANUENGAPID: 7, SecurityContext: securityContext(0), Switched: items(psAckMin), AllowedNSSAI: []identity.SNSSAI{sl2}},
		&PathSwitchRequestFailure{AMFUENGAPID: 3, RANUENGAPID: 7, Released: items(psFail, psFail), CriticalityDiagnostics: diag},
		&PathSwitchRequestFailure{AMFUENGAPID: 3, RANUENGAPID: 7, Released: items(psFail)},
		&HandoverRequired{
			AMFUENGAPID: 3, RANUENGAPID: 5, HandoverType: HandoverIntra5GS, Cause: Cause{CauseRadioNetwork, RadioNetworkHandoverDesirableForRadioReason},
			TargetID: targetGNB, DirectForwardingPathAvailable: true, Sessions: items(hoRqd, hoRqdMin), SourceToTargetTransparentContainer: s2tContainer,
		},
		&HandoverRequired{
			AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkTimeCriticalHandover},
			TargetID: TargetRANNodeID{GlobalGNBID: GlobalGNBID{PLMN: plmn3, GNBID: 0xFFFFFFFF, BitLen: 32}, SelectedTAI: tai},
			Sessions: items(hoRqdMin), SourceToTargetTransparentContainer: s2tContainer,
		},
		&HandoverCommand{
			AMFUENGAPID: 3, RANUENGAPID: 5, Handover: items(hoCmd, hoCmdMin), ToRelease: items(hoPrep),
			TargetToSourceTransparentContainer: t2sContainer, CriticalityDiagnostics: diag,
		},
		&HandoverCommand{AMFUENGAPID: 3, RANUENGAPID: 5, TargetToSourceTransparentContainer: t2sContainer},
		&HandoverPreparationFailure{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkHOFailureInTarget}, CriticalityDiagnostics: diag},
		&HandoverPreparationFailure{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkTNGRELOCprepExpiry}},
		&HandoverRequest{
			AMFUENGAPID: 1<<40 - 1, HandoverType: HandoverIntra5GS, Cause: Cause{CauseRadioNetwork, RadioNetworkHandoverDesirableForRadioReason},
			UEAggregateMaxBitRate: AMBR{DL: 2_000_000_000, UL: 1_000_000_000}, UESecurityCapabilities: caps, SecurityContext: securityContext(2),
			Sessions: setupItems, AllowedNSSAI: []identity.SNSSAI{sl1, sl2}, SourceToTargetTransparentContainer: s2tContainer, GUAMI: guami,
		},
		&HandoverRequest{
			AMFUENGAPID: 0, HandoverType: HandoverEPSTo5GS, Cause: Cause{CauseRadioNetwork, RadioNetworkNGInterSystemHandoverTriggered},
			UEAggregateMaxBitRate: AMBR{DL: 1, UL: maxBitRate}, SecurityContext: securityContext(1),
			Sessions: setupItems[1:], AllowedNSSAI: []identity.SNSSAI{sl2}, SourceToTargetTransparentContainer: s2tContainer, GUAMI: guami,
		},
		&HandoverRequestAcknowledge{
			AMFUENGAPID: 3, RANUENGAPID: 9, Admitted: items(hoAck, hoAckMin), FailedToSetup: items(hoAlloc, hoAllocMaxB),
			TargetToSourceTransparentContainer: t2sContainer, CriticalityDiagnostics: diag,
		},
		&HandoverRequestAcknowledge{AMFUENGAPID: 3, RANUENGAPID: 9, Admitted: items(hoAckMin), TargetToSourceTransparentContainer: t2sContainer},
		&HandoverFailure{AMFUENGAPID: 3, Cause: Cause{CauseRadioNetwork, RadioNetworkHOFailureInTarget}, CriticalityDiagnostics: diag},
		&HandoverFailure{AMFUENGAPID: 1<<40 - 1, Cause: Cause{CauseTransport, TransportResourceUnavailable}},
		&HandoverNotify{AMFUENGAPID: 3, RANUENGAPID: 9, UserLocation: loc},
		&HandoverCancel{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkHandoverCancelled}},
		&HandoverCancelAcknowledge{AMFUENGAPID: 3, RANUENGAPID: 5, CriticalityDiagnostics: diag},
		&HandoverCancelAcknowledge{AMFUENGAPID: 3, RANUENGAPID: 5},
		&UplinkRANStatusTransfer{AMFUENGAPID: 3, RANUENGAPID: 5, DRBs: drbs},
		&UplinkRANStatusTransfer{AMFUENGAPID: 3, RANUENGAPID: 5, DRBs: drbs[:1]},
		&DownlinkRANStatusTransfer{AMFUENGAPID: 3, RANUENGAPID: 9, DRBs: append(drbs[:3:3], bigDRB)},
		&DownlinkRANStatusTransfer{AMFUENGAPID: 3, RANUENGAPID: 9, DRBs: drbs[1:2]},
	}
}

func mobilityTransferCases() []transferCase {
	return []transferCase{
		tcase("path switch request", psReqT, EncodePathSwitchRequestTransfer, DecodePathSwitchRequestTransfer),
		tcase("path switch request minimal", psReqMinT, EncodePathSwitchRequestTransfer, DecodePathSwitchRequestTransfer),
		tcase("path switch request acknowledge", psAckT, EncodePathSwitchRequestAcknowledgeTransfer, DecodePathSwitchRequestAcknowledgeTransfer),
		tcase("path switch request acknowledge empty", psAckMinT, EncodePathSwitchRequestAcknowledgeTransfer, DecodePathSwitchRequestAcknowledgeTransfer),
		tcase("path switch request unsuccessful", psFailT, EncodePathSwitchRequestUnsuccessfulTransfer, DecodePathSwitchRequestUnsuccessfulTransfer),
		tcase("path switch request setup failed", psSetupT, EncodePathSwitchRequestSetupFailedTransfer, DecodePathSwitchRequestSetupFailedTransfer),
		tcase("handover required", hoRqdT, EncodeHandoverRequiredTransfer, DecodeHandoverRequiredTransfer),
		tcase("handover required empty", hoRqdMinT, EncodeHandoverRequiredTransfer, DecodeHandoverRequiredTransfer),
		tcase("handover command", hoCmdT, EncodeHandoverCommandTransfer, DecodeHandoverCommandTransfer),
		tcase("handover command empty", hoCmdMinT, EncodeHandoverCommandTransfer, DecodeHandoverCommandTransfer),
		tcase("handover request acknowledge", hoAckT, EncodeHandoverRequestAcknowledgeTransfer, DecodeHandoverRequestAcknowledgeTransfer),
		tcase("handover request acknowledge minimal", hoAckMinT, EncodeHandoverRequestAcknowledgeTransfer, DecodeHandoverRequestAcknowledgeTransfer),
		tcase("handover resource allocation unsuccessful", hoAllocT, EncodeHandoverResourceAllocationUnsuccessfulTransfer, DecodeHandoverResourceAllocationUnsuccessfulTransfer),
		tcase("handover resource allocation unsuccessful with diagnostics", hoAllocMax, EncodeHandoverResourceAllocationUnsuccessfulTransfer, DecodeHandoverResourceAllocationUnsuccessfulTransfer),
		tcase("handover preparation unsuccessful", hoPrepT, EncodeHandoverPreparationUnsuccessfulTransfer, DecodeHandoverPreparationUnsuccessfulTransfer),
	}
}

// withoutIE re-frames the PDU b without protocol IE id: free5gc refuses to
// encode a message that lacks a mandatory IE.
func withoutIE(t *testing.T, b []byte, id int64) []byte {
	t.Helper()
	var ies []byte
	n, found := 0, false
	for _, x := range walkIEs(b[3:]) {
		if x.id == id {
			found = true
			continue
		}
		ies = append(ies, x.field...)
		n++
	}
	if !found {
		t.Fatalf("no IE %d in % x", id, b)
	}
	value := append([]byte{0x00, byte(n >> 8), byte(n)}, ies...)
	out := append(b[:3:3], 0x80|byte(len(value)>>8), byte(len(value)))
	return append(out, value...)
}

// mandatoryIEs lists the mandatory IEs of each message (TS 38.413 §9.2.3,
// §9.2.4.1).
var mandatoryIEs = map[reflect.Type][]int64{
	reflect.TypeFor[*Paging](): {ie.ProtocolIEIDUEPagingIdentity, ie.ProtocolIEIDTAIListForPaging},
	reflect.TypeFor[*PathSwitchRequest](): {ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDSourceAMFUENGAPID, ie.ProtocolIEIDUserLocationInformation,
		ie.ProtocolIEIDUESecurityCapabilities, ie.ProtocolIEIDPDUSessionResourceToBeSwitchedDLList},
	reflect.TypeFor[*PathSwitchRequestAcknowledge](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDSecurityContext,
		ie.ProtocolIEIDPDUSessionResourceSwitchedList, ie.ProtocolIEIDAllowedNSSAI},
	reflect.TypeFor[*PathSwitchRequestFailure](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDPDUSessionResourceReleasedListPSFail},
	reflect.TypeFor[*HandoverRequired](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDHandoverType, ie.ProtocolIEIDCause,
		ie.ProtocolIEIDTargetID, ie.ProtocolIEIDPDUSessionResourceListHORqd, ie.ProtocolIEIDSourceToTargetTransparentContainer},
	reflect.TypeFor[*HandoverCommand](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDHandoverType,
		ie.ProtocolIEIDTargetToSourceTransparentContainer},
	reflect.TypeFor[*HandoverPreparationFailure](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDCause},
	reflect.TypeFor[*HandoverRequest](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDHandoverType, ie.ProtocolIEIDCause, ie.ProtocolIEIDUEAggregateMaximumBitRate,
		ie.ProtocolIEIDUESecurityCapabilities, ie.ProtocolIEIDSecurityContext, ie.ProtocolIEIDPDUSessionResourceSetupListHOReq,
		ie.ProtocolIEIDAllowedNSSAI, ie.ProtocolIEIDSourceToTargetTransparentContainer, ie.ProtocolIEIDGUAMI},
	reflect.TypeFor[*HandoverRequestAcknowledge](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDPDUSessionResourceAdmittedList,
		ie.ProtocolIEIDTargetToSourceTransparentContainer},
	reflect.TypeFor[*HandoverFailure]():           {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDCause},
	reflect.TypeFor[*HandoverNotify]():            {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDUserLocationInformation},
	reflect.TypeFor[*HandoverCancel]():            {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID, ie.ProtocolIEIDCause},
	reflect.TypeFor[*HandoverCancelAcknowledge](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID},
	reflect.TypeFor[*UplinkRANStatusTransfer](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID,
		ie.ProtocolIEIDRANStatusTransferTransparentContainer},
	reflect.TypeFor[*DownlinkRANStatusTransfer](): {ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDRANUENGAPID,
		ie.ProtocolIEIDRANStatusTransferTransparentContainer},
}

// ueIDs returns the UE NGAP IDs an Error Indication about m can carry: the
// Source AMF UE NGAP ID of a Path Switch Request stands for the AMF UE NGAP
// ID.
func ueIDs(m Message) (amf, ran *int64) {
	v := reflect.ValueOf(m).Elem()
	if f := v.FieldByName("AMFUENGAPID"); f.IsValid() {
		amf = i64(f.Int())
	}
	if f := v.FieldByName("SourceAMFUENGAPID"); f.IsValid() {
		amf = i64(f.Int())
	}
	if f := v.FieldByName("RANUENGAPID"); f.IsValid() {
		ran = i64(f.Int())
	}
	return amf, ran
}

func sameID(got, want *int64) bool {
	return (got == nil) == (want == nil) && (got == nil || *got == *want)
}

func TestMobilityMissingMandatoryIE(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, m := range sampleMobilityMessages(nil) {
		typ := reflect.TypeOf(m)
		if seen[typ] {
			continue
		}
		seen[typ] = true
		ids, ok := mandatoryIEs[typ]
		if !ok {
			t.Fatalf("%T: mandatory IEs not listed", m)
		}
		full := must(Encode(m))
		wantAMF, wantRAN := ueIDs(m)
		for _, id := range ids {
			b := withoutIE(t, full, id)
			de := decodeErr(t, b)
			if de.Cause != (Cause{CauseProtocol, ProtocolAbstractSyntaxErrorReject}) || !de.Notify {
				t.Errorf("%T without IE %d: cause %v notify %v (%v)", m, id, de.Cause, de.Notify, de.Err)
			}
			if !de.ProcedureKnown || de.ProcedureCode != m.ProcedureCode() || de.MessageType != m.MessageType() {
				t.Errorf("%T without IE %d: procedure %+v", m, id, de)
			}
			if d := de.Diagnostics; d == nil || len(d.IEs) != 1 || d.IEs[0].IEID != id || d.IEs[0].TypeOfError != Missing {
				t.Errorf("%T without IE %d: diagnostics %+v", m, id, d)
			}
			// the IDs that are left are reported
			a, r := wantAMF, wantRAN
			if id == ie.ProtocolIEIDAMFUENGAPID || id == ie.ProtocolIEIDSourceAMFUENGAPID {
				a = nil
			}
			if id == ie.ProtocolIEIDRANUENGAPID {
				r = nil
			}
			if !sameID(de.AMFUENGAPID, a) || !sameID(de.RANUENGAPID, r) {
				t.Errorf("%T without IE %d: IDs AMF %v RAN %v, want %v %v", m, id, de.AMFUENGAPID, de.RANUENGAPID, a, r)
			}
			if _, err := Encode(de.ErrorIndication()); err != nil {
				t.Errorf("%T without IE %d: error indication: %v", m, id, err)
			}
		}
	}
	if len(seen) != len(mandatoryIEs) {
		t.Errorf("%d message types sampled, %d listed", len(seen), len(mandatoryIEs))
	}
}

func TestMobilityDecodeErrors(t *testing.T) {
	t.Run("truncated keeps procedure and IDs", func(t *testing.T) {
		pc := ProcHandoverPreparation
		for _, m := range sampleMobilityMessages(&CriticalityDiagnostics{ProcedureCode: &pc}) {
			b := must(Encode(m))
			de := decodeErr(t, b[:len(b)-2])
			if !de.ProcedureKnown || de.ProcedureCode != m.ProcedureCode() || de.MessageType != m.MessageType() {
				t.Errorf("%T: procedure not reported: %+v", m, de)
			}
			if de.Cause.Group != CauseProtocol || !de.Notify {
				t.Errorf("%T: cause %v notify %v", m, de.Cause, de.Notify)
			}
			// the IDs come first and are read before the cut, unless the
			// cut is in one of them
			wantAMF, wantRAN := ueIDs(m)
			ies := walkIEs(b[3:])
			switch ies[len(ies)-1].id {
			case ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDSourceAMFUENGAPID:
				wantAMF = nil
			case ie.ProtocolIEIDRANUENGAPID:
				wantRAN = nil
			}
			if !sameID(de.AMFUENGAPID, wantAMF) || !sameID(de.RANUENGAPID, wantRAN) {
				t.Errorf("%T: IDs AMF %v RAN %v, want %v %v", m, de.AMFUENGAPID, de.RANUENGAPID, wantAMF, wantRAN)
			}
			if _, err := Encode(de.ErrorIndication()); err != nil {
				t.Errorf("%T: error indication: %v", m, err)
			}
		}
	})
	t.Run("path switch request cut after the IDs reports the source AMF UE NGAP ID", func(t *testing.T) {
		b := must(Encode(&PathSwitchRequest{RANUENGAPID: 7, SourceAMFUENGAPID: 1<<40 - 1, UserLocation: loc,
			ToBeSwitched: []PDUSessionResourceItem{{ID: 1, Transfer: []byte{0}}}}))
		ies := walkIEs(b[3:])
		if len(ies) != 5 || ies[1].id != ie.ProtocolIEIDSourceAMFUENGAPID {
			t.Fatalf("IEs %+v", ies)
		}
		// cut inside the user location: free5gc fails before reading any
		// ID, the salvage reads both
		de := decodeErr(t, b[:len(b)-len(ies[4].field)-len(ies[3].field)-3])
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 1<<40-1 || de.RANUENGAPID == nil || *de.RANUENGAPID != 7 {
			t.Errorf("got AMF %v RAN %v", de.AMFUENGAPID, de.RANUENGAPID)
		}
	})
	t.Run("bad values are semantic errors with IDs", func(t *testing.T) {
		for name, x := range map[string]f5.Message{
			"DRB ID 0": &f5.UplinkRANStatusTransfer{
				AMFUENGAPID: amfID(21), RANUENGAPID: ranID(22),
				RANStatusTransferTransparentContainer: &ie.RANStatusTransferTransparentContainer{DRBsSubjectToStatusTransferList: &ie.DRBsSubjectToStatusTransferList{
					List: []ie.DRBsSubjectToStatusTransferItem{{
						DRBID:       &ie.DRBID{Value: 0},
						DRBStatusUL: &ie.DRBStatusUL{Choice: &ie.DRBStatusUL12{ULCOUNTValue: &ie.COUNTValueForPDCPSN12{PDCPSN12: i64(1), HFNPDCPSN12: i64(1)}}},
						DRBStatusDL: &ie.DRBStatusDL{Choice: &ie.DRBStatusDL12{DLCOUNTValue: &ie.COUNTValueForPDCPSN12{PDCPSN12: i64(1), HFNPDCPSN12: i64(1)}}},
					}},
				}},
			},
			"fragmented receive status ending inside an octet": &f5.DownlinkRANStatusTransfer{
				AMFUENGAPID: amfID(21), RANUENGAPID: ranID(22),
				RANStatusTransferTransparentContainer: &ie.RANStatusTransferTransparentContainer{DRBsSubjectToStatusTransferList: &ie.DRBsSubjectToStatusTransferList{
					List: []ie.DRBsSubjectToStatusTransferItem{{
						DRBID: &ie.DRBID{Value: 1},
						DRBStatusUL: &ie.DRBStatusUL{Choice: &ie.DRBStatusUL18{ULCOUNTValue: &ie.COUNTValueForPDCPSN18{PDCPSN18: i64(1), HFNPDCPSN18: i64(1)},
							ReceiveStatusOfULPDCPSDUs: &aper.BitString{Bytes: bytes.Repeat([]byte{0xFF}, 2049), BitLength: 16385}}},
						DRBStatusDL: &ie.DRBStatusDL{Choice: &ie.DRBStatusDL12{DLCOUNTValue: &ie.COUNTValueForPDCPSN12{PDCPSN12: i64(1), HFNPDCPSN12: i64(1)}}},
					}},
				}},
			},
			"handover type 5GS to EPS": &f5.HandoverCommand{
				AMFUENGAPID: amfID(21), RANUENGAPID: ranID(22), HandoverType: &ie.HandoverType{Value: ie.HandoverTypePresentFivegsToEps},
				NASSecurityParametersFromNGRAN:     &ie.NASSecurityParametersFromNGRAN{Value: aper.OctetString{1}},
				TargetToSourceTransparentContainer: &ie.TargetToSourceTransparentContainer{Value: aper.OctetString{1}},
			},
			"empty container": &f5.HandoverRequestAcknowledge{
				AMFUENGAPID: amfID(21), RANUENGAPID: ranID(22),
				PDUSessionResourceAdmittedList: &ie.PDUSessionResourceAdmittedList{List: []ie.PDUSessionResourceAdmittedItem{
					{PDUSessionID: &ie.PDUSessionID{Value: 1}, HandoverRequestAcknowledgeTransfer: &aper.OctetString{0}},
				}},
				TargetToSourceTransparentContainer: &ie.TargetToSourceTransparentContainer{Value: aper.OctetString{}},
			},
		} {
			b, err := x.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: free5gc cannot build the sample: %v", name, err)
			}
			de := decodeErr(t, b)
			if de.Cause != (Cause{CauseProtocol, ProtocolSemanticError}) || de.AMFUENGAPID == nil || *de.AMFUENGAPID != 21 ||
				de.RANUENGAPID == nil || *de.RANUENGAPID != 22 {
				t.Errorf("%s: got %+v", name, de)
			}
		}
	})
}

func TestMobilityEncodeRejectsBadInput(t *testing.T) {
	tr := []byte{0x10}
	items := []PDUSessionResourceItem{{ID: 1, Transfer: tr}}
	sc := securityContext(1)
	drb := func(d DRBStatus) []DRBStatus { return []DRBStatus{d} }
	c12 := COUNTValue{SNLength: 12}
	hoReq := func(f func(*HandoverRequest)) *HandoverRequest {
		m := &HandoverRequest{SecurityContext: sc, Sessions: []PDUSessionResourceSetupItemHOReq{{ID: 1, SNSSAI: sl1, Transfer: tr}},
			AllowedNSSAI: []identity.SNSSAI{sl1}, SourceToTargetTransparentContainer: tr, GUAMI: guami}
		f(m)
		return m
	}
	if _, err := Encode(hoReq(func(*HandoverRequest) {})); err != nil {
		t.Fatalf("the base Handover Request does not encode: %v", err)
	}
	bad := []Message{
		&Paging{TAIListForPaging: []identity.TAI{tai}, UEPagingIdentity: identity.STMSI{SetID: 0x400}},
		&Paging{TAIListForPaging: []identity.TAI{tai}, UEPagingIdentity: identity.STMSI{Pointer: 0x40}},
		&Paging{},
		&Paging{TAIListForPaging: make([]identity.TAI, 17)},
		&Paging{TAIListForPaging: []identity.TAI{tai}, PagingPriority: 9},
		&Paging{TAIListForPaging: []identity.TAI{tai}, PagingDRX: func() *PagingDRX { d := PagingDRX(4); return &d }()},
		&PathSwitchRequest{RANUENGAPID: 1, SourceAMFUENGAPID: 1 << 40, UserLocation: loc, ToBeSwitched: items},
		&PathSwitchRequest{RANUENGAPID: 1, UserLocation: loc},
		&PathSwitchRequest{RANUENGAPID: 1, UserLocation: loc, ToBeSwitched: items, FailedToSetup: []PDUSessionResourceItem{}},
		&PathSwitchRequestAcknowledge{SecurityContext: SecurityContext{NextHopChainingCount: 8}, Switched: items, AllowedNSSAI: []identity.SNSSAI{sl1}},
		&PathSwitchRequestAcknowledge{SecurityContext: sc, Switched: items},
		&PathSwitchRequestAcknowledge{SecurityContext: sc, AllowedNSSAI: []identity.SNSSAI{sl1}},
		&PathSwitchRequestFailure{},
		&HandoverRequired{TargetID: targetGNB, Sessions: items, SourceToTargetTransparentContainer: tr, HandoverType: Handover5GSToEPS},
		&HandoverRequired{TargetID: targetGNB, Sessions: items},
		&HandoverRequired{TargetID: TargetRANNodeID{GlobalGNBID: GlobalGNBID{PLMN: plmn, BitLen: 21}, SelectedTAI: tai}, Sessions: items, SourceToTargetTransparentContainer: tr},
		&HandoverRequired{TargetID: targetGNB, SourceToTargetTransparentContainer: tr},
		&HandoverRequired{TargetID: targetGNB, Sessions: items, SourceToTargetTransparentContainer: tr, Cause: Cause{Group: 7}},
		&HandoverCommand{TargetToSourceTransparentContainer: tr, HandoverType: Handover5GSToUTRAN},
		&HandoverCommand{},
		&HandoverCommand{TargetToSourceTransparentContainer: tr, Handover: []PDUSessionResourceItem{{ID: 1}}},
		&HandoverPreparationFailure{AMFUENGAPID: -1},
		hoReq(func(m *HandoverRequest) { m.HandoverType = Handover5GSToEPS }),
		hoReq(func(m *HandoverRequest) { m.HandoverType = 4 }),
		hoReq(func(m *HandoverRequest) { m.UEAggregateMaxBitRate.DL = maxBitRate + 1 }),
		hoReq(func(m *HandoverRequest) { m.Sessions = nil }),
		hoReq(func(m *HandoverRequest) { m.Sessions[0].Transfer = nil }),
		hoReq(func(m *HandoverRequest) { m.AllowedNSSAI = nil }),
		hoReq(func(m *HandoverRequest) { m.SourceToTargetTransparentContainer = nil }),
		hoReq(func(m *HandoverRequest) { m.GUAMI.PLMN = identity.PLMN{MCC: "1"} }),
		hoReq(func(m *HandoverRequest) { m.AMFUENGAPID = 1 << 40 }),
		&HandoverRequestAcknowledge{Admitted: items},
		&HandoverRequestAcknowledge{TargetToSourceTransparentContainer: tr},
		&HandoverFailure{AMFUENGAPID: 1 << 40},
		&HandoverNotify{UserLocation: UserLocationNR{NRCGI: NRCGI{PLMN: identity.PLMN{MCC: "2x8", MNC: "93"}}, TAI: tai}},
		&HandoverCancel{Cause: Cause{Group: 5}},
		&HandoverCancelAcknowledge{RANUENGAPID: -1},
		&UplinkRANStatusTransfer{},
		&UplinkRANStatusTransfer{DRBs: make([]DRBStatus, 33)},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 0, UL: c12, DL: c12})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 33, UL: c12, DL: c12})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 16}, DL: c12})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: COUNTValue{}})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 12, PDCPSN: 4096}, DL: c12})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: COUNTValue{SNLength: 12, HFN: 1 << 20}})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 18, PDCPSN: 1 << 18}, DL: c12})},
		&UplinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 18, HFN: 1 << 14}, DL: c12})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: c12, ULReceiveStatus: make([]byte, 257), ULReceiveStatusBits: 2049})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: c12, ULReceiveStatus: []byte{1}, ULReceiveStatusBits: 9})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: c12, ULReceiveStatus: []byte{}, ULReceiveStatusBits: 0})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: c12, DL: c12, ULReceiveStatusBits: 3})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 18}, DL: c12, ULReceiveStatus: make([]byte, 2049), ULReceiveStatusBits: 16385})},
		&DownlinkRANStatusTransfer{DRBs: drb(DRBStatus{DRBID: 1, UL: COUNTValue{SNLength: 18}, DL: c12, ULReceiveStatus: make([]byte, 16385), ULReceiveStatusBits: 131073})},
	}
	for _, m := range bad {
		if _, err := Encode(m); err == nil {
			t.Errorf("Encode(%T %+v) succeeded", m, m)
		}
	}
}

func TestMobilityTransferEncodeRejectsBadInput(t *testing.T) {
	bad := map[string]func() ([]byte, error){
		"nil path switch request": func() ([]byte, error) { return EncodePathSwitchRequestTransfer(nil) },
		"path switch request without flows": func() ([]byte, error) {
			return EncodePathSwitchRequestTransfer(&PathSwitchRequestTransfer{DLTunnel: gnbTunnel})
		},
		"path switch request QFI 64": func() ([]byte, error) {
			return EncodePathSwitchRequestTransfer(&PathSwitchRequestTransfer{DLTunnel: gnbTunnel, QoSFlows: []uint8{64}})
		},
		"path switch request 65 flows": func() ([]byte, error) {
			return EncodePathSwitchRequestTransfer(&PathSwitchRequestTransfer{DLTunnel: gnbTunnel, QoSFlows: make([]uint8, 65)})
		},
		"path switch request no tunnel address": func() ([]byte, error) {
			return EncodePathSwitchRequestTransfer(&PathSwitchRequestTransfer{QoSFlows: []uint8{1}})
		},
		"nil path switch request acknowledge": func() ([]byte, error) { return EncodePathSwitchRequestAcknowledgeTransfer(nil) },
		"path switch request acknowledge bad tunnel": func() ([]byte, error) {
			return EncodePathSwitchRequestAcknowledgeTransfer(&PathSwitchRequestAcknowledgeTransfer{ULTunnel: &GTPTunnel{}})
		},
		"path switch request unsuccessful bad cause": func() ([]byte, error) {
			return EncodePathSwitchRequestUnsuccessfulTransfer(&PathSwitchRequestUnsuccessfulTransfer{Cause: Cause{Group: 5}})
		},
		"nil path switch request setup failed": func() ([]byte, error) { return EncodePathSwitchRequestSetupFailedTransfer(nil) },
		"nil handover required":                func() ([]byte, error) { return EncodeHandoverRequiredTransfer(nil) },
		"nil handover command":                 func() ([]byte, error) { return EncodeHandoverCommandTransfer(nil) },
		"handover command empty flow list": func() ([]byte, error) {
			return EncodeHandoverCommandTransfer(&HandoverCommandTransfer{QoSFlowsToBeForwarded: []uint8{}})
		},
		"handover command bad UL forwarding tunnel": func() ([]byte, error) {
			return EncodeHandoverCommandTransfer(&HandoverCommandTransfer{ULForwardingTunnel: &GTPTunnel{}})
		},
		"nil handover request acknowledge": func() ([]byte, error) { return EncodeHandoverRequestAcknowledgeTransfer(nil) },
		"handover request acknowledge without flows": func() ([]byte, error) {
			return EncodeHandoverRequestAcknowledgeTransfer(&HandoverRequestAcknowledgeTransfer{DLTunnel: gnbTunnel})
		},
		"handover request acknowledge empty failed list": func() ([]byte, error) {
			return EncodeHandoverRequestAcknowledgeTransfer(&HandoverRequestAcknowledgeTransfer{DLTunnel: gnbTunnel,
				QoSFlows: []QoSFlowWithDataForwarding{{QFI: 1}}, FailedQoSFlows: []QoSFlowWithCause{}})
		},
		"handover request acknowledge QFI 64": func() ([]byte, error) {
			return EncodeHandoverRequestAcknowledgeTransfer(&HandoverRequestAcknowledgeTransfer{DLTunnel: gnbTunnel,
				QoSFlows: []QoSFlowWithDataForwarding{{QFI: 64}}})
		},
		"nil handover resource allocation unsuccessful": func() ([]byte, error) {
			return EncodeHandoverResourceAllocationUnsuccessfulTransfer(nil)
		},
		"handover preparation unsuccessful bad cause": func() ([]byte, error) {
			return EncodeHandoverPreparationUnsuccessfulTransfer(&HandoverPreparationUnsuccessfulTransfer{Cause: Cause{Group: 6}})
		},
	}
	for name, f := range bad {
		if b, err := f(); err == nil {
			t.Errorf("%s: encoded % x", name, b)
		}
	}
}

// TestMobilityFree5GCReadsOurs parses our messages with free5gc and compares
// the fields that tern sets.
func TestMobilityFree5GCReadsOurs(t *testing.T) {
	type pair struct {
		id int64
		tr []byte
	}
	for _, m := range sampleMobilityMessages(nil) {
		b := must(Encode(m))
		x, err := f5.Parse(b)
		if err != nil {
			t.Fatalf("free5gc Parse(%T): %v", m, err)
		}
		var got, want []pair
		add := func(id *ie.PDUSessionID, tr *aper.OctetString) { got = append(got, pair{id.Value, *tr}) }
		wantItems := func(l []PDUSessionResourceItem) {
			for _, it := range l {
				want = append(want, pair{int64(it.ID), it.Transfer})
			}
		}
		check := func(what string, ok bool) {
			if !ok {
				t.Errorf("%T: free5gc reads a different %s", m, what)
			}
		}
		switch x := x.(type) {
		case *f5.Paging:
			mm := m.(*Paging)
			s := x.UEPagingIdentity.Choice.(*ie.FiveGSTMSI)
			set, _ := bitsValue(s.AMFSetID.Value)
			ptr, _ := bitsValue(s.AMFPointer.Value)
			check("5G-S-TMSI", set == uint64(mm.UEPagingIdentity.SetID) && ptr == uint64(mm.UEPagingIdentity.Pointer) &&
				bytes.Equal(s.FiveGTMSI.Value, []byte{byte(mm.UEPagingIdentity.TMSI >> 24), byte(mm.UEPagingIdentity.TMSI >> 16),
					byte(mm.UEPagingIdentity.TMSI >> 8), byte(mm.UEPagingIdentity.TMSI)}))
			check("TAI list", len(x.TAIListForPaging.List) == len(mm.TAIListForPaging))
			for i, it := range x.TAIListForPaging.List {
				tac, _ := tacFrom(it.TAI.TAC)
				check("TAI", tac == mm.TAIListForPaging[i].TAC)
			}
			check("paging DRX", (x.PagingDRX == nil) == (mm.PagingDRX == nil) && (x.PagingDRX == nil || x.PagingDRX.Value == ie.PagingDRXPresentV64))
			check("paging priority", (x.PagingPriority == nil && mm.PagingPriority == 0) ||
				(x.PagingPriority != nil && x.PagingPriority.Value == ie.PagingPriorityPresentPriolevel8 && mm.PagingPriority == 8))
			check("paging origin", (x.PagingOrigin != nil) == mm.PagingOriginNon3GPP)
		case *f5.PathSwitchRequest:
			mm := m.(*PathSwitchRequest)
			check("IDs", x.RANUENGAPID.Value == mm.RANUENGAPID && x.SourceAMFUENGAPID.Value == mm.SourceAMFUENGAPID)
			check("UE security capabilities", bytes.Equal(x.UESecurityCapabilities.NRencryptionAlgorithms.Value.Bytes,
				[]byte{byte(mm.UESecurityCapabilities.NREncryption >> 8), byte(mm.UESecurityCapabilities.NREncryption)}))
			for _, it := range x.PDUSessionResourceToBeSwitchedDLList.List {
				add(it.PDUSessionID, it.PathSwitchRequestTransfer)
			}
			if l := x.PDUSessionResourceFailedToSetupListPSReq; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PathSwitchRequestSetupFailedTransfer)
				}
			}
			wantItems(mm.ToBeSwitched)
			wantItems(mm.FailedToSetup)
		case *f5.PathSwitchRequestAcknowledge:
			mm := m.(*PathSwitchRequestAcknowledge)
			check("security context", x.SecurityContext.NextHopChainingCount.Value == int64(mm.SecurityContext.NextHopChainingCount) &&
				bytes.Equal(x.SecurityContext.NextHopNH.Value.Bytes, mm.SecurityContext.NextHopNH[:]))
			check("UE security capabilities", (x.UESecurityCapabilities != nil) == (mm.UESecurityCapabilities != nil))
			check("allowed NSSAI", len(x.AllowedNSSAI.List) == len(mm.AllowedNSSAI))
			check("criticality diagnostics", (x.CriticalityDiagnostics != nil) == (mm.CriticalityDiagnostics != nil))
			for _, it := range x.PDUSessionResourceSwitchedList.List {
				add(it.PDUSessionID, it.PathSwitchRequestAcknowledgeTransfer)
			}
			if l := x.PDUSessionResourceReleasedListPSAck; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PathSwitchRequestUnsuccessfulTransfer)
				}
			}
			wantItems(mm.Switched)
			wantItems(mm.Released)
		case *f5.PathSwitchRequestFailure:
			for _, it := range x.PDUSessionResourceReleasedListPSFail.List {
				add(it.PDUSessionID, it.PathSwitchRequestUnsuccessfulTransfer)
			}
			wantItems(m.(*PathSwitchRequestFailure).Released)
		case *f5.HandoverRequired:
			mm := m.(*HandoverRequired)
			r := x.TargetID.Choice.(*ie.TargetRANNodeID)
			g := r.GlobalRANNodeID.Choice.(*ie.GlobalGNBID).GNBID.Choice.(*ie.GNBIDForGNBID).Value
			id, _ := bitsValue(g)
			tac, _ := tacFrom(r.SelectedTAI.TAC)
			check("target ID", id == uint64(mm.TargetID.GlobalGNBID.GNBID) && g.BitLength == uint64(mm.TargetID.GlobalGNBID.BitLen) &&
				tac == mm.TargetID.SelectedTAI.TAC)
			check("handover type", x.HandoverType.Value == ie.HandoverTypePresentIntra5gs)
			check("cause", x.Cause.Choice.(*ie.CauseRadioNetwork).Value == aper.Enumerated(mm.Cause.Value))
			check("direct forwarding path availability", (x.DirectForwardingPathAvailability != nil) == mm.DirectForwardingPathAvailable)
			check("container", bytes.Equal(x.SourceToTargetTransparentContainer.Value, mm.SourceToTargetTransparentContainer))
			for _, it := range x.PDUSessionResourceListHORqd.List {
				add(it.PDUSessionID, it.HandoverRequiredTransfer)
			}
			wantItems(mm.Sessions)
		case *f5.HandoverCommand:
			mm := m.(*HandoverCommand)
			check("container", bytes.Equal(x.TargetToSourceTransparentContainer.Value, mm.TargetToSourceTransparentContainer))
			if l := x.PDUSessionResourceHandoverList; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.HandoverCommandTransfer)
				}
			}
			if l := x.PDUSessionResourceToReleaseListHOCmd; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.HandoverPreparationUnsuccessfulTransfer)
				}
			}
			wantItems(mm.Handover)
			wantItems(mm.ToRelease)
		case *f5.HandoverPreparationFailure:
			check("cause", x.Cause.Choice.(*ie.CauseRadioNetwork).Value == aper.Enumerated(m.(*HandoverPreparationFailure).Cause.Value))
		case *f5.HandoverRequest:
			mm := m.(*HandoverRequest)
			check("AMF UE NGAP ID", x.AMFUENGAPID.Value == mm.AMFUENGAPID)
			check("handover type", x.HandoverType.Value == aper.Enumerated(mm.HandoverType))
			check("UE AMBR", x.UEAggregateMaximumBitRate.UEAggregateMaximumBitRateDL.Value == int64(mm.UEAggregateMaxBitRate.DL) &&
				x.UEAggregateMaximumBitRate.UEAggregateMaximumBitRateUL.Value == int64(mm.UEAggregateMaxBitRate.UL))
			check("security context", bytes.Equal(x.SecurityContext.NextHopNH.Value.Bytes, mm.SecurityContext.NextHopNH[:]))
			g, _ := guamiFrom(x.GUAMI)
			check("GUAMI", g == mm.GUAMI)
			for i, it := range x.PDUSessionResourceSetupListHOReq.List {
				add(it.PDUSessionID, it.HandoverRequestTransfer)
				s, _ := snssaiFrom(it.SNSSAI)
				check("S-NSSAI", s == mm.Sessions[i].SNSSAI)
				want = append(want, pair{int64(mm.Sessions[i].ID), mm.Sessions[i].Transfer})
				// the transfer is a setup request transfer to free5gc too
				check("handover request transfer", ie.UnmarshalBinary(*it.HandoverRequestTransfer, new(ie.PDUSessionResourceSetupRequestTransfer)) == nil)
			}
		case *f5.HandoverRequestAcknowledge:
			mm := m.(*HandoverRequestAcknowledge)
			for _, it := range x.PDUSessionResourceAdmittedList.List {
				add(it.PDUSessionID, it.HandoverRequestAcknowledgeTransfer)
			}
			if l := x.PDUSessionResourceFailedToSetupListHOAck; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.HandoverResourceAllocationUnsuccessfulTransfer)
				}
			}
			wantItems(mm.Admitted)
			wantItems(mm.FailedToSetup)
		case *f5.HandoverFailure:
			check("AMF UE NGAP ID", x.AMFUENGAPID.Value == m.(*HandoverFailure).AMFUENGAPID)
		case *f5.HandoverNotify:
			u, err := userLocationFrom(x.UserLocationInformation)
			check("user location", err == nil && u == m.(*HandoverNotify).UserLocation)
		case *f5.HandoverCancel:
			check("cause", x.Cause.Choice.(*ie.CauseRadioNetwork).Value == ie.CauseRadioNetworkPresentHandoverCancelled)
		case *f5.HandoverCancelAcknowledge:
			check("IDs", x.AMFUENGAPID.Value == 3 && x.RANUENGAPID.Value == 5)
		case *f5.UplinkRANStatusTransfer:
			checkDRBs(t, x.RANStatusTransferTransparentContainer, m.(*UplinkRANStatusTransfer).DRBs)
		case *f5.DownlinkRANStatusTransfer:
			checkDRBs(t, x.RANStatusTransferTransparentContainer, m.(*DownlinkRANStatusTransfer).DRBs)
		default:
			t.Fatalf("free5gc parsed %T as %T", m, x)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T: free5gc sees items %+v, want %+v", m, got, want)
		}
	}
}

// checkDRBs compares a RAN Status Transfer Transparent Container as free5gc
// reads it with the DRBs it was built from.
func checkDRBs(t *testing.T, c *ie.RANStatusTransferTransparentContainer, drbs []DRBStatus) {
	t.Helper()
	l := c.DRBsSubjectToStatusTransferList.List
	if len(l) != len(drbs) {
		t.Fatalf("%d DRBs, want %d", len(l), len(drbs))
	}
	for i, it := range l {
		d := drbs[i]
		var ul, dl [2]int64
		var rs *aper.BitString
		switch c := it.DRBStatusUL.Choice.(type) {
		case *ie.DRBStatusUL12:
			ul, rs = [2]int64{*c.ULCOUNTValue.PDCPSN12, *c.ULCOUNTValue.HFNPDCPSN12}, c.ReceiveStatusOfULPDCPSDUs
			if d.UL.SNLength != 12 {
				t.Errorf("DRB %d: UL is 12-bit", d.DRBID)
			}
		case *ie.DRBStatusUL18:
			ul, rs = [2]int64{*c.ULCOUNTValue.PDCPSN18, *c.ULCOUNTValue.HFNPDCPSN18}, c.ReceiveStatusOfULPDCPSDUs
			if d.UL.SNLength != 18 {
				t.Errorf("DRB %d: UL is 18-bit", d.DRBID)
			}
		}
		switch c := it.DRBStatusDL.Choice.(type) {
		case *ie.DRBStatusDL12:
			dl = [2]int64{*c.DLCOUNTValue.PDCPSN12, *c.DLCOUNTValue.HFNPDCPSN12}
			if d.DL.SNLength != 12 {
				t.Errorf("DRB %d: DL is 12-bit", d.DRBID)
			}
		case *ie.DRBStatusDL18:
			dl = [2]int64{*c.DLCOUNTValue.PDCPSN18, *c.DLCOUNTValue.HFNPDCPSN18}
			if d.DL.SNLength != 18 {
				t.Errorf("DRB %d: DL is 18-bit", d.DRBID)
			}
		}
		if it.DRBID.Value != int64(d.DRBID) || ul != [2]int64{int64(d.UL.PDCPSN), int64(d.UL.HFN)} ||
			dl != [2]int64{int64(d.DL.PDCPSN), int64(d.DL.HFN)} {
			t.Errorf("DRB %d: free5gc reads ID %d UL %v DL %v", d.DRBID, it.DRBID.Value, ul, dl)
		}
		if (rs == nil) != (d.ULReceiveStatus == nil) || (rs != nil && (rs.BitLength != uint64(d.ULReceiveStatusBits) || !bytes.Equal(rs.Bytes, d.ULReceiveStatus))) {
			t.Errorf("DRB %d: receive status %+v", d.DRBID, rs)
		}
	}
}

// TestMobilityTransferFree5GCReadsOurs decodes our transfer encodings with
// free5gc's own decoder and compares the fields.
func TestMobilityTransferFree5GCReadsOurs(t *testing.T) {
	tunnel := func(x *ie.UPTransportLayerInformation, want GTPTunnel) bool {
		g, err := gtpTunnelFrom(x)
		return err == nil && g == want
	}
	t.Run("path switch request", func(t *testing.T) {
		x := new(ie.PathSwitchRequestTransfer)
		if err := ie.UnmarshalBinary(must(EncodePathSwitchRequestTransfer(psReqT)), x); err != nil {
			t.Fatal(err)
		}
		l := x.QosFlowAcceptedList.List
		if !tunnel(x.DLNGUUPTNLInformation, gnbTunnel) || x.DLNGUTNLInformationReused == nil ||
			len(l) != 2 || l[0].QosFlowIdentifier.Value != 1 || l[1].QosFlowIdentifier.Value != 63 {
			t.Errorf("%+v", x)
		}
	})
	t.Run("path switch request acknowledge", func(t *testing.T) {
		x := new(ie.PathSwitchRequestAcknowledgeTransfer)
		if err := ie.UnmarshalBinary(must(EncodePathSwitchRequestAcknowledgeTransfer(psAckT)), x); err != nil {
			t.Fatal(err)
		}
		if !tunnel(x.ULNGUUPTNLInformation, upfTunnel) {
			t.Errorf("%+v", x)
		}
	})
	t.Run("causes", func(t *testing.T) {
		x := new(ie.PathSwitchRequestUnsuccessfulTransfer)
		if err := ie.UnmarshalBinary(must(EncodePathSwitchRequestUnsuccessfulTransfer(psFailT)), x); err != nil {
			t.Fatal(err)
		}
		if c, ok := x.Cause.Choice.(*ie.CauseTransport); !ok || c.Value != ie.CauseTransportPresentTransportResourceUnavailable {
			t.Errorf("path switch request unsuccessful %+v", x.Cause.Choice)
		}
		y := new(ie.PathSwitchRequestSetupFailedTransfer)
		if err := ie.UnmarshalBinary(must(EncodePathSwitchRequestSetupFailedTransfer(psSetupT)), y); err != nil {
			t.Fatal(err)
		}
		if c, ok := y.Cause.Choice.(*ie.CauseRadioNetwork); !ok || c.Value != ie.CauseRadioNetworkPresentUpIntegrityProtectionNotPossible {
			t.Errorf("path switch request setup failed %+v", y.Cause.Choice)
		}
		z := new(ie.HandoverPreparationUnsuccessfulTransfer)
		if err := ie.UnmarshalBinary(must(EncodeHandoverPreparationUnsuccessfulTransfer(hoPrepT)), z); err != nil {
			t.Fatal(err)
		}
		if c, ok := z.Cause.Choice.(*ie.CauseRadioNetwork); !ok || c.Value != ie.CauseRadioNetworkPresentHoFailureInTarget5GCNgranNodeOrTargetSystem {
			t.Errorf("handover preparation unsuccessful %+v", z.Cause.Choice)
		}
		w := new(ie.HandoverResourceAllocationUnsuccessfulTransfer)
		if err := ie.UnmarshalBinary(must(EncodeHandoverResourceAllocationUnsuccessfulTransfer(hoAllocMax)), w); err != nil {
			t.Fatal(err)
		}
		if c, ok := w.Cause.Choice.(*ie.CauseMisc); !ok || c.Value != ie.CauseMiscPresentUnspecified ||
			w.CriticalityDiagnostics == nil || w.CriticalityDiagnostics.ProcedureCode.Value != ProcHandoverResourceAllocation {
			t.Errorf("handover resource allocation unsuccessful %+v", w)
		}
	})
	t.Run("handover required", func(t *testing.T) {
		x := new(ie.HandoverRequiredTransfer)
		if err := ie.UnmarshalBinary(must(EncodeHandoverRequiredTransfer(hoRqdT)), x); err != nil {
			t.Fatal(err)
		}
		if x.DirectForwardingPathAvailability == nil {
			t.Errorf("%+v", x)
		}
	})
	t.Run("handover command", func(t *testing.T) {
		x := new(ie.HandoverCommandTransfer)
		if err := ie.UnmarshalBinary(must(EncodeHandoverCommandTransfer(hoCmdT)), x); err != nil {
			t.Fatal(err)
		}
		l := x.QosFlowToBeForwardedList.List
		if !tunnel(x.DLForwardingUPTNLInformation, fwdTunnel) || len(l) != 2 || l[1].QosFlowIdentifier.Value != 2 {
			t.Errorf("%+v", x)
		}
		if x.IEExtensions == nil || len(x.IEExtensions.List) != 1 || x.IEExtensions.List[0].Id.Value != ie.ProtocolIEIDULForwardingUPTNLInformation ||
			!tunnel(x.IEExtensions.List[0].ULForwardingUPTNLInformation, ulFwdTunnel) {
			t.Errorf("extensions %+v", x.IEExtensions)
		}
	})
	t.Run("handover request acknowledge", func(t *testing.T) {
		x := new(ie.HandoverRequestAcknowledgeTransfer)
		if err := ie.UnmarshalBinary(must(EncodeHandoverRequestAcknowledgeTransfer(hoAckT)), x); err != nil {
			t.Fatal(err)
		}
		l := x.QosFlowSetupResponseList.List
		if !tunnel(x.DLNGUUPTNLInformation, gnbTunnel) || !tunnel(x.DLForwardingUPTNLInformation, fwdTunnel) || len(l) != 2 ||
			l[0].DataForwardingAccepted == nil || l[1].DataForwardingAccepted != nil || l[1].QosFlowIdentifier.Value != 2 ||
			len(x.QosFlowFailedToSetupList.List) != 1 {
			t.Errorf("%+v", x)
		}
	})
}

func TestMobilityTransferDecodeIsStrict(t *testing.T) {
	// values our types cannot hold are errors, not silently changed
	dl, err := gtpTunnelIE(gnbTunnel)
	if err != nil {
		t.Fatal(err)
	}
	accepted := func(q int64) *ie.QosFlowAcceptedList {
		return &ie.QosFlowAcceptedList{List: []ie.QosFlowAcceptedItem{{QosFlowIdentifier: &ie.QosFlowIdentifier{Value: q}}}}
	}
	for _, c := range []struct {
		name string
		x    perWriter
		dec  func([]byte) (any, error)
	}{
		{"QFI 64", &ie.PathSwitchRequestTransfer{DLNGUUPTNLInformation: dl, QosFlowAcceptedList: accepted(64)},
			func(b []byte) (any, error) { return DecodePathSwitchRequestTransfer(b) }},
		{"DL NG-U TNL information reused extension value", &ie.PathSwitchRequestTransfer{DLNGUUPTNLInformation: dl, QosFlowAcceptedList: accepted(1),
			DLNGUTNLInformationReused: &ie.DLNGUTNLInformationReused{Value: 1}},
			func(b []byte) (any, error) { return DecodePathSwitchRequestTransfer(b) }},
		{"data forwarding accepted extension value", &ie.HandoverRequestAcknowledgeTransfer{DLNGUUPTNLInformation: dl,
			QosFlowSetupResponseList: &ie.QosFlowListWithDataForwarding{List: []ie.QosFlowItemWithDataForwarding{{
				QosFlowIdentifier: &ie.QosFlowIdentifier{Value: 1}, DataForwardingAccepted: &ie.DataForwardingAccepted{Value: 1},
			}}}},
			func(b []byte) (any, error) { return DecodeHandoverRequestAcknowledgeTransfer(b) }},
		{"direct forwarding path availability extension value", &ie.HandoverRequiredTransfer{
			DirectForwardingPathAvailability: &ie.DirectForwardingPathAvailability{Value: 1}},
			func(b []byte) (any, error) { return DecodeHandoverRequiredTransfer(b) }},
	} {
		pd := aper.NewPerBitData(nil)
		if err := c.x.Write(pd); err != nil {
			t.Fatalf("%s: free5gc refuses it: %v", c.name, err)
		}
		if v, err := c.dec(pd.Bytes()); err == nil {
			t.Errorf("%s: decoded %+v", c.name, v)
		}
	}
}

func TestMobilityDecodeErrorsAreDecodeErrors(t *testing.T) {
	for _, m := range sampleMobilityMessages(nil) {
		b := must(Encode(m))
		for i := range b {
			g := append([]byte(nil), b...)
			g[i] ^= 0xA5
			if _, err := Decode(g); err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%T flipped at %d: %T %v", m, i, err, err)
				}
			}
		}
	}
}
