// Package shmsbi is the shared-memory binding of tern's service-based
// interface: NFs on one node exchange the operations of package sbi/ops
// through the rings of package sbi/shm, each message in the fixed,
// versioned binary layout of package sbi/wire. There is no HTTP and no
// JSON on this path (L25GC+'s X-IO still serializes HTTP/2+JSON and only
// moves the bytes through shared memory).
//
// A request is the operation's ID and its request message; the answer's
// status says how to read it: StatusOK is the response message, any other
// status an encoded error (a ProblemDetails, an SM context error with its
// binary parts, or an OAuth2 error), so that a consumer gets the very
// error value the in-process binding would have returned. A message that
// does not decode is answered StatusBadMessage and counted by the
// transport's peer; the ring stays usable.
package shmsbi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/shm"
	"github.com/tern5g/tern/sbi/wire"
)

// Statuses of an answer.
const (
	StatusOK         uint16 = 0 // the response message
	StatusError      uint16 = 1 // an encoded wireError
	StatusBadMessage uint16 = 2 // the request did not decode; the body is an encoded wireError
)

// wireError is an error in transit.
type wireError struct {
	Kind         uint8 // errProblem, errSM, errOAuth2
	Status       int
	Cause        string
	Detail       string
	N1SmMsg      []byte
	N2SmInfo     []byte
	N2SmInfoType string
	// InvalidParams of a ProblemDetails (TS 29.571), so that a consumer
	// learns the parameter at fault as over HTTP.
	InvalidParams []sbi.InvalidParam
}

const (
	errProblem uint8 = iota
	errSM
	errOAuth2
)

func toWire(err error) *wireError {
	var oe *sbi.OAuth2Error
	if errors.As(err, &oe) {
		return &wireError{Kind: errOAuth2, Status: oe.Status, Cause: oe.Code, Detail: oe.Description}
	}
	var se *sbi.SMContextError
	if errors.As(err, &se) && se.Problem != nil {
		return &wireError{Kind: errSM, Status: se.Problem.Status, Cause: se.Problem.Cause, Detail: se.Problem.Detail,
			N1SmMsg: se.N1SmMsg, N2SmInfo: se.N2SmInfo, N2SmInfoType: string(se.N2SmInfoType), InvalidParams: se.Problem.InvalidParams}
	}
	var pd *sbi.ProblemDetails
	if errors.As(err, &pd) {
		return &wireError{Kind: errProblem, Status: pd.Status, Cause: pd.Cause, Detail: pd.Detail, InvalidParams: pd.InvalidParams}
	}
	return &wireError{Kind: errProblem, Status: http.StatusInternalServerError, Cause: sbi.CauseSystemFailure, Detail: err.Error()}
}

func (w *wireError) err() error {
	switch w.Kind {
	case errOAuth2:
		return &sbi.OAuth2Error{Status: w.Status, Code: w.Cause, Description: w.Detail}
	case errSM:
		return &sbi.SMContextError{Problem: &sbi.ProblemDetails{Status: w.Status, Cause: w.Cause, Detail: w.Detail, InvalidParams: w.InvalidParams},
			N1SmMsg: w.N1SmMsg, N2SmInfo: w.N2SmInfo, N2SmInfoType: modelsN2SmInfoType(w.N2SmInfoType)}
	}
	return &sbi.ProblemDetails{Status: w.Status, Cause: w.Cause, Detail: w.Detail, InvalidParams: w.InvalidParams}
}

// Server serves producers' operations on a shared-memory pool.
type Server struct {
	srv       *shm.Server
	producers []any // by operation ID
	log       *slog.Logger
	// ctx is every call's context, cancelled by Close. The transport
	// carries no deadline; the producers bound their own onward calls.
	ctx    context.Context
	cancel context.CancelFunc
	// badMessages counts requests that did not decode (answered
	// StatusBadMessage, never served).
	badMessages atomic.Uint64
}

// Listen serves every operation one of producers implements under name
// (the NF's name, e.g. "smf") in cfg.Dir.
func Listen(cfg shm.Config, name string, log *slog.Logger, producers ...any) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{producers: make([]any, len(ops.All)+1), log: log}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, op := range ops.All {
		for _, p := range producers {
			if op.Serves(p) {
				s.producers[op.ID] = p
				break
			}
		}
	}
	srv, err := shm.Listen(cfg, name, s.handle)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("shmsbi: %w", err)
	}
	s.srv = srv
	return s, nil
}

