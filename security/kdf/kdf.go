// Package kdf implements the 5G key derivations of TS 33.501 Annex A on top
// of the generic 3GPP key derivation function of TS 33.220 Annex B.2.
//
// All functions are pure; they do not retain their arguments.
package kdf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tern5g/tern/identity"
)

// FC values (TS 33.501 Annex A, TS 33.220 Annex A).
const (
	FCAlgorithmKey = 0x69 // A.8  KNASint/KNASenc (and RRC/UP keys)
	FCKAUSF        = 0x6A // A.2
	FCRESStar      = 0x6B // A.4
	FCKSEAF        = 0x6C // A.6
	FCKAMF         = 0x6D // A.7
	FCKgNB         = 0x6E // A.9
	FCNH           = 0x6F // A.10
	FCCKIKPrime    = 0x20 // TS 33.402 A.2, CK'/IK' for EAP-AKA'
)

// Algorithm type distinguishers (TS 33.501 Table A.8-1).
const (
	NASEncAlg = 0x01 // N-NAS-enc-alg
	NASIntAlg = 0x02 // N-NAS-int-alg
	RRCEncAlg = 0x03 // N-RRC-enc-alg
	RRCIntAlg = 0x04 // N-RRC-int-alg
	UPEncAlg  = 0x05 // N-UP-enc-alg
	UPIntAlg  = 0x06 // N-UP-int-alg
)

// Access type distinguishers for KgNB / KN3IWF (TS 33.501 Table A.9-1).
const (
	AccessType3GPP    = 0x01
	AccessTypeNon3GPP = 0x02
)

// Derive is the generic KDF of TS 33.220 Annex B.2:
// HMAC-SHA-256(key, FC || P0 || L0 || P1 || L1 || ...), where Li is the
// 2-octet big-endian length of Pi. It returns all 256 bits.
func Derive(key []byte, fc byte, params ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	var hdr [2]byte
	hdr[0] = fc
	mac.Write(hdr[:1])
	for _, p := range params {
		mac.Write(p)
		binary.BigEndian.PutUint16(hdr[:], uint16(len(p)))
		mac.Write(hdr[:])
	}
	return mac.Sum(nil)
}

// ServingNetworkName is the SN name of TS 24.501 §9.12.1 (TS 33.501 §6.1.1.4):
// "5G:mnc<MNC>.mcc<MCC>.3gppnetwork.org" with the MNC padded to 3 digits.
func ServingNetworkName(p identity.PLMN) string {
	mnc := p.MNC
	if len(mnc) == 2 {
		mnc = "0" + mnc
	}
	return "5G:mnc" + mnc + ".mcc" + p.MCC + ".3gppnetwork.org"
}

// KAUSF derives KAUSF from CK||IK (TS 33.501 A.2): P0 = serving network
// name, P1 = SQN xor AK (6 octets). 32 octets.
func KAUSF(ck, ik []byte, snn string, sqnXorAK []byte) []byte {
	return Derive(concat(ck, ik), FCKAUSF, []byte(snn), sqnXorAK)
}

// RESStar derives RES* (UE) or XRES* (home network) (TS 33.501 A.4):
// key CK||IK, P0 = serving network name, P1 = RAND, P2 = RES; the result is
// the 128 least significant bits of the KDF output.
func RESStar(ck, ik []byte, snn string, rand, res []byte) []byte {
	out := Derive(concat(ck, ik), FCRESStar, []byte(snn), rand, res)
	return out[16:]
}

// HXRESStar computes HXRES* (or HRES*) (TS 33.501 A.5): "the 128 least
// significant bits of the output of the SHA-256 function" over RAND ||
// XRES*, the last 16 octets of the digest. An AMF and an AUSF must agree
// on which half, or every 5G-AKA fails with "HRES* does not match HXRES*";
// free5gc (AUSF and AMF) and Open5GS take the same last 16 octets.
func HXRESStar(rand, xresStar []byte) []byte {
	h := sha256.New()
	h.Write(rand)
	h.Write(xresStar)
	return h.Sum(nil)[16:]
}

