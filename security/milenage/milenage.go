// Package milenage is tern's MILENAGE (TS 35.206) front end: network-side
// authentication vector generation, a USIM model that verifies AUTN and
// produces RES/CK/IK or a re-synchronisation token (AUTS), and the network's
// AUTS verification (TS 33.102 §6.3).
//
// The f1..f5* functions themselves come from github.com/wmnsk/milenage; this
// package only adds length checks, SQN handling and the procedures around
// them, so a library upgrade touches one place.
package milenage

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"

	wm "github.com/wmnsk/milenage"
)

// Field lengths in octets (TS 33.102 §6.3.7, TS 35.206 §2).
const (
	KeyLen  = 16 // K, OP, OPc, RAND, CK, IK
	SQNLen  = 6
	AMFLen  = 2
	MACLen  = 8
	AUTNLen = SQNLen + AMFLen + MACLen // 16
	AUTSLen = SQNLen + MACLen          // 14
	RESLen  = 8                        // MILENAGE f2 output
)

// MaxSQN is the largest 48-bit sequence number.
const MaxSQN = 1<<48 - 1

// ErrMACFailure is returned by USIM.Authenticate when MAC-A in AUTN does not
// match XMAC-A (TS 33.102 §6.3.3: "user authentication reject, cause MAC failure").
var ErrMACFailure = errors.New("milenage: MAC failure (MAC-A in AUTN does not verify)")

// ErrAUTSMACFailure is returned by VerifyAUTS when MAC-S does not verify
// (TS 33.102 §6.3.5): the re-synchronisation request must be ignored.
var ErrAUTSMACFailure = errors.New("milenage: AUTS MAC-S does not verify")

// SyncError is returned by USIM.Authenticate when AUTN carries a valid MAC
// but an SQN that is not fresh (TS 33.102 §6.3.3). AUTS is the token the UE
// sends back in an Authentication Failure (cause #21 "synch failure").
type SyncError struct {
	AUTS  []byte // 14 octets: SQN_MS xor AK* || MAC-S
	SQNMS uint64 // the USIM's highest accepted SQN, concealed inside AUTS
}

func (e *SyncError) Error() string {
	return fmt.Sprintf("milenage: synch failure: SQN not fresh (SQN_MS %d)", e.SQNMS)
}

// OPc derives OPc = E_K(OP) xor OP (TS 35.206 §4.1).
func OPc(k, op []byte) ([]byte, error) {
	if err := checkLen("K", k, KeyLen); err != nil {
		return nil, err
	}
	if err := checkLen("OP", op, KeyLen); err != nil {
		return nil, err
	}
	opc, err := wm.ComputeOPc(clone(k), clone(op))
	if err != nil {
		return nil, fmt.Errorf("milenage: compute OPc: %w", err)
	}
	return opc, nil
}

// Vector is one authentication vector as produced by the home network
// (TS 33.102 §6.3.2). XRES is the 8-octet MILENAGE f2 output.
type Vector struct {
	RAND, AUTN, XRES, CK, IK, AK []byte
}

// SQNXorAK returns the concealed SQN, the first six octets of AUTN (the
// input of the KAUSF derivation, TS 33.501 Annex A.2).
func (v Vector) SQNXorAK() []byte { return v.AUTN[:SQNLen] }

