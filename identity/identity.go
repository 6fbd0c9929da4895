// Package identity holds the TS 23.003 identifiers that every part of tern
// shares: PLMN identity, S-NSSAI, tracking area, GUAMI and 5G-GUTI, and the
// SUPI string form of TS 29.571.
//
// The types are small values (no pointers) so they can be map keys and be
// copied freely on hot paths.
package identity

import (
	"fmt"
	"strconv"
	"strings"
)

// PLMN is a PLMN identity: a 3-digit MCC and a 2- or 3-digit MNC.
type PLMN struct {
	MCC string
	MNC string
}

// ParsePLMN reads "20893" (MCC 208, MNC 93) or "208930"/"208093" style
// strings: three MCC digits followed by two or three MNC digits. A dash
// between them ("208-93") is accepted too.
func ParsePLMN(s string) (PLMN, error) {
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 5 && len(s) != 6 {
		return PLMN{}, fmt.Errorf("plmn %q: want 5 or 6 digits (MCC+MNC)", s)
	}
	if !allDigits(s) {
		return PLMN{}, fmt.Errorf("plmn %q: not all digits", s)
	}
	return PLMN{MCC: s[:3], MNC: s[3:]}, nil
}

// Validate reports whether p has a 3-digit MCC and a 2- or 3-digit MNC.
func (p PLMN) Validate() error {
	if len(p.MCC) != 3 || !allDigits(p.MCC) {
		return fmt.Errorf("mcc %q: want 3 digits", p.MCC)
	}
	if (len(p.MNC) != 2 && len(p.MNC) != 3) || !allDigits(p.MNC) {
		return fmt.Errorf("mnc %q: want 2 or 3 digits", p.MNC)
	}
	return nil
}

// String returns MCC followed by MNC, e.g. "20893".
func (p PLMN) String() string { return p.MCC + p.MNC }

// Bytes encodes p as the 3-octet PLMN identity of TS 24.501 §9.11.3.4 and
// TS 38.413 §9.3.3.5: MCC2|MCC1, MNC3|MCC3, MNC2|MNC1, with MNC3 = 0xF for a
// 2-digit MNC. p must be valid.
func (p PLMN) Bytes() [3]byte {
	d := func(s string, i int) byte { return s[i] - '0' }
	var b [3]byte
	b[0] = d(p.MCC, 1)<<4 | d(p.MCC, 0)
	mnc3 := byte(0xF)
	if len(p.MNC) == 3 {
		mnc3 = d(p.MNC, 2)
	}
	b[1] = mnc3<<4 | d(p.MCC, 2)
	b[2] = d(p.MNC, 1)<<4 | d(p.MNC, 0)
	return b
}

// PLMNFromBytes decodes the 3-octet encoding of Bytes.
func PLMNFromBytes(b []byte) (PLMN, error) {
	if len(b) != 3 {
		return PLMN{}, fmt.Errorf("plmn identity: %d octets, want 3", len(b))
	}
	digits := [6]byte{b[0] & 0xF, b[0] >> 4, b[1] & 0xF, b[2] & 0xF, b[2] >> 4, b[1] >> 4}
	n := 6
	if digits[5] == 0xF {
		n = 5
	}
	var s [6]byte
	for i := 0; i < n; i++ {
		if digits[i] > 9 {
			return PLMN{}, fmt.Errorf("plmn identity % x: digit %d is 0x%x", b, i, digits[i])
		}
		s[i] = '0' + digits[i]
	}
	return PLMN{MCC: string(s[:3]), MNC: string(s[3:n])}, nil
}

// NoSD is the slice differentiator value meaning "no SD" (TS 23.003 §28.4.2).
const NoSD uint32 = 0xFFFFFF

// SNSSAI is a single network slice selection assistance information
// (TS 23.003 §28.4.2): a slice/service type and a 24-bit slice
// differentiator, NoSD when absent.
type SNSSAI struct {
	SST uint8
	SD  uint32
}

// HasSD reports whether the S-NSSAI carries a slice differentiator.
func (s SNSSAI) HasSD() bool { return s.SD != NoSD }

// String returns "1" or "1-010203" (SST, then SD as 6 hex digits).
func (s SNSSAI) String() string {
	if !s.HasSD() {
		return strconv.Itoa(int(s.SST))
	}
	return fmt.Sprintf("%d-%06x", s.SST, s.SD)
}

