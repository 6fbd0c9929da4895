package userplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/internal/tundev"
)

// TUNConfig is one UE session's TUN device.
type TUNConfig struct {
	Name string     // e.g. "uesimtun0"; at most 15 bytes
	Addr netip.Addr // the session's IPv4 address, set as a /32 on the device
	// Table is the routing table holding the device's default route; a
	// rule "from Addr lookup Table" sends the session's traffic there, so
	// that a program binding to Addr (ping -I, curl --interface, iperf3 -B)
	// uses the session while the host's own traffic is untouched.
	Table int
	MTU   int // default 1400 (room for GTP-U/UDP/IP on a 1500-byte N3)
}

// TUN is a TUN device bound to one session: what the kernel sends into it
// goes uplink through the session, and downlink packets are written to it.
// It is a Receiver that takes every downlink packet.
type TUN struct {
	cfg    TUNConfig
	file   *os.File
	link   netlink.Link
	rule   *netlink.Rule
	route  *netlink.Route
	once   sync.Once
	done   chan struct{}
	closed atomic.Bool

	// counters
	Uplink, Downlink, WriteErrors, SendErrors atomic.Int64
}

// OpenTUN creates and configures the device: address, MTU, up, the policy
// rule and the default route in cfg.Table. It needs CAP_NET_ADMIN.
func OpenTUN(cfg TUNConfig) (*TUN, error) {
	if len(cfg.Name) == 0 || len(cfg.Name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("userplane: tun name %q: 1 to %d bytes", cfg.Name, unix.IFNAMSIZ-1)
	}
	if !cfg.Addr.Is4() {
		return nil, fmt.Errorf("userplane: tun %s: IPv4 address needed, have %s", cfg.Name, cfg.Addr)
	}
	if cfg.Table <= 0 || cfg.Table == unix.RT_TABLE_MAIN || cfg.Table == unix.RT_TABLE_LOCAL || cfg.Table == unix.RT_TABLE_DEFAULT {
		return nil, fmt.Errorf("userplane: tun %s: routing table %d: pick an unused one (not main/local/default)", cfg.Name, cfg.Table)
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1400
	}
	f, err := tundev.Open(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("userplane: %w", err)
	}
	t := &TUN{cfg: cfg, file: f, done: make(chan struct{})}
	if err := t.configure(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *TUN) configure() error {
	name := t.cfg.Name
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("userplane: tun %s: %w", name, err)
	}
	t.link = link
	// The session is IPv4: keep the kernel's IPv6 chatter (router
	// solicitations) off the tunnel. Best effort: IPv6 may be off already.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	prefix := netip.PrefixFrom(t.cfg.Addr, 32)
	addr := &netlink.Addr{IPNet: ipNet(prefix)}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("userplane: tun %s: add address %s: %w", name, prefix, err)
	}
	if err := netlink.LinkSetMTU(link, t.cfg.MTU); err != nil {
		return fmt.Errorf("userplane: tun %s: mtu %d: %w", name, t.cfg.MTU, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("userplane: tun %s: up: %w", name, err)
	}
	route := &netlink.Route{
		LinkIndex: link.Attrs().Index,
		Dst:       ipNet(netip.MustParsePrefix("0.0.0.0/0")),
		Table:     t.cfg.Table,
		Scope:     netlink.SCOPE_LINK,
	}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("userplane: tun %s: default route in table %d: %w", name, t.cfg.Table, err)
	}
	t.route = route
	rule := netlink.NewRule()
	rule.Src = ipNet(prefix)
	rule.Table = t.cfg.Table
	rule.Family = unix.AF_INET
	if err := netlink.RuleAdd(rule); err != nil {
		return fmt.Errorf("userplane: tun %s: rule from %s lookup %d: %w", name, t.cfg.Addr, t.cfg.Table, err)
	}
	t.rule = rule
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Name returns the device name.
func (t *TUN) Name() string { return t.cfg.Name }

// Receive writes a downlink packet to the device; it takes every packet.
func (t *TUN) Receive(pkt []byte) bool {
	if _, err := t.file.Write(pkt); err != nil {
		t.WriteErrors.Add(1)
	} else {
		t.Downlink.Add(1)
	}
	return true
}

// Serve reads what the kernel routes into the device and sends it uplink
// with send, until Close. It runs on the caller's goroutine.
func (t *TUN) Serve(send SendFunc) error {
	defer close(t.done)
	buf := make([]byte, 65535)
	for {
		n, err := t.file.Read(buf)
		if err != nil {
			if t.closed.Load() || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("userplane: tun %s: read: %w", t.cfg.Name, err)
		}
		t.Uplink.Add(1)
		if err := send(buf[:n]); err != nil {
			t.SendErrors.Add(1)
		}
	}
}

// Close removes the rule and the route and deletes the device. A running
// Serve returns.
func (t *TUN) Close() error {
	var errs []error
	t.once.Do(func() {
		t.closed.Store(true)
		if t.rule != nil {
			if err := netlink.RuleDel(t.rule); err != nil {
				errs = append(errs, fmt.Errorf("delete rule: %w", err))
			}
		}
		if t.route != nil {
			// Usually gone with the device; delete it first all the same.
			_ = netlink.RouteDel(t.route)
		}
		if err := t.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close: %w", err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("userplane: tun %s: %w", t.cfg.Name, err)
	}
	return nil
}

// Done is closed when Serve has returned.
func (t *TUN) Done() <-chan struct{} { return t.done }
