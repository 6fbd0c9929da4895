package ngap

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
)

// The PDU session resource transfer IEs (TS 38.413 §9.3.4) travel as OCTET
// STRING contents inside the NGAP messages and as N2 SM information between
// AMF and SMF (TS 29.502). Each is a standalone aligned-PER encoding.

// PDU Session Type values (TS 38.413 §9.3.1.52, NGAP enumeration order).
const (
	PDUSessionTypeIPv4         uint8 = 0
	PDUSessionTypeIPv6         uint8 = 1
	PDUSessionTypeIPv4v6       uint8 = 2
	PDUSessionTypeEthernet     uint8 = 3
	PDUSessionTypeUnstructured uint8 = 4
)

// GTPTunnel is the gTPTunnel choice of UP Transport Layer Information
// (TS 38.413 §9.3.2.2): Transport Layer Address (§9.3.2.4) and GTP-TEID
// (§9.3.2.5). Addr is IPv4 (32-bit address) or IPv6 (128-bit).
type GTPTunnel struct {
	Addr netip.Addr
	TEID uint32
}

// QoSFlowSetupRequestItem is one QoS flow of a QoS Flow Setup Request List
// or QoS Flow Add or Modify Request List (TS 38.413 §9.3.4.1, §9.3.4.3)
// with non-dynamic 5QI QoS characteristics (§9.3.1.28) and ARP (§9.3.1.19).
type QoSFlowSetupRequestItem struct {
	QFI    uint8 // 0..63
	FiveQI uint8
	// PriorityLevelARP is 1..15. In a QoS Flow Add or Modify Request List,
	// FiveQI and PriorityLevelARP both 0 mean the QoS Flow Level QoS
	// Parameters are absent (optional there for an existing flow).
	PriorityLevelARP uint8
	PreemptionCap    bool // may-trigger-pre-emption
	PreemptionVuln   bool // pre-emptable
}

// QoSFlowWithCause is one item of a QoS Flow List with Cause (TS 38.413
// §9.3.1.13).
type QoSFlowWithCause struct {
	QFI   uint8
	Cause Cause
}

// PDUSessionResourceSetupRequestTransfer (TS 38.413 §9.3.4.1).
type PDUSessionResourceSetupRequestTransfer struct {
	SessionAMBR    *AMBR // PDU Session Aggregate Maximum Bit Rate; optional
	ULTunnel       GTPTunnel
	PDUSessionType uint8 // PDUSessionType*
	QoSFlows       []QoSFlowSetupRequestItem
}

// PDUSessionResourceSetupResponseTransfer (TS 38.413 §9.3.4.2): the DL QoS
// Flow per TNL Information (gNB tunnel and the QoS flows it carries).
type PDUSessionResourceSetupResponseTransfer struct {
	DLTunnel       GTPTunnel
	QoSFlows       []uint8            // associated QFIs
	FailedQoSFlows []QoSFlowWithCause // QoS Flow Failed to Setup List; optional
}

// PDUSessionResourceSetupUnsuccessfulTransfer (TS 38.413 §9.3.4.16).
type PDUSessionResourceSetupUnsuccessfulTransfer struct {
	Cause Cause
}

// PDUSessionResourceModifyRequestTransfer (TS 38.413 §9.3.4.3).
type PDUSessionResourceModifyRequestTransfer struct {
	SessionAMBR *AMBR // optional
	// ULTunnels is the UL NG-U UP TNL Modify List (optional, 1..4
	// items): the UPF end of the session's N3 tunnel moves to UL, the
	// gNB's end staying DL (§8.2.3.2: the NG-RAN node sends its uplink
	// to the new UL NG-U UP TNL Information).
	ULTunnels           []ULTunnelModifyItem
	QoSFlowsAddOrModify []QoSFlowSetupRequestItem // optional
	QoSFlowsToRelease   []QoSFlowWithCause        // optional
}

// ULTunnelModifyItem is one UL NG-U UP TNL Modify Item (TS 38.413
// §9.3.4.3): the new UPF tunnel and the NG-RAN tunnel it pairs with.
type ULTunnelModifyItem struct {
	UL, DL GTPTunnel
}

// PDUSessionResourceModifyResponseTransfer (TS 38.413 §9.3.4.4).
type PDUSessionResourceModifyResponseTransfer struct {
	DLTunnel       *GTPTunnel         // DL NG-U UP TNL Information; optional
	QoSFlows       []uint8            // QoS Flow Add or Modify Response List; optional
	FailedQoSFlows []QoSFlowWithCause // QoS Flow Failed to Add or Modify List; optional
}

// PDUSessionResourceModifyUnsuccessfulTransfer (TS 38.413 §9.3.4.7).
type PDUSessionResourceModifyUnsuccessfulTransfer struct {
	Cause Cause
}

// PDUSessionResourceReleaseCommandTransfer (TS 38.413 §9.3.4.12).
type PDUSessionResourceReleaseCommandTransfer struct {
	Cause Cause
}

