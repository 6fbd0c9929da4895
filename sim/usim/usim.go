// Package usim is the simulated UE's USIM and the key derivations its ME
// performs for 5G AKA: the subscriber identity (SUPI, SUCI concealment with
// the null scheme or ECIES profile A/B), Milenage with an SQN window, and
// RES*, KAUSF, KSEAF and KAMF (TS 33.501 §6.1.3.2, Annex A).
package usim

import (
	"errors"
	"fmt"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

// Subscriber is what a USIM is provisioned with.
type Subscriber struct {
	PLMN identity.PLMN
	MSIN string // 9 or 10 digits: IMSI = MCC + MNC + MSIN
	K    []byte // 16 bytes
	OPc  []byte // 16 bytes
	// AMF is the authentication management field the USIM expects the
	// network to use (informational; the network's AMF arrives in AUTN).
	AMF []byte
	// SQN is the highest sequence number the USIM has accepted.
	SQN uint64

	RoutingIndicator string // 1-4 digits, "0000" when empty
	Scheme           suci.Scheme
	HNKeyID          uint8
	HNPublicKey      []byte // X25519 (32 B) or compressed P-256 (33 B); unused for the null scheme
}

// USIM is one subscriber's card. It is not safe for concurrent use; a UE
// serializes its procedures.
type USIM struct {
	sub  Subscriber
	card milenage.USIM
	supi string
	imsi string
}

// New checks the subscriber data and returns its USIM.
func New(s Subscriber) (*USIM, error) {
	if err := s.PLMN.Validate(); err != nil {
		return nil, fmt.Errorf("usim: %w", err)
	}
	if n := len(s.MSIN); n < 9 || n > 10 || !digits(s.MSIN) || len(s.PLMN.MCC)+len(s.PLMN.MNC)+n != 15 {
		return nil, fmt.Errorf("usim: msin %q: want digits making a 15-digit IMSI with %s", s.MSIN, s.PLMN)
	}
	if len(s.K) != 16 || len(s.OPc) != 16 {
		return nil, fmt.Errorf("usim %s: K and OPc must be 16 bytes (got %d, %d)", s.MSIN, len(s.K), len(s.OPc))
	}
	if s.AMF == nil {
		s.AMF = []byte{0x80, 0x00}
	}
	if len(s.AMF) != 2 {
		return nil, fmt.Errorf("usim %s: AMF must be 2 bytes", s.MSIN)
	}
	if s.RoutingIndicator == "" {
		s.RoutingIndicator = "0000"
	}
	if s.Scheme != suci.Scheme(0) && len(s.HNPublicKey) == 0 {
		return nil, fmt.Errorf("usim %s: suci scheme %d needs the home network public key", s.MSIN, s.Scheme)
	}
	u := &USIM{
		sub:  s,
		card: milenage.USIM{K: s.K, OPc: s.OPc, AMF: s.AMF, SQN: s.SQN},
		supi: identity.IMSI(s.PLMN, s.MSIN),
	}
	u.imsi = u.supi[len("imsi-"):]
	return u, nil
}

// SUPI returns "imsi-<digits>".
func (u *USIM) SUPI() string { return u.supi }

// IMSI returns the IMSI digits.
func (u *USIM) IMSI() string { return u.imsi }

// PLMN returns the home PLMN.
func (u *USIM) PLMN() identity.PLMN { return u.sub.PLMN }

// SQN returns the highest SQN the USIM has accepted.
func (u *USIM) SQN() uint64 { return u.card.SQN }

// SUCI conceals the SUPI with the provisioned protection scheme. Profile A
// and B use a fresh ephemeral key each call (TS 33.501 §6.12.2), so each
// call yields a different SUCI.
func (u *USIM) SUCI() (suci.SUCI, error) {
	s, err := suci.Conceal(u.sub.PLMN, u.sub.RoutingIndicator, u.sub.MSIN, u.sub.Scheme, u.sub.HNKeyID, u.sub.HNPublicKey)
	if err != nil {
		return suci.SUCI{}, fmt.Errorf("usim %s: conceal: %w", u.supi, err)
	}
	return s, nil
}

// ErrNon5GAuth means the AUTN's AMF separation bit is 0: the vector was not
// made for 5G (TS 33.501 §6.1.3.2 step 3; UE answers cause #26).
var ErrNon5GAuth = errors.New("usim: AMF separation bit not set (non-5G authentication vector)")

// AKA is the outcome of a successful 5G AKA challenge on the UE side.
type AKA struct {
	RESStar []byte // 16 bytes, sent in Authentication Response
	KAUSF   []byte
	KSEAF   []byte
	KAMF    []byte
}

// Authenticate runs the USIM (AUTN check, SQN window) and the ME's key
// derivations for serving network snn and the ABBA the AMF sent.
// Errors: milenage.ErrMACFailure (cause #20), *milenage.SyncError carrying
// AUTS (cause #21), ErrNon5GAuth (cause #26).
func (u *USIM) Authenticate(snn string, rand, autn, abba []byte) (AKA, error) {
	if len(rand) != 16 || len(autn) != 16 {
		return AKA{}, fmt.Errorf("usim %s: RAND/AUTN lengths %d/%d, want 16", u.supi, len(rand), len(autn))
	}
	res, ck, ik, err := u.card.Authenticate(rand, autn)
	if err != nil {
		return AKA{}, err
	}
	// AUTN = SQN⊕AK (6) | AMF (2) | MAC-A (8); the separation bit is AMF bit 0 (the MSB).
	if autn[6]&0x80 == 0 {
		return AKA{}, ErrNon5GAuth
	}
	var a AKA
	a.RESStar = kdf.RESStar(ck, ik, snn, rand, res)
	a.KAUSF = kdf.KAUSF(ck, ik, snn, autn[:6])
	a.KSEAF = kdf.KSEAF(a.KAUSF, snn)
	a.KAMF = kdf.KAMF(a.KSEAF, u.imsi, abba)
	return a, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