// ParseSNSSAI reads the String form: "1" or "1-010203".
func ParseSNSSAI(str string) (SNSSAI, error) {
	sstPart, sdPart, hasSD := strings.Cut(str, "-")
	sst, err := strconv.ParseUint(sstPart, 10, 8)
	if err != nil {
		return SNSSAI{}, fmt.Errorf("s-nssai %q: sst: %w", str, err)
	}
	s := SNSSAI{SST: uint8(sst), SD: NoSD}
	if hasSD {
		if len(sdPart) != 6 {
			return SNSSAI{}, fmt.Errorf("s-nssai %q: sd must be 6 hex digits", str)
		}
		sd, err := strconv.ParseUint(sdPart, 16, 32)
		if err != nil {
			return SNSSAI{}, fmt.Errorf("s-nssai %q: sd: %w", str, err)
		}
		s.SD = uint32(sd)
	}
	return s, nil
}

// TAI is a tracking area identity: PLMN and a 24-bit TAC (TS 23.003 §19.4.2.3).
type TAI struct {
	PLMN PLMN
	TAC  uint32
}

// String returns "20893-000001".
func (t TAI) String() string { return fmt.Sprintf("%s-%06x", t.PLMN, t.TAC) }

// AMFID is the AMF identifier: region (8 bits), set (10 bits), pointer (6 bits)
// (TS 23.003 §2.10.1).
type AMFID struct {
	RegionID uint8
	SetID    uint16
	Pointer  uint8
}

// Validate checks the field widths.
func (a AMFID) Validate() error {
	if a.SetID > 0x3FF {
		return fmt.Errorf("amf set id %d: more than 10 bits", a.SetID)
	}
	if a.Pointer > 0x3F {
		return fmt.Errorf("amf pointer %d: more than 6 bits", a.Pointer)
	}
	return nil
}

// Bytes returns the 24-bit AMF identifier as 3 octets.
func (a AMFID) Bytes() [3]byte {
	return [3]byte{a.RegionID, byte(a.SetID >> 2), byte(a.SetID&0x3)<<6 | a.Pointer&0x3F}
}

// AMFIDFromBytes decodes Bytes.
func AMFIDFromBytes(b []byte) (AMFID, error) {
	if len(b) != 3 {
		return AMFID{}, fmt.Errorf("amf id: %d octets, want 3", len(b))
	}
	return AMFID{RegionID: b[0], SetID: uint16(b[1])<<2 | uint16(b[2]>>6), Pointer: b[2] & 0x3F}, nil
}

// GUAMI is the globally unique AMF identifier (TS 23.003 §2.10.1).
type GUAMI struct {
	PLMN  PLMN
	AMFID AMFID
}

// String returns "20893-cafe00" style: PLMN then the AMF ID in hex.
func (g GUAMI) String() string {
	b := g.AMFID.Bytes()
	return fmt.Sprintf("%s-%02x%02x%02x", g.PLMN, b[0], b[1], b[2])
}

// GUTI is a 5G-GUTI: GUAMI plus the 5G-TMSI (TS 23.003 §2.10.1).
type GUTI struct {
	GUAMI GUAMI
	TMSI  uint32
}

// String returns "5g-guti-<guami>-<tmsi hex>".
func (g GUTI) String() string { return fmt.Sprintf("5g-guti-%s-%08x", g.GUAMI, g.TMSI) }

// STMSI is the 5G-S-TMSI (TS 23.003 §2.11): AMF set, pointer and 5G-TMSI.
type STMSI struct {
	SetID   uint16
	Pointer uint8
	TMSI    uint32
}

// STMSI returns the 5G-S-TMSI part of the GUTI.
func (g GUTI) STMSI() STMSI {
	return STMSI{SetID: g.GUAMI.AMFID.SetID, Pointer: g.GUAMI.AMFID.Pointer, TMSI: g.TMSI}
}

// IMSI returns the SUPI of an IMSI-based subscriber in the TS 29.571 form
// "imsi-<mcc><mnc><msin>".
func IMSI(p PLMN, msin string) string { return "imsi-" + p.MCC + p.MNC + msin }

// ParseSUPI returns the IMSI digits of a SUPI "imsi-<digits>".
func ParseSUPI(supi string) (imsi string, err error) {
	digits, ok := strings.CutPrefix(supi, "imsi-")
	if !ok {
		return "", fmt.Errorf("supi %q: only imsi- SUPIs are supported", supi)
	}
	if len(digits) < 6 || len(digits) > 15 || !allDigits(digits) {
		return "", fmt.Errorf("supi %q: imsi must be 6-15 digits", supi)
	}
	return digits, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
