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
	upfTunnel = GTPTunnel{Addr: netip.MustParseAddr("10.100.3.2"), TEID: 0x00000001}
	gnbTunnel = GTPTunnel{Addr: netip.MustParseAddr("10.100.3.1"), TEID: 0xFEDCBA98}
	v6Tunnel  = GTPTunnel{Addr: netip.MustParseAddr("2001:db8::3"), TEID: 7}

	setupReqT = &PDUSessionResourceSetupRequestTransfer{
		SessionAMBR:    &AMBR{DL: 200_000_000, UL: 100_000_000},
		ULTunnel:       upfTunnel,
		PDUSessionType: PDUSessionTypeIPv4,
		QoSFlows: []QoSFlowSetupRequestItem{
			{QFI: 1, FiveQI: 9, PriorityLevelARP: 8, PreemptionCap: false, PreemptionVuln: true},
			{QFI: 63, FiveQI: 255, PriorityLevelARP: 15, PreemptionCap: true, PreemptionVuln: false},
		},
	}
	setupReqMinT = &PDUSessionResourceSetupRequestTransfer{
		ULTunnel: v6Tunnel, PDUSessionType: PDUSessionTypeUnstructured,
		QoSFlows: []QoSFlowSetupRequestItem{{QFI: 0, FiveQI: 0, PriorityLevelARP: 1}},
	}
	setupRespT = &PDUSessionResourceSetupResponseTransfer{DLTunnel: gnbTunnel, QoSFlows: []uint8{1, 63}}
	setupResp2 = &PDUSessionResourceSetupResponseTransfer{
		DLTunnel: gnbTunnel, QoSFlows: []uint8{1},
		FailedQoSFlows: []QoSFlowWithCause{{QFI: 2, Cause: Cause{CauseRadioNetwork, RadioNetworkNotSupported5QIValue}}},
	}
	setupFailT = &PDUSessionResourceSetupUnsuccessfulTransfer{Cause: Cause{CauseRadioNetwork, RadioNetworkResourcesNotAvailableForTheSlice}}
	modReqT    = &PDUSessionResourceModifyRequestTransfer{
		SessionAMBR:         &AMBR{DL: 1, UL: maxBitRate},
		QoSFlowsAddOrModify: []QoSFlowSetupRequestItem{{QFI: 2, FiveQI: 5, PriorityLevelARP: 15, PreemptionVuln: true}, {QFI: 1}},
		QoSFlowsToRelease:   []QoSFlowWithCause{{QFI: 3, Cause: Cause{CauseNAS, NASNormalRelease}}},
	}
	modReqAMBRT = &PDUSessionResourceModifyRequestTransfer{SessionAMBR: &AMBR{DL: 5_000_000, UL: 1_000_000}}
	// A new UPF tunnel for the session (a UPF restored with CHOOSE).
	modReqULT = &PDUSessionResourceModifyRequestTransfer{ULTunnels: []ULTunnelModifyItem{{UL: upfTunnel, DL: gnbTunnel}}}
	modRespT  = &PDUSessionResourceModifyResponseTransfer{
		DLTunnel: &gnbTunnel, QoSFlows: []uint8{2},
		FailedQoSFlows: []QoSFlowWithCause{{QFI: 4, Cause: Cause{CauseMisc, MiscUnspecified}}},
	}
	modRespMinT = &PDUSessionResourceModifyResponseTransfer{}
	modFailT    = &PDUSessionResourceModifyUnsuccessfulTransfer{Cause: Cause{CauseRadioNetwork, RadioNetworkUnknownPDUSessionID}}
	relCmdT     = &PDUSessionResourceReleaseCommandTransfer{Cause: Cause{CauseNAS, NASNormalRelease}}
	relRespT    = &PDUSessionResourceReleaseResponseTransfer{}
)

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func samplePDUSessionMessages(diag *CriticalityDiagnostics) []Message {
	setupReq := must(EncodeSetupRequestTransfer(setupReqT))
	setupResp := must(EncodeSetupResponseTransfer(setupRespT))
	setupFail := must(EncodeSetupUnsuccessfulTransfer(setupFailT))
	items := []PDUSessionResourceSetupItemSUReq{
		{ID: 1, NASPDU: ueranemuSetupNAS, SNSSAI: sl1, Transfer: setupReq},
		{ID: 255, SNSSAI: sl2, Transfer: must(EncodeSetupRequestTransfer(setupReqMinT))},
	}
	var key [32]byte
	key[31] = 1
	return []Message{
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: ueranemuReleaseNAS, Items: items,
			UEAggregateMaxBitRate: &AMBR{DL: 1_000_000_000, UL: 500_000_000}},
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 1<<40 - 1, RANUENGAPID: 1<<32 - 1, Items: items[1:]},
		&PDUSessionResourceSetupResponse{AMFUENGAPID: 3, RANUENGAPID: 5,
			Setup: []PDUSessionResourceItem{{ID: 1, Transfer: setupResp}}, Failed: []PDUSessionResourceItem{{ID: 255, Transfer: setupFail}}},
		&PDUSessionResourceSetupResponse{AMFUENGAPID: 3, RANUENGAPID: 5, CriticalityDiagnostics: diag},
		&PDUSessionResourceModifyRequest{AMFUENGAPID: 3, RANUENGAPID: 5, Items: []PDUSessionResourceModifyItemModReq{
			{ID: 1, NASPDU: ueranemuReleaseNAS, Transfer: must(EncodeModifyRequestTransfer(modReqT))},
			{ID: 2, Transfer: must(EncodeModifyRequestTransfer(modReqAMBRT))},
		}},
		&PDUSessionResourceModifyResponse{AMFUENGAPID: 3, RANUENGAPID: 5,
			Modified: []PDUSessionResourceItem{{ID: 1, Transfer: must(EncodeModifyResponseTransfer(modRespT))}},
			Failed:   []PDUSessionResourceItem{{ID: 2, Transfer: must(EncodeModifyUnsuccessfulTransfer(modFailT))}}},
		&PDUSessionResourceModifyResponse{AMFUENGAPID: 3, RANUENGAPID: 5, CriticalityDiagnostics: diag},
		&PDUSessionResourceReleaseCommand{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: ueranemuReleaseNAS,
			Items: []PDUSessionResourceItem{{ID: 1, Transfer: must(EncodeReleaseCommandTransfer(relCmdT))}, {ID: 2, Transfer: []byte{0x10}}}},
		&PDUSessionResourceReleaseCommand{AMFUENGAPID: 3, RANUENGAPID: 5, Items: []PDUSessionResourceItem{{ID: 9, Transfer: []byte{0x10}}}},
		&PDUSessionResourceReleaseResponse{AMFUENGAPID: 3, RANUENGAPID: 5,
			Released: []PDUSessionResourceItem{{ID: 1, Transfer: must(EncodeReleaseResponseTransfer(relRespT))}}, CriticalityDiagnostics: diag},
		&InitialContextSetupRequest{
			AMFUENGAPID: 3, RANUENGAPID: 5, GUAMI: guami, AllowedNSSAI: []identity.SNSSAI{sl1},
			UESecurityCapabilities: UESecurityCapabilities{NREncryption: 0xE000, NRIntegrity: 0x6000},
			SecurityKey:            key, NASPDU: ueranemuReleaseNAS,
			UEAggregateMaxBitRate:        &AMBR{DL: 2_000_000, UL: 1_000_000},
			PDUSessionResourceSetupItems: items,
		},
		&InitialContextSetupResponse{AMFUENGAPID: 3, RANUENGAPID: 5,
			PDUSessionResourceSetupItems:  []PDUSessionResourceItem{{ID: 1, Transfer: setupResp}},
			PDUSessionResourceFailedItems: []PDUSessionResourceItem{{ID: 255, Transfer: setupFail}}},
		&UEContextReleaseComplete{AMFUENGAPID: 3, RANUENGAPID: 5, PDUSessionIDs: []uint8{1, 2, 255}},
	}
}

