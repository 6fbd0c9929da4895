package smf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/tern5g/tern/identity"
)

// This file is the SMF's read-only view of its PDU sessions for operators
// (`tern ue show`): the UE IP addresses and UPFs the AMF does not know. A
// session belongs to its UE's executor, so it is copied there, between two
// events; nothing here changes a session.

// SessionInfo is a snapshot of one PDU session (SM context).
type SessionInfo struct {
	SUPI string
	ID   uint8 // PDU session ID
	// Ref is the SM context reference the AMF holds.
	Ref    string
	DNN    string
	SNSSAI identity.SNSSAI
	// UEIP is the address allocated to the UE (invalid before it is).
	UEIP netip.Addr
	// State is the SM context's state: establishing, wait-n2-setup,
	// active, modifying or releasing.
	State string
	// UpCnx is the user-plane connection state (TS 29.502
	// UpCnxState: ACTIVATED, DEACTIVATED, ACTIVATING).
	UpCnx string
	// UPF is the name (smf.upfs) of the UPF anchoring the session, and
	// UPFN3 its N3 address; "" and invalid before one is selected.
	UPF   string
	UPFN3 netip.Addr
}

var errSnapshotClosed = errors.New("smf: closed")

// Sessions returns a snapshot of supi's PDU sessions, by ID; none when the
// SMF holds none. It fails with ctx's error when the UE's executor did not
// get to it before ctx ended.
func (s *SMF) Sessions(ctx context.Context, supi string) ([]SessionInfo, error) {
	// A state that leaves the table (its last session gone) hands later
	// work to a new one: look again, a few times at most.
	for range 3 {
		u := s.ues.Get(supi)
		if u == nil {
			return nil, nil
		}
		ch := make(chan sessionsSnapshot, 1)
		if !u.exec.Post(func() { ch <- u.snapshot() }) {
			return nil, errSnapshotClosed
		}
		select {
		case snap := <-ch:
			if snap.ok {
				return snap.sessions, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: sessions not read: the UE's executor is busy: %w", supi, ctx.Err())
		}
	}
	return nil, nil
}

// AllSessions returns a snapshot of every PDU session by SUPI, each UE's
// copied on its executor, in parallel. busy counts the UEs whose executor
// did not get to it before ctx ended, which are left out.
func (s *SMF) AllSessions(ctx context.Context) (bySUPI map[string][]SessionInfo, busy int, err error) {
	ues := s.ues.All()
	ch := make(chan sessionsSnapshot, len(ues))
	posted := 0
	for _, u := range ues {
		if u.exec.Post(func() { ch <- u.snapshot() }) {
			posted++
		}
	}
	if posted == 0 && len(ues) > 0 {
		return nil, 0, errSnapshotClosed
	}
	bySUPI, busy = gatherSessions(ctx, ch, posted)
	return bySUPI, busy, nil
}

// gatherSessions receives the posted snapshots from ch until ctx ends, and
// then those already there: a select that has both ready picks either, so
// without that last pass a deadline spent on one busy UE (or one already
// past) would drop snapshots the other executors had delivered. busy
// counts those that never came.
func gatherSessions(ctx context.Context, ch <-chan sessionsSnapshot, posted int) (bySUPI map[string][]SessionInfo, busy int) {
	bySUPI = make(map[string][]SessionInfo, posted)
	add := func(snap sessionsSnapshot) {
		// A state that left the table has no session left; its UE's new
		// one, if any, is in ues too or came after the call.
		if snap.ok && len(snap.sessions) > 0 {
			bySUPI[snap.sessions[0].SUPI] = snap.sessions
		}
	}
	for got := 0; got < posted; got++ {
		select {
		case snap := <-ch:
			add(snap)
		case <-ctx.Done():
			for ; got < posted; got++ {
				select {
				case snap := <-ch:
					add(snap)
				default:
					return bySUPI, posted - got
				}
			}
			return bySUPI, 0
		}
	}
	return bySUPI, 0
}

// sessionsSnapshot is one UE's copy: ok false for a state that had left
// the table before its executor got to it.
type sessionsSnapshot struct {
	sessions []SessionInfo
	ok       bool
}

// snapshot copies u's sessions. It runs on u's executor.
func (u *ueState) snapshot() sessionsSnapshot {
	if u.dead {
		return sessionsSnapshot{}
	}
	out := make([]SessionInfo, 0, len(u.sessions))
	for _, c := range u.sessions {
		if c.state == stReleased {
			continue
		}
		si := SessionInfo{SUPI: u.supi, ID: c.psi, Ref: c.ref, SNSSAI: c.slice, UEIP: c.ueIP,
			State: c.state.String(), UpCnx: string(c.upCnx)}
		if c.dnn != nil {
			si.DNN = c.dnn.name
		}
		if c.upf != nil {
			si.UPF, si.UPFN3 = c.upf.name, c.upf.n3
		}
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return int(a.ID) - int(b.ID) })
	return sessionsSnapshot{sessions: out, ok: true}
}