// PDUSessionResourceReleaseResponseTransfer (TS 38.413 §9.3.4.21). It has
// only extensions; its encoding is one octet.
type PDUSessionResourceReleaseResponseTransfer struct{}

// EncodeSetupRequestTransfer encodes a PDU Session Resource Setup Request
// Transfer.
func EncodeSetupRequestTransfer(t *PDUSessionResourceSetupRequestTransfer) ([]byte, error) {
	return encodeTransfer("setup request transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeSetupRequestTransfer decodes a PDU Session Resource Setup Request
// Transfer. It never panics.
func DecodeSetupRequestTransfer(b []byte) (*PDUSessionResourceSetupRequestTransfer, error) {
	x := new(ie.PDUSessionResourceSetupRequestTransfer)
	return decodeTransfer("setup request transfer", b, x, func() (*PDUSessionResourceSetupRequestTransfer, error) {
		return setupRequestTransferFrom(x)
	})
}

// EncodeSetupResponseTransfer encodes a PDU Session Resource Setup Response
// Transfer.
func EncodeSetupResponseTransfer(t *PDUSessionResourceSetupResponseTransfer) ([]byte, error) {
	return encodeTransfer("setup response transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeSetupResponseTransfer decodes a PDU Session Resource Setup Response
// Transfer. It never panics.
func DecodeSetupResponseTransfer(b []byte) (*PDUSessionResourceSetupResponseTransfer, error) {
	x := new(ie.PDUSessionResourceSetupResponseTransfer)
	return decodeTransfer("setup response transfer", b, x, func() (*PDUSessionResourceSetupResponseTransfer, error) {
		return setupResponseTransferFrom(x)
	})
}

// EncodeSetupUnsuccessfulTransfer encodes a PDU Session Resource Setup
// Unsuccessful Transfer.
func EncodeSetupUnsuccessfulTransfer(t *PDUSessionResourceSetupUnsuccessfulTransfer) ([]byte, error) {
	return encodeTransfer("setup unsuccessful transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.PDUSessionResourceSetupUnsuccessfulTransfer{Cause: c}, err
	})
}

// DecodeSetupUnsuccessfulTransfer decodes a PDU Session Resource Setup
// Unsuccessful Transfer. It never panics.
func DecodeSetupUnsuccessfulTransfer(b []byte) (*PDUSessionResourceSetupUnsuccessfulTransfer, error) {
	x := new(ie.PDUSessionResourceSetupUnsuccessfulTransfer)
	return decodeTransfer("setup unsuccessful transfer", b, x, func() (*PDUSessionResourceSetupUnsuccessfulTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &PDUSessionResourceSetupUnsuccessfulTransfer{Cause: c}, err
	})
}

// EncodeModifyRequestTransfer encodes a PDU Session Resource Modify Request
// Transfer.
func EncodeModifyRequestTransfer(t *PDUSessionResourceModifyRequestTransfer) ([]byte, error) {
	return encodeTransfer("modify request transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeModifyRequestTransfer decodes a PDU Session Resource Modify Request
// Transfer. It never panics.
func DecodeModifyRequestTransfer(b []byte) (*PDUSessionResourceModifyRequestTransfer, error) {
	x := new(ie.PDUSessionResourceModifyRequestTransfer)
	return decodeTransfer("modify request transfer", b, x, func() (*PDUSessionResourceModifyRequestTransfer, error) {
		return modifyRequestTransferFrom(x)
	})
}

// EncodeModifyResponseTransfer encodes a PDU Session Resource Modify
// Response Transfer.
func EncodeModifyResponseTransfer(t *PDUSessionResourceModifyResponseTransfer) ([]byte, error) {
	return encodeTransfer("modify response transfer", func() (perWriter, error) { return t.toFree5GC() })
}

// DecodeModifyResponseTransfer decodes a PDU Session Resource Modify
// Response Transfer. It never panics.
func DecodeModifyResponseTransfer(b []byte) (*PDUSessionResourceModifyResponseTransfer, error) {
	x := new(ie.PDUSessionResourceModifyResponseTransfer)
	return decodeTransfer("modify response transfer", b, x, func() (*PDUSessionResourceModifyResponseTransfer, error) {
		return modifyResponseTransferFrom(x)
	})
}

// EncodeModifyUnsuccessfulTransfer encodes a PDU Session Resource Modify
// Unsuccessful Transfer.
func EncodeModifyUnsuccessfulTransfer(t *PDUSessionResourceModifyUnsuccessfulTransfer) ([]byte, error) {
	return encodeTransfer("modify unsuccessful transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.PDUSessionResourceModifyUnsuccessfulTransfer{Cause: c}, err
	})
}

// DecodeModifyUnsuccessfulTransfer decodes a PDU Session Resource Modify
// Unsuccessful Transfer. It never panics.
func DecodeModifyUnsuccessfulTransfer(b []byte) (*PDUSessionResourceModifyUnsuccessfulTransfer, error) {
	x := new(ie.PDUSessionResourceModifyUnsuccessfulTransfer)
	return decodeTransfer("modify unsuccessful transfer", b, x, func() (*PDUSessionResourceModifyUnsuccessfulTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &PDUSessionResourceModifyUnsuccessfulTransfer{Cause: c}, err
	})
}

// EncodeReleaseCommandTransfer encodes a PDU Session Resource Release
// Command Transfer.
func EncodeReleaseCommandTransfer(t *PDUSessionResourceReleaseCommandTransfer) ([]byte, error) {
	return encodeTransfer("release command transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		c, err := causeIE(t.Cause)
		return &ie.PDUSessionResourceReleaseCommandTransfer{Cause: c}, err
	})
}

// DecodeReleaseCommandTransfer decodes a PDU Session Resource Release
// Command Transfer. It never panics.
func DecodeReleaseCommandTransfer(b []byte) (*PDUSessionResourceReleaseCommandTransfer, error) {
	x := new(ie.PDUSessionResourceReleaseCommandTransfer)
	return decodeTransfer("release command transfer", b, x, func() (*PDUSessionResourceReleaseCommandTransfer, error) {
		c, err := causeFrom(x.Cause)
		return &PDUSessionResourceReleaseCommandTransfer{Cause: c}, err
	})
}

// EncodeReleaseResponseTransfer encodes a PDU Session Resource Release
// Response Transfer.
func EncodeReleaseResponseTransfer(t *PDUSessionResourceReleaseResponseTransfer) ([]byte, error) {
	return encodeTransfer("release response transfer", func() (perWriter, error) {
		if t == nil {
			return nil, errNilTransfer
		}
		return &ie.PDUSessionResourceReleaseResponseTransfer{}, nil
	})
}

// DecodeReleaseResponseTransfer decodes a PDU Session Resource Release
// Response Transfer. It never panics.
func DecodeReleaseResponseTransfer(b []byte) (*PDUSessionResourceReleaseResponseTransfer, error) {
	x := new(ie.PDUSessionResourceReleaseResponseTransfer)
	return decodeTransfer("release response transfer", b, x, func() (*PDUSessionResourceReleaseResponseTransfer, error) {
		return &PDUSessionResourceReleaseResponseTransfer{}, nil
	})
}

var errNilTransfer = errors.New("nil transfer")

// perWriter and perReader are the halves of free5gc's IE codec interface.
type perWriter interface {
	Write(*aper.PerBitData) error
}

type perReader interface {
	Read(*aper.PerBitData) error
}

// encodeTransfer converts with build and runs free5gc's encoder, which may
// panic on values it does not expect.
func encodeTransfer(name string, build func() (perWriter, error)) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("ngap encode %s: %v", name, p)
		}
	}()
	x, err := build()
	if err != nil {
		return nil, fmt.Errorf("ngap encode %s: %w", name, err)
	}
	pd := aper.NewPerBitData(nil)
	if err := x.Write(pd); err != nil {
		return nil, fmt.Errorf("ngap encode %s: %w", name, err)
	}
	return pd.Bytes(), nil
}

