package amf

import (
	"context"
	"errors"
	"fmt"

	"github.com/tern5g/tern/ngap"
)

// N2 restoration (TS 38.413 §8.7.4 NG Reset, §8.7.2 RAN Configuration
// Update; TS 23.527 for what the AMF keeps): when a gNB or the AMF loses
// UE-associated logical NG-connections, or the association itself, the
// connections go without signalling, and the UEs keep their registration:
// they are CM-IDLE, their PDU sessions' user plane is deactivated at the
// SMF, and they come back with a Service Request. The reader goroutine of
// the association only finds the connections and frees their NGAP IDs;
// each UE's own state moves on its executor (connectionLost).

// connectionsOf returns every UE-associated logical NG-connection on g and
// frees its RAN UE NGAP ID: the serving ones, and the handover targets that
// have no RAN UE NGAP ID yet (those are found by AMF UE NGAP ID).
func (a *AMF) connectionsOf(g *gnb) []*ranUE {
	g.mu.Lock()
	rs := make([]*ranUE, 0, len(g.ues))
	listed := make(map[*ranUE]bool, len(g.ues))
	for _, r := range g.ues {
		rs = append(rs, r)
		listed[r] = true
	}
	clear(g.ues)
	g.mu.Unlock()
	for _, r := range a.ranUEs.All() {
		if r.gnb == g && !listed[r] {
			rs = append(rs, r)
		}
	}
	return rs
}

// loseConnections frees the AMF UE NGAP IDs of rs now, so that the peer may
// reuse the IDs as soon as it hears the reset is done, and has each UE lose
// its connection on its executor (TS 38.413 §8.7.4.2: released without UE
// Context Release signalling).
func (a *AMF) loseConnections(rs []*ranUE) {
	for _, r := range rs {
		a.ranUEs.delete(r)
		r.ue.post(func() { r.ue.connectionLost(r) })
	}
}

// listedConnections finds the connections on g that a partial NG Reset
// lists (TS 38.413 §8.7.4.2.1, §8.7.4.2.2): an item names a connection by
// its AMF UE NGAP ID, its RAN UE NGAP ID or both; an item that matches no
// connection of g, or whose two IDs name different connections, names
// nothing. Every item is read against the table as it was, then the RAN UE
// NGAP IDs of what was found are freed.
func (a *AMF) listedConnections(g *gnb, items []ngap.UEConnection) []*ranUE {
	var rs []*ranUE
	seen := make(map[*ranUE]bool)
	var freed []int64
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, it := range items {
		var r *ranUE
		switch {
		case it.AMFUENGAPID != nil:
			r = a.ranUEs.Get(*it.AMFUENGAPID)
			if r == nil || r.gnb != g {
				continue
			}
			if it.RANUENGAPID != nil {
				// A handover target may not be in g.ues yet: only another
				// connection under that RAN UE NGAP ID contradicts the item.
				byRAN := g.ues[*it.RANUENGAPID]
				if byRAN != nil && byRAN != r {
					continue
				}
				if byRAN == r {
					freed = append(freed, *it.RANUENGAPID)
				}
			}
		case it.RANUENGAPID != nil:
			if r = g.ues[*it.RANUENGAPID]; r == nil {
				continue
			}
			freed = append(freed, *it.RANUENGAPID)
		default:
			continue
		}
		if !seen[r] {
			seen[r] = true
			rs = append(rs, r)
		}
	}
	// Where no item named the RAN UE NGAP ID (the table's key),
	// forgetConnection frees it on the UE's executor.
	for _, id := range freed {
		delete(g.ues, id)
	}
	return rs
}

