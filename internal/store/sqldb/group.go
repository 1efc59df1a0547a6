package sqldb

import (
	"cmp"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// maxBatch bounds how many write functions share one commit.
const maxBatch = 256

// pgCommitters is how many groups may be in flight at once on PostgreSQL,
// each on a connection of its own: while one group waits for its COMMIT to
// reach the disk (or for a row another group holds), the next one runs.
// Two, not more: each committer takes whatever is queued when it frees up,
// so more of them split the same writes into smaller groups, each paying a
// COMMIT and waiting for a flush (measured, bench/pg-send.sh: four gave
// 0.62 COMMITs a send, two 0.34 and 1.14× the sends, one 0.14 but 0.82×
// the sends of two).
const pgCommitters = 2

// maxTries bounds how often a write that lost a deadlock or a serialization
// conflict to another transaction is run again before its caller gets the
// error.
const maxTries = 5

// startCommitters starts n committers (see committer) and the queue they
// take writes from.
func (db *DB) startCommitters(n int) {
	db.batch = make(chan *writeReq, 1024)
	db.stop = make(chan struct{})
	db.committers = n
	db.stopped.Add(n)
	for range n {
		go db.committer()
	}
}

// runFn runs r's write function, turning a panic into an error so one bad
// write cannot take the whole batch (or the committer) down, and records
// what it named (touches.go). With flush, the statements it queued
// (ExecLater) are sent before it returns, so that their error is its own (a
// write in a savepoint); without, they go with the group's next statement.
// A queued statement's failure is the function's error even if it went on
// (see Tx.send).
func runFn(tx *Tx, r *writeReq, flush bool) (err error) {
	tx.cur, r.touch = r, touches{ids: r.touchBuf[:0]}
	tx.ran = append(tx.ran, r)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: write panicked: %v", p)
		}
		if tx.queuedErr != nil {
			err = tx.queuedErr
		}
		if err != nil {
			tx.pending = tx.pending[:0] // a failed function's are dropped
		}
		tx.cur, r.touch.all = nil, !r.touch.named
	}()
	if err := r.fn(tx); err != nil {
		return err
	}
	if flush {
		return tx.flush()
	}
	return nil
}

