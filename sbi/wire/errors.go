package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds; every error of this package wraps one of them (errors.Is).
var (
	// ErrMalformed: the message is truncated, has trailing bytes or holds
	// a value its layout does not allow.
	ErrMalformed = errors.New("malformed message")
	// ErrLayoutMismatch: the message was written for another layout (a
	// different type, or the same type from another model version), or
	// names an interface type the decoding Codec does not know.
	ErrLayoutMismatch = errors.New("layout mismatch")
	// ErrUnsupported: the Go type (or a value in an interface) has no
	// layout, or the value nests deeper than MaxDepth.
	ErrUnsupported = errors.New("unsupported")
)

// pathError is an error found below the top-level value. The path is
// collected while the error travels up the recursion, so building it costs
// nothing on the success path.
type pathError struct {
	op     string   // "encode" or "decode"
	steps  []string // innermost first: ".Field", "[3]", "[key #2]", "(T)"
	offset int      // byte offset in the message, -1 when encoding
	msg    string
	kind   error
}

func (e *pathError) Error() string {
	var b strings.Builder
	b.WriteString("wire: ")
	b.WriteString(e.op)
	b.WriteByte(' ')
	for i := len(e.steps) - 1; i >= 0; i-- {
		b.WriteString(e.steps[i])
	}
	if e.offset >= 0 {
		fmt.Fprintf(&b, " at byte %d", e.offset)
	}
	b.WriteString(": ")
	b.WriteString(e.kind.Error())
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

func (e *pathError) Unwrap() error { return e.kind }

// at adds one step of the path (outermost steps are added last).
func at(err error, step string) error {
	var pe *pathError
	if errors.As(err, &pe) {
		pe.steps = append(pe.steps, step)
		return pe
	}
	return err
}

// atf is at with a formatted step; it is only called on the error path.
func atf(err error, format string, args ...any) error {
	return at(err, fmt.Sprintf(format, args...))
}
