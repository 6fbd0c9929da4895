package shm

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Child processes. PingPong, EventfdPingPong and this package's two-process
// tests run the other end in a child: the current executable started again
// with TERN_SHM_CHILD set. The child branches off in MaybeRunChild, which
// the program must therefore call before anything else:
//
//	func main() { shm.MaybeRunChild(); ... }                              // a command
//	func TestMain(m *testing.M) { shm.MaybeRunChild(); os.Exit(m.Run()) } // a test binary
//
// In a test binary the child is also given -test.run=^TestHelperServer$, so
// a package may instead call MaybeRunChild from a test of that name, the
// usual Go pattern for helper processes.
const (
	childEnv     = "TERN_SHM_CHILD"      // the child's role
	childSpecEnv = "TERN_SHM_CHILD_SPEC" // JSON childSpec
)

// Operations of the child server's handler.
const (
	opEcho  = 1 // answer = request, status 200
	opSleep = 2 // sleep for the little-endian int64 nanoseconds in req[:8], then echo
)

type childSpec struct {
	Config Config
	Name   string
}

// MaybeRunChild runs the child role this process was started for, then
// exits; it returns at once in a process that is no such child.
func MaybeRunChild() {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return
	}
	if err := runChild(mode); err != nil {
		fmt.Fprintf(os.Stderr, "shm child %s: %v\n", mode, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(mode string) error {
	var spec childSpec
	if s := os.Getenv(childSpecEnv); s != "" {
		if err := json.Unmarshal([]byte(s), &spec); err != nil {
			return fmt.Errorf("decode %s: %w", childSpecEnv, err)
		}
	}
	switch mode {
	case "server":
		s, err := Listen(spec.Config, spec.Name, echoHandler)
		if err != nil {
			return err
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin) // until the parent closes stdin or dies
		return s.Close()
	case "client":
		c, err := Dial(spec.Config, spec.Name)
		if err != nil {
			return err
		}
		if err := waitCall(c, 5*time.Second); err != nil {
			return err
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		return c.Close()
	case "eventfd":
		return eventfdChild(3, 4)
	}
	return fmt.Errorf("unknown role %q", mode)
}

// echoHandler is the child server's handler (and the tests').
func echoHandler(op uint16, req, resp []byte) (int, uint16) {
	if op == opSleep && len(req) >= 8 {
		time.Sleep(time.Duration(binary.LittleEndian.Uint64(req)))
	}
	return copy(resp, req), 200
}

// waitCall retries an echo call until it succeeds (the client connects
// asynchronously) or d passes.
func waitCall(c *Client, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _, err := c.Call(ctx, opEcho, []byte("hello"), nil)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", d, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startChild starts role in a child and waits for its "ready" line.
func startChild(role string, spec *childSpec, extra []*os.File) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("shm: find own executable: %w", err)
	}
	var args []string
	if testing.Testing() {
		args = []string{"-test.run=^TestHelperServer$"}
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	if spec != nil {
		b, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, childSpecEnv+"="+string(b))
	}
	cmd.ExtraFiles = extra
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("shm: start %s child: %w", role, err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, stdout)
	}()
	select {
	case err = <-ready:
	case <-time.After(10 * time.Second):
		err = errors.New("not ready within 10s")
	}
	c := &child{cmd: cmd, stdin: stdin}
	if err != nil {
		c.kill()
		return nil, fmt.Errorf("shm: %s child (did the program call shm.MaybeRunChild first?): %w", role, err)
	}
	return c, nil
}

// stop asks the child to exit (by closing its stdin) and waits.
func (c *child) stop() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		return <-done
	}
}

// kill ends the child with SIGKILL: no cleanup, as in a crash.
func (c *child) kill() {
	c.cmd.Process.Signal(unix.SIGKILL)
	c.cmd.Wait()
}
