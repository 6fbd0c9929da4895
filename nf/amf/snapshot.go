package amf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
)

// This file is the AMF's read-only view of its UE contexts for operators
// (`tern ue list`, `tern ue show`). Every field of a UE context belongs to
// its executor, so a snapshot is taken there: a closure posted to the
// executor copies the context between two events, and the copy is what
// other goroutines see. Nothing here changes a context.

// UEInfo is a snapshot of one UE context, consistent with itself: it was
// copied on the UE's executor between two events.
type UEInfo struct {
	// SUPI is the subscriber; "" while a registration by SUCI has not
	// identified the UE yet (SUCI then says who it claims to be).
	SUPI string
	SUCI string
	// PEI is the IMEISV the UE gave in Security Mode Complete, "" before.
	PEI string
	// GUTI is the 5G-GUTI assigned to the UE (TS 23.003 §2.10); nil before
	// the first Registration Accept.
	GUTI *identity.GUTI

	// RM, CM and Procedure are the state of the UE state machine
	// (ue_state.go): RM-REGISTERED or RM-DEREGISTERED (TS 23.501 §5.3.2.2),
	// CM-CONNECTED or CM-IDLE (§5.3.3.2), and the procedure running, or
	// "none".
	RM, CM, Procedure string
	// Reachable is false once the mobile reachable timer of a CM-IDLE UE
	// has expired: it is not paged (TS 24.501 §5.3.7).
	Reachable bool

	// RAN is the serving N2 connection; nil exactly in CM-IDLE. Target is
	// the target connection of an N2 handover being prepared or executed.
	RAN, Target *RANLeg

	// RegistrationArea is the TAI list of the last Registration Accept;
	// AllowedNSSAI its allowed NSSAI (TS 24.501 §5.5.1.2.4).
	RegistrationArea []identity.TAI
	AllowedNSSAI     []identity.SNSSAI

	// Sessions are the PDU sessions the AMF holds for the UE (its PDU
	// session routing contexts, TS 23.502 §5.2.2.2.2), by ID.
	Sessions []PDUSessionInfo

	// LastActivity is when the AMF last accepted a 5GMM message from the
	// UE; zero if none yet.
	LastActivity time.Time
}

// RANLeg is one UE-associated logical NG-connection (TS 38.413 §3.1).
type RANLeg struct {
	// GNB is the gNB's Global RAN Node ID from NG Setup; GNBAddress the
	// remote address of its association, "" for a connection restored
	// from a record whose gNB has not connected to this instance.
	GNB        ngap.GlobalGNBID
	GNBAddress string
	// AMFUENGAPID and RANUENGAPID identify the connection (TS 38.413
	// §9.3.3.1, §9.3.3.2); RANUENGAPID is 0 for a handover target until
	// the target acknowledges.
	AMFUENGAPID, RANUENGAPID int64
	// State is the AMF's state of the connection: signalling, secured,
	// context, handover-preparing, handover-prepared or releasing.
	State string
	// TAI and Cell are the UE's last User Location Information on this
	// connection (TS 38.413 §9.3.1.16).
	TAI  identity.TAI
	Cell ngap.NRCGI
}

// PDUSessionInfo is the AMF's record of one PDU session.
type PDUSessionInfo struct {
	ID     uint8
	DNN    string
	SNSSAI identity.SNSSAI
	// SMContextRef is the SM context's reference at its SMF.
	SMContextRef string
	// UserPlane is the state of the session's N2 resources at the gNB:
	// none, activating, active or deactivated (CM-IDLE).
	UserPlane string
}

func (s upState) String() string {
	return [...]string{"none", "activating", "active", "deactivated"}[s]
}

// ErrNoUE is UE's answer for a SUPI the AMF holds no context for.
var ErrNoUE = errors.New("no UE context")

// errClosed answers snapshots asked of a closed AMF.
var errClosed = errors.New("amf: closed")

// UE returns a snapshot of the context of supi, ErrNoUE (wrapped) when the
// AMF holds none, or ctx's error when the UE's executor did not get to it
// before ctx ended (it is busy with an SBI call that waits for its
// deadline, for instance).
func (a *AMF) UE(ctx context.Context, supi string) (UEInfo, error) {
	u := a.supis.Get(supi)
	if u == nil {
		return UEInfo{}, fmt.Errorf("%s: %w", supi, ErrNoUE)
	}
	ch := make(chan taken[UEInfo], 1)
	if !u.exec.Post(func() { info, ok := u.snapshot(); ch <- taken[UEInfo]{info, ok} }) {
		return UEInfo{}, errClosed
	}
	select {
	case s := <-ch:
		// The context may have been deleted, or its SUPI moved to a new
		// context, after the lookup.
		if !s.ok || s.v.SUPI != supi {
			return UEInfo{}, fmt.Errorf("%s: %w", supi, ErrNoUE)
		}
		return s.v, nil
	case <-ctx.Done():
		return UEInfo{}, fmt.Errorf("%s: snapshot not taken: the UE's executor is busy: %w", supi, ctx.Err())
	}
}

