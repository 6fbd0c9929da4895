package portable

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/tern5g/tern/internal/tundev"
)

// PoolInUseError says that a UE pool, or part of it, is routed to a device
// that is not the driver's own: another UPF (another `tern up`, say)
// serves those addresses. Taking the route over would cut that UPF's
// downlink, and would remove the route altogether when this driver's
// device goes, so the driver refuses to start instead.
type PoolInUseError struct {
	Pool    netip.Prefix    // the pool to route
	Route   netip.Prefix    // the route in the way
	Device  string          // its device
	Holders []tundev.Holder // the processes holding Device open, where it is a TUN and they can be seen
}

func (e *PoolInUseError) Error() string {
	return e.Summary() + ": another UPF serves these addresses and would lose its downlink; " +
		"give this one pools of its own (upf.n6[].pool and smf.dnns[].pool) or stop the other"
}

// Summary is the error's first part: what is in the way and who holds it.
func (e *PoolInUseError) Summary() string {
	var what string
	switch {
	case e.Route == e.Pool:
		what = fmt.Sprintf("UE pool %s is routed to device %s already", e.Pool, e.Device)
	case e.Route.Bits() > e.Pool.Bits():
		what = fmt.Sprintf("part of UE pool %s (%s) is routed to device %s already", e.Pool, e.Route, e.Device)
	default:
		what = fmt.Sprintf("UE pool %s is routed to device %s already, within %s", e.Pool, e.Device, e.Route)
	}
	return what + ", " + holders(e.Holders)
}

// DeviceInUseError says that an N6 device's name is taken by a TUN device
// another process holds open (the kernel refuses a second holder: EBUSY):
// another UPF with the same upf.n6[].tun, whose pool is routed there.
type DeviceInUseError struct {
	Device  string
	Holders []tundev.Holder
}

func (e *DeviceInUseError) Error() string {
	return e.Summary() + ": another UPF serves its pool; " +
		"give this one devices and pools of its own (upf.n6[].tun, upf.n6[].pool and smf.dnns[].pool) or stop the other"
}

// Summary is the error's first part: the device and who holds it.
func (e *DeviceInUseError) Summary() string {
	return fmt.Sprintf("N6 device %s is in use, %s", e.Device, holders(e.Holders))
}

func holders(hs []tundev.Holder) string {
	if len(hs) == 0 {
		return "held by no process seen here"
	}
	var s []string
	for _, h := range hs {
		s = append(s, fmt.Sprintf("%d (%s)", h.PID, h.Command))
	}
	if len(s) == 1 {
		return "held by process " + s[0]
	}
	return "held by one of processes " + strings.Join(s, ", ")
}
