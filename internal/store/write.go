package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Tx is the transaction a write function runs in. Several write functions
// may share one database transaction, each inside its own savepoint, so a
// function must not keep Tx after it returns.
type Tx struct {
	// tx is the PostgreSQL committer's connection, inside the group's
	// transaction; nil on SQLite, where the committer's raw connection is used.
	tx  *sql.Conn
	s   *Store
	now int64 // unix micros, fixed once per write
	// events: a write function added outbox work (eventsCommitted).
	events bool
	// pending holds the statements the running write function queued with
	// execLater (PostgreSQL).
	pending []pendingStmt
	// deferLead: the running write function is a contended one in a
	// PostgreSQL group that runs without savepoints, so leadConversation
	// records its conversation in leads (conversation id: newest sent message
	// id) instead of updating it; the group makes those updates after its last
	// write, with its COMMIT (commitPG). Contended writes run last in their group (see
	// writeContended), so no other write of the group reads a conversation
	// between the send and the update, and a conversation that several of
	// the group's sends lead is updated once, with the newest of them.
	deferLead bool
	leads     map[int64]int64
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

func (t *Tx) exec(_ context.Context, query string, args ...any) (sql.Result, error) {
	if t.tx == nil {
		return t.s.rawExec(query, args)
	}
	return t.tx.ExecContext(groupCtx, t.s.q(query), args...)
}

// execLater runs a statement whose result the write function does not need
// (an insert into the ledger or the event outbox, an update whose row count
// nobody reads). On PostgreSQL it is queued, and the statements a write
// function queued are sent in one pipeline, one round trip, when it returns,
// before the next write function of the group runs: writes still see each
// other whole and in order. Its error fails the write as exec's would. The
// function's own later statements do not see its effects, so queue only
// statements that nothing after them in the function reads. On SQLite, where
// a statement is a function call rather than a round trip, it runs at once.
func (t *Tx) execLater(ctx context.Context, query string, args ...any) error {
	if t.tx == nil {
		_, err := t.exec(ctx, query, args...)
		return err
	}
	t.pending = append(t.pending, pendingStmt{t.s.q(query), args})
	return nil
}

// flush sends the queued statements (see execLater) in one pipeline and
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

// row is a single-row result: *sql.Row or the committer's rawRow.
type row interface{ Scan(dest ...any) error }

func (t *Tx) queryRow(_ context.Context, query string, args ...any) row {
	if t.tx == nil {
		return t.s.rawQueryRow(query, args)
	}
	return t.tx.QueryRowContext(groupCtx, t.s.q(query), args...)
}

// insert runs an INSERT and returns the new row's id. SQLite reports the
// rowid itself; RETURNING would make it build a temporary table for the
// result, which doubles the cost of a small insert. Only for plain INSERTs:
// one that may insert nothing (ON CONFLICT DO NOTHING) would get a stale id.
func (t *Tx) insert(ctx context.Context, query string, args ...any) (int64, error) {
	if t.tx == nil {
		res, err := t.s.rawExec(query, args)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var id int64
	err := t.queryRow(ctx, query+" RETURNING id", args...).Scan(&id)
	return id, err
}

type writeReq struct {
	ctx  context.Context
	fn   func(*Tx) error
	done chan error
	// tries counts the times fn lost a deadlock or serialization conflict
	// (PostgreSQL); see maxTries.
	tries int
	// contended: see writeContended; alone: see writeAlone.
	contended, alone bool
}

// maxBatch bounds how many write functions share one commit.
const maxBatch = 256

// pgCommitters is how many groups may be in flight at once on PostgreSQL,
// each on a connection of its own: while one group waits for its COMMIT to
// reach the disk (or for a row another group holds), the next one runs.
const pgCommitters = 4

// maxTries bounds how often a write that lost a deadlock or a serialization
// conflict to another transaction is run again before its caller gets the
// error.
const maxTries = 5

// startCommitters starts n committers (see committer) and the queue they
// take writes from.
func (s *Store) startCommitters(n int) {
	s.batch = make(chan *writeReq, 1024)
	s.stop = make(chan struct{})
	s.committers = n
	s.stopped.Add(n)
	for range n {
		go s.committer()
	}
}

// write runs fn in a transaction and returns once it is durably committed (or
// rolled back because fn failed); the call joins the next group commit (see
// committer). It also tells every process's read cache to drop what it
// holds. On SQLite it bumps the cache generation. On PostgreSQL it sends a
// notification in the same transaction (delivered to the other nodes only if
// it commits), then drops this process's cache itself, so its next read sees
// its own write.
func (s *Store) write(ctx context.Context, fn func(*Tx) error) error {
	if s.engine == Postgres {
		err := s.writeData(ctx, func(tx *Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			_, err := tx.exec(ctx, `SELECT pg_notify('`+cacheChannel+`', coalesce(current_schema(), ''))`)
			return err
		})
		if s.cache != nil {
			// Even after an error: a failed commit may still have landed.
			s.cache.invalidate()
		}
		return err
	}
	return s.writeData(ctx, func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `UPDATE cache_generation SET gen = gen + 1 WHERE id = 1`)
		return err
	})
}

