package nas

import (
	"reflect"
	"testing"

	"github.com/tern5g/tern/identity"
)

// encodeWith returns the encoding of m followed by the raw IEs extra.
func encodeWith(t *testing.T, m Message, extra ...[]byte) []byte {
	t.Helper()
	b, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode %T: %v", m, err)
	}
	for _, ie := range extra {
		b = append(b, ie...)
	}
	return b
}

// imeisv17 is the value of a 5GS mobile identity IE of type IMEISV that
// holds 17 digits: the odd indicator is set and the last octet has no 0xF
// filler. It has the length of a good IMEISV (9 octets).
func imeisv17(t *testing.T) []byte {
	t.Helper()
	v, err := appendBCD([]byte{4<<4 | 1<<3 | byte(IdentityIMEISV)}, "3708161258161512")
	if err != nil || len(v) != 9 {
		t.Fatalf("IMEISV value % x: %v", v, err)
	}
	return v
}

func tlv(iei uint8, v ...byte) []byte { return append([]byte{iei, byte(len(v))}, v...) }
func tlve(iei uint8, v ...byte) []byte {
	return append([]byte{iei, byte(len(v) >> 8), byte(len(v))}, v...)
}

// TestDecodeDropsIncorrectOptionalIEs checks TS 24.501 §7.7.1: an optional
// IE that is syntactically incorrect is treated as not present, and the
// rest of the message decodes.
func TestDecodeDropsIncorrectOptionalIEs(t *testing.T) {
	container := []byte{0x7e, 0x00, 0x41, 0x79}
	tai := identity.TAI{PLMN: tPLMN, TAC: 1}
	t3512 := GPRSTimer3{Unit: Timer3Unit1Hour, Value: 1}
	for _, c := range []struct {
		name string
		b    []byte
		want Message
	}{
		{
			"Security Mode Complete: IMEISV of 17 digits",
			encodeWith(t, &SecurityModeComplete{}, tlve(0x77, imeisv17(t)...), tlve(0x71, container...)),
			&SecurityModeComplete{NASMessageContainer: container},
		},
		{
			"Security Mode Complete: IMEISV IE holding a 5G-S-TMSI",
			encodeWith(t, &SecurityModeComplete{}, tlve(0x71, container...), tlve(0x77, encodeSTMSI(tGUTI.STMSI())...)),
			&SecurityModeComplete{NASMessageContainer: container},
		},
		{
			"Registration Request: PDU session status of 1 octet",
			encodeWith(t, &RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity: MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
			}, tlv(0x50, 0x22), tlv(0x40, 0x20, 0x00), tlve(0x71, container...)),
			&RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity:   MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
				UplinkDataStatus: u16(0x0020), NASMessageContainer: container,
			},
		},
		{
			"Registration Request: requested NSSAI with an S-NSSAI of 3 octets",
			encodeWith(t, &RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity:       MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
				UESecurityCapability: &UESecurityCapability{EA: 0xF0, IA: 0x70},
			}, tlv(0x2F, 1, 1, 3, 1, 2, 3)),
			&RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity:       MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
				UESecurityCapability: &UESecurityCapability{EA: 0xF0, IA: 0x70},
			},
		},
		{
			"Registration Request: last visited TAI with a bad MCC digit",
			encodeWith(t, &RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity: MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
			}, []byte{0x52, 0x0a, 0xf8, 0x39, 0, 0, 1}),
			&RegistrationRequest{
				RegistrationType: RegistrationInitial, NgKSI: NgKSI{KSI: KSINoKey},
				MobileIdentity: MobileIdentity{Type: IdentityGUTI, GUTI: tGUTI},
			},
		},
		{
			"Registration Accept: empty T3512, 5G-GUTI IE holding an IMEISV",
			encodeWith(t, &RegistrationAccept{Result: Registered3GPP, TAIList: []identity.TAI{tai}},
				tlv(0x5E), tlve(0x77, imeisv17(t)...), tlv(0x50, 0x02, 0x00)),
			&RegistrationAccept{Result: Registered3GPP, TAIList: []identity.TAI{tai}, PDUSessionStatus: u16(2)},
		},
		{
			// TS 24.007 §11.4.2: octets beyond the value part are ignored
			"Registration Accept: T3512 of 2 octets, PDU session status of 33",
			encodeWith(t, &RegistrationAccept{Result: Registered3GPP},
				tlv(0x5E, 0x21, 0x00), tlv(0x50, append([]byte{0x02, 0x80}, make([]byte, 31)...)...)),
			&RegistrationAccept{Result: Registered3GPP, T3512: &t3512, PDUSessionStatus: u16(0x8002)},
		},
		{
			"Registration Accept: TAI list of partial list type 3",
			encodeWith(t, &RegistrationAccept{Result: Registered3GPP}, tlv(0x54, 0x60, 0x02, 0xf8, 0x39, 0, 0, 1), tlv(0x5E, 0x21)),
			&RegistrationAccept{Result: Registered3GPP, T3512: &t3512},
		},
		{
			"UL NAS Transport: S-NSSAI of 3 octets, DNN with an empty label",
			encodeWith(t, &ULNASTransport{PayloadContainerType: PayloadN1SMInformation, Payload: []byte{0x2e}, PDUSessionID: 5},
				tlv(0x22, 1, 2, 3), tlv(0x25, 0), []byte{0x81}),
			&ULNASTransport{PayloadContainerType: PayloadN1SMInformation, Payload: []byte{0x2e}, PDUSessionID: 5, RequestType: RequestInitial},
		},
		{
			"Authentication Failure: AUTS of 13 octets",
			encodeWith(t, &AuthenticationFailure{Cause: CauseSynchFailure}, tlv(0x30, make([]byte, 13)...)),
			&AuthenticationFailure{Cause: CauseSynchFailure},
		},
		{
			"Service Accept: PDU session reactivation result of 1 octet",
			encodeWith(t, &ServiceAccept{PDUSessionStatus: u16(2)}, tlv(0x26, 0)),
			&ServiceAccept{PDUSessionStatus: u16(2)},
		},
		{
			"Service Accept: reactivation result error cause of 3 octets, empty T3448",
			encodeWith(t, &ServiceAccept{EAPMessage: []byte{3, 1, 0, 4}}, tlve(0x72, 1, 22, 2), tlv(0x6B)),
			&ServiceAccept{EAPMessage: []byte{3, 1, 0, 4}},
		},
		{
			"Service Request: allowed PDU session status of 1 octet",
			encodeWith(t, &ServiceRequest{ServiceType: ServiceData, STMSI: tGUTI.STMSI(), PDUSessionStatus: u16(4)}, tlv(0x25, 4)),
			&ServiceRequest{ServiceType: ServiceData, STMSI: tGUTI.STMSI(), PDUSessionStatus: u16(4)},
		},
		{
			"Registration Accept: empty T3502",
			encodeWith(t, &RegistrationAccept{Result: Registered3GPP, T3512: &t3512}, tlv(0x16)),
			&RegistrationAccept{Result: Registered3GPP, T3512: &t3512},
		},
		{
			"De-registration Request (UE terminated): empty T3346, rejected NSSAI skipped",
			encodeWith(t, &DeregistrationRequestUETerminated{AccessType: Access3GPP, Cause: CauseIllegalUE}, tlv(0x5F), tlv(0x6D, 0x41, 1)),
			&DeregistrationRequestUETerminated{AccessType: Access3GPP, Cause: CauseIllegalUE},
		},
		{
			"Service Reject: empty T3346",
			encodeWith(t, &ServiceReject{Cause: CauseCongestion}, tlv(0x5F), tlv(0x6B, 0x21)),
			&ServiceReject{Cause: CauseCongestion, T3448: &GPRSTimer2{Unit: 1, Value: 1}},
		},
		{
			"Service Reject: T3346 of 2 octets",
			[]byte{0x7e, 0x00, 0x4d, 0x16, 0x5f, 0x02, 0x21, 0x21},
			&ServiceReject{Cause: CauseCongestion, T3346: &GPRSTimer2{Unit: 1, Value: 1}},
		},
		{
			"PDU Session Modification Command: session-AMBR of 5 octets",
			[]byte{0x2e, 0x05, 0x01, 0xcb, 0x59, 0x1a, 0x2a, 0x05, 1, 0, 1, 1, 0},
			&PDUSessionModificationCommand{SMHeader: sh(5, 1), Cause: CauseInsufficientResources5GSM},
		},
		{
			"PDU Session Establishment Accept: PDU address too short, then type Ethernet; DNN label overrun",
			[]byte{
				0x2e, 0x05, 0x01, 0xc2, 0x11, 0x00, 0x00, 0x06, 1, 0, 1, 1, 0, 1,
				0x29, 0x02, 0x01, 10, 0x29, 0x05, 0x05, 10, 0, 0, 1, 0x25, 0x02, 0x05, 'a', 0x22, 0x01, 0x01,
			},
			&PDUSessionEstablishmentAccept{
				SMHeader: sh(5, 1), PDUSessionType: PDUSessionTypeIPv4, SSCMode: SSCMode1,
				SessionAMBR: SessionAMBR{DL: 1000, UL: 1000}, SNSSAI: &identity.SNSSAI{SST: 1, SD: identity.NoSD},
			},
		},
		{
			"PDU Session Establishment Reject: empty back-off timer",
			[]byte{0x2e, 0x05, 0x01, 0xc3, 0x1a, 0x37, 0x00},
			&PDUSessionEstablishmentReject{SMHeader: sh(5, 1), Cause: CauseInsufficientResources5GSM},
		},
	} {
		got, err := Decode(c.b)
		if err != nil {
			t.Errorf("%s: Decode(% x): %v", c.name, c.b, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestDecodeRepeatedIEs checks TS 24.501 §7.6.3: only the first occurrence
// of a repeated IE is handled, even when it is itself treated as not
// present (§7.7.1).
func TestDecodeRepeatedIEs(t *testing.T) {
	ra := func(extra ...[]byte) *RegistrationAccept {
		t.Helper()
		m, err := Decode(encodeWith(t, &RegistrationAccept{Result: Registered3GPP}, extra...))
		if err != nil {
			t.Fatal(err)
		}
		return m.(*RegistrationAccept)
	}
	if m := ra(tlv(0x5E, 0x21), tlv(0x5E, 0x45)); m.T3512 == nil || *m.T3512 != (GPRSTimer3{Unit: 1, Value: 1}) {
		t.Errorf("first T3512 not kept: %+v", m.T3512)
	}
	if m := ra(tlv(0x5E), tlv(0x5E, 0x45)); m.T3512 != nil {
		t.Errorf("repetition of a dropped T3512 used: %+v", m.T3512)
	}
	// type 1 IEs are told apart by their high nibble
	m, err := Decode(encodeWith(t, &ULNASTransport{PayloadContainerType: PayloadSMS, Payload: []byte{1}}, []byte{0x82, 0x81}))
	if err != nil || m.(*ULNASTransport).RequestType != RequestExisting {
		t.Errorf("repeated request type: %+v, %v", m, err)
	}
}

// TestDecodeFailsOnBadMandatoryIEs checks that the imperative part and the
// IEs excepted from §7.7.1 still fail the message.
func TestDecodeFailsOnBadMandatoryIEs(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"Identity Response: IMEISV of 17 digits", append([]byte{0x7e, 0x00, 0x5c, 0x00, 0x09}, imeisv17(t)...)},
		{"Registration Request: 5G-GUTI of 10 octets", []byte{0x7e, 0x00, 0x41, 0x71, 0x00, 0x0a, 0xf2, 0x02, 0xf8, 0x39, 1, 2, 3, 4, 5, 6}},
		{"Service Request: 5G-S-TMSI IE holding an IMEISV", append([]byte{0x7e, 0x00, 0x4c, 0x10, 0x00, 0x09}, imeisv17(t)...)},
		{"Registration Accept: IE running past the message", encodeWith(t, &RegistrationAccept{Result: Registered3GPP}, []byte{0x5E, 0x02, 0x21})},
		// QoS IEs (qosIE): #83/#84 are the procedures' answer to their errors
		{"PDU Session Modification Command: QoS flow operation code 4", []byte{0x2e, 0x05, 0x01, 0xcb, 0x79, 0x00, 0x03, 0x01, 0x80, 0x00}},
		{"PDU Session Modification Request: QoS rule operation code 7", []byte{0x2e, 0x05, 0x01, 0xc9, 0x7a, 0x00, 0x05, 1, 0, 2, 0xe0, 0}},
	} {
		if m, err := Decode(c.b); err == nil {
			t.Errorf("%s: Decode(% x) = %+v", c.name, c.b, m)
		}
	}
}
