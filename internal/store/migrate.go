package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
)

//go:embed migrations
var migrationFS embed.FS

// Migration is one schema migration: embedded in this binary, applied to
// the database, or both.
type Migration struct {
	Version string
	// AppliedAt is when it was applied; zero while it is pending.
	AppliedAt time.Time
	// Known is false for a migration the database has and this binary does
	// not: a newer Switchboard applied it.
	Known bool
}

// NewerDatabaseError is Migrate's refusal of a database a newer Switchboard
// has migrated: this binary's code does not know that schema.
type NewerDatabaseError struct {
	Unknown []string // applied versions this binary does not have
	Latest  string   // this binary's latest migration
}

func (e *NewerDatabaseError) Error() string {
	return fmt.Sprintf("the database was migrated by a newer Switchboard: it has %s, which this binary (latest migration %s) does not know; "+
		"run the newer binary, or restore a backup taken before the upgrade", strings.Join(e.Unknown, ", "), e.Latest)
}

// embeddedMigrations lists this binary's migrations for the engine, in order.
func (s *Store) embeddedMigrations() ([]string, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations/"+string(s.db.Engine()))
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Migrations lists every migration this binary has or the database has
// applied, in version order, without changing anything: its reads run in
// a read-only transaction, which PostgreSQL holds to that (migrate
// --status on a database nodes serve).
func (s *Store) Migrations(ctx context.Context) ([]Migration, error) {
	names, err := s.embeddedMigrations()
	if err != nil {
		return nil, err
	}
	byVersion := map[string]*Migration{}
	for _, n := range names {
		byVersion[n] = &Migration{Version: n, Known: true}
	}
	tx, err := s.db.Writer().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	defer tx.Rollback()
	if err := appliedMigrations(ctx, tx, s.db.Engine(), byVersion); err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// appliedMigrations sets the applied time of each migration in
// schema_migrations, adding those byVersion does not have (unknown).
func appliedMigrations(ctx context.Context, tx *sql.Tx, engine Engine, byVersion map[string]*Migration) error {
	var exists bool
	var err error
	if engine == Postgres {
		err = tx.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists)
	} else {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&exists)
	}
	if err != nil || !exists {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return err
		}
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v}
			byVersion[v] = m
		}
		m.AppliedAt = time.UnixMicro(at).UTC()
	}
	return rows.Err()
}

// Migrate applies the embedded migrations that have not run yet, each in its own
// transaction. On PostgreSQL an advisory lock keeps concurrent nodes from racing.
// A database with a migration this binary does not know is refused
// (NewerDatabaseError) before anything is applied.
func (s *Store) Migrate(ctx context.Context) error {
	names, err := s.embeddedMigrations()
	if err != nil {
		return err
	}
	if _, err := s.db.Writer().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	all, err := s.Migrations(ctx)
	if err != nil {
		return err
	}
	var unknown []string
	for _, m := range all {
		if !m.Known {
			unknown = append(unknown, m.Version)
		}
	}
	if len(unknown) > 0 {
		return &NewerDatabaseError{Unknown: unknown, Latest: names[len(names)-1]}
	}
	dir := "migrations/" + string(s.db.Engine())
	for _, name := range names {
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

// migrationSteps are the Go parts of migrations, by version: work a
// statement cannot do (text folded as package search/words folds it), run in
// the migration's transaction after its SQL.
var migrationSteps = map[string]func(s *Store, ctx context.Context, tx *sql.Tx) error{
	"0034_search":        (*Store).searchBackfill,
	"0037_contact_terms": (*Store).contactTermsBackfill,
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
	if step := migrationSteps[strings.TrimSuffix(version, ".sql")]; step != nil {
		if err := step(s, ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, s.db.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}
