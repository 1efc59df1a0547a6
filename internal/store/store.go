package store

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Engine names a database engine.
type Engine = sqldb.Engine

// The supported engines.
const (
	SQLite   = sqldb.SQLite
	Postgres = sqldb.Postgres
)

// Options are the optional settings of OpenWith (sqldb.Options).
type Options = sqldb.Options

// Defaults of Options.
const (
	DefaultStatementTimeout = sqldb.DefaultStatementTimeout
	DefaultConnLifetime     = sqldb.DefaultConnLifetime
	DefaultConnectTimeout   = sqldb.DefaultConnectTimeout
)

// DefaultMaxConns is four connections per core (sqldb.DefaultMaxConns).
func DefaultMaxConns() int { return sqldb.DefaultMaxConns() }

// Durable reports whether SQLite commits survive power loss.
const Durable = sqldb.Durable

// Tx is the transaction a write function runs in (sqldb.Tx).
type Tx = sqldb.Tx

// row is a single-row result (sqldb.Row).
type row = sqldb.Row

// CommitStats describes the committers' work since the store opened.
type CommitStats = sqldb.CommitStats

// ErrClosed is the error of a write made after (or queued too late before)
// Store.Close: it was not made.
var ErrClosed = sqldb.ErrClosed

// ErrServed is returned by ClaimServing when another process serves the
// same SQLite database.
var ErrServed = sqldb.ErrServed

// Store is the database. It is safe for concurrent use.
type Store struct {
	db *sqldb.DB // the engine: connections, group commit, read cache
	// wakes are the listeners of commits that wrote events (event_stream.go).
	wakes wakeSlots

	deepPage int // tests: the list offset from which pages seek by day (0: deepPage)
	// tests: PostgreSQL's search window and GIN match limit (0: the
	// defaults, search_pg.go)
	searchWindow     int64
	searchGINMatches int
	// log receives a long migration's progress (Options.Log).
	log *slog.Logger
}

// cacheGeneration is the row every write that may change cached data bumps
// (migration 0004), through which SQLite's read cache learns of it.
var cacheGeneration = sqldb.Generation{
	Read: `SELECT gen FROM cache_generation WHERE id = 1`,
	Bump: `UPDATE cache_generation SET gen = gen + 1 WHERE id = 1`,
}

// Open is OpenWith with default options.
func Open(ctx context.Context, dsn string) (*Store, error) { return OpenWith(ctx, dsn, Options{}) }

// OpenWith connects to the database named by dsn: postgres:// or postgresql://
// URLs select PostgreSQL; sqlite://PATH or a plain file path selects SQLite.
func OpenWith(ctx context.Context, dsn string, opt Options) (*Store, error) {
	db, err := sqldb.Open(ctx, dsn, opt, cacheGeneration)
	if err != nil {
		return nil, err
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, log: log}, nil
}

// ClaimServing makes this process the only server of a SQLite database, for
// as long as the store is open: SQLite has a single writer, which one
// server's committer owns and batches for, so a second server would only
// contend for it (and run a second reconciler over the same sends). It takes
// an exclusive lock on a file beside the database, <database>.lock; CLI
// commands do not take it and may run beside a server. On PostgreSQL, where
// several nodes share one database, it does nothing.
func (s *Store) ClaimServing() error { return s.db.ClaimServing() }

// Engine reports which database engine the store runs on.
func (s *Store) Engine() Engine { return s.db.Engine() }

// Ping checks that the database answers and, on SQLite, that its file is
// still the one opened: SQLite keeps writing to a deleted or replaced file
// through its open descriptors, so every later write would be lost on restart.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// Close stops the committer and closes the connections.
func (s *Store) Close() error { return s.db.Close() }

// SetClock fixes the store's notion of now; tests use it for deterministic times.
func (s *Store) SetClock(now func() time.Time) { s.db.SetClock(now) }

// CommitStats reports the committers' counters.
// Writes/Batches is the average group size; Commit/Batches the disk's cost.
func (s *Store) CommitStats() CommitStats { return s.db.CommitStats() }

// Unavailable reports whether err means that the database could not be
// reached or stopped answering (rather than refusing a statement): the
// caller may answer "unavailable, retry" instead of an internal error.
func (s *Store) Unavailable(err error) bool { return s.db.Unavailable(err) }

// CacheServing reports whether the read cache answers from memory: always on
// SQLite, and on PostgreSQL while its notification connection listens.
func (s *Store) CacheServing() bool { return s.db.CacheServing() }

// WithReadScope marks ctx as one request: cached reads made with it check the
// database version once.
func WithReadScope(ctx context.Context) context.Context { return sqldb.WithReadScope(ctx) }

// ReadScope is WithReadScope, for callers that hold the Store behind an
// interface (httpapi.Database).
func (s *Store) ReadScope(ctx context.Context) context.Context { return sqldb.WithReadScope(ctx) }

// Memo caches a value derived from the database (an encoded response, say)
// under key until the database changes, with the same exactness as the
// store's own cached reads. load must depend only on the database and key.
func Memo[T any](ctx context.Context, s *Store, key string, load func() (T, error)) (T, error) {
	return sqldb.Cached(ctx, s.db, "memo:"+key, load)
}

// notFound turns sql.ErrNoRows into the domain's not_found error.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Errorf(domain.NotFound, "%s not found", what)
	}
	return err
}

// notFoundf is notFound with its own message.
func notFoundf(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Errorf(domain.NotFound, format, args...)
	}
	return err
}

// oneRow is nil when res changed a row, else not_found naming what.
func oneRow(res sql.Result, what string) error {
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return domain.Errorf(domain.NotFound, "%s not found", what)
	}
	return nil
}

// queryIDs runs q, which selects one id column, and returns the ids.
func queryIDs(ctx context.Context, tx *Tx, q string, args ...any) ([]int64, error) {
	var ids []int64
	err := tx.Query(ctx, q, args, func(r row) error {
		var id int64
		err := r.Scan(&id)
		ids = append(ids, id)
		return err
	})
	return ids, err
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
