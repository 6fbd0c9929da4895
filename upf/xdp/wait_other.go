//go:build !linux

package xdp

import "time"

// waitPrograms: XDP is Linux only, so nothing runs; the pause keeps the
// contract of the Linux build.
func waitPrograms() { time.Sleep(5 * time.Millisecond) }
