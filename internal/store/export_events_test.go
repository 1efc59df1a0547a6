package store

import (
	"context"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// MigrateBefore applies the embedded migrations named before version (e.g.
// "0025"), as Migrate would, so that a test can write rows in an older schema
// and check what a later migration makes of them.
func (s *Store) MigrateBefore(ctx context.Context, version string) error {
	dir := "migrations/" + string(s.db.Engine())
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	if _, err := s.db.Writer().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") || name >= version {
			continue
		}
		body, err := fs.ReadFile(migrationFS, dir+"/"+name)
		if err != nil {
			return err
		}
		if err := s.migrateOne(ctx, name, string(body)); err != nil {
			return err
		}
	}
	return nil
}

// ExecRaw runs a statement written for s's engine on the writer's pool,
// outside the committer (tests that set up rows in an older schema).
func (s *Store) ExecRaw(ctx context.Context, query string, args ...any) error {
	_, err := s.db.Writer().ExecContext(ctx, s.db.Rebind(query), args...)
	return err
}

// QueryInt reads one integer (tests).
func (s *Store) QueryInt(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = s.db.Readers().QueryRowContext(ctx, s.db.Rebind(query), args...).Scan(&n)
	return n, err
}

// RecoverStart is recoverStart: where a recover job's scan of webhookID's
// deliveries for events since from starts.
func (s *Store) RecoverStart(ctx context.Context, webhookID int64, from time.Time) (int64, error) {
	return s.recoverStart(ctx, webhookID, from)
}

// RecoverStartMargin is recoverStartMargin.
const RecoverStartMargin = recoverStartMargin
