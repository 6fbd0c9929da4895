package upf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/tern5g/tern/internal/affinity"
	"github.com/tern5g/tern/internal/sockowner"
	"github.com/tern5g/tern/upf/afxdp"
	"github.com/tern5g/tern/upf/portable"
	"github.com/tern5g/tern/upf/upfu"
	"github.com/tern5g/tern/upf/xdp"
)

// ioDriver moves packets between the interfaces and the pipeline, and is
// the pipeline's Sink for the packets it makes outside a worker's batch
// (drained buffers, End Markers, Echo). portable.Driver and afxdp.Driver
// are ioDrivers; the xdp driver is the portable one with an offload in
// front (datapath.go).
type ioDriver interface {
	upfu.Sink
	Start(ctx context.Context)
	N3Addr() netip.AddrPort
	Close() error
}

// DriverStats are a driver's packet counts, the same for every driver:
// packets read from and written to N3 and N6 by the user-space path, and
// its I/O errors.
type DriverStats struct {
	N3Rx, N3Tx, N6Rx, N6Tx uint64
	RxErrors, TxErrors     uint64
}

// openDriver opens the configured driver, or for "auto" the first of xdp,
// afxdp and portable that opens, and says which and why in the log. It
// runs in the network namespace of the calling thread (Start's).
func (u *UPF) openDriver(ctx context.Context) (name string, d ioDriver, err error) {
	want := u.cfg.Driver
	candidates := []string{want}
	if want == DriverAuto {
		candidates = []string{DriverXDP, DriverAFXDP, DriverPortable}
	}
	var why []string
	var format []string // "%s: %w" per driver declined, so that err wraps each
	var args []any
	for _, c := range candidates {
		d, err := u.open(ctx, c)
		if err == nil {
			if want == DriverAuto {
				u.log.Info("upf data path: driver auto chose "+c, "driver", c, "declined", strings.Join(why, "; "))
			}
			return c, d, nil
		}
		if want != DriverAuto {
			return "", nil, u.inUseFirst(fmt.Errorf("driver %s: %w", c, err))
		}
		why = append(why, c+": "+err.Error())
		format = append(format, "%s: %w")
		args = append(args, c, err)
	}
	return "", nil, u.inUseFirst(fmt.Errorf("driver auto: none opened ("+strings.Join(format, "; ")+")", args...))
}

// inUseFirst puts what another UPF holds at the head of err, the
// drivers' failure: a taken N3 address, an N6 device another process has
// open, or a UE pool routed elsewhere. Of what auto tries the portable
// driver comes last, so the one reason an operator can act on (another
// UPF, often another tern up) ended a long list of why xdp and afxdp
// declined.
func (u *UPF) inUseFirst(err error) error {
	var device *portable.DeviceInUseError
	var pool *portable.PoolInUseError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		who := ""
		if owner := sockowner.UDP(u.n3); owner != "" {
			who = " by " + owner
		}
		return fmt.Errorf("N3 %s is in use%s: %w", u.n3, who, err)
	case errors.As(err, &device):
		return fmt.Errorf("%s: %w", device.Summary(), err)
	case errors.As(err, &pool):
		return fmt.Errorf("%s: %w", pool.Summary(), err)
	}
	return err
}

// open opens one driver.
func (u *UPF) open(ctx context.Context, name string) (ioDriver, error) {
	switch name {
	case DriverPortable:
		return u.openPortable()
	case DriverAFXDP:
		cfg, err := u.afxdpConfig()
		if err != nil {
			return nil, err
		}
		return afxdp.Open(cfg, u.pipe, u.log.With("part", "afxdp"))
	case DriverXDP:
		return u.openXDP(ctx)
	}
	return nil, fmt.Errorf("unknown driver %q", name)
}

func (u *UPF) openPortable() (*portable.Driver, error) {
	n6 := u.n6
	if u.cfg.NoN6 {
		n6 = nil
	}
	return portable.Open(portable.Config{N3: u.n3.String(), N6: n6, Readers: u.cfg.Workers}, u.pipe, u.log.With("part", "driver"))
}

// afxdpConfig is the afxdp driver's configuration: every N6 needs its
// interface, since the pipeline sends each DNN's packets there.
func (u *UPF) afxdpConfig() (afxdp.Config, error) {
	if u.cfg.NoN6 {
		return afxdp.Config{}, errors.New("noN6 is set: no N6 interfaces to attach to")
	}
	n3if, err := u.n3Iface()
	if err != nil {
		return afxdp.Config{}, err
	}
	cfg := afxdp.Config{N3Iface: n3if, N3Addr: u.n3.Addr(), Queues: u.cfg.Workers}
	for i, c := range u.cfg.N6 {
		if c.Iface == "" {
			return afxdp.Config{}, fmt.Errorf("n6[%d] (%s) has no iface", i, c.DNN)
		}
		gw, err := u.gateway(i)
		if err != nil {
			return afxdp.Config{}, err
		}
		cfg.N6 = append(cfg.N6, afxdp.N6{NetworkInstance: c.DNN, Iface: c.Iface, Gateway: gw, Pool: u.n6[i].Pool})
	}
	return cfg, nil
}