// decodeTransfer runs free5gc's decoder on b into x, checks that b holds
// exactly one encoding, and converts with conv. It never panics.
func decodeTransfer[T any](name string, b []byte, x perReader, conv func() (*T, error)) (t *T, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("ngap decode %s: malformed (%v)", name, p)
		}
	}()
	if len(b) == 0 {
		return nil, fmt.Errorf("ngap decode %s: empty", name)
	}
	pd := aper.NewPerBitData(b)
	if err := x.Read(pd); err != nil {
		return nil, fmt.Errorf("ngap decode %s: %w", name, err)
	}
	used := pd.ByteOffset()
	if pd.BitOffset() > 0 {
		used++
	}
	if used != uint64(len(b)) {
		return nil, fmt.Errorf("ngap decode %s: %d trailing octets", name, uint64(len(b))-used)
	}
	t, err = conv()
	if err != nil {
		return nil, fmt.Errorf("ngap decode %s: %w", name, err)
	}
	return t, nil
}

// maxBitRate is the upper bound of Bit Rate (TS 38.413 §9.3.1.4) without
// the extension.
const maxBitRate = 4000000000000

func bitRateIE(v uint64) (*ie.BitRate, error) {
	if v > maxBitRate {
		return nil, fmt.Errorf("bit rate %d above %d", v, uint64(maxBitRate))
	}
	return &ie.BitRate{Value: int64(v)}, nil
}

func bitRateFrom(x *ie.BitRate) (uint64, error) {
	if x == nil || x.Value < 0 {
		return 0, errors.New("bad bit rate")
	}
	return uint64(x.Value), nil
}

func ueAMBRIE(a AMBR) (*ie.UEAggregateMaximumBitRate, error) {
	dl, err1 := bitRateIE(a.DL)
	ul, err2 := bitRateIE(a.UL)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("UE aggregate maximum bit rate: %w", err)
	}
	return &ie.UEAggregateMaximumBitRate{UEAggregateMaximumBitRateDL: dl, UEAggregateMaximumBitRateUL: ul}, nil
}