// writeData is write for the hot paths (messages, receipts, ledger, events,
// idempotency records) that change nothing the read cache holds, so they
// leave the cache generation alone.
func (s *Store) writeData(ctx context.Context, fn func(*Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// writeContended is writeData for a write that updates a row that many
// concurrent writes update (a conversation's newest message: every send in
// the conversation). On PostgreSQL the row stays locked from that update to
// the group's commit, and other groups that update it wait that long: such
// writes run after the others of their group, so that the lock is held for
// the group's end only. (The writes of a group are concurrent requests: any
// order is one they could have arrived in.)
func (s *Store) writeContended(ctx context.Context, fn func(*Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), contended: true})
}

// writeAlone is writeData for a write whose lost acknowledgement no client
// retries: a scheduled message's intent. A process killed during a group's
// COMMIT (or just after it, before its callers ran on) leaves every write of
// the group committed with no one acting on it; an intent left so waits for
// the reconciler's age before it is abandoned and its schedule sent anew.
// Alone in its transaction (on PostgreSQL; SQLite's committer is unchanged),
// a crash holds back one scheduled message, as before group commit, not a
// group's worth.
func (s *Store) writeAlone(ctx context.Context, fn func(*Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), alone: true})
}

func (s *Store) enqueue(req *writeReq) error {
	ctx := req.ctx
	// Read-locked while queueing, so that Close can stop admitting writes
	// and then answer every one already queued.
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case s.batch <- req:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return ctx.Err()
	}
	s.closeMu.RUnlock()
	// Once queued, wait for the outcome even if ctx ends: the committer decides
	// whether the write happened, and the caller must learn which.
	return <-req.done
}

// ErrClosed is the error of a write made after (or queued too late before)
// Store.Close: it was not made.
var ErrClosed = errors.New("store: closed")

// runFn calls fn, then sends the statements it queued (see execLater),
// turning a panic into an error so one bad write cannot take the whole batch
// (or the committer) down.
func runFn(tx *Tx, fn func(*Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: write panicked: %v", p)
		}
		tx.pending = tx.pending[:0] // a failed function's are dropped
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.flush()
}

