package nas

import (
	"fmt"
	"time"

	"github.com/tern5g/tern/identity"
)

// EPD5GMM is the extended protocol discriminator of 5GS mobility management
// messages (TS 24.007 §11.2.3.1A).
const EPD5GMM = 0x7E

// EPD5GSM is the extended protocol discriminator of 5GS session management
// messages.
const EPD5GSM = 0x2E

// MsgType is the 5GMM or 5GSM message type (TS 24.501 §9.7).
type MsgType uint8

// 5GMM message types (TS 24.501 Table 9.7.1).
const (
	MsgRegistrationRequest         MsgType = 0x41
	MsgRegistrationAccept          MsgType = 0x42
	MsgRegistrationComplete        MsgType = 0x43
	MsgRegistrationReject          MsgType = 0x44
	MsgDeregistrationRequestUEOrig MsgType = 0x45
	MsgDeregistrationAcceptUEOrig  MsgType = 0x46
	MsgDeregistrationRequestUETerm MsgType = 0x47
	MsgDeregistrationAcceptUETerm  MsgType = 0x48
	MsgServiceRequest              MsgType = 0x4C
	MsgServiceReject               MsgType = 0x4D
	MsgServiceAccept               MsgType = 0x4E
	MsgAuthenticationRequest       MsgType = 0x56
	MsgAuthenticationResponse      MsgType = 0x57
	MsgAuthenticationReject        MsgType = 0x58
	MsgAuthenticationFailure       MsgType = 0x59
	MsgAuthenticationResult        MsgType = 0x5A
	MsgIdentityRequest             MsgType = 0x5B
	MsgIdentityResponse            MsgType = 0x5C
	MsgSecurityModeCommand         MsgType = 0x5D
	MsgSecurityModeComplete        MsgType = 0x5E
	MsgSecurityModeReject          MsgType = 0x5F
	MsgStatus5GMM                  MsgType = 0x64
	MsgULNASTransport              MsgType = 0x67
	MsgDLNASTransport              MsgType = 0x68
)

var msgTypeNames = map[MsgType]string{
	MsgRegistrationRequest:         "RegistrationRequest",
	MsgRegistrationAccept:          "RegistrationAccept",
	MsgRegistrationComplete:        "RegistrationComplete",
	MsgRegistrationReject:          "RegistrationReject",
	MsgDeregistrationRequestUEOrig: "DeregistrationRequestUEOriginating",
	MsgDeregistrationAcceptUEOrig:  "DeregistrationAcceptUEOriginating",
	MsgDeregistrationRequestUETerm: "DeregistrationRequestUETerminated",
	MsgDeregistrationAcceptUETerm:  "DeregistrationAcceptUETerminated",
	MsgServiceRequest:              "ServiceRequest",
	MsgServiceReject:               "ServiceReject",
	MsgServiceAccept:               "ServiceAccept",
	MsgAuthenticationRequest:       "AuthenticationRequest",
	MsgAuthenticationResponse:      "AuthenticationResponse",
	MsgAuthenticationReject:        "AuthenticationReject",
	MsgAuthenticationFailure:       "AuthenticationFailure",
	MsgAuthenticationResult:        "AuthenticationResult",
	MsgIdentityRequest:             "IdentityRequest",
	MsgIdentityResponse:            "IdentityResponse",
	MsgSecurityModeCommand:         "SecurityModeCommand",
	MsgSecurityModeComplete:        "SecurityModeComplete",
	MsgSecurityModeReject:          "SecurityModeReject",
	MsgStatus5GMM:                  "5GMMStatus",
	MsgULNASTransport:              "ULNASTransport",
	MsgDLNASTransport:              "DLNASTransport",

	MsgPDUSessionEstablishmentRequest:      "PDUSessionEstablishmentRequest",
	MsgPDUSessionEstablishmentAccept:       "PDUSessionEstablishmentAccept",
	MsgPDUSessionEstablishmentReject:       "PDUSessionEstablishmentReject",
	MsgPDUSessionModificationRequest:       "PDUSessionModificationRequest",
	MsgPDUSessionModificationReject:        "PDUSessionModificationReject",
	MsgPDUSessionModificationCommand:       "PDUSessionModificationCommand",
	MsgPDUSessionModificationComplete:      "PDUSessionModificationComplete",
	MsgPDUSessionModificationCommandReject: "PDUSessionModificationCommandReject",
	MsgPDUSessionReleaseRequest:            "PDUSessionReleaseRequest",
	MsgPDUSessionReleaseReject:             "PDUSessionReleaseReject",
	MsgPDUSessionReleaseCommand:            "PDUSessionReleaseCommand",
	MsgPDUSessionReleaseComplete:           "PDUSessionReleaseComplete",
	MsgStatus5GSM:                          "5GSMStatus",
}

