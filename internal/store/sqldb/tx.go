package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Tx is the transaction a write function runs in. Several write functions
// may share one database transaction, each inside its own savepoint, so a
// function must not keep Tx after it returns. Its statements take ?
// placeholders on both engines; the context they take is not used (see
// groupCtx).
type Tx struct {
	// pc is the PostgreSQL committer's connection, inside the group's
	// transaction, used through pgx itself (for its pipelines); nil on
	// SQLite, where the committer's raw connection is used.
	pc  *pgx.Conn
	db  *DB
	now int64 // unix micros, fixed once per write
	// wake: a write function asked for the OnWake listener (Wake).
	wake bool
	// pending holds the statements queued on PostgreSQL (ExecLater, and the
	// group's BEGIN) and not sent yet: they go in one pipeline with the
	// next statement that needs an answer, or with the COMMIT.
	pending []pendingStmt
	// cur is the request whose write function runs now; ran, every one
	// that ran in this transaction (what they named: touches.go).
	cur *writeReq
	ran []*writeReq
	// queuedErr is the error of a queued statement (see send): every later
	// statement of the group fails until the group rolls it back.
	queuedErr error
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
	if t.pc == nil {
		return t.db.rawExec(query, args)
	}
	br, err := t.send(pendingStmt{t.db.Rebind(query), args})
	if err != nil {
		return nil, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return pgResult(tag.RowsAffected()), nil
}

// pgResult is a PostgreSQL statement's sql.Result: its row count.
type pgResult int64

func (r pgResult) RowsAffected() (int64, error) { return int64(r), nil }
func (pgResult) LastInsertId() (int64, error) {
	return 0, errors.New("store: PostgreSQL reports no insert id; use RETURNING")
}

// ExecLater runs a statement whose result the write function does not need
// (an insert into a journal or an outbox, an update whose row count nobody
// reads). On PostgreSQL it is queued, and sent in one pipeline, one round
// trip, with the next statement of the group that needs an answer (of this
// write function or a later one) or with the group's COMMIT: statements
// still run in the order they were asked for, and writes see each other
// whole. Its error fails the write as Exec's would (see send). Queue only
// statements whose failure the function would not handle itself: it learns
// of it late, from another statement. On SQLite, where a statement is a
// function call rather than a round trip, it runs at once.
func (t *Tx) ExecLater(ctx context.Context, query string, args ...any) error {
	if t.pc == nil {
		_, err := t.Exec(ctx, query, args...)
		return err
	}
	t.pending = append(t.pending, pendingStmt{t.db.Rebind(query), args})
	return nil
}

// errQueued is what a statement returns after a queued statement failed:
// not that statement's own error, which the write function running now
// could mistake for its statement's (a unique violation it handles, say).
// The group takes the queued statement's error from Tx.queuedErr.
var errQueued = errors.New("store: an earlier statement of the transaction failed")

// send sends the queued statements and then stmts in one pipeline. The
// queued statements' results are read; stmts' are left in the returned
// batch, which the caller reads and closes. If a queued statement failed,
// it records its error (queuedErr) and returns errQueued.
func (t *Tx) send(stmts ...pendingStmt) (pgx.BatchResults, error) {
	if t.queuedErr != nil {
		return nil, errQueued
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.pending)+len(stmts))}
	for _, p := range t.pending {
		b.Queue(p.query, p.args...)
	}
	n := len(t.pending)
	t.pending = t.pending[:0]
	for _, p := range stmts {
		b.Queue(p.query, p.args...)
	}
	br := t.pc.SendBatch(groupCtx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.queuedErr = err
			return nil, errQueued
		}
	}
	return br, nil
}

// flush sends the queued statements (see ExecLater) and returns the first
// one's error, if any failed.
func (t *Tx) flush() error {
	if len(t.pending) == 0 || t.queuedErr != nil {
		return t.queuedErr
	}
	br, err := t.send()
	if err != nil {
		return t.queuedErr
	}
	return br.Close()
}

// Row is a single-row result: *sql.Row, *sql.Rows at a row, pgx's row, or
// the SQLite committer's raw row. Scan it before the next statement.
type Row interface{ Scan(dest ...any) error }

// QueryRow runs a query in the transaction and returns its first row.
func (t *Tx) QueryRow(_ context.Context, query string, args ...any) Row {
	if t.pc == nil {
		return t.db.rawQueryRow(query, args)
	}
	br, err := t.send(pendingStmt{t.db.Rebind(query), args})
	if err != nil {
		return errRow{err}
	}
	return batchRow{br, br.QueryRow()}
}

// batchRow is a row of a pipeline: scanning it ends the pipeline.
type batchRow struct {
	br  pgx.BatchResults
	row pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a row whose query was not run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// Insert runs an INSERT and returns the new row's id (a column named id).
// SQLite reports the rowid itself; RETURNING would make it build a temporary
// table for the result, which doubles the cost of a small insert. Only for
// plain INSERTs: one that may insert nothing (ON CONFLICT DO NOTHING) would
// get a stale id.
func (t *Tx) Insert(ctx context.Context, query string, args ...any) (int64, error) {
	if t.pc == nil {
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
	if t.pc == nil {
		return t.db.rawQuery(query, args, func(r *rawRow) error { return scan(r) })
	}
	br, err := t.send(pendingStmt{t.db.Rebind(query), args})
	if err != nil {
		return err
	}
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return br.Close()
}

// Stmt is one statement of QueryEach.
type Stmt struct {
	Query string
	Args  []any
}

// QueryEach runs stmts in order and calls scan with each one's first row
// (whose Scan reports sql.ErrNoRows when it returned none). On PostgreSQL
// they go in one pipeline, with the queued statements: one round trip for
// work that would otherwise take one per statement (a batch of outcomes,
// each with its own small statement, planned on its own key).
func (t *Tx) QueryEach(ctx context.Context, stmts []Stmt, scan func(i int, r Row) error) error {
	if t.pc == nil {
		for i, s := range stmts {
			if err := scan(i, t.QueryRow(ctx, s.Query, s.Args...)); err != nil {
				return err
			}
		}
		return nil
	}
	own := make([]pendingStmt, len(stmts))
	for i, s := range stmts {
		own[i] = pendingStmt{t.db.Rebind(s.Query), s.Args}
	}
	br, err := t.send(own...)
	if err != nil {
		return err
	}
	defer br.Close()
	for i := range stmts {
		if err := scan(i, br.QueryRow()); err != nil {
			return err
		}
	}
	return br.Close()
}
