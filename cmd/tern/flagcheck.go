package main

import (
	"fmt"
	"math"
	"time"
)

// Flag checks: each names the flag and what it accepts, so that a bad
// value is refused before anything starts rather than replaced by a
// default or failing somewhere deep inside.

// intIn checks that --name is in min..max.
func intIn(name string, v, min, max int) error {
	if v < min || v > max {
		if max == math.MaxInt {
			return fmt.Errorf("--%s: %d, want %d or more", name, v, min)
		}
		return fmt.Errorf("--%s: %d, want %d..%d", name, v, min, max)
	}
	return nil
}

// uintAtMost checks that --name is max or less.
func uintAtMost(name string, v, max uint64) error {
	if v > max {
		return fmt.Errorf("--%s: %d, want 0..%d", name, v, max)
	}
	return nil
}

// atLeast checks that --name is min or more.
func atLeast(name string, v, min int) error { return intIn(name, v, min, math.MaxInt) }

// positiveDuration checks that --name is more than zero.
func positiveDuration(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--%s: %v, want a positive duration (e.g. 500ms, 2s)", name, d)
	}
	return nil
}

// nonNegativeDuration checks that --name is zero or more.
func nonNegativeDuration(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--%s: %v, want 0 or a positive duration", name, d)
	}
	return nil
}

// checkFlags returns the first failed check.
func checkFlags(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// streamPayload bounds a benchmark stream's UDP payload: its 20-byte
// header (magic, sequence number, timestamp) up to what a 1,400-byte DNN
// MTU leaves after IPv4 and UDP.
const minStreamPayload, maxStreamPayload = 20, 1400 - 28
