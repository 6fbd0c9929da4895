// Package poll waits for a condition that another goroutine or process
// makes true and that nothing signals: a counter reaching a value, a
// state changing. For benchmarks and drills, which read such state from
// outside.
package poll

import (
	"context"
	"errors"
	"time"
)

// ErrTimeout is Until's error when d passes first.
var ErrTimeout = errors.New("poll: timed out")

// Until checks cond every interval until it holds (nil), d passes
// (ErrTimeout) or ctx ends (its error).
func Until(ctx context.Context, d, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return ErrTimeout
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(interval)
	}
	return nil
}
