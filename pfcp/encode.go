package pfcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// version is the PFCP version tern speaks (§7.2.2.1).
const version = 1

// maxSeq is the largest 24-bit sequence number (§7.2.2.1).
const maxSeq = 1<<24 - 1

// Encode serializes m as one PFCP message with sequence number seq. seid is
// written into the header of session-related messages (types >= 50) and
// ignored for node-related ones (§7.2.2.1). The IEs are built with go-pfcp.
func Encode(m Message, seq uint32, seid uint64) ([]byte, error) {
	if m == nil {
		return nil, errors.New("pfcp: encode nil message")
	}
	if seq > maxSeq {
		return nil, fmt.Errorf("pfcp: sequence number %d exceeds 24 bits", seq)
	}
	ies, err := encodeIEs(m)
	if err != nil {
		return nil, fmt.Errorf("pfcp: encode message type %d: %w", m.MessageType(), err)
	}
	t := m.MessageType()
	hlen := 8
	if isSessionMessage(t) {
		hlen = 16
	}
	// go-pfcp keeps each grouped IE's members serialized in Payload, so an
	// IE is its 4-octet header plus Payload (no vendor-specific IEs here);
	// this avoids go-pfcp's recursive MarshalLen/MarshalTo.
	n := hlen
	for _, x := range ies {
		n += 4 + len(x.Payload)
	}
	if n-4 > 0xffff {
		return nil, fmt.Errorf("pfcp: encode message type %d: %d octets is too long", t, n)
	}
	b := make([]byte, n)
	// §7.2.2.1: Version(3) Spare(2) FO MP S | Type | Length | [SEID] | Seq(3) | Spare/Priority.
	b[0] = version << 5
	b[1] = t
	binary.BigEndian.PutUint16(b[2:4], uint16(n-4))
	off := 4
	if hlen == 16 {
		b[0] |= 0x01
		binary.BigEndian.PutUint64(b[4:12], seid)
		off = 12
	}
	b[off] = byte(seq >> 16)
	b[off+1] = byte(seq >> 8)
	b[off+2] = byte(seq)
	off = hlen
	for _, x := range ies {
		if len(x.Payload) > 0xffff {
			return nil, fmt.Errorf("pfcp: encode IE type %d: %d octets is too long", x.Type, len(x.Payload))
		}
		binary.BigEndian.PutUint16(b[off:], x.Type)
		binary.BigEndian.PutUint16(b[off+2:], uint16(len(x.Payload)))
		off += 4 + copy(b[off+4:], x.Payload)
	}
	return b, nil
}

// EncodeVersionNotSupported builds the Version Not Supported Response to a
// message of another version (§7.2.2.1, §7.4.4.7): a node-related header
// with the request's sequence number and no IEs.
func EncodeVersionNotSupported(seq uint32) []byte {
	b, _ := Encode(&VersionNotSupportedResponse{}, seq&maxSeq, 0)
	return b
}

