package store

import (
	"context"
	"database/sql"
)

// SQLite spends most of a short statement's time parsing it, so on SQLite
// every statement is prepared once per connection pool and reused: the
// writer's statements live on its one connection (rawconn.go), readers' on
// each reader connection as database/sql needs them. PostgreSQL needs none of this:
// pgx caches prepared statements per connection itself.

type stmtKey struct {
	db    *sql.DB
	query string
}

// prepared returns the cached statement for query on db, or nil on PostgreSQL.
func (s *Store) prepared(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	if s.engine != SQLite {
		return nil, nil
	}
	k := stmtKey{db, query}
	if st, ok := s.stmts.Load(k); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// queryRow runs a read on the reader pool.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = s.q(query)
	if st, err := s.prepared(ctx, s.r, query); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// query runs a read on the reader pool.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.q(query)
	st, err := s.prepared(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}
