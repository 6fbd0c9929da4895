package procwatch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// startSleeper starts a child that lives until killed.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep(1): %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func open(t *testing.T, pid int) *Watch {
	t.Helper()
	w, err := Open(pid)
	if errors.Is(err, ErrNoPidfd) {
		t.Skipf("kernel refuses pidfd_open: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestSeesDeath(t *testing.T) {
	cmd := startSleeper(t)
	w := open(t, cmd.Process.Pid)
	if w.Exited() {
		t.Fatal("a live process reported exited")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := w.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live process: %v, want the deadline", err)
	}
	cancel()

	got := make(chan error, 1)
	go func() {
		_, err := w.Wait(context.Background())
		got <- err
	}()
	killed := time.Now()
	cmd.Process.Signal(os.Kill)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("death not seen")
	}
	t.Logf("death seen %v after SIGKILL was sent", time.Since(killed))
	if !w.Exited() {
		t.Fatal("Exited false after death")
	}
	// Not reaped yet (a zombie) or reaped: the watch says dead either way.
	cmd.Wait()
	if _, err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestCancel(t *testing.T) {
	cmd := startSleeper(t)
	w := open(t, cmd.Process.Pid)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := w.Wait(ctx)
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return on cancel")
	}
}

func TestNoSuchProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true(1): %v", err)
	}
	// The child was reaped: its PID names no process (unless reused, which
	// the error check below would not catch; that is rare enough).
	if _, err := Open(cmd.Process.Pid); err == nil {
		t.Skip("PID reused already")
	} else if errors.Is(err, ErrNoPidfd) {
		t.Skipf("kernel refuses pidfd_open: %v", err)
	}
}

// BenchmarkDetection measures the time from SIGKILL sent to death seen,
// against the reference of the same run: the time from SIGKILL sent to
// wait4 returning in the parent (the kernel's own notification path).
func BenchmarkDetection(b *testing.B) {
	var pidfdTotal, waitTotal time.Duration
	for b.Loop() {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			b.Skipf("sleep(1): %v", err)
		}
		w, err := Open(cmd.Process.Pid)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			b.Skip(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			at, _ := w.Wait(context.Background())
			got <- at
		}()
		time.Sleep(time.Millisecond) // the watcher is parked in the poller
		t0 := time.Now()
		cmd.Process.Signal(os.Kill)
		cmd.Wait()
		waitTotal += time.Since(t0)
		pidfdTotal += (<-got).Sub(t0)
		w.Close()
	}
	b.ReportMetric(pidfdTotal.Seconds()*1e6/float64(b.N), "us-detect")
	b.ReportMetric(waitTotal.Seconds()*1e6/float64(b.N), "us-wait4-ref")
}