// Generate computes an authentication vector on the network side
// (TS 33.102 §6.3.2): MAC-A = f1(K, SQN, RAND, AMF), XRES = f2, CK = f3,
// IK = f4, AK = f5 and AUTN = SQN xor AK || AMF || MAC-A.
func Generate(k, opc, rand, sqn, amf []byte) (Vector, error) {
	if err := checkInputs(k, opc, rand); err != nil {
		return Vector{}, err
	}
	if err := checkLen("SQN", sqn, SQNLen); err != nil {
		return Vector{}, err
	}
	if err := checkLen("AMF", amf, AMFLen); err != nil {
		return Vector{}, err
	}
	m := newMilenage(k, opc, rand)
	m.SQN, m.AMF = clone(sqn), clone(amf)
	macA, err := m.F1()
	if err != nil {
		return Vector{}, fmt.Errorf("milenage: f1: %w", err)
	}
	res, ck, ik, ak, err := m.F2345()
	if err != nil {
		return Vector{}, fmt.Errorf("milenage: f2345: %w", err)
	}
	autn := make([]byte, 0, AUTNLen)
	for i := range SQNLen {
		autn = append(autn, sqn[i]^ak[i])
	}
	autn = append(autn, amf...)
	autn = append(autn, macA...)
	return Vector{RAND: clone(rand), AUTN: autn, XRES: res, CK: ck, IK: ik, AK: ak}, nil
}

// USIM models the authentication part of a USIM (TS 33.102 §6.3.3 and the
// simplified SQN scheme of Annex C): it accepts an AUTN only if MAC-A
// verifies and its SQN is strictly greater than the highest SQN accepted so
// far. A USIM is not safe for concurrent use.
type USIM struct {
	K, OPc []byte
	// AMF is the subscription's AMF as provisioned on the network side.
	// Authenticate does not check it: the USIM takes AMF from AUTN
	// (TS 33.102 §6.3.3).
	AMF []byte
	// SQN is the highest SQN accepted so far (SQN_MS).
	SQN uint64
}

// Authenticate runs the USIM side of AKA for (RAND, AUTN). On success it
// returns RES, CK and IK and records the network's SQN in u.SQN. If MAC-A is
// wrong it returns ErrMACFailure; if the SQN is not fresh it returns a
// *SyncError carrying AUTS. u is unchanged on error.
//
// Departure from Annex C on purpose: only "SQN > SQN_MS" is checked (no
// array of SEQ values per IND and no limit on how far ahead SQN may jump);
// tern's network side never reorders vectors, so the simple rule suffices.
func (u *USIM) Authenticate(rand, autn []byte) (res, ck, ik []byte, err error) {
	if err := checkInputs(u.K, u.OPc, rand); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLen("AUTN", autn, AUTNLen); err != nil {
		return nil, nil, nil, err
	}
	m := newMilenage(u.K, u.OPc, rand)
	res, ck, ik, ak, err := m.F2345()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("milenage: f2345: %w", err)
	}
	// TS 33.102 §6.3.3: recover SQN = (SQN xor AK) xor AK, then XMAC = f1.
	sqn := make([]byte, SQNLen)
	for i := range SQNLen {
		sqn[i] = autn[i] ^ ak[i]
	}
	m.SQN, m.AMF = sqn, clone(autn[SQNLen:SQNLen+AMFLen])
	xmac, err := m.F1()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("milenage: f1: %w", err)
	}
	if subtle.ConstantTimeCompare(xmac, autn[SQNLen+AMFLen:]) != 1 {
		return nil, nil, nil, ErrMACFailure
	}
	// The MAC is checked before the SQN so that a forged AUTN can never make
	// the USIM reveal (a concealed) SQN_MS.
	if got := SQNFromBytes(sqn); got <= u.SQN {
		auts, err := computeAUTS(u.K, u.OPc, rand, u.SQN)
		if err != nil {
			return nil, nil, nil, err
		}
		return nil, nil, nil, &SyncError{AUTS: auts, SQNMS: u.SQN}
	}
	u.SQN = SQNFromBytes(sqn)
	return res, ck, ik, nil
}

