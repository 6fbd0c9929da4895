package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// JetStream headers this package sets (nats-server's stream.go).
const (
	hdrExpectedLastSubjSeq     = "Nats-Expected-Last-Subject-Sequence"
	hdrExpectedLastSubjSeqSubj = "Nats-Expected-Last-Subject-Sequence-Subject"
	hdrTTL                     = "Nats-TTL"
	hdrRollup                  = "Nats-Rollup"
	hdrBatchID                 = "Nats-Batch-Id"
	hdrBatchSeq                = "Nats-Batch-Sequence"
	hdrBatchCommit             = "Nats-Batch-Commit"
)

// retryWait is the pause before retrying a write that a replicated stream
// answered with "a check on this subject is in process" (below).
const retryWait = time.Millisecond

// Unit is one writer's hold on a unit: every write it makes carries its
// epoch, and the engine refuses them once a newer epoch exists.
type Unit struct {
	e     *Engine
	name  string
	epoch uint64
}

// Acquire raises the unit's epoch in the engine and returns the writer
// that holds it: from the moment the engine acknowledges the new epoch,
// every write of a holder of an older one fails with ErrFenced. The epoch
// is the stream sequence of the new epoch message, written with a
// compare-and-set on the previous one (two concurrent Acquires: one
// retries and ends up the newer).
func (e *Engine) Acquire(ctx context.Context, unit string) (*Unit, error) {
	if !validUnit(unit) {
		return nil, fmt.Errorf("engine: acquire: invalid unit name %q", unit)
	}
	subj := epochSubject(unit)
	for {
		prev, err := e.lastSeq(ctx, subj)
		if err != nil {
			e.n.failures.Add(1)
			return nil, fmt.Errorf("engine: acquire %s: %w", unit, err)
		}
		m := nats.NewMsg(subj)
		m.Data = frame([]byte(unit))
		m.Header.Set(hdrExpectedLastSubjSeq, strconv.FormatUint(prev, 10))
		// Age limits never drop an epoch: writers would be fenced by
		// nobody.
		m.Header.Set(hdrTTL, "never")
		m.Header.Set(hdrRollup, "sub")
		ack, err := e.publish(ctx, nil, m)
		if err == nil {
			return &Unit{e: e, name: unit, epoch: ack.Sequence}, nil
		}
		if !isWrongLastSeq(err) {
			e.n.failures.Add(1)
			return nil, fmt.Errorf("engine: acquire %s: %w", unit, classify(err))
		}
		// Another Acquire won the race: read its epoch and go above it.
		e.n.retries.Add(1)
		if err := sleep(ctx, retryWait); err != nil {
			e.n.failures.Add(1)
			return nil, fmt.Errorf("engine: acquire %s: %w", unit, err)
		}
	}
}

// Name is the unit's name.
func (u *Unit) Name() string { return u.name }

// Epoch is the epoch this writer holds.
func (u *Unit) Epoch() uint64 { return u.epoch }

// Append adds data to the unit's log and returns its sequence number once
// the engine has acknowledged it (held by a majority of the stream's
// replicas). ErrFenced: a newer epoch exists. An append whose ctx ends
// before the acknowledgement may still have been stored; the caller's own
// stamp inside data is what makes a replay apply it once.
func (u *Unit) Append(ctx context.Context, data []byte) (uint64, error) {
	m := nats.NewMsg(logSubject(u.name))
	m.Data = frame(data)
	u.fence(m.Header)
	// The engine stores a message whose ID it has seen once, so a retry
	// after an answer lost to a leader's death does not append twice.
	m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	for {
		ack, err := u.e.publish(ctx, nil, m)
		if err == nil {
			u.e.n.appends.Add(1)
			return ack.Sequence, nil
		}
		if err = u.afterRefusal(ctx, err, nil); err != nil {
			u.e.n.failures.Add(1)
			return 0, fmt.Errorf("engine: append to %s: %w", u.name, err)
		}
	}
}

