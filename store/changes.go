package store

import (
	"database/sql"
	"fmt"
)

// Change is one entry of the change feed: a subscriber written (Deleted
// false) or deleted, by any process sharing the store.
type Change struct {
	Seq     uint64
	SUPI    string
	Deleted bool
}

// keepChanges is how many changes the feed keeps: a reader that falls
// further behind (a core stopped for a long time) starts again from the
// newest, having missed nothing it needs, since it reads subscribers
// afresh on every use and only acts on changes to UEs it serves.
const keepChanges = 100000

// recordChange appends supi's change to the feed inside tx.
func recordChange(tx *sql.Tx, supi string, deleted bool) error {
	var seq int64
	if err := tx.QueryRow(`UPDATE change_seq SET n = n + 1 RETURNING n`).Scan(&seq); err != nil {
		return fmt.Errorf("store: numbering a change: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO subscriber_changes (seq, supi, deleted) VALUES ($1, $2, $3)`, seq, supi, deleted); err != nil {
		return fmt.Errorf("store: recording a change: %w", err)
	}
	if seq%1000 == 0 {
		if _, err := tx.Exec(`DELETE FROM subscriber_changes WHERE seq <= $1`, seq-keepChanges); err != nil {
			return fmt.Errorf("store: pruning changes: %w", err)
		}
	}
	return nil
}

// LastChange is the number of the newest change (0: none yet): where a
// reader that only cares about what happens from now on starts.
func (s *Store) LastChange() (uint64, error) {
	var n int64
	if err := s.db.QueryRow(`SELECT n FROM change_seq`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: reading the change counter: %w", err)
	}
	return uint64(n), nil
}

// Changes returns up to limit changes after seq, oldest first.
func (s *Store) Changes(after uint64, limit int) ([]Change, error) {
	rows, err := s.db.Query(`SELECT seq, supi, deleted FROM subscriber_changes WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(after), limit)
	if err != nil {
		return nil, fmt.Errorf("store: reading changes: %w", err)
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var c Change
		var seq int64
		if err := rows.Scan(&seq, &c.SUPI, &c.Deleted); err != nil {
			return nil, fmt.Errorf("store: reading changes: %w", err)
		}
		c.Seq = uint64(seq)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading changes: %w", err)
	}
	return out, nil
}
