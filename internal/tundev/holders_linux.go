//go:build linux

package tundev

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Holder is a process that has a TUN device open.
type Holder struct {
	PID     int
	Command string // /proc/PID/comm
}

// Holders lists the processes with a descriptor attached to a TUN device
// called name, from /proc/*/fdinfo (the kernel writes "iff:\tNAME" there
// for a descriptor of /dev/net/tun). It sees the processes this one may
// inspect (all of them as root). Device names are per network namespace
// and fdinfo does not say which namespace's device a descriptor holds,
// so a holder of a device of that name in another namespace is listed
// too.
func Holders(name string) []Holder {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := "iff:\t" + name
	var out []Holder
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err != nil || target != "/dev/net/tun" {
				continue
			}
			info, err := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name()))
			if err != nil || !slices.Contains(strings.Split(string(info), "\n"), want) {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			out = append(out, Holder{PID: pid, Command: strings.TrimSpace(string(comm))})
			break
		}
	}
	return out
}
