package nas

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tern5g/tern/identity"
)

// ngKSI half octet (TS 24.501 §9.11.3.32): bit 4 TSC, bits 3-1 KSI.
func (k NgKSI) half() uint8 {
	v := k.KSI & 7
	if k.Mapped {
		v |= 8
	}
	return v
}

func ngKSIFromHalf(h uint8) NgKSI { return NgKSI{Mapped: h&8 != 0, KSI: h & 7} }

func plmnBytes(p identity.PLMN) ([3]byte, error) {
	if err := p.Validate(); err != nil {
		return [3]byte{}, err
	}
	return p.Bytes(), nil
}

// appendBCD appends digits as TS 24.008 BCD: two digits per octet, first
// digit in the low nibble, 0xF filler for an odd count.
func appendBCD(b []byte, digits string) ([]byte, error) {
	for i := 0; i < len(digits); i += 2 {
		lo, err := bcdDigit(digits[i])
		if err != nil {
			return nil, err
		}
		hi := uint8(0xF)
		if i+1 < len(digits) {
			if hi, err = bcdDigit(digits[i+1]); err != nil {
				return nil, err
			}
		}
		b = append(b, hi<<4|lo)
	}
	return b, nil
}

func bcdDigit(c byte) (uint8, error) {
	if c < '0' || c > '9' {
		return 0, fmt.Errorf("%q is not a digit", c)
	}
	return c - '0', nil
}

// bcdString decodes BCD octets; a 0xF high nibble in the last octet ends it.
func bcdString(b []byte) (string, error) {
	s := make([]byte, 0, 2*len(b))
	for i, o := range b {
		lo, hi := o&0xF, o>>4
		if lo > 9 {
			return "", fmt.Errorf("BCD nibble 0x%x", lo)
		}
		s = append(s, '0'+lo)
		if hi == 0xF && i == len(b)-1 {
			break
		}
		if hi > 9 {
			return "", fmt.Errorf("BCD nibble 0x%x", hi)
		}
		s = append(s, '0'+hi)
	}
	return string(s), nil
}

// SUCI protection schemes (TS 33.501 §6.12.2, Annex C).
const (
	schemeNull     = 0
	schemeProfileA = 1
	schemeProfileB = 2
)

