package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/ie"
)

// The transfer IEs of the path switch and handover procedures (TS 38.413
// §9.3.4). Like those of transfer.go they are standalone aligned-PER
// encodings carried as OCTET STRING contents and, between AMF and SMF, as
// N2 SM information (TS 29.502). The Handover Request Transfer of a Handover
// Request is a PDU Session Resource Setup Request Transfer
// (EncodeSetupRequestTransfer).

// QoSFlowWithDataForwarding is one item of a QoS Flow List with Data
// Forwarding (TS 38.413 §9.3.2.13).
type QoSFlowWithDataForwarding struct {
	QFI uint8
	// DataForwardingAccepted is Data Forwarding Accepted "data-forwarding-
	// accepted" (§9.3.1.62); false = absent.
	DataForwardingAccepted bool
}

// PathSwitchRequestTransfer (TS 38.413 §9.3.4.8). User Plane Security
// Information is not modelled: Decode drops it.
type PathSwitchRequestTransfer struct {
	DLTunnel GTPTunnel // DL NG-U UP TNL Information
	// DLTunnelReused is DL NG-U TNL Information Reused "true"; false =
	// absent.
	DLTunnelReused bool
	QoSFlows       []uint8 // QoS Flow Accepted List: 1..64 QFIs
}

// PathSwitchRequestAcknowledgeTransfer (TS 38.413 §9.3.4.9). Security
// Indication is not modelled: Decode drops it.
type PathSwitchRequestAcknowledgeTransfer struct {
	ULTunnel *GTPTunnel // UL NG-U UP TNL Information; optional
}

// PathSwitchRequestUnsuccessfulTransfer (TS 38.413 §9.3.4.20).
type PathSwitchRequestUnsuccessfulTransfer struct {
	Cause Cause
}

// PathSwitchRequestSetupFailedTransfer (TS 38.413 §9.3.4.15).
type PathSwitchRequestSetupFailedTransfer struct {
	Cause Cause
}

// HandoverRequiredTransfer (TS 38.413 §9.3.4.14).
type HandoverRequiredTransfer struct {
	// DirectForwardingPathAvailable is Direct Forwarding Path Availability
	// "direct-path-available"; false = absent.
	DirectForwardingPathAvailable bool
}

// HandoverCommandTransfer (TS 38.413 §9.3.4.10). The Data Forwarding
// Response DRB List and the additional (split tunnel) forwarding tunnels are
// not modelled: Decode drops them.
type HandoverCommandTransfer struct {
	DLForwardingTunnel *GTPTunnel // DL Forwarding UP TNL Information; optional
	// QoS Flow to be Forwarded List: 1..64 QFIs; nil = absent.
	QoSFlowsToBeForwarded []uint8
	// ULForwardingTunnel is UL Forwarding UP TNL Information, an extension
	// IE (criticality reject); optional.
	ULForwardingTunnel *GTPTunnel
}

// HandoverRequestAcknowledgeTransfer (TS 38.413 §9.3.4.11). Security Result
// and the Data Forwarding Response DRB List are not modelled: Decode drops
// them.
type HandoverRequestAcknowledgeTransfer struct {
	DLTunnel           GTPTunnel  // DL NG-U UP TNL Information
	DLForwardingTunnel *GTPTunnel // DL Forwarding UP TNL Information; optional
	// QoS Flow Setup Response List: 1..64 flows.
	QoSFlows []QoSFlowWithDataForwarding
	// QoS Flow Failed to Setup List; nil = absent.
	FailedQoSFlows []QoSFlowWithCause
}

// HandoverResourceAllocationUnsuccessfulTransfer (TS 38.413 §9.3.4.19).
type HandoverResourceAllocationUnsuccessfulTransfer struct {
	Cause                  Cause
	CriticalityDiagnostics *CriticalityDiagnostics // optional
}

// HandoverPreparationUnsuccessfulTransfer (TS 38.413 §9.3.4.18).
type HandoverPreparationUnsuccessfulTransfer struct {
	Cause Cause
}

