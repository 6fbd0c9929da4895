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
// events; nothing here changes a session. The records of record.go are
// read the same way (readUE, readAll).

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
	sessions, _, err := readUE(ctx, s, supi, (*ueState).snapshot)
	if err != nil {
		return nil, fmt.Errorf("%s: sessions not read: %w", supi, err)
	}
	return sessions, nil
}

// AllSessions returns a snapshot of every PDU session by SUPI, each UE's
// copied on its executor, in parallel. busy counts the UEs whose executor
// did not get to it before ctx ended, which are left out.
func (s *SMF) AllSessions(ctx context.Context) (bySUPI map[string][]SessionInfo, busy int, err error) {
	bySUPI = make(map[string][]SessionInfo)
	busy, err = readAll(ctx, s, (*ueState).snapshot, func(sessions []SessionInfo) {
		if len(sessions) > 0 {
			bySUPI[sessions[0].SUPI] = sessions
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return bySUPI, busy, nil
}

// read is what a UE's executor read: ok false for a state that had left
// the table before its executor got to it.
type read[T any] struct {
	v  T
	ok bool
}

// readOn runs f on u's executor, between two events, and sends what it
// read to ch; false when the SMF is closed.
func readOn[T any](u *ueState, f func(*ueState) T, ch chan<- read[T]) bool {
	return u.exec.Post(func() {
		if u.dead {
			ch <- read[T]{}
			return
		}
		ch <- read[T]{f(u), true}
	})
}

// readUE runs f on the executor of supi's state and returns what it read;
// found false when the SMF holds no state for supi. It fails with ctx's
// error when the executor did not get to it before ctx ended. The
// snapshots (this file) and the records (record.go) read a UE this way.
func readUE[T any](ctx context.Context, s *SMF, supi string, f func(*ueState) T) (v T, found bool, err error) {
	// A state that leaves the table (its last session gone) hands later
	// work to a new one: look again, a few times at most.
	for range 3 {
		u := s.ues.Get(supi)
		if u == nil {
			return v, false, nil
		}
		ch := make(chan read[T], 1)
		if !readOn(u, f, ch) {
			return v, false, errSnapshotClosed
		}
		select {
		case r := <-ch:
			if r.ok {
				return r.v, true, nil
			}
		case <-ctx.Done():
			return v, false, fmt.Errorf("the UE's executor is busy: %w", ctx.Err())
		}
	}
	return v, false, nil
}

// readAll runs f on the executor of every UE, in parallel, and hands what
// each read to add, on the caller's goroutine. busy counts the UEs whose
// executor did not get to it before ctx ended, which are left out.
func readAll[T any](ctx context.Context, s *SMF, f func(*ueState) T, add func(T)) (busy int, err error) {
	ues := s.ues.All()
	ch := make(chan read[T], len(ues))
	posted := 0
	for _, u := range ues {
		if readOn(u, f, ch) {
			posted++
		}
	}
	if posted == 0 && len(ues) > 0 {
		return 0, errSnapshotClosed
	}
	// A state that left the table has no session left; its UE's new one,
	// if any, is in ues too or came after the call.
	return gather(ctx, ch, posted, func(r read[T]) {
		if r.ok {
			add(r.v)
		}
	}), nil
}

// gather receives the posted reads from ch until ctx ends, and then those
// already there: a select that has both ready picks either, so without
// that last pass a deadline spent on one busy UE (or one already past)
// would drop reads the other executors had delivered. busy counts those
// that never came.
func gather[T any](ctx context.Context, ch <-chan T, posted int, add func(T)) (busy int) {
	for got := 0; got < posted; got++ {
		select {
		case r := <-ch:
			add(r)
		case <-ctx.Done():
			for ; got < posted; got++ {
				select {
				case r := <-ch:
					add(r)
				default:
					return posted - got
				}
			}
			return 0
		}
	}
	return 0
}

// snapshot copies u's sessions. It runs on u's executor.
func (u *ueState) snapshot() []SessionInfo {
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
	return out
}
