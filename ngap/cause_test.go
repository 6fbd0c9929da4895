package ngap

import (
	"testing"

	"github.com/free5gc/ngap/ie"
)

// TestCauseNames: causes print with their TS 38.413 §9.4.5 names. The
// values are free5gc's enumeration constants (an independent transcription
// of the ASN.1), the names the specification's; the last value of each
// group is checked too, so that a name left out or added shifts a check.
func TestCauseNames(t *testing.T) {
	for _, tc := range []struct {
		c    Cause
		want string
	}{
		{Cause{CauseMisc, uint8(ie.CauseMiscPresentUnknownPLMNOrSNPN)}, "misc(4) unknown-PLMN-or-SNPN"},
		{Cause{CauseMisc, uint8(ie.CauseMiscPresentUnspecified)}, "misc(5) unspecified"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentUnspecified)}, "radioNetwork(0) unspecified"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentUnknownLocalUENGAPID)}, "radioNetwork(14) unknown-local-UE-NGAP-ID"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentRadioConnectionWithUeLost)}, "radioNetwork(21) radio-connection-with-ue-lost"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentUnkownQosFlowID)}, "radioNetwork(27) unkown-qos-flow-ID"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentSliceNotSupported)}, "radioNetwork(39) slice-not-supported"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentReleaseDueToCnDetectedMobility)}, "radioNetwork(44) release-due-to-cn-detected-mobility"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentN26InterfaceNotAvailable)}, "radioNetwork(45) n26-interface-not-available"},
		{Cause{CauseRadioNetwork, uint8(ie.CauseRadioNetworkPresentMisalignedAssociationForMulticastUnicast)}, "radioNetwork(56) misaligned-association-for-multicast-unicast"},
		{Cause{CauseTransport, uint8(ie.CauseTransportPresentUnspecified)}, "transport(1) unspecified"},
		{Cause{CauseNAS, uint8(ie.CauseNasPresentDeregister)}, "nas(2) deregister"},
		{Cause{CauseNAS, uint8(ie.CauseNasPresentUENotInPLMNServingArea)}, "nas(4) uE-not-in-PLMN-serving-area"},
		{Cause{CauseProtocol, uint8(ie.CauseProtocolPresentMessageNotCompatibleWithReceiverState)}, "protocol(3) message-not-compatible-with-receiver-state"},
		{Cause{CauseProtocol, uint8(ie.CauseProtocolPresentUnspecified)}, "protocol(6) unspecified"},
		// Values beyond the table (a later release) and groups beyond the
		// choice keep their numbers.
		{Cause{CauseRadioNetwork, 57}, "radioNetwork(57)"},
		{Cause{CauseMisc, 6}, "misc(6)"},
		{Cause{5, 1}, "cause(5,1)"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%d/%d: %q, want %q", tc.c.Group, tc.c.Value, got, tc.want)
		}
	}
	// tern's own constants name the values they say.
	if got := (Cause{CauseMisc, MiscUnknownPLMNOrSNPN}).Name(); got != "unknown-PLMN-or-SNPN" {
		t.Errorf("MiscUnknownPLMNOrSNPN is %q", got)
	}
	if got := (Cause{CauseRadioNetwork, RadioNetworkAlgorithmsNotSupported}).Name(); got != "encryption-and-or-integrity-protection-algorithms-not-supported" {
		t.Errorf("RadioNetworkAlgorithmsNotSupported is %q", got)
	}
}
