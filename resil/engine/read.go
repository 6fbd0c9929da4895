package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// replayBatch is how many entries one fetch of a replay asks for.
const replayBatch = 256

// ReplayFrom calls fn, in order, for each entry of unit's log from
// sequence from (inclusive) to the last one acknowledged when it began.
// An entry that fails its checksum stops the replay with an error that
// wraps ErrCorrupt and names its sequence (the caller rebuilds from the
// checkpoint before it); an error of fn stops it too and is returned.
func (e *Engine) ReplayFrom(ctx context.Context, unit string, from uint64, fn func(seq uint64, data []byte) error) error {
	if !validUnit(unit) {
		return fmt.Errorf("engine: replay: invalid unit name %q", unit)
	}
	subj := logSubject(unit)
	last, err := e.lastSeq(ctx, subj)
	if err != nil {
		e.n.failures.Add(1)
		return fmt.Errorf("engine: replay %s: %w", unit, err)
	}
	if from == 0 {
		from = 1
	}
	if last < from {
		return nil
	}
	var cons jetstream.Consumer
	err = e.retry(ctx, func(ctx context.Context) error {
		var err error
		cons, err = e.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects:    []string{subj},
			DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:       from,
			InactiveThreshold: 10 * time.Second,
		})
		return err
	})
	if err != nil {
		e.n.failures.Add(1)
		return fmt.Errorf("engine: replay %s: consumer: %w", unit, err)
	}
	for {
		batch, err := cons.Fetch(replayBatch, jetstream.FetchContext(ctx))
		if err != nil {
			e.n.failures.Add(1)
			return fmt.Errorf("engine: replay %s: %w", unit, err)
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				e.n.failures.Add(1)
				return fmt.Errorf("engine: replay %s: %w", unit, err)
			}
			seq := md.Sequence.Stream
			data, err := unframe(m.Data())
			if err != nil {
				e.n.corrupt.Add(1)
				return fmt.Errorf("engine: replay %s at %d: %w", unit, seq, err)
			}
			if err := fn(seq, data); err != nil {
				return err
			}
			if seq >= last {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			e.n.failures.Add(1)
			return fmt.Errorf("engine: replay %s: %w", unit, err)
		}
		if err := ctx.Err(); err != nil {
			e.n.failures.Add(1)
			return fmt.Errorf("engine: replay %s: %w", unit, err)
		}
	}
}

// GetCheckpoint returns the checkpoint stored under key for unit and its
// revision. ErrNotFound when there is none, ErrCorrupt when it fails its
// checksum.
func (e *Engine) GetCheckpoint(ctx context.Context, unit, key string) ([]byte, uint64, error) {
	if !validUnit(unit) || !validKey(key) {
		return nil, 0, fmt.Errorf("engine: checkpoint: invalid unit %q or key %q", unit, key)
	}
	m, err := e.lastMsg(ctx, checkpointSubject(unit, key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, fmt.Errorf("%w: checkpoint %s/%s", ErrNotFound, unit, key)
	}
	if err != nil {
		e.n.failures.Add(1)
		return nil, 0, fmt.Errorf("engine: checkpoint %s/%s: %w", unit, key, classify(err))
	}
	data, err := unframe(m.Data)
	if err != nil {
		e.n.corrupt.Add(1)
		return nil, 0, fmt.Errorf("engine: checkpoint %s/%s at %d: %w", unit, key, m.Sequence, err)
	}
	return data, m.Sequence, nil
}
