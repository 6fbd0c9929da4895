package nas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/netip"
)

// Bit rate units of TS 24.501 Table 9.11.4.14.1 (also used by the QoS flow
// description GFBR/MFBR parameters, §9.11.4.12): unit u (1..25) counts in
// multiples of 4^((u-1)%5) * 1000^(1+(u-1)/5) bit/s, i.e. 1, 4, 16, 64,
// 256 Kbps, 1 Mbps, ... 256 Pbps. Unit 0 is "not used"; units above 25
// "shall be interpreted as multiples of 256 Pbps".
const maxRateUnit = 25

func rateUnit(u uint8) uint64 {
	if u > maxRateUnit {
		u = maxRateUnit
	}
	m := uint64(1) << (2 * ((u - 1) % 5))
	for range 1 + (u-1)/5 {
		m *= 1000
	}
	return m
}

// decodeRate returns value*unit in bit/s, saturating at MaxUint64 (the
// largest units overflow 64 bits).
func decodeRate(u uint8, value uint16) (uint64, error) {
	if u == 0 {
		return 0, errors.New("bit rate unit 0 (not used)")
	}
	hi, lo := bits.Mul64(rateUnit(u), uint64(value))
	if hi != 0 {
		return math.MaxUint64, nil
	}
	return lo, nil
}

// encodeRate picks the unit for v bit/s: the coarsest unit that holds v
// exactly in 16 bits, else the finest unit that holds v rounded up (a rate
// limit is never encoded below the configured one).
func encodeRate(v uint64) (unit uint8, value uint16) {
	if v == 0 {
		return 1, 0
	}
	for u := uint8(maxRateUnit); u >= 1; u-- {
		m := rateUnit(u)
		if v%m == 0 && v/m <= math.MaxUint16 {
			return u, uint16(v / m)
		}
	}
	for u := uint8(1); u <= maxRateUnit; u++ {
		m := rateUnit(u)
		n := v / m
		if v%m != 0 {
			n++
		}
		if n <= math.MaxUint16 {
			return u, uint16(n)
		}
	}
	return maxRateUnit, math.MaxUint16 // unreachable: 2^64 < 65535 * 256 Pbps
}

func appendRate(b []byte, v uint64) []byte {
	u, n := encodeRate(v)
	return append(b, u, byte(n>>8), byte(n))
}

func readRate(v []byte) (uint64, error) {
	if len(v) != 3 {
		return 0, fmt.Errorf("bit rate of %d octets", len(v))
	}
	return decodeRate(v[0], binary.BigEndian.Uint16(v[1:]))
}

// Session-AMBR value (TS 24.501 §9.11.4.14): downlink unit+value, uplink unit+value.
func encodeSessionAMBR(a SessionAMBR) []byte {
	return appendRate(appendRate(make([]byte, 0, 6), a.DL), a.UL)
}

func decodeSessionAMBR(v []byte) (SessionAMBR, error) {
	if len(v) != 6 {
		return SessionAMBR{}, fmt.Errorf("session-AMBR of %d octets", len(v))
	}
	dl, err := readRate(v[:3])
	if err != nil {
		return SessionAMBR{}, fmt.Errorf("session-AMBR downlink: %w", err)
	}
	ul, err := readRate(v[3:])
	if err != nil {
		return SessionAMBR{}, fmt.Errorf("session-AMBR uplink: %w", err)
	}
	return SessionAMBR{DL: dl, UL: ul}, nil
}

// PDU address value (TS 24.501 §9.11.4.10).
func encodePDUAddress(a *PDUAddress) ([]byte, error) {
	switch a.Type {
	case PDUSessionTypeIPv4:
		if !a.IPv4.Is4() {
			return nil, fmt.Errorf("PDU address: IPv4 type without an IPv4 address (%v)", a.IPv4)
		}
		v4 := a.IPv4.As4()
		return append([]byte{a.Type}, v4[:]...), nil
	case PDUSessionTypeIPv6:
		return append([]byte{a.Type}, a.IPv6InterfaceID[:]...), nil
	case PDUSessionTypeIPv4v6:
		if !a.IPv4.Is4() {
			return nil, fmt.Errorf("PDU address: IPv4v6 type without an IPv4 address (%v)", a.IPv4)
		}
		v4 := a.IPv4.As4()
		b := append([]byte{a.Type}, a.IPv6InterfaceID[:]...)
		return append(b, v4[:]...), nil
	}
	return nil, fmt.Errorf("PDU address: type %d", a.Type)
}

