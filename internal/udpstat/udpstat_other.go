//go:build !linux

package udpstat

import (
	"errors"
	"syscall"
)

// Read returns an error: the counters are read with Linux's SO_MEMINFO.
func Read(conn syscall.Conn) (Counters, error) {
	return Counters{}, errors.New("udpstat: a socket's kernel counters are read on Linux only")
}
