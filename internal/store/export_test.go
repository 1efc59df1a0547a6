package store

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/store/sqldb"
)

// ClaimTestJobs is a claimable table that only the tests create, so that the
// claim primitive is tested apart from any table that uses it.
const ClaimTestJobs ClaimTable = "claim_test_jobs"

func init() { registerClaimTable(ClaimTestJobs) }

// CreateClaimTestJobs creates ClaimTestJobs with the columns and the index
// that ClaimTable documents, so the documented DDL is checked on each engine.
func (s *Store) CreateClaimTestJobs(ctx context.Context) error {
	for _, q := range []string{
		`CREATE TABLE claim_test_jobs (id BIGINT PRIMARY KEY, due_at BIGINT, lease_owner TEXT, lease_until BIGINT)`,
		`CREATE INDEX claim_test_jobs_due ON claim_test_jobs (due_at, id) WHERE due_at IS NOT NULL`,
	} {
		if _, err := s.db.Writer().ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// AddClaimTestJob adds job id, due at due (never when nil).
func (s *Store) AddClaimTestJob(ctx context.Context, id int64, due *time.Time) error {
	var d any
	if due != nil {
		d = micros(*due)
	}
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO claim_test_jobs (id, due_at) VALUES (?, ?)`, id, d)
		return err
	})
}

// ClaimTestJobLease reads job id's lease and due time.
func (s *Store) ClaimTestJobLease(ctx context.Context, id int64) (owner sql.NullString, until, due sql.NullInt64, err error) {
	err = s.db.Readers().QueryRowContext(ctx, s.db.Rebind(`SELECT lease_owner, lease_until, due_at FROM claim_test_jobs WHERE id = ?`), id).Scan(&owner, &until, &due)
	return
}

// IdempotencyKeys counts the stored Idempotency-Key records.
func (s *Store) IdempotencyKeys(ctx context.Context) (n int, err error) {
	err = s.db.Readers().QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys`).Scan(&n)
	return
}

// CachedEntries returns how many entries the read cache holds.
func (s *Store) CachedEntries() int { return s.db.CachedEntries() }

// KillCacheListener terminates the PostgreSQL backend the read cache listens
// on; the listener stays off until RedialCacheListener.
func (s *Store) KillCacheListener(ctx context.Context) error {
	return s.db.KillCacheListener(ctx)
}

// RedialCacheListener ends the outage KillCacheListener began.
func (s *Store) RedialCacheListener() { s.db.RedialCacheListener() }

// SetDeepPage makes list pages from offset n on seek through the per-day
// conversation counts (SQLite), so that tests reach that path with few rows.
func (s *Store) SetDeepPage(n int) { s.deepPage = n }

// Write runs fn as a write that keeps the read cache, for tests of the
// committers.
func (s *Store) Write(ctx context.Context, fn func(*Tx) error) error {
	return s.db.Write(ctx, sqldb.KeepCache, fn)
}

// Committers reports how many committers run groups at once.
func (s *Store) Committers() int { return s.db.Committers() }

// Queued reports how many writes wait for a committer.
func (s *Store) Queued() int { return s.db.Queued() }

// RecordMigration writes version into schema_migrations as if a migration
// had been applied: a newer binary's, for the refusal test.
func (s *Store) RecordMigration(ctx context.Context, version string) error {
	_, err := s.db.Writer().ExecContext(ctx, s.db.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, time.Now().UnixMicro())
	return err
}

// SetSearchWindows sets PostgreSQL's search window and GIN match limit
// (search_pg.go) for s, so that a few messages take every path.
func (s *Store) SetSearchWindows(window int64, matches int) {
	s.searchWindow, s.searchGINMatches = window, matches
}