// transferCase runs one transfer type through our codec without generics
// leaking into the table.
type transferCase struct {
	name string
	in   any
	enc  func() ([]byte, error)
	dec  func([]byte) (any, error)
}

func tcase[T any](name string, in *T, enc func(*T) ([]byte, error), dec func([]byte) (*T, error)) transferCase {
	return transferCase{
		name: name, in: in,
		enc: func() ([]byte, error) { return enc(in) },
		dec: func(b []byte) (any, error) { return dec(b) },
	}
}

// decoders returns every transfer decoder, by name.
func transferDecoders() map[string]func([]byte) (any, error) {
	return map[string]func([]byte) (any, error){
		"setup request":       func(b []byte) (any, error) { return DecodeSetupRequestTransfer(b) },
		"setup response":      func(b []byte) (any, error) { return DecodeSetupResponseTransfer(b) },
		"setup unsuccessful":  func(b []byte) (any, error) { return DecodeSetupUnsuccessfulTransfer(b) },
		"modify request":      func(b []byte) (any, error) { return DecodeModifyRequestTransfer(b) },
		"modify response":     func(b []byte) (any, error) { return DecodeModifyResponseTransfer(b) },
		"modify unsuccessful": func(b []byte) (any, error) { return DecodeModifyUnsuccessfulTransfer(b) },
		"release command":     func(b []byte) (any, error) { return DecodeReleaseCommandTransfer(b) },
		"release response":    func(b []byte) (any, error) { return DecodeReleaseResponseTransfer(b) },

		"path switch request":             func(b []byte) (any, error) { return DecodePathSwitchRequestTransfer(b) },
		"path switch request acknowledge": func(b []byte) (any, error) { return DecodePathSwitchRequestAcknowledgeTransfer(b) },
		"path switch request unsuccessful": func(b []byte) (any, error) {
			return DecodePathSwitchRequestUnsuccessfulTransfer(b)
		},
		"path switch request setup failed": func(b []byte) (any, error) {
			return DecodePathSwitchRequestSetupFailedTransfer(b)
		},
		"handover required":            func(b []byte) (any, error) { return DecodeHandoverRequiredTransfer(b) },
		"handover command":             func(b []byte) (any, error) { return DecodeHandoverCommandTransfer(b) },
		"handover request acknowledge": func(b []byte) (any, error) { return DecodeHandoverRequestAcknowledgeTransfer(b) },
		"handover resource allocation unsuccessful": func(b []byte) (any, error) {
			return DecodeHandoverResourceAllocationUnsuccessfulTransfer(b)
		},
		"handover preparation unsuccessful": func(b []byte) (any, error) {
			return DecodeHandoverPreparationUnsuccessfulTransfer(b)
		},
	}
}

// reencode encodes a decoded transfer again with the matching encoder.
func reencode(v any) ([]byte, error) {
	switch t := v.(type) {
	case *PDUSessionResourceSetupRequestTransfer:
		return EncodeSetupRequestTransfer(t)
	case *PDUSessionResourceSetupResponseTransfer:
		return EncodeSetupResponseTransfer(t)
	case *PDUSessionResourceSetupUnsuccessfulTransfer:
		return EncodeSetupUnsuccessfulTransfer(t)
	case *PDUSessionResourceModifyRequestTransfer:
		return EncodeModifyRequestTransfer(t)
	case *PDUSessionResourceModifyResponseTransfer:
		return EncodeModifyResponseTransfer(t)
	case *PDUSessionResourceModifyUnsuccessfulTransfer:
		return EncodeModifyUnsuccessfulTransfer(t)
	case *PDUSessionResourceReleaseCommandTransfer:
		return EncodeReleaseCommandTransfer(t)
	case *PDUSessionResourceReleaseResponseTransfer:
		return EncodeReleaseResponseTransfer(t)
	case *PathSwitchRequestTransfer:
		return EncodePathSwitchRequestTransfer(t)
	case *PathSwitchRequestAcknowledgeTransfer:
		return EncodePathSwitchRequestAcknowledgeTransfer(t)
	case *PathSwitchRequestUnsuccessfulTransfer:
		return EncodePathSwitchRequestUnsuccessfulTransfer(t)
	case *PathSwitchRequestSetupFailedTransfer:
		return EncodePathSwitchRequestSetupFailedTransfer(t)
	case *HandoverRequiredTransfer:
		return EncodeHandoverRequiredTransfer(t)
	case *HandoverCommandTransfer:
		return EncodeHandoverCommandTransfer(t)
	case *HandoverRequestAcknowledgeTransfer:
		return EncodeHandoverRequestAcknowledgeTransfer(t)
	case *HandoverResourceAllocationUnsuccessfulTransfer:
		return EncodeHandoverResourceAllocationUnsuccessfulTransfer(t)
	case *HandoverPreparationUnsuccessfulTransfer:
		return EncodeHandoverPreparationUnsuccessfulTransfer(t)
	}
	return nil, errors.New("unknown transfer")
}