// EncodePathSwitchRequestTransfer encodes a Path Switch Request Transfer.
func EncodePathSwitchRequestTransfer(t *PathSwitchRequestTransfer) ([]byte, error) {
	return encodeTransfer("path switch request transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodePathSwitchRequestTransfer decodes a Path Switch Request Transfer. It
// never panics.
func DecodePathSwitchRequestTransfer(b []byte) (*PathSwitchRequestTransfer, error) {
	x := new(ie.PathSwitchRequestTransfer)
	return decodeTransfer("path switch request transfer", b, x, func() (*PathSwitchRequestTransfer, error) {
		return pathSwitchRequestTransferFrom(x)
	})
}

// EncodePathSwitchRequestAcknowledgeTransfer encodes a Path Switch Request
// Acknowledge Transfer.
func EncodePathSwitchRequestAcknowledgeTransfer(t *PathSwitchRequestAcknowledgeTransfer) ([]byte, error) {
	return encodeTransfer("path switch request acknowledge transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		x := &ie.PathSwitchRequestAcknowledgeTransfer{}
		if t.ULTunnel != nil {
			ul, err := gtpTunnelIE(*t.ULTunnel)
			if err != nil {
				return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
			}
			x.ULNGUUPTNLInformation = ul
		}
		return x, nil
	})
}

// DecodePathSwitchRequestAcknowledgeTransfer decodes a Path Switch Request
// Acknowledge Transfer. It never panics.
func DecodePathSwitchRequestAcknowledgeTransfer(b []byte) (*PathSwitchRequestAcknowledgeTransfer, error) {
	x := new(ie.PathSwitchRequestAcknowledgeTransfer)
	return decodeTransfer("path switch request acknowledge transfer", b, x, func() (*PathSwitchRequestAcknowledgeTransfer, error) {
		t := &PathSwitchRequestAcknowledgeTransfer{}
		if x.ULNGUUPTNLInformation != nil {
			ul, err := gtpTunnelFrom(x.ULNGUUPTNLInformation)
			if err != nil {
				return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
			}
			t.ULTunnel = &ul
		}
		return t, nil
	})
}

// EncodePathSwitchRequestUnsuccessfulTransfer encodes a Path Switch Request
// Unsuccessful Transfer.
func EncodePathSwitchRequestUnsuccessfulTransfer(t *PathSwitchRequestUnsuccessfulTransfer) ([]byte, error) {
	return encodeTransfer("path switch request unsuccessful transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.PathSwitchRequestUnsuccessfulTransfer{Cause: c}, err
	})
}

// DecodePathSwitchRequestUnsuccessfulTransfer decodes a Path Switch Request
// Unsuccessful Transfer. It never panics.
func DecodePathSwitchRequestUnsuccessfulTransfer(b []byte) (*PathSwitchRequestUnsuccessfulTransfer, error) {
	x := new(ie.PathSwitchRequestUnsuccessfulTransfer)
	return decodeTransfer("path switch request unsuccessful transfer", b, x, func() (*PathSwitchRequestUnsuccessfulTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &PathSwitchRequestUnsuccessfulTransfer{Cause: c}, err
	})
}

// EncodePathSwitchRequestSetupFailedTransfer encodes a Path Switch Request
// Setup Failed Transfer.
func EncodePathSwitchRequestSetupFailedTransfer(t *PathSwitchRequestSetupFailedTransfer) ([]byte, error) {
	return encodeTransfer("path switch request setup failed transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.PathSwitchRequestSetupFailedTransfer{Cause: c}, err
	})
}

// DecodePathSwitchRequestSetupFailedTransfer decodes a Path Switch Request
// Setup Failed Transfer. It never panics.
func DecodePathSwitchRequestSetupFailedTransfer(b []byte) (*PathSwitchRequestSetupFailedTransfer, error) {
	x := new(ie.PathSwitchRequestSetupFailedTransfer)
	return decodeTransfer("path switch request setup failed transfer", b, x, func() (*PathSwitchRequestSetupFailedTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &PathSwitchRequestSetupFailedTransfer{Cause: c}, err
	})
}

// EncodeHandoverRequiredTransfer encodes a Handover Required Transfer.
func EncodeHandoverRequiredTransfer(t *HandoverRequiredTransfer) ([]byte, error) {
	return encodeTransfer("handover required transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		x := &ie.HandoverRequiredTransfer{}
		if t.DirectForwardingPathAvailable {
			x.DirectForwardingPathAvailability = &ie.DirectForwardingPathAvailability{Value: ie.DirectForwardingPathAvailabilityPresentDirectPathAvailable}
		}
		return x, nil
	})
}

