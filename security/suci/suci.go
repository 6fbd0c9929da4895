// Package suci handles the Subscription Concealed Identifier: its TS 29.503
// §5.4.2 string form, the null scheme, and the ECIES protection schemes
// Profile A (X25519) and Profile B (P-256) of TS 33.501 §6.12 and Annex C,
// both concealment (UE) and de-concealment (UDM/SIDF).
//
// Only IMSI-type SUPIs (SUPI type 0) are supported.
package suci

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tern5g/tern/identity"
)

// Scheme is the protection scheme identifier (TS 33.501 Annex C.1,
// TS 24.501 §9.11.3.4).
type Scheme uint8

const (
	SchemeNull     Scheme = 0 // null scheme: MSIN in clear
	SchemeProfileA Scheme = 1 // ECIES Profile A, Curve25519
	SchemeProfileB Scheme = 2 // ECIES Profile B, secp256r1
)

func (s Scheme) String() string {
	switch s {
	case SchemeNull:
		return "null"
	case SchemeProfileA:
		return "profile-A"
	case SchemeProfileB:
		return "profile-B"
	}
	return "scheme-" + strconv.Itoa(int(s))
}

// Errors callers may test for with errors.Is.
var (
	ErrMalformed         = errors.New("suci: malformed")
	ErrUnsupportedScheme = errors.New("suci: unsupported protection scheme")
	ErrUnknownKey        = errors.New("suci: no home network key with that identifier and scheme")
	ErrMACFailure        = errors.New("suci: ECIES MAC tag does not verify")
)

// SUCI is an IMSI-based SUCI.
type SUCI struct {
	PLMN             identity.PLMN
	RoutingIndicator string // 1-4 digits
	Scheme           Scheme
	KeyID            uint8 // home network public key identifier; 0 for the null scheme
	// SchemeOutput is the ECIES scheme output (ephemeral public key ||
	// ciphertext || MAC tag). For the null scheme it holds the MSIN in TBCD
	// (TS 24.501 §9.11.3.4), as it is carried in NAS.
	SchemeOutput []byte
	MSIN         string // null scheme only
}

// Parse reads the TS 29.503 §5.4.2 string form
// "suci-0-<mcc>-<mnc>-<routing indicator>-<scheme>-<key id>-<scheme output>",
// where the scheme is one hex digit, the key id decimal (0-255), and the
// scheme output the MSIN digits for the null scheme, hex otherwise.
func Parse(s string) (SUCI, error) {
	f := strings.Split(s, "-")
	if len(f) != 8 || f[0] != "suci" {
		return SUCI{}, fmt.Errorf("%w: %q: want suci-0-<mcc>-<mnc>-<ri>-<scheme>-<keyid>-<output>", ErrMalformed, s)
	}
	if f[1] != "0" {
		return SUCI{}, fmt.Errorf("%w: %q: SUPI type %q, only IMSI (0) is supported", ErrMalformed, s, f[1])
	}
	p := identity.PLMN{MCC: f[2], MNC: f[3]}
	if err := p.Validate(); err != nil {
		return SUCI{}, fmt.Errorf("%w: %q: %v", ErrMalformed, s, err)
	}
	if err := validRouting(f[4]); err != nil {
		return SUCI{}, fmt.Errorf("%w: %q: %v", ErrMalformed, s, err)
	}
	if len(f[5]) != 1 {
		return SUCI{}, fmt.Errorf("%w: %q: protection scheme %q is not one hex digit", ErrMalformed, s, f[5])
	}
	scheme, err := strconv.ParseUint(f[5], 16, 4)
	if err != nil {
		return SUCI{}, fmt.Errorf("%w: %q: protection scheme %q", ErrMalformed, s, f[5])
	}
	keyID, err := parseKeyID(f[6])
	if err != nil {
		return SUCI{}, fmt.Errorf("%w: %q: %v", ErrMalformed, s, err)
	}
	out := SUCI{PLMN: p, RoutingIndicator: f[4], Scheme: Scheme(scheme), KeyID: keyID}
	if out.Scheme == SchemeNull {
		if keyID != 0 {
			return SUCI{}, fmt.Errorf("%w: %q: null scheme needs key id 0 (TS 23.003 §2.2B)", ErrMalformed, s)
		}
		if err := validMSIN(p, f[7]); err != nil {
			return SUCI{}, fmt.Errorf("%w: %q: %v", ErrMalformed, s, err)
		}
		out.MSIN = f[7]
		out.SchemeOutput = encodeTBCD(f[7])
		return out, nil
	}
	if f[7] == "" || len(f[7])%2 != 0 {
		return SUCI{}, fmt.Errorf("%w: %q: scheme output is not whole hex octets", ErrMalformed, s)
	}
	b, err := decodeHex(f[7])
	if err != nil {
		return SUCI{}, fmt.Errorf("%w: %q: scheme output: %v", ErrMalformed, s, err)
	}
	out.SchemeOutput = b
	return out, nil
}