func transferCases() []transferCase {
	return append([]transferCase{
		tcase("setup request", setupReqT, EncodeSetupRequestTransfer, DecodeSetupRequestTransfer),
		tcase("setup request minimal ipv6", setupReqMinT, EncodeSetupRequestTransfer, DecodeSetupRequestTransfer),
		tcase("setup response", setupRespT, EncodeSetupResponseTransfer, DecodeSetupResponseTransfer),
		tcase("setup response with failed flows", setupResp2, EncodeSetupResponseTransfer, DecodeSetupResponseTransfer),
		tcase("setup unsuccessful", setupFailT, EncodeSetupUnsuccessfulTransfer, DecodeSetupUnsuccessfulTransfer),
		tcase("modify request", modReqT, EncodeModifyRequestTransfer, DecodeModifyRequestTransfer),
		tcase("modify request AMBR only", modReqAMBRT, EncodeModifyRequestTransfer, DecodeModifyRequestTransfer),
		tcase("modify request UL tunnel", modReqULT, EncodeModifyRequestTransfer, DecodeModifyRequestTransfer),
		tcase("modify response", modRespT, EncodeModifyResponseTransfer, DecodeModifyResponseTransfer),
		tcase("modify response empty", modRespMinT, EncodeModifyResponseTransfer, DecodeModifyResponseTransfer),
		tcase("modify unsuccessful", modFailT, EncodeModifyUnsuccessfulTransfer, DecodeModifyUnsuccessfulTransfer),
		tcase("release command", relCmdT, EncodeReleaseCommandTransfer, DecodeReleaseCommandTransfer),
		tcase("release response", relRespT, EncodeReleaseResponseTransfer, DecodeReleaseResponseTransfer),
	}, mobilityTransferCases()...)
}

func TestTransferRoundTrip(t *testing.T) {
	for _, c := range transferCases() {
		b, err := c.enc()
		if err != nil {
			t.Fatalf("%s: encode: %v", c.name, err)
		}
		got, err := c.dec(b)
		if err != nil {
			t.Fatalf("%s: decode % x: %v", c.name, b, err)
		}
		if !reflect.DeepEqual(got, c.in) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", c.name, got, c.in)
		}
	}
}

// TestTransferFree5GCReadsOurs decodes our transfer encodings with
// free5gc's own decoder and compares the fields.
func TestTransferFree5GCReadsOurs(t *testing.T) {
	t.Run("setup request", func(t *testing.T) {
		x := new(ie.PDUSessionResourceSetupRequestTransfer)
		if err := ie.UnmarshalBinary(must(EncodeSetupRequestTransfer(setupReqT)), x); err != nil {
			t.Fatal(err)
		}
		if n := len(x.ProtocolIEs.List); n != 4 {
			t.Fatalf("%d IEs", n)
		}
		l := x.ProtocolIEs.List
		a := l[0].PDUSessionAggregateMaximumBitRate
		if a == nil || a.PDUSessionAggregateMaximumBitRateDL.Value != 200_000_000 || a.PDUSessionAggregateMaximumBitRateUL.Value != 100_000_000 {
			t.Errorf("AMBR %+v", a)
		}
		g := l[1].ULNGUUPTNLInformation.Choice.(*ie.GTPTunnel)
		if !bytes.Equal(g.TransportLayerAddress.Value.Bytes, []byte{10, 100, 3, 2}) || g.TransportLayerAddress.Value.BitLength != 32 ||
			!bytes.Equal(g.GTPTEID.Value, []byte{0, 0, 0, 1}) {
			t.Errorf("UL tunnel %+v %+v", g.TransportLayerAddress, g.GTPTEID)
		}
		if l[2].PDUSessionType.Value != ie.PDUSessionTypePresentIpv4 {
			t.Errorf("type %d", l[2].PDUSessionType.Value)
		}
		fl := l[3].QosFlowSetupRequestList.List
		if len(fl) != 2 {
			t.Fatalf("%d flows", len(fl))
		}
		for i, want := range setupReqT.QoSFlows {
			p := fl[i].QosFlowLevelQosParameters
			arp := p.AllocationAndRetentionPriority
			if fl[i].QosFlowIdentifier.Value != int64(want.QFI) ||
				p.QosCharacteristics.Choice.(*ie.NonDynamic5QIDescriptor).FiveQI.Value != int64(want.FiveQI) ||
				arp.PriorityLevelARP.Value != int64(want.PriorityLevelARP) ||
				(arp.PreEmptionCapability.Value == ie.PreEmptionCapabilityPresentMayTriggerPreEmption) != want.PreemptionCap ||
				(arp.PreEmptionVulnerability.Value == ie.PreEmptionVulnerabilityPresentPreEmptable) != want.PreemptionVuln {
				t.Errorf("flow %d: %+v %+v", i, fl[i].QosFlowIdentifier, arp)
			}
		}
	})
	t.Run("setup response", func(t *testing.T) {
		x := new(ie.PDUSessionResourceSetupResponseTransfer)
		if err := ie.UnmarshalBinary(must(EncodeSetupResponseTransfer(setupResp2)), x); err != nil {
			t.Fatal(err)
		}
		g := x.DLQosFlowPerTNLInformation.UPTransportLayerInformation.Choice.(*ie.GTPTunnel)
		if !bytes.Equal(g.TransportLayerAddress.Value.Bytes, []byte{10, 100, 3, 1}) || !bytes.Equal(g.GTPTEID.Value, []byte{0xFE, 0xDC, 0xBA, 0x98}) {
			t.Errorf("DL tunnel %+v %+v", g.TransportLayerAddress, g.GTPTEID)
		}
		if l := x.DLQosFlowPerTNLInformation.AssociatedQosFlowList.List; len(l) != 1 || l[0].QosFlowIdentifier.Value != 1 {
			t.Errorf("associated flows %+v", l)
		}
		f := x.QosFlowFailedToSetupList.List
		if len(f) != 1 || f[0].QosFlowIdentifier.Value != 2 || f[0].Cause.Choice.(*ie.CauseRadioNetwork).Value != ie.CauseRadioNetworkPresentNotSupported5QIValue {
			t.Errorf("failed flows %+v", f)
		}
	})
	t.Run("modify request", func(t *testing.T) {
		x := new(ie.PDUSessionResourceModifyRequestTransfer)
		if err := ie.UnmarshalBinary(must(EncodeModifyRequestTransfer(modReqT)), x); err != nil {
			t.Fatal(err)
		}
		l := x.ProtocolIEs.List
		if len(l) != 3 || l[0].PDUSessionAggregateMaximumBitRate.PDUSessionAggregateMaximumBitRateUL.Value != maxBitRate {
			t.Fatalf("IEs %+v", l)
		}
		am := l[1].QosFlowAddOrModifyRequestList.List
		if len(am) != 2 || am[0].QosFlowIdentifier.Value != 2 || am[1].QosFlowLevelQosParameters != nil {
			t.Errorf("add or modify %+v", am)
		}
		if r := l[2].QosFlowToReleaseList.List; len(r) != 1 || r[0].Cause.Choice.(*ie.CauseNas).Value != ie.CauseNasPresentNormalRelease {
			t.Errorf("release %+v", r)
		}
	})
	t.Run("modify request UL tunnel", func(t *testing.T) {
		x := new(ie.PDUSessionResourceModifyRequestTransfer)
		if err := ie.UnmarshalBinary(must(EncodeModifyRequestTransfer(modReqULT)), x); err != nil {
			t.Fatal(err)
		}
		l := x.ProtocolIEs.List
		if len(l) != 1 || l[0].ULNGUUPTNLModifyList == nil || len(l[0].ULNGUUPTNLModifyList.List) != 1 {
			t.Fatalf("IEs %+v", l)
		}
		it := l[0].ULNGUUPTNLModifyList.List[0]
		ul := it.ULNGUUPTNLInformation.Choice.(*ie.GTPTunnel)
		dl := it.DLNGUUPTNLInformation.Choice.(*ie.GTPTunnel)
		if !bytes.Equal(ul.TransportLayerAddress.Value.Bytes, []byte{10, 100, 3, 2}) || !bytes.Equal(ul.GTPTEID.Value, []byte{0, 0, 0, 1}) ||
			!bytes.Equal(dl.TransportLayerAddress.Value.Bytes, []byte{10, 100, 3, 1}) || !bytes.Equal(dl.GTPTEID.Value, []byte{0xFE, 0xDC, 0xBA, 0x98}) {
			t.Errorf("UL %+v %+v, DL %+v %+v", ul.TransportLayerAddress, ul.GTPTEID, dl.TransportLayerAddress, dl.GTPTEID)
		}
	})
	t.Run("modify response", func(t *testing.T) {
		x := new(ie.PDUSessionResourceModifyResponseTransfer)
		if err := ie.UnmarshalBinary(must(EncodeModifyResponseTransfer(modRespT)), x); err != nil {
			t.Fatal(err)
		}
		if x.DLNGUUPTNLInformation == nil || len(x.QosFlowAddOrModifyResponseList.List) != 1 || x.QosFlowFailedToAddOrModifyList == nil {
			t.Errorf("%+v", x)
		}
	})
	t.Run("causes", func(t *testing.T) {
		x := new(ie.PDUSessionResourceReleaseCommandTransfer)
		if err := ie.UnmarshalBinary(must(EncodeReleaseCommandTransfer(relCmdT)), x); err != nil {
			t.Fatal(err)
		}
		if c, ok := x.Cause.Choice.(*ie.CauseNas); !ok || c.Value != ie.CauseNasPresentNormalRelease {
			t.Errorf("release command cause %+v", x.Cause.Choice)
		}
		y := new(ie.PDUSessionResourceSetupUnsuccessfulTransfer)
		if err := ie.UnmarshalBinary(must(EncodeSetupUnsuccessfulTransfer(setupFailT)), y); err != nil {
			t.Fatal(err)
		}
		if c, ok := y.Cause.Choice.(*ie.CauseRadioNetwork); !ok || c.Value != ie.CauseRadioNetworkPresentResourcesNotAvailableForTheSlice {
			t.Errorf("setup unsuccessful cause %+v", y.Cause.Choice)
		}
	})
}