// encodeMobileIdentity returns the value part of a 5GS mobile identity IE
// (TS 24.501 §9.11.3.4).
func encodeMobileIdentity(id *MobileIdentity) ([]byte, error) {
	switch id.Type {
	case IdentityNone:
		return []byte{0}, nil
	case IdentitySUCI:
		return encodeSUCI(id.SUCI)
	case IdentityGUTI:
		p, err := plmnBytes(id.GUTI.GUAMI.PLMN)
		if err != nil {
			return nil, fmt.Errorf("5G-GUTI: %w", err)
		}
		a := id.GUTI.GUAMI.AMFID
		b := make([]byte, 11)
		b[0] = 0xF0 | byte(IdentityGUTI)
		copy(b[1:4], p[:])
		b[4] = a.RegionID
		b[5] = byte(a.SetID >> 2)
		b[6] = byte(a.SetID&3)<<6 | a.Pointer&0x3F
		putU32(b[7:], id.GUTI.TMSI)
		return b, nil
	case IdentitySTMSI:
		return encodeSTMSI(id.STMSI), nil
	case IdentityIMEI, IdentityIMEISV:
		digits := id.IMEI
		want := 15
		if id.Type == IdentityIMEISV {
			digits, want = id.IMEISV, 16
		}
		if len(digits) != want {
			return nil, fmt.Errorf("%s %q: want %d digits", id.Type, digits, want)
		}
		d0, err := bcdDigit(digits[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id.Type, err)
		}
		odd := uint8(len(digits) & 1)
		b := []byte{d0<<4 | odd<<3 | byte(id.Type)}
		if b, err = appendBCD(b, digits[1:]); err != nil {
			return nil, fmt.Errorf("%s: %w", id.Type, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("mobile identity type %d not supported", id.Type)
}

func encodeSTMSI(s identity.STMSI) []byte {
	b := make([]byte, 7)
	b[0] = 0xF0 | byte(IdentitySTMSI)
	b[1] = byte(s.SetID >> 2)
	b[2] = byte(s.SetID&3)<<6 | s.Pointer&0x3F
	putU32(b[3:], s.TMSI)
	return b
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
func getU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func decodeMobileIdentity(b []byte) (MobileIdentity, error) {
	var id MobileIdentity
	if len(b) < 1 {
		return id, errors.New("mobile identity: empty")
	}
	id.Type = IdentityType(b[0] & 7)
	switch id.Type {
	case IdentityNone:
		return id, nil
	case IdentitySUCI:
		s, err := decodeSUCI(b)
		id.SUCI = s
		return id, err
	case IdentityGUTI:
		if len(b) != 11 {
			return id, fmt.Errorf("5G-GUTI: %d octets, want 11", len(b))
		}
		p, err := identity.PLMNFromBytes(b[1:4])
		if err != nil {
			return id, fmt.Errorf("5G-GUTI: %w", err)
		}
		id.GUTI = identity.GUTI{
			GUAMI: identity.GUAMI{PLMN: p, AMFID: identity.AMFID{
				RegionID: b[4], SetID: uint16(b[5])<<2 | uint16(b[6]>>6), Pointer: b[6] & 0x3F,
			}},
			TMSI: getU32(b[7:11]),
		}
		return id, nil
	case IdentitySTMSI:
		if len(b) != 7 {
			return id, fmt.Errorf("5G-S-TMSI: %d octets, want 7", len(b))
		}
		id.STMSI = identity.STMSI{SetID: uint16(b[1])<<2 | uint16(b[2]>>6), Pointer: b[2] & 0x3F, TMSI: getU32(b[3:7])}
		return id, nil
	case IdentityIMEI, IdentityIMEISV:
		want := 8
		if id.Type == IdentityIMEISV {
			want = 9
		}
		if len(b) != want {
			return id, fmt.Errorf("%s: %d octets, want %d", id.Type, len(b), want)
		}
		d0 := b[0] >> 4
		if d0 > 9 {
			return id, fmt.Errorf("%s: BCD nibble 0x%x", id.Type, d0)
		}
		rest, err := bcdString(b[1:])
		if err != nil {
			return id, fmt.Errorf("%s: %w", id.Type, err)
		}
		digits := string('0'+d0) + rest
		if id.Type == IdentityIMEI {
			if len(digits) != 15 {
				return id, fmt.Errorf("IMEI: %d digits", len(digits))
			}
			id.IMEI = digits
		} else {
			if len(digits) != 16 {
				return id, fmt.Errorf("IMEISV: %d digits", len(digits))
			}
			id.IMEISV = digits
		}
		return id, nil
	}
	return id, fmt.Errorf("mobile identity type %d not supported", id.Type)
}

// encodeSUCI converts the TS 29.503 SUCI string
// "suci-0-<mcc>-<mnc>-<routing indicator>-<scheme>-<key id>-<scheme output>"
// (TS 23.003 §28.7.3) to the SUCI mobile identity value (IMSI format).
func encodeSUCI(s string) ([]byte, error) {
	f := strings.Split(s, "-")
	if len(f) != 8 || f[0] != "suci" {
		return nil, fmt.Errorf("SUCI %q: want suci-<type>-<mcc>-<mnc>-<routing>-<scheme>-<key>-<output>", s)
	}
	if f[1] != "0" {
		return nil, fmt.Errorf("SUCI %q: only IMSI-type SUPI (0) is supported", s)
	}
	p, err := plmnBytes(identity.PLMN{MCC: f[2], MNC: f[3]})
	if err != nil {
		return nil, fmt.Errorf("SUCI %q: %w", s, err)
	}
	ri := f[4]
	if len(ri) < 1 || len(ri) > 4 {
		return nil, fmt.Errorf("SUCI %q: routing indicator of %d digits", s, len(ri))
	}
	scheme, err := strconv.ParseUint(f[5], 10, 4)
	if err != nil {
		return nil, fmt.Errorf("SUCI %q: protection scheme: %w", s, err)
	}
	keyID, err := strconv.ParseUint(f[6], 10, 8)
	if err != nil {
		return nil, fmt.Errorf("SUCI %q: key id: %w", s, err)
	}
	b := make([]byte, 0, 8+len(f[7]))
	b = append(b, byte(IdentitySUCI)) // SUPI format 000 = IMSI
	b = append(b, p[:]...)
	// routing indicator: 4 BCD digits, unused ones coded 0xF (TS 24.501 §9.11.3.4)
	var rd [4]uint8
	for i := range rd {
		rd[i] = 0xF
		if i < len(ri) {
			if rd[i], err = bcdDigit(ri[i]); err != nil {
				return nil, fmt.Errorf("SUCI %q: routing indicator: %w", s, err)
			}
		}
	}
	b = append(b, rd[1]<<4|rd[0], rd[3]<<4|rd[2], byte(scheme), byte(keyID))
	if scheme == schemeNull {
		if f[7] == "" || len(f[7]) > 10 {
			return nil, fmt.Errorf("SUCI %q: MSIN of %d digits", s, len(f[7]))
		}
		if b, err = appendBCD(b, f[7]); err != nil {
			return nil, fmt.Errorf("SUCI %q: MSIN: %w", s, err)
		}
		return b, nil
	}
	out, err := hex.DecodeString(f[7])
	if err != nil || len(out) == 0 {
		return nil, fmt.Errorf("SUCI %q: scheme output is not hex", s)
	}
	return append(b, out...), nil
}

func decodeSUCI(b []byte) (string, error) {
	if format := b[0] >> 4 & 7; format != 0 {
		return "", fmt.Errorf("SUCI: SUPI format %d not supported", format)
	}
	if len(b) < 9 {
		return "", fmt.Errorf("SUCI: %d octets", len(b))
	}
	p, err := identity.PLMNFromBytes(b[1:4])
	if err != nil {
		return "", fmt.Errorf("SUCI: %w", err)
	}
	rd := [4]uint8{b[4] & 0xF, b[4] >> 4, b[5] & 0xF, b[5] >> 4}
	ri := make([]byte, 0, 4)
	for i, d := range rd {
		if d == 0xF {
			if i == 0 {
				return "", errors.New("SUCI: empty routing indicator")
			}
			break
		}
		if d > 9 {
			return "", fmt.Errorf("SUCI: routing indicator nibble 0x%x", d)
		}
		ri = append(ri, '0'+d)
	}
	scheme := b[6] & 0xF
	out := b[8:]
	var so string
	if scheme == schemeNull {
		if so, err = bcdString(out); err != nil {
			return "", fmt.Errorf("SUCI MSIN: %w", err)
		}
	} else {
		so = hex.EncodeToString(out)
	}
	var sb strings.Builder
	sb.Grow(24 + len(so))
	sb.WriteString("suci-0-")
	sb.WriteString(p.MCC)
	sb.WriteByte('-')
	sb.WriteString(p.MNC)
	sb.WriteByte('-')
	sb.Write(ri)
	sb.WriteByte('-')
	sb.WriteString(strconv.Itoa(int(scheme)))
	sb.WriteByte('-')
	sb.WriteString(strconv.Itoa(int(b[7])))
	sb.WriteByte('-')
	sb.WriteString(so)
	return sb.String(), nil
}

// UE security capability (TS 24.501 §9.11.3.54).
func (c *UESecurityCapability) encode() []byte {
	if c.HasEPS {
		return []byte{c.EA, c.IA, c.EEA, c.EIA}
	}
	return []byte{c.EA, c.IA}
}

func decodeUESecCap(v []byte) (UESecurityCapability, error) {
	if len(v) < 2 || len(v) > 8 {
		return UESecurityCapability{}, fmt.Errorf("UE security capability: %d octets", len(v))
	}
	c := UESecurityCapability{EA: v[0], IA: v[1]}
	if len(v) >= 4 {
		c.EEA, c.EIA, c.HasEPS = v[2], v[3], true
	}
	return c, nil
}

// S-NSSAI value (TS 24.501 §9.11.2.8); mapped HPLMN parts are not used.
func appendSNSSAI(b []byte, s identity.SNSSAI) []byte {
	if s.HasSD() {
		return append(b, 4, s.SST, byte(s.SD>>16), byte(s.SD>>8), byte(s.SD))
	}
	return append(b, 1, s.SST)
}

func decodeSNSSAI(v []byte) (identity.SNSSAI, error) {
	switch len(v) {
	case 1, 2:
		return identity.SNSSAI{SST: v[0], SD: identity.NoSD}, nil
	case 4, 5, 8:
		return identity.SNSSAI{SST: v[0], SD: uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])}, nil
	}
	return identity.SNSSAI{}, fmt.Errorf("S-NSSAI: %d octets", len(v))
}

// NSSAI value (TS 24.501 §9.11.3.37): S-NSSAI values, each length-prefixed.
func encodeNSSAI(l []identity.SNSSAI) []byte {
	b := make([]byte, 0, 5*len(l))
	for _, s := range l {
		b = appendSNSSAI(b, s)
	}
	return b
}

func decodeNSSAI(v []byte) ([]identity.SNSSAI, error) {
	out := make([]identity.SNSSAI, 0, 4)
	r := reader{b: v}
	for len(r.b) > 0 {
		s, err := decodeSNSSAI(r.lv())
		if r.err != nil {
			return nil, fmt.Errorf("NSSAI: %w", r.err)
		}
		if err != nil {
			return nil, fmt.Errorf("NSSAI: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// TAI value (TS 24.501 §9.11.3.8).
func appendTAI(b []byte, t identity.TAI) ([]byte, error) {
	p, err := plmnBytes(t.PLMN)
	if err != nil {
		return nil, fmt.Errorf("TAI: %w", err)
	}
	return append(b, p[0], p[1], p[2], byte(t.TAC>>16), byte(t.TAC>>8), byte(t.TAC)), nil
}

func decodeTAI(v []byte) (identity.TAI, error) {
	if len(v) != 6 {
		return identity.TAI{}, fmt.Errorf("TAI: %d octets", len(v))
	}
	p, err := identity.PLMNFromBytes(v[:3])
	if err != nil {
		return identity.TAI{}, fmt.Errorf("TAI: %w", err)
	}
	return identity.TAI{PLMN: p, TAC: uint32(v[3])<<16 | uint32(v[4])<<8 | uint32(v[5])}, nil
}

// 5GS tracking area identity list (TS 24.501 §9.11.3.9): one type-00
// partial list (one PLMN, non-consecutive TACs) per run of TAIs with the
// same PLMN. At most 16 TAIs.
func encodeTAIList(l []identity.TAI) ([]byte, error) {
	if len(l) == 0 || len(l) > 16 {
		return nil, fmt.Errorf("TAI list of %d entries (1..16)", len(l))
	}
	b := make([]byte, 0, 4+3*len(l))
	for i := 0; i < len(l); {
		j := i + 1
		for j < len(l) && l[j].PLMN == l[i].PLMN {
			j++
		}
		p, err := plmnBytes(l[i].PLMN)
		if err != nil {
			return nil, fmt.Errorf("TAI list: %w", err)
		}
		b = append(b, byte(j-i-1), p[0], p[1], p[2]) // type 00, number of elements - 1
		for _, t := range l[i:j] {
			b = append(b, byte(t.TAC>>16), byte(t.TAC>>8), byte(t.TAC))
		}
		i = j
	}
	return b, nil
}

func decodeTAIList(v []byte) ([]identity.TAI, error) {
	var out []identity.TAI
	r := reader{b: v}
	for len(r.b) > 0 && r.err == nil {
		h := r.u8()
		typ, n := h>>5&3, int(h&0x1F)+1
		switch typ {
		case 0, 1:
			p, err := identity.PLMNFromBytes(r.n(3))
			if r.err == nil && err != nil {
				return nil, fmt.Errorf("TAI list: %w", err)
			}
			if typ == 0 {
				for k := 0; k < n && r.err == nil; k++ {
					t := r.n(3)
					if t != nil {
						out = append(out, identity.TAI{PLMN: p, TAC: uint32(t[0])<<16 | uint32(t[1])<<8 | uint32(t[2])})
					}
				}
			} else if t := r.n(3); t != nil {
				tac := uint32(t[0])<<16 | uint32(t[1])<<8 | uint32(t[2])
				for k := 0; k < n; k++ {
					out = append(out, identity.TAI{PLMN: p, TAC: (tac + uint32(k)) & 0xFFFFFF})
				}
			}
		case 2:
			for k := 0; k < n && r.err == nil; k++ {
				if t := r.n(6); t != nil {
					tai, err := decodeTAI(t)
					if err != nil {
						return nil, fmt.Errorf("TAI list: %w", err)
					}
					out = append(out, tai)
				}
			}
		default:
			return nil, fmt.Errorf("TAI list: partial list type %d", typ)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("TAI list: %w", r.err)
	}
	return out, nil
}

// PSI bitmaps (TS 24.501 §9.11.3.44, §9.11.3.57, §9.11.3.42, §9.11.3.13):
// octet 3 has PSI(7)..PSI(0), octet 4 PSI(15)..PSI(8); further octets are
// spare, and TS 24.007 §11.4.2 has a receiver ignore octets beyond the
// 32 the IE may hold rather than treat them as a syntactical error.
func psiBytes(v uint16) []byte { return []byte{byte(v), byte(v >> 8)} }

func decodePSI(v []byte) (*uint16, error) {
	if len(v) < 2 {
		return nil, fmt.Errorf("PSI bitmap: %d octets", len(v))
	}
	x := uint16(v[0]) | uint16(v[1])<<8
	return &x, nil
}

// PDU session reactivation result error cause value (TS 24.501 §9.11.3.43):
// pairs of PDU session identity and 5GMM cause.
func decodePDUSessionCauses(v []byte) ([]PDUSessionCause, error) {
	if len(v) == 0 || len(v)%2 != 0 {
		return nil, fmt.Errorf("PDU session reactivation result error cause of %d octets", len(v))
	}
	out := make([]PDUSessionCause, 0, len(v)/2)
	for i := 0; i < len(v); i += 2 {
		out = append(out, PDUSessionCause{PSI: v[i], Cause: Cause5GMM(v[i+1])})
	}
	return out, nil
}

// DNN (TS 24.501 §9.11.2.1B): APN encoding of TS 23.003 §9.1, labels each
// prefixed by their length.
func encodeDNN(s string) ([]byte, error) {
	if s == "" || len(s) > 99 {
		return nil, fmt.Errorf("DNN %q: length", s)
	}
	b := make([]byte, 0, len(s)+1)
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("DNN %q: bad label", s)
		}
		b = append(b, byte(len(label)))
		b = append(b, label...)
	}
	return b, nil
}

func decodeDNN(v []byte) (string, error) {
	var sb strings.Builder
	r := reader{b: v}
	for len(r.b) > 0 {
		l := r.lv()
		if r.err != nil || len(l) == 0 {
			return "", errors.New("DNN: bad label")
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.Write(l)
	}
	if sb.Len() == 0 {
		return "", errors.New("DNN: empty")
	}
	return sb.String(), nil
}
