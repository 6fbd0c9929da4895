//go:build linux

// Package rofs makes a directory read-only to the calling process, for the
// tests of what tern does with files it may not write (a subscriber store
// that belongs to another user, or on a read-only volume).
//
// Permissions do not stop root, so for root the directory gets a
// read-only tmpfs mounted over it. That mount must not reach the host's
// mount namespace, where it would outlive a test binary that dies before
// its cleanups (a timeout, Ctrl-C, SIGKILL) and leave an undeletable
// temporary directory: a test that calls ReadOnly first calls Isolate,
// which runs it again in a child process with a mount namespace of its
// own, whose mounts end with it.
package rofs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoMount is returned to root where it may not mount a file system
// (no CAP_SYS_ADMIN, as in many containers, or a security module that
// refuses it): permissions do not stop root, so there is no other way to
// make a directory read-only to it.
var ErrNoMount = errors.New("rofs: root may not mount a file system here")

// isolatedEnv marks the child process that Isolate starts in a mount
// namespace of its own; ReadOnly mounts only there.
const isolatedEnv = "TERN_ROFS_ISOLATED"

// Isolate runs the calling test again in a child process, in a mount
// namespace of its own (its mounts private), where ReadOnly may mount, and
// reports true where the caller is the parent: the child's result is the
// test's (its failure fails t, its skip skips t), and the caller returns.
// It reports false in the child, and for others than root, whom
// permissions stop, so ReadOnly needs no mount: there the test goes on.
// Call it first, before the test makes anything the child would make again.
func Isolate(t testing.TB) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(isolatedEnv) != "" {
		return false
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("rofs: the test binary, to run again in a mount namespace of its own: %v", err)
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Second))
			defer cancel()
		}
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=true")
	cmd.Env = append(os.Environ(), isolatedEnv+"=1")
	// Go's fork makes / private (MS_REC|MS_PRIVATE) in the new namespace,
	// so nothing mounted there propagates back to the host's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			t.Skipf("%v: no mount namespace of its own (%v)", ErrNoMount, err)
		}
		t.Fatalf("rofs: running %s again in a mount namespace of its own: %v", t.Name(), err)
	case err != nil:
		t.Fatalf("rofs: %s, run again in a mount namespace of its own, failed (%v):\n%s", t.Name(), err, out)
	}
	if reason, skipped := skipReason(string(out), t.Name()); skipped {
		t.Skipf("in a mount namespace of its own: %s", reason)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" (") {
		t.Fatalf("rofs: %s did not run in its child process:\n%s", t.Name(), out)
	}
	if testing.Verbose() {
		t.Logf("in a mount namespace of its own:\n%s", out)
	}
	return true
}

// runPattern is the -test.run pattern that selects the test named name
// (a subtest's name has a / per level) and nothing else.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// skipReason reports whether the verbose output of a test binary says
// that the test named name skipped, and what it logged (go test -v prints
// a test's log, indented, between its === RUN and --- SKIP lines).
func skipReason(out, name string) (string, bool) {
	end := strings.Index(out, "--- SKIP: "+name+" (")
	if end < 0 {
		return "", false
	}
	out = out[:end]
	if start := strings.LastIndex(out, "=== RUN   "+name+"\n"); start >= 0 {
		out = out[start+len("=== RUN   "+name+"\n"):]
	}
	var lines []string
	for line := range strings.Lines(out) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "===") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; "), true
}

// ReadOnly makes dir and the files directly in it read-only to this
// process, and returns what undoes it. For others than root, the
// permissions say so (files 0444, dir 0555); root is not stopped by them,
// so dir gets a read-only tmpfs mounted over it with copies of its files,
// which it does only in the mount namespace of Isolate's child.
func ReadOnly(dir string) (undo func() error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("rofs: %w", err)
	}
	if os.Geteuid() != 0 {
		for _, e := range entries {
			if err := os.Chmod(filepath.Join(dir, e.Name()), 0o444); err != nil {
				return nil, fmt.Errorf("rofs: %w", err)
			}
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			return nil, fmt.Errorf("rofs: %w", err)
		}
		return func() error { return os.Chmod(dir, 0o755) }, nil
	}
	if os.Getenv(isolatedEnv) == "" {
		return nil, errors.New("rofs: root mounts only in a mount namespace of its own: call rofs.Isolate first")
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("rofs: %w", err)
			}
		}
	}
	if err := unix.Mount("tern-rofs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0755"); err != nil {
		return nil, mountError(dir, err)
	}
	undo = func() error { return unix.Unmount(dir, unix.MNT_DETACH) }
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			undo()
			return nil, fmt.Errorf("rofs: %w", err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		undo()
		return nil, fmt.Errorf("rofs: remounting %s read-only: %w", dir, err)
	}
	return undo, nil
}

// mountError is ErrNoMount where the kernel refused root the mount: EPERM
// without CAP_SYS_ADMIN, EACCES from a security module (AppArmor).
func mountError(dir string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (mounting a tmpfs on %s: %v)", ErrNoMount, dir, err)
	}
	return fmt.Errorf("rofs: mounting a tmpfs on %s: %w", dir, err)
}