func encodeIEs(m Message) ([]*ie.IE, error) {
	var e encoder
	switch m := m.(type) {
	case *HeartbeatRequest:
		e.add(timestampIE(ie.RecoveryTimeStamp, m.RecoveryTime))
	case *HeartbeatResponse:
		e.add(timestampIE(ie.RecoveryTimeStamp, m.RecoveryTime))
	case *AssociationSetupRequest:
		e.nodeID(m.NodeID)
		e.add(timestampIE(ie.RecoveryTimeStamp, m.RecoveryTime))
		e.features(m.UPFunctionFeatures, m.CPFunctionFeatures)
	case *AssociationSetupResponse:
		e.nodeID(m.NodeID)
		e.add(ie.NewCause(uint8(m.Cause)))
		e.add(timestampIE(ie.RecoveryTimeStamp, m.RecoveryTime))
		e.features(m.UPFunctionFeatures, m.CPFunctionFeatures)
	case *AssociationReleaseRequest:
		e.nodeID(m.NodeID)
	case *AssociationReleaseResponse:
		e.nodeID(m.NodeID)
		e.add(ie.NewCause(uint8(m.Cause)))
	case *VersionNotSupportedResponse:
	case *NodeReportRequest:
		e.nodeID(m.NodeID)
		e.add(ie.New(ie.NodeReportType, []byte{m.ReportType}))
		if len(m.PathFailurePeers) > 0 {
			e.add(peersIE(ie.UserPlanePathFailureReport, m.PathFailurePeers))
		}
		if len(m.PathRecoveryPeers) > 0 {
			e.add(peersIE(ie.UserPlanePathRecoveryReport, m.PathRecoveryPeers))
		}
	case *NodeReportResponse:
		e.nodeID(m.NodeID)
		e.add(ie.NewCause(uint8(m.Cause)))
		e.offending(m.OffendingIE)
	case *SessionEstablishmentRequest:
		e.nodeID(m.NodeID)
		e.add(fseidIE(m.CPFSEID))
		for i := range m.CreatePDRs {
			e.add(createPDRIE(&m.CreatePDRs[i]))
		}
		for i := range m.CreateFARs {
			e.add(createFARIE(&m.CreateFARs[i]))
		}
		for i := range m.CreateURRs {
			e.add(createURRIE(&m.CreateURRs[i]))
		}
		for i := range m.CreateQERs {
			e.add(createQERIE(&m.CreateQERs[i]))
		}
		if m.CreateBAR != nil {
			e.add(createBARIE(m.CreateBAR))
		}
		if m.PDNType != 0 {
			e.add(ie.NewPDNType(m.PDNType))
		}
		if m.RESTI {
			// §7.5.2.1: present when at least one flag is set.
			e.add(ie.NewPFCPSEReqFlags(pfcpsereqRESTI))
		}
	case *SessionEstablishmentResponse:
		e.nodeID(m.NodeID)
		e.add(ie.NewCause(uint8(m.Cause)))
		e.offending(m.OffendingIE)
		if m.UPFSEID != nil {
			e.add(fseidIE(*m.UPFSEID))
		}
		for i := range m.CreatedPDRs {
			e.add(createdPDRIE(&m.CreatedPDRs[i]))
		}
		e.failedRule(m.FailedRuleID)
	case *SessionModificationRequest:
		encodeModification(&e, m)
	case *SessionModificationResponse:
		e.add(ie.NewCause(uint8(m.Cause)))
		e.offending(m.OffendingIE)
		for i := range m.CreatedPDRs {
			e.add(createdPDRIE(&m.CreatedPDRs[i]))
		}
		for i := range m.UsageReports {
			e.add(usageReportIE(ie.UsageReportWithinSessionModificationResponse, &m.UsageReports[i]))
		}
		e.failedRule(m.FailedRuleID)
	case *SessionDeletionRequest:
	case *SessionDeletionResponse:
		e.add(ie.NewCause(uint8(m.Cause)))
		e.offending(m.OffendingIE)
		for i := range m.UsageReports {
			e.add(usageReportIE(ie.UsageReportWithinSessionDeletionResponse, &m.UsageReports[i]))
		}
	case *SessionReportRequest:
		e.add(ie.New(ie.ReportType, []byte{m.ReportType}))
		if d := m.DownlinkDataReport; d != nil {
			var kids []*ie.IE
			for _, id := range d.PDRIDs {
				kids = append(kids, ie.NewPDRID(id))
			}
			for _, q := range d.QFIs {
				// §8.2.27: QFII flag, then the QFI octet (no PPI).
				kids = append(kids, ie.NewDownlinkDataServiceInformation(false, true, 0, q&0x3f))
			}
			e.add(ie.NewDownlinkDataReport(kids...))
		}
		for i := range m.UsageReports {
			e.add(usageReportIE(ie.UsageReportWithinSessionReportRequest, &m.UsageReports[i]))
		}
		if r := m.ErrorIndicationReport; r != nil {
			// §7.5.8.4: one Remote F-TEID (an F-TEID IE) per tunnel.
			kids := make([]*ie.IE, 0, len(r.RemoteFTEIDs))
			for i := range r.RemoteFTEIDs {
				kids = append(kids, fteidIE(&r.RemoteFTEIDs[i]))
			}
			e.add(ie.NewGroupedIE(ie.ErrorIndicationReport, kids...))
		}
	case *SessionReportResponse:
		e.add(ie.NewCause(uint8(m.Cause)))
		e.offending(m.OffendingIE)
	default:
		return nil, fmt.Errorf("unsupported message %T", m)
	}
	return e.ies, e.err
}