// committer takes whatever write requests are waiting (the ones that arrived
// while the previous commit was syncing), runs them in one transaction and
// commits them together. SQLite has one committer, its single writer.
// PostgreSQL has pgCommitters of them, each running its group on a pool
// connection: a send's writes cost their statements and a share of one
// BEGIN/COMMIT and of one WAL flush, and a row every send updates (a
// conversation's newest message) is locked once per group rather than held
// by each send through its own commit.
func (s *Store) committer() {
	defer s.stopped.Done()
	for {
		var first *writeReq
		select {
		case first = <-s.batch:
		case <-s.stop:
			return
		}
		reqs := []*writeReq{first}
	drain:
		for len(reqs) < maxBatch {
			select {
			case r := <-s.batch:
				reqs = append(reqs, r)
			default:
				break drain
			}
		}
		if s.engine == Postgres {
			// See writeAlone and writeContended.
			group := reqs[:0]
			for _, r := range reqs {
				if r.alone {
					s.commitBatch([]*writeReq{r})
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
			s.commitBatch(reqs)
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

// CommitStats describes the committers' work since the store opened.
type CommitStats struct {
	Batches int64         // transactions committed (or rolled back)
	Writes  int64         // write functions run in them
	Exec    time.Duration // running the write functions
	Commit  time.Duration // COMMIT: writing the WAL and waiting for fsync
}

// CommitStats reports the committers' counters.
// Writes/Batches is the average group size; Commit/Batches the disk's cost.
func (s *Store) CommitStats() CommitStats {
	return CommitStats{
		Batches: s.stats.batches.Load(), Writes: s.stats.writes.Load(),
		Exec: time.Duration(s.stats.execNanos.Load()), Commit: time.Duration(s.stats.commitNanos.Load()),
	}
}

func (s *Store) commitBatch(reqs []*writeReq) {
	// Nearly every batch succeeds whole, so it first runs without savepoints
	// (two statements fewer per write). If a write fails, that attempt is
	// rolled back and the batch runs again with each write in its own
	// savepoint, so that only the failing writes are undone.
	reqs, results, ok := s.runBatch(reqs, false)
	if !ok {
		reqs, results, _ = s.runBatch(reqs, true)
	}
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
		s.commitBatch(again)
	}
}

// isConflict reports whether err is PostgreSQL aborting a statement to
// break a deadlock (40P01) or a serialization failure (40001): the write
// did nothing and may succeed when run again.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// runBatch runs reqs in one transaction on the committer's connection, with
// plain BEGIN/COMMIT statements so that statements prepared on it are reused
// (database/sql would re-prepare them inside an *sql.Tx). Without isolate, a
// failing write aborts the attempt and runBatch reports !ok with nothing
// committed; with isolate, each write runs in a savepoint and fails alone.
func (s *Store) runBatch(reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok bool) {
	if s.engine == Postgres {
		return s.runBatchPG(reqs, isolate)
	}
	err := s.wconn.Raw(func(dc any) error {
		conn, isPrep := dc.(driver.ConnPrepareContext)
		if !isPrep {
			return fmt.Errorf("store: SQLite driver connection %T cannot prepare statements", dc)
		}
		if s.raw == nil || s.raw.conn != conn {
			s.raw = &rawConn{conn: conn, stmts: map[string]driver.Stmt{}}
		}
		var broken bool
		t := &Tx{s: s, now: micros(s.now())}
		reqs, results, ok, broken = s.runGroup(t, "BEGIN IMMEDIATE", reqs, isolate)
		if broken {
			// Tell database/sql to discard the connection.
			return driver.ErrBadConn
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrBadConn) {
			s.wrecover()
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
// group. The statements go through database/sql (pgx caches their prepared
// forms per connection); a write's queued statements (execLater) and COMMIT
// go to pgx itself, for its pipeline and COMMIT's command tag.
func (s *Store) runBatchPG(reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok bool) {
	conn, err := s.w.Conn(groupCtx)
	if err != nil {
		results = make([]error, len(reqs))
		for i := range results {
			results[i] = fmt.Errorf("store: writer connection: %w", err)
		}
		return reqs, results, true
	}
	t := &Tx{tx: conn, s: s, now: micros(s.now())}
	reqs, results, ok, broken := s.runGroup(t, "BEGIN", reqs, isolate)
	if broken {
		// Its transaction state is unknown: database/sql must not hand the
		// connection to anyone else.
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
	return reqs, results, ok
}

// commitPG commits the group's transaction, after the conversation updates
// its writes deferred (see Tx.deferLead), sent with COMMIT in one pipeline:
// one round trip, and the conversation rows stay locked for the COMMIT's
// flush only. leadErr is an update's error, refused by the server, which then skipped the
// COMMIT, and the transaction is still open (aborted), for the caller to roll
// back and run again with none deferred. PostgreSQL answers COMMIT of a
// transaction that a failed statement aborted with ROLLBACK, not an error,
// which database/sql's Exec cannot tell apart from success: a write function
// that swallowed a statement's error would otherwise be reported committed
// along with its whole group.
func (t *Tx) commitPG() (leadErr, err error) {
	t.queueLeads()
	pending := t.pending
	t.pending = t.pending[:0]
	err = t.tx.Raw(func(dc any) error {
		c, isPgx := dc.(*stdlib.Conn)
		if !isPgx {
			return fmt.Errorf("store: PostgreSQL driver connection %T is not pgx's", dc)
		}
		b := &pgx.Batch{}
		for _, p := range pending {
			b.Queue(p.query, p.args...)
		}
		b.Queue("COMMIT")
		br := c.Conn().SendBatch(groupCtx, b)
		defer br.Close()
		for range pending {
			if _, err := br.Exec(); err != nil {
				// Only the server's refusal proves the COMMIT was skipped;
				// a lost connection leaves the outcome unknown, as a failed
				// COMMIT does.
				if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) {
					leadErr = err
					return nil
				}
				return err
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("store: commit: the transaction was rolled back (%s)", tag)
		}
		return nil
	})
	return leadErr, err
}

// runGroup runs reqs in one transaction on t's connection, opened with
// begin. broken reports that a ROLLBACK failed and the connection's
// transaction state is unknown.
func (s *Store) runGroup(t *Tx, begin string, reqs []*writeReq, isolate bool) (ran []*writeReq, results []error, ok, broken bool) {
	ctx := groupCtx
	results = make([]error, len(reqs))
	fail := func(err error) ([]*writeReq, []error, bool, bool) {
		for i := range results {
			results[i] = err
		}
		return reqs, results, true, broken
	}
	rollback := func() {
		if _, err := t.exec(ctx, "ROLLBACK"); err != nil {
			broken = true
		}
	}
	started := time.Now()
	if _, err := t.exec(ctx, begin); err != nil {
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
			if isolate || len(reqs) >= maxBatch || t.tx != nil {
				break
			}
			select {
			case more := <-s.batch:
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
		if !isolate {
			t.deferLead = t.tx != nil && r.contended
			if err := runFn(t, r.fn); err != nil {
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
		if _, err := t.exec(ctx, "SAVEPOINT w"); err != nil {
			rollback()
			return fail(fmt.Errorf("store: savepoint: %w", err))
		}
		if err := runFn(t, r.fn); err != nil {
			results[i] = err
			if _, rbErr := t.exec(ctx, "ROLLBACK TO w"); rbErr != nil {
				rollback()
				return fail(errors.Join(err, fmt.Errorf("store: rollback to savepoint: %w", rbErr)))
			}
		} else {
			applied++
		}
		if _, err := t.exec(ctx, "RELEASE w"); err != nil {
			rollback()
			return fail(fmt.Errorf("store: release savepoint: %w", err))
		}
	}
	if applied == 0 {
		rollback()
		return reqs, results, true, broken
	}
	committing := time.Now()
	s.stats.execNanos.Add(int64(committing.Sub(started)))
	var err error
	if t.tx != nil {
		var leadErr error
		if leadErr, err = t.commitPG(); leadErr != nil {
			// Run again with each write in its savepoint, none deferred.
			rollback()
			return reqs, nil, false, broken
		}
	} else {
		_, err = t.exec(ctx, "COMMIT")
	}
	if err != nil {
		rollback()
		return fail(fmt.Errorf("store: commit: %w", err))
	}
	s.stats.commitNanos.Add(int64(time.Since(committing)))
	s.stats.batches.Add(1)
	s.stats.writes.Add(int64(applied))
	s.eventsCommitted(t)
	return reqs, results, true, false
}

// queueLeads queues the conversation updates the group's writes deferred
// (see Tx.deferLead), in conversation id order, so that groups of other
// committers and nodes lock shared conversations in one order.
func (t *Tx) queueLeads() {
	t.deferLead = false
	for _, conv := range slices.Sorted(maps.Keys(t.leads)) {
		t.pending = append(t.pending, pendingStmt{leadConversationPG, []any{t.leads[conv], t.now, conv}})
	}
	t.leads = nil
}

// wrecover replaces the committer's connection after a failed ROLLBACK left
// it in an unknown transaction state.
func (s *Store) wrecover() {
	s.raw = nil // its statements died with the connection
	s.wconn.Close()
	for {
		conn, err := s.w.Conn(context.Background())
		if err == nil {
			s.wconn = conn
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query runs a multi-row query in the transaction, calling scan once per row
// (on SQLite with the committer's raw row, so scan must not keep it).
func (t *Tx) query(_ context.Context, query string, args []any, scan func(row) error) error {
	if t.tx != nil {
		rows, err := t.tx.QueryContext(groupCtx, t.s.q(query), args...)
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
	return t.s.rawQuery(query, args, func(r *rawRow) error { return scan(r) })
}
