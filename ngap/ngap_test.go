package ngap

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"

	"github.com/tern5g/tern/identity"
)

var (
	plmn  = identity.PLMN{MCC: "208", MNC: "93"}
	plmn3 = identity.PLMN{MCC: "310", MNC: "410"}
	tai   = identity.TAI{PLMN: plmn, TAC: 0x000001}
	loc   = UserLocationNR{NRCGI: NRCGI{PLMN: plmn, CellID: 0x000000010}, TAI: tai}
	guami = identity.GUAMI{PLMN: plmn, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8, Pointer: 0x3F}}
	sl1   = identity.SNSSAI{SST: 1, SD: 0x010203}
	sl2   = identity.SNSSAI{SST: 2, SD: identity.NoSD}
)

func i64(v int64) *int64 { return &v }

// sampleMessages returns one populated instance of every message type.
func sampleMessages() []Message {
	ttw := TimeToWait10s
	pc, tm, cr := ProcInitialContextSetup, SuccessfulOutcome, CriticalityReject
	diag := &CriticalityDiagnostics{
		ProcedureCode: &pc, TriggeringMessage: &tm, ProcedureCriticality: &cr,
		IEs: []CriticalityDiagnosticsIE{{Criticality: CriticalityReject, IEID: 85, TypeOfError: Missing}},
	}
	var key [32]byte
	for i := range key {
		key[i] = byte(i * 7)
	}
	msgs := []Message{
		&NGSetupRequest{
			GlobalRANNodeID: GlobalGNBID{PLMN: plmn, GNBID: 0x000102, BitLen: 22},
			RANNodeName:     "tern-gnb-1",
			SupportedTAs: []SupportedTA{
				{TAC: 1, BroadcastPLMNs: []BroadcastPLMN{{PLMN: plmn, Slices: []identity.SNSSAI{sl1, sl2}}}},
				{TAC: 0xABCDEF, BroadcastPLMNs: []BroadcastPLMN{{PLMN: plmn3, Slices: []identity.SNSSAI{sl2}}}},
			},
			DefaultPagingDRX: PagingDRX128,
		},
		&NGSetupRequest{
			GlobalRANNodeID:  GlobalGNBID{PLMN: plmn3, GNBID: 0xFFFFFFFF, BitLen: 32},
			SupportedTAs:     []SupportedTA{{TAC: 7, BroadcastPLMNs: []BroadcastPLMN{{PLMN: plmn3, Slices: []identity.SNSSAI{sl1}}}}},
			DefaultPagingDRX: PagingDRX32,
		},
		&NGSetupResponse{
			AMFName:             "tern-amf",
			ServedGUAMIs:        []identity.GUAMI{guami},
			RelativeAMFCapacity: 255,
			PLMNSupport:         []PLMNSupport{{PLMN: plmn, Slices: []identity.SNSSAI{sl1, sl2}}},
		},
		&NGSetupFailure{Cause: Cause{CauseMisc, MiscUnknownPLMNOrSNPN}, TimeToWait: &ttw},
		&NGSetupFailure{Cause: Cause{CauseProtocol, ProtocolSemanticError}, CriticalityDiagnostics: diag},
		&InitialUEMessage{
			RANUENGAPID: 1, NASPDU: []byte{0x7e, 0x00, 0x41, 0x79}, UserLocation: loc,
			RRCEstablishmentCause: RRCMOSignalling, UEContextRequest: true,
		},
		&InitialUEMessage{
			RANUENGAPID: 1<<32 - 1, NASPDU: []byte{0x7e, 0x00, 0x4c}, UserLocation: loc,
			RRCEstablishmentCause: RRCMOData,
			FiveGSTMSI:            &identity.STMSI{SetID: 0x3FF, Pointer: 1, TMSI: 0xDEADBEEF},
		},
		&DownlinkNASTransport{AMFUENGAPID: 1<<40 - 1, RANUENGAPID: 5, NASPDU: []byte{0x7e, 0x00, 0x56}},
		&DownlinkNASTransport{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: []byte{1}, AllowedNSSAI: []identity.SNSSAI{sl1}},
		&UplinkNASTransport{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: []byte{0x7e, 0x00, 0x57}, UserLocation: loc},
		&NASNonDeliveryIndication{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: []byte{9, 9}, Cause: Cause{CauseRadioNetwork, RadioNetworkRadioConnectionWithUELost}},
		&InitialContextSetupRequest{
			AMFUENGAPID: 3, RANUENGAPID: 5, GUAMI: guami, AllowedNSSAI: []identity.SNSSAI{sl1, sl2},
			UESecurityCapabilities: UESecurityCapabilitiesFromNAS(0xF0, 0x70, 0xF0, 0x70),
			SecurityKey:            key,
			NASPDU:                 []byte{0x7e, 0x02, 1, 2, 3, 4, 5},
		},
		&InitialContextSetupRequest{
			AMFUENGAPID: 0, RANUENGAPID: 0, GUAMI: guami, AllowedNSSAI: []identity.SNSSAI{sl2},
			UESecurityCapabilities: UESecurityCapabilities{NREncryption: 0xE000, NRIntegrity: 0x6000},
		},
		&InitialContextSetupResponse{AMFUENGAPID: 3, RANUENGAPID: 5},
		&InitialContextSetupResponse{AMFUENGAPID: 3, RANUENGAPID: 5, CriticalityDiagnostics: diag},
		&InitialContextSetupFailure{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkAlgorithmsNotSupported}},
		&UEContextReleaseRequest{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseRadioNetwork, RadioNetworkUserInactivity}},
		&UEContextReleaseCommand{AMFUENGAPID: 3, RANUENGAPID: 5, Cause: Cause{CauseNAS, NASNormalRelease}},
		&UEContextReleaseCommand{AMFUENGAPID: 3, AMFIDOnly: true, Cause: Cause{CauseNAS, NASDeregister}},
		&UEContextReleaseComplete{AMFUENGAPID: 3, RANUENGAPID: 5},
		&UEContextReleaseComplete{AMFUENGAPID: 3, RANUENGAPID: 5, UserLocation: &loc, CriticalityDiagnostics: diag},
		&ErrorIndication{Cause: &Cause{CauseProtocol, ProtocolTransferSyntaxError}},
		&ErrorIndication{AMFUENGAPID: i64(3), RANUENGAPID: i64(5), Cause: &Cause{CauseTransport, TransportUnspecified}, CriticalityDiagnostics: diag},
	}
	msgs = append(msgs, samplePDUSessionMessages(diag)...)
	msgs = append(msgs, sampleRestorationMessages(diag)...)
	return append(msgs, sampleMobilityMessages(diag)...)
}

func TestRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%T): %v", m, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%T): %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%T round trip:\n got %+v\nwant %+v", m, got, m)
		}
		if got.ProcedureCode() != m.ProcedureCode() || got.MessageType() != m.MessageType() {
			t.Errorf("%T: procedure/type mismatch", m)
		}
		// free5gc must read our bytes as the same procedure
		x, err := f5.Parse(b)
		if err != nil {
			t.Fatalf("free5gc Parse(%T): %v", m, err)
		}
		if x.ProcedureCode() != m.ProcedureCode() || x.MessageType() != int64(m.MessageType()) {
			t.Errorf("%T: free5gc sees procedure %d type %d", m, x.ProcedureCode(), x.MessageType())
		}
	}
}

// TestDecodeFree5GCBytes decodes the byte strings free5gc's own tests expect
// for its encoder (message/initial_ue_message_test.go, Case 1).
func TestDecodeFree5GCBytes(t *testing.T) {
	b := []byte{
		0x00, 0x0f, 0x40, 0x50, 0x00, 0x00, 0x05, 0x00, 0x55,
		0x00, 0x05, 0xc0, 0xce, 0x00, 0x00, 0x00, 0x00, 0x26, 0x00, 0x23, 0x22,
		0x7e, 0x00, 0x41, 0x79, 0x00, 0x0d, 0x01, 0x13, 0x00, 0x13, 0x0f, 0xff,
		0x00, 0x00, 0x41, 0x00, 0x00, 0x21, 0xf0, 0x2e, 0x04, 0x80, 0x20, 0xe0,
		0xe0, 0x17, 0x07, 0xe0, 0xe0, 0xc0, 0x40, 0x00, 0x80, 0x20, 0x00, 0x79,
		0x00, 0x0f, 0x40, 0x13, 0x30, 0x01, 0x00, 0x00, 0x00, 0x00, 0x10, 0x13,
		0x30, 0x01, 0x00, 0x00, 0x01, 0x00, 0x5a, 0x40, 0x01, 0x18, 0x00, 0x70,
		0x40, 0x01, 0x00,
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	im, ok := m.(*InitialUEMessage)
	if !ok {
		t.Fatalf("got %T", m)
	}
	p := identity.PLMN{MCC: "310", MNC: "103"}
	want := &InitialUEMessage{
		RANUENGAPID: 3456106496,
		NASPDU:      b[21:55],
		UserLocation: UserLocationNR{
			NRCGI: NRCGI{PLMN: p, CellID: 1},
			TAI:   identity.TAI{PLMN: p, TAC: 1},
		},
		RRCEstablishmentCause: RRCMOSignalling,
		UEContextRequest:      true,
	}
	if !reflect.DeepEqual(im, want) {
		t.Errorf("got %+v\nwant %+v", im, want)
	}
	// and our encoder reproduces free5gc's bytes
	out, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Errorf("re-encoding differs:\n got % x\nwant % x", out, b)
	}
}