func encodeModification(e *encoder, m *SessionModificationRequest) {
	if m.CPFSEID != nil {
		e.add(fseidIE(*m.CPFSEID))
	}
	for _, id := range m.RemovePDRs {
		e.add(ie.NewRemovePDR(ie.NewPDRID(id)))
	}
	for _, id := range m.RemoveFARs {
		e.add(ie.NewRemoveFAR(ie.NewFARID(id)))
	}
	for _, id := range m.RemoveURRs {
		e.add(ie.NewRemoveURR(ie.NewURRID(id)))
	}
	for _, id := range m.RemoveQERs {
		e.add(ie.NewRemoveQER(ie.NewQERID(id)))
	}
	if m.RemoveBAR != nil {
		e.add(ie.NewRemoveBAR(ie.NewBARID(*m.RemoveBAR)))
	}
	for i := range m.CreatePDRs {
		e.add(createPDRIE(&m.CreatePDRs[i]))
	}
	for i := range m.CreateFARs {
		e.add(createFARIE(&m.CreateFARs[i]))
	}
	for i := range m.CreateURRs {
		e.add(createURRIE(&m.CreateURRs[i]))
	}
	for i := range m.CreateQERs {
		e.add(createQERIE(&m.CreateQERs[i]))
	}
	if m.CreateBAR != nil {
		e.add(createBARIE(m.CreateBAR))
	}
	for i := range m.UpdatePDRs {
		e.add(updatePDRIE(&m.UpdatePDRs[i]))
	}
	for i := range m.UpdateFARs {
		e.add(updateFARIE(&m.UpdateFARs[i]))
	}
	for i := range m.UpdateURRs {
		e.add(updateURRIE(&m.UpdateURRs[i]))
	}
	for i := range m.UpdateQERs {
		e.add(updateQERIE(&m.UpdateQERs[i]))
	}
	if b := m.UpdateBAR; b != nil {
		kids := []*ie.IE{ie.NewBARID(b.ID)}
		if b.SuggestedBufferingPackets != nil {
			kids = append(kids, ie.NewSuggestedBufferingPacketsCount(*b.SuggestedBufferingPackets))
		}
		e.add(ie.NewUpdateBARWithinSessionModificationRequest(kids...))
	}
	for _, id := range m.QueryURRs {
		e.add(ie.NewQueryURR(ie.NewURRID(id)))
	}
}

// encoder collects top-level IEs and the first error.
type encoder struct {
	ies []*ie.IE
	err error
}

func (e *encoder) add(x *ie.IE) {
	if x == nil {
		if e.err == nil {
			e.err = errors.New("go-pfcp could not build an IE")
		}
		return
	}
	e.ies = append(e.ies, x)
}

func (e *encoder) nodeID(n NodeID) {
	x, err := nodeIDIE(n)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		return
	}
	e.add(x)
}

func (e *encoder) features(up, cp uint64) {
	if up != 0 {
		e.add(ie.New(ie.UPFunctionFeatures, featureOctets(up, 2)))
	}
	if cp != 0 {
		e.add(ie.New(ie.CPFunctionFeatures, featureOctets(cp, 1)))
	}
}

func (e *encoder) offending(t uint16) {
	if t != 0 {
		e.add(ie.NewOffendingIE(t))
	}
}

