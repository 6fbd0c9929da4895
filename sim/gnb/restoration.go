package gnb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// N2 restoration (TS 38.413 §8.7.4 NG Reset, §8.7.1.2 NG Setup after a new
// association): the gNB drops UE-associated logical NG-connections without
// signalling, and the UEs on them become RRC-idle (HandleRelease): they
// stay registered, and their next uplink data brings a Service Request.

// Errors of the restoration procedures.
var (
	ErrResetPending = errors.New("gnb: an NG Reset is already pending")
	ErrNoConnection = errors.New("gnb: none of the UEs has a signalling connection on this gNB")
)

// causeResetOM is the cause of the gNB's own NG Reset: an operator's (or a
// benchmark's) action (TS 38.413 §9.3.1.2, O&M intervention).
var causeResetOM = ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscOMIntervention}

// takeLegs removes legs from the gNB's tables: every one (all) or those
// given, and hands them back with the RAN UE NGAP ID each had.
func (g *GNB) takeLegs(all bool, legs []*leg) map[*leg]int64 {
	out := make(map[*leg]int64)
	g.mu.Lock()
	defer g.mu.Unlock()
	want := make(map[*leg]bool, len(legs))
	for _, l := range legs {
		want[l] = true
	}
	for id, l := range g.byRAN {
		if all || want[l] {
			out[l] = id
			delete(g.byRAN, id)
		}
	}
	if all {
		// N2 handover targets waiting for their UE have no RAN UE NGAP ID
		// in use yet: they go too.
		for tok, l := range g.pending {
			delete(g.pending, tok)
			if _, ok := out[l]; !ok {
				out[l] = 0
			}
		}
	}
	return out
}

// dropLegs ends the connections of legs without signalling: AN resources
// freed, a handover in progress on them ended, and the UEs still there
// told they are released (RRC-idle from now on).
func (g *GNB) dropLegs(legs map[*leg]int64, cause ngap.Cause) {
	now := time.Now()
	for l, ran := range legs {
		l.releaseSessions()
		if ran != 0 {
			l.ranID.CompareAndSwap(ran, 0)
		}
		g.legReleased(l, cause)
		l.amfID.Store(-1)
		if u := l.ue(); u != nil {
			u.HandleRelease(now)
		}
	}
}

// onNGReset answers an AMF-initiated NG Reset (TS 38.413 §8.7.4.2.2): the
// connections it names (all of them for the whole interface) are dropped
// and their UEs become RRC-idle, then NG Reset Acknowledge goes back,
// listing a partial reset's items in the order received (unknown ones
// included; items that name no ID may be left out).
func (g *GNB) onNGReset(m *ngap.NGReset) {
	g.resets.Add(1)
	ack := &ngap.NGResetAcknowledge{}
	var legs map[*leg]int64
	if m.Connections == nil {
		legs = g.takeLegs(true, nil)
	} else {
		var named []*leg
		for _, it := range m.Connections {
			var l *leg
			switch {
			case it.RANUENGAPID != nil:
				if l = g.leg(*it.RANUENGAPID); l != nil && it.AMFUENGAPID != nil {
					if amf := l.amfID.Load(); amf >= 0 && amf != *it.AMFUENGAPID {
						l = nil // the two IDs name different connections
					}
				}
			case it.AMFUENGAPID != nil:
				l = g.legByAMFID(*it.AMFUENGAPID)
			default:
				continue
			}
			ack.Connections = append(ack.Connections, it)
			if l != nil {
				named = append(named, l)
			}
		}
		legs = g.takeLegs(false, named)
	}
	g.log.Info("NG Reset from AMF", "cause", m.Cause.String(), "whole", m.Connections == nil, "reset", len(legs))
	g.dropLegs(legs, m.Cause)
	if err := g.send(0, ack); err != nil {
		g.log.Warn("NG Reset Acknowledge", "err", err)
	}
}

// onNGResetAcknowledge hands the answer to the gNB's own pending NG Reset.
func (g *GNB) onNGResetAcknowledge(m *ngap.NGResetAcknowledge) {
	g.mu.Lock()
	ch := g.resetAck
	g.resetAck = nil
	g.mu.Unlock()
	if ch == nil {
		g.log.Warn("NG Reset Acknowledge without an NG Reset")
		return
	}
	ch <- m // buffered: one answer per reset
}

