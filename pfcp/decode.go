package pfcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// Decode errors that concern the whole message (the header is still returned
// when it could be read, so that the receiver can answer or log it).
var (
	ErrTruncated           = errors.New("pfcp: truncated message")
	ErrBadLength           = errors.New("pfcp: message length field does not match")
	ErrVersionNotSupported = errors.New("pfcp: version not supported")
	ErrUnknownMessageType  = errors.New("pfcp: unknown message type")
)

// Decode parses one PFCP message. On success it returns the header and one of
// the pointer message types of this package.
//
// Errors:
//   - header unreadable or length inconsistent: ErrTruncated / ErrBadLength
//     (wrapped), zero Header;
//   - version != 1: ErrVersionNotSupported with the header fields that could
//     be read (§7.2.2.1: answer with Version Not Supported Response);
//   - a type tern does not speak: ErrUnknownMessageType with the header;
//   - a mandatory IE missing or an IE malformed: the header, the partially
//     filled message and an *IEError (§7.2.2.4.2).
//
// Decode never panics: a panic inside go-pfcp is recovered and reported as an
// *IEError with Cause Invalid Length on the IE being parsed.
func Decode(b []byte) (hdr Header, msg Message, err error) {
	hdr, body, err := decodeHeader(b)
	if err != nil {
		return hdr, nil, err
	}
	msg = newMessage(hdr.Type)
	if msg == nil {
		return hdr, nil, fmt.Errorf("%w: %d", ErrUnknownMessageType, hdr.Type)
	}
	if hdr.HasSEID != isSessionMessage(hdr.Type) {
		// §7.2.2.1: the S flag is 1 exactly for session-related messages.
		return Header{}, nil, fmt.Errorf("%w: S flag %v for message type %d", ErrBadLength, hdr.HasSEID, hdr.Type)
	}
	d := decoder{}
	func() {
		defer func() {
			if r := recover(); r != nil {
				d.fail(CauseInvalidLength, d.current, fmt.Errorf("malformed IE: %v", r))
			}
		}()
		d.message(msg, body)
	}()
	if d.err != nil {
		return hdr, msg, d.err
	}
	return hdr, msg, nil
}

func decodeHeader(b []byte) (Header, []byte, error) {
	var h Header
	if len(b) < 8 {
		return h, nil, fmt.Errorf("%w: %d octets", ErrTruncated, len(b))
	}
	h.Type = b[1]
	s := b[0]&0x01 != 0
	off := 4
	if s {
		if len(b) < 16 {
			return Header{}, nil, fmt.Errorf("%w: %d octets with SEID", ErrTruncated, len(b))
		}
		h.HasSEID = true
		h.SEID = binary.BigEndian.Uint64(b[4:12])
		off = 12
	}
	h.Seq = uint32(b[off])<<16 | uint32(b[off+1])<<8 | uint32(b[off+2])
	if v := b[0] >> 5; v != version {
		return h, nil, fmt.Errorf("%w: %d", ErrVersionNotSupported, v)
	}
	hlen := off + 4
	n := int(binary.BigEndian.Uint16(b[2:4])) + 4
	if n < hlen || n > len(b) {
		return Header{}, nil, fmt.Errorf("%w: length %d, %d octets", ErrBadLength, n-4, len(b))
	}
	// Octets past the length belong to a following message (FO flag); we
	// decode the first one only.
	return h, b[hlen:n], nil
}

func newMessage(t uint8) Message {
	switch t {
	case MsgHeartbeatRequest:
		return &HeartbeatRequest{}
	case MsgHeartbeatResponse:
		return &HeartbeatResponse{}
	case MsgAssociationSetupRequest:
		return &AssociationSetupRequest{}
	case MsgAssociationSetupResponse:
		return &AssociationSetupResponse{}
	case MsgAssociationReleaseRequest:
		return &AssociationReleaseRequest{}
	case MsgAssociationReleaseResponse:
		return &AssociationReleaseResponse{}
	case MsgVersionNotSupportedResponse:
		return &VersionNotSupportedResponse{}
	case MsgNodeReportRequest:
		return &NodeReportRequest{}
	case MsgNodeReportResponse:
		return &NodeReportResponse{}
	case MsgSessionEstablishmentRequest:
		return &SessionEstablishmentRequest{}
	case MsgSessionEstablishmentResponse:
		return &SessionEstablishmentResponse{}
	case MsgSessionModificationRequest:
		return &SessionModificationRequest{}
	case MsgSessionModificationResponse:
		return &SessionModificationResponse{}
	case MsgSessionDeletionRequest:
		return &SessionDeletionRequest{}
	case MsgSessionDeletionResponse:
		return &SessionDeletionResponse{}
	case MsgSessionReportRequest:
		return &SessionReportRequest{}
	case MsgSessionReportResponse:
		return &SessionReportResponse{}
	}
	return nil
}

