package shmstore

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCreateWithoutRoom: a store larger than its tmpfs is refused by
// Create, instead of a SIGBUS at a later Put into a sparse file.
func TestCreateWithoutRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	w, err := Create(filepath.Join(dir, "s"), 8<<20, Options{Epoch: 1})
	if err == nil {
		w.Close()
		t.Fatal("an 8 MiB store created on a 1 MiB tmpfs")
	}
	t.Logf("refused: %v", err)
	// One that fits is fine, and nothing of the refused one is left.
	w, err = Create(filepath.Join(dir, "s"), 256<<10, Options{Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}