func (e *encoder) failedRule(r *RuleID) {
	if r != nil {
		e.add(ie.NewFailedRuleID(r.Type, r.ID))
	}
}

// featureOctets packs a feature bitmap as octets 5.. of §8.2.25/§8.2.58,
// at least min octets, up to the highest non-zero one.
func featureOctets(v uint64, min int) []uint8 {
	n := min
	for i := 7; i >= min; i-- {
		if v>>(8*i)&0xff != 0 {
			n = i + 1
			break
		}
	}
	out := make([]uint8, n)
	for i := range out {
		out[i] = uint8(v >> (8 * i))
	}
	return out
}

// flagOctets packs a flag bitmap (octet 5 in the low byte) in at least min octets.
func flagOctets(v uint32, min int) []uint8 {
	return featureOctets(uint64(v), min)
}

func ip4(a netip.Addr) net.IP {
	if !a.IsValid() || !a.Is4() {
		return nil
	}
	b := a.As4()
	return net.IP(b[:])
}

// as4 returns a's four octets, zeros for anything but an IPv4 address.
func as4(a netip.Addr) [4]byte {
	a = a.Unmap()
	if !a.Is4() {
		return [4]byte{}
	}
	return a.As4()
}

func nodeIDIE(n NodeID) (*ie.IE, error) {
	switch {
	case n.IP.Is4():
		b := n.IP.As4()
		return ie.New(ie.NodeID, append([]byte{ie.NodeIDIPv4Address}, b[:]...)), nil
	case n.IP.Is6():
		b := n.IP.As16()
		return ie.New(ie.NodeID, append([]byte{ie.NodeIDIPv6Address}, b[:]...)), nil
	case n.FQDN != "":
		return ie.NewNodeID("", "", n.FQDN), nil
	}
	return nil, errors.New("empty Node ID")
}

// timestampIE encodes a §8.2.65-style timestamp: NTP seconds since 1900 (RFC 5905
// era wrap-around included). The zero time encodes as 0.
func timestampIE(t uint16, ts time.Time) *ie.IE {
	var v uint32
	if !ts.IsZero() {
		v = uint32(ts.Unix() + ntpEpochOffset)
	}
	return ie.NewUint32IE(t, v)
}

// ntpEpochOffset is 1970-01-01 minus 1900-01-01 in seconds.
const ntpEpochOffset = 2208988800

// peersIE builds a User Plane Path Failure / Recovery Report (§7.4.5.1-2,
// -3): one Remote GTP-U Peer IE (§8.2.70) per address, with the V4 or V6
// flag and no Destination Interface or Network Instance.
func peersIE(t uint16, peers []netip.Addr) *ie.IE {
	kids := make([]*ie.IE, 0, len(peers))
	for _, a := range peers {
		a = a.Unmap()
		switch {
		case a.Is4():
			b := a.As4()
			kids = append(kids, ie.New(ie.RemoteGTPUPeer, append([]byte{remotePeerV4}, b[:]...)))
		case a.Is6():
			b := a.As16()
			kids = append(kids, ie.New(ie.RemoteGTPUPeer, append([]byte{remotePeerV6}, b[:]...)))
		default:
			return nil // an invalid address: the encoder reports it
		}
	}
	return ie.NewGroupedIE(t, kids...)
}

// Remote GTP-U Peer flags (§8.2.70 octet 5).
const (
	remotePeerV6 uint8 = 0x01
	remotePeerV4 uint8 = 0x02
	remotePeerDI uint8 = 0x04
	remotePeerNI uint8 = 0x08
)

func fseidIE(f FSEID) *ie.IE {
	return ie.NewFSEID(f.SEID, ip4(f.IPv4), nil)
}

func fteidIE(f *FTEID) *ie.IE {
	if f.Choose {
		// §8.2.3: CH=1, the V4 flag asks for an IPv4 address; no TEID/address fields.
		flags := uint8(0x04 | 0x01)
		if f.ChooseID != 0 {
			flags |= 0x08
		}
		return ie.NewFTEID(flags, 0, nil, nil, f.ChooseID)
	}
	v4 := ip4(f.IPv4)
	var flags uint8
	if v4 != nil {
		flags |= 0x01
	}
	return ie.NewFTEID(flags, f.TEID, v4, nil, 0)
}

