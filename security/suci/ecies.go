package suci

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tern5g/tern/identity"
)

// ECIES parameters common to Profiles A and B (TS 33.501 §C.3.4.1/C.3.4.2).
const (
	encKeyLen     = 16 // AES-128
	icbLen        = 16 // initial counter block
	macKeyLen     = 32 // HMAC-SHA-256 key
	macTagLen     = 8  // truncated HMAC-SHA-256
	x25519KeyLen  = 32
	p256Scalar    = 32
	p256Compress  = 33
	p256Uncompres = 65
	// maxCiphertext bounds the concealed MSIN: 10 digits need 5 TBCD octets;
	// a little slack, but no unbounded work on hostile input.
	maxCiphertext = 16
)

// HomeNetworkKey is a home network ECIES key pair held by the UDM/SIDF.
// Private is the raw X25519 private key (Profile A) or the P-256 scalar
// (Profile B), 32 octets either way.
type HomeNetworkKey struct {
	ID      uint8
	Scheme  Scheme
	Private []byte
}

// GenerateHomeNetworkKey creates a fresh key pair for scheme.
func GenerateHomeNetworkKey(id uint8, scheme Scheme) (HomeNetworkKey, error) {
	c, err := curveFor(scheme)
	if err != nil {
		return HomeNetworkKey{}, err
	}
	k, err := c.GenerateKey(rand.Reader)
	if err != nil {
		return HomeNetworkKey{}, fmt.Errorf("suci: generate %v key: %w", scheme, err)
	}
	return HomeNetworkKey{ID: id, Scheme: scheme, Private: k.Bytes()}, nil
}

// Public returns the public key the UE is provisioned with: 32 octets for
// X25519, the 33-octet compressed point for P-256.
func (k HomeNetworkKey) Public() ([]byte, error) {
	priv, err := k.privateKey()
	if err != nil {
		return nil, err
	}
	return encodePublic(k.Scheme, priv.PublicKey()), nil
}

func (k HomeNetworkKey) privateKey() (*ecdh.PrivateKey, error) {
	c, err := curveFor(k.Scheme)
	if err != nil {
		return nil, err
	}
	priv, err := c.NewPrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("suci: home network key %d (%v): %w", k.ID, k.Scheme, err)
	}
	return priv, nil
}

// Conceal computes the SUCI of IMSI <plmn><msin> on the UE side
// (TS 33.501 §6.12.2, Annex C.3.2). hnPub is the home network public key:
// 32 octets for Profile A, a compressed (33) or uncompressed (65) point for
// Profile B; it is ignored for the null scheme.
func Conceal(p identity.PLMN, routing string, msin string, scheme Scheme, keyID uint8, hnPub []byte) (SUCI, error) {
	if scheme == SchemeNull {
		return NullScheme(p, routing, msin)
	}
	c, err := curveFor(scheme)
	if err != nil {
		return SUCI{}, err
	}
	eph, err := c.GenerateKey(rand.Reader)
	if err != nil {
		return SUCI{}, fmt.Errorf("suci: ephemeral key: %w", err)
	}
	return concealWith(p, routing, msin, scheme, keyID, hnPub, eph)
}

// concealWith is Conceal with a given ephemeral key (tests use the
// Annex C.4 ephemeral keys).
func concealWith(p identity.PLMN, routing, msin string, scheme Scheme, keyID uint8, hnPub []byte, eph *ecdh.PrivateKey) (SUCI, error) {
	if err := p.Validate(); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	if err := validRouting(routing); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	if err := validMSIN(p, msin); err != nil {
		return SUCI{}, fmt.Errorf("suci: %w", err)
	}
	pub, err := decodePublic(scheme, hnPub)
	if err != nil {
		return SUCI{}, fmt.Errorf("suci: home network public key: %w", err)
	}
	z, err := eph.ECDH(pub)
	if err != nil {
		return SUCI{}, fmt.Errorf("suci: ECDH: %w", err)
	}
	ephPub := encodePublic(scheme, eph.PublicKey())
	encKey, icb, macKey := deriveKeys(z, ephPub)

	// TS 33.501 §C.3.2: plaintext is the MSIN as in the null-scheme output
	// (TBCD, TS 24.501 §9.11.3.4).
	plain := encodeTBCD(msin)
	out := make([]byte, 0, len(ephPub)+len(plain)+macTagLen)
	out = append(out, ephPub...)
	ct := out[len(out) : len(out)+len(plain)]
	out = out[:len(out)+len(plain)]
	if err := ctr(encKey, icb, ct, plain); err != nil {
		return SUCI{}, err
	}
	out = append(out, macTag(macKey, ct)...)
	return SUCI{PLMN: p, RoutingIndicator: routing, Scheme: scheme, KeyID: keyID, SchemeOutput: out}, nil
}

