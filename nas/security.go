package nas

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"errors"
	"fmt"
)

// SecurityHeaderType is the security header type of a 5GMM PDU
// (TS 24.501 §9.3.1).
type SecurityHeaderType uint8

// Security header types.
const (
	Plain                                   SecurityHeaderType = 0
	IntegrityProtected                      SecurityHeaderType = 1
	IntegrityProtectedAndCiphered           SecurityHeaderType = 2
	IntegrityProtectedNewContext            SecurityHeaderType = 3 // SECURITY MODE COMMAND
	IntegrityProtectedAndCipheredNewContext SecurityHeaderType = 4 // SECURITY MODE COMPLETE
)

func (h SecurityHeaderType) String() string {
	switch h {
	case Plain:
		return "plain"
	case IntegrityProtected:
		return "integrity-protected"
	case IntegrityProtectedAndCiphered:
		return "integrity-protected-and-ciphered"
	case IntegrityProtectedNewContext:
		return "integrity-protected-new-context"
	case IntegrityProtectedAndCipheredNewContext:
		return "integrity-protected-and-ciphered-new-context"
	}
	return fmt.Sprintf("SecurityHeaderType(%d)", uint8(h))
}

// Ciphered reports whether h denotes a ciphered PDU.
func (h SecurityHeaderType) Ciphered() bool {
	return h == IntegrityProtectedAndCiphered || h == IntegrityProtectedAndCipheredNewContext
}

// Direction is the DIRECTION input of the NAS algorithms (TS 33.501 §D.2).
type Direction uint8

// Directions.
const (
	Uplink   Direction = 0
	Downlink Direction = 1
)

// NAS ciphering and integrity algorithm identifiers (TS 33.501 §5.11.1.1).
const (
	NEA0 uint8 = 0
	NEA1 uint8 = 1 // 128-NEA1, SNOW 3G
	NEA2 uint8 = 2 // 128-NEA2, AES-CTR
	NEA3 uint8 = 3 // 128-NEA3, ZUC
	NIA0 uint8 = 0
	NIA1 uint8 = 1 // 128-NIA1, SNOW 3G
	NIA2 uint8 = 2 // 128-NIA2, AES-CMAC
	NIA3 uint8 = 3 // 128-NIA3, ZUC
)

// BEARER values for NAS (TS 33.501 §6.4.3.1).
const (
	Bearer3GPP    uint8 = 1
	BearerNon3GPP uint8 = 2
)

// MaxCount is the largest NAS COUNT (24 bits: 16-bit overflow, 8-bit SQN,
// TS 24.501 §4.4.3.1).
const MaxCount = 0xFFFFFF

// Errors returned by SecurityContext.
var (
	ErrMAC          = errors.New("nas: MAC verification failed")
	ErrReplay       = errors.New("nas: replayed NAS COUNT")
	ErrShort        = errors.New("nas: PDU too short")
	ErrNotProtected = errors.New("nas: not a security protected 5GMM PDU")
	ErrCountWrap    = errors.New("nas: NAS COUNT exhausted, re-keying required")
	ErrAlgorithm    = errors.New("nas: unsupported algorithm")
)

// secHdrLen is EPD, security header type, 4-octet MAC and SQN.
const secHdrLen = 7

// nasCount tracks one direction: the COUNT of the last PDU sent or accepted.
type nasCount struct {
	last uint32
	used bool // false until the first PDU in this direction
}

func (n nasCount) next() uint32 {
	if !n.used {
		return 0
	}
	return n.last + 1
}

// SecurityContext is a 5G NAS security context (TS 24.501 §4.4.2, TS 33.501
// §6.4): keys, selected algorithms, and the NAS COUNT of each direction.
// It is not safe for concurrent use; the owner of a UE serializes access.
type SecurityContext struct {
	ngKSI          uint8
	encAlg, intAlg uint8
	bearer         uint8
	kEnc, kInt     [16]byte
	counts         [2]nasCount // indexed by Direction

	// AES blocks for NEA2/NIA2, built once (nil for other algorithms).
	encBlock, intBlock cipher.Block
	cmacK1, cmacK2     [16]byte
}

// NewSecurityContext returns a context with the given 128-bit NAS keys
// (TS 33.501 §A.8), algorithm identifiers and ngKSI, bearer 3GPP, and both
// NAS COUNTs at zero. Keys longer than 16 octets are cut to their last 16
// octets (the low 128 bits of a 256-bit KDF output, TS 33.501 §A.8).
func NewSecurityContext(kNASenc, kNASint []byte, encAlg, intAlg uint8, ngKSI uint8) *SecurityContext {
	c := &SecurityContext{ngKSI: ngKSI, encAlg: encAlg, intAlg: intAlg, bearer: Bearer3GPP}
	copy(c.kEnc[:], low128(kNASenc))
	copy(c.kInt[:], low128(kNASint))
	if encAlg == NEA2 {
		c.encBlock, _ = aes.NewCipher(c.kEnc[:]) // 16-byte key: cannot fail
	}
	if intAlg == NIA2 {
		c.intBlock, _ = aes.NewCipher(c.kInt[:])
		c.cmacK1, c.cmacK2 = cmacSubkeys(c.intBlock)
	}
	return c
}

