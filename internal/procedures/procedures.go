// Package procedures is how the NFs report the end of each UE procedure:
// its name, outcome and duration go to the NF's log and to an Observer
// (package metrics records them). The AMF and the SMF share it, so the
// outcomes mean the same everywhere.
package procedures

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Observer is told how each procedure ended and how long it ran. It is
// called on the UE's executor, so it must return at once: recording a
// sample (a histogram observation) is the intended cost.
type Observer interface {
	Procedure(name, outcome string, d time.Duration)
}

// Outcomes of a procedure.
const (
	Success  = "success"
	Rejected = "rejected" // the network said no (Reject, Failure message)
	Failure  = "failure"  // the peer did not do its part (handover failed at the target, paging unanswered)
	Timeout  = "timeout"  // the last retransmission went unanswered
	Aborted  = "aborted"  // superseded by another procedure, or the connection or context went away
)

// Outcomes lists every outcome.
var Outcomes = []string{Success, Rejected, Failure, Timeout, Aborted}

// Reporter is an NF's reporting of procedure ends: its Observer, set at
// any time. The zero value reports to the log only.
type Reporter struct {
	o atomic.Pointer[Observer]
}

// SetObserver sets the Observer (nil: none); safe to call at any time.
func (r *Reporter) SetObserver(o Observer) {
	if o == nil {
		r.o.Store(nil)
		return
	}
	r.o.Store(&o)
}

// Ended logs that procedure name, started at start, ended with outcome
// (attrs name the UE where log does not), and tells the Observer. The log
// level is checked first: building the line costs allocations a disabled
// level need not pay.
func (r *Reporter) Ended(log *slog.Logger, name, outcome string, start time.Time, attrs ...any) {
	d := time.Since(start)
	if log.Enabled(context.Background(), slog.LevelInfo) {
		log.Info("procedure ended", append([]any{"procedure", name, "outcome", outcome, "duration", d}, attrs...)...)
	}
	if p := r.o.Load(); p != nil {
		(*p).Procedure(name, outcome, d)
	}
}
