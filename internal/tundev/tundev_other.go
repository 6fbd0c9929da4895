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
