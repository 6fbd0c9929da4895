package upf_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/tern5g/tern/upf"
)

// TestN3InUseSaidFirst: when another socket holds N3, the error starts
// with that and who holds it (here this test), before the reasons each
// driver auto tried declined, where it used to be the last of them.
func TestN3InUseSaidFirst(t *testing.T) {
	held, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	n3 := held.LocalAddr().String()
	for _, driver := range []string{upf.DriverAuto, upf.DriverPortable} {
		u, err := upf.New(upf.Config{N3Addr: n3, NoN6: true, Driver: driver}, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = u.Start(context.Background())
		if err == nil {
			u.Close()
			t.Fatalf("driver %s started on a taken N3", driver)
		}
		want := fmt.Sprintf("upf: N3 %s is in use by pid %d (", n3, os.Getpid())
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("driver %s: %q, want it to start with %q", driver, err, want)
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("driver %s: %v does not wrap EADDRINUSE", driver, err)
		}
	}
}
