package nas

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	f5 "github.com/free5gc/nas/message"

	"github.com/tern5g/tern/identity"
)

var (
	tPLMN  = identity.PLMN{MCC: "208", MNC: "93"}
	tPLMN3 = identity.PLMN{MCC: "310", MNC: "410"}
	tGUTI  = identity.GUTI{GUAMI: identity.GUAMI{PLMN: tPLMN, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8, Pointer: 0x3F}}, TMSI: 0xDEADBEEF}
	tSlice = identity.SNSSAI{SST: 1, SD: 0x010203}
	tSST   = identity.SNSSAI{SST: 2, SD: identity.NoSD}
)

func u16(v uint16) *uint16 { return &v }

func sampleMessages() []Message {
	seq := func(n int, start byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = start + byte(i)
		}
		return b
	}
	tai := identity.TAI{PLMN: tPLMN, TAC: 1}
	t3512 := GPRSTimer3Of(54 * time.Minute)
	return []Message{
		&RegistrationRequest{
			RegistrationType: RegistrationInitial, FollowOnRequest: true, NgKSI: NgKSI{KSI: KSINoKey},
			MobileIdentity:       MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-208-93-0000-0-0-0000000001"},
			UESecurityCapability: &UESecurityCapability{EA: 0xF0, IA: 0x70},
			RequestedNSSAI:       []identity.SNSSAI{tSlice, tSST},
			LastVisitedTAI:       &tai,
			UplinkDataStatus:     u16(0x0020),
			PDUSessionStatus:     u16(0x8002),
			NASMessageContainer:  []byte{0x7e, 0x00, 0x41, 0x01},
		},
		&RegistrationRequest{
			RegistrationType: RegistrationMobilityUpdating, NgKSI: NgKSI{Mapped: true, KSI: 3},
			MobileIdentity: MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
		},
		&RegistrationRequest{
			RegistrationType: RegistrationPeriodicUpdating, NgKSI: NgKSI{KSI: 2},
			MobileIdentity:       MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-310-410-12-1-7-" + "0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031"},
			UESecurityCapability: &UESecurityCapability{EA: 0xE0, IA: 0x60, EEA: 0xE0, EIA: 0x60, HasEPS: true},
		},
		&RegistrationRequest{
			RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
			// profile B: 33-octet compressed key, 5-octet ciphertext, 8-octet MAC
			MobileIdentity: MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-208-93-1-2-1-02" +
				"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20" + "1122334455" + "a1a2a3a4a5a6a7a8"},
		},
		&RegistrationAccept{
			Result: Registered3GPP, SMSAllowed: true, GUTI: &tGUTI,
			TAIList:          []identity.TAI{tai, {PLMN: tPLMN, TAC: 7}, {PLMN: tPLMN3, TAC: 0xFFFFFF}},
			AllowedNSSAI:     []identity.SNSSAI{tSlice},
			T3512:            &t3512,
			PDUSessionStatus: u16(0),
		},
		&RegistrationAccept{Result: Registered3GPP},
		&RegistrationComplete{},
		&RegistrationReject{Cause: CauseIllegalUE},
		&AuthenticationRequest{NgKSI: NgKSI{KSI: 0}, ABBA: []byte{0, 0}, RAND: seq(16, 0x10), AUTN: seq(16, 0x80)},
		&AuthenticationRequest{NgKSI: NgKSI{KSI: 5}, ABBA: []byte{0, 0, 1}},
		&AuthenticationResponse{RESStar: seq(16, 0x30)},
		&AuthenticationResponse{},
		&AuthenticationFailure{Cause: CauseSynchFailure, AUTS: seq(14, 0x40)},
		&AuthenticationFailure{Cause: CauseMACFailure},
		&AuthenticationFailure{Cause: CauseNon5GAuthenticationUnacceptable},
		&AuthenticationReject{},
		&AuthenticationResult{NgKSI: NgKSI{KSI: 1}, EAPMessage: []byte{3, 1, 0, 4}, ABBA: []byte{0, 0}},
		&SecurityModeCommand{
			CipheringAlg: NEA2, IntegrityAlg: NIA2, NgKSI: NgKSI{KSI: 0},
			ReplayedUESecurityCapability: UESecurityCapability{EA: 0xF0, IA: 0x70},
			IMEISVRequest:                true, RetransmitInitialNAS: true, ABBA: []byte{0, 0},
		},
		&SecurityModeCommand{
			CipheringAlg: NEA0, IntegrityAlg: NIA1, NgKSI: NgKSI{KSI: 6},
			ReplayedUESecurityCapability: UESecurityCapability{EA: 0x80, IA: 0x40, EEA: 0x80, EIA: 0x40, HasEPS: true},
			HorizontalDerivation:         true,
		},
		&SecurityModeComplete{IMEISV: "4370816125816151", NASMessageContainer: []byte{0x7e, 0x00, 0x41, 0x79}},
		&SecurityModeComplete{},
		&SecurityModeReject{Cause: CauseUESecurityCapabilitiesMismatch},
		&IdentityRequest{IdentityType: IdentitySUCI},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-208-93-0-0-0-123456789"}},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentityIMEI, IMEI: "490154203237518"}},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentityIMEISV, IMEISV: "4901542032375181"}},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentitySTMSI, STMSI: tGUTI.STMSI()}},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentityNone}},
		&DeregistrationRequestUEOriginating{SwitchOff: true, AccessType: Access3GPP, NgKSI: NgKSI{KSI: 1}, MobileIdentity: MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI}},
		&DeregistrationRequestUEOriginating{AccessType: AccessBoth, NgKSI: NgKSI{KSI: KSINoKey}, MobileIdentity: MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-208-93-0000-0-0-0000000001"}},
		&DeregistrationAcceptUEOriginating{},
		&ServiceRequest{ServiceType: ServiceData, NgKSI: NgKSI{KSI: 2}, STMSI: tGUTI.STMSI(), UplinkDataStatus: u16(0x0022), PDUSessionStatus: u16(0x0022), NASMessageContainer: []byte{0x7e, 0, 0x4c}},
		&ServiceRequest{ServiceType: ServiceSignalling, STMSI: identity.STMSI{SetID: 1, Pointer: 2, TMSI: 3}},
		&ServiceAccept{PDUSessionStatus: u16(0x0002), PDUSessionReactivationResult: u16(0)},
		&ServiceAccept{},
		&Status5GMM{Cause: CauseMessageTypeNonExistent},
		&ULNASTransport{
			PayloadContainerType: PayloadN1SMInformation, Payload: []byte{0x2e, 0x05, 0x01, 0xc1},
			PDUSessionID: 5, OldPDUSessionID: 4, RequestType: RequestInitial, SNSSAI: &tSlice, DNN: "internet.mnc093.mcc208",
		},
		&ULNASTransport{PayloadContainerType: PayloadSMS, Payload: []byte{1}},
		&DLNASTransport{PayloadContainerType: PayloadN1SMInformation, Payload: []byte{0x2e, 5, 1, 0xc2}, PDUSessionID: 5, Cause: CauseDNNNotSupportedOrNotSubscribed},
		&DLNASTransport{PayloadContainerType: PayloadN1SMInformation, Payload: []byte{0x2e}},
		// 40-: appended so that the seeds under testdata keep their numbers
		&DeregistrationRequestUETerminated{
			ReRegistrationRequired: true, AccessType: Access3GPP, Cause: CauseImplicitlyDeregistered,
			T3346: &GPRSTimer2{Unit: 1, Value: 5},
		},
		&DeregistrationRequestUETerminated{AccessType: AccessBoth},
		&DeregistrationAcceptUETerminated{},
		&ServiceRequest{
			ServiceType: ServiceMobileTerminated, NgKSI: NgKSI{KSI: 1}, STMSI: tGUTI.STMSI(),
			UplinkDataStatus: u16(0x0004), PDUSessionStatus: u16(0x0026), AllowedPDUSessionStatus: u16(0x0020),
			NASMessageContainer: []byte{0x7e, 0, 0x4c},
		},
		&ServiceAccept{
			PDUSessionStatus: u16(0x0026), PDUSessionReactivationResult: u16(0x0024),
			PDUSessionReactivationResultErrorCause: []PDUSessionCause{
				{PSI: 2, Cause: CauseInsufficientUserPlaneResources}, {PSI: 5, Cause: CauseRestrictedServiceArea},
			},
			EAPMessage: []byte{3, 1, 0, 4}, T3448: &GPRSTimer2{Unit: 2, Value: 3},
		},
		&RegistrationAccept{Result: Registered3GPPAndNon3GPP, T3512: &t3512, T3502: &GPRSTimer2{Unit: 1, Value: 12}},
		&ServiceReject{
			Cause: CauseCongestion, PDUSessionStatus: u16(0x0022), T3346: &GPRSTimer2{Unit: 1, Value: 5},
			EAPMessage: []byte{4, 3, 0, 4}, T3448: &GPRSTimer2{Unit: 0, Value: 10},
		},
		&ServiceReject{Cause: CauseRestrictedServiceArea},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	seen := map[MsgType]bool{}
	for _, m := range sampleMessages() {
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
			t.Errorf("%T round trip:\n got %+v\nwant %+v", m, got, m)
		}
		// free5gc must parse our encoding as the same message
		x, err := f5.ParseGMM(b)
		if err != nil {
			var e *f5.Error
			if !errors.As(err, &e) || e.MACFailure != nil {
				t.Errorf("free5gc rejects our %T (% x): %v", m, b, err)
				continue
			}
		}
		if x != nil && uint8(x.MsgType()) != uint8(m.MessageType()) {
			t.Errorf("free5gc reads %v for %T", x.MsgType(), m)
		}
	}
	if len(seen) != 24 {
		t.Errorf("samples cover %d message types, want 24", len(seen))
	}
}