// fence makes the engine check that the unit's epoch is still this
// writer's when it stores the message.
func (u *Unit) fence(h nats.Header) {
	h.Set(hdrExpectedLastSubjSeq, strconv.FormatUint(u.epoch, 10))
	h.Set(hdrExpectedLastSubjSeqSubj, epochSubject(u.name))
}

// afterRefusal turns a write's error into the error to return, or nil
// when the write is to be tried again. A replicated stream refuses a
// write whose check involves a subject that another write in flight also
// checks (nats-server's "expected per subject in process"), with the same
// code as a real mismatch: which of the two it was, the current epoch
// (and revision) read back from the engine says.
func (u *Unit) afterRefusal(ctx context.Context, err error, checkRevision func() (bool, error)) error {
	if !isWrongLastSeq(err) {
		return classify(err)
	}
	cur, rerr := u.e.lastSeq(ctx, epochSubject(u.name))
	if rerr != nil {
		return rerr
	}
	if cur != u.epoch {
		u.e.n.fenced.Add(1)
		return fmt.Errorf("%w: epoch %d, the unit's is %d", ErrFenced, u.epoch, cur)
	}
	if checkRevision != nil {
		ok, rerr := checkRevision()
		if rerr != nil {
			return rerr
		}
		if !ok {
			return ErrRevision
		}
	}
	u.e.n.retries.Add(1)
	return sleep(ctx, retryWait)
}

// attemptTimeout bounds one try of a write. A try sent to a stream leader
// that dies is never answered; the next try, after the election, is.
const attemptTimeout = time.Second

// publish sends m (after first, the opening message of an atomic batch,
// when there is one) and returns the engine's acknowledgement. It tries
// again, until ctx ends, where the engine was not there to answer: no
// responders (a replicated stream electing its leader) or no answer within
// attemptTimeout. Refusals are returned at once.
func (e *Engine) publish(ctx context.Context, first, m *nats.Msg) (*jetstream.PubAck, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		var ack *jetstream.PubAck
		err := error(nil)
		if first != nil {
			// The opening message needs no answer: its errors come with
			// the commit's, on the same connection, in order.
			err = e.nc.PublishMsg(first)
		}
		if err == nil {
			ack, err = e.js.PublishMsg(actx, m)
		}
		cancel()
		if err == nil {
			return ack, nil
		}
		if err := e.again(ctx, err); err != nil {
			return nil, err
		}
	}
}

// again returns nil, after a pause, when an operation that failed with
// err is to be tried again: the engine was not there to answer (no
// responders while a replicated stream elects its leader, or no answer
// within attemptTimeout) and ctx has time left. Otherwise the error.
func (e *Engine) again(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return err
	}
	e.n.retries.Add(1)
	return sleep(ctx, 20*time.Millisecond)
}

// retry runs op, an idempotent request, until it is answered or ctx ends;
// each try is bounded by attemptTimeout.
func (e *Engine) retry(ctx context.Context, op func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if err := e.again(ctx, err); err != nil {
			return err
		}
	}
}

