package amf

import (
	"context"
	"log/slog"
	"time"

	"github.com/tern5g/tern/internal/procedures"
)

// Procedure names given to the Observer and written in the procedure log
// lines.
const (
	ProcRegistration          = "registration"
	ProcServiceRequest        = "service_request"
	ProcPaging                = "paging"
	ProcHandover              = "handover"    // N2 handover, preparation and execution
	ProcPathSwitch            = "path_switch" // Xn handover
	ProcDeregistration        = "deregistration"
	ProcNetworkDeregistration = "network_deregistration"
)

// SetObserver sets the Observer of UE procedures (nil: none); safe to call
// at any time.
func (a *AMF) SetObserver(o procedures.Observer) { a.procs.SetObserver(o) }

// procName is the Observer's name of a procedure of the state machine.
func procName(p procedure) string {
	switch p {
	case procRegistration:
		return ProcRegistration
	case procServiceRequest:
		return ProcServiceRequest
	case procPaging:
		return ProcPaging
	case procHandoverPreparation, procHandoverExecution:
		return ProcHandover
	case procNetworkDeregistration:
		return ProcNetworkDeregistration
	}
	return ""
}

// trackProcedure follows the procedures through the state machine: ev moved
// u from procedure prev to u.st.proc. A procedure that ends is reported
// with the outcome its handler set (u.outcome) or, failing that, the one ev
// implies; a procedure that starts (or restarts) is timed from now. Doing
// it here, where every procedure change passes, means no ending path (a
// lost connection, a deleted context) goes unreported.
func (u *ue) trackProcedure(prev procedure, ev event) {
	cur := u.st.proc
	restart := ev == evRegistrationStart || ev == evServiceRequestStart
	if prev == procHandoverPreparation && cur == procHandoverExecution {
		return // one handover: the command does not end it
	}
	if prev != procNone && (cur != prev || restart) {
		o := u.outcome
		if o == "" {
			o = eventOutcome(prev, ev)
		}
		u.procedureEnded(procName(prev), o, u.procStart)
	}
	if cur != procNone && (cur != prev || restart) {
		u.procStart = u.exec.Now()
		u.logStarted(procName(cur))
	}
}

// eventOutcome is the outcome of procedure p ended by ev when its handler
// named none.
func eventOutcome(p procedure, ev event) string {
	switch ev {
	case evRegistrationComplete, evHandoverComplete:
		return procedures.Success
	case evServiceRequestEnd:
		return procedures.Success // rejectService and the abort paths say otherwise
	case evRegistrationStart, evServiceRequestStart:
		if p == procPaging {
			return procedures.Success // the paged UE answered (TS 23.502 §4.2.3.3 step 6)
		}
	case evPagingEnd:
		return procedures.Failure
	case evHandoverCancel:
		return procedures.Failure
	case evDeregistered:
		if p == procNetworkDeregistration {
			return procedures.Success
		}
	}
	return procedures.Aborted
}

// procedureEnded logs the outcome and tells the Observer.
func (u *ue) procedureEnded(name, outcome string, start time.Time) {
	u.amf.procs.Ended(u.log, name, outcome, start, u.unidentified()...)
}

// logStarted writes the start line of procedure name. The level is checked
// first: building the arguments costs allocations a disabled level need
// not pay.
func (u *ue) logStarted(name string) {
	if u.log.Enabled(context.Background(), slog.LevelInfo) {
		u.log.Info("procedure started", append([]any{"procedure", name}, u.unidentified()...)...)
	}
}

// unidentified names a UE whose SUPI is not known yet (a registration by
// SUCI) by its SUCI. Once the SUPI is known u.log carries it (setSUPI), so
// every line names the UE once.
func (u *ue) unidentified() []any {
	if u.supi != "" || u.suci == "" {
		return nil
	}
	return []any{"suci", u.suci}
}