// Reset runs a gNB-initiated NG Reset (TS 38.413 §8.7.4.2.1). With no
// ports it resets the whole NG interface: every UE-associated logical
// NG-connection of this gNB. Otherwise it resets the connections the
// given UEs (their Ports) have on this gNB, named by RAN UE NGAP ID and,
// where known, AMF UE NGAP ID; ports without one here are left out, and
// if none is left Reset returns ErrNoConnection without sending. The
// connections are dropped at once without signalling and their UEs become
// RRC-idle (they stay registered; uplink data then triggers a Service
// Request), then NG Reset goes to the AMF and Reset waits for the NG Reset
// Acknowledge until ctx ends or the association does. One reset at a time
// (ErrResetPending).
func (g *GNB) Reset(ctx context.Context, ports ...*Port) error {
	ch := make(chan *ngap.NGResetAcknowledge, 1)
	g.mu.Lock()
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

	req := &ngap.NGReset{Cause: causeResetOM}
	var legs map[*leg]int64
	if len(ports) == 0 {
		legs = g.takeLegs(true, nil)
	} else {
		named := make([]*leg, 0, len(ports))
		for _, p := range ports {
			if l := p.cur.Load(); l.g == g && l.ranID.Load() != 0 {
				named = append(named, l)
			}
		}
		legs = g.takeLegs(false, named)
		for _, l := range named {
			ran, ok := legs[l]
			if !ok {
				continue // listed twice, or its connection went meanwhile
			}
			it := ngap.UEConnection{RANUENGAPID: &ran}
			if amf := l.amfID.Load(); amf >= 0 {
				it.AMFUENGAPID = &amf
			}
			req.Connections = append(req.Connections, it)
		}
		if len(req.Connections) == 0 {
			abandon()
			return ErrNoConnection
		}
	}
	g.resets.Add(1)
	g.dropLegs(legs, causeResetOM)
	a := g.as.Load()
	if err := g.send(0, req); err != nil {
		abandon()
		return fmt.Errorf("gnb %d: NG Reset: %w", g.cfg.GNBID, err)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		abandon()
		return fmt.Errorf("gnb %d: NG Reset Acknowledge: %w", g.cfg.GNBID, ctx.Err())
	case <-a.done:
		abandon()
		return fmt.Errorf("gnb %d: NG Reset: association ended: %w", g.cfg.GNBID, a.readErr)
	}
}

// Reconnect drops the SCTP association with the AMF and sets up a new one
// with NG Setup, as a gNB does after a transport failure or a restart of
// its NG interface. The UE-associated connections go with the old
// association (no signalling): their UEs become RRC-idle, keep their
// registration, stay pageable here, and come back with a Service Request
// on their next uplink data. ctx bounds the new association's set-up (at
// most Config.SetupTimeout); on error the gNB has no association (Err says
// so) and Reconnect may be called again. Not concurrently with Close.
func (g *GNB) Reconnect(ctx context.Context) error {
	g.reconnectMu.Lock()
	defer g.reconnectMu.Unlock()
	old := g.as.Load()
	old.conn.Close()
	<-old.done
	g.dropLegs(g.takeLegs(true, nil), ngap.Cause{Group: ngap.CauseTransport, Value: ngap.TransportUnspecified})
	g.reconnects.Add(1)

	ctx, cancel := context.WithTimeout(ctx, g.cfg.SetupTimeout)
	defer cancel()
	conn, err := sctp.Dial(ctx, g.cfg.Transport, g.cfg.AMFAddr)
	if err != nil {
		return fmt.Errorf("gnb %d: reconnect to %s: %w", g.cfg.GNBID, g.cfg.AMFAddr, err)
	}
	a := newAssoc(conn)
	g.as.Store(a)
	go g.read(a)
	if err := g.setup(ctx, a); err != nil {
		conn.Close()
		<-a.done
		return fmt.Errorf("gnb %d: reconnect: %w", g.cfg.GNBID, err)
	}
	g.log.Info("NG Setup complete on a new association", "amf", g.AMF().AMFName)
	return nil
}
