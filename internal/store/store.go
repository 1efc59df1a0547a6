package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"switchboard/internal/domain"
)

//go:embed migrations
var migrationFS embed.FS

// Engine names a database engine.
type Engine string

// The supported engines.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// Store is the database. It is safe for concurrent use.
type Store struct {
	engine    Engine
	pgBouncer bool    // Options.PgBouncer
	w         *sql.DB // the one writer on SQLite; the pool on PostgreSQL
	r         *sql.DB // readers; the same pool as w on PostgreSQL
	now       func() time.Time

	cache    *readCache     // see cache.go
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

	deepPage int // tests: the list offset from which pages seek by day (0: deepPage)

	onEvents atomic.Pointer[func()] // see OnEvents

	committers int // how many committers run (write.go)
}

// Options are the optional settings of OpenWith.
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
}

// Open is OpenWith with default options.
func Open(ctx context.Context, dsn string) (*Store, error) { return OpenWith(ctx, dsn, Options{}) }

// OpenWith connects to the database named by dsn: postgres:// or postgresql://
// URLs select PostgreSQL; sqlite://PATH or a plain file path selects SQLite.
func OpenWith(ctx context.Context, dsn string, opt Options) (*Store, error) {
	s := &Store{now: func() time.Time { return time.Now().UTC() }}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err := openPostgres(dsn, opt)
		if err != nil {
			return nil, err
		}
		s.engine, s.w, s.r, s.pgBouncer = Postgres, db, db, opt.PgBouncer
		if opt.ListenURL == "" && !opt.PgBouncer {
			opt.ListenURL = dsn
		}
		// Off until the listener is listening (cachepg.go), and for good
		// without one.
		s.cache = &readCache{entries: map[string]any{}}
		if opt.ListenURL != "" {
			if s.listener, err = startCacheListener(opt.ListenURL, s.cache, opt.Log); err != nil {
				db.Close()
				return nil, err
			}
		}
		s.startCommitters(pgCommitters)
	case strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return nil, fmt.Errorf("store: unsupported database URL scheme %q: use a file path or sqlite://PATH for SQLite, or postgres://… (postgresql://…) for PostgreSQL", scheme)
	default:
		path := strings.TrimPrefix(dsn, "sqlite://")
		if path == "" {
			return nil, errors.New("store: empty SQLite path")
		}
		if err := checkSQLitePath(path); err != nil {
			return nil, err
		}
		w, err := sql.Open("sqlite", sqliteDSN(path, false))
		if err != nil {
			return nil, fmt.Errorf("store: open sqlite: %w", err)
		}
		// One writer connection, held by the committer: SQLite serializes
		// writers anyway, and one writer lets us batch many requests into one
		// commit. The pool's second connection serves migrations.
		w.SetMaxOpenConns(2)
		w.SetMaxIdleConns(2)
		w.SetConnMaxLifetime(0)
		r, err := sql.Open("sqlite", sqliteDSN(path, true))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("store: open sqlite readers: %w", err)
		}
		n := max(4, 2*runtime.GOMAXPROCS(0))
		r.SetMaxOpenConns(n)
		r.SetMaxIdleConns(n)
		s.engine, s.w, s.r, s.path = SQLite, w, r, path
		// One more reader connection, held by the cache for the generation.
		r.SetMaxOpenConns(n + 1)
		if s.cache, err = newReadCache(ctx, r); err != nil {
			w.Close()
			r.Close()
			return nil, err
		}
		if s.wconn, err = w.Conn(ctx); err != nil {
			s.cache.close()
			w.Close()
			r.Close()
			return nil, fmt.Errorf("store: writer connection: %w", err)
		}
		// The writer's connection has put the database in WAL mode, so the
		// -shm file exists. Without it, the cache asks SQL every time.
		s.shm, _ = acquireShm(path)
		s.file, _ = os.Stat(path)
		s.cache.shm = s.shm
		s.startCommitters(1)
	}
	if err := s.w.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: connect: %w", s.pgBouncerHint(err))
	}
	return s, nil
}

