package amf

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// ResumeConn serves c, an association that the gNB set up with a previous
// unit and that an N2 front end hands over after a failover (issue 36 §3,
// docs/resiliency.md), with ngSetupRequest, the NG Setup Request the front
// end logged for it. The gNB keeps its association and its UE NGAP IDs:
// no NG Setup (or NG Reset) happens on it again.
//
// The gNB's context is built from the request as NG Setup builds it (TS
// 38.413 §8.7.1.2: the same checks, served TAs and slices, and an older
// association of the same node is replaced), but no NG Setup Response is
// sent: the gNB had its answer from the previous unit. The RAN legs of
// restored UE contexts (Restore) kept detached on the request's Global
// RAN Node ID are bound to c with their NGAP IDs unchanged: their downlink
// (NAS, paging, PDU session resources, ...) goes out on c, and the gNB's
// uplink UE-associated messages find them. Then c is served as ServeConn
// serves an association.
//
// A request that does not decode, is no NG Setup Request or fails NG
// Setup's checks is refused with an error; c is then left untouched (not
// served, not closed, nothing sent). On success the AMF owns c.
func (a *AMF) ResumeConn(c sctp.Conn, ngSetupRequest []byte) error {
	if a.group.Closed() {
		return errClosed
	}
	msg, err := ngap.Decode(ngSetupRequest)
	if err != nil {
		return fmt.Errorf("amf resume: NG Setup Request: %w", err)
	}
	req, ok := msg.(*ngap.NGSetupRequest)
	if !ok {
		return fmt.Errorf("amf resume: %T is no NG Setup Request", msg)
	}
	served, cause := a.servedTAIs(req.SupportedTAs)
	if cause != nil {
		return fmt.Errorf("amf resume: NG Setup of gNB %d would be refused: %s", req.GlobalRANNodeID.GNBID, cause)
	}
	id := req.GlobalRANNodeID

	// The detached gNB of restored legs becomes the association's gNB:
	// the legs point to it already, so binding it binds them all, without
	// touching a leg that a UE's executor may be using. Its logger stays
	// the one made at Restore (UE executors read it); it names the node.
	a.mu.Lock()
	g := a.detached[id]
	delete(a.detached, id)
	a.mu.Unlock()
	if g == nil {
		g = &gnb{amf: a, ues: make(map[int64]*ranUE), log: a.log.With("gnb", c.RemoteAddr().String(), "gnb_id", id.GNBID)}
	}
	for _, old := range a.gnbsOf(id) {
		// As NG Setup does (TS 38.413 §8.7.1.2): the node's older
		// association goes.
		if a.retireGNB(old) {
			old.log.Info("association replaced by a resumed one of the same node", "gnb_id", id.GNBID)
			if !a.group.Go(func() { old.conn().Close() }) {
				old.conn().Close()
			}
		}
	}
	g.node.Store(&gnbNode{id: id, tais: served})
	// What restored steps sent to the gNB meanwhile goes first.
	g.attach(c)
	g.mu.Lock()
	g.dead = false
	g.mu.Unlock()
	g.setupDone.Store(true)
	// The timers of the legs bound now run from here on, before the
	// front end's replay reaches the UEs' executors.
	g.releaseHeldTimers()
	a.stats.gnbs.Add(1)
	a.mu.Lock()
	a.gnbs[g] = struct{}{}
	a.mu.Unlock()
	if !a.group.Go(func() { a.serveGNB(g) }) {
		// Closed meanwhile: as ServeConn, the AMF owned c already.
		a.retireGNB(g)
		c.Close()
		return errClosed
	}
	g.log.Info("association resumed from a front end", "name", req.RANNodeName, "tais", len(served))
	return nil
}

// ResumeDone tells the AMF that the N2 front end has opened every
// association it will resume (its marker after the opens, issue 36 §3):
// the restored connections of a gNB that was not resumed (its association
// ended while no unit served it, or ResumeConn refused it) will never be
// bound. Each is lost as on an association that went down (TS 23.502
// §4.2.6, the AN release is implicit; the UE is CM-IDLE and comes back
// with a Service Request or a registration), after its context's restored
// timers are armed, so that the loss handling finds the procedures as a
// live AMF would. Call it after Restore and the ResumeConn calls of the
// opens; a later gNB of the same node connects with NG Setup.
func (a *AMF) ResumeDone() {
	a.mu.Lock()
	gs := make([]*gnb, 0, len(a.detached))
	for _, g := range a.detached {
		gs = append(gs, g)
	}
	a.detached = nil
	a.mu.Unlock()
	slices.SortFunc(gs, func(x, y *gnb) int { return cmp.Compare(x.node.Load().id.GNBID, y.node.Load().id.GNBID) })
	for _, g := range gs {
		g.giveUp()
		g.releaseHeldTimers()
		rs := a.connectionsOf(g)
		if len(rs) > 0 {
			g.log.Warn("gNB not resumed by the front end: its restored connections are lost", "connections", len(rs))
		}
		a.loseConnections(rs)
	}
}

// heldTimers are the restored timers of a context held by holdTimers.
type heldTimers struct {
	nas                NASTimerRecord
	reachability, hand time.Time
}

// holdTimers keeps the timers of a context Restore builds from rec until
// the gNBs of its serving and target legs are resumed: a NAS
// retransmission or a handover guard that expired on a detached gNB would
// use up a send (or abort the procedure) on a gNB that cannot take it.
// The records of the context show the held timers meanwhile, so that a
// second takeover keeps them. It runs in Restore, before u's executor
// runs anything; it reports whether it held them.
func (u *ue) holdTimers(rec *UERecord) bool {
	var gs []*gnb
	for _, r := range []*ranUE{u.ran, u.target} {
		if r != nil && r.gnb.conn() == nil && !slices.Contains(gs, r.gnb) {
			gs = append(gs, r.gnb)
		}
	}
	if len(gs) == 0 {
		return false
	}
	u.heldTimers = &heldTimers{nas: rec.NASTimer, reachability: rec.ReachabilityDeadline, hand: rec.HandoverDeadline}
	u.heldTimers.nas.Message = bytes.Clone(rec.NASTimer.Message)
	u.heldFor = len(gs)
	for _, g := range gs {
		g.mu.Lock()
		g.heldTimers = append(g.heldTimers, u)
		g.mu.Unlock()
	}
	return true
}

// releaseHeldTimers tells the contexts whose timers wait for g that g is
// resumed (or given up).
func (g *gnb) releaseHeldTimers() {
	g.mu.Lock()
	us := g.heldTimers
	g.heldTimers = nil
	g.mu.Unlock()
	for _, u := range us {
		u.exec.Post(u.gnbResumed)
	}
}

// gnbResumed arms u's held timers once none of its legs' gNBs is detached
// any more. It runs on u's executor.
func (u *ue) gnbResumed() {
	if u.heldFor--; u.heldFor > 0 || u.heldTimers == nil {
		return
	}
	h := u.heldTimers
	u.heldTimers = nil
	if !u.gone() {
		u.resumeTimers(&UERecord{NASTimer: h.nas, ReachabilityDeadline: h.reachability, HandoverDeadline: h.hand})
	}
}

// dropHeldNASTimer forgets a held NAS timer: a step started or stopped
// the NAS timer before the gNB was resumed, so the restored one is over.
func (u *ue) dropHeldNASTimer() {
	if u.heldTimers != nil {
		u.heldTimers.nas = NASTimerRecord{}
	}
}
