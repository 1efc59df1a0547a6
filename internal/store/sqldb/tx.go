package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Tx is the transaction a write function runs in. Several write functions
// may share one database transaction, each inside its own savepoint, so a
// function must not keep Tx after it returns. Its statements take ?
// placeholders on both engines; the context they take is not used (see
// groupCtx).
type Tx struct {
	// tx is the PostgreSQL committer's connection, inside the group's
	// transaction; nil on SQLite, where the committer's raw connection is used.
	tx  *sql.Conn
	db  *DB
	now int64 // unix micros, fixed once per write
	// wake: a write function asked for the OnWake listener (Wake).
	wake bool
	// pending holds the statements the running write function queued with
	// ExecLater (PostgreSQL).
	pending []pendingStmt
	// deferring: the running write function is a Contended one in a
	// PostgreSQL group that runs without savepoints, so GroupMerge.Defer
	// records its work in merges instead of leaving it to the caller; the
	// group does that work after its last write, with its COMMIT (commitPG).
	// Contended writes run last in their group (see Contended), so no other
	// write of the group reads what the deferred work changes before it is
	// done, and work that several of the group's writes defer under one key
	// is done once, merged.
	deferring bool
	merges    []groupMerge
	// batching: the group runs on SQLite without savepoints, so
	// GroupInsert.Exec hands its rows to the group (rows), inserted after
	// its last write (flushRows).
	batching bool
	rows     []*pendingRows
}

type pendingStmt struct {
	query string
	args  []any
}

// The statements of a group run with a context that never ends, whatever
// context the write function passes: a write is checked for cancellation
// once, before it runs, and a statement cancelled half-way would take the
// whole group's transaction (and, with pgx, the connection) with it.
var groupCtx = context.Background()

// Now is the write's time in unix microseconds, fixed once per group so
// that every row a write stamps carries the same time.
func (t *Tx) Now() int64 { return t.now }

// Engine reports which engine the transaction runs on.
func (t *Tx) Engine() Engine { return t.db.engine }

// ForUpdate is DB.ForUpdate: the row-locking suffix for a SELECT.
func (t *Tx) ForUpdate() string { return t.db.ForUpdate() }

// Wake asks for the OnWake listener to run once the write's group has
// committed (whether or not this write succeeded in it): the write left
// work for a background worker of this process to start on at once.
func (t *Tx) Wake() { t.wake = true }

// Exec runs a statement in the transaction.
func (t *Tx) Exec(_ context.Context, query string, args ...any) (sql.Result, error) {
	if t.tx == nil {
		return t.db.rawExec(query, args)
	}
	return t.tx.ExecContext(groupCtx, t.db.Rebind(query), args...)
}

// ExecLater runs a statement whose result the write function does not need
// (an insert into a journal or an outbox, an update whose row count nobody
// reads). On PostgreSQL it is queued, and the statements a write function
// queued are sent in one pipeline, one round trip, when it returns, before
// the next write function of the group runs: writes still see each other
// whole and in order. Its error fails the write as Exec's would. The
// function's own later statements do not see its effects, so queue only
// statements that nothing after them in the function reads. On SQLite, where
// a statement is a function call rather than a round trip, it runs at once.
func (t *Tx) ExecLater(ctx context.Context, query string, args ...any) error {
	if t.tx == nil {
		_, err := t.Exec(ctx, query, args...)
		return err
	}
	t.pending = append(t.pending, pendingStmt{t.db.Rebind(query), args})
	return nil
}

// flush sends the queued statements (see ExecLater) in one pipeline and
// returns the first one's error, if any failed.
func (t *Tx) flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	pending := t.pending
	t.pending = t.pending[:0]
	return t.tx.Raw(func(dc any) error {
		c, isPgx := dc.(*stdlib.Conn)
		if !isPgx {
			return fmt.Errorf("store: PostgreSQL driver connection %T is not pgx's", dc)
		}
		b := &pgx.Batch{}
		for _, p := range pending {
			b.Queue(p.query, p.args...)
		}
		return c.Conn().SendBatch(groupCtx, b).Close()
	})
}

// Row is a single-row result: *sql.Row, *sql.Rows at a row, or the SQLite
// committer's raw row.
type Row interface{ Scan(dest ...any) error }

// QueryRow runs a query in the transaction and returns its first row.
func (t *Tx) QueryRow(_ context.Context, query string, args ...any) Row {
	if t.tx == nil {
		return t.db.rawQueryRow(query, args)
	}
	return t.tx.QueryRowContext(groupCtx, t.db.Rebind(query), args...)
}

// Insert runs an INSERT and returns the new row's id (a column named id).
// SQLite reports the rowid itself; RETURNING would make it build a temporary
// table for the result, which doubles the cost of a small insert. Only for
// plain INSERTs: one that may insert nothing (ON CONFLICT DO NOTHING) would
// get a stale id.
func (t *Tx) Insert(ctx context.Context, query string, args ...any) (int64, error) {
	if t.tx == nil {
		res, err := t.db.rawExec(query, args)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var id int64
	err := t.QueryRow(ctx, query+" RETURNING id", args...).Scan(&id)
	return id, err
}

// Query runs a multi-row query in the transaction, calling scan once per row
// (on SQLite with the committer's raw row, so scan must not keep it).
func (t *Tx) Query(_ context.Context, query string, args []any, scan func(Row) error) error {
	if t.tx != nil {
		rows, err := t.tx.QueryContext(groupCtx, t.db.Rebind(query), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	return t.db.rawQuery(query, args, func(r *rawRow) error { return scan(r) })
}
