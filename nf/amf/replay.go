package amf

import (
	"context"
	"fmt"
)

// Deterministic steps and replay (issue 36 §1; docs/resiliency.md,
// "Determinism").
//
// A replica restores from a Checkpoint and re-executes the inputs logged
// after it: the N2 messages (which an N2 front end stamps and logs), the
// SBI requests to the AMF and the answers to the AMF's own SBI requests,
// each with the time it came with. Re-executing them gives byte-identical
// UE records because every choice a step makes is either derived from the
// state and the input, or is the input's:
//
//   - time: a step's time is its executor's (serial.Queue.Now): the
//     AMF's clock (Deps.Clock) read once per step, the same for every use
//     in the step (LastActivity, ProcedureStart, and the deadline of every
//     timer the step starts: its time plus the timer's duration); a timer's
//     expiry has its deadline as its time, however late it runs. A replay
//     runs on a serial.ManualClock set to each input's logged time before
//     the input is delivered, so the expiries due by then run first, in
//     deadline order, as they did;
//   - 5G-TMSIs: a keyed PRF of (context ID, the context's count of draws)
//     (guti.go); the key is in the Checkpoint, the count in the record;
//   - IDs from counters (context IDs, AMF UE NGAP IDs, the numbers of
//     smContextStatusUris): the Checkpoint carries each counter, and a
//     replay that delivers the inputs in their logged order, one at a time,
//     allocates as the first run did;
//   - RAND, AUTN, SM context references and everything else another NF
//     chooses: answers to the AMF's SBI requests, which are inputs (the
//     replayer answers them from the log).
//
// Answers already sent are not sent twice: SetDelivered tells the AMF up
// to which stamp the outputs of the logged inputs left before the failure;
// the NGAP messages of a replayed step handling such an input are dropped
// (counted), and those of the later inputs are sent. A step without a
// stamp (a timer expiry, an SBI request) goes with the last stamped input
// the replay delivered before it. This needs a replay of one input at a
// time, each run to its end, which the counters need anyway.
//
// Outside a replay none of this costs: the clock is read where time.Now
// was, a 5G-TMSI draw is one SHA-256 block more than a random number, and
// the replay checks are an atomic load per step.

// Checkpoint is the AMF's state from which a replay of the log after it
// re-executes into the same records: the UE records and the allocators
// that are not per UE.
type Checkpoint struct {
	// NextUEID, NextAMFUENGAPID and StatusSeq are the last values handed
	// out: context IDs, AMF UE NGAP IDs (TS 38.413 §9.3.3.1), the numbers
	// that make smContextStatusUris unique.
	NextUEID        uint64
	NextAMFUENGAPID int64
	StatusSeq       uint64
	// TMSIKey is the secret of the 5G-TMSI draws (guti.go). A checkpoint
	// holds it as the records hold KAMF: keep it where they are kept.
	TMSIKey [32]byte
	UEs     []UERecord
}

// Checkpoint takes the AMF's Checkpoint. Its parts are consistent with
// each other when no input is being handled while it is taken (the front
// end holds the inputs back, or the instance is a replica between two
// replayed inputs); taken under load, the counters may be ahead of the
// records, which keeps them from handing anything out twice but not a
// replay from allocating otherwise.
func (a *AMF) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	recs, err := a.Records(ctx)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{NextUEID: a.nextUEID.Load(), NextAMFUENGAPID: a.nextAMFUEID.Load(),
		StatusSeq: a.statusSeq.Load(), TMSIKey: a.tmsiKey, UEs: recs}, nil
}

// RestoreCheckpoint restores cp on a fresh AMF (Restore, with its
// conditions) and sets the allocators and the 5G-TMSI key to cp's, so
// that replaying the inputs logged after cp gives the records they gave.
func (a *AMF) RestoreCheckpoint(cp *Checkpoint) error {
	if cp.NextAMFUENGAPID < 0 || cp.NextAMFUENGAPID > maxAMFUENGAPID {
		return fmt.Errorf("%w: checkpoint: AMF UE NGAP ID counter %d out of range", ErrBadRecord, cp.NextAMFUENGAPID)
	}
	// The key is set before the contexts' executors start (Restore refuses
	// an AMF that serves), and put back when Restore refuses.
	old := a.tmsiKey
	a.tmsiKey = cp.TMSIKey
	if err := a.Restore(cp.UEs); err != nil {
		a.tmsiKey = old
		return err
	}
	raise(&a.nextUEID, cp.NextUEID)
	raise(&a.nextAMFUEID, cp.NextAMFUENGAPID)
	raise(&a.statusSeq, cp.StatusSeq)
	return nil
}

// SetDelivered starts a replay in which the outputs of the inputs stamped
// up to stamp left before the failure: the NGAP messages of the steps
// handling them are not sent again; those of later inputs are. 0 ends the
// replay mode. Call it before the replay's first input.
func (a *AMF) SetDelivered(stamp uint64) { a.delivered.Store(stamp) }

// replayedDelivered reports whether the running step of u replays an input
// whose outputs left already. It runs on u's executor.
func (u *ue) replayedDelivered() bool {
	d := u.amf.delivered.Load()
	if d == 0 {
		return false
	}
	s := u.stamp
	if s == 0 {
		s = u.amf.lastStamp.Load()
	}
	return s <= d
}
