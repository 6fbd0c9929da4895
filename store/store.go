// Package store is the subscriber store behind the UDR: a map from SUPI to
// Subscriber kept by a database engine, SQLite (embedded, the default) or
// PostgreSQL (for deployments that outgrow one host).
//
// # Engines
//
// Durability, crash recovery and locking between processes are the
// engine's; tern only issues transactions, the same SQL on both engines.
// SQLite runs in WAL mode with a busy timeout, so `tern subscriber add` and
// a running `tern up` share one file: readers never wait, writers queue on
// the file's lock (within one process first on a mutex, so that they do not
// poll in SQLite's busy handler). Every write an operator makes (Put,
// PutAll, Delete) is durable when it returns: SQLite commits it with
// synchronous=FULL, PostgreSQL with synchronous_commit=on, which the store
// sets on its connections whatever the server's default.
//
// # SQN allocation
//
// SQN_HE changes on every authentication, possibly in several processes at
// once, so it lives in the database and each allocation is one transaction
// that reads SQN_HE under a write lock (SQLite's BEGIN IMMEDIATE, or
// PostgreSQL's SELECT ... FOR UPDATE), computes the next value and writes it
// back: no two allocations see the same SQN_HE.
//
// An fsync per authentication would bound a registration storm by the
// disk, so allocations lean on a reservation instead: each subscriber's
// sqn_reserved is a durable bound above every SQN issued so far. An
// allocation that stays within it commits without an fsync (SQLite
// synchronous=NORMAL: it survives the process crashing, not the machine);
// one that would pass it, or go below SQN_HE (a 48-bit wrap, a deliberate
// reset), raises it headroom beyond the new value in a commit with
// synchronous=FULL, which also makes every earlier commit durable, before
// the SQN is returned. A power failure can therefore roll SQN_HE back but
// never past sqn_reserved. The SQLite engine records the machine's boot
// (Linux's boot_id) in the file and, when it is opened after a reboot,
// first moves every SQN_HE up to its reservation, so no SQN is issued
// twice; the USIM accepts the jump because it accepts any SQN above the
// highest it has seen within a large Δ (TS 33.102 Annex C.2.1, C.3).
// PostgreSQL commits every allocation synchronously and needs no such step.
//
// # Schema
//
// The schema is versioned: schema_version holds the number of the last
// migration applied, and Open applies the numbered migrations embedded from
// migrations/ that are missing, in one transaction. A store written by a
// newer tern (a higher version than this one knows) is refused, not guessed
// at.
//
// # Import
//
// tern used to keep subscribers in an append-only log of JSON lines. Open
// recognises such a file by its content and converts it in place, keeping
// the old file beside it (legacy.go); `tern subscriber import` reads one
// into any store.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Drivers, the values of config store.driver.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Options tunes a SQLite store.
type Options struct {
	// NoSync turns fsync off. Only for tests and benchmarks that measure
	// something else: a crash of the machine may then lose acknowledged
	// writes and SQN reservations.
	NoSync bool
}

// Store is a subscriber map in a database, safe for concurrent use by
// goroutines and, through the engine, by processes.
type Store struct {
	d dialect
	// db serves reads and SQN allocations within a reservation; durable
	// serves writes that must be durable when they return. They are the
	// same pool except with SQLite, where they differ in synchronous.
	db, durable *sql.DB
	// wmu serialises write transactions within this process where the
	// engine locks the whole database (SQLite).
	wmu   sync.Mutex
	syncs atomic.Uint64
	// sqnStmts are the statements of an allocation, prepared once per
	// pool: parsing them cost a third of an allocation.
	sqnStmts map[*sql.DB]sqnStmts
	// get is Get's statement, prepared once: a registration reads the
	// subscriber several times (authentication, am-data, UECM), and
	// parsing the query cost about a third of each read.
	get *sql.Stmt

	legacyBackup string // where Open kept an imported legacy log, if it did

	// lock is the SQLite file, open with a shared flock for as long as the
	// Store is (lockShared); nil for PostgreSQL. created is what Open
	// created, if it did.
	lock    *os.File
	created *Creation
}

// dialect is what differs between engines.
type dialect struct {
	name string
	// forUpdate ends the SELECT that reads SQN_HE in an allocation, locking
	// the row where the transaction has not already locked the database.
	forUpdate string
	// serialWrites: the engine takes one write lock for the whole database.
	serialWrites bool
	// migrateLock, if set, serialises migrations between processes where
	// a transaction alone does not (PostgreSQL: two may create the same
	// table at once).
	migrateLock string
}

