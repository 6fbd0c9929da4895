package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"

	"github.com/tern5g/tern/identity"
)

// errMissing marks a mandatory IE absent from a decoded message.
type errMissing struct {
	name string
	id   int64
}

func (e *errMissing) Error() string { return "missing mandatory IE " + e.name }

func missing(name string, id int64) error { return &errMissing{name: name, id: id} }

func plmnIE(p identity.PLMN) (*ie.PLMNIdentity, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := p.Bytes()
	return &ie.PLMNIdentity{Value: aper.OctetString(b[:])}, nil
}

func plmnFrom(p *ie.PLMNIdentity) (identity.PLMN, error) {
	if p == nil {
		return identity.PLMN{}, errors.New("missing PLMN identity")
	}
	return identity.PLMNFromBytes(p.Value)
}

func tacIE(tac uint32) *ie.TAC {
	return &ie.TAC{Value: aper.OctetString{byte(tac >> 16), byte(tac >> 8), byte(tac)}}
}

func tacFrom(t *ie.TAC) (uint32, error) {
	if t == nil || len(t.Value) != 3 {
		return 0, errors.New("bad TAC")
	}
	return uint32(t.Value[0])<<16 | uint32(t.Value[1])<<8 | uint32(t.Value[2]), nil
}

func taiIE(t identity.TAI) (*ie.TAI, error) {
	p, err := plmnIE(t.PLMN)
	if err != nil {
		return nil, fmt.Errorf("TAI: %w", err)
	}
	return &ie.TAI{PLMNIdentity: p, TAC: tacIE(t.TAC)}, nil
}

func taiFrom(t *ie.TAI) (identity.TAI, error) {
	if t == nil {
		return identity.TAI{}, errors.New("missing TAI")
	}
	p, err := plmnFrom(t.PLMNIdentity)
	if err != nil {
		return identity.TAI{}, fmt.Errorf("TAI: %w", err)
	}
	tac, err := tacFrom(t.TAC)
	if err != nil {
		return identity.TAI{}, fmt.Errorf("TAI: %w", err)
	}
	return identity.TAI{PLMN: p, TAC: tac}, nil
}

func snssaiIE(s identity.SNSSAI) *ie.SNSSAI {
	x := &ie.SNSSAI{SST: &ie.SST{Value: aper.OctetString{s.SST}}}
	if s.HasSD() {
		x.SD = &ie.SD{Value: aper.OctetString{byte(s.SD >> 16), byte(s.SD >> 8), byte(s.SD)}}
	}
	return x
}

func snssaiFrom(x *ie.SNSSAI) (identity.SNSSAI, error) {
	if x == nil || x.SST == nil || len(x.SST.Value) != 1 {
		return identity.SNSSAI{}, errors.New("bad S-NSSAI")
	}
	s := identity.SNSSAI{SST: x.SST.Value[0], SD: identity.NoSD}
	if x.SD != nil {
		if len(x.SD.Value) != 3 {
			return s, errors.New("bad SD")
		}
		s.SD = uint32(x.SD.Value[0])<<16 | uint32(x.SD.Value[1])<<8 | uint32(x.SD.Value[2])
	}
	return s, nil
}

func sliceListIE(l []identity.SNSSAI) (*ie.SliceSupportList, error) {
	if len(l) == 0 {
		return nil, errors.New("empty slice support list")
	}
	x := &ie.SliceSupportList{List: make([]ie.SliceSupportItem, len(l))}
	for i, s := range l {
		x.List[i].SNSSAI = snssaiIE(s)
	}
	return x, nil
}