// decoder walks IEs, keeping the first error. Unknown IEs are ignored
// (§7.2.2.4.1 behaviour for unexpected/unknown IEs); a known IE that does not
// parse is reported as Mandatory IE incorrect with its type. (For optional IEs
// the spec allows ignoring them; we reject, since a peer sending a malformed
// rule is better told than silently half-applied.)
type decoder struct {
	err     *IEError
	current uint16 // IE being parsed, for recovered panics
}

func (d *decoder) fail(c Cause, t uint16, err error) {
	if d.err == nil {
		d.err = &IEError{Cause: c, OffendingIE: t, Err: err}
	}
}

func (d *decoder) missing(t uint16) { d.fail(CauseMandatoryIEMissing, t, nil) }

func (d *decoder) bad(t uint16, err error) { d.fail(CauseMandatoryIEIncorrect, t, err) }

// ies splits a payload into IEs with go-pfcp. A length running past the
// enclosing payload is reported against that IE's type.
func (d *decoder) ies(b []byte) []*ie.IE {
	var out []*ie.IE
	for len(b) > 0 {
		if len(b) < 4 {
			d.fail(CauseInvalidLength, d.current, io.ErrUnexpectedEOF)
			return out
		}
		t := binary.BigEndian.Uint16(b[0:2])
		n := 4 + int(binary.BigEndian.Uint16(b[2:4]))
		if n > len(b) {
			d.fail(CauseInvalidLength, t, fmt.Errorf("IE length %d exceeds %d remaining octets", n-4, len(b)-4))
			return out
		}
		d.current = t
		x, err := ie.Parse(b[:n])
		if err != nil {
			// Its own length fits, so a grouped IE's members are broken.
			d.bad(t, err)
			return out
		}
		out = append(out, x)
		b = b[n:]
	}
	return out
}

// kids returns the members of grouped IE x.
func (d *decoder) kids(x *ie.IE) []*ie.IE {
	if len(x.ChildIEs) > 0 || len(x.Payload) == 0 {
		return x.ChildIEs
	}
	saved := d.current
	k := d.ies(x.Payload)
	d.current = saved
	return k
}

func (d *decoder) message(m Message, body []byte) {
	ies := d.ies(body)
	if d.err != nil {
		return
	}
	switch m := m.(type) {
	case *HeartbeatRequest:
		m.RecoveryTime = d.recovery(ies)
	case *HeartbeatResponse:
		m.RecoveryTime = d.recovery(ies)
	case *AssociationSetupRequest:
		m.NodeID = d.nodeIDOf(ies)
		m.RecoveryTime = d.recovery(ies)
		m.UPFunctionFeatures, m.CPFunctionFeatures = d.featuresOf(ies)
	case *AssociationSetupResponse:
		m.NodeID = d.nodeIDOf(ies)
		m.Cause = d.causeOf(ies)
		m.RecoveryTime = d.recovery(ies)
		m.UPFunctionFeatures, m.CPFunctionFeatures = d.featuresOf(ies)
	case *AssociationReleaseRequest:
		m.NodeID = d.nodeIDOf(ies)
	case *AssociationReleaseResponse:
		m.NodeID = d.nodeIDOf(ies)
		m.Cause = d.causeOf(ies)
	case *VersionNotSupportedResponse:
	case *NodeReportRequest:
		d.nodeReportRequest(m, ies)
	case *NodeReportResponse:
		m.NodeID = d.nodeIDOf(ies)
		m.Cause = d.causeOf(ies)
		if x := find(ies, ie.OffendingIE); x != nil {
			m.OffendingIE = d.u16(x)
		}
	case *SessionEstablishmentRequest:
		d.establishmentRequest(m, ies)
	case *SessionEstablishmentResponse:
		m.NodeID = d.nodeIDOf(ies)
		m.Cause = d.causeOf(ies)
		for _, x := range ies {
			d.current = x.Type
			switch x.Type {
			case ie.OffendingIE:
				m.OffendingIE = d.u16(x)
			case ie.FSEID:
				f := d.fseid(x)
				m.UPFSEID = &f
			case ie.CreatedPDR:
				m.CreatedPDRs = append(m.CreatedPDRs, d.createdPDR(x))
			case ie.FailedRuleID:
				m.FailedRuleID = d.failedRule(x)
			}
		}
	case *SessionModificationRequest:
		d.modificationRequest(m, ies)
	case *SessionModificationResponse:
		m.Cause = d.causeOf(ies)
		for _, x := range ies {
			d.current = x.Type
			switch x.Type {
			case ie.OffendingIE:
				m.OffendingIE = d.u16(x)
			case ie.CreatedPDR:
				m.CreatedPDRs = append(m.CreatedPDRs, d.createdPDR(x))
			case ie.UsageReportWithinSessionModificationResponse:
				m.UsageReports = append(m.UsageReports, d.usageReport(x))
			case ie.FailedRuleID:
				m.FailedRuleID = d.failedRule(x)
			}
		}
	case *SessionDeletionRequest:
	case *SessionDeletionResponse:
		m.Cause = d.causeOf(ies)
		for _, x := range ies {
			d.current = x.Type
			switch x.Type {
			case ie.OffendingIE:
				m.OffendingIE = d.u16(x)
			case ie.UsageReportWithinSessionDeletionResponse:
				m.UsageReports = append(m.UsageReports, d.usageReport(x))
			}
		}
	case *SessionReportRequest:
		d.reportRequest(m, ies)
	case *SessionReportResponse:
		m.Cause = d.causeOf(ies)
		if x := find(ies, ie.OffendingIE); x != nil {
			m.OffendingIE = d.u16(x)
		}
	}
}

