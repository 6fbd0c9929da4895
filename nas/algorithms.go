package nas

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"

	f5 "github.com/free5gc/nas/message"
)

// cipher applies the context's NEA to buf in place (ciphering and
// deciphering are the same keystream XOR).
func (c *SecurityContext) cipher(count uint32, dir Direction, buf []byte) error {
	switch c.encAlg {
	case NEA0:
		return nil
	case NEA2:
		nea2(c.encBlock, count, c.bearer, dir, buf)
		return nil
	default:
		return neaFree5GC(c.encAlg, c.kEnc, count, c.bearer, dir, buf)
	}
}

// mac computes the context's NAS-MAC over msg (SQN octet and message).
func (c *SecurityContext) mac(count uint32, dir Direction, msg []byte) ([4]byte, error) {
	switch c.intAlg {
	case NIA0:
		return [4]byte{}, nil // TS 33.501 §D.1: all-zero MAC
	case NIA2:
		return nia2(c.intBlock, &c.cmacK1, &c.cmacK2, count, c.bearer, dir, msg, len(msg)*8), nil
	default:
		return niaFree5GC(c.intAlg, c.kInt, count, c.bearer, dir, msg)
	}
}

// neaFree5GC runs 128-NEA1/NEA3 through free5gc/nas (its algorithms are
// internal; SecCtx is the exported path). bearer must be 0..2 there.
func neaFree5GC(alg uint8, key [16]byte, count uint32, bearer uint8, dir Direction, buf []byte) error {
	if alg != NEA1 && alg != NEA3 {
		return fmt.Errorf("%w: NEA%d", ErrAlgorithm, alg)
	}
	sc := free5gcCtx(key, count, bearer)
	sc.CipheringAlg = f5.AlgCiphering128NEA1
	if alg == NEA3 {
		sc.CipheringAlg = f5.AlgCiphering128NEA3
	}
	out, err := sc.NASEncrypt(f5.Direction(dir), buf)
	if err != nil {
		return fmt.Errorf("NEA%d: %w", alg, err)
	}
	if len(out) < len(buf) {
		return fmt.Errorf("NEA%d: short output", alg)
	}
	copy(buf, out)
	return nil
}

func niaFree5GC(alg uint8, key [16]byte, count uint32, bearer uint8, dir Direction, msg []byte) ([4]byte, error) {
	var mac [4]byte
	if alg != NIA1 && alg != NIA3 {
		return mac, fmt.Errorf("%w: NIA%d", ErrAlgorithm, alg)
	}
	sc := free5gcCtx(key, count, bearer)
	sc.IntegrityAlg = f5.AlgIntegrity128NIA1
	if alg == NIA3 {
		sc.IntegrityAlg = f5.AlgIntegrity128NIA3
	}
	out, err := sc.NASMacCalculate(f5.Direction(dir), msg)
	if err != nil {
		return mac, fmt.Errorf("NIA%d: %w", alg, err)
	}
	if len(out) != 4 {
		return mac, fmt.Errorf("NIA%d: MAC of %d octets", alg, len(out))
	}
	copy(mac[:], out)
	return mac, nil
}

func free5gcCtx(key [16]byte, count uint32, bearer uint8) *f5.SecCtx {
	cnt := &f5.Count{}
	cnt.Set(uint16(count>>8), uint8(count))
	// NAS COUNT is 24 bits; free5gc masks the same way, the top octet is 0.
	return &f5.SecCtx{
		Bearer:        f5.BearerType(bearer),
		UplinkCount:   cnt,
		DownlinkCount: cnt,
		KnasEnc:       key,
		KnasInt:       key,
	}
}

// nea2 is 128-NEA2 (TS 33.501 §D.4.3, = 128-EEA2 of TS 33.401 §B.1.3):
// AES-128 in counter mode with T1 = COUNT | BEARER | DIRECTION | 0^26 | 0^64.
// Done here rather than through free5gc so the AES block is built once per
// context and the output needs no extra buffer.
func nea2(block cipher.Block, count uint32, bearer uint8, dir Direction, buf []byte) {
	var iv [16]byte
	binary.BigEndian.PutUint32(iv[:], count)
	iv[4] = bearer<<3 | byte(dir&1)<<2
	cipher.NewCTR(block, iv[:]).XORKeyStream(buf, buf)
}

// nia2 is 128-NIA2 (TS 33.501 §D.4.3, = 128-EIA2 of TS 33.401 §B.2.3):
// AES-CMAC (NIST SP 800-38B) over COUNT | BEARER | DIRECTION | 0^26 | M,
// truncated to 32 bits. bits is the length of msg in bits (NAS always uses
// whole octets; the test vectors do not).
func nia2(block cipher.Block, k1, k2 *[16]byte, count uint32, bearer uint8, dir Direction, msg []byte, bits int) [4]byte {
	n := 8 + (bits+7)/8
	var stack [512]byte
	var m []byte
	if n <= len(stack) {
		m = stack[:n]
	} else {
		m = make([]byte, n)
	}
	binary.BigEndian.PutUint32(m, count)
	m[4] = bearer<<3 | byte(dir&1)<<2
	m[5], m[6], m[7] = 0, 0, 0
	copy(m[8:], msg[:(bits+7)/8])
	tag := cmac(block, k1, k2, m, 64+bits)
	return [4]byte{tag[0], tag[1], tag[2], tag[3]}
}

// cmacSubkeys derives K1, K2 (NIST SP 800-38B §6.1).
func cmacSubkeys(block cipher.Block) (k1, k2 [16]byte) {
	var l [16]byte
	block.Encrypt(l[:], l[:])
	k1 = dbl(l)
	k2 = dbl(k1)
	return k1, k2
}

func dbl(in [16]byte) [16]byte {
	var out [16]byte
	carry := in[0] >> 7
	for i := 0; i < 15; i++ {
		out[i] = in[i]<<1 | in[i+1]>>7
	}
	out[15] = in[15] << 1
	if carry != 0 {
		out[15] ^= 0x87
	}
	return out
}

// cmac computes AES-CMAC over the first bits bits of m (NIST SP 800-38B
// §6.2, bit-string form). m is modified (padding of the last block).
func cmac(block cipher.Block, k1, k2 *[16]byte, m []byte, bits int) [16]byte {
	nBlocks := (bits + 127) / 128
	complete := bits > 0 && bits%128 == 0
	if nBlocks == 0 {
		nBlocks = 1
	}
	var x [16]byte
	for i := 0; i < nBlocks-1; i++ {
		subtleXOR(x[:], m[i*16:i*16+16])
		block.Encrypt(x[:], x[:])
	}
	var last [16]byte
	rem := bits - (nBlocks-1)*128 // bits in the last block
	copy(last[:], m[(nBlocks-1)*16:(rem+7)/8+(nBlocks-1)*16])
	if complete {
		subtleXOR(last[:], k1[:])
	} else {
		// keep rem bits, then a single 1 bit, then zeros
		if rem%8 != 0 {
			last[rem/8] &= 0xFF << (8 - rem%8)
		}
		last[rem/8] |= 0x80 >> (rem % 8)
		subtleXOR(last[:], k2[:])
	}
	subtleXOR(x[:], last[:])
	block.Encrypt(x[:], x[:])
	return x
}

func subtleXOR(dst, src []byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}