func decodePDUAddress(v []byte) (*PDUAddress, error) {
	if len(v) < 1 {
		return nil, errors.New("PDU address: empty")
	}
	a := &PDUAddress{Type: v[0] & 7}
	// SI6LLA (bit 4) appends the SMF's IPv6 link-local address, not kept.
	extra := 0
	if v[0]&8 != 0 {
		extra = 16
	}
	want := map[uint8]int{PDUSessionTypeIPv4: 5, PDUSessionTypeIPv6: 9, PDUSessionTypeIPv4v6: 13}[a.Type]
	if want == 0 {
		return nil, fmt.Errorf("PDU address: type %d", a.Type)
	}
	if len(v) != want+extra {
		return nil, fmt.Errorf("PDU address: %d octets for type %d", len(v), a.Type)
	}
	switch a.Type {
	case PDUSessionTypeIPv4:
		a.IPv4 = netip.AddrFrom4([4]byte(v[1:5]))
	case PDUSessionTypeIPv6:
		a.IPv6InterfaceID = [8]byte(v[1:9])
	case PDUSessionTypeIPv4v6:
		a.IPv6InterfaceID = [8]byte(v[1:9])
		a.IPv4 = netip.AddrFrom4([4]byte(v[9:13]))
	}
	return a, nil
}

// QoS rules value (TS 24.501 §9.11.4.13).
func encodeQoSRules(rules []QoSRule) ([]byte, error) {
	b := make([]byte, 0, 16*len(rules))
	for i := range rules {
		var err error
		if b, err = appendQoSRule(b, &rules[i]); err != nil {
			return nil, fmt.Errorf("QoS rule %d: %w", rules[i].ID, err)
		}
	}
	if len(b) > math.MaxUint16 {
		return nil, fmt.Errorf("QoS rules of %d octets", len(b))
	}
	return b, nil
}