func low128(k []byte) []byte {
	if len(k) > 16 {
		return k[len(k)-16:]
	}
	return k
}

// NgKSI returns the key set identifier of the context.
func (c *SecurityContext) NgKSI() uint8 { return c.ngKSI }

// CipheringAlg returns the NEA identifier in use.
func (c *SecurityContext) CipheringAlg() uint8 { return c.encAlg }

// IntegrityAlg returns the NIA identifier in use.
func (c *SecurityContext) IntegrityAlg() uint8 { return c.intAlg }

// SetBearer sets the BEARER input (Bearer3GPP by default).
func (c *SecurityContext) SetBearer(b uint8) { c.bearer = b & 0x1F }

// Bearer returns the BEARER input.
func (c *SecurityContext) Bearer() uint8 { return c.bearer }

// Keys returns KNASenc and KNASint (TS 33.501 §A.8), for a record of the
// context that another process rebuilds it from (NewSecurityContext with
// the same algorithms and ngKSI, then SetBearer and SetNextCount).
func (c *SecurityContext) Keys() (kNASenc, kNASint [16]byte) { return c.kEnc, c.kInt }

// Count returns the NAS COUNT of the last PDU protected or accepted in dir,
// and false if there was none yet. The AMF derives KgNB from the uplink
// COUNT of the last accepted uplink PDU (TS 33.501 §6.8.1.2.0, §A.9).
func (c *SecurityContext) Count(dir Direction) (uint32, bool) {
	n := c.counts[dir&1]
	return n.last, n.used
}

// NextCount returns the NAS COUNT the next Protect in dir will use.
func (c *SecurityContext) NextCount(dir Direction) uint32 { return c.counts[dir&1].next() }

// SetNextCount makes the next Protect in dir use count, and Unprotect accept
// only counts >= count. Used when a context is restored or for tests.
func (c *SecurityContext) SetNextCount(dir Direction, count uint32) {
	if count == 0 {
		c.counts[dir&1] = nasCount{}
		return
	}
	c.counts[dir&1] = nasCount{last: count - 1, used: true}
}

// Clone returns an independent copy of the context.
func (c *SecurityContext) Clone() *SecurityContext {
	d := *c
	return &d
}

// Protect wraps a plain 5GMM message in a security protected header of type
// hdr (TS 24.501 §9.1.1, §4.4.3-4.4.5): it ciphers the message (for the
// ciphered types), computes the MAC over SQN and message with the NAS COUNT
// of dir, and advances that COUNT. On error the context is unchanged.
// The "new context" types (SECURITY MODE COMMAND/COMPLETE) do not reset the
// COUNT here: a new context starts at zero already (NewSecurityContext).
func (c *SecurityContext) Protect(plain []byte, hdr SecurityHeaderType, dir Direction) ([]byte, error) {
	if hdr < IntegrityProtected || hdr > IntegrityProtectedAndCipheredNewContext {
		return nil, fmt.Errorf("nas protect: security header type %d", hdr)
	}
	if len(plain) < 3 || plain[0] != EPD5GMM || plain[1]&0x0F != 0 {
		return nil, fmt.Errorf("nas protect: input is not a plain 5GMM message")
	}
	dir &= 1
	count := c.counts[dir].next()
	if count > MaxCount {
		return nil, ErrCountWrap
	}
	out := make([]byte, secHdrLen+len(plain))
	out[0] = EPD5GMM
	out[1] = byte(hdr)
	out[6] = byte(count)
	copy(out[secHdrLen:], plain)
	if hdr.Ciphered() {
		if err := c.cipher(count, dir, out[secHdrLen:]); err != nil {
			return nil, fmt.Errorf("nas protect: %w", err)
		}
	}
	mac, err := c.mac(count, dir, out[6:])
	if err != nil {
		return nil, fmt.Errorf("nas protect: %w", err)
	}
	copy(out[2:6], mac[:])
	c.counts[dir] = nasCount{last: count, used: true}
	return out, nil
}