// OpenDriver opens the store of driver: for "sqlite" (or "") source is the
// database file, for "postgres" a PostgreSQL connection string.
func OpenDriver(driver, source string) (*Store, error) {
	switch driver {
	case DriverSQLite, "":
		return Open(source)
	case DriverPostgres:
		return OpenPostgres(source)
	}
	return nil, fmt.Errorf("store: driver %q is not %s or %s", driver, DriverSQLite, DriverPostgres)
}

// OpenDriverReadOnly opens the store of driver for reading only, creating,
// migrating and writing nothing: a SQLite file with OpenReadOnly, a
// PostgreSQL database with OpenPostgresReadOnly.
func OpenDriverReadOnly(driver, source string) (*Store, error) {
	switch driver {
	case DriverSQLite, "":
		return OpenReadOnly(source)
	case DriverPostgres:
		return OpenPostgresReadOnly(source)
	}
	return nil, fmt.Errorf("store: driver %q is not %s or %s", driver, DriverSQLite, DriverPostgres)
}

type sqnStmts struct{ sel, upd *sql.Stmt }

// newStore migrates the schema and wraps the pools. It closes them on error.
func newStore(d dialect, db, durable *sql.DB) (*Store, error) {
	s := &Store{d: d, db: db, durable: durable, sqnStmts: map[*sql.DB]sqnStmts{}}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	return s.prepare()
}

// newReadOnlyStore wraps a pool that cannot write: the schema must be
// current already, since migrating it would write. It closes db on error.
func newReadOnlyStore(d dialect, db *sql.DB) (*Store, error) {
	s := &Store{d: d, db: db, durable: db, sqnStmts: map[*sql.DB]sqnStmts{}}
	if err := s.checkSchema(); err != nil {
		s.Close()
		return nil, err
	}
	return s.prepare()
}

