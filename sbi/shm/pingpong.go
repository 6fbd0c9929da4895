package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Two-process round-trip measurements, for benchmarks to quote the shm
// transport beside its floor. Both start the other end in a child process,
// so the program must call MaybeRunChild first (see child.go).

// PingPongBytes is the request (and answer) size PingPong uses.
const PingPongBytes = 64

const warmup = 500

// PingPong measures n calls of PingPongBytes bytes, one at a time, from this
// process to an echo server in a child process, with cfg (BusyPoll, ...) on
// both ends. It returns each call's round-trip time. With cfg.Dir empty it
// works in a temporary directory on /dev/shm (removed afterwards) rather
// than in the default deployment directory.
func PingPong(cfg Config, n int) ([]time.Duration, error) {
	if cfg.Dir == "" {
		parent, err := os.MkdirTemp("/dev/shm", "tern-shm-pingpong-")
		if err != nil {
			parent, err = os.MkdirTemp("", "tern-shm-pingpong-")
		}
		if err != nil {
			return nil, fmt.Errorf("shm: pingpong: %w", err)
		}
		defer os.RemoveAll(parent)
		cfg.Dir = filepath.Join(parent, "shm")
	}
	name := "pingpong-" + strconv.Itoa(os.Getpid())
	ch, err := startChild("server", &childSpec{Config: cfg, Name: name}, nil)
	if err != nil {
		return nil, err
	}
	defer ch.stop()
	c, err := Dial(cfg, name)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := waitCall(c, 5*time.Second); err != nil {
		return nil, fmt.Errorf("shm: pingpong: %w", err)
	}
	req := make([]byte, PingPongBytes)
	dst := make([]byte, 0, PingPongBytes)
	ctx := context.Background()
	out := make([]time.Duration, n)
	for i := -warmup; i < n; i++ {
		t0 := time.Now()
		resp, _, err := c.Call(ctx, opEcho, req, dst)
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("shm: pingpong call %d: %w", i, err)
		}
		if len(resp) != len(req) {
			return nil, fmt.Errorf("shm: pingpong call %d: %d bytes back, want %d", i, len(resp), len(req))
		}
		if i >= 0 {
			out[i] = d
		}
	}
	return out, nil
}

// EventfdPingPong measures n round trips between this process and a child
// over two eventfds (the child gets them as fds 3 and 4 through
// exec.Cmd.ExtraFiles): write 1 to one, blocking read on the other, the
// child the mirror image. That is the cost of two cross-process wake-ups
// with no data moved, the floor for any transport that sleeps while idle.
func EventfdPingPong(n int) ([]time.Duration, error) {
	ping, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("shm: eventfd: %w", err)
	}
	pong, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ping)
		return nil, fmt.Errorf("shm: eventfd: %w", err)
	}
	fping, fpong := os.NewFile(uintptr(ping), "ping"), os.NewFile(uintptr(pong), "pong")
	defer fping.Close()
	defer fpong.Close()
	ch, err := startChild("eventfd", nil, []*os.File{fping, fpong})
	if err != nil {
		return nil, err
	}
	defer ch.stop()
	var one, stop, got [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	binary.NativeEndian.PutUint64(stop[:], 2)
	defer unix.Write(ping, stop[:])
	out := make([]time.Duration, n)
	for i := -warmup; i < n; i++ {
		t0 := time.Now()
		if _, err := unix.Write(ping, one[:]); err != nil {
			return nil, fmt.Errorf("shm: eventfd write: %w", err)
		}
		if err := readEventfd(pong, got[:]); err != nil {
			return nil, err
		}
		if i >= 0 {
			out[i] = time.Since(t0)
		}
	}
	return out, nil
}

func readEventfd(fd int, b []byte) error {
	for {
		_, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("shm: eventfd read: %w", err)
		}
		return nil
	}
}

// eventfdChild is the other end of EventfdPingPong: it answers every 1 read
// on ping with a 1 on pong, and exits on any other value.
func eventfdChild(ping, pong int) error {
	fmt.Println("ready")
	var b, one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		if err := readEventfd(ping, b[:]); err != nil {
			return err
		}
		if binary.NativeEndian.Uint64(b[:]) != 1 {
			return nil
		}
		if _, err := unix.Write(pong, one[:]); err != nil {
			return errors.New("eventfd write: " + err.Error())
		}
	}
}

// Median returns the median of d (0 for none).
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
