package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Engine names a database engine.
type Engine string

// The supported engines.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// DB is the database: its connections, its committers and its read cache.
// It is safe for concurrent use.
type DB struct {
	engine    Engine
	pgBouncer bool    // Options.PgBouncer
	w         *sql.DB // the one writer on SQLite; the pool on PostgreSQL
	r         *sql.DB // readers; the same pool as w on PostgreSQL
	now       func() time.Time

	cache    *Cache         // see cache.go
	bump     string         // SQLite: Generation.Bump (cache.go)
	listener *cacheListener // PostgreSQL: the cache's notifications (cachepg.go)
	batch    chan *writeReq // the committers' queue (write.go)
	stop     chan struct{}
	stopped  sync.WaitGroup
	closeMu  sync.RWMutex // held for reading while a write is queued
	closed   bool
	shm      *shmFile    // SQLite: this process's -shm descriptor (walindex_unix.go)
	path     string      // SQLite: the database file
	file     os.FileInfo // SQLite: that file as opened, to notice it removed or replaced
	served   *serverLock // SQLite: held by a serving process (ClaimServing)

	rebound sync.Map  // query text with ? → PostgreSQL $n text
	stmts   sync.Map  // stmtKey → *sql.Stmt (SQLite only; see prepared.go)
	wconn   *sql.Conn // SQLite: the committer's connection
	raw     *rawConn  // the committer's driver connection, inside wconn.Raw
	stats   commitStats

	onWake atomic.Pointer[func()] // see OnWake

	pages  *Pages    // see pages.go
	clock  pageClock // commits made or heard of, by account (pages.go)
	fences *fencer   // PostgreSQL: see pagefence.go
	// SQLite: the committer's last PRAGMA data_version, and the connection
	// it was read on (pages.go, foreignCommitted).
	version   int64
	versionOn *rawConn

	committers int // how many committers run (group.go)
}

// Options are the optional settings of Open.
type Options struct {
	// ListenURL is the PostgreSQL URL the read cache listens for changes on
	// (default: the database URL). It must reach PostgreSQL itself, with the
	// same database and search_path: a pooler in transaction mode (PgBouncer)
	// cannot carry LISTEN.
	ListenURL string
	// Log receives the read cache's connection changes (default: discard).
	Log *slog.Logger

	// PostgreSQL's pool and timeouts (pool.go); SQLite ignores them.

	// MaxConns bounds the connections this process holds; 0 means
	// DefaultMaxConns().
	MaxConns int
	// StatementTimeout is PostgreSQL's statement_timeout for every statement
	// but migrations; 0 means DefaultStatementTimeout, negative means none.
	StatementTimeout time.Duration
	// ConnLifetime closes a connection this long after it opened (when it is
	// next idle), so that connections spread again over a restarted or
	// scaled PgBouncer or replica; 0 means DefaultConnLifetime, negative
	// means forever.
	ConnLifetime time.Duration
	// PgBouncer says the URL points at PgBouncer in transaction pooling mode,
	// where consecutive transactions may run on different server
	// connections: statements are not prepared by name (the describe cache
	// is used instead, unless the URL sets default_query_exec_mode), and
	// statement_timeout is not sent at connection start, which PgBouncer
	// refuses (set it on the role instead; docs/operations.md). Without a
	// ListenURL the read cache stays off: LISTEN needs a session of its own.
	PgBouncer bool

	// WALAutocheckpoint is SQLite's wal_autocheckpoint on the connections
	// that commit: after a commit leaves the WAL this many pages long, that
	// connection copies it back into the database (a PASSIVE checkpoint).
	// 0 means SQLite's default, 1000 pages; negative means never, for when
	// another process owns checkpoints (Litestream: docs/operations.md).
	// PostgreSQL ignores it. Switchboard runs no checkpoint of its own.
	WALAutocheckpoint int

	// PageBytes bounds the memory of the encoded hot pages (pages.go);
	// 0 means DefaultPageBytes, negative turns them off.
	PageBytes int64
}

// Generation is the counter row through which SQLite's read cache learns
// that cached data changed (cache.go): the caller's schema holds it, since
// the engine creates no table of its own. Both statements take no
// arguments; the row must exist before the first write that drops the cache.
type Generation struct {
	Read string // reads the counter, e.g. SELECT gen FROM t WHERE id = 1
	Bump string // moves it, e.g. UPDATE t SET gen = gen + 1 WHERE id = 1
}