func ueAMBRFrom(x *ie.UEAggregateMaximumBitRate) (*AMBR, error) {
	dl, err1 := bitRateFrom(x.UEAggregateMaximumBitRateDL)
	ul, err2 := bitRateFrom(x.UEAggregateMaximumBitRateUL)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("UE aggregate maximum bit rate: %w", err)
	}
	return &AMBR{DL: dl, UL: ul}, nil
}

func sessionAMBRIE(a AMBR) (*ie.PDUSessionAggregateMaximumBitRate, error) {
	dl, err1 := bitRateIE(a.DL)
	ul, err2 := bitRateIE(a.UL)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("PDU session aggregate maximum bit rate: %w", err)
	}
	return &ie.PDUSessionAggregateMaximumBitRate{PDUSessionAggregateMaximumBitRateDL: dl, PDUSessionAggregateMaximumBitRateUL: ul}, nil
}

func sessionAMBRFrom(x *ie.PDUSessionAggregateMaximumBitRate) (*AMBR, error) {
	dl, err1 := bitRateFrom(x.PDUSessionAggregateMaximumBitRateDL)
	ul, err2 := bitRateFrom(x.PDUSessionAggregateMaximumBitRateUL)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("PDU session aggregate maximum bit rate: %w", err)
	}
	return &AMBR{DL: dl, UL: ul}, nil
}

// gtpTunnelIE builds UP Transport Layer Information (TS 38.413 §9.3.2.2).
// An IPv4-mapped IPv6 address is sent as IPv4.
func gtpTunnelIE(t GTPTunnel) (*ie.UPTransportLayerInformation, error) {
	var addr aper.BitString
	switch a := t.Addr.Unmap(); {
	case a.Is4():
		b := a.As4()
		addr = aper.BitString{Bytes: b[:], BitLength: 32}
	case a.Is6():
		b := a.As16()
		addr = aper.BitString{Bytes: b[:], BitLength: 128}
	default:
		return nil, errors.New("GTP tunnel without transport layer address")
	}
	teid := aper.OctetString{byte(t.TEID >> 24), byte(t.TEID >> 16), byte(t.TEID >> 8), byte(t.TEID)}
	return &ie.UPTransportLayerInformation{Choice: &ie.GTPTunnel{
		TransportLayerAddress: &ie.TransportLayerAddress{Value: addr},
		GTPTEID:               &ie.GTPTEID{Value: teid},
	}}, nil
}

// gtpTunnelFrom reads a GTP tunnel. A 160-bit transport layer address
// (IPv4 followed by IPv6, TS 38.414 §5.1) yields its IPv4 part: tern's user
// plane is IPv4.
func gtpTunnelFrom(x *ie.UPTransportLayerInformation) (GTPTunnel, error) {
	var t GTPTunnel
	if x == nil {
		return t, errors.New("missing UP transport layer information")
	}
	g, ok := x.Choice.(*ie.GTPTunnel)
	if !ok || g.TransportLayerAddress == nil || g.GTPTEID == nil {
		return t, fmt.Errorf("UP transport layer information: unsupported choice %T", x.Choice)
	}
	if len(g.GTPTEID.Value) != 4 {
		return t, fmt.Errorf("GTP-TEID of %d octets", len(g.GTPTEID.Value))
	}
	v := g.GTPTEID.Value
	t.TEID = uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
	a := g.TransportLayerAddress.Value
	if int(a.BitLength) != len(a.Bytes)*8 {
		return t, fmt.Errorf("transport layer address of %d bits in %d octets", a.BitLength, len(a.Bytes))
	}
	switch a.BitLength {
	case 32, 160:
		t.Addr = netip.AddrFrom4([4]byte(a.Bytes[:4]))
	case 128:
		// an IPv4-mapped address means IPv4, as on encoding
		t.Addr = netip.AddrFrom16([16]byte(a.Bytes)).Unmap()
	default:
		return t, fmt.Errorf("transport layer address of %d bits", a.BitLength)
	}
	return t, nil
}

func qfiIE(q uint8) (*ie.QosFlowIdentifier, error) {
	if q > 63 {
		return nil, fmt.Errorf("QFI %d above 63", q)
	}
	return &ie.QosFlowIdentifier{Value: int64(q)}, nil
}

func qfiFrom(x *ie.QosFlowIdentifier) (uint8, error) {
	if x == nil {
		return 0, errors.New("missing QoS flow identifier")
	}
	if x.Value < 0 || x.Value > 63 {
		return 0, fmt.Errorf("QFI %d out of range", x.Value)
	}
	return uint8(x.Value), nil
}

func boolEnum(b bool) aper.Enumerated {
	if b {
		return 1
	}
	return 0
}