// Byte vectors captured from the ueranemu RAN emulator's PDU session
// pipelines, as recorded in free5gc/ngap v1.2.0's tests (ie/*_transfer_test.go,
// message/pdu_session_resource_*_test.go). They come from an encoder other
// than ours.
var (
	ueranemuSetupReqTransfer = []byte{
		0x00, 0x00, 0x04, 0x00, 0x82, 0x00, 0x08, 0x08, 0x0f, 0x42, 0x40, 0x20, 0x0f, 0x42, 0x40, 0x00,
		0x8b, 0x00, 0x0a, 0x01, 0xf0, 0xac, 0x10, 0x1f, 0x3d, 0xc4, 0xb2, 0x20, 0x4e, 0x00, 0x86, 0x00,
		0x01, 0x00, 0x00, 0x88, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00, 0x09, 0x1d, 0x00,
	}
	ueranemuSetupRespTransfer = []byte{0x00, 0x03, 0xe0, 0xac, 0x10, 0x1f, 0x32, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01}
	ueranemuModReqTransfer    = []byte{0x00, 0x00, 0x01, 0x00, 0x87, 0x00, 0x07, 0x01, 0x01, 0x00, 0x00, 0x05, 0x38, 0x40}
	ueranemuModRespTransfer   = []byte{0x10, 0x00, 0x08}
	ueranemuRelCmdTransfer    = []byte{0x10}
	ueranemuRelRespTransfer   = []byte{0x00}
	ueranemuSetupNAS          = []byte{
		0x7e, 0x02, 0x39, 0xed, 0xc1, 0x90, 0x03, 0x7e, 0x00, 0x68, 0x01, 0x00, 0x48, 0x2e, 0x0a, 0x00,
		0xc2, 0x11, 0x00, 0x09, 0x01, 0x00, 0x06, 0x31, 0x31, 0x01, 0x01, 0xff, 0x01, 0x06, 0x01, 0x03,
		0xe8, 0x01, 0x03, 0xe8, 0x29, 0x05, 0x01, 0x0a, 0x3e, 0x00, 0x1b, 0x22, 0x04, 0x01, 0x01, 0x02,
		0x03, 0x79, 0x00, 0x06, 0x01, 0x20, 0x41, 0x01, 0x01, 0x09, 0x7b, 0x00, 0x0d, 0x80, 0x00, 0x0d,
		0x04, 0x08, 0x08, 0x08, 0x08, 0x00, 0x10, 0x02, 0x05, 0x70, 0x25, 0x09, 0x08, 0x69, 0x6e, 0x74,
		0x65, 0x72, 0x6e, 0x65, 0x74, 0x12, 0x0a,
	}
	ueranemuReleaseNAS = []byte{
		0x7e, 0x02, 0x6c, 0xed, 0xba, 0x34, 0x04, 0x7e, 0x00, 0x68, 0x01, 0x00, 0x05, 0x2e, 0x0a, 0x00, 0xd3, 0x24, 0x12, 0x0a,
	}
	ueranemuSetupRequest = []byte{
		0x00, 0x1d, 0x00, 0x80, 0xb2, 0x00, 0x00, 0x04, 0x00, 0x0a, 0x00, 0x06, 0x80, 0xec, 0x77, 0x00,
		0x3d, 0xa7, 0x00, 0x55, 0x00, 0x02, 0x00, 0x01, 0x00, 0x4a, 0x00, 0x80, 0x8e, 0x00, 0x40, 0x0a,
		0x57, 0x7e, 0x02, 0x39, 0xed, 0xc1, 0x90, 0x03, 0x7e, 0x00, 0x68, 0x01, 0x00, 0x48, 0x2e, 0x0a,
		0x00, 0xc2, 0x11, 0x00, 0x09, 0x01, 0x00, 0x06, 0x31, 0x31, 0x01, 0x01, 0xff, 0x01, 0x06, 0x01,
		0x03, 0xe8, 0x01, 0x03, 0xe8, 0x29, 0x05, 0x01, 0x0a, 0x3e, 0x00, 0x1b, 0x22, 0x04, 0x01, 0x01,
		0x02, 0x03, 0x79, 0x00, 0x06, 0x01, 0x20, 0x41, 0x01, 0x01, 0x09, 0x7b, 0x00, 0x0d, 0x80, 0x00,
		0x0d, 0x04, 0x08, 0x08, 0x08, 0x08, 0x00, 0x10, 0x02, 0x05, 0x70, 0x25, 0x09, 0x08, 0x69, 0x6e,
		0x74, 0x65, 0x72, 0x6e, 0x65, 0x74, 0x12, 0x0a, 0x40, 0x20, 0x01, 0x02, 0x03, 0x2d, 0x00, 0x00,
		0x04, 0x00, 0x82, 0x00, 0x08, 0x08, 0x0f, 0x42, 0x40, 0x20, 0x0f, 0x42, 0x40, 0x00, 0x8b, 0x00,
		0x0a, 0x01, 0xf0, 0xac, 0x10, 0x1f, 0x3d, 0xc4, 0xb2, 0x20, 0x4e, 0x00, 0x86, 0x00, 0x01, 0x00,
		0x00, 0x88, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00, 0x09, 0x1d, 0x00, 0x00, 0x6e, 0x40, 0x08, 0x08,
		0x0f, 0x42, 0x40, 0x20, 0x0f, 0x42, 0x40,
	}
	ueranemuSetupResponse = []byte{
		0x20, 0x1d, 0x00, 0x28, 0x00, 0x00, 0x03, 0x00, 0x0a, 0x40, 0x06, 0x80, 0xec, 0x77, 0x00, 0x3d,
		0xa7, 0x00, 0x55, 0x40, 0x02, 0x00, 0x01, 0x00, 0x4b, 0x40, 0x11, 0x00, 0x00, 0x0a, 0x0d, 0x00,
		0x03, 0xe0, 0xac, 0x10, 0x1f, 0x32, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01,
	}
	ueranemuReleaseCommand = []byte{
		0x00, 0x1c, 0x00, 0x35, 0x00, 0x00, 0x04, 0x00, 0x0a, 0x00, 0x06, 0x80, 0xe1, 0x0a, 0x55, 0x49,
		0x33, 0x00, 0x55, 0x00, 0x02, 0x00, 0x01, 0x00, 0x26, 0x40, 0x15, 0x14, 0x7e, 0x02, 0x6c, 0xed,
		0xba, 0x34, 0x04, 0x7e, 0x00, 0x68, 0x01, 0x00, 0x05, 0x2e, 0x0a, 0x00, 0xd3, 0x24, 0x12, 0x0a,
		0x00, 0x4f, 0x00, 0x05, 0x00, 0x00, 0x0a, 0x01, 0x10,
	}
)