// Open connects to the database named by dsn: postgres:// or postgresql://
// URLs select PostgreSQL; sqlite://PATH or a plain file path selects SQLite.
// gen is the schema's cache generation row (SQLite only; PostgreSQL's cache
// listens for notifications instead).
func Open(ctx context.Context, dsn string, opt Options, gen Generation) (*DB, error) {
	db := &DB{now: func() time.Time { return time.Now().UTC() }, pages: newPages(opt.PageBytes)}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		pool, err := openPostgres(dsn, opt)
		if err != nil {
			return nil, err
		}
		db.engine, db.w, db.r, db.pgBouncer = Postgres, pool, pool, opt.PgBouncer
		if opt.ListenURL == "" && !opt.PgBouncer {
			opt.ListenURL = dsn
		}
		// Off until the listener is listening (cachepg.go), and for good
		// without one.
		db.cache = &Cache{entries: map[string]any{}}
		db.fences = newFencer(db)
		if opt.ListenURL != "" {
			if db.listener, err = startCacheListener(opt.ListenURL, db.cache, &db.clock, db.fences, opt.Log); err != nil {
				pool.Close()
				return nil, err
			}
		}
		db.startCommitters(pgCommitters)
	case strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return nil, fmt.Errorf("store: unsupported database URL scheme %q: use a file path or sqlite://PATH for SQLite, or postgres://… (postgresql://…) for PostgreSQL", scheme)
	default:
		path := strings.TrimPrefix(dsn, "sqlite://")
		if path == "" {
			return nil, errors.New("store: empty SQLite path")
		}
		if gen.Read == "" || gen.Bump == "" {
			return nil, errors.New("store: SQLite needs the statements of the read cache's generation row")
		}
		if err := checkSQLitePath(path); err != nil {
			return nil, err
		}
		w, err := sql.Open("sqlite", sqliteDSN(path, false, opt.WALAutocheckpoint))
		if err != nil {
			return nil, fmt.Errorf("store: open sqlite: %w", err)
		}
		// One writer connection, held by the committer: SQLite serializes
		// writers anyway, and one writer lets us batch many requests into one
		// commit. The pool's second connection serves migrations.
		w.SetMaxOpenConns(2)
		w.SetMaxIdleConns(2)
		w.SetConnMaxLifetime(0)
		r, err := sql.Open("sqlite", sqliteDSN(path, true, 0))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("store: open sqlite readers: %w", err)
		}
		n := max(4, 2*runtime.GOMAXPROCS(0))
		r.SetMaxOpenConns(n)
		r.SetMaxIdleConns(n)
		db.engine, db.w, db.r, db.path, db.bump = SQLite, w, r, path, gen.Bump
		// One more reader connection, held by the cache for the generation.
		r.SetMaxOpenConns(n + 1)
		if db.cache, err = newCache(ctx, r, gen.Read); err != nil {
			w.Close()
			r.Close()
			return nil, err
		}
		if db.wconn, err = w.Conn(ctx); err != nil {
			db.cache.close()
			w.Close()
			r.Close()
			return nil, fmt.Errorf("store: writer connection: %w", err)
		}
		// The writer's connection has put the database in WAL mode, so the
		// -shm file exists. Without it, the cache asks SQL every time.
		db.shm, _ = acquireShm(path)
		db.file, _ = os.Stat(path)
		db.cache.shm = db.shm
		db.startCommitters(1)
	}
	if err := db.w.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect: %w", db.PgBouncerHint(err))
	}
	return db, nil
}

// PgBouncerHint adds to err, when it is what PgBouncer in transaction pooling
// mode answers a client that was not told it is there, how to tell it: the
// bare errors (a startup parameter refused, a prepared statement missing or
// already there) do not say where they come from.
func (db *DB) PgBouncerHint(err error) error {
	var pgErr *pgconn.PgError
	if db.engine != Postgres || db.pgBouncer || !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case pgErr.Code == "08P01" && strings.Contains(pgErr.Message, "unsupported startup parameter"),
		pgErr.Code == "42P05", // duplicate_prepared_statement
		pgErr.Code == "26000": // invalid_sql_statement_name
		return fmt.Errorf("%w (if the database URL leads to PgBouncer in transaction pooling mode, add --db-pgbouncer: docs/operations.md)", err)
	}
	return err
}

