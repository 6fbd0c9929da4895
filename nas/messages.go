package nas

import "github.com/tern5g/tern/identity"

// Message is a plain 5GMM message.
type Message interface{ MessageType() MsgType }

// RegistrationRequest (TS 24.501 §8.2.6).
type RegistrationRequest struct {
	RegistrationType     RegistrationType
	FollowOnRequest      bool // FOR bit: the UE has pending signalling
	NgKSI                NgKSI
	MobileIdentity       MobileIdentity
	UESecurityCapability *UESecurityCapability // optional
	RequestedNSSAI       []identity.SNSSAI     // optional; nil = absent
	LastVisitedTAI       *identity.TAI         // optional
	UplinkDataStatus     *uint16               // optional; bit i = PSI i (i = 0..15)
	PDUSessionStatus     *uint16               // optional; bit i = PSI i
	// NASMessageContainer carries the full (ciphered) message when the
	// initial message holds cleartext IEs only (TS 24.501 §4.4.6). nil = absent.
	NASMessageContainer []byte
}

// RegistrationAccept (TS 24.501 §8.2.7).
type RegistrationAccept struct {
	Result           RegistrationResult
	SMSAllowed       bool
	GUTI             *identity.GUTI    // optional 5G-GUTI
	TAIList          []identity.TAI    // optional; encoded as one or more partial lists
	AllowedNSSAI     []identity.SNSSAI // optional
	T3512            *GPRSTimer3       // optional
	T3502            *GPRSTimer2       // optional
	PDUSessionStatus *uint16           // optional
}

// RegistrationComplete (TS 24.501 §8.2.8).
type RegistrationComplete struct{}

// RegistrationReject (TS 24.501 §8.2.9).
type RegistrationReject struct {
	Cause Cause5GMM
}

// AuthenticationRequest (TS 24.501 §8.2.1), 5G AKA form.
type AuthenticationRequest struct {
	NgKSI NgKSI
	ABBA  []byte // at least 2 octets; 0x0000 for this release
	RAND  []byte // optional, 16 octets
	AUTN  []byte // optional, 16 octets
}

// AuthenticationResponse (TS 24.501 §8.2.2).
type AuthenticationResponse struct {
	RESStar []byte // optional authentication response parameter (16 octets)
}

// AuthenticationFailure (TS 24.501 §8.2.4).
type AuthenticationFailure struct {
	Cause Cause5GMM // CauseMACFailure, CauseSynchFailure or CauseNon5GAuthenticationUnacceptable
	AUTS  []byte    // 14 octets, with CauseSynchFailure only
}

// AuthenticationReject (TS 24.501 §8.2.5).
type AuthenticationReject struct{}

// AuthenticationResult (TS 24.501 §8.2.3), EAP only.
type AuthenticationResult struct {
	NgKSI      NgKSI
	EAPMessage []byte
	ABBA       []byte // optional
}

// SecurityModeCommand (TS 24.501 §8.2.25).
type SecurityModeCommand struct {
	CipheringAlg uint8 // NEA0..NEA3
	IntegrityAlg uint8 // NIA0..NIA3
	NgKSI        NgKSI
	// ReplayedUESecurityCapability echoes what the UE sent (TS 24.501 §5.4.2.2).
	ReplayedUESecurityCapability UESecurityCapability
	IMEISVRequest                bool
	// Additional 5G security information (TS 24.501 §9.11.3.12); the IE is
	// included when either bit is set.
	RetransmitInitialNAS bool   // RINMR
	HorizontalDerivation bool   // HDP
	ABBA                 []byte // optional
}

// SecurityModeComplete (TS 24.501 §8.2.26).
type SecurityModeComplete struct {
	IMEISV string // optional, 16 digits; "" = absent
	// NASMessageContainer holds the complete initial NAS message when the
	// AMF asked for it (TS 24.501 §5.4.2.3). nil = absent.
	NASMessageContainer []byte
}

// SecurityModeReject (TS 24.501 §8.2.27).
type SecurityModeReject struct {
	Cause Cause5GMM
}

// IdentityRequest (TS 24.501 §8.2.21).
type IdentityRequest struct {
	IdentityType IdentityType
}

// IdentityResponse (TS 24.501 §8.2.22).
type IdentityResponse struct {
	MobileIdentity MobileIdentity
}

// DeregistrationRequestUEOriginating (TS 24.501 §8.2.12).
type DeregistrationRequestUEOriginating struct {
	SwitchOff      bool
	AccessType     AccessType
	NgKSI          NgKSI
	MobileIdentity MobileIdentity
}

// DeregistrationAcceptUEOriginating (TS 24.501 §8.2.13).
type DeregistrationAcceptUEOriginating struct{}

// DeregistrationRequestUETerminated (TS 24.501 §8.2.14). Its
// de-registration type has the switch off bit 0 (TS 24.501 §9.11.3.20:
// spare in this direction).
type DeregistrationRequestUETerminated struct {
	ReRegistrationRequired bool        // re-registration required bit
	AccessType             AccessType  // Access3GPP, AccessNon3GPP or AccessBoth
	Cause                  Cause5GMM   // optional; 0 = absent
	T3346                  *GPRSTimer2 // optional
}