// qosParamsIE builds QoS Flow Level QoS Parameters (TS 38.413 §9.3.1.12)
// with a non-dynamic 5QI descriptor.
func qosParamsIE(q QoSFlowSetupRequestItem) (*ie.QosFlowIdentifier, *ie.QosFlowLevelQosParameters, error) {
	qfi, err := qfiIE(q.QFI)
	if err != nil {
		return nil, nil, err
	}
	if q.PriorityLevelARP < 1 || q.PriorityLevelARP > 15 {
		return nil, nil, fmt.Errorf("QoS flow %d: ARP priority level %d (1..15)", q.QFI, q.PriorityLevelARP)
	}
	return qfi, &ie.QosFlowLevelQosParameters{
		QosCharacteristics: &ie.QosCharacteristics{Choice: &ie.NonDynamic5QIDescriptor{FiveQI: &ie.FiveQI{Value: int64(q.FiveQI)}}},
		AllocationAndRetentionPriority: &ie.AllocationAndRetentionPriority{
			PriorityLevelARP:        &ie.PriorityLevelARP{Value: int64(q.PriorityLevelARP)},
			PreEmptionCapability:    &ie.PreEmptionCapability{Value: boolEnum(q.PreemptionCap)},
			PreEmptionVulnerability: &ie.PreEmptionVulnerability{Value: boolEnum(q.PreemptionVuln)},
		},
	}, nil
}

func qosParamsFrom(qfi *ie.QosFlowIdentifier, p *ie.QosFlowLevelQosParameters) (QoSFlowSetupRequestItem, error) {
	var q QoSFlowSetupRequestItem
	var err error
	if q.QFI, err = qfiFrom(qfi); err != nil {
		return q, err
	}
	if p == nil || p.QosCharacteristics == nil || p.AllocationAndRetentionPriority == nil {
		return q, fmt.Errorf("QoS flow %d: incomplete QoS flow level parameters", q.QFI)
	}
	nd, ok := p.QosCharacteristics.Choice.(*ie.NonDynamic5QIDescriptor)
	if !ok || nd.FiveQI == nil {
		return q, fmt.Errorf("QoS flow %d: unsupported QoS characteristics %T", q.QFI, p.QosCharacteristics.Choice)
	}
	if nd.FiveQI.Value < 0 || nd.FiveQI.Value > 255 {
		return q, fmt.Errorf("QoS flow %d: 5QI %d", q.QFI, nd.FiveQI.Value)
	}
	q.FiveQI = uint8(nd.FiveQI.Value)
	arp := p.AllocationAndRetentionPriority
	if arp.PriorityLevelARP == nil || arp.PreEmptionCapability == nil || arp.PreEmptionVulnerability == nil {
		return q, fmt.Errorf("QoS flow %d: incomplete ARP", q.QFI)
	}
	if arp.PriorityLevelARP.Value < 1 || arp.PriorityLevelARP.Value > 15 ||
		arp.PreEmptionCapability.Value > 1 || arp.PreEmptionVulnerability.Value > 1 {
		return q, fmt.Errorf("QoS flow %d: ARP out of range", q.QFI)
	}
	q.PriorityLevelARP = uint8(arp.PriorityLevelARP.Value)
	q.PreemptionCap = arp.PreEmptionCapability.Value == 1
	q.PreemptionVuln = arp.PreEmptionVulnerability.Value == 1
	return q, nil
}

func flowsWithCauseIE(l []QoSFlowWithCause) (*ie.QosFlowListWithCause, error) {
	if len(l) == 0 || len(l) > 64 {
		return nil, fmt.Errorf("%d QoS flows with cause (1..64)", len(l))
	}
	x := &ie.QosFlowListWithCause{List: make([]ie.QosFlowWithCauseItem, len(l))}
	for i, f := range l {
		qfi, err := qfiIE(f.QFI)
		if err != nil {
			return nil, err
		}
		c, err := causeIE(f.Cause)
		if err != nil {
			return nil, fmt.Errorf("QoS flow %d: %w", f.QFI, err)
		}
		x.List[i] = ie.QosFlowWithCauseItem{QosFlowIdentifier: qfi, Cause: c}
	}
	return x, nil
}

func flowsWithCauseFrom(x *ie.QosFlowListWithCause) ([]QoSFlowWithCause, error) {
	out := make([]QoSFlowWithCause, len(x.List))
	for i, it := range x.List {
		q, err := qfiFrom(it.QosFlowIdentifier)
		if err != nil {
			return nil, err
		}
		c, err := causeFrom(it.Cause)
		if err != nil {
			return nil, fmt.Errorf("QoS flow %d: %w", q, err)
		}
		out[i] = QoSFlowWithCause{QFI: q, Cause: c}
	}
	return out, nil
}

func (t *PDUSessionResourceSetupRequestTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	if len(t.QoSFlows) == 0 || len(t.QoSFlows) > 64 {
		return nil, fmt.Errorf("%d QoS flows (1..64)", len(t.QoSFlows))
	}
	if t.PDUSessionType > PDUSessionTypeUnstructured {
		return nil, fmt.Errorf("PDU session type %d", t.PDUSessionType)
	}
	var l []ie.PDUSessionResourceSetupRequestTransferIEs
	if t.SessionAMBR != nil {
		a, err := sessionAMBRIE(*t.SessionAMBR)
		if err != nil {
			return nil, err
		}
		l = append(l, ie.PDUSessionResourceSetupRequestTransferIEs{PDUSessionAggregateMaximumBitRate: a})
	}
	ul, err := gtpTunnelIE(t.ULTunnel)
	if err != nil {
		return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
	}
	flows := &ie.QosFlowSetupRequestList{List: make([]ie.QosFlowSetupRequestItem, len(t.QoSFlows))}
	for i, q := range t.QoSFlows {
		qfi, p, err := qosParamsIE(q)
		if err != nil {
			return nil, err
		}
		flows.List[i] = ie.QosFlowSetupRequestItem{QosFlowIdentifier: qfi, QosFlowLevelQosParameters: p}
	}
	l = append(l,
		ie.PDUSessionResourceSetupRequestTransferIEs{ULNGUUPTNLInformation: ul},
		ie.PDUSessionResourceSetupRequestTransferIEs{PDUSessionType: &ie.PDUSessionType{Value: aper.Enumerated(t.PDUSessionType)}},
		ie.PDUSessionResourceSetupRequestTransferIEs{QosFlowSetupRequestList: flows},
	)
	return &ie.PDUSessionResourceSetupRequestTransfer{
		ProtocolIEs: &ie.ProtocolIEContainerPDUSessionResourceSetupRequestTransferIEs{List: l},
	}, nil
}