// String formats s in the TS 29.503 §5.4.2 form (lower-case hex).
func (s SUCI) String() string {
	var b strings.Builder
	b.Grow(24 + 2*len(s.SchemeOutput))
	b.WriteString("suci-0-")
	b.WriteString(s.PLMN.MCC)
	b.WriteByte('-')
	b.WriteString(s.PLMN.MNC)
	b.WriteByte('-')
	b.WriteString(s.RoutingIndicator)
	b.WriteByte('-')
	b.WriteString(strconv.FormatUint(uint64(s.Scheme), 16))
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(int(s.KeyID)))
	b.WriteByte('-')
	if s.Scheme == SchemeNull {
		msin := s.MSIN
		if msin == "" {
			msin, _ = decodeTBCD(s.SchemeOutput)
		}
		b.WriteString(msin)
	} else {
		const digits = "0123456789abcdef"
		for _, c := range s.SchemeOutput {
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&0xf])
		}
	}
	return b.String()
}

// NullScheme builds the SUCI of the null scheme (TS 33.501 §6.12.2), used
// when the home network has not provisioned a public key.
func NullScheme(p identity.PLMN, routing, msin string) (SUCI, error) {
	if err := p.Validate(); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	if err := validRouting(routing); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	if err := validMSIN(p, msin); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	return SUCI{PLMN: p, RoutingIndicator: routing, Scheme: SchemeNull, MSIN: msin, SchemeOutput: encodeTBCD(msin)}, nil
}

func validRouting(ri string) error {
	if len(ri) < 1 || len(ri) > 4 || !allDigits(ri) {
		return fmt.Errorf("routing indicator %q: want 1-4 digits", ri)
	}
	return nil
}

// validMSIN checks an MSIN against TS 23.003 §2.2: digits only, and the
// whole IMSI at most 15 digits.
func validMSIN(p identity.PLMN, msin string) error {
	if msin == "" || !allDigits(msin) || len(p.MCC)+len(p.MNC)+len(msin) > 15 {
		return fmt.Errorf("msin %q: want digits, IMSI at most 15 digits", msin)
	}
	return nil
}

func parseKeyID(s string) (uint8, error) {
	if s == "" || len(s) > 3 || !allDigits(s) || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("key id %q: want decimal 0-255", s)
	}
	v, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		return 0, fmt.Errorf("key id %q: want decimal 0-255", s)
	}
	return uint8(v), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func decodeHex(s string) ([]byte, error) {
	out := make([]byte, len(s)/2)
	for i := range out {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("invalid hex at offset %d", 2*i)
		}
		out[i] = hi<<4 | lo
	}
	return out, nil
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// encodeTBCD packs decimal digits two per octet, first digit in the low
// nibble, odd length padded with 0xF (TS 24.501 §9.11.3.4, TS 29.002
// TBCD-STRING). The caller has checked that s is all digits.
func encodeTBCD(s string) []byte {
	out := make([]byte, (len(s)+1)/2)
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if i%2 == 0 {
			out[i/2] = 0xF0 | d
		} else {
			out[i/2] = out[i/2]&0x0F | d<<4
		}
	}
	return out
}

// decodeTBCD is the inverse of encodeTBCD; a filler 0xF is accepted only in
// the high nibble of the last octet.
func decodeTBCD(b []byte) (string, error) {
	if len(b) == 0 {
		return "", errors.New("empty TBCD string")
	}
	digits := make([]byte, 0, 2*len(b))
	for i, c := range b {
		lo, hi := c&0x0F, c>>4
		if lo > 9 {
			return "", fmt.Errorf("TBCD octet %d: invalid digit %#x", i, lo)
		}
		digits = append(digits, '0'+lo)
		if hi == 0xF && i == len(b)-1 {
			break
		}
		if hi > 9 {
			return "", fmt.Errorf("TBCD octet %d: invalid digit %#x", i, hi)
		}
		digits = append(digits, '0'+hi)
	}
	return string(digits), nil
}
