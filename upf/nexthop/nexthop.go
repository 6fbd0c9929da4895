// Package nexthop tells a data path where a packet to an address leaves:
// the interface, the MAC address of the next hop and the interface's own
// MAC and MTU, as the kernel's routing and neighbour tables say. The
// AF_XDP driver builds Ethernet headers from it, and the XDP fast path
// copies it into a map so that its programs need no FIB lookup per packet.
//
// The key is the address a packet is sent to (an N3 peer, an N6 gateway).
// Readers use an immutable map published with an atomic pointer: no lock,
// no allocation. A miss asks the resolver, without waiting, to look the
// address up. The resolver never sends ARP itself: the packet that missed
// goes through the kernel (a socket, or XDP_PASS), whose transmission makes
// the kernel resolve the neighbour, and a lookup a few milliseconds later
// finds it. Entries are refreshed every second, so a changed MAC or route
// is picked up within a second, and a neighbour the kernel dropped goes
// back to the kernel path.
package nexthop

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Hop is where packets to an address leave.
type Hop struct {
	Ifindex int
	MAC     [6]byte // the next hop's
	SrcMAC  [6]byte // the interface's own
	MTU     int     // the interface's
}

// Cache resolves addresses to hops (see the package comment).
type Cache struct {
	nl       *netlink.Handle
	log      *slog.Logger
	m        atomic.Pointer[map[netip.Addr]Hop]
	wants    chan netip.Addr
	onChange func(map[netip.Addr]Hop)
	// Resolver-only state.
	targets map[netip.Addr]bool
}

// New returns a cache that reads the tables through nl (a handle in the
// data path's network namespace). onChange, if not nil, gets every new
// map the resolver publishes, on the resolver's goroutine.
func New(nl *netlink.Handle, log *slog.Logger, onChange func(map[netip.Addr]Hop)) *Cache {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{nl: nl, log: log, wants: make(chan netip.Addr, 256), targets: map[netip.Addr]bool{}, onChange: onChange}
	empty := map[netip.Addr]Hop{}
	c.m.Store(&empty)
	return c
}

// Lookup returns the hop for a, asking the resolver on a miss.
func (c *Cache) Lookup(a netip.Addr) (Hop, bool) {
	h, ok := (*c.m.Load())[a]
	if !ok {
		c.Want(a)
	}
	return h, ok
}

// Want asks the resolver to resolve a and keep it resolved.
func (c *Cache) Want(a netip.Addr) {
	select {
	case c.wants <- a:
	default: // the resolver is behind; a later miss asks again
	}
}

// Run resolves until stop closes.
func (c *Cache) Run(stop <-chan struct{}) {
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
func (c *Cache) resolveAll() bool {
	m := make(map[netip.Addr]Hop, len(c.targets))
	for a := range c.targets {
		if h, ok := c.resolve(a); ok {
			m[a] = h
		}
	}
	c.m.Store(&m)
	if c.onChange != nil {
		c.onChange(m)
	}
	return len(m) == len(c.targets)
}

// nudUsable are the neighbour states whose MAC address can be used
// (linux/neighbour.h: NUD_REACHABLE, STALE, DELAY, PROBE, NOARP,
// PERMANENT; not INCOMPLETE, FAILED), spelled out because netlink names
// them only on Linux builds.
const nudUsable = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80

// resolve finds a's next hop from the kernel's route to a and the
// neighbour entry of its gateway (or of a, when a is on link).
func (c *Cache) resolve(a netip.Addr) (Hop, bool) {
	var none Hop
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
	link, err := c.nl.LinkByIndex(r.LinkIndex)
	if err != nil || len(link.Attrs().HardwareAddr) != 6 {
		return none, false
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
		if n.State&nudUsable == 0 {
			return none, false
		}
		h := Hop{Ifindex: r.LinkIndex, MTU: link.Attrs().MTU}
		copy(h.MAC[:], n.HardwareAddr)
		copy(h.SrcMAC[:], link.Attrs().HardwareAddr)
		return h, true
	}
	return none, false
}