// handle is the transport's handler: decode, serve, encode into resp.
func (s *Server) handle(id uint16, req []byte, resp []byte) (int, uint16) {
	op := ops.ByID(id)
	if op == nil || s.producers[id] == nil {
		return answerErr(resp, StatusError, sbi.NewProblem(http.StatusNotFound, sbi.CauseResourceURIStructureNotFound, "operation %d is not served here", id))
	}
	rq := op.NewRequest()
	if err := wire.Decode(req, rq); err != nil {
		s.badMessages.Add(1)
		return answerErr(resp, StatusBadMessage, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "%s: %v", op, err))
	}
	rs := op.NewResponse()
	if err := op.Serve(s.ctx, s.producers[id], rq, rs); err != nil {
		return answerErr(resp, StatusError, err)
	}
	out, err := wire.Append(resp[:0], rs)
	if err != nil || len(out) > len(resp) {
		return answerErr(resp, StatusError, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: answer does not fit a slot (%d bytes): %v", op, len(out), err))
	}
	if &out[0] != &resp[0] {
		copy(resp, out)
	}
	return len(out), StatusOK
}

func answerErr(resp []byte, status uint16, err error) (int, uint16) {
	out, e := wire.Append(resp[:0], toWire(err))
	if e != nil || len(out) > len(resp) {
		// Even the error does not fit (a huge detail): say so briefly.
		out, _ = wire.Append(resp[:0], &wireError{Status: http.StatusInternalServerError, Cause: sbi.CauseSystemFailure})
	}
	if len(out) > 0 && &out[0] != &resp[0] {
		copy(resp, out)
	}
	return len(out), status
}

// Stats are the transport's counters.
func (s *Server) Stats() shm.Stats { return s.srv.Stats() }

// BadMessages is how many requests did not decode.
func (s *Server) BadMessages() uint64 { return s.badMessages.Load() }

// Close stops serving.
func (s *Server) Close() error {
	s.cancel()
	return s.srv.Close()
}

// Caller is the binding's consumer side (ops.Caller) of one producer.
type Caller struct {
	c    *shm.Client
	bufs sync.Pool // *[]byte of the transport's largest message
}

var _ ops.Caller = (*Caller)(nil)

// Dial connects to the producer serving under name in cfg.Dir (it may
// start later: calls fail with shm.ErrPeerDown until it does).
func Dial(cfg shm.Config, name string) (*Caller, error) {
	c, err := shm.Dial(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("shmsbi: %w", err)
	}
	k := &Caller{c: c}
	k.bufs.New = func() any { b := make([]byte, 0, c.MaxMessage()); return &b }
	return k, nil
}

// Call implements ops.Caller.
func (k *Caller) Call(ctx context.Context, op *ops.Op, req, resp any) error {
	bp := k.bufs.Get().(*[]byte)
	defer k.bufs.Put(bp)
	msg, err := wire.Append((*bp)[:0], req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	ap := k.bufs.Get().(*[]byte)
	defer k.bufs.Put(ap)
	answer, status, err := k.c.Call(ctx, op.ID, msg, (*ap)[:0])
	*bp, *ap = msg[:0], answer[:0]
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if status == StatusOK {
		if err := wire.Decode(answer, resp); err != nil {
			return fmt.Errorf("%s: answer: %w", op, err)
		}
		return nil
	}
	var we wireError
	if err := wire.Decode(answer, &we); err != nil {
		return fmt.Errorf("%s: error answer (status %d): %w", op, status, err)
	}
	return we.err()
}

// Connected reports whether the producer is there.
func (k *Caller) Connected() bool { return k.c.Connected() }

// Stats are the transport's counters.
func (k *Caller) Stats() shm.Stats { return k.c.Stats() }

// Close disconnects.
func (k *Caller) Close() error { return k.c.Close() }

func modelsN2SmInfoType(s string) models.Smf_PDUSess_N2SmInfoType {
	return models.Smf_PDUSess_N2SmInfoType(s)
}
