package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The committer talks to SQLite through the driver's own interfaces rather
// than database/sql. It is one goroutine on one connection running tens of
// thousands of short statements a second, all of them serialized, so every
// microsecond of per-statement overhead is a microsecond every write in the
// batch waits: database/sql's locks, argument conversion and Rows wrapper
// were a fifth of the committer's time, and a cancellable context made the
// driver start a goroutine per statement to watch it. Statements run inside
// sql.Conn.Raw (the only place database/sql lets a driver connection be
// used) and with a context that never ends: a write is checked for
// cancellation once, before it runs, and the committer decides the rest.

// rawConn is the committer's driver connection and the statements prepared
// on it. It is only valid inside the sql.Conn.Raw call that produced it.
type rawConn struct {
	conn  driver.ConnPrepareContext
	stmts map[string]driver.Stmt
}

// rawStmt returns query prepared on the committer's driver connection.
func (db *DB) rawStmt(query string) (driver.Stmt, error) {
	rc := db.raw
	if st, ok := rc.stmts[query]; ok {
		return st, nil
	}
	st, err := rc.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	rc.stmts[query] = st
	return st, nil
}

func namedValues(args []any) ([]driver.NamedValue, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("store: argument %d: %w", i+1, err)
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv, nil
}

func (db *DB) rawExec(query string, args []any) (sql.Result, error) {
	st, err := db.rawStmt(query)
	if err != nil {
		return nil, err
	}
	nv, err := namedValues(args)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtExecContext).ExecContext(context.Background(), nv)
}

// rawRow is the first row of a query, read eagerly like sql.Row.
type rawRow struct {
	vals []driver.Value
	err  error
}

func (db *DB) rawQueryRow(query string, args []any) *rawRow {
	st, err := db.rawStmt(query)
	if err != nil {
		return &rawRow{err: err}
	}
	nv, err := namedValues(args)
	if err != nil {
		return &rawRow{err: err}
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), nv)
	if err != nil {
		return &rawRow{err: err}
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(vals); err != nil {
		if errors.Is(err, io.EOF) {
			err = sql.ErrNoRows
		}
		return &rawRow{err: err}
	}
	// Bytes belong to the driver until the next call: keep a copy.
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = append([]byte(nil), b...)
		}
	}
	// Drain the statement so that an UPDATE … RETURNING has run to the end.
	for rows.Next(make([]driver.Value, len(vals))) == nil {
	}
	return &rawRow{vals: vals}
}

// rawQuery runs a query on the committer's connection and hands fn
// each row, read to the end (so that an UPDATE … RETURNING has run whole
// even when fn fails early).
func (db *DB) rawQuery(query string, args []any, fn func(*rawRow) error) error {
	st, err := db.rawStmt(query)
	if err != nil {
		return err
	}
	nv, err := namedValues(args)
	if err != nil {
		return err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), nv)
	if err != nil {
		return err
	}
	defer rows.Close()
	var fnErr error
	for {
		vals := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(vals); err != nil {
			if errors.Is(err, io.EOF) {
				return fnErr
			}
			return err
		}
		if fnErr != nil {
			continue
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = append([]byte(nil), b...)
			}
		}
		fnErr = fn(&rawRow{vals: vals})
	}
}

// Scan copies the row into dest with the conversions that Tx's callers rely on
// (a subset of database/sql's).
func (r *rawRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("store: scan: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("store: scan column %d: %w", i, err)
		}
	}
	return nil
}

func assign(dest any, v driver.Value) error {
	if sc, ok := dest.(sql.Scanner); ok {
		return sc.Scan(v)
	}
	switch d := dest.(type) {
	case *any:
		*d = v
		return nil
	case *[]byte:
		switch v := v.(type) {
		case []byte:
			*d = v
		case string:
			*d = []byte(v)
		case nil:
			*d = nil
		default:
			return fmt.Errorf("cannot store %T in *[]byte", v)
		}
		return nil
	case *string:
		switch v := v.(type) {
		case string:
			*d = v
		case []byte:
			*d = string(v)
		case int64:
			*d = strconv.FormatInt(v, 10)
		default:
			return fmt.Errorf("cannot store %T in *string", v)
		}
		return nil
	}
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("cannot store %T in %T", v, dest)
	}
	switch d := dest.(type) {
	case *int64:
		*d = n
	case *int:
		*d = int(n)
	case *bool:
		*d = n != 0
	default:
		return fmt.Errorf("unsupported destination %T", dest)
	}
	return nil
}

// useRaw points db.raw at the committer's SQLite driver connection dc
// (inside wconn.Raw), keeping the statements prepared on it while it is the
// same connection.
func (db *DB) useRaw(dc any) error {
	conn, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return fmt.Errorf("store: SQLite driver connection %T cannot prepare statements", dc)
	}
	if db.raw == nil || db.raw.conn != conn {
		db.raw = &rawConn{conn: conn, stmts: map[string]driver.Stmt{}}
	}
	return nil
}