// pgBouncerHint adds to err, when it is what PgBouncer in transaction pooling
// mode answers a client that was not told it is there, how to tell it: the
// bare errors (a startup parameter refused, a prepared statement missing or
// already there) do not say where they come from.
func (s *Store) pgBouncerHint(err error) error {
	var pgErr *pgconn.PgError
	if s.engine != Postgres || s.pgBouncer || !errors.As(err, &pgErr) {
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

func sqliteDSN(path string, readOnly bool) string {
	q := url.Values{}
	for _, p := range []string{
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"busy_timeout(10000)",
		// Reads come straight from the mapped file instead of a read()
		// into each connection's page cache: 1.2-1.6x on inbox lists over
		// a million messages (docs/benchmarks.md). Pages are the kernel's
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
	}
	return "file:" + path + "?" + q.Encode()
}

// ErrServed is returned by ClaimServing when another process serves the
// same SQLite database.
var ErrServed = errors.New("store: database already served")

// ClaimServing makes this process the only server of a SQLite database, for
// as long as the store is open: SQLite has a single writer, which one
// server's committer owns and batches for, so a second server would only
// contend for it (and run a second reconciler over the same sends). It takes
// an exclusive lock on a file beside the database, <database>.lock; CLI
// commands do not take it and may run beside a server. On PostgreSQL, where
// several nodes share one database, it does nothing.
func (s *Store) ClaimServing() error {
	if s.engine != SQLite || s.served != nil {
		return nil
	}
	l, err := lockServer(s.path)
	if err != nil {
		return err
	}
	s.served = l
	return nil
}

// Engine reports which database engine the store runs on.
func (s *Store) Engine() Engine { return s.engine }

// Ping checks that the database answers and, on SQLite, that its file is
// still the one opened: SQLite keeps writing to a deleted or replaced file
// through its open descriptors, so every later write would be lost on restart.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	if s.file != nil {
		if fi, err := os.Stat(s.path); err != nil || !os.SameFile(fi, s.file) {
			return fmt.Errorf("store: %s was removed or replaced after it was opened; restart to open the file now at that path", s.path)
		}
	}
	return nil
}

// Close stops the committer and closes the connections.
func (s *Store) Close() error {
	if s.stop != nil {
		s.closeMu.Lock()
		s.closed = true
		s.closeMu.Unlock()
		close(s.stop)
		s.stopped.Wait()
		// The committer may stop with writes still queued: none ran.
		for len(s.batch) > 0 {
			(<-s.batch).done <- ErrClosed
		}
		s.stop = nil
	}
	var err error
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	if s.raw != nil {
		s.wconn.Raw(func(any) error {
			for _, st := range s.raw.stmts {
				st.Close()
			}
			return nil
		})
	}
	if s.wconn != nil {
		err = s.wconn.Close()
	}
	if s.listener != nil {
		s.listener.stop()
		s.listener = nil
	}
	var wal *walIndex
	if s.cache != nil {
		var cerr error
		wal, cerr = s.cache.close()
		err = errors.Join(err, cerr)
	}
	err = errors.Join(err, s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	if wal != nil {
		err = errors.Join(err, wal.close())
	}
	if s.shm != nil {
		// Last: closing the -shm descriptor drops this process's locks on it.
		err = errors.Join(err, s.shm.release())
		s.shm = nil
	}
	if s.served != nil {
		s.served.release()
		s.served = nil
	}
	return err
}

// SetClock fixes the store's notion of now; tests use it for deterministic times.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// q returns query with ? placeholders rewritten for the engine.
func (s *Store) q(query string) string {
	if s.engine != Postgres {
		return query
	}
	if v, ok := s.rebound.Load(query); ok {
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
	s.rebound.Store(query, b.String())
	return b.String()
}

// Migrate applies the embedded migrations that have not run yet, each in its own
// transaction. On PostgreSQL an advisory lock keeps concurrent nodes from racing.
func (s *Store) Migrate(ctx context.Context) error {
	dir := "migrations/" + string(s.engine)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return fmt.Errorf("store: read migrations: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
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
			return fmt.Errorf("store: migration %s: %w", name, s.pgBouncerHint(err))
		}
	}
	return nil
}

func (s *Store) migrateOne(ctx context.Context, version, body string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.engine == Postgres {
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
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, s.now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// forUpdate is the row-locking suffix for a SELECT inside a write. SQLite
// needs none: it runs one writer at a time.
func (s *Store) forUpdate() string {
	if s.engine == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// isUniqueViolation reports whether err is a unique-constraint failure on either engine.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// notFound turns sql.ErrNoRows into the domain's not_found error.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Errorf(domain.NotFound, "%s not found", what)
	}
	return err
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