// handleNGReset runs the AMF side of an NG-RAN node initiated NG Reset (TS
// 38.413 §8.7.4.2.1): the connections it names, or all of the gNB's, are
// released and their IDs freed, then NG Reset Acknowledge goes back. A
// partial reset's answer lists the received items in their order, unknown
// connections included; items that name no ID may be left out.
func (a *AMF) handleNGReset(g *gnb, m *ngap.NGReset) {
	a.stats.ngResets.Add(1)
	ack := &ngap.NGResetAcknowledge{}
	var rs []*ranUE
	if m.Connections == nil {
		rs = a.connectionsOf(g)
	} else {
		rs = a.listedConnections(g, m.Connections)
		ack.Connections = make([]ngap.UEConnection, 0, len(m.Connections))
		for _, it := range m.Connections {
			if it.AMFUENGAPID != nil || it.RANUENGAPID != nil {
				ack.Connections = append(ack.Connections, it)
			}
		}
		if len(ack.Connections) == 0 {
			ack.Connections = nil
		}
	}
	g.log.Info("NG Reset from gNB", "cause", m.Cause.String(), "whole", m.Connections == nil,
		"listed", len(m.Connections), "reset", len(rs))
	a.loseConnections(rs)
	if err := g.send(0, ack); err != nil {
		g.log.Warn("NG Reset Acknowledge not sent", "err", err)
	}
}

// handleNGResetAcknowledge hands the answer to the AMF-initiated NG Reset
// waiting for it (TS 38.413 §8.7.4.2.2); one nobody waits for is logged.
func (a *AMF) handleNGResetAcknowledge(g *gnb, m *ngap.NGResetAcknowledge) {
	g.mu.Lock()
	ch := g.resetAck
	g.resetAck = nil
	g.mu.Unlock()
	if ch == nil {
		g.log.Info("NG Reset Acknowledge without an NG Reset")
		return
	}
	ch <- m // buffered, one answer per reset
}

// Reset errors.
var (
	ErrUnknownGNB      = errors.New("amf: no NG-RAN node with this Global RAN Node ID")
	ErrResetPending    = errors.New("amf: an NG Reset towards this NG-RAN node is already pending")
	ErrNoConnections   = errors.New("amf: none of the UE NGAP IDs names a connection on this NG-RAN node")
	ErrAssociationLost = errors.New("amf: the NG-RAN node's association went before the NG Reset Acknowledge")
)

// ResetGNB runs an AMF-initiated NG Reset (TS 38.413 §8.7.4.2.2) towards
// the NG-RAN node whose NG Setup gave Global RAN Node ID id: an operator's
// reset, or the AMF's after it lost UE contexts. With no amfUEIDs the whole
// NG interface is reset; otherwise the connections with those AMF UE NGAP
// IDs on that node (IDs that name none are left out; if none is left,
// ErrNoConnections and nothing is sent). The connections are released here
// at once, without signalling (the UEs stay registered, go CM-IDLE and
// their user plane is deactivated at the SMF), then NG Reset goes out with
// cause, and ResetGNB waits for the NG Reset Acknowledge until ctx ends.
// One reset per node at a time (ErrResetPending).
func (a *AMF) ResetGNB(ctx context.Context, id ngap.GlobalGNBID, cause ngap.Cause, amfUEIDs ...int64) error {
	var g *gnb
	for _, c := range a.gnbsOf(id) {
		if c.setupDone.Load() {
			g = c
		}
	}
	if g == nil {
		return ErrUnknownGNB
	}
	ch := make(chan *ngap.NGResetAcknowledge, 1)
	g.mu.Lock()
	if g.dead {
		g.mu.Unlock()
		return ErrAssociationLost
	}
	if g.resetAck != nil {
		g.mu.Unlock()
		return ErrResetPending
	}
	g.resetAck = ch
	g.mu.Unlock()
	abandon := func() {
		g.mu.Lock()
		if g.resetAck == ch {
			g.resetAck = nil
		}
		g.mu.Unlock()
	}

	req := &ngap.NGReset{Cause: cause}
	var rs []*ranUE
	if len(amfUEIDs) == 0 {
		rs = a.connectionsOf(g)
	} else {
		rs, req.Connections = a.resetItems(g, amfUEIDs)
		if len(rs) == 0 {
			abandon()
			return ErrNoConnections
		}
	}
	a.stats.ngResets.Add(1)
	g.log.Info("NG Reset to gNB", "cause", cause.String(), "whole", req.Connections == nil, "reset", len(rs))
	a.loseConnections(rs)
	if err := g.send(0, req); err != nil {
		abandon()
		return fmt.Errorf("amf: NG Reset: %w", err)
	}
	select {
	case ack, ok := <-ch:
		if !ok {
			return ErrAssociationLost
		}
		// TS 38.413 §8.7.4.2.2: a partial reset is answered item by item.
		if req.Connections != nil && len(ack.Connections) != len(req.Connections) {
			g.log.Info("NG Reset Acknowledge lists other connections", "sent", len(req.Connections), "acknowledged", len(ack.Connections))
		}
		return nil
	case <-ctx.Done():
		abandon()
		return fmt.Errorf("amf: NG Reset Acknowledge: %w", ctx.Err())
	}
}

