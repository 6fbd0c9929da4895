package shm

import "errors"

var (
	// ErrPeerDown: the server is not running (not started yet, crashed or
	// closed), or it died while the call waited. The client reconnects by
	// itself once a server listens on the name again.
	ErrPeerDown = errors.New("shm: peer down")
	// ErrTooLarge: a request (or a handler's answer) does not fit in a slot.
	ErrTooLarge = errors.New("shm: message too large")
	// ErrTimeout: the call's context ended before the answer came. The error
	// also wraps the context's own error (context.DeadlineExceeded or
	// context.Canceled).
	ErrTimeout = errors.New("shm: call timed out")
	// ErrClosed: the Client or Server was closed.
	ErrClosed = errors.New("shm: closed")
)

// Record decoding errors, counted as Corrupt; never returned to callers.
var (
	errBadLength = errors.New("shm: record length out of range")
	errBadCheck  = errors.New("shm: record header check mismatch")
	errStaleGen  = errors.New("shm: record from another generation")
	errShort     = errors.New("shm: slot shorter than a record header")
)