// committer takes whatever write requests are waiting (the ones that arrived
// while the previous commit was syncing), runs them in one transaction and
// commits them together. SQLite has one committer, its single writer.
// PostgreSQL has pgCommitters of them, each running its group on a pool
// connection: a request's writes cost their statements and a share of one
// BEGIN/COMMIT and of one WAL flush, and a row every request of a kind
// updates (Contended, GroupMerge) is locked once per group rather than held
// by each request through its own commit.
func (db *DB) committer() {
	defer db.stopped.Done()
	for {
		var first *writeReq
		select {
		case first = <-db.batch:
		case <-db.stop:
			return
		}
		reqs := []*writeReq{first}
	drain:
		for len(reqs) < maxBatch {
			select {
			case r := <-db.batch:
				reqs = append(reqs, r)
			default:
				break drain
			}
		}
		if db.engine == Postgres {
			// See Alone and Contended.
			group := reqs[:0]
			for _, r := range reqs {
				if r.alone {
					db.commitBatch([]*writeReq{r})
				} else {
					group = append(group, r)
				}
			}
			reqs = group
			slices.SortStableFunc(reqs, func(a, b *writeReq) int {
				return cmp.Compare(b2i(a.contended), b2i(b.contended))
			})
		}
		if len(reqs) > 0 {
			db.commitBatch(reqs)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// commitStats counts the committer's work; see CommitStats.
type commitStats struct {
	batches, writes, execNanos, commitNanos atomic.Int64
}

// CommitStats describes the committers' work since the database opened.
type CommitStats struct {
	Batches int64         // transactions committed (or rolled back)
	Writes  int64         // write functions run in them
	Exec    time.Duration // running the write functions
	Commit  time.Duration // COMMIT: writing the WAL and waiting for fsync
}

// CommitStats reports the committers' counters.
// Writes/Batches is the average group size; Commit/Batches the disk's cost.
func (db *DB) CommitStats() CommitStats {
	return CommitStats{
		Batches: db.stats.batches.Load(), Writes: db.stats.writes.Load(),
		Exec: time.Duration(db.stats.execNanos.Load()), Commit: time.Duration(db.stats.commitNanos.Load()),
	}
}

func (db *DB) commitBatch(reqs []*writeReq) {
	// Nearly every batch succeeds whole, so it first runs without savepoints
	// (two statements fewer per write). If a write fails, that attempt is
	// rolled back and the batch runs again with each write in its own
	// savepoint, so that only the failing writes are undone.
	reqs, results, ok := db.runBatch(reqs, false)
	if !ok {
		reqs, results, _ = db.runBatch(reqs, true)
	}
	// Before any writer is answered: a read that follows a write it saw
	// answered finds the pages' stamp moved (pages.go). Even after a
	// failure: a failed COMMIT may still have landed.
	db.committed(reqs)
	var again []*writeReq
	for i, r := range reqs {
		if isConflict(results[i]) && r.tries < maxTries {
			// Another transaction (a group of another committer or node)
			// held what this write needed while waiting for what this group
			// held. This group's commit released it: run the write again.
			r.tries++
			again = append(again, r)
			continue
		}
		r.done <- results[i]
	}
	if len(again) > 0 {
		db.commitBatch(again)
	}
}

// runBatch runs reqs in one transaction on the committer's connection, with
// plain BEGIN/COMMIT statements so that statements prepared on it are reused
// (database/sql would re-prepare them inside an *sql.Tx). Without isolate, a
// failing write aborts the attempt and runBatch reports !ok with nothing
// committed; with isolate, each write runs in a savepoint and fails alone.
func (db *DB) runBatch(reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok bool) {
	if db.engine == Postgres {
		return db.runBatchPG(reqs, isolate)
	}
	err := db.wconn.Raw(func(dc any) error {
		if err := db.useRaw(dc); err != nil {
			return err
		}
		var broken bool
		t := &Tx{db: db, now: db.now().UnixMicro()}
		reqs, results, ok, broken = db.runGroup(t, "BEGIN IMMEDIATE", reqs, isolate)
		if broken {
			// Tell database/sql to discard the connection.
			return driver.ErrBadConn
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrBadConn) {
			db.wrecover()
		}
		if results == nil {
			results = make([]error, len(reqs))
			for i := range results {
				results[i] = fmt.Errorf("store: writer connection: %w", err)
			}
		}
		return reqs, results, true
	}
	return reqs, results, ok
}

// runBatchPG is runBatch on a PostgreSQL pool connection, taken for the
// group and used through pgx itself: its statement cache, and pipelines
// (see Tx.send).
func (db *DB) runBatchPG(reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok bool) {
	conn, err := db.w.Conn(groupCtx)
	if err == nil {
		err = conn.Raw(func(dc any) error {
			c, isPgx := dc.(*stdlib.Conn)
			if !isPgx {
				return fmt.Errorf("store: PostgreSQL driver connection %T is not pgx's", dc)
			}
			t := &Tx{pc: c.Conn(), db: db, now: db.now().UnixMicro()}
			var broken bool
			reqs, results, ok, broken = db.runGroup(t, "BEGIN", reqs, isolate)
			if broken {
				// Its transaction state is unknown: database/sql must not
				// hand the connection to anyone else.
				return driver.ErrBadConn
			}
			return nil
		})
		conn.Close()
	}
	if err != nil && results == nil {
		results = make([]error, len(reqs))
		for i := range results {
			results[i] = fmt.Errorf("store: writer connection: %w", err)
		}
		return reqs, results, true
	}
	return reqs, results, ok
}

// commitPG commits the group's transaction, after the work its writes
// deferred (GroupMerge), sent with COMMIT in one pipeline: one round trip,
// and the rows that work updates stay locked for the COMMIT's flush only.
// mergeErr is that work's error (a Flush's, or a statement of it refused by
// the server, which then skipped the COMMIT), and the transaction is still
// open (aborted), for the caller to roll back and run again with none
// deferred. PostgreSQL answers COMMIT of a transaction that a failed
// statement aborted with ROLLBACK, not an error, which database/sql's Exec
// cannot tell apart from success: a write function that swallowed a
// statement's error would otherwise be reported committed along with its
// whole group.
func (t *Tx) commitPG() (mergeErr, err error) {
	if err := t.flushMerges(); err != nil {
		return err, nil
	}
	// Every commit tells the other nodes, whose pages it makes stale
	// (pages.go); delivered only if the transaction commits.
	t.pending = append(t.pending, pendingStmt{query: commitNotify, args: []any{t.commitPayload()}}, pendingStmt{query: legacyNotify})
	br, err := t.send(pendingStmt{query: "COMMIT"})
	if err != nil {
		// Only the server's refusal proves the COMMIT was skipped; a lost
		// connection leaves the outcome unknown, as a failed COMMIT does.
		if pgErr := (*pgconn.PgError)(nil); errors.As(t.queuedErr, &pgErr) {
			return t.queuedErr, nil
		}
		return nil, t.queuedErr
	}
	defer br.Close()
	tag, err := br.Exec()
	if err != nil {
		return nil, err
	}
	if tag.String() != "COMMIT" {
		return nil, fmt.Errorf("store: commit: the transaction was rolled back (%s)", tag)
	}
	return nil, br.Close()
}

// runGroup runs reqs in one transaction on t's connection, opened with
// begin. broken reports that a ROLLBACK failed and the connection's
// transaction state is unknown.
func (db *DB) runGroup(t *Tx, begin string, reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok, broken bool) {
	ctx := groupCtx
	results = make([]error, len(reqs))
	fail := func(err error) ([]*writeReq, []error, bool, bool) {
		for i := range results {
			results[i] = err
		}
		return reqs, results, true, broken
	}
	rollback := func() {
		t.pending, t.queuedErr = t.pending[:0], nil
		if _, err := t.Exec(ctx, "ROLLBACK"); err != nil {
			broken = true
		}
	}
	started := time.Now()
	if t.pc != nil {
		// Sent with the first statement: one round trip fewer.
		t.pending = append(t.pending, pendingStmt{query: begin})
	} else if _, err := t.Exec(ctx, begin); err != nil {
		return fail(fmt.Errorf("store: begin: %w", err))
	}
	applied := 0
writes:
	for i := 0; ; i++ {
		if i == len(reqs) {
			// Writes that arrived while this group ran join it instead of
			// waiting a whole cycle for the next one. (An isolated retry
			// runs the list it was given.)
			// On PostgreSQL another committer takes them, in parallel.
			if isolate || len(reqs) >= maxBatch || t.pc != nil {
				break
			}
			select {
			case more := <-db.batch:
				reqs = append(reqs, more)
				results = append(results, nil)
			default:
				break writes
			}
		}
		r := reqs[i]
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		// Each write reads the clock when it runs: one that joined the
		// group after it began must not be stamped before it was asked for
		// (a test clock advanced meanwhile, or a cutoff computed from now).
		t.now = db.now().UnixMicro()
		if !isolate {
			// Both engines defer: on PostgreSQL to hold the contended row's
			// lock for the commit only; on SQLite to update it once per group
			// instead of once per write (its statements are the committer's
			// CPU, which bounds the send rate).
			t.deferring = r.contended
			t.batching = t.pc == nil
			if err := runFn(t, r, false); err != nil {
				rollback()
				if len(reqs) == 1 {
					// Alone, the write has failed as it would in a savepoint.
					results[0] = err
					return reqs, results, true, broken
				}
				return reqs, nil, false, broken
			}
			applied++
			continue
		}
		if _, err := t.Exec(ctx, "SAVEPOINT w"); err != nil {
			rollback()
			return fail(fmt.Errorf("store: savepoint: %w", err))
		}
		if err := runFn(t, r, true); err != nil {
			results[i] = err
			t.queuedErr = nil
			if _, rbErr := t.Exec(ctx, "ROLLBACK TO w"); rbErr != nil {
				rollback()
				return fail(errors.Join(err, fmt.Errorf("store: rollback to savepoint: %w", rbErr)))
			}
		} else {
			applied++
		}
		if _, err := t.Exec(ctx, "RELEASE w"); err != nil {
			rollback()
			return fail(fmt.Errorf("store: release savepoint: %w", err))
		}
	}
	if applied == 0 {
		rollback()
		return reqs, results, true, broken
	}
	if t.pc == nil {
		// SQLite inserts the rows its writes handed it (GroupInsert) and
		// runs the work they deferred (GroupMerge) here; PostgreSQL sends it with its COMMIT (commitPG). If it
		// fails, run again with each write in its savepoint, none deferred,
		// so that only a write whose own work fails fails.
		if err := t.flushRows(); err != nil {
			rollback()
			return reqs, nil, false, broken
		}
		if err := t.flushMerges(); err != nil {
			rollback()
			return reqs, nil, false, broken
		}
	}
	committing := time.Now()
	db.stats.execNanos.Add(int64(committing.Sub(started)))
	var err error
	if t.pc != nil {
		var mergeErr error
		if mergeErr, err = t.commitPG(); mergeErr != nil {
			// Run again with each write in its savepoint, none deferred.
			rollback()
			return reqs, nil, false, broken
		}
	} else {
		_, err = t.Exec(ctx, "COMMIT")
	}
	if err != nil {
		rollback()
		return fail(fmt.Errorf("store: commit: %w", err))
	}
	db.stats.commitNanos.Add(int64(time.Since(committing)))
	db.stats.batches.Add(1)
	db.stats.writes.Add(int64(applied))
	db.woken(t)
	return reqs, results, true, false
}

// wrecover replaces the committer's connection after a failed ROLLBACK left
// it in an unknown transaction state.
func (db *DB) wrecover() {
	db.raw = nil // its statements died with the connection
	db.wconn.Close()
	for {
		conn, err := db.w.Conn(context.Background())
		if err == nil {
			db.wconn = conn
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