// TestDecodeFree5GCBuilt decodes messages marshalled by free5gc/nas.
func TestDecodeFree5GCBuilt(t *testing.T) {
	// Registration Request as in free5gc's registration_request_test.go style
	b := []byte{
		0x7e, 0x00, 0x41, 0x79, 0x00, 0x0d, 0x01, 0x02, 0xf8, 0x39, 0xf0, 0xff, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x10, 0x2e, 0x04, 0xf0, 0xf0, 0xf0, 0xf0,
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &RegistrationRequest{
		RegistrationType: RegistrationInitial, FollowOnRequest: true, NgKSI: NgKSI{KSI: 7},
		MobileIdentity:       MobileIdentity{Type: IdentitySUCI, SUCI: "suci-0-208-93-0-0-0-0000000001"},
		UESecurityCapability: &UESecurityCapability{EA: 0xF0, IA: 0xF0, EEA: 0xF0, EIA: 0xF0, HasEPS: true},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v\nwant %+v", m, want)
	}
	if x, err := f5.ParseGMM(b); err != nil || x.(*f5.RegReq).MobileId5GS.SUCIStr() != want.MobileIdentity.SUCI {
		t.Errorf("free5gc reads the sample differently: %v", err)
	}

	// a Security Mode Command built with free5gc's own types
	smc, err := f5.ParseGMM([]byte{0x7e, 0x00, 0x5d, 0x22, 0x01, 0x02, 0xf0, 0x70, 0xe1, 0x36, 0x01, 0x02})
	if err != nil {
		t.Fatal(err)
	}
	out, err := smc.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m, err = Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	wantSMC := &SecurityModeCommand{
		CipheringAlg: NEA2, IntegrityAlg: NIA2, NgKSI: NgKSI{KSI: 1},
		ReplayedUESecurityCapability: UESecurityCapability{EA: 0xF0, IA: 0x70},
		IMEISVRequest:                true, RetransmitInitialNAS: true,
	}
	if !reflect.DeepEqual(m, wantSMC) {
		t.Errorf("got %+v\nwant %+v", m, wantSMC)
	}
}

func TestSUCIConversion(t *testing.T) {
	for _, s := range []string{
		"suci-0-208-93-0000-0-0-0000000001",
		"suci-0-001-01-1-0-0-12345",
		"suci-0-310-410-9876-0-255-123456789",
		"suci-0-208-93-0000-1-1-" + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + "0102030405" + "0011223344556677",
	} {
		v, err := encodeSUCI(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		got, err := decodeSUCI(v)
		if err != nil || got != s {
			t.Errorf("%s -> % x -> %s, %v", s, v, got, err)
		}
	}
	// the TS 24.501 Figure 9.11.3.4.1 example layout for the null scheme
	v, _ := encodeSUCI("suci-0-208-93-0000-0-0-0000000001")
	want := []byte{0x01, 0x02, 0xf8, 0x39, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10}
	if !bytes.Equal(v, want) {
		t.Errorf("got % x want % x", v, want)
	}
	for _, bad := range []string{
		"", "suci-0-208-93-0000-0-0", "imsi-208930000000001", "suci-1-208-93-0000-0-0-01",
		"suci-0-2x8-93-0000-0-0-01", "suci-0-208-93-00000-0-0-01", "suci-0-208-93-0000-0-0-01234567890",
		"suci-0-208-93-0000-1-1-zz", "suci-0-208-93-0000-16-1-00", "suci-0-208-93-0000-0-0-12a",
	} {
		if _, err := encodeSUCI(bad); err == nil {
			t.Errorf("encodeSUCI(%q) succeeded", bad)
		}
	}
}

func TestGPRSTimer3(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want GPRSTimer3
	}{
		{54 * time.Minute, GPRSTimer3{Unit: Timer3Unit1Min, Value: 54 % 32}},
		{0, GPRSTimer3{Unit: Timer3UnitDeactivated}},
		{10 * time.Second, GPRSTimer3{Unit: Timer3Unit2Sec, Value: 5}},
		{2 * time.Hour, GPRSTimer3{Unit: Timer3Unit10Min, Value: 12}}, // finest exact unit
	} {
		got := GPRSTimer3Of(c.d)
		if c.d == 54*time.Minute {
			// 54 min is not a multiple of 10 min within 31 units of 1 min: rounds up
			if d, _ := got.Duration(); d < c.d {
				t.Errorf("%v -> %+v shorter", c.d, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%v -> %+v want %+v", c.d, got, c.want)
		}
		if d, ok := got.Duration(); c.d > 0 && (!ok || d != c.d) {
			t.Errorf("%+v.Duration() = %v", got, d)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	valid, err := Encode(sampleMessages()[0])
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(valid); n++ {
		if _, err := Decode(valid[:n]); err == nil && n < 7 {
			t.Errorf("truncated to %d octets decoded", n)
		}
	}
	for _, b := range [][]byte{
		{0x2e, 0x00, 0x41},                               // 5GSM EPD
		{0x7e, 0x02, 0x41},                               // security protected
		{0x7e, 0x00, 0x99},                               // unknown message type
		{0x7e, 0x00, 0x41, 0x01},                         // mobile identity missing
		{0x7e, 0x00, 0x42, 0x02, 0x01, 0x01},             // 5GS registration result of 2 octets
		{0x7e, 0x00, 0x5c, 0x00, 0x01, 0x06},             // MAC address identity: unsupported
		{0x7e, 0x00, 0x5c, 0x00, 0x03, 0x02, 0xf8, 0x39}, // short GUTI
	} {
		if m, err := Decode(b); err == nil {
			t.Errorf("Decode(% x) = %+v", b, m)
		}
	}
	if _, err := Decode([]byte{0x7e, 0x00, 0x99}); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := Decode([]byte{0x7e, 0x01, 0x41}); !errors.Is(err, ErrNotPlain) {
		t.Errorf("protected: %v", err)
	}
}

func TestDecodeSkipsUnknownOptionalIEs(t *testing.T) {
	b, err := Encode(&RegistrationAccept{Result: Registered3GPP})
	if err != nil {
		t.Fatal(err)
	}
	// append: type-1 IE (MICO 0xB-), TLV (0x4A equivalent PLMNs), TLV-E (0x79 LADN)
	b = append(b, 0xB1, 0x4A, 0x03, 0x02, 0xf8, 0x39, 0x79, 0x00, 0x01, 0xff)
	b = append(b, 0x5E, 0x01, 0x21) // T3512 after them
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	ra := m.(*RegistrationAccept)
	if ra.T3512 == nil || *ra.T3512 != (GPRSTimer3{Unit: 1, Value: 1}) {
		t.Errorf("T3512 %+v", ra.T3512)
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, m := range []Message{
		nil,
		&RegistrationRequest{MobileIdentity: MobileIdentity{Type: IdentitySUCI, SUCI: "bad"}},
		&RegistrationRequest{MobileIdentity: MobileIdentity{Type: 6}},
		&RegistrationAccept{TAIList: make([]identity.TAI, 17)},
		&AuthenticationRequest{ABBA: []byte{0}},
		&AuthenticationRequest{ABBA: []byte{0, 0}, RAND: []byte{1}},
		&AuthenticationFailure{Cause: CauseSynchFailure, AUTS: []byte{1}},
		&RegistrationReject{},
		&IdentityResponse{MobileIdentity: MobileIdentity{Type: IdentityIMEI, IMEI: "12"}},
		&SecurityModeComplete{IMEISV: "12345678901234x6"},
		&ULNASTransport{DNN: "a..b"},
		&DeregistrationRequestUETerminated{},
		&DeregistrationRequestUETerminated{AccessType: 4},
		&ServiceAccept{PDUSessionReactivationResultErrorCause: []PDUSessionCause{}},
	} {
		if _, err := Encode(m); err == nil {
			t.Errorf("Encode(%+v) succeeded", m)
		}
	}
}

// TestFree5GCReadsServiceAndUETerminatedIEs checks the fields free5gc
// decodes from the UE-terminated de-registration messages and the service
// and registration accept IEs, and that free5gc, marshalling what it read,
// gives our octets back.
func TestFree5GCReadsServiceAndUETerminatedIEs(t *testing.T) {
	var msgs []Message
	for _, m := range sampleMessages() {
		switch m := m.(type) {
		case *DeregistrationRequestUETerminated, *DeregistrationAcceptUETerminated, *ServiceRequest, *ServiceAccept,
			*ServiceReject:
			msgs = append(msgs, m)
		case *RegistrationAccept:
			// free5gc re-marshals TAI lists differently (see doc.go)
			if m.TAIList == nil {
				msgs = append(msgs, m)
			}
		}
	}
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		x, err := f5.ParseGMM(b)
		if err != nil {
			t.Errorf("free5gc rejects our %T (% x): %v", m, b, err)
			continue
		}
		switch m := m.(type) {
		case *DeregistrationRequestUETerminated:
			d := x.(*f5.DeregReqUETerm)
			if d.DeregType.Switchoff || d.DeregType.ReregRequired != m.ReRegistrationRequired || d.DeregType.AccessType != uint8(m.AccessType) ||
				(m.Cause != 0) != (d.Cause5GMM != nil) || (m.T3346 != nil) != (d.T3346Value != nil) {
				t.Errorf("free5gc reads %+v for %+v", d, m)
			}
			if m.Cause != 0 && (d.Cause5GMM.Value != uint8(m.Cause) || uint8(d.T3346Value.Unit) != m.T3346.Unit || d.T3346Value.Value != m.T3346.Value) {
				t.Errorf("free5gc reads cause %+v, T3346 %+v", d.Cause5GMM, d.T3346Value)
			}
		case *ServiceRequest:
			s := x.(*f5.SvcReq)
			if uint8(s.SvcType.Value) != m.ServiceType || s.Ngksi.Ksi != m.NgKSI.KSI || s.TMSI5GS.TMSIStr() != fmt.Sprintf("%08x", m.STMSI.TMSI) ||
				(m.AllowedPDUSessionStatus != nil) != (s.AllowedPDUSessStatus != nil) || (m.NASMessageContainer != nil) != (s.NASMsgCntr != nil) {
				t.Errorf("free5gc reads %+v for %+v", s, m)
			}
			if m.AllowedPDUSessionStatus != nil && psiOf(s.AllowedPDUSessStatus.PSI) != *m.AllowedPDUSessionStatus {
				t.Errorf("free5gc reads allowed PDU session status %v", s.AllowedPDUSessStatus.PSI)
			}
			if m.NASMessageContainer != nil && !bytes.Equal(s.NASMsgCntr.Contents, m.NASMessageContainer) {
				t.Errorf("free5gc reads NAS message container % x", s.NASMsgCntr.Contents)
			}
		case *ServiceAccept:
			s := x.(*f5.SvcAccept)
			if m.PDUSessionReactivationResultErrorCause == nil {
				break
			}
			var got []PDUSessionCause
			for _, p := range s.PDUSessReactivationResultErrCause.IdCause {
				got = append(got, PDUSessionCause{PSI: p.PDUSessID, Cause: Cause5GMM(p.Value)})
			}
			if !reflect.DeepEqual(got, m.PDUSessionReactivationResultErrorCause) || !bytes.Equal(s.EAPMsg.Eap, m.EAPMessage) ||
				uint8(s.T3448Value.Unit) != m.T3448.Unit || s.T3448Value.Value != m.T3448.Value ||
				psiOf(s.PDUSessReactivationResult.PSI) != *m.PDUSessionReactivationResult {
				t.Errorf("free5gc reads %+v for %+v", s, m)
			}
		case *RegistrationAccept:
			r := x.(*f5.RegAccept)
			if r.RegResult5GS.Value != uint8(m.Result) || r.RegResult5GS.SMSAllowed != m.SMSAllowed || (m.T3502 != nil) != (r.T3502Value != nil) {
				t.Errorf("free5gc reads %+v for %+v", r, m)
			}
			if m.T3502 != nil && (uint8(r.T3502Value.Unit) != m.T3502.Unit || r.T3502Value.Value != m.T3502.Value) {
				t.Errorf("free5gc reads T3502 %+v", r.T3502Value)
			}
		}
		out, err := x.MarshalBinary()
		if err != nil || !bytes.Equal(out, b) {
			t.Errorf("%T: free5gc marshals what it read as\n % x\nours\n % x (%v)", m, out, b, err)
		}
	}

	// free5gc's own test input sets the switch off bit, which is spare in
	// this direction (TS 24.501 §9.11.3.20): it is ignored.
	got, err := Decode([]byte{0x7e, 0x00, 0x47, 0x09, 0x58, 0x05, 0x5f, 0x01, 0x56})
	want := &DeregistrationRequestUETerminated{AccessType: Access3GPP, Cause: CausePEINotAccepted, T3346: &GPRSTimer2{Unit: 2, Value: 0x16}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	if m, err := Decode([]byte{0x7e, 0x00, 0x47, 0x08}); err == nil {
		t.Errorf("access type 0 decoded as %+v", m)
	}
}

func psiOf(p [16]bool) uint16 {
	var v uint16
	for i, set := range p {
		if set {
			v |= 1 << i
		}
	}
	return v
}

// TestServiceTypes runs every service type of TS 24.501 §9.11.3.50 through
// our codec and free5gc's.
func TestServiceTypes(t *testing.T) {
	for st := ServiceSignalling; st <= ServiceElevatedSignalling; st++ {
		m := &ServiceRequest{ServiceType: st, NgKSI: NgKSI{KSI: 3}, STMSI: tGUTI.STMSI()}
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("service type %d: %+v, %v", st, got, err)
		}
		x, err := f5.ParseGMM(b)
		if err != nil || uint8(x.(*f5.SvcReq).SvcType.Value) != st || x.(*f5.SvcReq).Ngksi.Ksi != 3 {
			t.Errorf("service type %d: free5gc reads %+v, %v", st, x, err)
		}
	}
}

// TestCause5GMMString: 5GMM causes print with their TS 24.501 Table
// 9.11.3.2.1 names (the table's wording, first letter in lower case).
func TestCause5GMMString(t *testing.T) {
	for c, want := range map[Cause5GMM]string{
		Cause5GSServicesNotAllowed:          "#7 5GS services not allowed",
		CauseUEIdentityCannotBeDerived:      "#9 UE identity cannot be derived by the network",
		CauseImplicitlyDeregistered:         "#10 implicitly de-registered",
		CauseTANotAllowed:                   "#12 tracking area not allowed",
		CauseSynchFailure:                   "#21 synch failure",
		CauseNoNetworkSlicesAvailable:       "#62 no network slices available",
		CauseNgKSIAlreadyInUse:              "#71 ngKSI already in use",
		73:                                  "#73 serving network not authorized",
		CauseDNNNotSupportedOrNotSubscribed: "#91 DNN not supported or not subscribed in the slice",
		CauseProtocolErrorUnspecified:       "#111 protocol error, unspecified",
		200:                                 "#200",
	} {
		if got := c.String(); got != want {
			t.Errorf("cause %d: %q, want %q", uint8(c), got, want)
		}
	}
}
