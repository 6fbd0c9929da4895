package amf

import (
	"github.com/tern5g/tern/ngap"
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
// acknowledged, and the outputs its first run produced are sent again
// (resendOutputs). Keyed by gNB and not one stamp per UE because a UE's
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