// resetItems finds the connections on g with the given AMF UE NGAP IDs and
// builds their items, with the RAN UE NGAP ID where the connection has one,
// freeing it.
func (a *AMF) resetItems(g *gnb, amfUEIDs []int64) ([]*ranUE, []ngap.UEConnection) {
	want := make(map[*ranUE]bool)
	for _, id := range amfUEIDs {
		if r := a.ranUEs.Get(id); r != nil && r.gnb == g {
			want[r] = true
		}
	}
	ranIDs := make(map[*ranUE]int64, len(want))
	g.mu.Lock()
	for ranID, r := range g.ues {
		if want[r] {
			ranIDs[r] = ranID
			delete(g.ues, ranID)
		}
	}
	g.mu.Unlock()
	var rs []*ranUE
	var items []ngap.UEConnection
	for _, id := range amfUEIDs {
		r := a.ranUEs.Get(id)
		if r == nil || !want[r] {
			continue
		}
		delete(want, r) // once per connection
		it := ngap.UEConnection{AMFUENGAPID: &r.amfID}
		if ranID, ok := ranIDs[r]; ok {
			it.RANUENGAPID = &ranID
		}
		rs = append(rs, r)
		items = append(items, it)
	}
	return rs, items
}

// handleRANConfigurationUpdate runs the AMF side of RAN Configuration
// Update (TS 38.413 §8.7.2): a new Supported TA List replaces the TAs the
// gNB is paged in, under the same checks as NG Setup; what the update
// leaves out stays. An update we cannot accept is answered with RAN
// Configuration Update Failure and the cause (§8.7.2.4), and changes
// nothing.
func (a *AMF) handleRANConfigurationUpdate(g *gnb, m *ngap.RANConfigurationUpdate) {
	cur := g.node.Load()
	next := *cur
	var cause *ngap.Cause
	var mismatch []any // why the supported TAs were refused, for the log
	if m.GlobalRANNodeID != nil && *m.GlobalRANNodeID != cur.id {
		// The node's identity is what NG Setup gave; an association does
		// not change node.
		cause = &ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified}
	} else if m.SupportedTAs != nil {
		next.tais, cause = a.servedTAIs(m.SupportedTAs)
		if cause != nil {
			mismatch = a.taMismatch(m.SupportedTAs)
		}
	}
	if cause != nil {
		wait := ngap.TimeToWait5s
		g.log.Info("RAN Configuration Update rejected", append([]any{"cause", cause.String()}, mismatch...)...)
		if err := g.send(0, &ngap.RANConfigurationUpdateFailure{Cause: *cause, TimeToWait: &wait}); err != nil {
			g.log.Warn("RAN Configuration Update Failure not sent", "err", err)
		}
		return
	}
	g.node.Store(&next)
	g.log.Info("RAN Configuration Update", "name", m.RANNodeName, "tais", len(next.tais))
	if err := g.send(0, &ngap.RANConfigurationUpdateAcknowledge{}); err != nil {
		g.log.Warn("RAN Configuration Update Acknowledge not sent", "err", err)
	}
}