func (t MsgType) String() string {
	if s, ok := msgTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("MsgType(0x%02x)", uint8(t))
}

// Cause5GMM is a 5GMM cause value (TS 24.501 §9.11.3.2). Zero means "absent"
// where a field is optional.
type Cause5GMM uint8

// 5GMM cause values used by tern (TS 24.501 Annex A).
const (
	CauseIllegalUE                         Cause5GMM = 3
	CausePEINotAccepted                    Cause5GMM = 5
	CauseIllegalME                         Cause5GMM = 6
	Cause5GSServicesNotAllowed             Cause5GMM = 7
	CauseUEIdentityCannotBeDerived         Cause5GMM = 9
	CauseImplicitlyDeregistered            Cause5GMM = 10
	CausePLMNNotAllowed                    Cause5GMM = 11
	CauseTANotAllowed                      Cause5GMM = 12
	CauseRoamingNotAllowedInTA             Cause5GMM = 13
	CauseNoSuitableCellsInTA               Cause5GMM = 15
	CauseMACFailure                        Cause5GMM = 20
	CauseSynchFailure                      Cause5GMM = 21
	CauseCongestion                        Cause5GMM = 22
	CauseUESecurityCapabilitiesMismatch    Cause5GMM = 23
	CauseSecurityModeRejectedUnspecified   Cause5GMM = 24
	CauseNon5GAuthenticationUnacceptable   Cause5GMM = 26
	CauseN1ModeNotAllowed                  Cause5GMM = 27
	CauseRestrictedServiceArea             Cause5GMM = 28
	CauseNgKSIAlreadyInUse                 Cause5GMM = 71
	CauseNoNetworkSlicesAvailable          Cause5GMM = 62
	CausePayloadNotForwarded               Cause5GMM = 90
	CauseDNNNotSupportedOrNotSubscribed    Cause5GMM = 91
	CauseInsufficientUserPlaneResources    Cause5GMM = 92
	CauseSemanticallyIncorrectMessage      Cause5GMM = 95
	CauseInvalidMandatoryInformation       Cause5GMM = 96
	CauseMessageTypeNonExistent            Cause5GMM = 97
	CauseMessageTypeNotCompatibleWithState Cause5GMM = 98
	CauseIENonExistent                     Cause5GMM = 99
	CauseConditionalIEError                Cause5GMM = 100
	CauseMessageNotCompatibleWithState     Cause5GMM = 101
	CauseProtocolErrorUnspecified          Cause5GMM = 111
)

// cause5GMMNames are the cause values of TS 24.501 Table 9.11.3.2.1
// (Rel-17), worded as the table words them (first letter in lower case,
// as the 5GSM names are).
var cause5GMMNames = map[Cause5GMM]string{
	3:   "illegal UE",
	5:   "PEI not accepted",
	6:   "illegal ME",
	7:   "5GS services not allowed",
	9:   "UE identity cannot be derived by the network",
	10:  "implicitly de-registered",
	11:  "PLMN not allowed",
	12:  "tracking area not allowed",
	13:  "roaming not allowed in this tracking area",
	15:  "no suitable cells in tracking area",
	20:  "MAC failure",
	21:  "synch failure",
	22:  "congestion",
	23:  "UE security capabilities mismatch",
	24:  "security mode rejected, unspecified",
	26:  "non-5G authentication unacceptable",
	27:  "N1 mode not allowed",
	28:  "restricted service area",
	31:  "redirection to EPC required",
	43:  "LADN not available",
	62:  "no network slices available",
	65:  "maximum number of PDU sessions reached",
	67:  "insufficient resources for specific slice and DNN",
	69:  "insufficient resources for specific slice",
	71:  "ngKSI already in use",
	72:  "non-3GPP access to 5GCN not allowed",
	73:  "serving network not authorized",
	74:  "temporarily not authorized for this SNPN",
	75:  "permanently not authorized for this SNPN",
	76:  "not authorized for this CAG or authorized for CAG cells only",
	77:  "wireline access area not allowed",
	78:  "PLMN not allowed to operate at the present UE location",
	79:  "UAS services not allowed",
	80:  "disaster roaming for the determined PLMN with disaster condition not allowed",
	90:  "payload was not forwarded",
	91:  "DNN not supported or not subscribed in the slice",
	92:  "insufficient user-plane resources for the PDU session",
	93:  "onboarding services terminated",
	95:  "semantically incorrect message",
	96:  "invalid mandatory information",
	97:  "message type non-existent or not implemented",
	98:  "message type not compatible with the protocol state",
	99:  "information element non-existent or not implemented",
	100: "conditional IE error",
	101: "message not compatible with the protocol state",
	111: "protocol error, unspecified",
}