func find(ies []*ie.IE, t uint16) *ie.IE {
	for _, x := range ies {
		if x.Type == t {
			return x
		}
	}
	return nil
}

// must returns the first IE of type t or records Mandatory IE missing.
func (d *decoder) must(ies []*ie.IE, t uint16) *ie.IE {
	x := find(ies, t)
	if x == nil {
		d.missing(t)
		return nil
	}
	d.current = t
	return x
}

func (d *decoder) u8(x *ie.IE) uint8 {
	if len(x.Payload) < 1 {
		d.bad(x.Type, io.ErrUnexpectedEOF)
		return 0
	}
	return x.Payload[0]
}

func (d *decoder) u16(x *ie.IE) uint16 {
	if len(x.Payload) < 2 {
		d.bad(x.Type, io.ErrUnexpectedEOF)
		return 0
	}
	return binary.BigEndian.Uint16(x.Payload)
}

func (d *decoder) u32(x *ie.IE) uint32 {
	if len(x.Payload) < 4 {
		d.bad(x.Type, io.ErrUnexpectedEOF)
		return 0
	}
	return binary.BigEndian.Uint32(x.Payload)
}

func (d *decoder) timestamp(x *ie.IE) time.Time {
	v := d.u32(x)
	if v == 0 {
		return time.Time{}
	}
	// RFC 5905 era 0 ends in 2036; values below 1968 are taken as era 1.
	secs := int64(v) - ntpEpochOffset
	if v < 0x80000000 {
		secs += 1 << 32
	}
	return time.Unix(secs, 0)
}

func (d *decoder) recovery(ies []*ie.IE) time.Time {
	if x := d.must(ies, ie.RecoveryTimeStamp); x != nil {
		return d.timestamp(x)
	}
	return time.Time{}
}

func (d *decoder) causeOf(ies []*ie.IE) Cause {
	x := d.must(ies, ie.Cause)
	if x == nil {
		return 0
	}
	return Cause(d.u8(x))
}

func (d *decoder) nodeIDOf(ies []*ie.IE) NodeID {
	x := d.must(ies, ie.NodeID)
	if x == nil {
		return NodeID{}
	}
	if len(x.Payload) < 1 {
		d.bad(ie.NodeID, io.ErrUnexpectedEOF)
		return NodeID{}
	}
	switch x.Payload[0] & 0x0f {
	case ie.NodeIDIPv4Address:
		if len(x.Payload) < 5 {
			d.bad(ie.NodeID, io.ErrUnexpectedEOF)
			return NodeID{}
		}
		return NodeID{IP: netip.AddrFrom4([4]byte(x.Payload[1:5]))}
	case ie.NodeIDIPv6Address:
		if len(x.Payload) < 17 {
			d.bad(ie.NodeID, io.ErrUnexpectedEOF)
			return NodeID{}
		}
		return NodeID{IP: netip.AddrFrom16([16]byte(x.Payload[1:17]))}
	case ie.NodeIDFQDN:
		s, err := x.NodeID()
		if err != nil || s == "" {
			d.bad(ie.NodeID, err)
			return NodeID{}
		}
		return NodeID{FQDN: s}
	}
	d.bad(ie.NodeID, fmt.Errorf("node ID type %d", x.Payload[0]&0x0f))
	return NodeID{}
}