func pdiIE(p *PDI) *ie.IE {
	kids := []*ie.IE{ie.NewSourceInterface(uint8(p.SourceInterface))}
	if p.FTEID != nil {
		kids = append(kids, fteidIE(p.FTEID))
	}
	if p.NetworkInstance != "" {
		kids = append(kids, ie.NewNetworkInstanceFQDN(p.NetworkInstance))
	}
	if u := p.UEIP; u != nil {
		// §8.2.62: V4 = bit 2, S/D = bit 3.
		payload := []byte{0}
		if u.Destination {
			payload[0] |= 0x04
		}
		if u.IPv4.Is4() {
			payload[0] |= 0x02
			a := u.IPv4.As4()
			payload = append(payload, a[:]...)
		}
		kids = append(kids, ie.New(ie.UEIPAddress, payload))
	}
	for _, f := range p.SDFFilters {
		kids = append(kids, ie.NewSDFFilter(f.FlowDescription, "", "", "", f.ID))
	}
	for _, q := range p.QFIs {
		kids = append(kids, ie.NewQFI(q&0x3f))
	}
	return ie.NewPDI(kids...)
}

func pdrRefs(kids []*ie.IE, ohr *uint8, farID uint32, hasFAR bool, urrs, qers []uint32) []*ie.IE {
	if ohr != nil {
		kids = append(kids, ie.New(ie.OuterHeaderRemoval, []byte{*ohr}))
	}
	if hasFAR {
		kids = append(kids, ie.NewFARID(farID))
	}
	for _, id := range urrs {
		kids = append(kids, ie.NewURRID(id))
	}
	for _, id := range qers {
		kids = append(kids, ie.NewQERID(id))
	}
	return kids
}

func createPDRIE(p *CreatePDR) *ie.IE {
	kids := []*ie.IE{ie.NewPDRID(p.ID), ie.NewPrecedence(p.Precedence), pdiIE(&p.PDI)}
	kids = pdrRefs(kids, p.OuterHeaderRemoval, p.FARID, !p.NoFARID, p.URRIDs, p.QERIDs)
	return ie.NewCreatePDR(kids...)
}

func updatePDRIE(p *UpdatePDR) *ie.IE {
	kids := []*ie.IE{ie.NewPDRID(p.ID)}
	if p.Precedence != nil {
		kids = append(kids, ie.NewPrecedence(*p.Precedence))
	}
	if p.PDI != nil {
		kids = append(kids, pdiIE(p.PDI))
	}
	var far uint32
	if p.FARID != nil {
		far = *p.FARID
	}
	kids = pdrRefs(kids, p.OuterHeaderRemoval, far, p.FARID != nil, p.URRIDs, p.QERIDs)
	return ie.NewUpdatePDR(kids...)
}

func applyActionIE(a ApplyAction) *ie.IE {
	return ie.NewApplyAction(flagOctets(uint32(a), 1)...)
}

func forwardingKids(f *ForwardingParameters) []*ie.IE {
	kids := []*ie.IE{ie.NewDestinationInterface(uint8(f.Destination))}
	if f.NetworkInstance != "" {
		kids = append(kids, ie.NewNetworkInstanceFQDN(f.NetworkInstance))
	}
	if o := f.OuterHeaderCreation; o != nil {
		kids = append(kids, outerHeaderCreationIE(o))
	}
	return kids
}

