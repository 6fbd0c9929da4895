package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// statOwner is the uid that owns the file fi describes.
func statOwner(fi os.FileInfo) (uint32, bool) {
	if fi == nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// busyTimeoutMS is how long a SQLite write waits for another process's
// write lock before failing: far longer than any transaction tern makes.
const busyTimeoutMS = 10000

// Open opens the SQLite store at path, creating it (and its directory) on
// first use, and converting a legacy log found there (see LegacyBackup).
func Open(path string) (*Store, error) { return OpenOptions(path, Options{}) }

// OpenOptions is Open with options.
func OpenOptions(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty path")
	}
	if strings.ContainsRune(path, '?') {
		// The driver reads what follows '?' as connection parameters.
		return nil, fmt.Errorf("store: %s: a path with '?' is not supported", path)
	}
	dirs := missingDirs(filepath.Dir(path))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// SQLite's own word for a store it may not write is "unable to open
	// database file (14)" or "attempt to write a readonly database", at
	// the first write if not at once: say which file and why, up front.
	if why := writeProblem(path); why != "" {
		return nil, fmt.Errorf("store: cannot write %s: %s. Fix that, run as the store's owner, or choose another store (--store, store.path); tern subscriber list only reads a store", path, why)
	}
	var (
		lock    *os.File
		created *os.File // the file this Open created, if it did
		backup  string
	)
	for try := 0; ; try++ {
		kind, err := sniff(path)
		if err != nil {
			return nil, err
		}
		switch kind {
		case fileMissing:
			// Created here so that it is private: subscriber keys are
			// secrets. SQLite gives its -wal and -shm files the same
			// permissions. O_EXCL tells this Open whether it made the
			// file or another process got there first.
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil && (errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist)) && try < maxOpenTries {
				// Another process created it, or removed the directory
				// a failed start had made: look again.
				os.MkdirAll(filepath.Dir(path), 0o700)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
			created = f
		case fileLegacy:
			if backup, err = convertLegacy(path, opts); err != nil {
				return nil, err
			}
		case fileOther:
			return nil, fmt.Errorf("store: %s is neither a SQLite database nor a tern subscriber log", path)
		}
		var held os.FileInfo
		lock, held, err = lockShared(path, os.O_RDWR)
		if created != nil {
			// Held open until here, so that its inode cannot be another
			// file's: the file locked is the one made, or it was removed
			// (a failed start's RemoveUnused) and another Open made the
			// one there now.
			if fi, serr := created.Stat(); serr != nil || held == nil || !os.SameFile(fi, held) {
				created.Close()
				created = nil
			}
		}
		if errors.Is(err, errReplaced) && try < maxOpenTries {
			continue
		}
		if err != nil {
			if created != nil {
				created.Close()
			}
			return nil, err
		}
		break
	}
	made := created != nil
	if made {
		created.Close()
	}
	fast, durable := "NORMAL", "FULL"
	if opts.NoSync {
		fast, durable = "OFF", "OFF"
	}
	db, err := openSQLite(path, fast)
	if err != nil {
		lock.Close()
		return nil, err
	}
	dur, err := openSQLite(path, durable)
	if err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	s, err := newStore(dialect{name: DriverSQLite, serialWrites: true}, db, dur)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	s.lock = lock
	if made {
		id, err := s.nameStore()
		if err != nil {
			s.Close()
			return nil, err
		}
		s.created = &Creation{path: path, id: id, dirs: dirs}
	}
	s.legacyBackup = backup
	if err := s.recoverAfterReboot(bootID()); err != nil {
		s.Close()
		return nil, err
	}
	s.syncs.Store(0)
	return s, nil
}

// maxOpenTries bounds how often Open starts over because the file at its
// path changed under it (created, removed or replaced by another process).
const maxOpenTries = 10

// missingDirs lists dir and the directories above it that do not exist,
// innermost first.
func missingDirs(dir string) []string {
	var out []string
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		out = append(out, d)
	}
	return out
}

// errReplaced is lockShared's answer when the path no longer names the
// file it locked.
var errReplaced = errors.New("store: the file was replaced while it was being locked")

// lockShared opens the database file at path (flag os.O_RDWR or
// os.O_RDONLY) and takes a shared flock(2) on it, which the Store holds
// for as long as it is open: RemoveUnused takes the exclusive lock
// before it removes a store, so a store that any process has open is never
// removed. SQLite's own locks are fcntl(2) locks, which flock does not
// touch on Linux (on NFS the kernel emulates flock with fcntl locks, and
// the two would conflict: keep the store on a local file system). It
// answers errReplaced when path names another file once the lock is held
// (the file was removed, or replaced, meanwhile): the caller starts over.
func lockShared(path string, flag int) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errReplaced
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	if err := flockWait(f, unix.LOCK_SH); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("store: locking %s: %w", path, err)
	}
	held, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, nil, errReplaced
	}
	return f, held, nil
}

