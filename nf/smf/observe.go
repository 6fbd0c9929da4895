package smf

import (
	"context"
	"log/slog"
	"time"
)

// Observer is told how each PDU session establishment ended and how long
// it took, from CreateSMContext to the RAN's answer to the N2 setup. It is
// called on the SMF's goroutines and must return at once: recording a
// sample (a histogram observation) is the intended cost. Defined here,
// where it is consumed, so that whoever records (package metrics) depends
// on the SMF and not the other way round.
type Observer interface {
	Procedure(name, outcome string, d time.Duration)
}

// ProcPDUSessionEstablishment is the procedure name given to the Observer.
const ProcPDUSessionEstablishment = "pdu_session_establishment"

// Outcomes given to the Observer (the AMF's names).
const (
	OutcomeSuccess  = "success"
	OutcomeRejected = "rejected" // PDU Session Establishment Reject sent
	OutcomeAborted  = "aborted"  // the context was released while establishing
)

// SetObserver sets the Observer of PDU session establishments (nil: none);
// safe to call at any time.
func (s *SMF) SetObserver(o Observer) {
	if o == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&o)
}

// establishmentEnded reports the outcome of c's establishment once: later
// calls (the context released after a reject) find it reported.
func (s *SMF) establishmentEnded(c *smContext, outcome string) {
	if c.establishing.IsZero() {
		return
	}
	s.procedureEnded(c.supi, int32(c.psi), outcome, c.establishing)
	c.establishing = time.Time{}
}

// procedureEnded logs the outcome and tells the Observer.
func (s *SMF) procedureEnded(supi string, psi int32, outcome string, start time.Time) {
	d := time.Since(start)
	if s.log.Enabled(context.Background(), slog.LevelInfo) {
		s.log.Info("procedure ended", "procedure", ProcPDUSessionEstablishment, "outcome", outcome, "supi", supi, "psi", psi, "duration", d)
	}
	if p := s.observer.Load(); p != nil {
		(*p).Procedure(ProcPDUSessionEstablishment, outcome, d)
	}
}