// KSEAF derives KSEAF from KAUSF (TS 33.501 A.6): P0 = serving network name.
func KSEAF(kausf []byte, snn string) []byte {
	return Derive(kausf, FCKSEAF, []byte(snn))
}

// KAMF derives KAMF from KSEAF (TS 33.501 A.7): P0 = SUPI, P1 = ABBA.
//
// For an IMSI-based SUPI, A.7.0 makes P0 the IMSI digits as ASCII
// (TS 23.003 §2.2), without the "imsi-" prefix of the TS 29.571 string.
// supi may be given either way ("imsi-208930000000001" or
// "208930000000001"); the prefix is stripped. Other SUPI types (NAI) are
// used verbatim.
func KAMF(kseaf []byte, supi string, abba []byte) []byte {
	return Derive(kseaf, FCKAMF, []byte(SUPIForKDF(supi)), abba)
}

// SUPIForKDF returns the SUPI as it enters KAMF derivation (TS 33.501
// A.7.0): the bare IMSI digits for "imsi-" SUPIs, anything else unchanged.
func SUPIForKDF(supi string) string {
	if digits, ok := strings.CutPrefix(supi, "imsi-"); ok {
		return digits
	}
	return supi
}

// NASKeys derives KNASenc and KNASint from KAMF (TS 33.501 A.8) for the
// selected NEA/NIA algorithm identities (0..3). Each key is the 128 least
// significant bits of the KDF output.
func NASKeys(kamf []byte, encAlg, intAlg uint8) (kNASenc, kNASint []byte) {
	return AlgorithmKey(kamf, NASEncAlg, encAlg), AlgorithmKey(kamf, NASIntAlg, intAlg)
}

// AlgorithmKey is the algorithm key derivation of TS 33.501 A.8:
// P0 = algorithm type distinguisher, P1 = algorithm identity; 128 LSBs.
func AlgorithmKey(key []byte, typeDistinguisher, algorithmID uint8) []byte {
	return Derive(key, FCAlgorithmKey, []byte{typeDistinguisher}, []byte{algorithmID})[16:]
}

// KgNB derives KgNB (accessType AccessType3GPP) or KN3IWF (AccessTypeNon3GPP)
// from KAMF and the uplink NAS COUNT (TS 33.501 A.9). 32 octets.
func KgNB(kamf []byte, ulNASCount uint32, accessType uint8) []byte {
	var count [4]byte
	binary.BigEndian.PutUint32(count[:], ulNASCount)
	return Derive(kamf, FCKgNB, count[:], []byte{accessType})
}

// NH derives a next hop key (TS 33.501 Annex A.10): KDF(KAMF, FC = 0x6F,
// P0 = SYNC-input, L0 = 0x00 0x20). SYNC-input, 32 octets, is the KgNB
// derived by A.9 for the first NH of the chain and the previous NH after
// that (TS 33.501 §6.9.2.1.1): the initial KgNB goes with NCC 0, the NH
// from it with NCC 1, and each further NH raises the NCC by one. The result
// is 32 octets.
func NH(kamf, syncInput []byte) []byte {
	return Derive(kamf, FCNH, syncInput)
}

func concat(a, b []byte) []byte {
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// ValidateSNN reports whether s is a well-formed 5G serving network name
// (TS 24.501 §9.12.1), as a guard for names received over SBI.
func ValidateSNN(s string) error {
	rest, ok := strings.CutPrefix(s, "5G:mnc")
	if !ok || len(rest) != len("000.mcc000.3gppnetwork.org") ||
		rest[3:7] != ".mcc" || rest[10:] != ".3gppnetwork.org" ||
		!digits(rest[:3]) || !digits(rest[7:10]) {
		return fmt.Errorf("kdf: %q is not a serving network name \"5G:mncXXX.mccYYY.3gppnetwork.org\"", s)
	}
	return nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