// lockWait bounds how long Open waits for a store's exclusive lock, which
// RemoveUnused holds for the few milliseconds it takes to count and
// remove.
const lockWait = busyTimeoutMS * time.Millisecond

// flockWait takes the flock how on f, waiting at most lockWait.
func flockWait(f *os.File, how int) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another process for %v: %w", lockWait, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Creation is a SQLite store that an Open created: the database file and
// the directories it made for it. It outlives the Store, so that a start
// that fails can take back what it made (RemoveUnused).
type Creation struct {
	path string
	id   string   // the store_id Open gave it
	dirs []string // innermost first
}

// Created returns what the Open of s created, nil when the store was there
// before (or is not a SQLite file).
func (s *Store) Created() *Creation { return s.created }

// Path is the created store's file.
func (c *Creation) Path() string { return c.path }

// RemoveUnused removes the store c describes, with the files SQLite keeps
// beside it and the directories made for it (those left empty), if it is
// still as made: the path still names the store that was created (its
// store_id: an inode number is reused once a file is removed), no Store
// in any process has it open (the exclusive flock is free: every Open holds
// the shared one), and, checked while the exclusive lock is held, it has no
// subscriber. Anything else stays: a store another process uses, or
// something was put in. It reports whether it removed the store. Close
// every Store of this process on it first: their locks count too.
func (c *Creation) RemoveUnused() (bool, error) {
	f, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	defer f.Close() // releases the lock
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil // open somewhere
	}
	if err != nil {
		return false, fmt.Errorf("store: locking %s: %w", c.path, err)
	}
	held, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	if now, err := os.Stat(c.path); err != nil || !os.SameFile(held, now) {
		return false, nil // removed or replaced since it was opened here
	}
	id, n, err := readUnlocked(c.path)
	if err != nil || id != c.id || n > 0 {
		return false, err
	}
	if err := Remove(c.path); err != nil {
		return false, err
	}
	for _, d := range c.dirs {
		os.Remove(d) // only if empty: nothing else is lost
	}
	return true, nil
}

// readUnlocked reads the store_id and the number of subscribers of the
// SQLite store at path without opening it as a Store: the caller holds its
// exclusive flock, which the shared one of an Open on another descriptor
// would wait for, even in this process.
func readUnlocked(path string) (id string, subscribers int, err error) {
	db, err := openReadOnlyDB(path)
	if err != nil {
		return "", 0, err
	}
	defer db.Close()
	err = db.QueryRow(`SELECT value FROM store_meta WHERE key = 'store_id'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil // not one an Open created
	}
	if err == nil {
		err = db.QueryRow(`SELECT COUNT(*) FROM subscribers`).Scan(&subscribers)
	}
	if err != nil {
		return "", 0, fmt.Errorf("store: reading %s: %w", path, err)
	}
	return id, subscribers, nil
}

// nameStore gives the store this Open created a random store_id, which
// tells it from a store made later at the same path.
func (s *Store) nameStore() (string, error) {
	b := make([]byte, 16)
	rand.Read(b)
	id := hex.EncodeToString(b)
	err := s.writeTx(s.durable, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO store_meta (key, value) VALUES ('store_id', $1)`, id)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("store: naming the new store: %w", err)
	}
	return id, nil
}

// Remove deletes the SQLite store at path with the files SQLite keeps
// beside it (-wal, -shm, -journal); those that are missing are no error.
// The store must be closed.
func Remove(path string) error {
	var errs []error
	for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// OpenReadOnly opens the SQLite store at path for reading only: it
// creates, converts, migrates and writes nothing, so it reads a store that
// this user may not write (one that belongs to the user tern up runs as,
// a read-only volume). The store must exist and have this tern's schema;
// a write fails (SQLite: "attempt to write a readonly database").
func OpenReadOnly(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("store: %s: a path with '?' is not supported", path)
	}
	kind, err := sniff(path)
	if err != nil {
		return nil, err
	}
	switch kind {
	case fileMissing:
		return nil, fmt.Errorf("store: no store at %s", path)
	case fileLegacy:
		return nil, fmt.Errorf("store: %s is a legacy subscriber log: open it writable once (tern up, tern subscriber add) to convert it", path)
	case fileOther, fileEmpty:
		return nil, fmt.Errorf("store: %s is not a SQLite database", path)
	}
	lock, _, err := lockShared(path, os.O_RDONLY)
	if errors.Is(err, errReplaced) {
		return nil, fmt.Errorf("store: no store at %s", path)
	}
	if err != nil {
		return nil, err
	}
	db, err := openReadOnlyDB(path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s, err := newReadOnlyStore(dialect{name: DriverSQLite, serialWrites: true}, db)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	s.lock = lock
	return s, nil
}

// openReadOnlyDB opens a read-only pool on the SQLite database at path.
func openReadOnlyDB(path string) (*sql.DB, error) {
	db, err := openSQLiteReadOnly(path, false)
	if err == nil {
		err = db.Ping()
	}
	if err != nil && !walInUse(path) {
		// A reader of a WAL database needs the -shm index beside it and
		// creates it when it is missing, which a directory it may not
		// write refuses. With no log to read, the file alone is the whole
		// database: open it as immutable, without the index. (A writer
		// that starts meanwhile is not seen: this is a snapshot.)
		if db != nil {
			db.Close()
		}
		db, err = openSQLiteReadOnly(path, true)
		if err == nil {
			err = db.Ping()
		}
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("store: reading %s: %w", path, err)
	}
	return db, nil
}

// walInUse reports whether the database at path has a write-ahead log
// with content, which a reader must see.
func walInUse(path string) bool {
	fi, err := os.Stat(path + "-wal")
	return err == nil && fi.Size() > 0
}

// openSQLiteReadOnly opens a read-only pool on path (SQLite's URI form,
// whose mode and immutable parameters the driver hands to SQLite).
func openSQLiteReadOnly(path string, immutable bool) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMS))
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	db.SetMaxIdleConns(8)
	return db, nil
}