// DecodeHandoverRequiredTransfer decodes a Handover Required Transfer. It
// never panics.
func DecodeHandoverRequiredTransfer(b []byte) (*HandoverRequiredTransfer, error) {
	x := new(ie.HandoverRequiredTransfer)
	return decodeTransfer("handover required transfer", b, x, func() (*HandoverRequiredTransfer, error) {
		t := &HandoverRequiredTransfer{}
		if d := x.DirectForwardingPathAvailability; d != nil {
			if d.Value != ie.DirectForwardingPathAvailabilityPresentDirectPathAvailable {
				return nil, fmt.Errorf("direct forwarding path availability %d", d.Value)
			}
			t.DirectForwardingPathAvailable = true
		}
		return t, nil
	})
}

// EncodeHandoverCommandTransfer encodes a Handover Command Transfer.
func EncodeHandoverCommandTransfer(t *HandoverCommandTransfer) ([]byte, error) {
	return encodeTransfer("handover command transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeHandoverCommandTransfer decodes a Handover Command Transfer. It
// never panics.
func DecodeHandoverCommandTransfer(b []byte) (*HandoverCommandTransfer, error) {
	x := new(ie.HandoverCommandTransfer)
	return decodeTransfer("handover command transfer", b, x, func() (*HandoverCommandTransfer, error) {
		return handoverCommandTransferFrom(x)
	})
}

// EncodeHandoverRequestAcknowledgeTransfer encodes a Handover Request
// Acknowledge Transfer.
func EncodeHandoverRequestAcknowledgeTransfer(t *HandoverRequestAcknowledgeTransfer) ([]byte, error) {
	return encodeTransfer("handover request acknowledge transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeHandoverRequestAcknowledgeTransfer decodes a Handover Request
// Acknowledge Transfer. It never panics.
func DecodeHandoverRequestAcknowledgeTransfer(b []byte) (*HandoverRequestAcknowledgeTransfer, error) {
	x := new(ie.HandoverRequestAcknowledgeTransfer)
	return decodeTransfer("handover request acknowledge transfer", b, x, func() (*HandoverRequestAcknowledgeTransfer, error) {
		return handoverRequestAcknowledgeTransferFrom(x)
	})
}

// EncodeHandoverResourceAllocationUnsuccessfulTransfer encodes a Handover
// Resource Allocation Unsuccessful Transfer.
func EncodeHandoverResourceAllocationUnsuccessfulTransfer(t *HandoverResourceAllocationUnsuccessfulTransfer) ([]byte, error) {
	return encodeTransfer("handover resource allocation unsuccessful transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.HandoverResourceAllocationUnsuccessfulTransfer{Cause: c, CriticalityDiagnostics: critDiagIE(t.CriticalityDiagnostics)}, err
	})
}

// DecodeHandoverResourceAllocationUnsuccessfulTransfer decodes a Handover
// Resource Allocation Unsuccessful Transfer. It never panics.
func DecodeHandoverResourceAllocationUnsuccessfulTransfer(b []byte) (*HandoverResourceAllocationUnsuccessfulTransfer, error) {
	x := new(ie.HandoverResourceAllocationUnsuccessfulTransfer)
	return decodeTransfer("handover resource allocation unsuccessful transfer", b, x, func() (*HandoverResourceAllocationUnsuccessfulTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &HandoverResourceAllocationUnsuccessfulTransfer{Cause: c, CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}, err
	})
}

// EncodeHandoverPreparationUnsuccessfulTransfer encodes a Handover
// Preparation Unsuccessful Transfer.
func EncodeHandoverPreparationUnsuccessfulTransfer(t *HandoverPreparationUnsuccessfulTransfer) ([]byte, error) {
	return encodeTransfer("handover preparation unsuccessful transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.HandoverPreparationUnsuccessfulTransfer{Cause: c}, err
	})
}

// DecodeHandoverPreparationUnsuccessfulTransfer decodes a Handover
// Preparation Unsuccessful Transfer. It never panics.
func DecodeHandoverPreparationUnsuccessfulTransfer(b []byte) (*HandoverPreparationUnsuccessfulTransfer, error) {
	x := new(ie.HandoverPreparationUnsuccessfulTransfer)
	return decodeTransfer("handover preparation unsuccessful transfer", b, x, func() (*HandoverPreparationUnsuccessfulTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &HandoverPreparationUnsuccessfulTransfer{Cause: c}, err
	})
}

// qfiListIE checks a list of 1..64 QFIs (maxnoofQoSFlows, TS 38.413 §9.4.6)
// and builds one item per QFI with mk.
func qfiListIE[T any](name string, qfis []uint8, mk func(*ie.QosFlowIdentifier) T) ([]T, error) {
	if len(qfis) == 0 || len(qfis) > 64 {
		return nil, fmt.Errorf("%s of %d QoS flows (1..64)", name, len(qfis))
	}
	out := make([]T, len(qfis))
	for i, q := range qfis {
		qfi, err := qfiIE(q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[i] = mk(qfi)
	}
	return out, nil
}

// qfiListFrom is the inverse of qfiListIE; get extracts the QFI.
func qfiListFrom[T any](name string, l []T, get func(*T) *ie.QosFlowIdentifier) ([]uint8, error) {
	out := make([]uint8, len(l))
	for i := range l {
		q, err := qfiFrom(get(&l[i]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[i] = q
	}
	return out, nil
}

func (t *PathSwitchRequestTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	dl, err := gtpTunnelIE(t.DLTunnel)
	if err != nil {
		return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
	}
	l, err := qfiListIE("QoS flow accepted list", t.QoSFlows, func(q *ie.QosFlowIdentifier) ie.QosFlowAcceptedItem {
		return ie.QosFlowAcceptedItem{QosFlowIdentifier: q}
	})
	if err != nil {
		return nil, err
	}
	x := &ie.PathSwitchRequestTransfer{DLNGUUPTNLInformation: dl, QosFlowAcceptedList: &ie.QosFlowAcceptedList{List: l}}
	if t.DLTunnelReused {
		x.DLNGUTNLInformationReused = &ie.DLNGUTNLInformationReused{Value: ie.DLNGUTNLInformationReusedPresentTrue}
	}
	return x, nil
}

func pathSwitchRequestTransferFrom(x *ie.PathSwitchRequestTransfer) (*PathSwitchRequestTransfer, error) {
	if x.QosFlowAcceptedList == nil {
		return nil, errors.New("missing QoS flow accepted list")
	}
	dl, err := gtpTunnelFrom(x.DLNGUUPTNLInformation)
	if err != nil {
		return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
	}
	t := &PathSwitchRequestTransfer{DLTunnel: dl}
	if r := x.DLNGUTNLInformationReused; r != nil {
		if r.Value != ie.DLNGUTNLInformationReusedPresentTrue {
			return nil, fmt.Errorf("DL NG-U TNL information reused %d", r.Value)
		}
		t.DLTunnelReused = true
	}
	t.QoSFlows, err = qfiListFrom("QoS flow accepted list", x.QosFlowAcceptedList.List, func(it *ie.QosFlowAcceptedItem) *ie.QosFlowIdentifier {
		return it.QosFlowIdentifier
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (t *HandoverCommandTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	x := &ie.HandoverCommandTransfer{}
	var err error
	if t.DLForwardingTunnel != nil {
		if x.DLForwardingUPTNLInformation, err = gtpTunnelIE(*t.DLForwardingTunnel); err != nil {
			return nil, fmt.Errorf("DL forwarding UP TNL information: %w", err)
		}
	}
	if t.QoSFlowsToBeForwarded != nil {
		l, err := qfiListIE("QoS flow to be forwarded list", t.QoSFlowsToBeForwarded, func(q *ie.QosFlowIdentifier) ie.QosFlowToBeForwardedItem {
			return ie.QosFlowToBeForwardedItem{QosFlowIdentifier: q}
		})
		if err != nil {
			return nil, err
		}
		x.QosFlowToBeForwardedList = &ie.QosFlowToBeForwardedList{List: l}
	}
	if t.ULForwardingTunnel != nil {
		ul, err := gtpTunnelIE(*t.ULForwardingTunnel)
		if err != nil {
			return nil, fmt.Errorf("UL forwarding UP TNL information: %w", err)
		}
		x.IEExtensions = &ie.ProtocolExtensionContainerHandoverCommandTransferExtIEs{List: []ie.HandoverCommandTransferExtIEs{{
			Id:                           &ie.ProtocolExtensionID{Value: ie.ProtocolIEIDULForwardingUPTNLInformation},
			Criticality:                  &ie.Criticality{Value: ie.CriticalityPresentReject},
			ULForwardingUPTNLInformation: ul,
		}}}
	}
	return x, nil
}

func handoverCommandTransferFrom(x *ie.HandoverCommandTransfer) (*HandoverCommandTransfer, error) {
	t := &HandoverCommandTransfer{}
	if x.DLForwardingUPTNLInformation != nil {
		dl, err := gtpTunnelFrom(x.DLForwardingUPTNLInformation)
		if err != nil {
			return nil, fmt.Errorf("DL forwarding UP TNL information: %w", err)
		}
		t.DLForwardingTunnel = &dl
	}
	if l := x.QosFlowToBeForwardedList; l != nil {
		var err error
		t.QoSFlowsToBeForwarded, err = qfiListFrom("QoS flow to be forwarded list", l.List, func(it *ie.QosFlowToBeForwardedItem) *ie.QosFlowIdentifier {
			return it.QosFlowIdentifier
		})
		if err != nil {
			return nil, err
		}
	}
	if x.IEExtensions != nil {
		for _, e := range x.IEExtensions.List {
			if e.ULForwardingUPTNLInformation == nil {
				continue
			}
			if t.ULForwardingTunnel != nil {
				return nil, errors.New("UL forwarding UP TNL information occurs twice")
			}
			ul, err := gtpTunnelFrom(e.ULForwardingUPTNLInformation)
			if err != nil {
				return nil, fmt.Errorf("UL forwarding UP TNL information: %w", err)
			}
			t.ULForwardingTunnel = &ul
		}
	}
	return t, nil
}

func (t *HandoverRequestAcknowledgeTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	dl, err := gtpTunnelIE(t.DLTunnel)
	if err != nil {
		return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
	}
	if len(t.QoSFlows) == 0 || len(t.QoSFlows) > 64 {
		return nil, fmt.Errorf("QoS flow setup response list of %d QoS flows (1..64)", len(t.QoSFlows))
	}
	l := &ie.QosFlowListWithDataForwarding{List: make([]ie.QosFlowItemWithDataForwarding, len(t.QoSFlows))}
	for i, f := range t.QoSFlows {
		qfi, err := qfiIE(f.QFI)
		if err != nil {
			return nil, fmt.Errorf("QoS flow setup response list: %w", err)
		}
		l.List[i].QosFlowIdentifier = qfi
		if f.DataForwardingAccepted {
			l.List[i].DataForwardingAccepted = &ie.DataForwardingAccepted{Value: ie.DataForwardingAcceptedPresentDataForwardingAccepted}
		}
	}
	x := &ie.HandoverRequestAcknowledgeTransfer{DLNGUUPTNLInformation: dl, QosFlowSetupResponseList: l}
	if t.DLForwardingTunnel != nil {
		if x.DLForwardingUPTNLInformation, err = gtpTunnelIE(*t.DLForwardingTunnel); err != nil {
			return nil, fmt.Errorf("DL forwarding UP TNL information: %w", err)
		}
	}
	if t.FailedQoSFlows != nil {
		if x.QosFlowFailedToSetupList, err = flowsWithCauseIE(t.FailedQoSFlows); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func handoverRequestAcknowledgeTransferFrom(x *ie.HandoverRequestAcknowledgeTransfer) (*HandoverRequestAcknowledgeTransfer, error) {
	if x.QosFlowSetupResponseList == nil {
		return nil, errors.New("missing QoS flow setup response list")
	}
	dl, err := gtpTunnelFrom(x.DLNGUUPTNLInformation)
	if err != nil {
		return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
	}
	t := &HandoverRequestAcknowledgeTransfer{DLTunnel: dl, QoSFlows: make([]QoSFlowWithDataForwarding, len(x.QosFlowSetupResponseList.List))}
	for i, it := range x.QosFlowSetupResponseList.List {
		q, err := qfiFrom(it.QosFlowIdentifier)
		if err != nil {
			return nil, fmt.Errorf("QoS flow setup response list: %w", err)
		}
		t.QoSFlows[i].QFI = q
		if d := it.DataForwardingAccepted; d != nil {
			if d.Value != ie.DataForwardingAcceptedPresentDataForwardingAccepted {
				return nil, fmt.Errorf("QoS flow %d: data forwarding accepted %d", q, d.Value)
			}
			t.QoSFlows[i].DataForwardingAccepted = true
		}
	}
	if x.DLForwardingUPTNLInformation != nil {
		f, err := gtpTunnelFrom(x.DLForwardingUPTNLInformation)
		if err != nil {
			return nil, fmt.Errorf("DL forwarding UP TNL information: %w", err)
		}
		t.DLForwardingTunnel = &f
	}
	if x.QosFlowFailedToSetupList != nil {
		if t.FailedQoSFlows, err = flowsWithCauseFrom(x.QosFlowFailedToSetupList); err != nil {
			return nil, err
		}
	}
	return t, nil
}
