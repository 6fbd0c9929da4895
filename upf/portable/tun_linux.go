//go:build linux

package portable

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/internal/tundev"
)

// setupLink sets the MTU, brings the device up, gives it the pool's first
// host address (the UE's N6 gateway, which the SMF never hands out: a UE can
// reach the data network's edge at a known address, as with Open5GS's
// ogstun) and routes the UE pool into it, so the kernel hands downlink
// packets for UEs to the UPF. It first checks that no other device has
// the pool (PoolInUseError), before it changes anything.
func setupLink(name string, mtu int, pool netip.Prefix) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	own := link.Attrs().Index
	if pool.IsValid() {
		conflict, err := poolRoute(pool, own)
		if err != nil {
			return err
		}
		if conflict != nil {
			return conflict
		}
	}
	if mtu > 0 {
		if err := netlink.LinkSetMTU(link, mtu); err != nil {
			return fmt.Errorf("link %s: MTU %d: %w", name, mtu, err)
		}
	}
	// The N6 device carries IPv4 only; IPv6 would only bring router
	// solicitations the pipeline drops. Best effort: IPv6 may be off.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0o644)
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	if pool.IsValid() && pool.Bits() <= 30 {
		gw := pool.Masked().Addr().Next()
		a := &netlink.Addr{IPNet: &net.IPNet{IP: gw.AsSlice(), Mask: net.CIDRMask(32, 32)}}
		if err := netlink.AddrReplace(link, a); err != nil {
			return fmt.Errorf("link %s: address %s: %w", name, gw, err)
		}
	}
	if pool.IsValid() {
		// Add, not replace: a route to the pool that appeared since the
		// check stays whose it is (EEXIST), and is reported.
		r := &netlink.Route{LinkIndex: own, Dst: ipNet(pool), Scope: netlink.SCOPE_LINK}
		if err := netlink.RouteAdd(r); err != nil {
			if errors.Is(err, unix.EEXIST) {
				conflict, cerr := poolRoute(pool, own)
				if cerr != nil {
					return cerr
				}
				if conflict == nil {
					return nil // ours already: a device that outlived its last holder (persistent)
				}
				return conflict
			}
			return fmt.Errorf("route %s dev %s: %w", pool, name, err)
		}
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Masked().Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// PoolRoute returns what routes some of pool's addresses in the calling
// thread's network namespace already, as a PoolInUseError, or nil when
// the pool is free to route to a new N6 device.
func PoolRoute(pool netip.Prefix) (*PoolInUseError, error) { return poolRoute(pool, 0) }

// poolRoute looks in the main routing table for a unicast route through
// a device other than own (0: none is ours) that takes some of pool's
// addresses: one for the pool or for part of it (the pool's own route
// would replace it, or would not get those addresses), or a device route
// of a TUN device that covers the pool (another UPF's wider pool, whose
// addresses in ours this UPF's more specific route would take). A wider
// route through a gateway (10.0.0.0/8 via a router) is the network the
// pool is carved from, and the default route is every network's: neither
// is in the way.
func poolRoute(pool netip.Prefix, own int) (*PoolInUseError, error) {
	pool = pool.Masked()
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Type != unix.RTN_UNICAST {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		a, ok := netip.AddrFromSlice(r.Dst.IP.To4())
		if !ok || ones == 0 {
			continue
		}
		dst := netip.PrefixFrom(a, ones).Masked()
		if !dst.Overlaps(pool) {
			continue
		}
		idx := r.LinkIndex
		if idx == 0 && len(r.MultiPath) > 0 {
			idx = r.MultiPath[0].LinkIndex
		}
		if idx == own {
			continue
		}
		link, lerr := netlink.LinkByIndex(idx)
		tun := lerr == nil && link.Type() == "tuntap"
		if dst.Bits() < pool.Bits() && (r.Gw != nil || !tun) {
			continue
		}
		e := &PoolInUseError{Pool: pool, Route: dst, Device: fmt.Sprintf("ifindex %d", idx)}
		if lerr == nil {
			e.Device = link.Attrs().Name
			if tun {
				e.Holders = tundev.Holders(e.Device)
			}
		}
		return e, nil
	}
	return nil, nil
}