// prepare prepares the statements used on every call. It closes the store
// on error.
func (s *Store) prepare() (*Store, error) {
	d, db, durable := s.d, s.db, s.durable
	for _, p := range []*sql.DB{db, durable} {
		if _, ok := s.sqnStmts[p]; ok {
			continue
		}
		sel, err := p.Prepare(`SELECT sqn, sqn_reserved FROM subscribers WHERE supi = $1` + d.forUpdate)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
		upd, err := p.Prepare(`UPDATE subscribers SET sqn = $2, sqn_reserved = $3 WHERE supi = $1`)
		if err != nil {
			sel.Close()
			s.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
		s.sqnStmts[p] = sqnStmts{sel, upd}
	}
	get, err := db.Prepare(`SELECT record, sqn FROM subscribers WHERE supi = $1`)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	s.get = get
	s.syncs.Store(0) // count from here: Syncs is about the caller's writes
	return s, nil
}

// Driver returns the engine's name, DriverSQLite or DriverPostgres.
func (s *Store) Driver() string { return s.d.name }

// LegacyBackup returns where Open kept the legacy log it converted, or "".
func (s *Store) LegacyBackup() string { return s.legacyBackup }

// writeTx runs fn in a write transaction on db and commits it. Writes on
// the durable pool count as syncs.
func (s *Store) writeTx(db *sql.DB, fn func(*sql.Tx) error) error {
	if s.d.serialWrites {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if db == s.durable {
		s.syncs.Add(1)
	}
	return nil
}

// encodeRecord is the subscription as stored: JSON without the SQN, which
// has its own columns.
func encodeRecord(sub *Subscriber) (string, error) {
	c := sub.Clone()
	c.SQN = 0
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("store: encoding %s: %w", sub.SUPI, err)
	}
	return string(b), nil
}

func decodeRecord(record string, sqn int64) (Subscriber, error) {
	var sub Subscriber
	if err := json.Unmarshal([]byte(record), &sub); err != nil {
		return sub, fmt.Errorf("store: decoding record: %w", err)
	}
	sub.SQN = uint64(sqn)
	if err := sub.Validate(); err != nil {
		return sub, fmt.Errorf("store: stored record: %w", err)
	}
	return sub, nil
}

// Get returns the subscriber, or ErrNotFound. Its SQN is SQN_HE, the last
// SQN issued.
func (s *Store) Get(supi string) (Subscriber, error) {
	var record string
	var sqn int64
	err := s.get.QueryRow(supi).Scan(&record, &sqn)
	if errors.Is(err, sql.ErrNoRows) {
		return Subscriber{}, fmt.Errorf("%s: %w", supi, ErrNotFound)
	}
	if err != nil {
		return Subscriber{}, fmt.Errorf("store: reading %s: %w", supi, err)
	}
	return decodeRecord(record, sqn)
}

// upsert statements. A put replaces the subscription and sets SQN_HE and
// its reservation to sub.SQN.
const (
	putSQL = `INSERT INTO subscribers (supi, record, sqn, sqn_reserved) VALUES ($1, $2, $3, $3)
		ON CONFLICT (supi) DO UPDATE SET record = excluded.record, sqn = excluded.sqn, sqn_reserved = excluded.sqn_reserved`
	putNewSQL = `INSERT INTO subscribers (supi, record, sqn, sqn_reserved) VALUES ($1, $2, $3, $3)
		ON CONFLICT (supi) DO NOTHING`
)

// Put validates and stores sub, replacing any subscriber with the same
// SUPI. sub.SQN becomes SQN_HE.
func (s *Store) Put(sub Subscriber) error {
	_, err := s.PutAll([]Subscriber{sub}, true)
	return err
}

// PutAll stores subs in one transaction. With overwrite false, existing
// SUPIs are left as they are (so a restart keeps their SQNs). It returns
// how many subscribers were written.
func (s *Store) PutAll(subs []Subscriber, overwrite bool) (int, error) {
	mode := keepExisting
	if overwrite {
		mode = replaceExisting
	}
	return s.writeAll(subs, mode)
}

// existingMode is what writeAll does with a SUPI the store already has.
type existingMode uint8

const (
	keepExisting    existingMode = iota // leave it, write the others
	replaceExisting                     // overwrite it
	failOnExisting                      // write nothing: *ExistError
)

// writeAll validates subs, then writes them in one transaction, treating
// SUPIs already stored as mode says. It returns how many it wrote.
func (s *Store) writeAll(subs []Subscriber, mode existingMode) (int, error) {
	records := make([]string, len(subs))
	seen := make(map[string]bool, len(subs))
	for i := range subs {
		if err := subs[i].Validate(); err != nil {
			return 0, fmt.Errorf("store: %w", err)
		}
		if seen[subs[i].SUPI] {
			return 0, fmt.Errorf("store: %s given twice", subs[i].SUPI)
		}
		seen[subs[i].SUPI] = true
		var err error
		if records[i], err = encodeRecord(&subs[i]); err != nil {
			return 0, err
		}
	}
	q := putNewSQL
	if mode == replaceExisting {
		q = putSQL
	}
	n := 0
	err := s.writeTx(s.durable, func(tx *sql.Tx) error {
		st, err := tx.Prepare(q)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		defer st.Close()
		var exist []string
		for i := range subs {
			res, err := st.Exec(subs[i].SUPI, records[i], int64(subs[i].SQN))
			if err != nil {
				return fmt.Errorf("store: writing %s: %w", subs[i].SUPI, err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("store: %w", err)
			}
			if k == 0 && mode == failOnExisting {
				exist = append(exist, subs[i].SUPI)
				continue
			}
			if k > 0 {
				if err := recordChange(tx, subs[i].SUPI, false); err != nil {
					return err
				}
			}
			n += int(k)
		}
		if len(exist) > 0 {
			// Rolled back: the check and the writes are one transaction, so
			// no other writer can slip a SUPI in between them.
			return &ExistError{SUPIs: exist}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Delete removes the subscriber, or returns ErrNotFound.
func (s *Store) Delete(supi string) error {
	return s.writeTx(s.durable, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM subscribers WHERE supi = $1`, supi)
		if err != nil {
			return fmt.Errorf("store: deleting %s: %w", supi, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("store: %w", err)
		} else if n == 0 {
			return fmt.Errorf("%s: %w", supi, ErrNotFound)
		}
		return recordChange(tx, supi, true)
	})
}

// List returns all subscribers, sorted by SUPI, with SQN_HE as SQN.
func (s *Store) List() ([]Subscriber, error) {
	rows, err := s.db.Query(`SELECT record, sqn FROM subscribers`)
	if err != nil {
		return nil, fmt.Errorf("store: listing: %w", err)
	}
	defer rows.Close()
	var out []Subscriber
	for rows.Next() {
		var record string
		var sqn int64
		if err := rows.Scan(&record, &sqn); err != nil {
			return nil, fmt.Errorf("store: listing: %w", err)
		}
		sub, err := decodeRecord(record, sqn)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: listing: %w", err)
	}
	// Sorted here, not by ORDER BY: the engines collate text differently.
	slices.SortFunc(out, func(a, b Subscriber) int { return strings.Compare(a.SUPI, b.SUPI) })
	return out, nil
}

// Len returns the number of subscribers.
func (s *Store) Len() (int, error) {
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM subscribers`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: counting: %w", err)
	}
	return n, nil
}

// Syncs returns how many writes this Store has made durable before
// returning since Open: with SQLite every write except SQN allocations
// within a reservation, with PostgreSQL every write.
func (s *Store) Syncs() uint64 { return s.syncs.Load() }

// IncrementSQN adds one to the subscriber's SQN_HE (wrapping at 48 bits),
// durably, and returns it.
func (s *Store) IncrementSQN(supi string) (uint64, error) {
	return s.UpdateSQN(supi, 0, func(cur uint64) (uint64, error) { return (cur + 1) & MaxSQN, nil })
}

// errNeedsDurable makes an allocation on the fast pool start again on the
// durable one.
var errNeedsDurable = errors.New("store: reservation must be raised")

// UpdateSQN atomically replaces the subscriber's SQN_HE with next(SQN_HE)
// and returns the new value, which is below a durable reservation before
// it is returned, so it is never issued again after a crash. When the new
// value passes the reservation, or goes below SQN_HE, the new reservation,
// value+headroom (at most MaxSQN), is committed durably with it; otherwise
// the commit needs no fsync. headroom 0 makes every allocation durable.
// next runs inside the transaction, must be quick, and may run more than
// once for one call (so it must depend only on its argument); an error
// from it aborts the update.
func (s *Store) UpdateSQN(supi string, headroom uint64, next func(cur uint64) (uint64, error)) (uint64, error) {
	n, err := s.updateSQN(s.db, supi, headroom, next)
	if errors.Is(err, errNeedsDurable) {
		n, err = s.updateSQN(s.durable, supi, headroom, next)
	}
	return n, err
}

func (s *Store) updateSQN(db *sql.DB, supi string, headroom uint64, next func(uint64) (uint64, error)) (uint64, error) {
	var n uint64
	stmts := s.sqnStmts[db]
	err := s.writeTx(db, func(tx *sql.Tx) error {
		var cur, reserved int64
		err := tx.Stmt(stmts.sel).QueryRow(supi).Scan(&cur, &reserved)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: %w", supi, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: reading SQN of %s: %w", supi, err)
		}
		if n, err = next(uint64(cur)); err != nil {
			return err
		}
		if n > MaxSQN {
			return fmt.Errorf("store: %s: sqn %d exceeds 48 bits", supi, n)
		}
		res := uint64(reserved)
		// A value below SQN_HE (a wrap or a reset) needs a lower durable
		// reservation: after a power failure SQN_HE resumes at the
		// reservation, and from the old, higher one it would wrap again
		// and reissue the values issued since.
		if n > res || n < uint64(cur) {
			if db != s.durable {
				return errNeedsDurable
			}
			res = n + min(headroom, MaxSQN-n)
		}
		if _, err := tx.Stmt(stmts.upd).Exec(supi, int64(n), int64(res)); err != nil {
			return fmt.Errorf("store: writing SQN of %s: %w", supi, err)
		}
		return nil
	})
	return n, err
}

// ReserveSQNs makes sure every subscriber has a durable reservation at
// least headroom/2 above its SQN_HE, raising the missing ones to
// SQN_HE+headroom in one durable write. Called when the UDR starts, it
// keeps the first authentication of each subscriber off the disk:
// otherwise a core that has just provisioned 10,000 subscribers would pay
// one fsync per first registration.
func (s *Store) ReserveSQNs(headroom uint64) error {
	if headroom == 0 {
		return nil
	}
	h := int64(headroom)
	var short int
	err := s.db.QueryRow(`SELECT COUNT(*) FROM subscribers WHERE sqn_reserved - sqn < $1 AND sqn < $2`, h/2, int64(MaxSQN)).Scan(&short)
	if err != nil {
		return fmt.Errorf("store: reading SQN reservations: %w", err)
	}
	if short == 0 {
		return nil // no write, no fsync
	}
	return s.writeTx(s.durable, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE subscribers
			SET sqn_reserved = CASE WHEN sqn > $1 - $2 THEN $1 ELSE sqn + $2 END
			WHERE sqn_reserved - sqn < $3 AND sqn < $1`, int64(MaxSQN), h, h/2)
		if err != nil {
			return fmt.Errorf("store: reserving SQNs: %w", err)
		}
		return nil
	})
}

// Close releases the database. Later calls fail.
func (s *Store) Close() error {
	var errs []error
	for _, st := range s.sqnStmts {
		errs = append(errs, st.sel.Close(), st.upd.Close())
	}
	if s.get != nil {
		errs = append(errs, s.get.Close())
	}
	if s.durable != s.db {
		errs = append(errs, s.durable.Close())
	}
	errs = append(errs, s.db.Close())
	if s.lock != nil {
		// After the pools: the lock says the database is open.
		errs = append(errs, s.lock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: closing: %w", err)
	}
	return nil
}
