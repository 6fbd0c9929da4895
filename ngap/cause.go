package ngap

import "fmt"

// String gives the group, the value and the value's name in the ASN.1 of
// TS 38.413 §9.4.5 (Rel-17), e.g. "misc(4) unknown-PLMN-or-SNPN"; a value
// the table does not name (a later release's extension) is "misc(9)".
func (c Cause) String() string {
	if int(c.Group) >= len(causeGroupNames) {
		return fmt.Sprintf("cause(%d,%d)", c.Group, c.Value)
	}
	s := fmt.Sprintf("%s(%d)", causeGroupNames[c.Group], c.Value)
	if n := c.Name(); n != "" {
		s += " " + n
	}
	return s
}

// Name is the ASN.1 name of the cause value (TS 38.413 §9.4.5), "" when
// the group or value is one this table does not know.
func (c Cause) Name() string {
	if int(c.Group) >= len(causeValueNames) {
		return ""
	}
	names := causeValueNames[c.Group]
	if int(c.Value) >= len(names) {
		return ""
	}
	return names[c.Value]
}

// causeGroupNames are the choices of Cause (TS 38.413 §9.3.1.2), indexed
// by CauseGroup.
var causeGroupNames = [...]string{"radioNetwork", "transport", "nas", "protocol", "misc"}

// causeValueNames are the ENUMERATED values of each group, in ASN.1 order
// (the value is the index), as TS 38.413 V17 §9.4.5 spells them, the
// specification's "unkown-qos-flow-ID" included. Indexed by CauseGroup.
var causeValueNames = [...][]string{
	CauseRadioNetwork: {
		"unspecified",
		"txnrelocoverall-expiry",
		"successful-handover",
		"release-due-to-ngran-generated-reason",
		"release-due-to-5gc-generated-reason",
		"handover-cancelled",
		"partial-handover",
		"ho-failure-in-target-5GC-ngran-node-or-target-system",
		"ho-target-not-allowed",
		"tngrelocoverall-expiry",
		"tngrelocprep-expiry",
		"cell-not-available",
		"unknown-targetID",
		"no-radio-resources-available-in-target-cell",
		"unknown-local-UE-NGAP-ID",
		"inconsistent-remote-UE-NGAP-ID",
		"handover-desirable-for-radio-reason",
		"time-critical-handover",
		"resource-optimisation-handover",
		"reduce-load-in-serving-cell",
		"user-inactivity",
		"radio-connection-with-ue-lost",
		"radio-resources-not-available",
		"invalid-qos-combination",
		"failure-in-radio-interface-procedure",
		"interaction-with-other-procedure",
		"unknown-PDU-session-ID",
		"unkown-qos-flow-ID",
		"multiple-PDU-session-ID-instances",
		"multiple-qos-flow-ID-instances",
		"encryption-and-or-integrity-protection-algorithms-not-supported",
		"ng-intra-system-handover-triggered",
		"ng-inter-system-handover-triggered",
		"xn-handover-triggered",
		"not-supported-5QI-value",
		"ue-context-transfer",
		"ims-voice-eps-fallback-or-rat-fallback-triggered",
		"up-integrity-protection-not-possible",
		"up-confidentiality-protection-not-possible",
		"slice-not-supported",
		"ue-in-rrc-inactive-state-not-reachable",
		"redirection",
		"resources-not-available-for-the-slice",
		"ue-max-integrity-protected-data-rate-reason",
		"release-due-to-cn-detected-mobility",
		// The extension values (after "...").
		"n26-interface-not-available",
		"release-due-to-pre-emption",
		"multiple-location-reporting-reference-ID-instances",
		"rsn-not-available-for-the-up",
		"npn-access-denied",
		"cag-only-access-denied",
		"insufficient-ue-capabilities",
		"redcap-ue-not-supported",
		"unknown-MBS-Session-ID",
		"indicated-MBS-session-area-information-not-served-by-the-gNB",
		"inconsistent-slice-info-for-the-session",
		"misaligned-association-for-multicast-unicast",
	},
	CauseTransport: {
		"transport-resource-unavailable",
		"unspecified",
	},
	CauseNAS: {
		"normal-release",
		"authentication-failure",
		"deregister",
		"unspecified",
		"uE-not-in-PLMN-serving-area", // extension
	},
	CauseProtocol: {
		"transfer-syntax-error",
		"abstract-syntax-error-reject",
		"abstract-syntax-error-ignore-and-notify",
		"message-not-compatible-with-receiver-state",
		"semantic-error",
		"abstract-syntax-error-falsely-constructed-message",
		"unspecified",
	},
	CauseMisc: {
		"control-processing-overload",
		"not-enough-user-plane-processing-resources",
		"hardware-failure",
		"om-intervention",
		"unknown-PLMN-or-SNPN",
		"unspecified",
	},
}