// TestDecodeFree5GCBuilt decodes messages built with free5gc's own types.
func TestDecodeFree5GCBuilt(t *testing.T) {
	x := &f5.UEContextReleaseCommand{
		UENGAPIDs: &ie.UENGAPIDs{Choice: &ie.UENGAPIDPair{AMFUENGAPID: &ie.AMFUENGAPID{Value: 77}, RANUENGAPID: &ie.RANUENGAPID{Value: 88}}},
		Cause:     &ie.Cause{Choice: &ie.CauseNas{Value: ie.CauseNasPresentDeregister}},
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &UEContextReleaseCommand{AMFUENGAPID: 77, RANUENGAPID: 88, Cause: Cause{CauseNAS, NASDeregister}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v want %+v", m, want)
	}

	ng := &f5.NGSetupResponse{
		AMFName: &ie.AMFName{Value: "free5gc"},
		ServedGUAMIList: &ie.ServedGUAMIList{List: []ie.ServedGUAMIItem{{GUAMI: &ie.GUAMI{
			PLMNIdentity: &ie.PLMNIdentity{Value: aper.OctetString{0x02, 0xf8, 0x39}},
			AMFRegionID:  &ie.AMFRegionID{Value: aper.BitString{Bytes: []byte{0xca}, BitLength: 8}},
			AMFSetID:     &ie.AMFSetID{Value: aper.BitString{Bytes: []byte{0xfe, 0x00}, BitLength: 10}},
			AMFPointer:   &ie.AMFPointer{Value: aper.BitString{Bytes: []byte{0xfc}, BitLength: 6}},
		}}}},
		RelativeAMFCapacity: &ie.RelativeAMFCapacity{Value: 10},
		PLMNSupportList: &ie.PLMNSupportList{List: []ie.PLMNSupportItem{{
			PLMNIdentity: &ie.PLMNIdentity{Value: aper.OctetString{0x02, 0xf8, 0x39}},
			SliceSupportList: &ie.SliceSupportList{List: []ie.SliceSupportItem{{SNSSAI: &ie.SNSSAI{
				SST: &ie.SST{Value: aper.OctetString{1}}, SD: &ie.SD{Value: aper.OctetString{1, 2, 3}},
			}}}},
		}}},
	}
	if b, err = ng.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	if m, err = Decode(b); err != nil {
		t.Fatal(err)
	}
	wantNG := &NGSetupResponse{
		AMFName: "free5gc", ServedGUAMIs: []identity.GUAMI{{PLMN: plmn, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8, Pointer: 0x3F}}},
		RelativeAMFCapacity: 10, PLMNSupport: []PLMNSupport{{PLMN: plmn, Slices: []identity.SNSSAI{sl1}}},
	}
	if !reflect.DeepEqual(m, wantNG) {
		t.Errorf("got %+v want %+v", m, wantNG)
	}
}

func TestUESecurityCapabilitiesFromNAS(t *testing.T) {
	// NAS: EA0,EA1,EA2 (0xE0); IA1,IA2 (0x60) -> NGAP: NEA1,NEA2 (0xC000); NIA1,NIA2 (0xC000)
	got := UESecurityCapabilitiesFromNAS(0xE0, 0x60, 0, 0)
	if got.NREncryption != 0xC000 || got.NRIntegrity != 0xC000 || got.EUTRAEncryption != 0 {
		t.Errorf("got %+v", got)
	}
}

func decodeErr(t *testing.T, b []byte) *DecodeError {
	t.Helper()
	m, err := Decode(b)
	if err == nil {
		t.Fatalf("Decode(% x) = %T, want error", b, m)
	}
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is %T, want *DecodeError", err, err)
	}
	return de
}

