package amf

import (
	"fmt"
	"strings"
)

// The AMF's state of one UE, in one place.
//
// A UE context is in one RM state and one CM state (TS 23.501 §5.3.2.2,
// §5.3.3.2) and runs at most one procedure that spans several messages.
// Everything the AMF does to a UE moves it through the table below by an
// event; a (state, event) pair that the table does not list is refused, and
// the caller answers the way the spec says for a message not compatible with
// the state. Nothing else records where a UE is: no flag elsewhere implies a
// state.
//
// What the states mean:
//
//   - RM-DEREGISTERED: no registration accepted yet (or it ended). The
//     context exists while a registration is running.
//   - RM-REGISTERED: Registration Complete received; the UE has a 5G-GUTI,
//     a NAS security context and a registration area (TAI list).
//   - gone is not a TS 23.501 state: the context has been deleted from the
//     AMF's tables. A late event for it (a timer, an SBI answer, a message
//     queued before the deletion) finds it here and is dropped.
//   - CM-CONNECTED: the UE has an N2 connection (a UE-associated logical
//     NG-connection, ue.ran); CM-IDLE: it has none. A deleted context stays
//     connected until the gNB confirms the release of its connection.
//
// The procedures (TS 23.502 §4.2, §4.9):
//
//   - registration: initial, mobility or periodic registration (§4.2.2.2),
//     with its common procedures (identification, authentication, security
//     mode control) as steps inside it (ue.common).
//   - service request: §4.2.3.2, UE-triggered or in answer to paging.
//   - paging: §4.2.3.3, Paging sent to the registration area, T3513 running.
//   - handover preparation: §4.9.1.3.2, Handover Request sent to the target.
//   - handover execution: §4.9.1.3.3, Handover Command sent to the source,
//     Handover Notify awaited.
//   - network deregistration: §4.2.2.3.3, Deregistration Request sent, T3522.
//
// UE-initiated deregistration and the Xn path switch (§4.9.1.2) have no
// waiting state on the network side: each runs within one event.

// rmState is the registration management state (TS 23.501 §5.3.2.2).
type rmState uint8

const (
	rmDeregistered rmState = iota // RM-DEREGISTERED
	rmRegistered                  // RM-REGISTERED
	rmGone                        // context deleted (not a TS 23.501 state)
	numRMStates
)

func (s rmState) String() string {
	return [...]string{"RM-DEREGISTERED", "RM-REGISTERED", "GONE"}[s]
}

// cmState is the connection management state (TS 23.501 §5.3.3.2).
type cmState uint8

const (
	cmIdle      cmState = iota // CM-IDLE
	cmConnected                // CM-CONNECTED
	numCMStates
)

func (s cmState) String() string { return [...]string{"CM-IDLE", "CM-CONNECTED"}[s] }

// procedure is the multi-message procedure the UE is in.
type procedure uint8

const (
	procNone procedure = iota
	procRegistration
	procServiceRequest
	procPaging
	procHandoverPreparation
	procHandoverExecution
	procNetworkDeregistration
	numProcedures
)

func (p procedure) String() string {
	return [...]string{"none", "registration", "service-request", "paging",
		"handover-preparation", "handover-execution", "network-deregistration"}[p]
}

// ueState is a UE's state: the only record of where the UE is.
type ueState struct {
	rm   rmState
	cm   cmState
	proc procedure
}

func (s ueState) String() string { return fmt.Sprintf("%s/%s/%s", s.rm, s.cm, s.proc) }

// event is something that moves a UE through the table.
type event uint8

const (
	// evConnect: an N2 connection becomes the UE's (Initial UE Message,
	// Path Switch Request, Handover Notify). A connected UE may get a new
	// one (the old one is released).
	evConnect event = iota
	// evDisconnect: the UE's N2 connection is gone (UE Context Release,
	// association loss). Procedures that need the connection end with it.
	evDisconnect
	evRegistrationStart    // Registration Request accepted for processing
	evRegistrationComplete // Registration Complete received
	evRegistrationEnd      // registration rejected or aborted
	evServiceRequestStart  // Service Request accepted for processing
	evServiceRequestEnd    // Service Accept sent or Service Reject sent
	evPagingStart          // Paging sent
	evPagingEnd            // T3513 exhausted (the UE did not answer)
	evHandoverStart        // Handover Request sent to the target
	evHandoverCommand      // Handover Command sent to the source
	evHandoverComplete     // Handover Notify received
	evHandoverCancel       // preparation failed, cancelled, or timed out
	evDeregistrationStart  // network: Deregistration Request sent
	evDeregistered         // the registration ends (any way)
	evRemove               // the context is deleted
	numEvents
)

func (e event) String() string {
	return [...]string{"connect", "disconnect", "registration-start", "registration-complete",
		"registration-end", "service-request-start", "service-request-end", "paging-start",
		"paging-end", "handover-start", "handover-command", "handover-complete",
		"handover-cancel", "deregistration-start", "deregistered", "remove"}[e]
}

// Sets of states a rule applies to; a zero set means "any".
type (
	rmSet   uint8
	cmSet   uint8
	procSet uint16
)

func rms(s ...rmState) rmSet {
	var m rmSet
	for _, x := range s {
		m |= 1 << x
	}
	return m
}

func cms(s ...cmState) cmSet {
	var m cmSet
	for _, x := range s {
		m |= 1 << x
	}
	return m
}

func procs(s ...procedure) procSet {
	var m procSet
	for _, x := range s {
		m |= 1 << x
	}
	return m
}

var (
	alive     = rms(rmDeregistered, rmRegistered)
	anyCM     = cms(cmIdle, cmConnected)
	anyProc   = procSet(1<<numProcedures - 1)
	handovers = procs(procHandoverPreparation, procHandoverExecution)
)

