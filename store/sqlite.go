package store

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

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
