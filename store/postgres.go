package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// connectTimeout bounds how long OpenPostgres waits for the server.
const connectTimeout = 10 * time.Second

// OpenPostgres opens the store in the PostgreSQL database named by dsn (a
// URL or key=value connection string), creating its tables on first use.
func OpenPostgres(dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: postgres connection string: %w", err)
	}
	// SQN reservations rely on every commit being durable when it
	// returns, whatever the server's default.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	db := stdlib.OpenDB(*cfg)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to postgres %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return newStore(dialect{
		name:        DriverPostgres,
		forUpdate:   " FOR UPDATE",
		migrateLock: "SELECT pg_advisory_xact_lock(7242180331)", // any constant key, tern's own
	}, db, db)
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
