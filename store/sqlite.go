package store

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// SQLite's own word for a store it may not write is "unable to open
	// database file (14)" or "attempt to write a readonly database", at
	// the first write if not at once: say which file and why, up front.
	if why := writeProblem(path); why != "" {
		return nil, fmt.Errorf("store: cannot write %s: %s. Fix that, run as the store's owner, or choose another store (--store, store.path); tern subscriber list only reads a store", path, why)
	}
	kind, err := sniff(path)
	if err != nil {
		return nil, err
	}
	backup := ""
	switch kind {
	case fileMissing:
		// Created here so that it is private: subscriber keys are secrets.
		// SQLite gives its -wal and -shm files the same permissions.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		f.Close()
	case fileLegacy:
		if backup, err = convertLegacy(path, opts); err != nil {
			return nil, err
		}
	case fileOther:
		return nil, fmt.Errorf("store: %s is neither a SQLite database nor a tern subscriber log", path)
	}
	fast, durable := "NORMAL", "FULL"
	if opts.NoSync {
		fast, durable = "OFF", "OFF"
	}
	db, err := openSQLite(path, fast)
	if err != nil {
		return nil, err
	}
	dur, err := openSQLite(path, durable)
	if err != nil {
		db.Close()
		return nil, err
	}
	s, err := newStore(dialect{name: DriverSQLite, serialWrites: true}, db, dur)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	s.legacyBackup = backup
	if err := s.recoverAfterReboot(bootID()); err != nil {
		s.Close()
		return nil, err
	}
	s.syncs.Store(0)
	return s, nil
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
	s, err := newReadOnlyStore(dialect{name: DriverSQLite, serialWrites: true}, db)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return s, nil
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
