package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Defaults of Options.
const (
	DefaultStatementTimeout = 30 * time.Second
	DefaultConnLifetime     = 30 * time.Minute
	// DefaultConnectTimeout bounds opening a connection when the URL sets no
	// connect_timeout: a database host that went away must fail requests
	// and readiness checks in seconds, not after the kernel's SYN retries.
	DefaultConnectTimeout = 5 * time.Second
	// unackedTimeout drops a connection whose sent data stays unacknowledged
	// (a partitioned or powered-off database host) this long, and keepalive
	// probes find one that went silent while idle; without them a request
	// would wait for the kernel's retransmissions, a quarter of an hour.
	unackedTimeout = 10 * time.Second
)

// DefaultMaxConns is four connections per core: a request holds one only
// while its statements run, and most of a request's time is elsewhere (JSON,
// TLS, the carrier), so a few per core keep the cores busy without queueing
// in PostgreSQL. Nodes × MaxConns must stay under max_connections (or
// PgBouncer's max_client_conn); docs/operations.md.
func DefaultMaxConns() int { return 4 * runtime.GOMAXPROCS(0) }

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns()
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.ConnLifetime == 0 {
		o.ConnLifetime = DefaultConnLifetime
	}
	return o
}

// openPostgres opens the PostgreSQL pool for dsn.
func openPostgres(dsn string, o Options) (*sql.DB, error) {
	o = o.withDefaults()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3},
		Control:         unackedTimeoutControl,
	}
	cfg.DialFunc = d.DialContext
	if o.PgBouncer {
		// A named statement prepared in one transaction is gone (or another
		// client's) in the next one. The describe cache sends each statement
		// unnamed with its parameters in one round trip, as the statement
		// cache does, and describes it only the first time a connection
		// sees it.
		if !urlSets(dsn, "default_query_exec_mode") {
			cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	} else if _, set := cfg.RuntimeParams["statement_timeout"]; !set && o.StatementTimeout > 0 {
		// A startup parameter costs no round trip and holds for the whole
		// session (the URL's own statement_timeout wins). Migrations lift it
		// for their own transactions.
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	if o.ConnLifetime > 0 {
		db.SetConnMaxLifetime(o.ConnLifetime)
	}
	return db, nil
}

// urlSets reports whether the connection string names the setting; pgx
// consumes its own settings (default_query_exec_mode) while parsing.
func urlSets(dsn, name string) bool {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	_, ok := cfg.RuntimeParams[name]
	return ok
}

// Unavailable reports whether err means that the database could not be
// reached or stopped answering (rather than refusing a statement): the
// caller may answer "unavailable, retry" instead of an internal error.
func (db *DB) Unavailable(err error) bool {
	if err == nil || db.engine != Postgres {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code[:2] == "08", // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutting down, starting up
			pgErr.Code == "53300", // too many connections
			pgErr.Code == "57014": // statement timeout
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}
