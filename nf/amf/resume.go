package amf

import (
	"fmt"

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
	g.assoc.Store(&c)
	g.mu.Lock()
	g.dead = false
	g.mu.Unlock()
	g.setupDone.Store(true)
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