// keep in a rule's result: the field does not change.
const keep = 0xff

// rule is one row of the table: from the states in the sets, the event
// moves the UE to the given RM, CM and procedure (keep: unchanged).
type rule struct {
	ev   event
	rm   rmSet
	cm   cmSet
	proc procSet
	to   ueState
}

func to(rm rmState, cm cmState, p procedure) ueState { return ueState{rm, cm, p} }

// transitions is the whole state machine. Where a procedure may be
// interrupted by another message, the handler of that message first ends
// the running procedure with its own event (e.g. a Registration Request
// during a handover cancels the handover: evHandoverCancel, then
// evRegistrationStart), so every row here is one step of one procedure.
var transitions = []rule{
	// Connection management (TS 23.501 §5.3.3). Paging continues until a
	// Service Request (or another initial NAS message) is accepted.
	{evConnect, alive, anyCM, procs(procNone, procRegistration), to(keep, cmConnected, keep)},
	{evConnect, rms(rmRegistered), anyCM, procs(procPaging, procServiceRequest, procNetworkDeregistration), to(keep, cmConnected, keep)},
	{evConnect, rms(rmRegistered), cms(cmConnected), handovers, to(keep, cmConnected, keep)},
	// TS 24.501 §5.5.1.2.8 a), §5.6.1.7 a), TS 23.502 §4.9.1.3.5: the
	// procedures that need the connection end with it.
	{evDisconnect, alive, cms(cmConnected), procs(procNone, procPaging), to(keep, cmIdle, keep)},
	{evDisconnect, alive, cms(cmConnected), procs(procRegistration, procServiceRequest, procNetworkDeregistration,
		procHandoverPreparation, procHandoverExecution), to(keep, cmIdle, procNone)},
	// A deleted context's connection lasts until UE Context Release
	// Complete (TS 38.413 §8.3.3).
	{evDisconnect, rms(rmGone), cms(cmConnected), procs(procNone), to(keep, cmIdle, keep)},

	// Registration (TS 23.502 §4.2.2.2, TS 24.501 §5.5.1): a new Registration
	// Request restarts a running registration (§5.5.1.2.8 e), f)) and ends
	// paging or a service request the UE answered with it (§5.6.2.2.1).
	{evRegistrationStart, alive, cms(cmConnected), procs(procNone, procRegistration, procPaging, procServiceRequest), to(keep, keep, procRegistration)},
	{evRegistrationComplete, alive, cms(cmConnected), procs(procRegistration), to(rmRegistered, keep, procNone)},
	{evRegistrationEnd, alive, anyCM, procs(procRegistration), to(keep, keep, procNone)},

	// Service request (TS 23.502 §4.2.3.2, TS 24.501 §5.6.1): only a
	// registered UE; it ends paging (§4.2.3.3 step 6).
	{evServiceRequestStart, rms(rmRegistered), cms(cmConnected), procs(procNone, procPaging, procServiceRequest), to(keep, keep, procServiceRequest)},
	{evServiceRequestEnd, rms(rmRegistered), anyCM, procs(procServiceRequest), to(keep, keep, procNone)},

	// Paging (TS 23.502 §4.2.3.3): a registered UE in CM-IDLE.
	{evPagingStart, rms(rmRegistered), cms(cmIdle), procs(procNone), to(keep, keep, procPaging)},
	{evPagingEnd, rms(rmRegistered), anyCM, procs(procPaging), to(keep, keep, procNone)},

	// N2 handover (TS 23.502 §4.9.1.3): a registered, connected UE with no
	// other procedure running.
	{evHandoverStart, rms(rmRegistered), cms(cmConnected), procs(procNone), to(keep, keep, procHandoverPreparation)},
	{evHandoverCommand, rms(rmRegistered), cms(cmConnected), procs(procHandoverPreparation), to(keep, keep, procHandoverExecution)},
	{evHandoverComplete, rms(rmRegistered), cms(cmConnected), procs(procHandoverExecution), to(keep, keep, procNone)},
	{evHandoverCancel, rms(rmRegistered), anyCM, handovers, to(keep, keep, procNone)},

	// Deregistration (TS 23.502 §4.2.2.3). The network-initiated one waits
	// for the UE's accept; every way a registration ends is evDeregistered.
	{evDeregistrationStart, rms(rmRegistered), cms(cmConnected), procs(procNone), to(keep, keep, procNetworkDeregistration)},
	{evDeregistered, alive, anyCM, anyProc, to(rmDeregistered, keep, procNone)},
	{evRemove, rms(rmDeregistered), anyCM, anyProc, to(rmGone, keep, procNone)},
}

// next returns the state event ev leads to from s, or false when the table
// does not allow ev in s.
func next(s ueState, ev event) (ueState, bool) {
	for _, r := range transitions {
		if r.ev != ev || r.rm&(1<<s.rm) == 0 || r.cm&(1<<s.cm) == 0 || r.proc&(1<<s.proc) == 0 {
			continue
		}
		n := s
		if r.to.rm != keep {
			n.rm = r.to.rm
		}
		if r.to.cm != keep {
			n.cm = r.to.cm
		}
		if r.to.proc != keep {
			n.proc = r.to.proc
		}
		return n, true
	}
	return s, false
}

// describeTransitions lists every allowed (state, event) -> state, one per
// line, in a fixed order: the table as a reader (and the golden test) sees it.
func describeTransitions() string {
	var b strings.Builder
	for rm := range numRMStates {
		for cm := range numCMStates {
			for p := range numProcedures {
				s := ueState{rm, cm, p}
				for ev := range numEvents {
					if n, ok := next(s, ev); ok {
						fmt.Fprintf(&b, "%-44s %-22s -> %s\n", s, ev, n)
					}
				}
			}
		}
	}
	return b.String()
}
