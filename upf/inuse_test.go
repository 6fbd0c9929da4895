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

	"github.com/tern5g/tern/internal/tundev"
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

// TestN6DeviceInUseSaidFirst: an N6 device another process holds (here
// this test: a second UPF with the same upf.n6[].tun) is said first, with
// who holds it, not as the last driver's "TUNSETIFF: device or resource
// busy".
func TestN6DeviceInUseSaidFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN devices")
	}
	name := fmt.Sprintf("tbusy%d", os.Getpid()%100000)
	f, err := tundev.Open(name)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	u, err := upf.New(upf.Config{N3Addr: "127.0.0.1:0", Driver: upf.DriverAuto,
		N6: []upf.N6Config{{DNN: "internet", TUN: name, Pool: "10.222.0.0/16"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = u.Start(context.Background())
	if err == nil {
		u.Close()
		t.Fatal("a UPF started on an N6 device another holds")
	}
	want := fmt.Sprintf("upf: N6 device %s is in use, held by process %d (", name, os.Getpid())
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q, want it to start with %q", err, want)
	}
}
