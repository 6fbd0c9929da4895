package amf

import (
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// Stamp de-duplication: a unit applies a stamp once (issue 36 §3;
// resil/n2front's package comment; docs/resiliency.md, "Output commit and
// acknowledgements").
//
// An N2 front end delivers each gNB message at least once: a message is
// logged until the unit acknowledges its stamp, and acknowledgements
// leave after the step that handled it, in batches. A unit killed between
// a step's record and the acknowledgement reaching the front leaves the
// message in the log, and the front replays it to the unit that takes
// over, which restored the state after that step. Run again, it would be
// handled twice: a replayed Initial UE Message would make a second
// context, a NAS message or an NGAP response would run on the state after
// it.
//
// So each UE context keeps, in its record (the same write as the step's
// other changes), the stamp of the last message of each gNB that one of
// its steps handled (applied). Stamps are front-wide and increasing, and
// one association's messages are handed to a UE's executor in the order
// its reader got them: a message of gNB G with a stamp at or below the
// UE's stamp for G was handled already. Its step is not run again; it is
// acknowledged, and, when it is the message of the context's last step,
// the outputs that step produced are sent again (resendOutputs).
//
// # Outputs of the last step
//
// A step's messages leave after its record (commit.go) and its stamp is
// acknowledged after they left, on the same link: a message whose
// acknowledgement reached the front had its outputs sent. One that is
// replayed may or may not have: the unit may have died between the
// record and the sends. Only the context's last step can be in that case
// (its executor sent the messages of each step before it ran the next),
// so its record keeps that step's encoded messages and stamp (Outputs,
// OutputsStamp), and a replay of that stamp sends them again, through the
// same path as a step's own (held, then sent after the record; dropped by
// SetDelivered's suppression in a deterministic replay). The gNB may get
// them twice, which the protocols tolerate for what a UE step sends:
//
//   - NAS (Downlink NAS Transport, and NAS in Initial Context Setup): a
//     protected NAS message is resent with its COUNT, and the UE discards
//     one it has accepted already (TS 24.501 §4.4.3.1, TS 33.501 §6.4.3.2
//     replay protection; package nas answers ErrReplay); a plain
//     Authentication Request repeated is answered again with the same
//     RES* (TS 24.501 §5.4.1.3.7 c));
//   - UE-associated NGAP requests (Initial Context Setup, PDU Session
//     Resource Setup/Modify/Release, UE Context Release Command, Handover
//     Request, Handover Command): a gNB that gets one again for a
//     connection where the procedure ran answers per TS 38.413 §10 (an
//     Error Indication or the procedure's failure for the duplicate); the
//     AMF's state is the one after the first, and such an answer does not
//     change it. Not checked yet against tern's sim gNB for each message.
//
// Outputs of a step without a stamp (a timer expiry, an SBI request) are
// not kept: no replay identifies them; the NAS timers retransmit what a
// UE did not answer. Keyed by gNB and not one stamp per UE because a UE's
// messages from two associations (an N2 handover's source and target)
// reach its executor in no fixed order across them.
//
// Messages the reader handles before a UE context is known:
//
//   - an Initial UE Message makes a new context on the reader. A replayed
//     one finds the restored context instead, by its gNB and RAN UE NGAP
//     ID, when the context's recorded stamp for that gNB covers it
//     (restoredConns): the replay goes to that context's step, which sees
//     it applied;
//   - a UE-associated message whose connection is not known (released or
//     its context deleted by the step it was replayed after), and a Path
//     Switch Request whose source connection went: when its stamp is at
//     or below the highest stamp any restored record holds for its gNB
//     (replayHorizon), it belongs to state that is gone and is dropped,
//     counted, with no Error Indication, which the gNB would take for a
//     protocol error on a connection it released properly.
//
// Both tables are built by Restore before the AMF serves and only read
// after; live messages have stamps above them.

// maxAppliedGNBs bounds the gNBs a UE record keeps stamps for: those of
// its legs (serving, handover target, released) and a few before. The
// stamp of a gNB dropped from the list was far back: its messages are
// acknowledged long since.
const maxAppliedGNBs = 4

// StampRecord is the stamp of the last message of one gNB that a step of
// a UE context handled.
type StampRecord struct {
	GNB   ngap.GlobalGNBID
	Stamp uint64
}

// legKey names a UE-associated connection by its gNB and RAN UE NGAP ID.
type legKey struct {
	gnb   ngap.GlobalGNBID
	ranID int64
}

// nodeID is g's Global RAN Node ID; false before NG Setup.
func (g *gnb) nodeID() (ngap.GlobalGNBID, bool) {
	n := g.node.Load()
	if n == nil {
		return ngap.GlobalGNBID{}, false
	}
	return n.id, true
}

// appliedStamp is the stamp of the last message of gNB id a step of u
// handled; 0: none. It runs on u's executor.
func (u *ue) appliedStamp(id ngap.GlobalGNBID) uint64 {
	for _, s := range u.applied {
		if s.GNB == id {
			return s.Stamp
		}
	}
	return 0
}

// isApplied reports whether the message of g with stamp was handled by a
// step of u already: a replay.
func (u *ue) isApplied(g *gnb, stamp uint64) bool {
	id, ok := g.nodeID()
	return ok && stamp != 0 && stamp <= u.appliedStamp(id)
}

// noteApplied records that the running step handled the message of g with
// stamp. It runs on u's executor, in the step, so that the stamp goes in
// the step's record.
func (u *ue) noteApplied(g *gnb, stamp uint64) {
	id, ok := g.nodeID()
	if !ok || stamp == 0 {
		return
	}
	for i := range u.applied {
		if u.applied[i].GNB == id {
			u.applied[i].Stamp = max(u.applied[i].Stamp, stamp)
			return
		}
	}
	if len(u.applied) == maxAppliedGNBs {
		// The oldest goes; the rest keep their order, so that two runs
		// of the same inputs record the same list.
		oldest := 0
		for i, s := range u.applied {
			if s.Stamp < u.applied[oldest].Stamp {
				oldest = i
			}
		}
		u.applied = append(u.applied[:oldest], u.applied[oldest+1:]...)
	}
	u.applied = append(u.applied, StampRecord{GNB: id, Stamp: stamp})
}

// replayedConn returns the restored context whose connection (g, ranID)
// an Initial UE Message stamped as the reader's current one made, when
// that message is a replay of one applied before the restore; nil
// otherwise. Reader goroutine.
func (a *AMF) replayedConn(g *gnb, ranID int64) *ue {
	s := g.stamp
	id, ok := g.nodeID()
	if s == 0 || !ok || s > a.restoredConns[legKey{id, ranID}] {
		return nil
	}
	g.mu.Lock()
	r := g.ues[ranID]
	g.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.ue
}

// replayedGone reports whether the message the reader handles, whose UE
// connection is not known, is a replay of a message handled before the
// restore: its stamp is at or below the highest stamp a restored record
// holds for g. Such a message is dropped and counted (no Error
// Indication); the reader acknowledges it.
func (a *AMF) replayedGone(g *gnb) bool {
	s := g.stamp
	id, ok := g.nodeID()
	if s == 0 || !ok || s > a.replayHorizon[id] {
		return false
	}
	a.stats.replayDuplicates.Add(1)
	g.log.Debug("replayed message of a connection that is gone: dropped", "stamp", s)
	return true
}

// noteOutputs keeps the running step's held messages as the context's last
// outputs when the step handled a stamped message, and forgets earlier
// ones otherwise (they left before this step ran). It runs in endStep,
// before the step's record is taken.
func (u *ue) noteOutputs() {
	switch {
	case u.duplicate:
		// A replayed message not run again: what it resent are the
		// outputs already kept, or it sent nothing.
		u.duplicate = false
		return
	case u.stamp == 0 || len(u.held) == 0:
		u.outputs, u.outputsStamp = nil, 0
		return
	}
	u.outputs = make([]OutputRecord, 0, len(u.held))
	for _, h := range u.held {
		id, _ := h.g.nodeID()
		u.outputs = append(u.outputs, OutputRecord{GNB: id, Stream: h.stream, Message: h.b})
	}
	u.outputsStamp = u.stamp
}

// resendOutputs holds the last step's outputs again when stamp is the
// message that step handled: endStep sends them after the record (at once
// without a RecordSink).
func (u *ue) resendOutputs(stamp uint64) {
	if stamp != u.outputsStamp || len(u.outputs) == 0 {
		return
	}
	for _, o := range u.outputs {
		var c sctp.Conn
		var g *gnb
		for _, x := range u.amf.gnbsOf(o.GNB) {
			if c = x.conn(); c != nil {
				g = x
				break
			}
		}
		if g == nil {
			u.log.Info("last step's output not sent again: its gNB is not connected", "gnb_id", o.GNB.GNBID)
			continue
		}
		u.amf.stats.outputsResent.Add(1)
		if !u.holding { // no RecordSink: a step sends at once
			if err := g.sendEncoded(c, o.Stream, o.Message); err != nil {
				u.log.Warn("last step's output not sent again", "err", err)
			}
			continue
		}
		u.held = append(u.held, heldN2{g: g, c: c, stream: o.Stream, b: o.Message})
	}
}