// String is the cause number and its name, e.g. "#7 5GS services not
// allowed" (TS 24.501 §9.11.3.2); a value the table does not name is "#N".
func (c Cause5GMM) String() string {
	if s, ok := cause5GMMNames[c]; ok {
		return fmt.Sprintf("#%d %s", uint8(c), s)
	}
	return fmt.Sprintf("#%d", uint8(c))
}

// KSINoKey is the NAS key set identifier value "no key is available"
// (TS 24.501 §9.11.3.32).
const KSINoKey = 7

// NgKSI is the NAS key set identifier (TS 24.501 §9.11.3.32).
type NgKSI struct {
	Mapped bool  // TSC: true = mapped security context, false = native
	KSI    uint8 // 0..6; KSINoKey (7) = no key available
}

// RegistrationType is the 5GS registration type value (TS 24.501 §9.11.3.7).
type RegistrationType uint8

// 5GS registration type values.
const (
	RegistrationInitial          RegistrationType = 1
	RegistrationMobilityUpdating RegistrationType = 2
	RegistrationPeriodicUpdating RegistrationType = 3
	RegistrationEmergency        RegistrationType = 4
	RegistrationSNPNOnboarding   RegistrationType = 5
)

// RegistrationResult is the 5GS registration result value (TS 24.501
// §9.11.3.6, bits 3-1 of the IE; values 0 and 4-7 are reserved).
type RegistrationResult uint8

// 5GS registration result values.
const (
	Registered3GPP           RegistrationResult = 1
	RegisteredNon3GPP        RegistrationResult = 2
	Registered3GPPAndNon3GPP RegistrationResult = 3
	// Deprecated: use Registered3GPPAndNon3GPP.
	Registered3GPPAndNon3 = Registered3GPPAndNon3GPP
)

// AccessType is the access type of TS 24.501 §9.11.2.1A / §9.11.3.20.
type AccessType uint8

// Access types.
const (
	Access3GPP    AccessType = 1
	AccessNon3GPP AccessType = 2
	AccessBoth    AccessType = 3
)

// IdentityType is the type of a 5GS mobile identity (TS 24.501 §9.11.3.3/§9.11.3.4).
type IdentityType uint8

// Identity types.
const (
	IdentityNone   IdentityType = 0
	IdentitySUCI   IdentityType = 1
	IdentityGUTI   IdentityType = 2
	IdentityIMEI   IdentityType = 3
	IdentitySTMSI  IdentityType = 4
	IdentityIMEISV IdentityType = 5
)

func (t IdentityType) String() string {
	switch t {
	case IdentityNone:
		return "none"
	case IdentitySUCI:
		return "SUCI"
	case IdentityGUTI:
		return "5G-GUTI"
	case IdentityIMEI:
		return "IMEI"
	case IdentitySTMSI:
		return "5G-S-TMSI"
	case IdentityIMEISV:
		return "IMEISV"
	}
	return fmt.Sprintf("IdentityType(%d)", uint8(t))
}

// MobileIdentity is a 5GS mobile identity (TS 24.501 §9.11.3.4). Only the
// field selected by Type is meaningful.
type MobileIdentity struct {
	Type IdentityType
	// SUCI in the TS 29.503 string form: "suci-0-208-93-0000-0-0-0000000001"
	// (null scheme: MSIN digits) or "suci-0-208-93-0000-1-1-<hex scheme output>"
	// (profiles A/B). IMSI-type SUPI only.
	SUCI   string
	GUTI   identity.GUTI  // IdentityGUTI
	STMSI  identity.STMSI // IdentitySTMSI
	IMEI   string         // IdentityIMEI: 15 digits
	IMEISV string         // IdentityIMEISV: 16 digits
}