func outerHeaderCreationIE(o *OuterHeaderCreation) *ie.IE {
	// §8.2.56: TEID with GTP-U descriptions, IPv4 with the IPv4 ones, port with UDP/IP.
	b := make([]byte, 2, 12)
	binary.BigEndian.PutUint16(b, o.Description)
	oct5 := uint8(o.Description >> 8)
	if oct5&0x03 != 0 {
		b = binary.BigEndian.AppendUint32(b, o.TEID)
	}
	if oct5&(0x01|0x04|0x10) != 0 {
		a := as4(o.IPv4)
		b = append(b, a[:]...)
	}
	if oct5&(0x02|0x08|0x20) != 0 {
		// IPv6 peers are out of scope (tern's N3 is IPv4); keep the field well-formed.
		b = append(b, make([]byte, 16)...)
	}
	if oct5&(0x04|0x08) != 0 {
		b = binary.BigEndian.AppendUint16(b, o.Port)
	}
	return ie.New(ie.OuterHeaderCreation, b)
}

func createFARIE(f *CreateFAR) *ie.IE {
	kids := []*ie.IE{ie.NewFARID(f.ID), applyActionIE(f.ApplyAction)}
	if f.Forwarding != nil {
		kids = append(kids, ie.NewForwardingParameters(forwardingKids(f.Forwarding)...))
	}
	if f.BARID != nil {
		kids = append(kids, ie.NewBARID(*f.BARID))
	}
	return ie.NewCreateFAR(kids...)
}

func updateFARIE(f *UpdateFAR) *ie.IE {
	kids := []*ie.IE{ie.NewFARID(f.ID)}
	if f.ApplyAction != nil {
		kids = append(kids, applyActionIE(*f.ApplyAction))
	}
	if u := f.Forwarding; u != nil {
		var fk []*ie.IE
		if !u.NoDestination {
			fk = append(fk, ie.NewDestinationInterface(uint8(u.Destination)))
		}
		if u.NetworkInstance != "" {
			fk = append(fk, ie.NewNetworkInstanceFQDN(u.NetworkInstance))
		}
		if o := u.OuterHeaderCreation; o != nil {
			fk = append(fk, outerHeaderCreationIE(o))
		}
		if u.SendEndMarker {
			fk = append(fk, ie.NewPFCPSMReqFlags(pfcpsmreqSNDEM))
		}
		kids = append(kids, ie.NewUpdateForwardingParameters(fk...))
	}
	if f.BARID != nil {
		kids = append(kids, ie.NewBARID(*f.BARID))
	}
	return ie.NewUpdateFAR(kids...)
}

// pfcpsereqRESTI is the RESTI bit of the PFCPSEReq-Flags IE (§8.2.136,
// octet 5 bit 1).
const pfcpsereqRESTI uint8 = 0x01

// pfcpsmreqSNDEM is the SNDEM bit of the PFCPSMReq-Flags IE (§8.2.31,
// octet 5 bit 2).
const pfcpsmreqSNDEM uint8 = 0x02

func gateIE(g GateStatus) *ie.IE {
	var ul, dl uint8
	if g.ULClosed {
		ul = 1
	}
	if g.DLClosed {
		dl = 1
	}
	return ie.NewGateStatus(ul, dl)
}

func createQERIE(q *CreateQER) *ie.IE {
	kids := []*ie.IE{ie.NewQERID(q.ID), gateIE(q.Gate)}
	if q.MBR != nil {
		kids = append(kids, ie.NewMBR(q.MBR.UL, q.MBR.DL))
	}
	if q.GBR != nil {
		kids = append(kids, ie.NewGBR(q.GBR.UL, q.GBR.DL))
	}
	if q.QFI != 0 {
		kids = append(kids, ie.NewQFI(q.QFI&0x3f))
	}
	return ie.NewCreateQER(kids...)
}

func updateQERIE(q *UpdateQER) *ie.IE {
	kids := []*ie.IE{ie.NewQERID(q.ID)}
	if q.Gate != nil {
		kids = append(kids, gateIE(*q.Gate))
	}
	if q.MBR != nil {
		kids = append(kids, ie.NewMBR(q.MBR.UL, q.MBR.DL))
	}
	if q.GBR != nil {
		kids = append(kids, ie.NewGBR(q.GBR.UL, q.GBR.DL))
	}
	if q.QFI != nil {
		kids = append(kids, ie.NewQFI(*q.QFI&0x3f))
	}
	return ie.NewUpdateQER(kids...)
}