func TestTransferVectors(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		dec  func([]byte) (any, error)
		want any
	}{
		{"setup request", ueranemuSetupReqTransfer, transferDecoders()["setup request"], &PDUSessionResourceSetupRequestTransfer{
			SessionAMBR:    &AMBR{DL: 1_000_000, UL: 1_000_000},
			ULTunnel:       GTPTunnel{Addr: netip.MustParseAddr("172.16.31.61"), TEID: 0xc4b2204e},
			PDUSessionType: PDUSessionTypeIPv4,
			QoSFlows:       []QoSFlowSetupRequestItem{{QFI: 1, FiveQI: 9, PriorityLevelARP: 8, PreemptionCap: true}},
		}},
		{"setup response", ueranemuSetupRespTransfer, transferDecoders()["setup response"], &PDUSessionResourceSetupResponseTransfer{
			DLTunnel: GTPTunnel{Addr: netip.MustParseAddr("172.16.31.50"), TEID: 1}, QoSFlows: []uint8{1},
		}},
		{"modify request", ueranemuModReqTransfer, transferDecoders()["modify request"], &PDUSessionResourceModifyRequestTransfer{
			QoSFlowsAddOrModify: []QoSFlowSetupRequestItem{{QFI: 2, FiveQI: 5, PriorityLevelARP: 15, PreemptionVuln: true}},
		}},
		{"modify response", ueranemuModRespTransfer, transferDecoders()["modify response"], &PDUSessionResourceModifyResponseTransfer{QoSFlows: []uint8{2}}},
		{"release command", ueranemuRelCmdTransfer, transferDecoders()["release command"], &PDUSessionResourceReleaseCommandTransfer{Cause: Cause{CauseNAS, NASNormalRelease}}},
		{"release response", ueranemuRelRespTransfer, transferDecoders()["release response"], &PDUSessionResourceReleaseResponseTransfer{}},
	}
	for _, c := range cases {
		got, err := c.dec(c.b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		out, err := reencode(got)
		if err != nil {
			t.Fatalf("%s: re-encode: %v", c.name, err)
		}
		if !bytes.Equal(out, c.b) {
			t.Errorf("%s: re-encoding differs:\n got % x\nwant % x", c.name, out, c.b)
		}
	}
}

func TestPDUSessionMessageVectors(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want Message
	}{
		{"setup request", ueranemuSetupRequest, &PDUSessionResourceSetupRequest{
			AMFUENGAPID: 1015608786343, RANUENGAPID: 1,
			Items: []PDUSessionResourceSetupItemSUReq{{
				ID: 10, NASPDU: ueranemuSetupNAS, SNSSAI: identity.SNSSAI{SST: 1, SD: 0x010203}, Transfer: ueranemuSetupReqTransfer,
			}},
			UEAggregateMaxBitRate: &AMBR{DL: 1_000_000, UL: 1_000_000},
		}},
		{"setup response", ueranemuSetupResponse, &PDUSessionResourceSetupResponse{
			AMFUENGAPID: 1015608786343, RANUENGAPID: 1,
			Setup: []PDUSessionResourceItem{{ID: 10, Transfer: ueranemuSetupRespTransfer}},
		}},
		{"release command", ueranemuReleaseCommand, &PDUSessionResourceReleaseCommand{
			AMFUENGAPID: 966541003059, RANUENGAPID: 1,
			NASPDU: ueranemuReleaseNAS,
			Items:  []PDUSessionResourceItem{{ID: 10, Transfer: ueranemuRelCmdTransfer}},
		}},
	}
	for _, c := range cases {
		got, err := Decode(c.b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		out, err := Encode(c.want)
		if err != nil {
			t.Fatalf("%s: encode: %v", c.name, err)
		}
		if !bytes.Equal(out, c.b) {
			t.Errorf("%s: encoding differs:\n got % x\nwant % x", c.name, out, c.b)
		}
	}
}

