//go:build linux

package sockowner

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/tern5g/tern/internal/netnstest"
)

// TestFindsThisProcess: a UDP socket and a listening TCP socket this test
// opens are found, as this process's; a free port is held by nobody.
func TestFindsThisProcess(t *testing.T) {
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	me := fmt.Sprintf("pid %d (", os.Getpid())
	ua := u.LocalAddr().(*net.UDPAddr).AddrPort()
	if got := UDP(ua); !strings.HasPrefix(got, me) {
		t.Errorf("UDP(%v) = %q, want %q...", ua, got, me)
	}
	ta := l.Addr().(*net.TCPAddr).AddrPort()
	if got := TCP(ta); !strings.HasPrefix(got, me) {
		t.Errorf("TCP(%v) = %q, want %q...", ta, got, me)
	}
	// The wildcard address of the port matches a socket on one address.
	if got := UDP(netip.AddrPortFrom(netip.IPv4Unspecified(), ua.Port())); !strings.HasPrefix(got, me) {
		t.Errorf("UDP(0.0.0.0:%d) = %q", ua.Port(), got)
	}
	l.Close()
	if got := TCP(ta); got != "" {
		t.Errorf("TCP(%v) after close = %q, want none", ta, got)
	}
}

// TestParseProcAddr: /proc/net's hex words in host byte order, as a
// little-endian kernel prints them (see /proc/net/udp).
func TestParseProcAddr(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the samples are a little-endian machine's")
	}
	for s, want := range map[string]string{
		"0100007F:0868":                         "127.0.0.1:2152",
		"B80D0120000000000000000001000000:2265": "[2001:db8::1]:8805",
		"00000000000000000000000000000000:1F90": "[::]:8080",
	} {
		if ap, ok := parseProcAddr(s); !ok || ap != netip.MustParseAddrPort(want) {
			t.Errorf("%s: %v %v, want %s", s, ap, ok, want)
		}
	}
	if _, ok := parseProcAddr("zz:0868"); ok {
		t.Error("bad hex accepted")
	}
}

// TestCallingThreadsNamespace: a socket bound in the calling thread's
// network namespace, which is not the main thread's (a UPF that lab.Do
// started there), is found: the tables read are the calling thread's, not
// /proc/self/net's, which are the main thread's and would name whoever
// holds the port there.
func TestCallingThreadsNamespace(t *testing.T) {
	me := fmt.Sprintf("pid %d (", os.Getpid())
	netnstest.Run(t, func() {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{})
		if err != nil {
			t.Error(err)
			return
		}
		defer u.Close()
		ua := u.LocalAddr().(*net.UDPAddr).AddrPort()
		if got := UDP(ua); !strings.HasPrefix(got, me) {
			t.Errorf("UDP(%v) in a namespace of its own = %q, want %q...", ua, got, me)
		}
	})
}
