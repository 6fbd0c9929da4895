package nas

import "fmt"

// Decode parses a plain 5GMM or 5GSM (EPD 0x2E) message. It never panics:
// malformed or unsupported input gives an error. Optional IEs tern does not
// use are skipped, and so is an optional IE that is syntactically
// incorrect: the message decodes without it (TS 24.501 §7.7.1), except for
// the QoS rules and QoS flow descriptions of 5GSM messages, whose errors the
// procedures answer with 5GSM causes of their own. Of a repeated IE only the
// first occurrence counts (§7.6.3). Errors in the mandatory part, and an IE
// that runs past the end of the message, fail the message. Security
// protected PDUs must go through SecurityContext.Unprotect (or PeekPlain)
// first. Byte-slice fields of the result (payloads, RAND, containers) alias
// plain; copy them to keep them past plain's reuse.
func Decode(plain []byte) (m Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("nas decode: malformed message (%v)", p)
		}
	}()
	return decode(plain)
}

// Encode builds the plain 5GMM or 5GSM encoding of m.
func Encode(m Message) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("nas encode %s: %v", m.MessageType(), p)
		}
	}()
	return encode(m)
}