// TestPDUSessionMessagesFree5GCReadsOurs parses our messages with free5gc
// and compares the PDU session resource lists field by field.
func TestPDUSessionMessagesFree5GCReadsOurs(t *testing.T) {
	for _, m := range samplePDUSessionMessages(nil) {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		x, err := f5.Parse(b)
		if err != nil {
			t.Fatalf("free5gc Parse(%T): %v", m, err)
		}
		type pair struct {
			id int64
			tr []byte
		}
		var got, want []pair
		add := func(id *ie.PDUSessionID, tr *aper.OctetString) {
			p := pair{id: id.Value}
			if tr != nil {
				p.tr = *tr
			}
			got = append(got, p)
		}
		wantItems := func(l []PDUSessionResourceItem) {
			for _, it := range l {
				want = append(want, pair{int64(it.ID), it.Transfer})
			}
		}
		switch x := x.(type) {
		case *f5.PDUSessionResourceSetupRequest:
			mm := m.(*PDUSessionResourceSetupRequest)
			for i, it := range x.PDUSessionResourceSetupListSUReq.List {
				add(it.PDUSessionID, it.PDUSessionResourceSetupRequestTransfer)
				w := mm.Items[i]
				want = append(want, pair{int64(w.ID), w.Transfer})
				if s, _ := snssaiFrom(it.SNSSAI); s != w.SNSSAI || (it.PDUSessionNASPDU == nil) != (w.NASPDU == nil) {
					t.Errorf("setup item %d: %+v", i, it)
				}
			}
			if (x.UEAggregateMaximumBitRate != nil) != (mm.UEAggregateMaxBitRate != nil) ||
				(x.UEAggregateMaximumBitRate != nil && x.UEAggregateMaximumBitRate.UEAggregateMaximumBitRateDL.Value != int64(mm.UEAggregateMaxBitRate.DL)) {
				t.Errorf("UE AMBR %+v", x.UEAggregateMaximumBitRate)
			}
		case *f5.PDUSessionResourceSetupResponse:
			mm := m.(*PDUSessionResourceSetupResponse)
			if l := x.PDUSessionResourceSetupListSURes; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PDUSessionResourceSetupResponseTransfer)
				}
			}
			if l := x.PDUSessionResourceFailedToSetupListSURes; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PDUSessionResourceSetupUnsuccessfulTransfer)
				}
			}
			wantItems(mm.Setup)
			wantItems(mm.Failed)
		case *f5.PDUSessionResourceModifyRequest:
			for _, it := range x.PDUSessionResourceModifyListModReq.List {
				add(it.PDUSessionID, it.PDUSessionResourceModifyRequestTransfer)
			}
			for _, it := range m.(*PDUSessionResourceModifyRequest).Items {
				want = append(want, pair{int64(it.ID), it.Transfer})
			}
		case *f5.PDUSessionResourceModifyResponse:
			mm := m.(*PDUSessionResourceModifyResponse)
			if l := x.PDUSessionResourceModifyListModRes; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PDUSessionResourceModifyResponseTransfer)
				}
			}
			if l := x.PDUSessionResourceFailedToModifyListModRes; l != nil {
				for _, it := range l.List {
					add(it.PDUSessionID, it.PDUSessionResourceModifyUnsuccessfulTransfer)
				}
			}
			wantItems(mm.Modified)
			wantItems(mm.Failed)
		case *f5.PDUSessionResourceReleaseCommand:
			for _, it := range x.PDUSessionResourceToReleaseListRelCmd.List {
				add(it.PDUSessionID, it.PDUSessionResourceReleaseCommandTransfer)
			}
			wantItems(m.(*PDUSessionResourceReleaseCommand).Items)
		case *f5.PDUSessionResourceReleaseResponse:
			for _, it := range x.PDUSessionResourceReleasedListRelRes.List {
				add(it.PDUSessionID, it.PDUSessionResourceReleaseResponseTransfer)
			}
			wantItems(m.(*PDUSessionResourceReleaseResponse).Released)
		case *f5.InitialContextSetupRequest:
			mm := m.(*InitialContextSetupRequest)
			for _, it := range x.PDUSessionResourceSetupListCxtReq.List {
				add(it.PDUSessionID, it.PDUSessionResourceSetupRequestTransfer)
			}
			for _, it := range mm.PDUSessionResourceSetupItems {
				want = append(want, pair{int64(it.ID), it.Transfer})
			}
			if x.UEAggregateMaximumBitRate.UEAggregateMaximumBitRateUL.Value != int64(mm.UEAggregateMaxBitRate.UL) {
				t.Errorf("ICS UE AMBR %+v", x.UEAggregateMaximumBitRate)
			}
		case *f5.InitialContextSetupResponse:
			mm := m.(*InitialContextSetupResponse)
			for _, it := range x.PDUSessionResourceSetupListCxtRes.List {
				add(it.PDUSessionID, it.PDUSessionResourceSetupResponseTransfer)
			}
			for _, it := range x.PDUSessionResourceFailedToSetupListCxtRes.List {
				add(it.PDUSessionID, it.PDUSessionResourceSetupUnsuccessfulTransfer)
			}
			wantItems(mm.PDUSessionResourceSetupItems)
			wantItems(mm.PDUSessionResourceFailedItems)
		case *f5.UEContextReleaseComplete:
			for _, it := range x.PDUSessionResourceListCxtRelCpl.List {
				add(it.PDUSessionID, nil)
			}
			for _, id := range m.(*UEContextReleaseComplete).PDUSessionIDs {
				want = append(want, pair{id: int64(id)})
			}
		default:
			t.Fatalf("free5gc parsed %T as %T", m, x)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T: free5gc sees %+v, want %+v", m, got, want)
		}
		if len(got) == 0 && m.(interface{ MessageType() MessageType }).MessageType() == InitiatingMessage {
			t.Errorf("%T: no items compared", m)
		}
	}
}