// Deconceal recovers the SUPI ("imsi-<mcc><mnc><msin>") from s (the SIDF
// function, TS 33.501 §6.12.3, Annex C.3.3). The key is chosen by s.KeyID
// and s.Scheme. The MAC tag is verified before anything is deciphered.
func Deconceal(s SUCI, keys []HomeNetworkKey) (supi string, err error) {
	if err := s.PLMN.Validate(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch s.Scheme {
	case SchemeNull:
		msin := s.MSIN
		if msin == "" {
			if msin, err = decodeTBCD(s.SchemeOutput); err != nil {
				return "", fmt.Errorf("%w: null-scheme output: %v", ErrMalformed, err)
			}
		}
		if err := validMSIN(s.PLMN, msin); err != nil {
			return "", fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return identity.IMSI(s.PLMN, msin), nil
	case SchemeProfileA, SchemeProfileB:
	default:
		return "", fmt.Errorf("%w: %v", ErrUnsupportedScheme, s.Scheme)
	}
	var key *HomeNetworkKey
	for i := range keys {
		if keys[i].ID == s.KeyID && keys[i].Scheme == s.Scheme {
			key = &keys[i]
			break
		}
	}
	if key == nil {
		return "", fmt.Errorf("%w: id %d, %v", ErrUnknownKey, s.KeyID, s.Scheme)
	}
	priv, err := key.privateKey()
	if err != nil {
		return "", err
	}

	pubLen := x25519KeyLen
	if s.Scheme == SchemeProfileB {
		pubLen = p256Compress // C.3.4.2: Profile B always compresses the ephemeral key
	}
	o := s.SchemeOutput
	if len(o) < pubLen+1+macTagLen || len(o) > pubLen+maxCiphertext+macTagLen {
		return "", fmt.Errorf("%w: %v scheme output of %d octets", ErrMalformed, s.Scheme, len(o))
	}
	ephPub, ct, tag := o[:pubLen], o[pubLen:len(o)-macTagLen], o[len(o)-macTagLen:]
	pub, err := decodeEphemeral(s.Scheme, ephPub)
	if err != nil {
		return "", fmt.Errorf("%w: ephemeral public key: %v", ErrMalformed, err)
	}
	z, err := priv.ECDH(pub)
	if err != nil {
		return "", fmt.Errorf("%w: ECDH: %v", ErrMalformed, err)
	}
	encKey, icb, macKey := deriveKeys(z, ephPub)
	if subtle.ConstantTimeCompare(macTag(macKey, ct), tag) != 1 {
		return "", ErrMACFailure
	}
	plain := make([]byte, len(ct))
	if err := ctr(encKey, icb, plain, ct); err != nil {
		return "", err
	}
	msin, err := decodeTBCD(plain)
	if err != nil {
		return "", fmt.Errorf("%w: deciphered MSIN: %v", ErrMalformed, err)
	}
	if err := validMSIN(s.PLMN, msin); err != nil {
		return "", fmt.Errorf("%w: deciphered MSIN: %v", ErrMalformed, err)
	}
	return identity.IMSI(s.PLMN, msin), nil
}

// deriveKeys is the ANSI X9.63 KDF with SHA-256 (SEC 1 §3.6.1) over the
// shared secret Z with SharedInfo1 = the ephemeral public key as sent
// (TS 33.501 §C.3.4), split into the AES key, the ICB and the MAC key.
func deriveKeys(z, ephPub []byte) (encKey, icb, macKey []byte) {
	const total = encKeyLen + icbLen + macKeyLen
	k := make([]byte, 0, total)
	var counter [4]byte
	for i := uint32(1); len(k) < total; i++ {
		binary.BigEndian.PutUint32(counter[:], i)
		h := sha256.New()
		h.Write(z)
		h.Write(counter[:])
		h.Write(ephPub)
		k = h.Sum(k)
	}
	return k[:encKeyLen], k[encKeyLen : encKeyLen+icbLen], k[encKeyLen+icbLen : total]
}

func ctr(key, icb, dst, src []byte) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("suci: AES: %w", err)
	}
	cipher.NewCTR(block, icb).XORKeyStream(dst, src)
	return nil
}

func macTag(key, ct []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(ct)
	return m.Sum(nil)[:macTagLen]
}

func curveFor(s Scheme) (ecdh.Curve, error) {
	switch s {
	case SchemeProfileA:
		return ecdh.X25519(), nil
	case SchemeProfileB:
		return ecdh.P256(), nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedScheme, s)
}

// encodePublic renders a public key as it goes into the scheme output:
// raw for X25519, compressed SEC 1 point for P-256.
func encodePublic(s Scheme, pub *ecdh.PublicKey) []byte {
	b := pub.Bytes()
	if s != SchemeProfileB {
		return b
	}
	// b is 0x04 || X || Y; compressed form is 0x02|parity(Y) || X.
	out := make([]byte, p256Compress)
	out[0] = 0x02 | b[len(b)-1]&1
	copy(out[1:], b[1:1+p256Scalar])
	return out
}

// decodePublic accepts a home network public key: 32 octets for Profile A,
// compressed or uncompressed P-256 for Profile B.
func decodePublic(s Scheme, b []byte) (*ecdh.PublicKey, error) {
	if s == SchemeProfileB && len(b) == p256Uncompres {
		return ecdh.P256().NewPublicKey(b)
	}
	return decodeEphemeral(s, b)
}

// decodeEphemeral accepts only the scheme-output form: 32 octets for
// X25519, a compressed point for P-256 (an uncompressed ephemeral key is
// refused, TS 33.501 §C.3.4.2).
func decodeEphemeral(s Scheme, b []byte) (*ecdh.PublicKey, error) {
	switch s {
	case SchemeProfileA:
		if len(b) != x25519KeyLen {
			return nil, fmt.Errorf("X25519 key of %d octets", len(b))
		}
		return ecdh.X25519().NewPublicKey(b)
	case SchemeProfileB:
		if len(b) != p256Compress || (b[0] != 0x02 && b[0] != 0x03) {
			return nil, errors.New("not a compressed P-256 point")
		}
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), b)
		if x == nil {
			return nil, errors.New("compressed point not on P-256")
		}
		u := make([]byte, p256Uncompres)
		u[0] = 0x04
		x.FillBytes(u[1 : 1+p256Scalar])
		y.FillBytes(u[1+p256Scalar:])
		return ecdh.P256().NewPublicKey(u)
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedScheme, s)
}
