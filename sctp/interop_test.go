package sctp

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInteropUsrsctp talks to an independent SCTP stack: a small usrsctp
// program (testdata/usrsctp_peer.c) built at test time. Its INIT carries the
// parameters pion used to reject, and its DATA must come through with stream
// and PPID intact, both ways.
func TestInteropUsrsctp(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) for the usrsctp peer")
	}
	if _, err := os.Stat("/usr/include/usrsctp.h"); err != nil {
		t.Skip("libusrsctp not installed (apt-get install libusrsctp-dev)")
	}
	peer := filepath.Join(t.TempDir(), "usrsctp_peer")
	if out, err := exec.Command(cc, "-O1", "-o", peer, "testdata/usrsctp_peer.c", "-lusrsctp", "-lpthread").CombinedOutput(); err != nil {
		t.Skipf("cannot build usrsctp peer: %v\n%s", err, out)
	}

	cfg := udpConfig(t)
	tap := &recordingTap{}
	cfg.Tap = tap
	l := mustListen(t, cfg)
	defer l.Close()
	type result struct {
		m   Message
		eof error
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		m, err := c.Recv()
		if err != nil {
			done <- result{err: err}
			return
		}
		if err := c.Send(m.Stream, m.PPID, append([]byte("echo:"), m.Data...)); err != nil {
			done <- result{err: err}
			return
		}
		_, eof := c.Recv() // the peer shuts down after reading the echo
		done <- result{m: m, eof: eof}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, peer, strconv.Itoa(freeUDPPort(t)), strconv.Itoa(cfg.UDPPort), "38412").CombinedOutput()
	if err != nil {
		t.Fatalf("usrsctp peer: %v\n%s", err, out)
	}
	if want := "stream=1 ppid=60 data=echo:hello-from-usrsctp"; !strings.Contains(string(out), want) {
		t.Fatalf("usrsctp peer printed %q, want %q", out, want)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.m.Stream != 1 || r.m.PPID != 60 || string(r.m.Data) != "hello-from-usrsctp" {
			t.Errorf("received %+v from usrsctp", r.m)
		}
		if !errors.Is(r.eof, io.EOF) {
			t.Errorf("after usrsctp closed: %v, want io.EOF", r.eof)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server side did not finish")
	}
	if pk := tap.packets(); len(pk) == 0 || !initHasParam(pk[0].b, 0x000c) {
		t.Log("note: usrsctp's INIT carried no Supported Address Types parameter")
	} else {
		t.Log("usrsctp's INIT carried Supported Address Types (0x000c): accepted")
	}
}

// initHasParam reports whether an INIT packet carries a parameter type.
func initHasParam(b []byte, want uint16) bool {
	if info, err := inspectPacket(b); err != nil || !info.isInit() {
		return false
	}
	params := b[commonHeaderLen+chunkHeaderLen+initFixedLen:]
	for len(params) >= 4 {
		typ := binary.BigEndian.Uint16(params[0:2])
		n := int(binary.BigEndian.Uint16(params[2:4]))
		if n < 4 || n > len(params) {
			return false
		}
		if typ == want {
			return true
		}
		params = params[min((n+3)&^3, len(params)):]
	}
	return false
}