func setupRequestTransferFrom(x *ie.PDUSessionResourceSetupRequestTransfer) (*PDUSessionResourceSetupRequestTransfer, error) {
	if x.ProtocolIEs == nil {
		return nil, errors.New("missing protocol IEs")
	}
	var (
		ul    *ie.UPTransportLayerInformation
		typ   *ie.PDUSessionType
		flows *ie.QosFlowSetupRequestList
		ambr  *ie.PDUSessionAggregateMaximumBitRate
	)
	for _, it := range x.ProtocolIEs.List {
		var dup bool
		switch {
		case it.PDUSessionAggregateMaximumBitRate != nil:
			dup, ambr = ambr != nil, it.PDUSessionAggregateMaximumBitRate
		case it.ULNGUUPTNLInformation != nil:
			dup, ul = ul != nil, it.ULNGUUPTNLInformation
		case it.PDUSessionType != nil:
			dup, typ = typ != nil, it.PDUSessionType
		case it.QosFlowSetupRequestList != nil:
			dup, flows = flows != nil, it.QosFlowSetupRequestList
		}
		if dup {
			return nil, errors.New("IE occurs twice")
		}
	}
	switch {
	case ul == nil:
		return nil, errors.New("missing UL NG-U UP TNL information")
	case typ == nil:
		return nil, errors.New("missing PDU session type")
	case flows == nil:
		return nil, errors.New("missing QoS flow setup request list")
	}
	if typ.Value > aper.Enumerated(PDUSessionTypeUnstructured) {
		return nil, fmt.Errorf("PDU session type %d", typ.Value)
	}
	t := &PDUSessionResourceSetupRequestTransfer{PDUSessionType: uint8(typ.Value)}
	var err error
	if ambr != nil {
		if t.SessionAMBR, err = sessionAMBRFrom(ambr); err != nil {
			return nil, err
		}
	}
	if t.ULTunnel, err = gtpTunnelFrom(ul); err != nil {
		return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
	}
	t.QoSFlows = make([]QoSFlowSetupRequestItem, len(flows.List))
	for i, f := range flows.List {
		if t.QoSFlows[i], err = qosParamsFrom(f.QosFlowIdentifier, f.QosFlowLevelQosParameters); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *PDUSessionResourceSetupResponseTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	dl, err := gtpTunnelIE(t.DLTunnel)
	if err != nil {
		return nil, fmt.Errorf("DL QoS flow per TNL information: %w", err)
	}
	assoc, err := associatedFlowsIE(t.QoSFlows)
	if err != nil {
		return nil, err
	}
	x := &ie.PDUSessionResourceSetupResponseTransfer{
		DLQosFlowPerTNLInformation: &ie.QosFlowPerTNLInformation{UPTransportLayerInformation: dl, AssociatedQosFlowList: assoc},
	}
	if t.FailedQoSFlows != nil {
		if x.QosFlowFailedToSetupList, err = flowsWithCauseIE(t.FailedQoSFlows); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func associatedFlowsIE(qfis []uint8) (*ie.AssociatedQosFlowList, error) {
	if len(qfis) == 0 || len(qfis) > 64 {
		return nil, fmt.Errorf("%d associated QoS flows (1..64)", len(qfis))
	}
	l := &ie.AssociatedQosFlowList{List: make([]ie.AssociatedQosFlowItem, len(qfis))}
	for i, q := range qfis {
		qfi, err := qfiIE(q)
		if err != nil {
			return nil, err
		}
		l.List[i].QosFlowIdentifier = qfi
	}
	return l, nil
}

func setupResponseTransferFrom(x *ie.PDUSessionResourceSetupResponseTransfer) (*PDUSessionResourceSetupResponseTransfer, error) {
	d := x.DLQosFlowPerTNLInformation
	if d == nil || d.AssociatedQosFlowList == nil {
		return nil, errors.New("missing DL QoS flow per TNL information")
	}
	dl, err := gtpTunnelFrom(d.UPTransportLayerInformation)
	if err != nil {
		return nil, fmt.Errorf("DL QoS flow per TNL information: %w", err)
	}
	t := &PDUSessionResourceSetupResponseTransfer{DLTunnel: dl, QoSFlows: make([]uint8, len(d.AssociatedQosFlowList.List))}
	for i, it := range d.AssociatedQosFlowList.List {
		if t.QoSFlows[i], err = qfiFrom(it.QosFlowIdentifier); err != nil {
			return nil, err
		}
	}
	if x.QosFlowFailedToSetupList != nil {
		if t.FailedQoSFlows, err = flowsWithCauseFrom(x.QosFlowFailedToSetupList); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *PDUSessionResourceModifyRequestTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	var l []ie.PDUSessionResourceModifyRequestTransferIEs
	if t.SessionAMBR != nil {
		a, err := sessionAMBRIE(*t.SessionAMBR)
		if err != nil {
			return nil, err
		}
		l = append(l, ie.PDUSessionResourceModifyRequestTransferIEs{PDUSessionAggregateMaximumBitRate: a})
	}
	if t.ULTunnels != nil {
		if len(t.ULTunnels) == 0 || len(t.ULTunnels) > 4 {
			return nil, fmt.Errorf("%d UL NG-U UP TNL modify items (1..4)", len(t.ULTunnels))
		}
		ml := &ie.ULNGUUPTNLModifyList{List: make([]ie.ULNGUUPTNLModifyItem, len(t.ULTunnels))}
		for i, it := range t.ULTunnels {
			ul, err := gtpTunnelIE(it.UL)
			if err != nil {
				return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
			}
			dl, err := gtpTunnelIE(it.DL)
			if err != nil {
				return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
			}
			ml.List[i] = ie.ULNGUUPTNLModifyItem{ULNGUUPTNLInformation: ul, DLNGUUPTNLInformation: dl}
		}
		l = append(l, ie.PDUSessionResourceModifyRequestTransferIEs{ULNGUUPTNLModifyList: ml})
	}
	if t.QoSFlowsAddOrModify != nil {
		if len(t.QoSFlowsAddOrModify) == 0 || len(t.QoSFlowsAddOrModify) > 64 {
			return nil, fmt.Errorf("%d QoS flows to add or modify (1..64)", len(t.QoSFlowsAddOrModify))
		}
		fl := &ie.QosFlowAddOrModifyRequestList{List: make([]ie.QosFlowAddOrModifyRequestItem, len(t.QoSFlowsAddOrModify))}
		for i, q := range t.QoSFlowsAddOrModify {
			if q.FiveQI == 0 && q.PriorityLevelARP == 0 {
				qfi, err := qfiIE(q.QFI)
				if err != nil {
					return nil, err
				}
				fl.List[i] = ie.QosFlowAddOrModifyRequestItem{QosFlowIdentifier: qfi}
				continue
			}
			qfi, p, err := qosParamsIE(q)
			if err != nil {
				return nil, err
			}
			fl.List[i] = ie.QosFlowAddOrModifyRequestItem{QosFlowIdentifier: qfi, QosFlowLevelQosParameters: p}
		}
		l = append(l, ie.PDUSessionResourceModifyRequestTransferIEs{QosFlowAddOrModifyRequestList: fl})
	}
	if t.QoSFlowsToRelease != nil {
		rl, err := flowsWithCauseIE(t.QoSFlowsToRelease)
		if err != nil {
			return nil, err
		}
		l = append(l, ie.PDUSessionResourceModifyRequestTransferIEs{QosFlowToReleaseList: rl})
	}
	return &ie.PDUSessionResourceModifyRequestTransfer{
		ProtocolIEs: &ie.ProtocolIEContainerPDUSessionResourceModifyRequestTransferIEs{List: l},
	}, nil
}

func modifyRequestTransferFrom(x *ie.PDUSessionResourceModifyRequestTransfer) (*PDUSessionResourceModifyRequestTransfer, error) {
	if x.ProtocolIEs == nil {
		return nil, errors.New("missing protocol IEs")
	}
	t := &PDUSessionResourceModifyRequestTransfer{}
	var seenAMBR, seenUL, seenAdd, seenRel bool
	for _, it := range x.ProtocolIEs.List {
		var err error
		switch {
		case it.PDUSessionAggregateMaximumBitRate != nil:
			if seenAMBR {
				return nil, errors.New("IE occurs twice")
			}
			seenAMBR = true
			t.SessionAMBR, err = sessionAMBRFrom(it.PDUSessionAggregateMaximumBitRate)
		case it.ULNGUUPTNLModifyList != nil:
			if seenUL {
				return nil, errors.New("IE occurs twice")
			}
			seenUL = true
			t.ULTunnels, err = ulTunnelsFrom(it.ULNGUUPTNLModifyList)
		case it.QosFlowAddOrModifyRequestList != nil:
			if seenAdd {
				return nil, errors.New("IE occurs twice")
			}
			seenAdd = true
			t.QoSFlowsAddOrModify, err = addOrModifyFlowsFrom(it.QosFlowAddOrModifyRequestList)
		case it.QosFlowToReleaseList != nil:
			if seenRel {
				return nil, errors.New("IE occurs twice")
			}
			seenRel = true
			t.QoSFlowsToRelease, err = flowsWithCauseFrom(it.QosFlowToReleaseList)
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

func ulTunnelsFrom(x *ie.ULNGUUPTNLModifyList) ([]ULTunnelModifyItem, error) {
	if len(x.List) == 0 || len(x.List) > 4 {
		return nil, fmt.Errorf("%d UL NG-U UP TNL modify items (1..4)", len(x.List))
	}
	out := make([]ULTunnelModifyItem, len(x.List))
	for i, it := range x.List {
		if it.ULNGUUPTNLInformation == nil || it.DLNGUUPTNLInformation == nil {
			return nil, errors.New("UL NG-U UP TNL modify item without its tunnels")
		}
		ul, err := gtpTunnelFrom(it.ULNGUUPTNLInformation)
		if err != nil {
			return nil, fmt.Errorf("UL NG-U UP TNL information: %w", err)
		}
		dl, err := gtpTunnelFrom(it.DLNGUUPTNLInformation)
		if err != nil {
			return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
		}
		out[i] = ULTunnelModifyItem{UL: ul, DL: dl}
	}
	return out, nil
}

func addOrModifyFlowsFrom(x *ie.QosFlowAddOrModifyRequestList) ([]QoSFlowSetupRequestItem, error) {
	out := make([]QoSFlowSetupRequestItem, len(x.List))
	for i, f := range x.List {
		if f.QosFlowLevelQosParameters == nil {
			q, err := qfiFrom(f.QosFlowIdentifier)
			if err != nil {
				return nil, err
			}
			out[i] = QoSFlowSetupRequestItem{QFI: q}
			continue
		}
		q, err := qosParamsFrom(f.QosFlowIdentifier, f.QosFlowLevelQosParameters)
		if err != nil {
			return nil, err
		}
		out[i] = q
	}
	return out, nil
}

func (t *PDUSessionResourceModifyResponseTransfer) toFree5GC() (perWriter, error) {
	if t == nil {
		return nil, errNilTransfer
	}
	x := &ie.PDUSessionResourceModifyResponseTransfer{}
	var err error
	if t.DLTunnel != nil {
		if x.DLNGUUPTNLInformation, err = gtpTunnelIE(*t.DLTunnel); err != nil {
			return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
		}
	}
	if t.QoSFlows != nil {
		if len(t.QoSFlows) == 0 || len(t.QoSFlows) > 64 {
			return nil, fmt.Errorf("%d QoS flows (1..64)", len(t.QoSFlows))
		}
		l := &ie.QosFlowAddOrModifyResponseList{List: make([]ie.QosFlowAddOrModifyResponseItem, len(t.QoSFlows))}
		for i, q := range t.QoSFlows {
			if l.List[i].QosFlowIdentifier, err = qfiIE(q); err != nil {
				return nil, err
			}
		}
		x.QosFlowAddOrModifyResponseList = l
	}
	if t.FailedQoSFlows != nil {
		if x.QosFlowFailedToAddOrModifyList, err = flowsWithCauseIE(t.FailedQoSFlows); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func modifyResponseTransferFrom(x *ie.PDUSessionResourceModifyResponseTransfer) (*PDUSessionResourceModifyResponseTransfer, error) {
	t := &PDUSessionResourceModifyResponseTransfer{}
	if x.DLNGUUPTNLInformation != nil {
		dl, err := gtpTunnelFrom(x.DLNGUUPTNLInformation)
		if err != nil {
			return nil, fmt.Errorf("DL NG-U UP TNL information: %w", err)
		}
		t.DLTunnel = &dl
	}
	var err error
	if l := x.QosFlowAddOrModifyResponseList; l != nil {
		t.QoSFlows = make([]uint8, len(l.List))
		for i, it := range l.List {
			if t.QoSFlows[i], err = qfiFrom(it.QosFlowIdentifier); err != nil {
				return nil, err
			}
		}
	}
	if x.QosFlowFailedToAddOrModifyList != nil {
		if t.FailedQoSFlows, err = flowsWithCauseFrom(x.QosFlowFailedToAddOrModifyList); err != nil {
			return nil, err
		}
	}
	return t, nil
}
