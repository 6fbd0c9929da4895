//go:build linux

package afxdp

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// neighCache maps next-hop lookups to MAC addresses for the workers: the
// key is the address a packet goes to (an N3 peer, an N6 gateway), the
// value the MAC of its next hop. Workers read an immutable map published
// with an atomic pointer (no lock, no allocation); a miss asks the
// resolver, without waiting, to look the address up. The resolver reads
// the kernel's route and neighbour tables; it never sends ARP itself: the
// packet that missed goes through a kernel socket, whose transmission
// makes the kernel resolve the neighbour, and the next lookup finds it.
// Entries are refreshed every second, so a changed MAC or route is picked
// up and a neighbour the kernel dropped goes back to the kernel path.
type neighCache struct {
	nl    *netlink.Handle
	log   *slog.Logger
	m     atomic.Pointer[map[netip.Addr]nextHop]
	wants chan netip.Addr
	// Resolver-only state.
	targets map[netip.Addr]bool
}

func newNeighCache(nl *netlink.Handle, log *slog.Logger) *neighCache {
	c := &neighCache{nl: nl, log: log, wants: make(chan netip.Addr, 256), targets: map[netip.Addr]bool{}}
	empty := map[netip.Addr]nextHop{}
	c.m.Store(&empty)
	return c
}

// nextHop is where a packet to an address goes: out of device ifindex to
// MAC mac.
type nextHop struct {
	mac     [6]byte
	ifindex int
}

// lookup returns the next hop for a, asking the resolver on a miss.
func (c *neighCache) lookup(a netip.Addr) (nextHop, bool) {
	h, ok := (*c.m.Load())[a]
	if !ok {
		c.want(a)
	}
	return h, ok
}

func (c *neighCache) want(a netip.Addr) {
	select {
	case c.wants <- a:
	default: // the resolver is behind; a later miss asks again
	}
}

// run resolves until stop closes.
func (c *neighCache) run(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// An address the kernel is still resolving (its ARP request is out,
	// sent for the packet that went by the kernel path) is looked up
	// again soon, not only at the next tick: until then its packets take
	// the kernel path.
	const retry = 5 * time.Millisecond
	again := time.NewTimer(time.Hour)
	defer again.Stop()
	var last time.Time
	for {
		select {
		case <-stop:
			return
		case a := <-c.wants:
			if c.targets[a] {
				if _, ok := (*c.m.Load())[a]; ok || time.Since(last) < retry {
					continue // resolved, or tried a moment ago
				}
			}
			c.targets[a] = true
		case <-tick.C:
		case <-again.C:
		}
		last = time.Now()
		if !c.resolveAll() {
			again.Reset(retry)
		}
	}
}

// resolveAll looks every target up and publishes the result; false: some
// are not resolved yet.
func (c *neighCache) resolveAll() bool {
	m := make(map[netip.Addr]nextHop, len(c.targets))
	for a := range c.targets {
		if h, ok := c.resolve(a); ok {
			m[a] = h
		}
	}
	c.m.Store(&m)
	return len(m) == len(c.targets)
}

// resolve finds a's next hop from the kernel's route to a and the
// neighbour entry of its gateway (or of a, when a is on link).
func (c *neighCache) resolve(a netip.Addr) (nextHop, bool) {
	var none nextHop
	routes, err := c.nl.RouteGet(a.AsSlice())
	if err != nil || len(routes) == 0 {
		return none, false
	}
	r := routes[0]
	hop := a
	if r.Gw != nil {
		if g, ok := netip.AddrFromSlice(r.Gw); ok {
			hop = g.Unmap()
		}
	}
	neighs, err := c.nl.NeighList(r.LinkIndex, unix.AF_INET)
	if err != nil {
		return none, false
	}
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || ip.Unmap() != hop || len(n.HardwareAddr) != 6 {
			continue
		}
		if n.State&(netlink.NUD_REACHABLE|netlink.NUD_STALE|netlink.NUD_DELAY|netlink.NUD_PROBE|netlink.NUD_PERMANENT|netlink.NUD_NOARP) == 0 {
			return none, false
		}
		h := nextHop{ifindex: r.LinkIndex}
		copy(h.mac[:], n.HardwareAddr)
		return h, true
	}
	return none, false
}