// UESecurityCapability is the UE security capability IE (TS 24.501 §9.11.3.54).
// Each field is a bitmap whose most significant bit is algorithm 0: bit 7 =
// 5G-EA0, bit 6 = 128-5G-EA1, bit 5 = 128-5G-EA2, bit 4 = 128-5G-EA3, ...
type UESecurityCapability struct {
	EA, IA   uint8 // 5G-EA / 5G-IA
	EEA, EIA uint8 // EPS algorithms, encoded only when HasEPS
	HasEPS   bool
}

// SupportsEA reports whether the UE supports 5G-EA alg (0..7).
func (c UESecurityCapability) SupportsEA(alg uint8) bool { return alg < 8 && c.EA&(0x80>>alg) != 0 }

// SupportsIA reports whether the UE supports 5G-IA alg (0..7).
func (c UESecurityCapability) SupportsIA(alg uint8) bool { return alg < 8 && c.IA&(0x80>>alg) != 0 }

// PDUSessionCause is one entry of the PDU session reactivation result error
// cause IE (TS 24.501 §9.11.3.43): a PDU session identity and the 5GMM cause
// of its failed re-activation.
type PDUSessionCause struct {
	PSI   uint8
	Cause Cause5GMM
}

// GPRSTimer3 is a GPRS timer 3 value (TS 24.008 §10.5.7.4a), used for T3512.
type GPRSTimer3 struct {
	Unit  uint8 // 3 bits: 0=10min 1=1h 2=10h 3=2s 4=30s 5=1min 6=320h 7=deactivated
	Value uint8 // 5 bits
}

// GPRS timer 3 units.
const (
	Timer3Unit10Min       = 0
	Timer3Unit1Hour       = 1
	Timer3Unit10Hours     = 2
	Timer3Unit2Sec        = 3
	Timer3Unit30Sec       = 4
	Timer3Unit1Min        = 5
	Timer3Unit320Hours    = 6
	Timer3UnitDeactivated = 7
)

var timer3Units = [8]time.Duration{
	10 * time.Minute, time.Hour, 10 * time.Hour, 2 * time.Second,
	30 * time.Second, time.Minute, 320 * time.Hour, 0,
}

// Duration returns the timer value; ok is false if the timer is deactivated.
func (t GPRSTimer3) Duration() (d time.Duration, ok bool) {
	if t.Unit&7 == Timer3UnitDeactivated {
		return 0, false
	}
	return timer3Units[t.Unit&7] * time.Duration(t.Value&0x1F), true
}

// GPRSTimer3Of returns the GPRS timer 3 encoding of d: the finest unit that
// represents d exactly within 5 bits, else the smallest value >= d (rounded
// up so that a UE never runs a shorter timer than configured). d <= 0 gives
// the deactivated timer.
func GPRSTimer3Of(d time.Duration) GPRSTimer3 {
	if d <= 0 {
		return GPRSTimer3{Unit: Timer3UnitDeactivated}
	}
	// units in increasing size
	order := [...]uint8{Timer3Unit2Sec, Timer3Unit30Sec, Timer3Unit1Min, Timer3Unit10Min,
		Timer3Unit1Hour, Timer3Unit10Hours, Timer3Unit320Hours}
	for _, u := range order {
		step := timer3Units[u]
		if d%step == 0 && d/step <= 31 {
			return GPRSTimer3{Unit: u, Value: uint8(d / step)}
		}
	}
	for _, u := range order {
		step := timer3Units[u]
		n := (d + step - 1) / step
		if n <= 31 {
			return GPRSTimer3{Unit: u, Value: uint8(n)}
		}
	}
	return GPRSTimer3{Unit: Timer3Unit320Hours, Value: 31}
}

// PayloadContainerType values (TS 24.501 §9.11.3.40).
const (
	PayloadN1SMInformation uint8 = 1
	PayloadSMS             uint8 = 2
	PayloadLPP             uint8 = 3
	PayloadSORTransparent  uint8 = 4
	PayloadUEPolicy        uint8 = 5
	PayloadUEParameters    uint8 = 6
	PayloadMultiple        uint8 = 15
)
