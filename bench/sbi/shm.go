package sbi

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/shm"
	"github.com/tern5g/tern/sbi/shmsbi"
)

// producerEnv names the pool directory a producer child serves in.
const producerEnv = "TERN_BENCH_SBI_PRODUCER"

// busyPollEnv carries shm.Config.BusyPoll to the child.
const busyPollEnv = "TERN_BENCH_SBI_BUSYPOLL"

// producerName is the service the child serves under.
const producerName = "producer"

// Shm is the shared-memory binding with the producer in another process,
// as NFs are: this executable started again as the producer (it must call
// MaybeRunProducer first thing in main). busyPoll is shm.Config.BusyPoll on
// both ends: "shm" is the default (config.DefaultShmBusyPoll), whose unit
// the window rows measure; "shm-sleep" (0) sleeps at once.
func Shm(name string, busyPoll time.Duration) Binding {
	b := Binding{Name: name, Dial: func(any) (*ops.Client, func(), error) { return dialShm(busyPoll) }}
	if busyPoll == config.DefaultShmBusyPoll {
		b.Core = config.BindingShm
	}
	return b
}

func dialShm(busyPoll time.Duration) (*ops.Client, func(), error) {
	dir, err := os.MkdirTemp("/dev/shm", "tern-bench-sbi-")
	if err != nil {
		return nil, nil, err
	}
	cfg := shm.Config{Dir: dir + "/pool", BusyPoll: busyPoll}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), producerEnv+"="+cfg.Dir, busyPollEnv+"="+busyPoll.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dir)
	}
	k, err := shmsbi.Dial(cfg, producerName)
	if err != nil {
		stop()
		return nil, nil, err
	}
	for start := time.Now(); !k.Connected(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			k.Close()
			stop()
			return nil, nil, errors.New("bench sbi: the shm producer process did not come up")
		}
	}
	return ops.NewClient(k, ""), func() { k.Close(); stop() }, nil
}

// MaybeRunProducer serves the bench's producer over shared memory and
// exits when this process is a producer child (Shm); it returns at once
// otherwise.
func MaybeRunProducer() {
	dir := os.Getenv(producerEnv)
	if dir == "" {
		return
	}
	bp, _ := time.ParseDuration(os.Getenv(busyPollEnv))
	s, err := shmsbi.Listen(shm.Config{Dir: dir, BusyPoll: bp}, producerName, nil, producer{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench sbi producer:", err)
		os.Exit(1)
	}
	io.Copy(io.Discard, os.Stdin) // until the parent closes it or dies
	s.Close()
	os.Exit(0)
}

// EventfdRTT is the reference for shm: an eventfd ping-pong between two
// processes (this executable must call shm.MaybeRunChild first in main).
func EventfdRTT(n int) ([]time.Duration, error) { return shm.EventfdPingPong(n) }