// sqliteDSN is the DSN of the writers' (readOnly false) or the readers'
// connections; autocheckpoint is Options.WALAutocheckpoint (writers only:
// a reader never commits, so never checkpoints by itself).
func sqliteDSN(path string, readOnly bool, autocheckpoint int) string {
	q := url.Values{}
	for _, p := range []string{
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"busy_timeout(10000)",
		// Reads come straight from the mapped file instead of a read()
		// into each connection's page cache: 1.2-1.6x on list pages over
		// a million rows (docs/benchmarks.md). Pages are the kernel's
		// file cache, shared and reclaimable, not the process's heap.
		"mmap_size(1073741824)",
		// FULL: an acknowledged write (a charge) survives power loss.
		// (Only a benchmark build can change it: see synchronous.go.)
		synchronous,
	} {
		q.Add("_pragma", p)
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
		if autocheckpoint != 0 {
			q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", max(autocheckpoint, 0)))
		}
	}
	return "file:" + path + "?" + q.Encode()
}

// ErrServed is returned by ClaimServing when another process serves the
// same SQLite database.
var ErrServed = errors.New("store: database already served")

// ClaimServing makes this process the only server of a SQLite database, for
// as long as the database is open: SQLite has a single writer, which one
// server's committer owns and batches for, so a second server would only
// contend for it (and run a second reconciler over the same work). It takes
// an exclusive lock on a file beside the database, <database>.lock; CLI
// commands do not take it and may run beside a server. On PostgreSQL, where
// several nodes share one database, it does nothing.
func (db *DB) ClaimServing() error {
	if db.engine != SQLite || db.served != nil {
		return nil
	}
	l, err := lockServer(db.path)
	if err != nil {
		return err
	}
	db.served = l
	return nil
}

// Engine reports which database engine the database runs on.
func (db *DB) Engine() Engine { return db.engine }

// Readers is the pool that reads go to, for reads that build their own
// statements (Rebind them) or need a connection of their own. On
// PostgreSQL it is also the writers' pool.
func (db *DB) Readers() *sql.DB { return db.r }

// Writer is the writers' pool, for what runs outside group commit:
// migrations, and tests that set up or inspect rows. On SQLite its one
// connection besides the committer's is all it has; requests write through
// Write.
func (db *DB) Writer() *sql.DB { return db.w }

// Ping checks that the database answers and, on SQLite, that its file is
// still the one opened: SQLite keeps writing to a deleted or replaced file
// through its open descriptors, so every later write would be lost on restart.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	if db.file != nil {
		if fi, err := os.Stat(db.path); err != nil || !os.SameFile(fi, db.file) {
			return fmt.Errorf("store: %s was removed or replaced after it was opened; restart to open the file now at that path", db.path)
		}
	}
	return nil
}

// Close stops the committers and closes the connections.
func (db *DB) Close() error {
	if db.stop != nil {
		db.closeMu.Lock()
		db.closed = true
		db.closeMu.Unlock()
		close(db.stop)
		db.stopped.Wait()
		// The committer may stop with writes still queued: none ran.
		for len(db.batch) > 0 {
			(<-db.batch).done <- ErrClosed
		}
		db.stop = nil
	}
	var err error
	db.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	if db.raw != nil {
		db.wconn.Raw(func(any) error {
			for _, st := range db.raw.stmts {
				st.Close()
			}
			return nil
		})
	}
	if db.wconn != nil {
		err = db.wconn.Close()
	}
	if db.listener != nil {
		db.listener.stop()
		db.listener = nil
	}
	var wal *walIndex
	if db.cache != nil {
		var cerr error
		wal, cerr = db.cache.close()
		err = errors.Join(err, cerr)
	}
	err = errors.Join(err, db.w.Close())
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	if wal != nil {
		err = errors.Join(err, wal.close())
	}
	if db.shm != nil {
		// Last: closing the -shm descriptor drops this process's locks on it.
		err = errors.Join(err, db.shm.release())
		db.shm = nil
	}
	if db.served != nil {
		db.served.release()
		db.served = nil
	}
	return err
}

// SetClock fixes the database's notion of now (Now, Tx.Now); tests use it
// for deterministic times.
func (db *DB) SetClock(now func() time.Time) { db.now = now }

// Now is the clock's time: the one SetClock set, or the wall clock in UTC.
func (db *DB) Now() time.Time { return db.now() }

// Rebind returns query with ? placeholders rewritten for the engine.
func (db *DB) Rebind(query string) string {
	if db.engine != Postgres {
		return query
	}
	if v, ok := db.rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	db.rebound.Store(query, b.String())
	return b.String()
}

// ForUpdate is the row-locking suffix for a SELECT inside a write. SQLite
// needs none: it runs one writer at a time.
func (db *DB) ForUpdate() string {
	if db.engine == Postgres {
		return " FOR UPDATE"
	}
	return ""
}