func appendQoSRule(b []byte, q *QoSRule) ([]byte, error) {
	if len(q.Filters) > 15 {
		return nil, fmt.Errorf("%d packet filters (at most 15)", len(q.Filters))
	}
	if q.QFI > 63 {
		return nil, fmt.Errorf("QFI %d", q.QFI)
	}
	b = append(b, q.ID, 0, 0)
	start := len(b)
	o := q.Operation<<5 | uint8(len(q.Filters))
	if q.Default {
		o |= 0x10
	}
	b = append(b, o)
	switch q.Operation {
	case QoSRuleDelete:
		if len(q.Filters) != 0 {
			return nil, errors.New("delete operation with packet filters")
		}
		// no precedence or QFI: length of QoS rule is one
		binary.BigEndian.PutUint16(b[start-2:], 1)
		return b, nil
	case QoSRuleModifyWithoutFilters:
		if len(q.Filters) != 0 {
			return nil, errors.New("modify-without-filters operation with packet filters")
		}
	case QoSRuleModifyDeleteFilters:
		for _, f := range q.Filters {
			if f.ID > 15 {
				return nil, fmt.Errorf("packet filter identifier %d", f.ID)
			}
			b = append(b, f.ID)
		}
	case QoSRuleCreate, QoSRuleModifyAddFilters, QoSRuleModifyReplaceFilters:
		for i := range q.Filters {
			var err error
			if b, err = appendPacketFilter(b, &q.Filters[i]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("rule operation code %d", q.Operation)
	}
	x := q.QFI
	if q.Segregation {
		x |= 0x40
	}
	b = append(b, q.Precedence, x)
	n := len(b) - start
	if n > math.MaxUint16 {
		return nil, fmt.Errorf("QoS rule of %d octets", n)
	}
	binary.BigEndian.PutUint16(b[start-2:], uint16(n))
	return b, nil
}

func appendPacketFilter(b []byte, f *PacketFilter) ([]byte, error) {
	if f.ID > 15 || f.Direction > 3 {
		return nil, fmt.Errorf("packet filter identifier %d direction %d", f.ID, f.Direction)
	}
	c := f.Components
	if f.MatchAll {
		if len(c) != 0 && !(len(c) == 1 && c[0] == ComponentMatchAll) {
			return nil, fmt.Errorf("packet filter %d: match-all with other components", f.ID)
		}
		c = []byte{ComponentMatchAll}
	}
	if len(c) == 0 || len(c) > 255 {
		return nil, fmt.Errorf("packet filter %d: contents of %d octets", f.ID, len(c))
	}
	b = append(b, f.Direction<<4|f.ID, byte(len(c)))
	return append(b, c...), nil
}

func decodeQoSRules(v []byte) ([]QoSRule, error) {
	r := reader{b: v}
	var out []QoSRule
	for len(r.b) > 0 {
		id := r.u8()
		body := r.lve()
		if r.err != nil {
			return nil, fmt.Errorf("QoS rule %d: %w", id, r.err)
		}
		q, err := decodeQoSRule(id, body)
		if err != nil {
			return nil, fmt.Errorf("QoS rule %d: %w", id, err)
		}
		out = append(out, q)
	}
	return out, nil
}

func decodeQoSRule(id uint8, body []byte) (QoSRule, error) {
	r := reader{b: body}
	o := r.u8()
	if r.err != nil {
		return QoSRule{}, r.err
	}
	q := QoSRule{ID: id, Operation: o >> 5, Default: o&0x10 != 0}
	n := int(o & 0xF)
	switch q.Operation {
	case QoSRuleDelete:
		if n != 0 || len(r.b) != 0 {
			return QoSRule{}, fmt.Errorf("delete operation with %d filters and %d more octets", n, len(r.b))
		}
		return q, nil
	case QoSRuleModifyWithoutFilters:
		if n != 0 {
			return QoSRule{}, fmt.Errorf("modify-without-filters operation with %d filters", n)
		}
	case QoSRuleModifyDeleteFilters:
		for range n {
			q.Filters = append(q.Filters, PacketFilter{ID: r.u8() & 0xF})
		}
	case QoSRuleCreate, QoSRuleModifyAddFilters, QoSRuleModifyReplaceFilters:
		for range n {
			h := r.u8()
			c := r.lv()
			if r.err != nil {
				break
			}
			f := PacketFilter{ID: h & 0xF, Direction: h >> 4 & 3}
			switch {
			case len(c) == 0:
				return QoSRule{}, fmt.Errorf("packet filter %d: no components", f.ID)
			case len(c) == 1 && c[0] == ComponentMatchAll:
				f.MatchAll = true
			default:
				f.Components = c
			}
			q.Filters = append(q.Filters, f)
		}
	default:
		return QoSRule{}, fmt.Errorf("rule operation code %d", q.Operation)
	}
	q.Precedence = r.u8()
	x := r.u8()
	if r.err != nil {
		return QoSRule{}, r.err
	}
	if len(r.b) != 0 {
		return QoSRule{}, fmt.Errorf("%d octets after the QFI", len(r.b))
	}
	q.Segregation = x&0x40 != 0
	q.QFI = x & 0x3F
	return q, nil
}

// MatchAllFilter returns a packet filter with the lone match-all component
// (TS 24.501 §9.11.4.13), as used by a default QoS rule.
func MatchAllFilter(id, direction uint8) PacketFilter {
	return PacketFilter{ID: id, Direction: direction, MatchAll: true}
}

// IPv4RemoteFilter returns a packet filter matching remote IPv4 prefix p
// (component 0x10: address and mask), optionally narrowed to an IP protocol
// (proto != 0, component 0x30) and a single remote port (port != 0,
// component 0x50).
func IPv4RemoteFilter(id, direction uint8, p netip.Prefix, proto uint8, port uint16) (PacketFilter, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return PacketFilter{}, fmt.Errorf("packet filter: %v is not an IPv4 prefix", p)
	}
	c := AppendIPv4RemoteComponent(nil, p)
	if proto != 0 {
		c = append(c, ComponentProtocol, proto)
	}
	if port != 0 {
		c = append(c, ComponentRemotePort, byte(port>>8), byte(port))
	}
	return PacketFilter{ID: id, Direction: direction, Components: c}, nil
}

// AppendIPv4RemoteComponent appends an IPv4 remote address component (type
// 0x10, address then mask) for prefix p, which must be IPv4.
func AppendIPv4RemoteComponent(b []byte, p netip.Prefix) []byte {
	p = p.Masked()
	a := p.Addr().As4()
	m := ^uint32(0)
	if p.Bits() < 32 {
		m = ^(^uint32(0) >> p.Bits())
	}
	return append(b, ComponentIPv4Remote, a[0], a[1], a[2], a[3], byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
}

// componentSize is the value length of each fixed-size packet filter
// component type (TS 24.501 Table 9.11.4.13.1).
var componentSize = map[uint8]int{
	ComponentMatchAll: 0, ComponentIPv4Remote: 8, ComponentIPv4Local: 8,
	ComponentIPv6Remote: 17, ComponentIPv6Local: 17, ComponentProtocol: 1,
	ComponentLocalPort: 2, ComponentLocalPortRange: 4, ComponentRemotePort: 2,
	ComponentRemotePortRange: 4, ComponentSPI: 4, ComponentTypeOfService: 2,
	ComponentFlowLabel: 3, ComponentDestinationMAC: 6, ComponentSourceMAC: 6,
	Component8021QCTagVID: 2, Component8021QSTagVID: 2, Component8021QCTagPCPDEI: 1,
	Component8021QSTagPCPDEI: 1, ComponentEthertype: 2, ComponentDestinationMACRng: 12,
	ComponentSourceMACRng: 12,
}

// ParseFilterComponents splits a filter's contents into components. It
// fails on an unknown component type (sizes are type-specific, so nothing
// after it can be read), a truncated component, or a match-all component
// that is not alone: the SMF answers those with cause #45.
func (f PacketFilter) ParseFilterComponents() ([]FilterComponent, error) {
	if f.MatchAll {
		return []FilterComponent{{Type: ComponentMatchAll}}, nil
	}
	var out []FilterComponent
	r := reader{b: f.Components}
	for len(r.b) > 0 {
		t := r.u8()
		n, ok := componentSize[t]
		if !ok {
			return nil, fmt.Errorf("packet filter %d: component type 0x%02x", f.ID, t)
		}
		if t == ComponentMatchAll && len(f.Components) != 1 {
			return nil, fmt.Errorf("packet filter %d: match-all with other components", f.ID)
		}
		v := r.n(n)
		if r.err != nil {
			return nil, fmt.Errorf("packet filter %d: component 0x%02x: %w", f.ID, t, r.err)
		}
		out = append(out, FilterComponent{Type: t, Value: v})
	}
	return out, nil
}

// QoS flow description parameter identifiers (TS 24.501 §9.11.4.12).
const (
	qfdParam5QI          = 1
	qfdParamGFBRUplink   = 2
	qfdParamGFBRDownlink = 3
	qfdParamMFBRUplink   = 4
	qfdParamMFBRDownlink = 5
	qfdParamAvgWindow    = 6
	qfdParamEPSBearerID  = 7
)

// QoS flow descriptions value (TS 24.501 §9.11.4.12).
func encodeQoSFlowDescriptions(l []QoSFlowDescription) ([]byte, error) {
	b := make([]byte, 0, 24*len(l))
	for i := range l {
		var err error
		if b, err = appendQoSFlowDescription(b, &l[i]); err != nil {
			return nil, fmt.Errorf("QoS flow description QFI %d: %w", l[i].QFI, err)
		}
	}
	if len(b) > math.MaxUint16 {
		return nil, fmt.Errorf("QoS flow descriptions of %d octets", len(b))
	}
	return b, nil
}

func appendQoSFlowDescription(b []byte, d *QoSFlowDescription) ([]byte, error) {
	if d.QFI > 63 {
		return nil, fmt.Errorf("QFI %d", d.QFI)
	}
	p := make([]byte, 0, 32)
	n := 0
	if d.FiveQI != 0 {
		p = append(p, qfdParam5QI, 1, d.FiveQI)
		n++
	}
	if d.GFBR != nil {
		p = appendRate(append(p, qfdParamGFBRUplink, 3), d.GFBR.UL)
		p = appendRate(append(p, qfdParamGFBRDownlink, 3), d.GFBR.DL)
		n += 2
	}
	if d.MFBR != nil {
		p = appendRate(append(p, qfdParamMFBRUplink, 3), d.MFBR.UL)
		p = appendRate(append(p, qfdParamMFBRDownlink, 3), d.MFBR.DL)
		n += 2
	}
	if d.AveragingWindow != 0 {
		p = append(p, qfdParamAvgWindow, 2, byte(d.AveragingWindow>>8), byte(d.AveragingWindow))
		n++
	}
	for _, e := range d.EPSBearerIDs {
		if e > 15 {
			return nil, fmt.Errorf("EPS bearer identity %d", e)
		}
		p = append(p, qfdParamEPSBearerID, 1, e<<4)
		n++
	}
	if n > 63 {
		return nil, fmt.Errorf("%d parameters (at most 63)", n)
	}
	var e bool
	switch d.Operation {
	case QoSFlowCreate:
		e = n > 0 // E=1: parameters list included
	case QoSFlowDelete:
		if n != 0 {
			return nil, errors.New("delete operation with parameters")
		}
	case QoSFlowModify:
		e = d.E
	default:
		return nil, fmt.Errorf("operation code %d", d.Operation)
	}
	x := uint8(n)
	if e {
		x |= 0x40
	}
	b = append(b, d.QFI, d.Operation<<5, x)
	return append(b, p...), nil
}

func decodeQoSFlowDescriptions(v []byte) ([]QoSFlowDescription, error) {
	r := reader{b: v}
	var out []QoSFlowDescription
	for len(r.b) > 0 {
		d := QoSFlowDescription{QFI: r.u8() & 0x3F, Operation: r.u8() >> 5}
		x := r.u8()
		if r.err != nil {
			return nil, fmt.Errorf("QoS flow description: %w", r.err)
		}
		switch d.Operation {
		case QoSFlowCreate, QoSFlowDelete:
			// E only says whether parameters follow: implied by their number
		case QoSFlowModify:
			d.E = x&0x40 != 0
		default:
			return nil, fmt.Errorf("QoS flow description QFI %d: operation code %d", d.QFI, d.Operation)
		}
		for range x & 0x3F {
			id := r.u8()
			p := r.lv()
			if r.err != nil {
				return nil, fmt.Errorf("QoS flow description QFI %d: %w", d.QFI, r.err)
			}
			if err := d.setParameter(id, p); err != nil {
				return nil, fmt.Errorf("QoS flow description QFI %d: %w", d.QFI, err)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func (d *QoSFlowDescription) setParameter(id uint8, p []byte) error {
	var rate *uint64
	switch id {
	case qfdParam5QI:
		if len(p) != 1 {
			return fmt.Errorf("5QI of %d octets", len(p))
		}
		d.FiveQI = p[0]
		return nil
	case qfdParamAvgWindow:
		if len(p) != 2 {
			return fmt.Errorf("averaging window of %d octets", len(p))
		}
		d.AveragingWindow = binary.BigEndian.Uint16(p)
		return nil
	case qfdParamEPSBearerID:
		if len(p) != 1 {
			return fmt.Errorf("EPS bearer identity of %d octets", len(p))
		}
		d.EPSBearerIDs = append(d.EPSBearerIDs, p[0]>>4)
		return nil
	case qfdParamGFBRUplink, qfdParamGFBRDownlink:
		if d.GFBR == nil {
			d.GFBR = &BitRates{}
		}
		rate = &d.GFBR.UL
		if id == qfdParamGFBRDownlink {
			rate = &d.GFBR.DL
		}
	case qfdParamMFBRUplink, qfdParamMFBRDownlink:
		if d.MFBR == nil {
			d.MFBR = &BitRates{}
		}
		rate = &d.MFBR.UL
		if id == qfdParamMFBRDownlink {
			rate = &d.MFBR.DL
		}
	default:
		return nil // TS 24.501 §9.11.4.12: unsupported parameters are discarded
	}
	v, err := readRate(p)
	if err != nil {
		return fmt.Errorf("parameter %d: %w", id, err)
	}
	*rate = v
	return nil
}

// Maximum number of supported packet filters (TS 24.501 §9.11.4.9): 11 bits.
func encodeMaxPacketFilters(n uint16) []byte { return []byte{byte(n >> 3), byte(n<<5) & 0xE0} }
func decodeMaxPacketFilters(v []byte) uint16 { return uint16(v[0])<<3 | uint16(v[1]>>5) }

// GPRS timer 3 value as a one-octet TLV body. TS 24.007 §11.4.2: a length
// beyond the value part is not a syntactical error, the extra octets are
// ignored; an empty value is one.
func decodeGPRSTimer3(v []byte) (*GPRSTimer3, error) {
	if len(v) < 1 {
		return nil, errors.New("GPRS timer 3: empty")
	}
	return &GPRSTimer3{Unit: v[0] >> 5, Value: v[0] & 0x1F}, nil
}

func (t GPRSTimer3) octet() byte { return t.Unit<<5 | t.Value&0x1F }

// GPRS timer 2 value, read as decodeGPRSTimer3.
func decodeGPRSTimer2(v []byte) (*GPRSTimer2, error) {
	if len(v) < 1 {
		return nil, errors.New("GPRS timer 2: empty")
	}
	return &GPRSTimer2{Unit: v[0] >> 5, Value: v[0] & 0x1F}, nil
}

func (t GPRSTimer2) octet() byte { return t.Unit<<5 | t.Value&0x1F }
