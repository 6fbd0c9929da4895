package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// migrationFiles are the schema's migrations, NNNN_name.sql, numbered from
// 1 without gaps. A released migration is never edited: a change to the
// schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// ErrNewerSchema is returned by Open for a store whose schema a newer tern
// wrote.
var ErrNewerSchema = errors.New("store: schema is newer than this tern knows")

// migrations returns the embedded migrations in order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names { // sorted by fs.Glob
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != len(ms)+1 {
			return nil, fmt.Errorf("store: migration %s: want number %04d", base, len(ms)+1)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	return ms, nil
}

// schemaVersion reads the store's version; ok is false where the table is
// missing or unreadable, which only the locked path below may conclude.
func schemaVersion(q interface {
	QueryRow(string, ...any) *sql.Row
}) (v int, ok bool) {
	var n sql.NullInt64
	if err := q.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&n); err != nil {
		return 0, false
	}
	return int(n.Int64), true
}

func newerSchema(have, know int) error {
	return fmt.Errorf("%w: it has schema version %d, this tern knows up to %d; run the newer tern, or restore a backup made for this one", ErrNewerSchema, have, know)
}

// checkSchema fails unless the schema is the latest this tern knows, the
// check of a store opened read-only, which cannot migrate.
func (s *Store) checkSchema() error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	v, ok := schemaVersion(s.db)
	switch {
	case !ok:
		if err := s.db.Ping(); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		return errors.New("store: no subscriber table: a store is created by opening it writable (tern up, tern subscriber add)")
	case v > latest:
		return newerSchema(v, latest)
	case v < latest:
		return fmt.Errorf("store: schema version %d is older than this tern's %d, and a store opened read-only cannot be migrated: open it writable once (tern up, tern subscriber add)", v, latest)
	}
	return nil
}

// migrate brings the schema to the latest version in one transaction, or
// refuses a newer one. A store already current costs one read.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	if v, ok := schemaVersion(s.db); ok && v == latest {
		return nil
	} else if ok && v > latest {
		return newerSchema(v, latest)
	}
	return s.writeTx(s.durable, func(tx *sql.Tx) error {
		if s.d.migrateLock != "" {
			if _, err := tx.ExecContext(ctx, s.d.migrateLock); err != nil {
				return fmt.Errorf("store: locking the schema: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("store: creating schema_version: %w", err)
		}
		v, ok := schemaVersion(tx)
		if !ok {
			return errors.New("store: reading schema_version failed")
		}
		if v > latest {
			return newerSchema(v, latest)
		}
		for _, m := range ms[v:] {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, latest); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		return nil
	})
}