// gateway is N6 i's next hop (invalid: none configured).
func (u *UPF) gateway(i int) (netip.Addr, error) {
	g := u.cfg.N6[i].Gateway
	if g == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(g)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("n6[%d].gateway %q: want an IPv4 address", i, g)
	}
	return a, nil
}

// n3Iface is the N3 interface: N3Iface, or the interface that holds the
// N3 address. A loopback N3 has none to attach to.
func (u *UPF) n3Iface() (string, error) {
	if u.cfg.N3Iface != "" {
		return u.cfg.N3Iface, nil
	}
	a := u.n3.Addr()
	if a.IsLoopback() || a.IsUnspecified() {
		return "", fmt.Errorf("N3 address %v is not on a network interface (set n3Iface)", a)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if p, err := netip.ParsePrefix(ad.String()); err == nil && p.Addr() == a {
				return ifc.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds the N3 address %v (set n3Iface)", a)
}

// openXDP opens the xdp driver: the XDP offload on the N3 interface and
// every N6 that has one, in front of the pipeline, and the portable
// driver as the host path that the programs pass everything else to.
func (u *UPF) openXDP(context.Context) (ioDriver, error) {
	n3if, err := u.n3Iface()
	if err != nil {
		return nil, err
	}
	var ports []xdp.Port
	for i, c := range u.cfg.N6 {
		if c.Iface == "" {
			continue // the DNN's traffic stays on the host path
		}
		gw, err := u.gateway(i)
		if err != nil {
			return nil, err
		}
		ports = append(ports, xdp.Port{NetworkInstance: c.DNN, Iface: c.Iface, Gateway: gw})
	}
	if len(ports) == 0 {
		return nil, errors.New("no n6 entry has an iface: the fast path would forward nothing")
	}
	var pools []netip.Prefix
	for _, n := range u.n6 {
		if n.Pool.IsValid() {
			pools = append(pools, n.Pool)
		}
	}
	var cpus []int
	if u.cfg.XDPCPUs != "" {
		cpus, _ = xdp.ParseCPUList(u.cfg.XDPCPUs) // checked by New
	}
	fp, err := xdp.Load(xdp.Config{N3Iface: n3if, N3Addr: u.n3.Addr(), N6: ports, Pools: pools, CPUs: u.cfg.Workers,
		SteerCPUs: cpus, Logger: u.log.With("part", "xdp")})
	if err != nil {
		return nil, err
	}
	host, err := u.openPortable()
	if err != nil {
		fp.Close()
		return nil, fmt.Errorf("host path: %w", err)
	}
	return &xdpDriver{Driver: host, fast: fp, dp: u.dp, cpus: cpus, log: u.log}, nil
}

// xdpDriver is the xdp driver: the portable driver's I/O for the host
// path, with the offload attached to the data path while it runs.
type xdpDriver struct {
	*portable.Driver
	fast *xdp.FastPath
	dp   *dataPath
	log  *slog.Logger
	// cpus are upf.xdpCPUs: the fast path's own CPUs, which the process's
	// threads leave while the driver runs (excluded).
	cpus     []int
	excluded *affinity.Exclusion
}

// syncInterval is how often the offload's usage counts are added in: a
// volume threshold is noticed within about that.
const syncInterval = 100 * time.Millisecond

func (x *xdpDriver) Start(ctx context.Context) {
	if len(x.cpus) > 0 {
		// The cpumap threads that run the fast path there have normal
		// priority: a Go thread the kernel puts on their CPU takes it from
		// them for a scheduler slice, long enough to overflow their queues
		// (package affinity).
		ex, err := affinity.Exclude(x.cpus)
		if err != nil {
			x.log.Warn("xdp: the process's threads may still run on the fast path's CPUs", "cpus", x.cpus, "err", err)
		} else {
			x.excluded = ex
			x.log.Info("xdp: the process's threads leave the fast path's CPUs", "cpus", x.cpus)
		}
	}
	x.Driver.Start(ctx)
	x.dp.attach(x.fast)
	go x.dp.syncEvery(ctx, syncInterval)
}

func (x *xdpDriver) Close() error {
	x.dp.detach()
	err := errors.Join(x.fast.Close(), x.Driver.Close())
	if x.excluded != nil {
		x.excluded.Restore()
		x.excluded = nil
	}
	return err
}
