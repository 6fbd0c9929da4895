package smf

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// PDU session establishments that wait for a UPF.
//
// An establishment needs a UPF serving its DNN that is up. When the UPF
// it was sent to turns out to have lost its association (it answers "No
// established PFCP Association", so it most likely restarted since the
// last heartbeat) or does not answer, that UPF is passed over for this
// establishment until it has associated again (avoid): the establishment
// goes at once to another UPF serving the DNN, if one is up. When none is
// (the only one is restoring its sessions after a restart, TS 23.527
// §4.3.2, or not answering), the establishment waits rather than fail to
// the UE: it is sent again as soon as a UPF serving its DNN is up, and
// rejected with 5GSM #26 only when Timers.UPFWait has passed since the
// request, or when more than maxWaiting establishments already wait.
// Each attempt after the first ends by then (establishmentTimeout). So a
// UPF that keeps refusing gets one request per establishment and
// association, not a retry loop.

// avoidedUPF is a UPF that failed an establishment, and its association
// epoch then.
type avoidedUPF struct {
	upf   *upfNode
	epoch uint64
}

// avoids tells whether u is in avoid and has not associated since.
func avoids(avoid []avoidedUPF, u *upfNode) bool {
	for _, a := range avoid {
		if a.upf == u && a.epoch == u.epoch.Load() {
			return true
		}
	}
	return false
}

// maxWaiting bounds the establishments waiting for a UPF at once: beyond
// it they are rejected at once, as without waiting. A restart of a busy
// UPF sees a few thousand requests in the UPFWait of its restoration.
const maxWaiting = 4096

// waitList is the establishments waiting for a UPF to come up. It is
// shared by every UE (a UPF's supervisor wakes them): a mutex guards it;
// each context's own fields stay with its executor.
type waitList struct {
	mu sync.Mutex
	m  map[*smContext]struct{}
}

// add puts c on the list; false when the list is full.
func (w *waitList) add(c *smContext) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) >= maxWaiting {
		return false
	}
	if w.m == nil {
		w.m = make(map[*smContext]struct{})
	}
	w.m[c] = struct{}{}
	return true
}

// take removes c; false when it was not there (another wake-up took it).
func (w *waitList) take(c *smContext) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[c]
	delete(w.m, c)
	return ok
}

// takeAll removes and returns the contexts match accepts.
func (w *waitList) takeAll(match func(*smContext) bool) []*smContext {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*smContext
	for c := range w.m {
		if match(c) {
			out = append(out, c)
			delete(w.m, c)
		}
	}
	return out
}

func (w *waitList) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// errNoUPF is why an establishment that waited for a UPF in vain fails.
var errNoUPF = errors.New("no UPF serving the DNN came up in time")

// canWait tells whether a new establishment may wait for a UPF.
func (s *SMF) canWait() bool { return s.waiting.len() < maxWaiting }

// waitsForUPF tells whether the N4 failure err of an establishment is
// one that another UPF, or the same one once associated again, may cure:
// the UPF did not answer, answered that it has no association with the
// SMF (it restarted; its supervisor is woken by runEstablishment), or its
// life ended before the request went. Other rejections and malformed
// answers fail the establishment at once.
func waitsForUPF(err error) bool {
	var rej *n4Rejection
	if errors.As(err, &rej) {
		return lostAssociation(rej.cause)
	}
	return errors.Is(err, errNoAnswer) || errors.Is(err, errLifeEnded)
}

// upfFor is the UPF c's establishment may go to now, nil for none: the
// one an unanswered request of a dead instance may have reached, in that
// life, when c.asked says so (only that one may answer with the session
// it holds, and no other may get a second); else the least loaded one up
// that c does not avoid (selectUPF).
func (s *SMF) upfFor(c *smContext) *upfNode {
	if c.asked != nil && !c.asked.ended() {
		if c.upf.serving() {
			return c.upf
		}
		return nil
	}
	if c.upf != nil && c.upf.serving() {
		return c.upf
	}
	return selectUPF(c.dnn, c.avoid)
}

// waitLeft is what is left of c's wait for a UPF (Timers.UPFWait from its
// request).
func (s *SMF) waitLeft(c *smContext) time.Duration {
	return time.Until(c.establishing.Add(s.cfg.timers.UPFWait))
}

// holdEstablishment sends c to another UPF serving its DNN, if one is up
// and not in c.avoid, or makes it wait for one (why says for what); it
// fails c when its time is up or too many wait. Runs on c's executor.
func (s *SMF) holdEstablishment(c *smContext, why error) {
	left := s.waitLeft(c)
	if left <= 0 {
		s.failEstablishment(c, fmt.Errorf("%w (%v after the request): %w", errNoUPF, s.cfg.timers.UPFWait, why))
		return
	}
	c.waited = true
	if s.upfFor(c) != nil {
		s.post(c.ue, func() { s.completeEstablishment(c) })
		return
	}
	if !s.waiting.add(c) {
		s.failEstablishment(c, fmt.Errorf("%d establishments already wait for a UPF: %w", maxWaiting, why))
		return
	}
	if !c.held {
		s.stats.establishmentsHeld.Add(1)
		s.log.Info("PDU session establishment waits for a UPF", "supi", c.supi, "psi", c.psi, "dnn", c.dnn.name,
			"for", left.Round(time.Millisecond), "why", why)
	}
	c.held = true
	c.holdWhy = why.Error()
	c.holdTimer.Start(&c.ue.exec, left, func() { s.waitEnded(c) })
	// A UPF that came up between the failure and now woke the list
	// without c.
	if s.upfFor(c) != nil && s.waiting.take(c) {
		s.post(c.ue, func() { s.retryEstablishment(c) })
	}
}

// waitEnded fails c's establishment when its wait for a UPF ends
// (holdTimer, Timers.UPFWait after the request) and no wake-up took it.
// Runs on c's executor, a step of its own.
func (s *SMF) waitEnded(c *smContext) {
	if c.held && s.waiting.take(c) {
		c.held = false
		s.failEstablishment(c, fmt.Errorf("%w (%v after the request): %s", errNoUPF, s.cfg.timers.UPFWait, c.holdWhy))
	}
	s.endStep(c.ue)
}

// wakeWaiting sends again the establishments waiting for a UPF that u,
// now up, serves.
func (s *SMF) wakeWaiting(u *upfNode) {
	for _, c := range s.waiting.takeAll(func(c *smContext) bool { return c.dnn.servedBy(u) }) {
		s.post(c.ue, func() { s.retryEstablishment(c) })
	}
}

// retryEstablishment runs a waiting establishment again, taken off the
// list by a wake-up. Runs on c's executor.
func (s *SMF) retryEstablishment(c *smContext) {
	if !c.held {
		return // its wait ended meanwhile
	}
	c.held = false
	c.holdWhy = ""
	c.holdTimer.Stop()
	s.completeEstablishment(c)
}

// unhold ends c's wait, if any (c goes). Runs on c's executor.
func (s *SMF) unhold(c *smContext) {
	if c.held {
		c.held = false
		s.waiting.take(c)
	}
	c.holdWhy = ""
	c.holdTimer.Stop()
}

// servedBy tells whether u serves d.
func (d *dnnConf) servedBy(u *upfNode) bool { return slices.Contains(d.upfs, u) }
