//go:build linux

package udpstat

import (
	"net"
	"testing"

	"github.com/tern5g/tern/internal/netnstest"
)

// TestReadAnyThread: a socket opened in another network namespace than
// the main thread's (a gNB that lab.Do started there) is read from any
// thread: the counters are the socket's own, not a namespace's table.
func TestReadAnyThread(t *testing.T) {
	var rx *net.UDPConn
	netnstest.Run(t, func() {
		var err error
		if rx, err = net.ListenUDP("udp4", &net.UDPAddr{}); err != nil {
			t.Error(err)
		}
	})
	if rx == nil {
		return
	}
	defer rx.Close()
	if _, err := Read(rx); err != nil {
		t.Fatalf("a socket of another namespace, read from this one: %v", err)
	}
}
