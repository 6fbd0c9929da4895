//go:build linux

package portable

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
)

// setupLink sets the MTU, brings the device up, gives it the pool's first
// host address (the UE's N6 gateway, which the SMF never hands out: a UE can
// reach the data network's edge at a known address, as with Open5GS's
// ogstun) and routes the UE pool into it, so the kernel hands downlink
// packets for UEs to the UPF.
func setupLink(name string, mtu int, pool netip.Prefix) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
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
		dst := &net.IPNet{IP: pool.Masked().Addr().AsSlice(), Mask: net.CIDRMask(pool.Bits(), pool.Addr().BitLen())}
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("route %s dev %s: %w", pool, name, err)
		}
	}
	return nil
}