// volumeIE encodes Volume Threshold / Quota (§8.2.13, §8.2.50).
func volumeIE(t uint16, v *Volume) *ie.IE {
	b := make([]byte, 1, 25)
	if v.HasTotal {
		b[0] |= 0x01
		b = binary.BigEndian.AppendUint64(b, v.Total)
	}
	if v.HasUL {
		b[0] |= 0x02
		b = binary.BigEndian.AppendUint64(b, v.UL)
	}
	if v.HasDL {
		b[0] |= 0x04
		b = binary.BigEndian.AppendUint64(b, v.DL)
	}
	return ie.New(t, b)
}

func createURRIE(u *CreateURR) *ie.IE {
	kids := []*ie.IE{
		ie.NewURRID(u.ID),
		ie.New(ie.MeasurementMethod, []byte{u.Method}),
		ie.NewReportingTriggers(flagOctets(u.Triggers, 2)...),
	}
	if u.MeasurementPeriod != 0 {
		kids = append(kids, ie.NewMeasurementPeriod(u.MeasurementPeriod))
	}
	if u.VolumeThreshold != nil {
		kids = append(kids, volumeIE(ie.VolumeThreshold, u.VolumeThreshold))
	}
	if u.VolumeQuota != nil {
		kids = append(kids, volumeIE(ie.VolumeQuota, u.VolumeQuota))
	}
	return ie.NewCreateURR(kids...)
}

func updateURRIE(u *UpdateURR) *ie.IE {
	kids := []*ie.IE{ie.NewURRID(u.ID)}
	if u.Method != nil {
		kids = append(kids, ie.New(ie.MeasurementMethod, []byte{*u.Method}))
	}
	if u.Triggers != nil {
		kids = append(kids, ie.NewReportingTriggers(flagOctets(*u.Triggers, 2)...))
	}
	if u.MeasurementPeriod != nil {
		kids = append(kids, ie.NewMeasurementPeriod(*u.MeasurementPeriod))
	}
	if u.VolumeThreshold != nil {
		kids = append(kids, volumeIE(ie.VolumeThreshold, u.VolumeThreshold))
	}
	if u.VolumeQuota != nil {
		kids = append(kids, volumeIE(ie.VolumeQuota, u.VolumeQuota))
	}
	return ie.NewUpdateURR(kids...)
}

func createBARIE(b *CreateBAR) *ie.IE {
	kids := []*ie.IE{ie.NewBARID(b.ID)}
	if b.SuggestedBufferingPackets != 0 {
		kids = append(kids, ie.NewSuggestedBufferingPacketsCount(b.SuggestedBufferingPackets))
	}
	return ie.NewCreateBAR(kids...)
}

func createdPDRIE(c *CreatedPDR) *ie.IE {
	kids := []*ie.IE{ie.NewPDRID(c.ID)}
	if c.LocalFTEID != nil {
		kids = append(kids, fteidIE(c.LocalFTEID))
	}
	return ie.NewCreatedPDR(kids...)
}

func usageReportIE(t uint16, u *UsageReport) *ie.IE {
	kids := []*ie.IE{
		ie.NewURRID(u.URRID),
		ie.NewURSEQN(u.URSEQN),
		ie.NewUsageReportTrigger(flagOctets(u.Trigger, 3)...),
	}
	if !u.Start.IsZero() {
		kids = append(kids, timestampIE(ie.StartTime, u.Start))
	}
	if !u.End.IsZero() {
		kids = append(kids, timestampIE(ie.EndTime, u.End))
	}
	if v := u.Volume; v.HasTotal || v.HasUL || v.HasDL {
		kids = append(kids, volumeIE(ie.VolumeMeasurement, &v))
	}
	return ie.NewUsageReport(t, kids...)
}
