//go:build linux

package rofs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadOnly: the directory and its files read, and nothing in it can
// be written or made; for root, the tmpfs that does it is in the child's
// mount namespace only, so it is not left behind in the host's when the
// test binary dies before its cleanups.
func TestReadOnly(t *testing.T) {
	if Isolate(t) {
		return
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	undo, err := ReadOnly(dir)
	if errors.Is(err, ErrNoMount) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { undo() })
	if b, err := os.ReadFile(f); err != nil || string(b) != "x" {
		t.Fatalf("read: %q, %v", b, err)
	}
	if err := os.WriteFile(f, []byte("y"), 0o644); err == nil {
		t.Error("a file in the read-only directory was written")
	}
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err == nil {
		t.Error("a file was made in the read-only directory")
	}
	if os.Geteuid() != 0 {
		return
	}
	if !mountedAt(t, "/proc/self/mountinfo", dir) {
		t.Fatalf("no mount on %s in this process's mount table", dir)
	}
	// The parent is the test binary that ran Isolate, in the mount
	// namespace the test was started in.
	if mountedAt(t, fmt.Sprintf("/proc/%d/mountinfo", os.Getppid()), dir) {
		t.Errorf("the tmpfs on %s is in the mount namespace the test was started in", dir)
	}
}

// mountedAt reports whether the mount table in file (a mountinfo) has a
// mount on dir.
func mountedAt(t *testing.T, file, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// proc(5): the fifth field is the mount point.
		if f := bytes.Fields(sc.Bytes()); len(f) > 4 && string(f[4]) == dir {
			return true
		}
	}
	return false
}

// TestReadOnlyMountsOnlyWhenIsolated: root's ReadOnly outside Isolate's
// child refuses instead of mounting in the mount namespace the test was
// started in.
func TestReadOnlyMountsOnlyWhenIsolated(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(isolatedEnv) != "" {
		t.Skip("root outside Isolate's child only")
	}
	dir := t.TempDir()
	undo, err := ReadOnly(dir)
	if err == nil {
		undo()
		t.Fatal("ReadOnly mounted outside a mount namespace of its own")
	}
}

// TestMountError: a mount the kernel refuses root (EPERM without
// CAP_SYS_ADMIN, EACCES from AppArmor) is ErrNoMount, which tests skip on;
// other errors are not.
func TestMountError(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EPERM, unix.EACCES} {
		if err := mountError("/d", errno); !errors.Is(err, ErrNoMount) {
			t.Errorf("%v: %v, want ErrNoMount", errno, err)
		}
	}
	if err := mountError("/d", unix.ENODEV); errors.Is(err, ErrNoMount) || !errors.Is(err, unix.ENODEV) {
		t.Errorf("ENODEV: %v", err)
	}
}

func TestRunPattern(t *testing.T) {
	if got, want := runPattern("TestA/b.c_1"), `^TestA$/^b\.c_1$`; got != want {
		t.Errorf("runPattern = %q, want %q", got, want)
	}
}

func TestSkipReason(t *testing.T) {
	out := "=== RUN   TestX\n    x_test.go:12: no mount here\n    x_test.go:13: second\n--- SKIP: TestX (0.00s)\nPASS\n"
	if r, ok := skipReason(out, "TestX"); !ok || r != "x_test.go:12: no mount here; x_test.go:13: second" {
		t.Errorf("skipReason = %q, %v", r, ok)
	}
	if _, ok := skipReason("=== RUN   TestX\n--- PASS: TestX (0.00s)\n", "TestX"); ok {
		t.Error("a pass read as a skip")
	}
}
