package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/upf"
)

// testLab builds a lab with a per-process prefix and removes it when the
// test ends, failed or not.
func testLab(t *testing.T) *Lab {
	t.Helper()
	if err := Check(); err != nil {
		t.Skip(err)
	}
	l, err := New(Config{Prefix: fmt.Sprintf("tl%d", os.Getpid()%100000)})
	if err != nil {
		t.Fatal(err)
	}
	l.Down() // leftovers of a crashed run with the same pid
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	if err := l.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestUpServesEveryDNAndDownRemovesAll(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (make tools installs it)")
	}
	l := testLab(t)
	ctx := context.Background()
	srv, err := l.StartServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Iperf() != IperfInstalled() {
		t.Errorf("iperf3 servers running: %v; iperf3 installed: %v", srv.Iperf(), IperfInstalled())
	}

	// From ran, the kernel-forwarding reference path reaches the first DN.
	out, err := l.Command(ctx, l.RAN(), "curl", "-sS", "--max-time", "5", "http://192.0.2.1:8080/").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "internet" {
		t.Fatalf("curl from ran: %v: %q", err, out)
	}
	// Each DN answers with its own name on the shared address.
	for _, dnn := range l.DNNs() {
		out, err := l.Command(ctx, l.DN(dnn), "curl", "-sS", "--max-time", "5", "http://192.0.2.1:8080/").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != dnn {
			t.Fatalf("curl in %s: %v: %q", l.DN(dnn), err, out)
		}
	}
	// A second Up of the same lab is refused, not merged.
	if err := l.Up(ctx); err == nil {
		t.Fatal("second Up succeeded")
	}

	srv.Close()
	if err := l.Down(); err != nil {
		t.Fatal(err)
	}
	left, err := l.existing()
	if err != nil || len(left) != 0 {
		t.Fatalf("after Down: %v %v", left, err)
	}
}

func TestNewRejectsUnusableDNN(t *testing.T) {
	for _, d := range []string{"", "a-very-long-dnn-name", "in ternet"} {
		if _, err := New(Config{DNNs: []string{d}}); err == nil {
			t.Errorf("DNN %q accepted", d)
		}
	}
}

// The lab routes each DN's TUN by name before the UPF creates it, so the
// names must be the UPF's defaults.
func TestTUNNamesAreTheUPFs(t *testing.T) {
	for _, d := range []string{"internet", "ims"} {
		if TUN(d) != upf.TUNName(d) {
			t.Errorf("lab.TUN(%q) = %q, upf.TUNName = %q", d, TUN(d), upf.TUNName(d))
		}
	}
}

// TestIperfInstalledFollowsPATH: whether StartServers runs iperf3 servers
// is decided by PATH, as running them would be.
func TestIperfInstalledFollowsPATH(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if IperfInstalled() {
		t.Fatal("iperf3 found in an empty PATH")
	}
	if err := os.WriteFile(filepath.Join(dir, "iperf3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !IperfInstalled() {
		t.Fatal("iperf3 in PATH not found")
	}
}
