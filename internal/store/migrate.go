package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed migrations
var migrationFS embed.FS

// Migrate applies the embedded migrations that have not run yet, each in its own
// transaction. On PostgreSQL an advisory lock keeps concurrent nodes from racing.
func (s *Store) Migrate(ctx context.Context) error {
	dir := "migrations/" + string(s.db.Engine())
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return fmt.Errorf("store: read migrations: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	if _, err := s.db.Writer().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		body, err := fs.ReadFile(migrationFS, dir+"/"+name)
		if err != nil {
			return err
		}
		if err := s.migrateOne(ctx, name, string(body)); err != nil {
			return fmt.Errorf("store: migration %s: %w", name, s.db.PgBouncerHint(err))
		}
	}
	return nil
}

// migrateOne runs one migration outside group commit, on the writers' pool
// (on SQLite its connection besides the committer's).
func (s *Store) migrateOne(ctx context.Context, version, body string) error {
	tx, err := s.db.Writer().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.db.Engine() == Postgres {
		// One migrator per schema at a time; the key names the schema, so
		// databases that keep several schemas (tests, tenants) do not queue
		// behind one another.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7301, hashtext(current_schema()))`); err != nil {
			return err
		}
		// A migration may rewrite a large table, and a node may wait here
		// for another's: neither is a runaway statement.
		if _, err := tx.ExecContext(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.db.Rebind(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, s.db.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}
