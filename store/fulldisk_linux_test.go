package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFullDisk: on a full file system a write fails with an error that
// says so, every acknowledged change stays readable (also after reopening),
// and writes work again once there is room. Needs root to mount a small
// tmpfs.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "subscribers.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Fill what the store leaves free, then write until a write fails.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 700<<10))
	f.Close()
	subs := DefaultSubscribers(5000)
	var acked []Subscriber
	var werr error
	for _, sub := range subs {
		if werr = s.Put(sub); werr != nil {
			break
		}
		acked = append(acked, sub)
	}
	if werr == nil {
		t.Fatal("5,000 subscribers fit in the space left: the test wrote nothing that could fail")
	}
	t.Logf("%d subscribers acknowledged, then: %v", len(acked), werr)
	if !strings.Contains(strings.ToLower(werr.Error()), "full") && !errors.Is(werr, syscall.ENOSPC) {
		t.Errorf("write on a full disk: %v, want an error saying the disk is full", werr)
	}
	for _, sub := range acked {
		if _, err := s.Get(sub.SUPI); err != nil {
			t.Fatalf("acknowledged %s unreadable on a full disk: %v", sub.SUPI, err)
		}
	}
	os.Remove(filler)
	if err := s.Put(subs[len(acked)]); err != nil {
		t.Errorf("write after space came back: %v", err)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Len(); err != nil || n != len(acked)+1 {
		t.Errorf("after reopening: %d subscribers (%v), acknowledged %d", n, err, len(acked)+1)
	}
}
