package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// connectTimeout bounds how long OpenPostgres waits for the server.
const connectTimeout = 10 * time.Second

// postgresDialect is PostgreSQL's.
var postgresDialect = dialect{
	name:        DriverPostgres,
	forUpdate:   " FOR UPDATE",
	migrateLock: "SELECT pg_advisory_xact_lock(7242180331)", // any constant key, tern's own
}

// OpenPostgres opens the store in the PostgreSQL database named by dsn (a
// URL or key=value connection string), creating its tables on first use.
func OpenPostgres(dsn string) (*Store, error) {
	db, err := openPostgres(dsn, map[string]string{
		// SQN reservations rely on every commit being durable when it
		// returns, whatever the server's default.
		"synchronous_commit": "on",
	})
	if err != nil {
		return nil, err
	}
	return newStore(postgresDialect, db, db)
}

// OpenPostgresReadOnly opens the store in the PostgreSQL database named by
// dsn for reading only: its sessions run with
// default_transaction_read_only, so the server refuses any write, and the
// schema is checked, not migrated (a newer tern reading a store must not
// migrate it under an older core that runs on it).
func OpenPostgresReadOnly(dsn string) (*Store, error) {
	db, err := openPostgres(dsn, map[string]string{"default_transaction_read_only": "on"})
	if err != nil {
		return nil, err
	}
	return newReadOnlyStore(postgresDialect, db)
}

// openPostgres connects to dsn with the given run-time parameters set on
// every session.
func openPostgres(dsn string, params map[string]string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: postgres connection string: %w", err)
	}
	maps.Copy(cfg.RuntimeParams, params)
	db := stdlib.OpenDB(*cfg)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to postgres %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return db, nil
}

// PostgresDatabase names the database dsn connects to, as host:port/name,
// for what there must be one of per database rather than per host (the
// operator socket of the core that uses it).
func PostgresDatabase(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("store: postgres connection string: %w", err)
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database), nil
}