func TestDecodeErrors(t *testing.T) {
	valid, err := Encode(&UplinkNASTransport{AMFUENGAPID: 3, RANUENGAPID: 5, NASPDU: []byte{0x7e, 0x00, 0x57}, UserLocation: loc})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("empty", func(t *testing.T) {
		de := decodeErr(t, nil)
		if de.Cause != (Cause{CauseProtocol, ProtocolTransferSyntaxError}) || de.ProcedureKnown {
			t.Errorf("got %+v", de)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		for n := 1; n < len(valid); n++ {
			de := decodeErr(t, valid[:n])
			if de.Cause.Group != CauseProtocol {
				t.Errorf("len %d: cause %v", n, de.Cause)
			}
		}
	})
	t.Run("truncated after IDs keeps the IDs", func(t *testing.T) {
		// cut inside the user location information, after both IDs were read
		de := decodeErr(t, valid[:len(valid)-3])
		if de.Cause != (Cause{CauseProtocol, ProtocolTransferSyntaxError}) {
			t.Errorf("cause %v", de.Cause)
		}
		if !de.ProcedureKnown || de.ProcedureCode != ProcUplinkNASTransport {
			t.Errorf("procedure not reported: %+v", de)
		}
	})
	t.Run("unknown procedure", func(t *testing.T) {
		b := append([]byte(nil), valid...)
		b[1] = 250 // procedure code
		de := decodeErr(t, b)
		if de.Cause != (Cause{CauseProtocol, ProtocolAbstractSyntaxErrorIgnoreAndNotify}) && de.Cause != (Cause{CauseProtocol, ProtocolAbstractSyntaxErrorReject}) {
			t.Errorf("cause %v", de.Cause)
		}
		if !de.ProcedureKnown || de.ProcedureCode != 250 || de.Diagnostics == nil || *de.Diagnostics.ProcedureCode != 250 {
			t.Errorf("diagnostics: %+v", de)
		}
		ind := de.ErrorIndication()
		if _, err := Encode(ind); err != nil {
			t.Errorf("error indication does not encode: %v", err)
		}
	})
	t.Run("procedure tern does not support", func(t *testing.T) {
		x := &f5.UEContextModificationResponse{
			AMFUENGAPID: &ie.AMFUENGAPID{Value: 42}, RANUENGAPID: &ie.RANUENGAPID{Value: 43},
		}
		b, err := x.MarshalBinary()
		if err != nil {
			t.Fatalf("free5gc cannot build the sample: %v", err)
		}
		de := decodeErr(t, b)
		if de.Cause.Group != CauseProtocol || de.Diagnostics == nil {
			t.Errorf("got %+v", de)
		}
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 42 || de.RANUENGAPID == nil || *de.RANUENGAPID != 43 {
			t.Errorf("IDs not reported: %+v", de)
		}
	})
	t.Run("missing mandatory IE", func(t *testing.T) {
		// A Downlink NAS Transport relabelled as Uplink NAS Transport lacks
		// the mandatory User Location Information.
		b, err := Encode(&DownlinkNASTransport{AMFUENGAPID: 9, RANUENGAPID: 10, NASPDU: []byte{1}})
		if err != nil {
			t.Fatal(err)
		}
		b[1] = byte(ProcUplinkNASTransport)
		de := decodeErr(t, b)
		if de.Cause != (Cause{CauseProtocol, ProtocolAbstractSyntaxErrorReject}) {
			t.Errorf("cause %v", de.Cause)
		}
		if de.AMFUENGAPID == nil || *de.AMFUENGAPID != 9 || de.RANUENGAPID == nil || *de.RANUENGAPID != 10 {
			t.Errorf("IDs not reported: %+v", de)
		}
		if de.Diagnostics == nil || len(de.Diagnostics.IEs) != 1 || de.Diagnostics.IEs[0].TypeOfError != Missing {
			t.Errorf("diagnostics: %+v", de.Diagnostics)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		decodeErr(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	})
}

func TestEncodeRejectsBadInput(t *testing.T) {
	bad := []Message{
		&DownlinkNASTransport{AMFUENGAPID: -1, RANUENGAPID: 1, NASPDU: []byte{1}},
		&DownlinkNASTransport{AMFUENGAPID: 1, RANUENGAPID: 1 << 32, NASPDU: []byte{1}},
		&DownlinkNASTransport{AMFUENGAPID: 1, RANUENGAPID: 1},
		&NGSetupRequest{GlobalRANNodeID: GlobalGNBID{PLMN: plmn, GNBID: 1, BitLen: 21}},
		&NGSetupRequest{GlobalRANNodeID: GlobalGNBID{PLMN: plmn, GNBID: 1 << 22, BitLen: 22}},
		&NGSetupResponse{AMFName: "x"},
		&InitialUEMessage{RANUENGAPID: 1, NASPDU: []byte{1}, UserLocation: UserLocationNR{NRCGI: NRCGI{PLMN: identity.PLMN{MCC: "2x8", MNC: "93"}}, TAI: tai}},
		&InitialContextSetupRequest{GUAMI: guami},
		// AMBR is conditional on PDU session resources (TS 38.413 §9.2.2.1)
		&InitialContextSetupRequest{GUAMI: guami, AllowedNSSAI: []identity.SNSSAI{sl1}, UEAggregateMaxBitRate: &AMBR{DL: 1, UL: 1}},
		&ErrorIndication{Cause: &Cause{Group: 9}},
		nil,
	}
	for _, m := range bad {
		if _, err := Encode(m); err == nil {
			t.Errorf("Encode(%+v) succeeded", m)
		}
	}
}

func TestPPID(t *testing.T) {
	if PPID != 60 {
		t.Fatal("NGAP PPID is 60 (TS 38.412 §7)")
	}
}