func TestTransferMalformed(t *testing.T) {
	decs := transferDecoders()
	for _, c := range transferCases() {
		b := must(c.enc())
		for n := 0; n < len(b); n++ {
			if v, err := c.dec(b[:n]); err == nil {
				t.Errorf("%s truncated to %d: decoded %+v", c.name, n, v)
			}
		}
		if v, err := c.dec(append(append([]byte(nil), b...), 0)); err == nil {
			t.Errorf("%s with a trailing octet: decoded %+v", c.name, v)
		}
		// every decoder on every other transfer, and bit flips: errors or
		// values, never panics
		for _, dec := range decs {
			_, _ = dec(b)
			for i := range b {
				g := append([]byte(nil), b...)
				g[i] ^= 0xA5
				_, _ = dec(g)
			}
		}
	}
	for name, dec := range decs {
		for _, b := range [][]byte{nil, {}, {0xff}, bytes.Repeat([]byte{0xff}, 64)} {
			if v, err := dec(b); err == nil {
				t.Errorf("%s decoded % x as %+v", name, b, v)
			}
		}
	}
}

func TestTransferEncodeRejectsBadInput(t *testing.T) {
	flow := QoSFlowSetupRequestItem{QFI: 1, FiveQI: 9, PriorityLevelARP: 8}
	bad := map[string]func() ([]byte, error){
		"nil setup request": func() ([]byte, error) { return EncodeSetupRequestTransfer(nil) },
		"no flows": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel})
		},
		"QFI 64": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel,
				QoSFlows: []QoSFlowSetupRequestItem{{QFI: 64, FiveQI: 9, PriorityLevelARP: 8}}})
		},
		"ARP 0": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel,
				QoSFlows: []QoSFlowSetupRequestItem{{QFI: 1, FiveQI: 9}}})
		},
		"ARP 16": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel,
				QoSFlows: []QoSFlowSetupRequestItem{{QFI: 1, FiveQI: 9, PriorityLevelARP: 16}}})
		},
		"no tunnel address": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{QoSFlows: []QoSFlowSetupRequestItem{flow}})
		},
		"PDU session type 5": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel, PDUSessionType: 5,
				QoSFlows: []QoSFlowSetupRequestItem{flow}})
		},
		"AMBR above 4 Tbit/s": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{SessionAMBR: &AMBR{DL: maxBitRate + 1},
				ULTunnel: upfTunnel, QoSFlows: []QoSFlowSetupRequestItem{flow}})
		},
		"65 flows": func() ([]byte, error) {
			return EncodeSetupRequestTransfer(&PDUSessionResourceSetupRequestTransfer{ULTunnel: upfTunnel,
				QoSFlows: make([]QoSFlowSetupRequestItem, 65)})
		},
		"response without flows": func() ([]byte, error) {
			return EncodeSetupResponseTransfer(&PDUSessionResourceSetupResponseTransfer{DLTunnel: gnbTunnel})
		},
		"response empty failed list": func() ([]byte, error) {
			return EncodeSetupResponseTransfer(&PDUSessionResourceSetupResponseTransfer{DLTunnel: gnbTunnel, QoSFlows: []uint8{1},
				FailedQoSFlows: []QoSFlowWithCause{}})
		},
		"bad cause group": func() ([]byte, error) {
			return EncodeReleaseCommandTransfer(&PDUSessionResourceReleaseCommandTransfer{Cause: Cause{Group: 9}})
		},
		"nil release response": func() ([]byte, error) { return EncodeReleaseResponseTransfer(nil) },
		"modify empty add list": func() ([]byte, error) {
			return EncodeModifyRequestTransfer(&PDUSessionResourceModifyRequestTransfer{QoSFlowsAddOrModify: []QoSFlowSetupRequestItem{}})
		},
	}
	for name, f := range bad {
		if b, err := f(); err == nil {
			t.Errorf("%s: encoded % x", name, b)
		}
	}
}

func TestPDUSessionEncodeRejectsBadInput(t *testing.T) {
	tr := []byte{0x10}
	items := []PDUSessionResourceSetupItemSUReq{{ID: 1, SNSSAI: sl1, Transfer: tr}}
	ics := func(a *AMBR, l []PDUSessionResourceSetupItemSUReq) *InitialContextSetupRequest {
		return &InitialContextSetupRequest{GUAMI: guami, AllowedNSSAI: []identity.SNSSAI{sl1}, UEAggregateMaxBitRate: a, PDUSessionResourceSetupItems: l}
	}
	bad := []Message{
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 1, RANUENGAPID: 1},
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 1, RANUENGAPID: 1, Items: []PDUSessionResourceSetupItemSUReq{{ID: 1, SNSSAI: sl1}}},
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 1, RANUENGAPID: 1, Items: make([]PDUSessionResourceSetupItemSUReq, 257)},
		&PDUSessionResourceSetupRequest{AMFUENGAPID: 1, RANUENGAPID: 1, Items: items, NASPDU: []byte{}},
		&PDUSessionResourceSetupRequest{AMFUENGAPID: -1, RANUENGAPID: 1, Items: items},
		&PDUSessionResourceSetupResponse{AMFUENGAPID: 1, RANUENGAPID: 1, Setup: []PDUSessionResourceItem{}},
		&PDUSessionResourceModifyRequest{AMFUENGAPID: 1, RANUENGAPID: 1},
		&PDUSessionResourceModifyResponse{AMFUENGAPID: 1, RANUENGAPID: 1, Failed: []PDUSessionResourceItem{{ID: 1}}},
		&PDUSessionResourceReleaseCommand{AMFUENGAPID: 1, RANUENGAPID: 1},
		&PDUSessionResourceReleaseResponse{AMFUENGAPID: 1, RANUENGAPID: 1},
		&UEContextReleaseComplete{AMFUENGAPID: 1, RANUENGAPID: 1, PDUSessionIDs: []uint8{}},
		// TS 38.413 §9.2.2.1: UE-AMBR is conditional on the setup list
		ics(nil, items),
		ics(&AMBR{DL: 1, UL: 1}, nil),
		ics(&AMBR{DL: 1, UL: 1}, []PDUSessionResourceSetupItemSUReq{}),
	}
	for _, m := range bad {
		if _, err := Encode(m); err == nil {
			t.Errorf("Encode(%+v) succeeded", m)
		}
	}
}

