package sqldb

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// SQLite spends most of a short statement's time parsing it, so on SQLite
// every statement is prepared once per connection pool and reused: the
// writer's statements live on its one connection (rawconn.go), readers' on
// each reader connection as database/sql needs them. PostgreSQL needs none of this:
// pgx caches prepared statements per connection itself.

type stmtKey struct {
	pool  *sql.DB
	query string
}

// prepared returns the cached statement for query on pool, or nil on PostgreSQL.
func (db *DB) prepared(ctx context.Context, pool *sql.DB, query string) (*sql.Stmt, error) {
	if db.engine != SQLite {
		return nil, nil
	}
	k := stmtKey{pool, query}
	if st, ok := db.stmts.Load(k); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// QueryRow runs a read on the reader pool, with ? placeholders (Rebind).
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = db.Rebind(query)
	if st, err := db.prepared(ctx, db.r, query); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.r.QueryRowContext(ctx, query, args...)
}

// Query runs a read on the reader pool, with ? placeholders (Rebind).
func (db *DB) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = db.Rebind(query)
	st, err := db.prepared(ctx, db.r, query)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.r.QueryContext(ctx, query, args...)
}

// QueryPlanned is Query for a statement whose best plan depends on its
// arguments (a search: a rare word or a common one, a narrow range or a
// wide one). On PostgreSQL it is sent unnamed and planned for its
// arguments each time: a named statement, as pgx caches them, is planned
// once for all arguments after five runs (the server's generic plan), which
// for a search picks one way for every word.
func (db *DB) QueryPlanned(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if db.engine == Postgres {
		return db.r.QueryContext(ctx, db.Rebind(query), append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	}
	return db.Query(ctx, query, args...)
}