func octetsToUint(b []byte) uint64 {
	var v uint64
	for i := 0; i < len(b) && i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

func (d *decoder) featuresOf(ies []*ie.IE) (up, cp uint64) {
	if x := find(ies, ie.UPFunctionFeatures); x != nil {
		up = octetsToUint(x.Payload)
	}
	if x := find(ies, ie.CPFunctionFeatures); x != nil {
		cp = octetsToUint(x.Payload)
	}
	return up, cp
}

func (d *decoder) fseid(x *ie.IE) FSEID {
	f, err := x.FSEID()
	if err != nil {
		d.bad(x.Type, err)
		return FSEID{}
	}
	out := FSEID{SEID: f.SEID}
	if f.HasIPv4() {
		out.IPv4, _ = netip.AddrFromSlice(f.IPv4Address.To4())
	}
	return out
}

func (d *decoder) fteid(x *ie.IE) *FTEID {
	f, err := x.FTEID()
	if err != nil {
		d.bad(x.Type, err)
		return nil
	}
	if f.HasCh() {
		out := &FTEID{Choose: true}
		if f.HasChID() {
			out.ChooseID = f.ChooseID
		}
		return out
	}
	out := &FTEID{TEID: f.TEID}
	if f.HasIPv4() {
		out.IPv4, _ = netip.AddrFromSlice(f.IPv4Address.To4())
	}
	return out
}

func (d *decoder) failedRule(x *ie.IE) *RuleID {
	t, err := x.RuleIDType()
	if err != nil {
		d.bad(x.Type, err)
		return nil
	}
	id, err := x.FailedRuleID()
	if err != nil {
		d.bad(x.Type, err)
		return nil
	}
	return &RuleID{Type: t & 0x0f, ID: id}
}

func (d *decoder) networkInstance(x *ie.IE) string {
	s, err := x.NetworkInstanceHeuristic()
	if err != nil {
		d.bad(x.Type, err)
	}
	return s
}

func (d *decoder) establishmentRequest(m *SessionEstablishmentRequest, ies []*ie.IE) {
	// §7.5.2 Table 7.5.2.1-1: Node ID, CP F-SEID, Create PDR, Create FAR are M.
	m.NodeID = d.nodeIDOf(ies)
	if x := d.must(ies, ie.FSEID); x != nil {
		m.CPFSEID = d.fseid(x)
	}
	d.must(ies, ie.CreatePDR)
	d.must(ies, ie.CreateFAR)
	for _, x := range ies {
		d.current = x.Type
		switch x.Type {
		case ie.CreatePDR:
			m.CreatePDRs = append(m.CreatePDRs, d.createPDR(x))
		case ie.CreateFAR:
			m.CreateFARs = append(m.CreateFARs, d.createFAR(x))
		case ie.CreateURR:
			m.CreateURRs = append(m.CreateURRs, d.createURR(x))
		case ie.CreateQER:
			m.CreateQERs = append(m.CreateQERs, d.createQER(x))
		case ie.CreateBAR:
			m.CreateBAR = d.createBAR(x)
		case ie.PDNType:
			m.PDNType = d.u8(x) & 0x07
		case ie.PFCPSEReqFlags:
			m.RESTI = d.u8(x)&pfcpsereqRESTI != 0
		}
	}
}

func (d *decoder) modificationRequest(m *SessionModificationRequest, ies []*ie.IE) {
	// §7.5.4: every IE is conditional; grouped members are checked below.
	for _, x := range ies {
		d.current = x.Type
		switch x.Type {
		case ie.FSEID:
			f := d.fseid(x)
			m.CPFSEID = &f
		case ie.RemovePDR:
			if k := d.must(d.kids(x), ie.PDRID); k != nil {
				m.RemovePDRs = append(m.RemovePDRs, d.u16(k))
			}
		case ie.RemoveFAR:
			if k := d.must(d.kids(x), ie.FARID); k != nil {
				m.RemoveFARs = append(m.RemoveFARs, d.u32(k))
			}
		case ie.RemoveURR:
			if k := d.must(d.kids(x), ie.URRID); k != nil {
				m.RemoveURRs = append(m.RemoveURRs, d.u32(k))
			}
		case ie.RemoveQER:
			if k := d.must(d.kids(x), ie.QERID); k != nil {
				m.RemoveQERs = append(m.RemoveQERs, d.u32(k))
			}
		case ie.RemoveBAR:
			if k := d.must(d.kids(x), ie.BARID); k != nil {
				id := d.u8(k)
				m.RemoveBAR = &id
			}
		case ie.CreatePDR:
			m.CreatePDRs = append(m.CreatePDRs, d.createPDR(x))
		case ie.CreateFAR:
			m.CreateFARs = append(m.CreateFARs, d.createFAR(x))
		case ie.CreateURR:
			m.CreateURRs = append(m.CreateURRs, d.createURR(x))
		case ie.CreateQER:
			m.CreateQERs = append(m.CreateQERs, d.createQER(x))
		case ie.CreateBAR:
			m.CreateBAR = d.createBAR(x)
		case ie.UpdatePDR:
			m.UpdatePDRs = append(m.UpdatePDRs, d.updatePDR(x))
		case ie.UpdateFAR:
			m.UpdateFARs = append(m.UpdateFARs, d.updateFAR(x))
		case ie.UpdateURR:
			m.UpdateURRs = append(m.UpdateURRs, d.updateURR(x))
		case ie.UpdateQER:
			m.UpdateQERs = append(m.UpdateQERs, d.updateQER(x))
		case ie.UpdateBARWithinSessionModificationRequest:
			kids := d.kids(x)
			b := &UpdateBAR{}
			if k := d.must(kids, ie.BARID); k != nil {
				b.ID = d.u8(k)
			}
			if k := find(kids, ie.SuggestedBufferingPacketsCount); k != nil {
				v := d.u8(k)
				b.SuggestedBufferingPackets = &v
			}
			m.UpdateBAR = b
		case ie.QueryURR:
			if k := d.must(d.kids(x), ie.URRID); k != nil {
				m.QueryURRs = append(m.QueryURRs, d.u32(k))
			}
		}
	}
}

func (d *decoder) reportRequest(m *SessionReportRequest, ies []*ie.IE) {
	if x := d.must(ies, ie.ReportType); x != nil {
		m.ReportType = d.u8(x)
	}
	for _, x := range ies {
		d.current = x.Type
		switch x.Type {
		case ie.DownlinkDataReport:
			kids := d.kids(x)
			d.must(kids, ie.PDRID)
			r := &DownlinkDataReport{}
			for _, k := range kids {
				switch k.Type {
				case ie.PDRID:
					r.PDRIDs = append(r.PDRIDs, d.u16(k))
				case ie.DownlinkDataServiceInformation:
					// §8.2.27: flags (PPI bit 1, QFII bit 2), [PPI], [QFI].
					p := k.Payload
					if len(p) < 1 {
						d.bad(k.Type, io.ErrUnexpectedEOF)
						continue
					}
					off := 1
					if p[0]&0x01 != 0 {
						off++
					}
					if p[0]&0x02 != 0 {
						if len(p) <= off {
							d.bad(k.Type, io.ErrUnexpectedEOF)
							continue
						}
						r.QFIs = append(r.QFIs, p[off]&0x3f)
					}
				}
			}
			m.DownlinkDataReport = r
		case ie.UsageReportWithinSessionReportRequest:
			m.UsageReports = append(m.UsageReports, d.usageReport(x))
		case ie.ErrorIndicationReport:
			// §7.5.8.4: Remote F-TEID is M, one per tunnel.
			kids := d.kids(x)
			d.must(kids, ie.FTEID)
			r := &ErrorIndicationReport{}
			for _, k := range kids {
				if k.Type != ie.FTEID {
					continue
				}
				if f := d.fteid(k); f != nil {
					r.RemoteFTEIDs = append(r.RemoteFTEIDs, *f)
				}
			}
			m.ErrorIndicationReport = r
		}
	}
}

// nodeReportRequest decodes §7.4.5.1: Node ID and Node Report Type are M;
// each report is C on its flag and holds one or more Remote GTP-U Peers.
func (d *decoder) nodeReportRequest(m *NodeReportRequest, ies []*ie.IE) {
	m.NodeID = d.nodeIDOf(ies)
	if x := d.must(ies, ie.NodeReportType); x != nil {
		m.ReportType = d.u8(x)
	}
	for _, x := range ies {
		d.current = x.Type
		switch x.Type {
		case ie.UserPlanePathFailureReport:
			m.PathFailurePeers = append(m.PathFailurePeers, d.remotePeers(x)...)
		case ie.UserPlanePathRecoveryReport:
			m.PathRecoveryPeers = append(m.PathRecoveryPeers, d.remotePeers(x)...)
		}
	}
	if m.ReportType&NodeReportUPFR != 0 && len(m.PathFailurePeers) == 0 {
		d.fail(CauseConditionalIEMissing, ie.UserPlanePathFailureReport, nil)
	}
	if m.ReportType&NodeReportUPRR != 0 && len(m.PathRecoveryPeers) == 0 {
		d.fail(CauseConditionalIEMissing, ie.UserPlanePathRecoveryReport, nil)
	}
}

// remotePeers returns the addresses of the Remote GTP-U Peer IEs (§8.2.70)
// of a path failure or recovery report. The Destination Interface and
// Network Instance fields are checked for length and skipped.
func (d *decoder) remotePeers(x *ie.IE) []netip.Addr {
	kids := d.kids(x)
	d.must(kids, ie.RemoteGTPUPeer)
	var out []netip.Addr
	for _, k := range kids {
		if k.Type != ie.RemoteGTPUPeer {
			continue
		}
		p := k.Payload
		if len(p) < 1 {
			d.bad(k.Type, io.ErrUnexpectedEOF)
			return out
		}
		flags, p := p[0], p[1:]
		n := 0
		if flags&remotePeerV4 != 0 {
			n += 4
		}
		if flags&remotePeerV6 != 0 {
			n += 16
		}
		if n == 0 || len(p) < n {
			d.bad(k.Type, fmt.Errorf("remote GTP-U peer: flags %#x with %d octets", flags, len(p)))
			return out
		}
		if flags&remotePeerV4 != 0 {
			out = append(out, netip.AddrFrom4([4]byte(p[:4])))
			p = p[4:]
		}
		if flags&remotePeerV6 != 0 {
			out = append(out, netip.AddrFrom16([16]byte(p[:16])))
			p = p[16:]
		}
		// DI: a 2-octet length then the interface; NI: a 2-octet length
		// then the name.
		for _, f := range []uint8{remotePeerDI, remotePeerNI} {
			if flags&f == 0 {
				continue
			}
			if len(p) < 2 || len(p) < 2+int(binary.BigEndian.Uint16(p)) {
				d.bad(k.Type, io.ErrUnexpectedEOF)
				return out
			}
			p = p[2+int(binary.BigEndian.Uint16(p)):]
		}
	}
	return out
}

func (d *decoder) pdi(x *ie.IE) PDI {
	kids := d.kids(x)
	var p PDI
	if k := d.must(kids, ie.SourceInterface); k != nil {
		p.SourceInterface = Interface(d.u8(k) & 0x0f)
	}
	for _, k := range kids {
		switch k.Type {
		case ie.FTEID:
			p.FTEID = d.fteid(k)
		case ie.NetworkInstance:
			p.NetworkInstance = d.networkInstance(k)
		case ie.UEIPAddress:
			f, err := k.UEIPAddress()
			if err != nil {
				d.bad(k.Type, err)
				continue
			}
			u := &UEIPAddress{Destination: f.Flags&0x04 != 0}
			if f.IPv4Address != nil {
				u.IPv4, _ = netip.AddrFromSlice(f.IPv4Address.To4())
			}
			p.UEIP = u
		case ie.SDFFilter:
			f, err := k.SDFFilter()
			if err != nil {
				d.bad(k.Type, err)
				continue
			}
			// tern matches an SDF filter by its flow description only
			// (§8.2.5): one without, or with a ToS, SPI or flow label
			// tern would not look at, cannot be honoured and is refused
			// rather than widened to match everything.
			if !f.HasFD() || f.FlowDescription == "" || f.HasTTC() || f.HasSPI() || f.HasFL() {
				d.bad(k.Type, errors.New("SDF filter: only a non-empty flow description is supported"))
				continue
			}
			s := SDFFilter{FlowDescription: f.FlowDescription}
			if f.HasBID() {
				s.ID = f.SDFFilterID
			}
			p.SDFFilters = append(p.SDFFilters, s)
		case ie.QFI:
			p.QFIs = append(p.QFIs, d.u8(k)&0x3f)
		}
	}
	return p
}

// pdrRefs decodes the members Create PDR and Update PDR share.
func (d *decoder) pdrRefs(kids []*ie.IE, ohr **uint8, far **uint32, qers, urrs *[]uint32) {
	for _, k := range kids {
		switch k.Type {
		case ie.OuterHeaderRemoval:
			v := d.u8(k)
			*ohr = &v
		case ie.FARID:
			v := d.u32(k)
			*far = &v
		case ie.QERID:
			*qers = append(*qers, d.u32(k))
		case ie.URRID:
			*urrs = append(*urrs, d.u32(k))
		}
	}
}

func (d *decoder) createPDR(x *ie.IE) CreatePDR {
	// §7.5.2.2 Table 7.5.2.2-1: PDR ID, Precedence, PDI are M.
	kids := d.kids(x)
	var p CreatePDR
	if k := d.must(kids, ie.PDRID); k != nil {
		p.ID = d.u16(k)
	}
	if k := d.must(kids, ie.Precedence); k != nil {
		p.Precedence = d.u32(k)
	}
	if k := d.must(kids, ie.PDI); k != nil {
		p.PDI = d.pdi(k)
	}
	var far *uint32
	d.pdrRefs(kids, &p.OuterHeaderRemoval, &far, &p.QERIDs, &p.URRIDs)
	if far != nil {
		p.FARID = *far
	} else {
		// Conditional (§7.5.2.2-1): the receiver decides whether it was
		// needed; 0 is a valid FAR ID, so absence is kept apart.
		p.NoFARID = true
	}
	return p
}

func (d *decoder) updatePDR(x *ie.IE) UpdatePDR {
	kids := d.kids(x)
	var p UpdatePDR
	if k := d.must(kids, ie.PDRID); k != nil {
		p.ID = d.u16(k)
	}
	if k := find(kids, ie.Precedence); k != nil {
		v := d.u32(k)
		p.Precedence = &v
	}
	if k := find(kids, ie.PDI); k != nil {
		v := d.pdi(k)
		p.PDI = &v
	}
	d.pdrRefs(kids, &p.OuterHeaderRemoval, &p.FARID, &p.QERIDs, &p.URRIDs)
	return p
}

func (d *decoder) applyAction(k *ie.IE) ApplyAction {
	if len(k.Payload) < 1 {
		d.bad(k.Type, io.ErrUnexpectedEOF)
		return 0
	}
	a := ApplyAction(k.Payload[0])
	if len(k.Payload) > 1 {
		a |= ApplyAction(k.Payload[1]) << 8
	}
	return a
}

// forwarding decodes Forwarding Parameters (§7.5.2.3-2): Destination
// Interface is mandatory there.
func (d *decoder) forwarding(x *ie.IE) *ForwardingParameters {
	kids := d.kids(x)
	f := &ForwardingParameters{}
	if dst := d.must(kids, ie.DestinationInterface); dst != nil {
		f.Destination = Interface(d.u8(dst) & 0x0f)
	}
	f.NetworkInstance, f.OuterHeaderCreation = d.forwardingCommon(kids)
	return f
}

// updateForwarding decodes Update Forwarding Parameters (§7.5.4.3-2):
// every member is conditional.
func (d *decoder) updateForwarding(x *ie.IE) *UpdateForwardingParameters {
	kids := d.kids(x)
	f := &UpdateForwardingParameters{NoDestination: true}
	if dst := find(kids, ie.DestinationInterface); dst != nil {
		f.Destination, f.NoDestination = Interface(d.u8(dst)&0x0f), false
	}
	f.NetworkInstance, f.OuterHeaderCreation = d.forwardingCommon(kids)
	if k := find(kids, ie.PFCPSMReqFlags); k != nil {
		f.SendEndMarker = d.u8(k)&pfcpsmreqSNDEM != 0
	}
	return f
}

func (d *decoder) forwardingCommon(kids []*ie.IE) (ni string, ohc *OuterHeaderCreation) {
	for _, k := range kids {
		switch k.Type {
		case ie.NetworkInstance:
			ni = d.networkInstance(k)
		case ie.OuterHeaderCreation:
			o, err := k.OuterHeaderCreation()
			if err != nil {
				d.bad(k.Type, err)
				continue
			}
			ohc = &OuterHeaderCreation{Description: o.OuterHeaderCreationDescription, TEID: o.TEID, Port: o.PortNumber}
			if o.IPv4Address != nil {
				ohc.IPv4, _ = netip.AddrFromSlice(o.IPv4Address.To4())
			}
		}
	}
	return ni, ohc
}

func (d *decoder) createFAR(x *ie.IE) CreateFAR {
	// §7.5.2.3: FAR ID and Apply Action are M.
	kids := d.kids(x)
	var f CreateFAR
	if k := d.must(kids, ie.FARID); k != nil {
		f.ID = d.u32(k)
	}
	if k := d.must(kids, ie.ApplyAction); k != nil {
		f.ApplyAction = d.applyAction(k)
	}
	if k := find(kids, ie.ForwardingParameters); k != nil {
		f.Forwarding = d.forwarding(k)
	}
	if k := find(kids, ie.BARID); k != nil {
		v := d.u8(k)
		f.BARID = &v
	}
	return f
}

func (d *decoder) updateFAR(x *ie.IE) UpdateFAR {
	kids := d.kids(x)
	var f UpdateFAR
	if k := d.must(kids, ie.FARID); k != nil {
		f.ID = d.u32(k)
	}
	if k := find(kids, ie.ApplyAction); k != nil {
		a := d.applyAction(k)
		f.ApplyAction = &a
	}
	if k := find(kids, ie.UpdateForwardingParameters); k != nil {
		f.Forwarding = d.updateForwarding(k)
	}
	if k := find(kids, ie.BARID); k != nil {
		v := d.u8(k)
		f.BARID = &v
	}
	return f
}

func (d *decoder) gate(k *ie.IE) GateStatus {
	v := d.u8(k)
	return GateStatus{ULClosed: v>>2&0x03 != 0, DLClosed: v&0x03 != 0}
}

func (d *decoder) bitRate(k *ie.IE) *BitRate {
	if len(k.Payload) < 10 {
		d.bad(k.Type, io.ErrUnexpectedEOF)
		return nil
	}
	u40 := func(b []byte) uint64 {
		return uint64(b[0])<<32 | uint64(binary.BigEndian.Uint32(b[1:5]))
	}
	return &BitRate{UL: u40(k.Payload[0:5]), DL: u40(k.Payload[5:10])}
}

func (d *decoder) createQER(x *ie.IE) CreateQER {
	// §7.5.2.5: QER ID and Gate Status are M.
	kids := d.kids(x)
	var q CreateQER
	if k := d.must(kids, ie.QERID); k != nil {
		q.ID = d.u32(k)
	}
	if k := d.must(kids, ie.GateStatus); k != nil {
		q.Gate = d.gate(k)
	}
	if k := find(kids, ie.MBR); k != nil {
		q.MBR = d.bitRate(k)
	}
	if k := find(kids, ie.GBR); k != nil {
		q.GBR = d.bitRate(k)
	}
	if k := find(kids, ie.QFI); k != nil {
		q.QFI = d.u8(k) & 0x3f
	}
	return q
}

func (d *decoder) updateQER(x *ie.IE) UpdateQER {
	kids := d.kids(x)
	var q UpdateQER
	if k := d.must(kids, ie.QERID); k != nil {
		q.ID = d.u32(k)
	}
	if k := find(kids, ie.GateStatus); k != nil {
		g := d.gate(k)
		q.Gate = &g
	}
	if k := find(kids, ie.MBR); k != nil {
		q.MBR = d.bitRate(k)
	}
	if k := find(kids, ie.GBR); k != nil {
		q.GBR = d.bitRate(k)
	}
	if k := find(kids, ie.QFI); k != nil {
		v := d.u8(k) & 0x3f
		q.QFI = &v
	}
	return q
}

// volume decodes Volume Threshold/Quota/Measurement (§8.2.13, §8.2.50, §8.2.44);
// packet counts of a Volume Measurement are skipped.
func (d *decoder) volume(k *ie.IE) Volume {
	p := k.Payload
	if len(p) < 1 {
		d.bad(k.Type, io.ErrUnexpectedEOF)
		return Volume{}
	}
	flags := p[0]
	p = p[1:]
	var v Volume
	next := func() uint64 {
		if len(p) < 8 {
			d.bad(k.Type, io.ErrUnexpectedEOF)
			return 0
		}
		x := binary.BigEndian.Uint64(p)
		p = p[8:]
		return x
	}
	if flags&0x01 != 0 {
		v.HasTotal, v.Total = true, next()
	}
	if flags&0x02 != 0 {
		v.HasUL, v.UL = true, next()
	}
	if flags&0x04 != 0 {
		v.HasDL, v.DL = true, next()
	}
	return v
}

func (d *decoder) createURR(x *ie.IE) CreateURR {
	// §7.5.2.4: URR ID, Measurement Method, Reporting Triggers are M.
	kids := d.kids(x)
	var u CreateURR
	if k := d.must(kids, ie.URRID); k != nil {
		u.ID = d.u32(k)
	}
	if k := d.must(kids, ie.MeasurementMethod); k != nil {
		u.Method = d.u8(k)
	}
	if k := d.must(kids, ie.ReportingTriggers); k != nil {
		if len(k.Payload) < 1 {
			d.bad(k.Type, io.ErrUnexpectedEOF)
		}
		u.Triggers = uint32(octetsToUint(k.Payload))
	}
	if k := find(kids, ie.MeasurementPeriod); k != nil {
		u.MeasurementPeriod = time.Duration(d.u32(k)) * time.Second
	}
	if k := find(kids, ie.VolumeThreshold); k != nil {
		v := d.volume(k)
		u.VolumeThreshold = &v
	}
	if k := find(kids, ie.VolumeQuota); k != nil {
		v := d.volume(k)
		u.VolumeQuota = &v
	}
	return u
}

func (d *decoder) updateURR(x *ie.IE) UpdateURR {
	kids := d.kids(x)
	var u UpdateURR
	if k := d.must(kids, ie.URRID); k != nil {
		u.ID = d.u32(k)
	}
	if k := find(kids, ie.MeasurementMethod); k != nil {
		v := d.u8(k)
		u.Method = &v
	}
	if k := find(kids, ie.ReportingTriggers); k != nil {
		v := uint32(octetsToUint(k.Payload))
		u.Triggers = &v
	}
	if k := find(kids, ie.MeasurementPeriod); k != nil {
		v := time.Duration(d.u32(k)) * time.Second
		u.MeasurementPeriod = &v
	}
	if k := find(kids, ie.VolumeThreshold); k != nil {
		v := d.volume(k)
		u.VolumeThreshold = &v
	}
	if k := find(kids, ie.VolumeQuota); k != nil {
		v := d.volume(k)
		u.VolumeQuota = &v
	}
	return u
}

func (d *decoder) createBAR(x *ie.IE) *CreateBAR {
	kids := d.kids(x)
	b := &CreateBAR{}
	if k := d.must(kids, ie.BARID); k != nil {
		b.ID = d.u8(k)
	}
	if k := find(kids, ie.SuggestedBufferingPacketsCount); k != nil {
		b.SuggestedBufferingPackets = d.u8(k)
	}
	return b
}

func (d *decoder) createdPDR(x *ie.IE) CreatedPDR {
	kids := d.kids(x)
	var c CreatedPDR
	if k := d.must(kids, ie.PDRID); k != nil {
		c.ID = d.u16(k)
	}
	if k := find(kids, ie.FTEID); k != nil {
		c.LocalFTEID = d.fteid(k)
	}
	return c
}

func (d *decoder) usageReport(x *ie.IE) UsageReport {
	// §7.5.8.3: URR ID, UR-SEQN, Usage Report Trigger are M.
	kids := d.kids(x)
	var u UsageReport
	if k := d.must(kids, ie.URRID); k != nil {
		u.URRID = d.u32(k)
	}
	if k := d.must(kids, ie.URSEQN); k != nil {
		u.URSEQN = d.u32(k)
	}
	if k := d.must(kids, ie.UsageReportTrigger); k != nil {
		u.Trigger = uint32(octetsToUint(k.Payload))
	}
	if k := find(kids, ie.StartTime); k != nil {
		u.Start = d.timestamp(k)
	}
	if k := find(kids, ie.EndTime); k != nil {
		u.End = d.timestamp(k)
	}
	if k := find(kids, ie.VolumeMeasurement); k != nil {
		u.Volume = d.volume(k)
	}
	return u
}