// Unprotect verifies and removes the security header of a PDU received in
// direction dir. It estimates the 32-bit NAS COUNT from the 8-bit SQN and
// the stored overflow (TS 24.501 §4.4.3.1), verifies the MAC (ErrMAC), rejects
// a COUNT at or below the last accepted one (ErrReplay, TS 33.501 §6.4.3.2),
// and deciphers. On any error the context is unchanged. For integrity-only
// PDUs the returned plain message aliases pdu.
func (c *SecurityContext) Unprotect(pdu []byte, dir Direction) ([]byte, SecurityHeaderType, error) {
	hdr, err := SecurityHeader(pdu)
	if err != nil {
		return nil, 0, err
	}
	if hdr == Plain {
		return nil, hdr, ErrNotProtected
	}
	if len(pdu) < secHdrLen+3 {
		return nil, hdr, ErrShort
	}
	dir &= 1
	st := c.counts[dir]
	sqn := pdu[6]
	var received [4]byte
	copy(received[:], pdu[2:6])

	// TS 24.501 §4.4.3.1: an SQN not above the stored one means the
	// overflow counter advanced.
	ov := st.last >> 8
	if st.used && uint32(sqn) <= st.last&0xFF {
		ov++
	}
	count := ov<<8 | uint32(sqn)
	if count > MaxCount {
		return nil, hdr, ErrCountWrap
	}
	// TS 33.501 §D.1: with NIA0 the receiver checks no MAC, and so cannot
	// tell a replay from a wrapped SQN; the estimate above is taken as is.
	if c.intAlg != NIA0 {
		mac, err := c.mac(count, dir, pdu[6:])
		if err != nil {
			return nil, hdr, fmt.Errorf("nas unprotect: %w", err)
		}
		if subtle.ConstantTimeCompare(mac[:], received[:]) != 1 {
			// A PDU already accepted verifies with its old COUNT: report it as
			// a replay rather than a forgery.
			if st.used && uint32(sqn) <= st.last&0xFF {
				old := (st.last>>8)<<8 | uint32(sqn)
				if m, err := c.mac(old, dir, pdu[6:]); err == nil &&
					subtle.ConstantTimeCompare(m[:], received[:]) == 1 {
					return nil, hdr, ErrReplay
				}
			}
			return nil, hdr, ErrMAC
		}
	}
	plain := pdu[secHdrLen:]
	if hdr.Ciphered() {
		plain = append([]byte(nil), plain...)
		if err := c.cipher(count, dir, plain); err != nil {
			return nil, hdr, fmt.Errorf("nas unprotect: %w", err)
		}
	}
	if plain[0] != EPD5GMM || plain[1]&0x0F != 0 {
		return nil, hdr, fmt.Errorf("nas unprotect: inner message is not a plain 5GMM message")
	}
	c.counts[dir] = nasCount{last: count, used: true}
	return plain, hdr, nil
}

// OpenContainer deciphers the NAS message container of an initial NAS
// message (REGISTRATION REQUEST, SERVICE REQUEST) that this context has just
// verified (TS 24.501 §4.4.6): the UE ciphers the complete message with the
// NAS COUNT of the message that carries it, which is the last COUNT of dir
// this context accepted. It returns the plain message in a new slice.
func (c *SecurityContext) OpenContainer(container []byte, dir Direction) ([]byte, error) {
	st := c.counts[dir&1]
	if !st.used {
		return nil, errors.New("nas container: no message verified yet")
	}
	plain := append([]byte(nil), container...)
	if err := c.cipher(st.last, dir&1, plain); err != nil {
		return nil, fmt.Errorf("nas container: %w", err)
	}
	if len(plain) < 3 || plain[0] != EPD5GMM || plain[1]&0x0F != 0 {
		return nil, errors.New("nas container: not a plain 5GMM message")
	}
	return plain, nil
}

// SecurityHeader returns the security header type of a 5GMM PDU.
func SecurityHeader(pdu []byte) (SecurityHeaderType, error) {
	if len(pdu) < 3 {
		return 0, ErrShort
	}
	if pdu[0] != EPD5GMM {
		return 0, fmt.Errorf("nas: EPD 0x%02x is not 5GMM", pdu[0])
	}
	h := SecurityHeaderType(pdu[1] & 0x0F)
	if h > IntegrityProtectedAndCipheredNewContext {
		return h, fmt.Errorf("nas: reserved security header type %d", h)
	}
	return h, nil
}

// IsPlain reports whether pdu is a plain (not security protected) 5GMM message.
func IsPlain(pdu []byte) bool {
	h, err := SecurityHeader(pdu)
	return err == nil && h == Plain
}

// PeekPlain returns the plain message inside pdu without any check: pdu
// itself if plain, the payload of an integrity-protected (not ciphered) PDU
// otherwise. The AMF uses it to read an initial message it cannot verify yet
// (TS 24.501 §4.4.4.3). A ciphered PDU gives an error.
func PeekPlain(pdu []byte) ([]byte, SecurityHeaderType, error) {
	h, err := SecurityHeader(pdu)
	if err != nil {
		return nil, h, err
	}
	switch {
	case h == Plain:
		return pdu, h, nil
	case h.Ciphered():
		return nil, h, fmt.Errorf("nas: %s PDU cannot be read without its security context", h)
	case len(pdu) < secHdrLen+3:
		return nil, h, ErrShort
	}
	return pdu[secHdrLen:], h, nil
}
