//go:build linux

package shmstore

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmap(mem []byte) error { return unix.Munmap(mem) }

// reserve allocates the file's blocks (fallocate(2)): ENOSPC now rather
// than SIGBUS on a later store into the mapping.
func reserve(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		if err != unix.EINTR {
			return err
		}
	}
}
