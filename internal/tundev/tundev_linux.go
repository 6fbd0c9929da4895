//go:build linux

// Package tundev opens Linux TUN devices: the UPF's N6 devices and the
// simulator's per-session UE devices.
package tundev

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open creates (or attaches to) the IPv4 TUN device name, without packet
// information headers (IFF_NO_PI: every read and write is one IP packet).
// The descriptor is non-blocking, so reads go through the runtime poller
// and Close wakes a blocked Read. Needs CAP_NET_ADMIN.
func Open(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUN name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}