// UEs returns a snapshot of every UE context, sorted by SUPI (those not
// identified yet last, by SUCI). The snapshots are taken on the UEs'
// executors in parallel; busy counts the UEs whose executor did not get to
// it before ctx ended, which are left out.
func (a *AMF) UEs(ctx context.Context) (ues []UEInfo, busy int, err error) {
	ues, busy, err = onEveryUE(ctx, a, (*ue).snapshot)
	return sortUEs(ues), busy, err
}

// allUEs lists every UE context once. Every context is in the SUPI table
// once identified; one that is not yet (a registration by SUCI) has a
// connection.
func (a *AMF) allUEs() []*ue {
	seen := map[*ue]bool{}
	var all []*ue
	for _, u := range a.supis.All() {
		if !seen[u] {
			seen[u] = true
			all = append(all, u)
		}
	}
	for _, r := range a.ranUEs.All() {
		if u := r.ue; !seen[u] {
			seen[u] = true
			all = append(all, u)
		}
	}
	return all
}

// taken is what one UE's executor copied: ok false for a context that was
// deleted before its executor got to it.
type taken[T any] struct {
	v  T
	ok bool
}

// onEveryUE runs take on the executor of every UE context, in parallel
// (the operator's snapshots, the records of record.go), and gathers what
// they copied until ctx ends; busy counts the executors that did not get
// to it by then.
func onEveryUE[T any](ctx context.Context, a *AMF, take func(u *ue) (T, bool)) (out []T, busy int, err error) {
	all := a.allUEs()
	ch := make(chan taken[T], len(all))
	posted := 0
	for _, u := range all {
		if u.exec.Post(func() { v, ok := take(u); ch <- taken[T]{v, ok} }) {
			posted++
		}
	}
	if posted == 0 && len(all) > 0 {
		return nil, 0, errClosed
	}
	out, busy = gather(ctx, ch, posted)
	return out, busy, nil
}

// gather receives the posted copies from ch until ctx ends, and then
// those already there: a select that has both ready picks either, so
// without that last pass a deadline spent on one busy UE (or one already
// past) would drop copies the other executors had delivered. busy counts
// those that never came.
func gather[T any](ctx context.Context, ch <-chan taken[T], posted int) (out []T, busy int) {
	add := func(s taken[T]) {
		if s.ok {
			out = append(out, s.v)
		}
	}
	for got := 0; got < posted; got++ {
		select {
		case s := <-ch:
			add(s)
		case <-ctx.Done():
			for ; got < posted; got++ {
				select {
				case s := <-ch:
					add(s)
				default:
					return out, posted - got
				}
			}
			return out, 0
		}
	}
	return out, 0
}

func sortUEs(ues []UEInfo) []UEInfo {
	slices.SortFunc(ues, func(x, y UEInfo) int {
		if (x.SUPI == "") != (y.SUPI == "") {
			if x.SUPI == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(x.SUPI, y.SUPI), cmp.Compare(x.SUCI, y.SUCI))
	})
	return ues
}

// snapshot copies u; false for a deleted context. It runs on u's executor.
func (u *ue) snapshot() (UEInfo, bool) {
	if u.gone() {
		return UEInfo{}, false
	}
	info := UEInfo{
		SUPI:             u.supi,
		PEI:              u.pei,
		RM:               u.st.rm.String(),
		CM:               u.st.cm.String(),
		Procedure:        u.st.proc.String(),
		Reachable:        u.reachable,
		RAN:              u.ran.leg(),
		Target:           u.target.leg(),
		RegistrationArea: slices.Clone(u.taiList),
		AllowedNSSAI:     slices.Clone(u.allowedNSSAI),
		LastActivity:     u.lastActivity,
	}
	if u.supi == "" {
		info.SUCI = u.suci
	}
	if u.guti != nil {
		g := *u.guti
		info.GUTI = &g
	}
	for _, id := range u.sessionIDs() {
		s := u.sessions[id]
		info.Sessions = append(info.Sessions, PDUSessionInfo{ID: s.id, DNN: s.dnn, SNSSAI: s.snssai,
			SMContextRef: s.ref, UserPlane: s.up.String()})
	}
	return info, true
}

// leg copies r (nil: nil). It runs on the executor of r's UE.
func (r *ranUE) leg() *RANLeg {
	if r == nil {
		return nil
	}
	l := &RANLeg{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, State: r.state.String(), TAI: r.tai, Cell: r.loc.NRCGI}
	if c := r.gnb.conn(); c != nil {
		l.GNBAddress = c.RemoteAddr().String()
	}
	if n := r.gnb.node.Load(); n != nil {
		l.GNB = n.id
	}
	return l
}