func TestPDUSessionDecodeErrors(t *testing.T) {
	t.Run("truncated keeps procedure and IDs", func(t *testing.T) {
		pc := ProcPDUSessionResourceSetup
		// diagnostics put an IE after the IDs in every sample
		for _, m := range samplePDUSessionMessages(&CriticalityDiagnostics{ProcedureCode: &pc}) {
			b := must(Encode(m))
			de := decodeErr(t, b[:len(b)-2])
			if !de.ProcedureKnown || de.ProcedureCode != m.ProcedureCode() || de.MessageType != m.MessageType() {
				t.Errorf("%T: procedure not reported: %+v", m, de)
			}
			if de.Cause.Group != CauseProtocol || !de.Notify {
				t.Errorf("%T: cause %v notify %v", m, de.Cause, de.Notify)
			}
			// the IDs come first and are read before the cut
			if de.AMFUENGAPID == nil || de.RANUENGAPID == nil {
				t.Errorf("%T: IDs not reported: %+v", m, de)
			}
			if _, err := Encode(de.ErrorIndication()); err != nil {
				t.Errorf("%T: error indication: %v", m, err)
			}
		}
	})
	t.Run("cut inside the RAN UE NGAP ID keeps the AMF UE NGAP ID", func(t *testing.T) {
		b := must(Encode(&PDUSessionResourceReleaseResponse{AMFUENGAPID: 1<<40 - 1, RANUENGAPID: 77,
			Released: []PDUSessionResourceItem{{ID: 1, Transfer: []byte{0}}}}))
		ies := walkIEs(b[3:])
		if len(ies) != 3 || ies[1].id != ie.ProtocolIEIDRANUENGAPID {
			t.Fatalf("IEs %+v", ies)
		}
		cut := len(b) - len(ies[2].field) - 1 // last octet of the RAN UE NGAP ID
		de := decodeErr(t, b[:cut])
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 1<<40-1 || de.RANUENGAPID != nil {
			t.Errorf("got AMF %v RAN %v", de.AMFUENGAPID, de.RANUENGAPID)
		}
	})
	t.Run("missing mandatory list", func(t *testing.T) {
		// a Setup Response with only IDs relabelled as Release Response,
		// whose Released list is mandatory
		b := must(Encode(&PDUSessionResourceSetupResponse{AMFUENGAPID: 11, RANUENGAPID: 12}))
		b[1] = byte(ProcPDUSessionResourceRelease)
		de := decodeErr(t, b)
		if de.Cause != (Cause{CauseProtocol, ProtocolAbstractSyntaxErrorReject}) || de.ProcedureCode != ProcPDUSessionResourceRelease {
			t.Errorf("got %+v", de)
		}
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 11 || de.RANUENGAPID == nil || *de.RANUENGAPID != 12 {
			t.Errorf("IDs not reported: %+v", de)
		}
		if de.Diagnostics == nil || len(de.Diagnostics.IEs) != 1 || de.Diagnostics.IEs[0].IEID != ie.ProtocolIEIDPDUSessionResourceReleasedListRelRes {
			t.Errorf("diagnostics %+v", de.Diagnostics)
		}
	})
	t.Run("ICS with sessions but no UE-AMBR", func(t *testing.T) {
		var sample Message
		for _, m := range samplePDUSessionMessages(nil) {
			if m, ok := m.(*InitialContextSetupRequest); ok {
				sample = m
			}
		}
		// free5gc refuses to encode it: cut the IE out of our encoding
		full := must(Encode(sample))
		var ies []byte
		n := 0
		for _, x := range walkIEs(full[3:]) {
			if x.id != ie.ProtocolIEIDUEAggregateMaximumBitRate {
				ies = append(ies, x.field...)
				n++
			}
		}
		value := append([]byte{0x00, byte(n >> 8), byte(n)}, ies...)
		b := append(full[:3:3], 0x80|byte(len(value)>>8), byte(len(value)))
		b = append(b, value...)
		if _, err := f5.Parse(b); err == nil {
			t.Fatal("free5gc accepts the ICS without UE-AMBR")
		}
		de := decodeErr(t, b)
		if de.Diagnostics == nil || len(de.Diagnostics.IEs) != 1 || de.Diagnostics.IEs[0].IEID != ie.ProtocolIEIDUEAggregateMaximumBitRate ||
			de.Diagnostics.IEs[0].TypeOfError != Missing {
			t.Errorf("diagnostics %+v", de.Diagnostics)
		}
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 3 {
			t.Errorf("IDs not reported: %+v", de)
		}
	})
	t.Run("bad item is a semantic error with IDs", func(t *testing.T) {
		x := &f5.PDUSessionResourceReleaseCommand{
			AMFUENGAPID: &ie.AMFUENGAPID{Value: 21}, RANUENGAPID: &ie.RANUENGAPID{Value: 22},
			PDUSessionResourceToReleaseListRelCmd: &ie.PDUSessionResourceToReleaseListRelCmd{List: []ie.PDUSessionResourceToReleaseItemRelCmd{
				{PDUSessionID: &ie.PDUSessionID{Value: 1}, PDUSessionResourceReleaseCommandTransfer: &aper.OctetString{}},
			}},
		}
		b, err := x.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		de := decodeErr(t, b)
		if de.Cause != (Cause{CauseProtocol, ProtocolSemanticError}) || de.AMFUENGAPID == nil || *de.AMFUENGAPID != 21 {
			t.Errorf("got %+v", de)
		}
	})
}

func TestGTPTunnelAddresses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.1", "192.0.2.1"},
		{"::ffff:192.0.2.1", "192.0.2.1"}, // IPv4-mapped goes as IPv4
		{"2001:db8::1", "2001:db8::1"},
	} {
		x, err := gtpTunnelIE(GTPTunnel{Addr: netip.MustParseAddr(tc.in), TEID: 5})
		if err != nil {
			t.Fatal(err)
		}
		got, err := gtpTunnelFrom(x)
		if err != nil {
			t.Fatal(err)
		}
		if got.Addr != netip.MustParseAddr(tc.want) || got.TEID != 5 {
			t.Errorf("%s: got %v", tc.in, got)
		}
	}
	// a 160-bit address (IPv4 + IPv6) yields its IPv4 part
	both := append([]byte{198, 51, 100, 7}, netip.MustParseAddr("2001:db8::7").AsSlice()...)
	got, err := gtpTunnelFrom(&ie.UPTransportLayerInformation{Choice: &ie.GTPTunnel{
		TransportLayerAddress: &ie.TransportLayerAddress{Value: aper.BitString{Bytes: both, BitLength: 160}},
		GTPTEID:               &ie.GTPTEID{Value: aper.OctetString{0, 0, 0, 9}},
	}})
	if err != nil || got.Addr != netip.MustParseAddr("198.51.100.7") || got.TEID != 9 {
		t.Errorf("160-bit address: %v %v", got, err)
	}
}
