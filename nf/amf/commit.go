package amf

import (
	"fmt"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// Output commit and front-end acknowledgements (issue 36 §1 and §3, L25GC
// §3.5; docs/resiliency.md).
//
// # Output commit
//
// With a RecordSink set, no NGAP message a step of a UE produces leaves
// before the record of that step has been handed to the sink (stepDone):
// the step's sends (ue.sendN2) are encoded and held, in order, and leave
// right after the record, so that for every answer a gNB (and through it
// the UE) saw, the replica holds the state that produced it. A step that
// changed no record releases its messages at once all the same. Without
// a sink a step sends at once, as it always did, and holds nothing.
//
// A held message that fails to leave (its association went down after the
// step) is logged: it is as a message lost with its association, and the
// association's loss (dropGNB) is what the procedures react to. A send to
// a detached gNB fails at once, held or not.
//
// Not held, and why:
//
//   - the SBI requests a step makes and waits for (AUSF, UDM, NSSF, the
//     SMF's Nsmf_PDUSession, the N1N2 transfer failure notification): the
//     step needs their answers to go on, so they cannot wait for its end.
//     They go to NFs of the same unit in `tern up`, which fail with it and
//     whose own state is recorded (the SMF's output commit covers what it
//     answers); a request whose step is lost is made again when the
//     procedure runs again from the replica's state;
//   - the answers to Namf_Communication_N1N2MessageTransfer and
//     Nsmf_PDUSession_SMContextStatusNotify: they are given from the
//     state the UE's executor last published, without waiting for it (the
//     SMF may call from inside a call the executor is making), before the
//     step that delivers the transfer; the step is not their origin;
//   - what the reader goroutine answers itself (NG Setup, RAN
//     Configuration Update, NG Reset Acknowledge, Error Indications for
//     unknown connections): non-UE signalling, no UE record.
//
// # Acknowledgements
//
// An association whose conn implements sctp.Acker (an N2 front end's link)
// delivers messages with a stamp. A UE-associated message handed to a
// UE's step is acknowledged after that step, once its record is committed
// and its outputs released; any other (non-UE signalling, a message
// refused or dropped on the reader) once the reader is done with it. A
// message with stamp 0, or on a plain association, costs nothing.

// heldN2 is an NGAP message a step produced, encoded, waiting for the
// step's record to be committed.
type heldN2 struct {
	g      *gnb
	c      sctp.Conn // g's association when the message was made
	stream uint16
	proc   int64 // procedure code, for the log
	b      []byte
}

// beginStep starts one step of u on its executor: with a RecordSink set,
// or while replaying (replay.go), the step's NGAP messages are held until
// endStep.
func (u *ue) beginStep() {
	u.holding = u.amf.sink.Load() != nil || u.amf.delivered.Load() != 0
}

// endStep ends one step of u: its record goes to the sink if the step
// changed it (stepDone), then the messages it held leave, in order, unless
// they left already when the step first ran (a replayed step, replay.go).
func (u *ue) endStep() {
	if u.holding {
		u.noteOutputs()
	}
	u.stepDone()
	if !u.holding {
		return
	}
	u.holding = false
	drop := u.replayedDelivered()
	u.stamp = 0
	for i := range u.held {
		h := &u.held[i]
		if drop {
			u.amf.stats.replaySuppressed.Add(1)
		} else if err := h.g.sendEncoded(h.c, h.stream, h.b); err != nil {
			h.g.log.Warn("NGAP message not sent after its step's commit", "procedure", h.proc, "err", err)
		}
		*h = heldN2{}
	}
	u.held = u.held[:0]
}

// sendN2 sends m to g on stream for a step of u: at once without a
// RecordSink (or for u nil, the reader), else held until the step's record
// is committed (endStep). The error of a held message is that of its
// encoding or of a detached gNB; its send comes later.
func (u *ue) sendN2(g *gnb, stream uint16, m ngap.Message) error {
	if u == nil || !u.holding {
		return g.send(stream, m)
	}
	c := g.conn()
	if c == nil && !g.resumable.Load() {
		return fmt.Errorf("send ngap procedure %d: %w", m.ProcedureCode(), errDetached)
	}
	b, err := ngap.Encode(m)
	if err != nil {
		return fmt.Errorf("encode ngap procedure %d: %w", m.ProcedureCode(), err)
	}
	// c nil: g is detached but may be resumed; the send keeps it for then.
	u.held = append(u.held, heldN2{g: g, c: c, stream: stream, proc: m.ProcedureCode(), b: b})
	return nil
}

// postMessage queues f, the step that handles a message g's reader
// received with stamp, on u's executor, and acknowledges the stamp to g's
// front end after the step (stamp 0: post). A stamp u's steps handled
// already (a replay after a takeover, dedup.go) does not run f again; the
// step's stamp goes in its record.
func (u *ue) postMessage(g *gnb, stamp uint64, f func()) {
	if stamp == 0 {
		u.post(f)
		return
	}
	u.exec.Post(func() {
		u.beginStep()
		u.stamp = stamp
		if u.isApplied(g, stamp) {
			// A replay of a message a step handled before a takeover
			// (dedup.go): not run again; the last step's outputs are
			// sent again.
			u.amf.stats.replayDuplicates.Add(1)
			u.log.Debug("replayed message handled already: acknowledged, not run again", "stamp", stamp)
			u.duplicate = true
			u.resendOutputs(stamp)
		} else {
			f()
			u.noteApplied(g, stamp)
		}
		u.endStep()
		u.duplicate = false
		g.ack(stamp)
	})
}

// takeStamp hands the stamp of the message the reader is handling to the
// caller, which sees it acknowledged (postMessage); the reader then has
// none left to acknowledge itself. Reader goroutine only.
func (g *gnb) takeStamp() uint64 {
	s := g.stamp
	g.stamp = 0
	return s
}

// ack acknowledges stamp to g's front end, when g's association is one
// (sctp.Acker) and stamp names a message.
func (g *gnb) ack(stamp uint64) {
	if stamp == 0 {
		return
	}
	if a, ok := g.conn().(sctp.Acker); ok {
		a.Ack(stamp)
	}
}