// DeregistrationAcceptUETerminated (TS 24.501 §8.2.15).
type DeregistrationAcceptUETerminated struct{}

// Service type values (TS 24.501 §9.11.3.50).
const (
	ServiceSignalling         uint8 = 0
	ServiceData               uint8 = 1
	ServiceMobileTerminated   uint8 = 2
	ServiceEmergency          uint8 = 3
	ServiceEmergencyFallback  uint8 = 4
	ServiceHighPriorityAccess uint8 = 5
	ServiceElevatedSignalling uint8 = 6
)

// ServiceRequest (TS 24.501 §8.2.16).
type ServiceRequest struct {
	ServiceType      uint8
	NgKSI            NgKSI
	STMSI            identity.STMSI // 5G-S-TMSI mobile identity
	UplinkDataStatus *uint16        // optional
	PDUSessionStatus *uint16        // optional
	// AllowedPDUSessionStatus (§9.11.3.13): the PDU sessions of non-3GPP
	// access whose user plane the UE allows to be re-established over 3GPP
	// access. nil = absent.
	AllowedPDUSessionStatus *uint16
	NASMessageContainer     []byte // optional
}

// ServiceAccept (TS 24.501 §8.2.17).
type ServiceAccept struct {
	PDUSessionStatus             *uint16 // optional
	PDUSessionReactivationResult *uint16 // optional
	// PDUSessionReactivationResultErrorCause (§9.11.3.43): the sessions
	// whose user plane was not re-established, with the cause. nil =
	// absent; when present it has at least one entry.
	PDUSessionReactivationResultErrorCause []PDUSessionCause
	EAPMessage                             []byte      // optional
	T3448                                  *GPRSTimer2 // optional
}

// Status5GMM is the 5GMM STATUS message (TS 24.501 §8.2.29).
type Status5GMM struct {
	Cause Cause5GMM
}

// Request type values for UL NAS TRANSPORT (TS 24.501 §9.11.3.47).
const (
	RequestInitial           uint8 = 1
	RequestExisting          uint8 = 2
	RequestInitialEmergency  uint8 = 3
	RequestExistingEmergency uint8 = 4
	RequestModification      uint8 = 5
	RequestMAPDU             uint8 = 7
)

// ULNASTransport (TS 24.501 §8.2.10).
type ULNASTransport struct {
	PayloadContainerType uint8 // PayloadN1SMInformation, ...
	Payload              []byte
	PDUSessionID         uint8            // optional; 0 = absent
	OldPDUSessionID      uint8            // optional; 0 = absent
	RequestType          uint8            // optional; 0 = absent
	SNSSAI               *identity.SNSSAI // optional
	DNN                  string           // optional; "" = absent (dotted form, e.g. "internet")
}

// DLNASTransport (TS 24.501 §8.2.11).
type DLNASTransport struct {
	PayloadContainerType uint8
	Payload              []byte
	PDUSessionID         uint8     // optional; 0 = absent
	Cause                Cause5GMM // optional; 0 = absent
}

// MessageType implementations.
func (*RegistrationRequest) MessageType() MsgType    { return MsgRegistrationRequest }
func (*RegistrationAccept) MessageType() MsgType     { return MsgRegistrationAccept }
func (*RegistrationComplete) MessageType() MsgType   { return MsgRegistrationComplete }
func (*RegistrationReject) MessageType() MsgType     { return MsgRegistrationReject }
func (*AuthenticationRequest) MessageType() MsgType  { return MsgAuthenticationRequest }
func (*AuthenticationResponse) MessageType() MsgType { return MsgAuthenticationResponse }
func (*AuthenticationFailure) MessageType() MsgType  { return MsgAuthenticationFailure }
func (*AuthenticationReject) MessageType() MsgType   { return MsgAuthenticationReject }
func (*AuthenticationResult) MessageType() MsgType   { return MsgAuthenticationResult }
func (*SecurityModeCommand) MessageType() MsgType    { return MsgSecurityModeCommand }
func (*SecurityModeComplete) MessageType() MsgType   { return MsgSecurityModeComplete }
func (*SecurityModeReject) MessageType() MsgType     { return MsgSecurityModeReject }
func (*IdentityRequest) MessageType() MsgType        { return MsgIdentityRequest }
func (*IdentityResponse) MessageType() MsgType       { return MsgIdentityResponse }
func (*DeregistrationRequestUEOriginating) MessageType() MsgType {
	return MsgDeregistrationRequestUEOrig
}
func (*DeregistrationAcceptUEOriginating) MessageType() MsgType { return MsgDeregistrationAcceptUEOrig }
func (*DeregistrationRequestUETerminated) MessageType() MsgType {
	return MsgDeregistrationRequestUETerm
}
func (*DeregistrationAcceptUETerminated) MessageType() MsgType { return MsgDeregistrationAcceptUETerm }
func (*ServiceRequest) MessageType() MsgType                   { return MsgServiceRequest }
func (*ServiceAccept) MessageType() MsgType                    { return MsgServiceAccept }
func (*Status5GMM) MessageType() MsgType                       { return MsgStatus5GMM }
func (*ULNASTransport) MessageType() MsgType                   { return MsgULNASTransport }
func (*DLNASTransport) MessageType() MsgType                   { return MsgDLNASTransport }
