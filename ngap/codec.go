package ngap

import (
	"fmt"
)

// DecodeError is returned by Decode for input that is not a valid NGAP
// message tern handles. It carries what the receiver needs to answer with an
// Error Indication (TS 38.413 §8.7.5, §10).
type DecodeError struct {
	// Cause is a protocol cause: transfer-syntax-error for undecodable ASN.1
	// (TS 38.413 §10.2), abstract-syntax-error-* for unknown or unsupported
	// procedures and missing/unknown IEs (§10.3), semantic-error for values
	// out of range of our types.
	Cause Cause
	// ProcedureKnown is set when the procedure code, message type and
	// procedure criticality could be read.
	ProcedureKnown bool
	ProcedureCode  int64
	MessageType    MessageType
	Criticality    Criticality
	// UE NGAP IDs, when they could be read.
	AMFUENGAPID *int64
	RANUENGAPID *int64
	// Diagnostics, when the failure is attributable to an IE (§10.3.4.2) or
	// to the procedure code (§10.3.4.1).
	Diagnostics *CriticalityDiagnostics
	// Notify is false when TS 38.413 §10.3 says to ignore silently
	// (criticality "ignore"): no Error Indication should be sent.
	Notify bool
	Err    error
}

func (e *DecodeError) Error() string {
	if e.ProcedureKnown {
		return fmt.Sprintf("ngap decode (procedure %d, %s): %s: %v", e.ProcedureCode, e.MessageType, e.Cause, e.Err)
	}
	return fmt.Sprintf("ngap decode: %s: %v", e.Cause, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ErrorIndication builds the Error Indication that reports e (TS 38.413
// §10.2, §10.3): cause, criticality diagnostics and whichever UE NGAP IDs
// were read.
func (e *DecodeError) ErrorIndication() *ErrorIndication {
	c := e.Cause
	ind := &ErrorIndication{AMFUENGAPID: e.AMFUENGAPID, RANUENGAPID: e.RANUENGAPID, Cause: &c}
	if e.Diagnostics != nil {
		d := *e.Diagnostics
		ind.CriticalityDiagnostics = &d
	}
	return ind
}

// Decode parses one NGAP PDU. It never panics; bad input gives a *DecodeError.
func Decode(b []byte) (m Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			m = nil
			err = &DecodeError{
				Cause:  Cause{Group: CauseProtocol, Value: ProtocolTransferSyntaxError},
				Notify: true,
				Err:    fmt.Errorf("malformed PDU (%v)", p),
			}
		}
	}()
	return decode(b)
}

// Encode builds the APER encoding of m.
func Encode(m Message) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("ngap encode procedure %d: %v", m.ProcedureCode(), p)
		}
	}()
	return encode(m)
}