// writeProblem says why this process cannot write the store at path, or
// returns "". SQLite writes the database file and, in WAL mode, the -wal
// and -shm files beside it, which it creates (and removes on the last
// close) in the database's directory.
func writeProblem(path string) string {
	needDir := false
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			needDir = true
			continue
		}
		if why := accessProblem(f, unix.R_OK|unix.W_OK, ""); why != "" {
			return why
		}
	}
	if needDir {
		base := filepath.Base(path)
		return accessProblem(filepath.Dir(path), unix.W_OK|unix.X_OK,
			fmt.Sprintf(" (SQLite creates %s, %s-wal and %s-shm there)", base, base, base))
	}
	return ""
}

// accessProblem checks access mode to path as the kernel would for this
// process (effective IDs, capabilities) and describes a refusal: a
// read-only file system, or the owner and mode that keep this user out.
func accessProblem(path string, mode uint32, why string) string {
	err := unix.Faccessat(unix.AT_FDCWD, path, mode, unix.AT_EACCESS)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, unix.EROFS):
		return fmt.Sprintf("%s is on a read-only file system", path)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		fi, serr := os.Stat(path)
		what := "file"
		if serr == nil && fi.IsDir() {
			what = "directory"
		}
		owner := ""
		if uid, ok := statOwner(fi); serr == nil && ok {
			owner = fmt.Sprintf(": it belongs to uid %d, mode %v", uid, fi.Mode())
		}
		return fmt.Sprintf("uid %d may not write the %s %s%s%s", os.Geteuid(), what, path, why, owner)
	}
	return fmt.Sprintf("%s: %v", path, err)
}

// openSQLite opens a pool on path whose connections commit with the given
// synchronous setting.
func openSQLite(path, synchronous string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMS))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", synchronous)
	// Write transactions take the write lock when they begin, so two
	// that read and then write cannot deadlock upgrading their locks.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	// Opening a connection runs the pragmas; keep enough idle ones for a
	// burst of concurrent readers.
	db.SetMaxIdleConns(8)
	return db, nil
}

// bootIDFile names this boot of a Linux machine.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// bootID returns the current boot's id, or "" where there is none to read.
func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// recoverAfterReboot moves every SQN_HE up to its reservation if the
// machine may have lost power since the store was last opened: if boot
// differs from the boot recorded in the store, or is unknown (""). SQN
// allocations within a reservation commit without fsync, so a power
// failure may have rolled SQN_HE back below SQNs already issued; the
// reservations were durable (see the package comment).
func (s *Store) recoverAfterReboot(boot string) error {
	var seen string
	err := s.db.QueryRow(`SELECT value FROM store_meta WHERE key = 'boot_id'`).Scan(&seen)
	if err == nil && boot != "" && seen == boot {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: reading boot id: %w", err)
	}
	return s.writeTx(s.durable, func(tx *sql.Tx) error {
		// Another process may have done it meanwhile.
		err := tx.QueryRow(`SELECT value FROM store_meta WHERE key = 'boot_id'`).Scan(&seen)
		if err == nil && boot != "" && seen == boot {
			return nil
		}
		if _, err := tx.Exec(`UPDATE subscribers SET sqn = sqn_reserved WHERE sqn < sqn_reserved`); err != nil {
			return fmt.Errorf("store: resuming SQNs at their reservations: %w", err)
		}
		if _, err := tx.Exec(`INSERT INTO store_meta (key, value) VALUES ('boot_id', $1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, boot); err != nil {
			return fmt.Errorf("store: recording boot id: %w", err)
		}
		return nil
	})
}
