//go:build !linux

// Package tundev opens Linux TUN devices: the UPF's N6 devices and the
// simulator's per-session UE devices.
package tundev

import (
	"errors"
	"os"
)

// Open is Linux-only.
func Open(name string) (*os.File, error) { return nil, errors.ErrUnsupported }

// Holder is a process that has a TUN device open.
type Holder struct {
	PID     int
	Command string
}

// Holders is Linux-only: none are known elsewhere.
func Holders(name string) []Holder { return nil }
