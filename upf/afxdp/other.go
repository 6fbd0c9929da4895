//go:build !linux

package afxdp

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"

	"github.com/tern5g/tern/upf/upfu"
)

// Driver is the AF_XDP driver; AF_XDP is Linux only.
type Driver struct{}

// ErrUnsupported is Open's error off Linux.
var ErrUnsupported = errors.New("afxdp: AF_XDP is Linux only")

// Open fails: AF_XDP is Linux only.
func Open(Config, *upfu.Pipeline, *slog.Logger) (*Driver, error) { return nil, ErrUnsupported }

func (*Driver) Start(context.Context)  {}
func (*Driver) Send([]upfu.Packet)     {}
func (*Driver) Stats() Stats           { return Stats{} }
func (*Driver) Close() error           { return nil }
func (*Driver) N3Addr() netip.AddrPort { return netip.AddrPort{} }
