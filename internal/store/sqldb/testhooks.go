package sqldb

import (
	"context"
	"time"
)

// What the tests of the packages above the engine look at inside it. None
// of these is for production code.

// CachedEntries returns how many entries the read cache holds.
func (db *DB) CachedEntries() int {
	db.cache.mu.Lock()
	defer db.cache.mu.Unlock()
	return len(db.cache.entries)
}

// KillCacheListener terminates the PostgreSQL backend the read cache listens
// on, as a restart or a network failure would; the listener stays off until
// RedialCacheListener (or an hour), so that a test decides when the outage
// ends whatever the machine's load.
func (db *DB) KillCacheListener(ctx context.Context) error {
	l := db.listener
	l.mu.Lock()
	l.retry = time.Hour
	pid := l.pid
	l.mu.Unlock()
	_, err := db.w.ExecContext(ctx, "SELECT pg_terminate_backend($1)", int64(pid))
	return err
}

// RedialCacheListener ends the outage KillCacheListener began: the listener
// reconnects now.
func (db *DB) RedialCacheListener() {
	l := db.listener
	l.mu.Lock()
	l.retry = listenRetryFirst
	l.mu.Unlock()
	select {
	case l.redial <- struct{}{}:
	default:
	}
}

// Committers reports how many committers run groups at once.
func (db *DB) Committers() int { return db.committers }

// Queued reports how many writes wait for a committer.
func (db *DB) Queued() int { return len(db.batch) }

// PreparedWrites lists the statements prepared on the SQLite committer's
// connection (none on PostgreSQL), so that a test can see which statements
// writes ran. Call it while no write runs.
func (db *DB) PreparedWrites() []string {
	var out []string
	if db.raw != nil {
		for q := range db.raw.stmts {
			out = append(out, q)
		}
	}
	return out
}
