// Package sockowner finds the process that holds a local address, so that
// "address already in use" can say by whom ("N3 127.0.0.1:2152 is in use
// by pid 4242 (tern up)"). It reads the kernel's socket tables
// (udp, tcp and their IPv6 twins in /proc/thread-self/net) for the
// socket's inode and the processes' descriptors (/proc/PID/fd) for the
// inode: it sees the network namespace of the calling thread (a UPF that
// lab.Do started in a namespace of its own asks about that namespace's
// ports, not the main thread's, which /proc/net and /proc/self/net show),
// and only the processes whose descriptors this user may read (all of
// them for root).
package sockowner

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// UDP describes the process holding a UDP socket bound to addr (or to the
// wildcard address of its family and addr's port): "pid 4242 (tern up)";
// "" when none is found.
func UDP(addr netip.AddrPort) string { return describe("udp", addr) }

// TCP is UDP for a listening TCP socket.
func TCP(addr netip.AddrPort) string { return describe("tcp", addr) }

// proc is the root of the proc file system (tests point it elsewhere).
var proc = "/proc"

func describe(proto string, addr netip.AddrPort) string {
	inodes := map[string]bool{}
	for _, table := range []string{proto, proto + "6"} {
		for _, ino := range boundInodes(filepath.Join(proc, "thread-self", "net", table), proto == "tcp", addr) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	pid, cmd := holder(inodes)
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf("pid %d (%s)", pid, cmd)
}

// tcpListen is the TCP_LISTEN state in /proc/net/tcp's st column.
const tcpListen = "0A"

// boundInodes returns the inodes of the sockets in table bound to addr's
// port on addr or on a wildcard address; for TCP, listening ones only.
func boundInodes(table string, listenOnly bool, addr netip.AddrPort) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || (listenOnly && fields[3] != tcpListen) {
			continue
		}
		local, ok := parseProcAddr(fields[1])
		if !ok || local.Port() != addr.Port() {
			continue
		}
		want := addr.Addr().Unmap()
		if l := local.Addr().Unmap(); l == want || l.IsUnspecified() || want.IsUnspecified() {
			out = append(out, fields[9])
		}
	}
	return out
}

// parseProcAddr parses /proc/net's "0100007F:0868": the address as the
// kernel's 32-bit words in this machine's byte order, the port as a
// number, both in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), true
}

// holder finds a process with a descriptor on one of the socket inodes:
// its pid and command line.
func holder(inodes map[string]bool) (int, string) {
	procs, err := os.ReadDir(proc)
	if err != nil {
		return 0, ""
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(proc, p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				return pid, command(p.Name())
			}
		}
	}
	return 0, ""
}

// command is a process's command line, shortened for a message.
func command(pid string) string {
	b, err := os.ReadFile(filepath.Join(proc, pid, "cmdline"))
	args := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || len(args) == 0 {
		comm, _ := os.ReadFile(filepath.Join(proc, pid, "comm"))
		return strings.TrimSpace(string(comm))
	}
	args[0] = filepath.Base(args[0])
	s := strings.Join(args, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
