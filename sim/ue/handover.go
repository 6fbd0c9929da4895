package ue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
)

// Handover (TS 23.502 §4.9.1): the UE's connection moves to another gNB.
// The RAN does the work (a Mover: the gNB port); the UE is told where to
// go, waits, and afterwards, if the new cell's tracking area is not in its
// TAI list, runs a mobility registration update over the new connection
// (TS 24.501 §5.5.1.3.2 a). The procedure is the caller's: Handover
// returns once the UE is served by the target and registered there.

// HandoverKind is Xn or N2 handover.
type HandoverKind uint8

// Handover kinds.
const (
	HandoverXn HandoverKind = iota + 1 // Xn handover: the target sends Path Switch Request
	HandoverN2                         // N2 handover: Handover Required to Handover Notify
)

func (k HandoverKind) String() string {
	switch k {
	case HandoverXn:
		return "xn"
	case HandoverN2:
		return "n2"
	}
	return fmt.Sprintf("handover-kind-%d", uint8(k))
}

// Procedure names of the handovers (the Observer's).
const (
	// ProcHandoverXn runs from the target sending Path Switch Request to
	// the UE sending the Registration Complete of its mobility registration
	// update, or to the target receiving Path Switch Request Acknowledge
	// when the UE stays in its registration area.
	ProcHandoverXn = "handover-xn"
	// ProcHandoverN2 runs from the source sending Handover Required to the
	// UE sending the Registration Complete of its registration update at
	// the target (benchmarks.md), or to the target sending Handover Notify
	// when no registration is needed.
	ProcHandoverN2 = "handover-n2"
)

// Mover is a Link that hands the UE's connection to a neighbour gNB: a
// gnb.Port. Each method runs the RAN side of one handover from the
// caller's goroutine and returns once the UE is served by the target (the
// Link then sends through it) or the handover failed; start and end are
// the instants the window of ProcHandoverXn/N2 starts at and, without a
// registration update, ends at.
type Mover interface {
	HandoverXn(ctx context.Context, target uint32) (start, end time.Time, err error)
	HandoverN2(ctx context.Context, target uint32) (start, end time.Time, err error)
	// ServingTAI is the tracking area of the cell serving the UE.
	ServingTAI() identity.TAI
}

// Errors of the handover procedure.
var (
	ErrNoMover        = errors.New("ue: the link cannot hand the UE over (not a Mover)")
	ErrNotConnectedHO = errors.New("ue: handover needs a registered UE with a signalling connection")
)

// Handover moves the UE's connection to neighbour gNB target by Xn or N2
// handover; see ProcHandoverXn and ProcHandoverN2 for the window. Failures
// of the RAN part leave the UE where the Mover left it (on the source for
// a failed preparation or a cancel; released for a failed path switch).
func (u *UE) Handover(ctx context.Context, kind HandoverKind, target uint32) error {
	var k procKind
	switch kind {
	case HandoverXn:
		k = procHandoverXn
	case HandoverN2:
		k = procHandoverN2
	default:
		return fmt.Errorf("ue: handover kind %d", kind)
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	window, err := u.runHandover(ctx, k, target)
	return u.record(k, window, err)
}

func (u *UE) runHandover(ctx context.Context, k procKind, target uint32) (time.Duration, error) {
	u.mu.Lock()
	if err := u.waitAsyncLocked(ctx); err != nil {
		u.mu.Unlock()
		return 0, err
	}
	if u.busy || u.proc != procNone {
		u.mu.Unlock()
		return 0, ErrBusy
	}
	if u.link == nil {
		u.mu.Unlock()
		return 0, ErrNoLink
	}
	m, ok := u.link.(Mover)
	if !ok {
		u.mu.Unlock()
		return 0, ErrNoMover
	}
	if u.mm != mmRegistered || !u.connected || u.guti == nil {
		u.mu.Unlock()
		return 0, ErrNotConnectedHO
	}
	u.beginLocked(k)
	u.busy = true
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.busy = false
		u.mu.Unlock()
	}()

	last := m.ServingTAI()
	var start, end time.Time
	var err error
	if k == procHandoverXn {
		start, end, err = m.HandoverXn(ctx, target)
	} else {
		start, end, err = m.HandoverN2(ctx, target)
	}
	u.mu.Lock()
	if err != nil {
		if u.proc == k {
			u.proc = procNone
		} else {
			// The network ended the procedure meanwhile (a deregistration):
			// its outcome is not wanted.
			select {
			case <-u.done:
			default:
			}
		}
		if u.connected && u.mm == mmRegistered {
			u.armInactivityLocked()
		}
		u.mu.Unlock()
		return 0, err
	}
	u.stats.Handovers++
	u.procStart = start
	switch {
	case u.proc != k:
		// Ended meanwhile (a network deregistration): its outcome waits.
	case !u.connected:
		// Released during the move.
		u.proc = procNone
		u.mu.Unlock()
		return 0, ErrReleased
	case slices.Contains(u.taiList, m.ServingTAI()):
		u.finishLocked(end, nil)
	default:
		// TS 24.501 §5.5.1.3.2 a): the new TA is not in the registration
		// area.
		u.stats.MobilityUpdates++
		if err := u.mobilityUpdateLocked(last); err != nil {
			u.proc = procNone
			u.mu.Unlock()
			return 0, err
		}
	}
	u.mu.Unlock()
	return u.await(ctx, k)
}

// mobilityUpdateLocked sends the Registration Request of a mobility
// registration update on the connection the handover moved (TS 24.501
// §5.5.1.3.2): 5G-GUTI, the last visited registered TAI, the PDU session
// status; integrity protected and ciphered, the UE being connected
// (§4.4.6 applies to initial NAS messages).
func (u *UE) mobilityUpdateLocked(last identity.TAI) error {
	capab := u.secCap()
	status := u.sessionStatusLocked()
	req := nas.RegistrationRequest{
		RegistrationType:     nas.RegistrationMobilityUpdating,
		NgKSI:                nas.NgKSI{KSI: u.ksi},
		MobileIdentity:       nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti},
		UESecurityCapability: &capab,
		RequestedNSSAI:       u.cfg.RequestedNSSAI,
		LastVisitedTAI:       &last,
		PDUSessionStatus:     &status,
	}
	plain, err := nas.Encode(&req)
	if err != nil {
		return fmt.Errorf("encode registration request: %w", err)
	}
	u.hoRegistering = true
	u.mm = mmRegisteredInitiated
	u.initialPlain, u.initialProt = plain, true
	if _, err := u.sendLocked(&req); err != nil {
		// The send ended the procedure (its outcome is waiting); the
		// registration stands.
		u.hoRegistering = false
		u.mm = mmRegistered
	}
	return nil
}

// inRegistrationLocked reports whether a registration procedure runs: a
// registration, or the registration update of a handover.
func (u *UE) inRegistrationLocked() bool {
	return u.proc.registration() || (u.proc.handover() && u.hoRegistering)
}