// VerifyAUTS is the network side of re-synchronisation (TS 33.102 §6.3.5):
// it recovers SQN_MS = (SQN_MS xor AK*) xor f5*(RAND) and checks MAC-S =
// f1*(K, SQN_MS, RAND, AMF = 0x0000). RAND is the one that triggered the
// synch failure.
func VerifyAUTS(k, opc, rand, auts []byte) (sqnMS uint64, err error) {
	if err := checkInputs(k, opc, rand); err != nil {
		return 0, err
	}
	if err := checkLen("AUTS", auts, AUTSLen); err != nil {
		return 0, err
	}
	aks, err := f5Star(k, opc, rand)
	if err != nil {
		return 0, err
	}
	sqn := make([]byte, SQNLen)
	for i := range SQNLen {
		sqn[i] = auts[i] ^ aks[i]
	}
	// TS 33.102 §6.3.3: the dummy AMF 0x0000 is used for MAC-S.
	macS, err := f1Star(k, opc, rand, sqn, resyncAMF)
	if err != nil {
		return 0, err
	}
	if subtle.ConstantTimeCompare(macS, auts[SQNLen:]) != 1 {
		return 0, ErrAUTSMACFailure
	}
	return SQNFromBytes(sqn), nil
}

// computeAUTS builds AUTS = SQN_MS xor f5*(RAND) || f1*(SQN_MS, AMF=0x0000)
// (TS 33.102 §6.3.3).
func computeAUTS(k, opc, rand []byte, sqnMS uint64) ([]byte, error) {
	sqn, err := SQNBytes(sqnMS)
	if err != nil {
		return nil, err
	}
	aks, err := f5Star(k, opc, rand)
	if err != nil {
		return nil, err
	}
	macS, err := f1Star(k, opc, rand, sqn, resyncAMF)
	if err != nil {
		return nil, err
	}
	auts := make([]byte, 0, AUTSLen)
	for i := range SQNLen {
		auts = append(auts, sqn[i]^aks[i])
	}
	return append(auts, macS...), nil
}

// resyncAMF is the dummy AMF of MAC-S (TS 33.102 §6.3.3), so that the AMF
// need not be sent in the clear in the re-synchronisation message.
var resyncAMF = []byte{0, 0}

// f1Star is the re-synchronisation message authentication function:
// MAC-S = f1*(K, SQN, RAND, AMF) (TS 35.206 §4.1).
func f1Star(k, opc, rand, sqn, amf []byte) ([]byte, error) {
	m := newMilenage(k, opc, rand)
	macS, err := m.F1Star(clone(sqn), clone(amf))
	if err != nil {
		return nil, fmt.Errorf("milenage: f1*: %w", err)
	}
	return macS, nil
}

// f5Star is the re-synchronisation anonymity key function AK* = f5*(K, RAND).
func f5Star(k, opc, rand []byte) ([]byte, error) {
	aks, err := newMilenage(k, opc, rand).F5Star()
	if err != nil {
		return nil, fmt.Errorf("milenage: f5*: %w", err)
	}
	return aks, nil
}

// SQNBytes encodes a 48-bit SQN as 6 big-endian octets.
func SQNBytes(sqn uint64) ([]byte, error) {
	if sqn > MaxSQN {
		return nil, fmt.Errorf("milenage: SQN %d exceeds 48 bits", sqn)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], sqn)
	return b[2:], nil
}

// SQNFromBytes decodes 6 big-endian octets (shorter input is taken as the
// low-order octets).
func SQNFromBytes(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v & MaxSQN
}

// newMilenage builds the library's state on private copies of the inputs:
// the library keeps and mutates the slices it is given.
func newMilenage(k, opc, rand []byte) *wm.Milenage {
	return wm.NewWithOPc(clone(k), clone(opc), clone(rand), 0, 0)
}

func checkInputs(k, opc, rand []byte) error {
	if err := checkLen("K", k, KeyLen); err != nil {
		return err
	}
	if err := checkLen("OPc", opc, KeyLen); err != nil {
		return err
	}
	return checkLen("RAND", rand, KeyLen)
}

func checkLen(name string, b []byte, want int) error {
	if len(b) != want {
		return fmt.Errorf("milenage: %s is %d octets, want %d", name, len(b), want)
	}
	return nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
