//go:build linux

// Package rofs makes a directory read-only to the calling process, for the
// tests of what tern does with files it may not write (a subscriber store
// that belongs to another user, or on a read-only volume).
package rofs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNoMount is returned to root where it may not mount a file system
// (no CAP_SYS_ADMIN, as in many containers): permissions do not stop root,
// so there is no other way to make a directory read-only to it.
var ErrNoMount = errors.New("rofs: root may not mount a file system here")

// ReadOnly makes dir and the files directly in it read-only to this
// process, and returns what undoes it. For others than root, the
// permissions say so (files 0444, dir 0555); root is not stopped by them,
// so dir gets a read-only tmpfs mounted over it with copies of its files.
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
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("rofs: %w", err)
			}
		}
	}
	if err := unix.Mount("tern-rofs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0755"); err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, ErrNoMount
		}
		return nil, fmt.Errorf("rofs: mounting a tmpfs on %s: %w", dir, err)
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
