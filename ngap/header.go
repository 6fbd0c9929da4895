package ngap

// Header reads the NGAP-PDU choice and the procedure code of an encoded
// message without decoding it (TS 38.413 §9.4.2, ALIGNED PER per ITU-T
// X.691): the first octet holds the extension bit and the 2-bit choice
// index of NGAP-PDU, padded to the octet; the second is procedureCode,
// INTEGER (0..255), one aligned octet. A front end that only needs to know
// which procedure passes (resil/n2front watches NG Setup) pays two byte
// reads instead of a decode. ok is false for input too short or for an
// extension choice; the rest of the message is not checked.
func Header(b []byte) (proc int64, typ MessageType, ok bool) {
	if len(b) < 2 || b[0]&0x80 != 0 {
		return 0, 0, false
	}
	typ = MessageType(b[0] >> 5 & 0x03)
	if typ > UnsuccessfulOutcome {
		return 0, 0, false
	}
	return int64(b[1]), typ, true
}