// PutCheckpoint stores data under key if the key's revision is still
// expectedRevision (0: the key must not exist) and this writer's epoch is
// still the unit's, and returns the new revision. ErrRevision or
// ErrFenced otherwise. The checkpoint and a fence marker are one atomic
// batch: the checkpoint carries the compare-and-set on its revision, the
// marker the epoch check, and JetStream stores both or neither.
func (u *Unit) PutCheckpoint(ctx context.Context, key string, data []byte, expectedRevision uint64) (uint64, error) {
	if !validKey(key) {
		return 0, fmt.Errorf("engine: checkpoint: invalid key %q", key)
	}
	subj := checkpointSubject(u.name, key)
	checkRevision := func() (bool, error) {
		cur, err := u.e.lastSeq(ctx, subj)
		return cur == expectedRevision, err
	}
	for {
		id := nuid.Next()
		ck := nats.NewMsg(subj)
		ck.Data = frame(data)
		ck.Header.Set(hdrBatchID, id)
		ck.Header.Set(hdrBatchSeq, "1")
		ck.Header.Set(hdrExpectedLastSubjSeq, strconv.FormatUint(expectedRevision, 10))
		ck.Header.Set(hdrTTL, "never")
		ck.Header.Set(hdrRollup, "sub")
		mark := nats.NewMsg(fenceSubject(u.name))
		mark.Data = frame([]byte(key))
		mark.Header.Set(hdrBatchID, id)
		mark.Header.Set(hdrBatchSeq, "2")
		mark.Header.Set(hdrBatchCommit, "1")
		mark.Header.Set(hdrRollup, "sub")
		u.fence(mark.Header)

		ack, err := u.e.publish(ctx, ck, mark)
		if err == nil {
			u.e.n.checkpoints.Add(1)
			// The batch is stored contiguously: the checkpoint is the
			// one before the commit.
			return ack.Sequence - 1, nil
		}
		if err = u.afterRefusal(ctx, err, checkRevision); err != nil {
			// The engine may have stored an earlier try whose answer
			// was lost (publish retries those): then the checkpoint
			// there is this one.
			if errors.Is(err, ErrRevision) {
				if cur, rev, gerr := u.e.GetCheckpoint(ctx, u.name, key); gerr == nil && bytes.Equal(cur, data) && rev > expectedRevision {
					u.e.n.checkpoints.Add(1)
					return rev, nil
				}
			}
			u.e.n.failures.Add(1)
			return 0, fmt.Errorf("engine: checkpoint %s/%s: %w", u.name, key, err)
		}
	}
}

// Trim drops the unit's log entries up to and including upTo, once a
// checkpoint covers them. It is not fenced: a stale writer's checkpoints
// were refused, so what it trims is covered by an accepted checkpoint too.
func (u *Unit) Trim(ctx context.Context, upTo uint64) error {
	return u.e.Trim(ctx, u.name, upTo)
}

// Trim drops unit's log entries up to and including upTo.
func (e *Engine) Trim(ctx context.Context, unit string, upTo uint64) error {
	if !validUnit(unit) {
		return fmt.Errorf("engine: trim: invalid unit name %q", unit)
	}
	err := e.retry(ctx, func(ctx context.Context) error {
		return e.stream.Purge(ctx, jetstream.WithPurgeSubject(logSubject(unit)), jetstream.WithPurgeSequence(upTo+1))
	})
	if err != nil {
		e.n.failures.Add(1)
		return fmt.Errorf("engine: trim %s to %d: %w", unit, upTo, classify(err))
	}
	return nil
}

// Epoch returns the unit's current epoch in the engine (0: never acquired).
func (e *Engine) Epoch(ctx context.Context, unit string) (uint64, error) {
	if !validUnit(unit) {
		return 0, fmt.Errorf("engine: epoch: invalid unit name %q", unit)
	}
	seq, err := e.lastSeq(ctx, epochSubject(unit))
	if err != nil {
		e.n.failures.Add(1)
		return 0, fmt.Errorf("engine: epoch of %s: %w", unit, err)
	}
	return seq, nil
}

// lastSeq is the stream sequence of subj's last message, 0 when it has
// none. It reads through the stream's leader, not a replica that may lag.
func (e *Engine) lastSeq(ctx context.Context, subj string) (uint64, error) {
	m, err := e.lastMsg(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, classify(err)
	}
	return m.Sequence, nil
}

// lastMsg is subj's last message, read through the stream's leader.
func (e *Engine) lastMsg(ctx context.Context, subj string) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := e.retry(ctx, func(ctx context.Context) error {
		var err error
		m, err = e.stream.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		return err
	})
	if err == nil && m == nil {
		err = jetstream.ErrMsgNotFound
	}
	return m, err
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// classify maps the engine's errors that callers act on to ours, keeping
// the engine's text.
func classify(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum bytes") {
		return fmt.Errorf("%w: %v", ErrLogFull, err)
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
