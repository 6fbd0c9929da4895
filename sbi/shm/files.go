package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// paths names the files of one service in the deployment directory. Lock
// files are never deleted: removing a file someone may be about to flock
// would let two processes each lock a different inode of the same name.
type paths struct {
	dir        string
	pool       string // the mapping, replaced (renamed over) at every Listen
	poolNew    string // where Listen builds the next pool
	serverLock string // held LOCK_EX by the server for its lifetime
	name       string
}

func newPaths(dir, name string) paths {
	base := filepath.Join(dir, name)
	return paths{dir: dir, pool: base + ".pool", poolNew: base + ".pool.new", serverLock: base + ".server.lock", name: name}
}

// clientLock is held LOCK_EX by the client using channel ch.
func (p paths) clientLock(ch int) string {
	return filepath.Join(p.dir, p.name+".client."+strconv.Itoa(ch)+".lock")
}

// ensureDir creates the deployment directory 0700 and refuses one that
// another user could enter: that directory is the whole access control.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("shm: create %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("shm: stat %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("shm: %s is not a directory", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("shm: %s belongs to uid %d, not to us (%d)", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o077 != 0 {
		return fmt.Errorf("shm: %s has mode %o; other users could attach (want 0700)", dir, st.Mode&0o777)
	}
	return nil
}

func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: open lock %s: %w", path, err)
	}
	return f, nil
}

// tryLock takes an flock without waiting; ok=false when someone holds it.
func tryLock(f *os.File, how int) (ok bool, err error) {
	for {
		err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EWOULDBLOCK {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("shm: flock %s: %w", f.Name(), err)
		}
		return true, nil
	}
}

func unlock(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// heldByOther reports whether another open file description holds the lock
// (the peer is alive). It takes a shared lock for a moment; a server's
// Listen retries while such probes are in flight.
func heldByOther(f *os.File) (bool, error) {
	ok, err := tryLock(f, unix.LOCK_SH)
	if err != nil {
		return false, err
	}
	if ok {
		unlock(f)
		return false, nil
	}
	return true, nil
}

// mapping is a pool file mapped MAP_SHARED.
type mapping struct {
	mem words
	ino uint64
}

func mapFile(f *os.File, size int64) (*mapping, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("shm: stat %s: %w", f.Name(), err)
	}
	if size < 0 {
		size = st.Size
	}
	if size < pageBytes || size > maxPoolBytes {
		return nil, fmt.Errorf("shm: %s: size %d out of range", f.Name(), size)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap %s (%d bytes): %w", f.Name(), size, err)
	}
	return &mapping{mem: mem, ino: st.Ino}, nil
}

func (m *mapping) unmap() error {
	if m == nil || m.mem == nil {
		return nil
	}
	err := unix.Munmap(m.mem)
	m.mem = nil
	return err
}

// inodeOf returns the inode the path names now (0 if none), to notice that
// a server replaced the pool.
func inodeOf(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ino
}

// freeRange gives the pages of a channel's rings back to tmpfs (the
// "frees its rings" of a dead client) and, as a side effect, zeroes them,
// indices included. On a file system without hole punching it zeroes the
// ring headers instead, which is all a reset needs.
func freeRange(m words, off, n int64, headers ...int64) {
	err := unix.Madvise(m[off:off+n], unix.MADV_REMOVE)
	if err == nil {
		return
	}
	for _, h := range headers {
		clear(m[h : h+ringHeaderBytes])
	}
}

var errNoServer = errors.New("no server holds the lock")
