//go:build !linux

package afxdp

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"

	"github.com/tern5g/tern/upf/upfu"
)

// N6 is one N6 interface (see the Linux build).
type N6 struct {
	NetworkInstance string
	Iface           string
	Gateway         netip.Addr
	Pool            netip.Prefix
}

// Config configures the driver (see the Linux build).
type Config struct {
	N3Iface  string
	N3Addr   netip.Addr
	N6       []N6
	Queues   int
	Frames   int
	ZeroCopy bool
	Batch    int
}

// Stats are the driver's counters (see the Linux build).
type Stats struct{}

// Driver is the AF_XDP driver; AF_XDP is Linux only.
type Driver struct{}

// ErrUnsupported is Open's error off Linux.
var ErrUnsupported = errors.New("afxdp: AF_XDP is Linux only")

// Open fails: AF_XDP is Linux only.
func Open(Config, *upfu.Pipeline, *slog.Logger) (*Driver, error) { return nil, ErrUnsupported }

func (*Driver) Start(context.Context) {}
func (*Driver) Send([]upfu.Packet)    {}
func (*Driver) Stats() Stats          { return Stats{} }
func (*Driver) Close() error          { return nil }
