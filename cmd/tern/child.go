package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// startChild runs this binary with args, as a benchmark's own core or UPF
// process, and returns once the child prints a line starting with ready
// (its "ready" line) on stdout, within wait. The child's stderr is ours;
// ctx ending kills it. On failure the child is killed and reaped.
func startChild(ctx context.Context, args []string, ready string, wait time.Duration) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", exe, args[0], err)
	}
	got := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), ready) {
				got <- nil
				io.Copy(io.Discard, out) // keep the pipe drained
				return
			}
		}
		got <- fmt.Errorf("tern %s exited before it was ready", args[0])
	}()
	select {
	case err = <-got:
	case <-time.After(wait):
		err = fmt.Errorf("tern %s not ready after %v", args[0], wait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		killChild(cmd)
		return nil, err
	}
	return cmd, nil
}

// killChild sends SIGKILL and reaps the child.
func killChild(cmd *exec.Cmd) error {
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	_ = cmd.Wait() // "signal: killed" is the expected outcome
	return nil
}