func sliceListFrom(x *ie.SliceSupportList) ([]identity.SNSSAI, error) {
	if x == nil {
		return nil, errors.New("missing slice support list")
	}
	out := make([]identity.SNSSAI, len(x.List))
	for i := range x.List {
		s, err := snssaiFrom(x.List[i].SNSSAI)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func allowedNSSAIIE(l []identity.SNSSAI) (*ie.AllowedNSSAI, error) {
	if len(l) == 0 || len(l) > 8 {
		return nil, fmt.Errorf("allowed NSSAI of %d entries (1..8)", len(l))
	}
	x := &ie.AllowedNSSAI{List: make([]ie.AllowedNSSAIItem, len(l))}
	for i, s := range l {
		x.List[i].SNSSAI = snssaiIE(s)
	}
	return x, nil
}

func allowedNSSAIFrom(x *ie.AllowedNSSAI) ([]identity.SNSSAI, error) {
	out := make([]identity.SNSSAI, len(x.List))
	for i := range x.List {
		s, err := snssaiFrom(x.List[i].SNSSAI)
		if err != nil {
			return nil, fmt.Errorf("allowed NSSAI: %w", err)
		}
		out[i] = s
	}
	return out, nil
}

// bitString packs the low n bits of v, most significant first.
func bitString(v uint64, n int) aper.BitString {
	nb := (n + 7) / 8
	b := make([]byte, nb)
	v <<= uint(nb*8 - n) // left-align
	for i := nb - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return aper.BitString{Bytes: b, BitLength: uint64(n)}
}

func bitsValue(bs aper.BitString) (uint64, error) {
	n := int(bs.BitLength)
	if n == 0 || n > 64 || len(bs.Bytes) != (n+7)/8 {
		return 0, fmt.Errorf("bit string of %d bits in %d octets", n, len(bs.Bytes))
	}
	var v uint64
	for _, c := range bs.Bytes {
		v = v<<8 | uint64(c)
	}
	return v >> uint(len(bs.Bytes)*8-n), nil
}

func guamiIE(g identity.GUAMI) (*ie.GUAMI, error) {
	p, err := plmnIE(g.PLMN)
	if err != nil {
		return nil, fmt.Errorf("GUAMI: %w", err)
	}
	return &ie.GUAMI{
		PLMNIdentity: p,
		AMFRegionID:  &ie.AMFRegionID{Value: bitString(uint64(g.AMFID.RegionID), 8)},
		AMFSetID:     &ie.AMFSetID{Value: bitString(uint64(g.AMFID.SetID&0x3FF), 10)},
		AMFPointer:   &ie.AMFPointer{Value: bitString(uint64(g.AMFID.Pointer&0x3F), 6)},
	}, nil
}

func guamiFrom(x *ie.GUAMI) (identity.GUAMI, error) {
	var g identity.GUAMI
	if x == nil || x.AMFRegionID == nil || x.AMFSetID == nil || x.AMFPointer == nil {
		return g, errors.New("incomplete GUAMI")
	}
	p, err := plmnFrom(x.PLMNIdentity)
	if err != nil {
		return g, fmt.Errorf("GUAMI: %w", err)
	}
	r, err1 := bitsValue(x.AMFRegionID.Value)
	s, err2 := bitsValue(x.AMFSetID.Value)
	ptr, err3 := bitsValue(x.AMFPointer.Value)
	if err := errors.Join(err1, err2, err3); err != nil {
		return g, fmt.Errorf("GUAMI: %w", err)
	}
	return identity.GUAMI{PLMN: p, AMFID: identity.AMFID{RegionID: uint8(r), SetID: uint16(s), Pointer: uint8(ptr)}}, nil
}

func causeIE(c Cause) (*ie.Cause, error) {
	v := aper.Enumerated(c.Value)
	var alt ie.CauseAlt
	switch c.Group {
	case CauseRadioNetwork:
		alt = &ie.CauseRadioNetwork{Value: v}
	case CauseTransport:
		alt = &ie.CauseTransport{Value: v}
	case CauseNAS:
		alt = &ie.CauseNas{Value: v}
	case CauseProtocol:
		alt = &ie.CauseProtocol{Value: v}
	case CauseMisc:
		alt = &ie.CauseMisc{Value: v}
	default:
		return nil, fmt.Errorf("cause group %d", c.Group)
	}
	return &ie.Cause{Choice: alt}, nil
}

func causeFrom(x *ie.Cause) (Cause, error) {
	if x == nil {
		return Cause{}, errors.New("missing cause")
	}
	switch v := x.Choice.(type) {
	case *ie.CauseRadioNetwork:
		return Cause{CauseRadioNetwork, uint8(v.Value)}, nil
	case *ie.CauseTransport:
		return Cause{CauseTransport, uint8(v.Value)}, nil
	case *ie.CauseNas:
		return Cause{CauseNAS, uint8(v.Value)}, nil
	case *ie.CauseProtocol:
		return Cause{CauseProtocol, uint8(v.Value)}, nil
	case *ie.CauseMisc:
		return Cause{CauseMisc, uint8(v.Value)}, nil
	}
	return Cause{}, fmt.Errorf("unsupported cause choice %T", x.Choice)
}

func critDiagIE(d *CriticalityDiagnostics) *ie.CriticalityDiagnostics {
	if d == nil {
		return nil
	}
	x := &ie.CriticalityDiagnostics{}
	if d.ProcedureCode != nil {
		x.ProcedureCode = &ie.ProcedureCode{Value: *d.ProcedureCode}
	}
	if d.TriggeringMessage != nil {
		x.TriggeringMessage = &ie.TriggeringMessage{Value: aper.Enumerated(*d.TriggeringMessage)}
	}
	if d.ProcedureCriticality != nil {
		x.ProcedureCriticality = &ie.Criticality{Value: aper.Enumerated(*d.ProcedureCriticality)}
	}
	if len(d.IEs) > 0 {
		l := &ie.CriticalityDiagnosticsIEList{List: make([]ie.CriticalityDiagnosticsIEItem, len(d.IEs))}
		for i, it := range d.IEs {
			l.List[i] = ie.CriticalityDiagnosticsIEItem{
				IECriticality: &ie.Criticality{Value: aper.Enumerated(it.Criticality)},
				IEID:          &ie.ProtocolIEID{Value: it.IEID},
				TypeOfError:   &ie.TypeOfError{Value: aper.Enumerated(it.TypeOfError)},
			}
		}
		x.IEsCriticalityDiagnostics = l
	}
	return x
}

func critDiagFrom(x *ie.CriticalityDiagnostics) *CriticalityDiagnostics {
	if x == nil {
		return nil
	}
	d := &CriticalityDiagnostics{}
	if x.ProcedureCode != nil {
		v := x.ProcedureCode.Value
		d.ProcedureCode = &v
	}
	if x.TriggeringMessage != nil {
		v := MessageType(x.TriggeringMessage.Value)
		d.TriggeringMessage = &v
	}
	if x.ProcedureCriticality != nil {
		v := Criticality(x.ProcedureCriticality.Value)
		d.ProcedureCriticality = &v
	}
	if x.IEsCriticalityDiagnostics != nil {
		for _, it := range x.IEsCriticalityDiagnostics.List {
			var e CriticalityDiagnosticsIE
			if it.IECriticality != nil {
				e.Criticality = Criticality(it.IECriticality.Value)
			}
			if it.IEID != nil {
				e.IEID = it.IEID.Value
			}
			if it.TypeOfError != nil {
				e.TypeOfError = TypeOfError(it.TypeOfError.Value)
			}
			d.IEs = append(d.IEs, e)
		}
	}
	return d
}

func userLocationIE(u UserLocationNR) (*ie.UserLocationInformation, error) {
	p, err := plmnIE(u.NRCGI.PLMN)
	if err != nil {
		return nil, fmt.Errorf("NR-CGI: %w", err)
	}
	tai, err := taiIE(u.TAI)
	if err != nil {
		return nil, err
	}
	return &ie.UserLocationInformation{Choice: &ie.UserLocationInformationNR{
		NRCGI: &ie.NRCGI{
			PLMNIdentity:   p,
			NRCellIdentity: &ie.NRCellIdentity{Value: bitString(u.NRCGI.CellID&(1<<36-1), 36)},
		},
		TAI: tai,
	}}, nil
}

func userLocationFrom(x *ie.UserLocationInformation) (UserLocationNR, error) {
	var u UserLocationNR
	if x == nil {
		return u, errors.New("missing user location information")
	}
	nr, ok := x.Choice.(*ie.UserLocationInformationNR)
	if !ok || nr.NRCGI == nil || nr.NRCGI.NRCellIdentity == nil {
		return u, fmt.Errorf("user location information: unsupported choice %T", x.Choice)
	}
	p, err := plmnFrom(nr.NRCGI.PLMNIdentity)
	if err != nil {
		return u, fmt.Errorf("NR-CGI: %w", err)
	}
	cell, err := bitsValue(nr.NRCGI.NRCellIdentity.Value)
	if err != nil {
		return u, fmt.Errorf("NR cell identity: %w", err)
	}
	tai, err := taiFrom(nr.TAI)
	if err != nil {
		return u, err
	}
	return UserLocationNR{NRCGI: NRCGI{PLMN: p, CellID: cell}, TAI: tai}, nil
}

func amfID(v int64) *ie.AMFUENGAPID { return &ie.AMFUENGAPID{Value: v} }
func ranID(v int64) *ie.RANUENGAPID { return &ie.RANUENGAPID{Value: v} }

// checkIDs enforces the ranges of TS 38.413 §9.3.3.1-2 before encoding.
func checkIDs(amf, ran int64) error {
	if amf < 0 || amf > 1<<40-1 {
		return fmt.Errorf("AMF UE NGAP ID %d out of range", amf)
	}
	if ran < 0 || ran > 1<<32-1 {
		return fmt.Errorf("RAN UE NGAP ID %d out of range", ran)
	}
	return nil
}

func nasPDU(b []byte) (*ie.NASPDU, error) {
	if len(b) == 0 {
		return nil, errors.New("empty NAS-PDU")
	}
	return &ie.NASPDU{Value: aper.OctetString(b)}, nil
}

// globalGNBIDIE builds the Global gNB ID choice of Global RAN Node ID
// (TS 38.413 §9.3.1.5, §9.3.1.6).
func globalGNBIDIE(g GlobalGNBID) (*ie.GlobalRANNodeID, error) {
	if g.BitLen < 22 || g.BitLen > 32 {
		return nil, fmt.Errorf("gNB ID length %d (22..32)", g.BitLen)
	}
	if g.BitLen < 32 && g.GNBID>>g.BitLen != 0 {
		return nil, fmt.Errorf("gNB ID 0x%x wider than %d bits", g.GNBID, g.BitLen)
	}
	p, err := plmnIE(g.PLMN)
	if err != nil {
		return nil, fmt.Errorf("global gNB ID: %w", err)
	}
	return &ie.GlobalRANNodeID{Choice: &ie.GlobalGNBID{
		PLMNIdentity: p,
		GNBID:        &ie.GNBID{Choice: &ie.GNBIDForGNBID{Value: bitString(uint64(g.GNBID), int(g.BitLen))}},
	}}, nil
}

func globalGNBIDFrom(x *ie.GlobalRANNodeID) (GlobalGNBID, error) {
	if x == nil {
		return GlobalGNBID{}, errors.New("missing global RAN node ID")
	}
	g, ok := x.Choice.(*ie.GlobalGNBID)
	if !ok || g.GNBID == nil {
		return GlobalGNBID{}, fmt.Errorf("global RAN node ID: unsupported choice %T", x.Choice)
	}
	gid, ok := g.GNBID.Choice.(*ie.GNBIDForGNBID)
	if !ok {
		return GlobalGNBID{}, fmt.Errorf("gNB ID: unsupported choice %T", g.GNBID.Choice)
	}
	p, err := plmnFrom(g.PLMNIdentity)
	if err != nil {
		return GlobalGNBID{}, fmt.Errorf("global gNB ID: %w", err)
	}
	id, err := bitsValue(gid.Value)
	if err != nil || gid.Value.BitLength < 22 || gid.Value.BitLength > 32 {
		return GlobalGNBID{}, fmt.Errorf("gNB ID of %d bits", gid.Value.BitLength)
	}
	return GlobalGNBID{PLMN: p, GNBID: uint32(id), BitLen: uint8(gid.Value.BitLength)}, nil
}

// stmsiIE builds a 5G-S-TMSI (TS 38.413 §9.3.3.20).
func stmsiIE(s identity.STMSI) (*ie.FiveGSTMSI, error) {
	if s.SetID > 0x3FF || s.Pointer > 0x3F {
		return nil, fmt.Errorf("5G-S-TMSI: AMF set ID %d (10 bits) or pointer %d (6 bits) out of range", s.SetID, s.Pointer)
	}
	return &ie.FiveGSTMSI{
		AMFSetID:   &ie.AMFSetID{Value: bitString(uint64(s.SetID), 10)},
		AMFPointer: &ie.AMFPointer{Value: bitString(uint64(s.Pointer), 6)},
		FiveGTMSI:  &ie.FiveGTMSI{Value: aper.OctetString{byte(s.TMSI >> 24), byte(s.TMSI >> 16), byte(s.TMSI >> 8), byte(s.TMSI)}},
	}, nil
}

func stmsiFrom(s *ie.FiveGSTMSI) (identity.STMSI, error) {
	if s == nil || s.AMFSetID == nil || s.AMFPointer == nil || s.FiveGTMSI == nil || len(s.FiveGTMSI.Value) != 4 {
		return identity.STMSI{}, errors.New("incomplete 5G-S-TMSI")
	}
	set, err1 := bitsValue(s.AMFSetID.Value)
	ptr, err2 := bitsValue(s.AMFPointer.Value)
	if err := errors.Join(err1, err2); err != nil {
		return identity.STMSI{}, fmt.Errorf("5G-S-TMSI: %w", err)
	}
	t := s.FiveGTMSI.Value
	return identity.STMSI{SetID: uint16(set), Pointer: uint8(ptr), TMSI: uint32(t[0])<<24 | uint32(t[1])<<16 | uint32(t[2])<<8 | uint32(t[3])}, nil
}

// ueSecurityCapabilitiesIE builds UE Security Capabilities (TS 38.413
// §9.3.1.86).
func ueSecurityCapabilitiesIE(c UESecurityCapabilities) *ie.UESecurityCapabilities {
	return &ie.UESecurityCapabilities{
		NRencryptionAlgorithms:             &ie.NRencryptionAlgorithms{Value: bitString(uint64(c.NREncryption), 16)},
		NRintegrityProtectionAlgorithms:    &ie.NRintegrityProtectionAlgorithms{Value: bitString(uint64(c.NRIntegrity), 16)},
		EUTRAencryptionAlgorithms:          &ie.EUTRAencryptionAlgorithms{Value: bitString(uint64(c.EUTRAEncryption), 16)},
		EUTRAintegrityProtectionAlgorithms: &ie.EUTRAintegrityProtectionAlgorithms{Value: bitString(uint64(c.EUTRAIntegrity), 16)},
	}
}

func ueSecurityCapabilitiesFrom(sc *ie.UESecurityCapabilities) (UESecurityCapabilities, error) {
	if sc == nil || sc.NRencryptionAlgorithms == nil || sc.NRintegrityProtectionAlgorithms == nil ||
		sc.EUTRAencryptionAlgorithms == nil || sc.EUTRAintegrityProtectionAlgorithms == nil {
		return UESecurityCapabilities{}, errors.New("incomplete UE security capabilities")
	}
	var caps [4]uint64
	for i, bs := range []aper.BitString{sc.NRencryptionAlgorithms.Value, sc.NRintegrityProtectionAlgorithms.Value,
		sc.EUTRAencryptionAlgorithms.Value, sc.EUTRAintegrityProtectionAlgorithms.Value} {
		if bs.BitLength != 16 {
			return UESecurityCapabilities{}, fmt.Errorf("UE security capability of %d bits", bs.BitLength)
		}
		var err error
		if caps[i], err = bitsValue(bs); err != nil {
			return UESecurityCapabilities{}, err
		}
	}
	return UESecurityCapabilities{
		NREncryption: uint16(caps[0]), NRIntegrity: uint16(caps[1]),
		EUTRAEncryption: uint16(caps[2]), EUTRAIntegrity: uint16(caps[3]),
	}, nil
}

// securityKeyIE builds a Security Key (TS 38.413 §9.3.1.87).
func securityKeyIE(k [32]byte) *ie.SecurityKey {
	return &ie.SecurityKey{Value: aper.BitString{Bytes: append([]byte(nil), k[:]...), BitLength: 256}}
}

func securityKeyFrom(x *ie.SecurityKey) ([32]byte, error) {
	var k [32]byte
	if x == nil || x.Value.BitLength != 256 || len(x.Value.Bytes) != 32 {
		var n uint64
		if x != nil {
			n = x.Value.BitLength
		}
		return k, fmt.Errorf("security key of %d bits", n)
	}
	copy(k[:], x.Value.Bytes)
	return k, nil
}
