package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// pgLoader stores one account's generated calls on PostgreSQL the way a bulk
// load should: in one transaction, the calls through COPY with their
// time-ordered indexes kept (every row appends to them) and the others
// dropped and built once at the end, foreign keys checked once by
// re-adding them rather than row by row, and what SaveCall maintains per call
// (call_tags, call_counts, call_vocabulary, repeated and calledBack)
// computed afterwards by set-based SQL. TestCopyMatchesIngest checks that the
// result equals ingesting every call with store.SaveCall.
//
// It takes exclusive locks on the call tables for the whole load: it is for
// filling a benchmark database, not for a live one.
type pgLoader struct {
	conn    *pgx.Conn
	tx      pgx.Tx
	account int64
	now     int64 // ingested_at of every call
	next    int64 // the next call's primary key
	rows    chan [][]any
	batch   [][]any
	copied  chan error
	tags    []tagRow
	vocab   map[[2]string]bool
	// rebuild are the statements that restore what the load dropped.
	rebuild []string
}

type tagRow struct {
	pk          int64
	kind, value string
}

// callCopyColumns are the primary key the loader assigns, then the columns
// every stored call is written with (repeated and called_back keep their
// defaults until finish derives them).
var callCopyColumns = append([]string{"id"}, store.CallRowColumns...)

func newPGLoader(ctx context.Context, dsn string, account int64) (*pgLoader, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	l := &pgLoader{conn: conn, account: account, now: time.Now().UnixMicro(), vocab: map[[2]string]bool{}}
	if err := l.begin(ctx); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return l, nil
}

func (l *pgLoader) close() { l.conn.Close(context.Background()) }

func (l *pgLoader) begin(ctx context.Context) error {
	tx, err := l.conn.Begin(ctx)
	if err != nil {
		return err
	}
	l.tx = tx
	for _, q := range []string{
		`SET LOCAL statement_timeout = 0`,
		`SET LOCAL maintenance_work_mem = '1GB'`,
		`SET LOCAL work_mem = '256MB'`,
		`SET LOCAL jit = off`, // compiling each statement costs more than it saves here
		`LOCK TABLE calls, call_tags, call_counts, call_vocabulary IN ACCESS EXCLUSIVE MODE`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM calls`).Scan(&l.next); err != nil {
		return err
	}
	// Secondary indexes that are not in start order, and foreign keys of the
	// tables COPY fills: dropped now, restored by finish.
	rows, err := tx.Query(ctx, `SELECT format('DROP INDEX %I', c.relname), pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'calls'::regclass AND NOT i.indisprimary AND NOT i.indisunique
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
		  AND pg_get_indexdef(i.indexrelid) NOT LIKE '%(account_id, start_time%'
		UNION ALL
		SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', k.conrelid::regclass, k.conname),
		       format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
		FROM pg_constraint k WHERE k.contype = 'f' AND k.conrelid IN ('calls'::regclass, 'call_tags'::regclass)`)
	if err != nil {
		return err
	}
	var drops []string
	for rows.Next() {
		var drop, create string
		if err := rows.Scan(&drop, &create); err != nil {
			return err
		}
		drops, l.rebuild = append(drops, drop), append(l.rebuild, create)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, q := range drops {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	// COPY runs beside the generator, fed batches of rows.
	l.rows, l.copied = make(chan [][]any, 4), make(chan error, 1)
	go func() {
		var cur [][]any
		next := func() bool {
			if len(cur) > 1 {
				cur = cur[1:]
				return true
			}
			b, ok := <-l.rows
			cur = b
			return ok
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"calls"}, callCopyColumns,
			pgx.CopyFromFunc(func() ([]any, error) {
				if !next() {
					return nil, nil
				}
				return cur[0], nil
			}))
		if err != nil {
			for range l.rows { // let the generator finish
			}
		}
		l.copied <- err
	}()
	return nil
}

func (l *pgLoader) add(ctx context.Context, c domain.Call) error {
	sec, seq, ok := domain.ParseCallID(c.ID)
	if !ok {
		return domain.Errorf(domain.Invalid, "id %q: want %s", c.ID, domain.CallIDShape)
	}
	pk := l.next
	l.next++
	l.batch = append(l.batch, append([]any{pk}, store.CallRow(l.account, &c, sec, seq, 0, l.now)...))
	for _, t := range []struct {
		kind   string
		values []string
	}{
		{domain.TagNumber, c.Numbers}, {domain.TagExtension, c.Extensions}, {domain.TagQueue, c.Queues},
		{domain.TagHuntgroup, c.Huntgroups}, {domain.TagUser, c.Users},
	} {
		for i, v := range t.values {
			if !contains(t.values[:i], v) {
				l.tags = append(l.tags, tagRow{pk, t.kind, v})
			}
		}
	}
	for _, v := range [][2]string{{"purpose", c.CallPurpose}, {"sentiment", c.CallSentiment}} {
		if v[1] != "" {
			l.vocab[v] = true
		}
	}
	if len(l.batch) == 1000 {
		l.rows <- l.batch // a failed COPY drains the rest and reports in finish
		l.batch = nil
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (l *pgLoader) finish(ctx context.Context) error {
	if len(l.batch) > 0 {
		l.rows <- l.batch
	}
	close(l.rows)
	if err := <-l.copied; err != nil {
		return fmt.Errorf("copy calls: %w", err)
	}
	tx := l.tx
	step := func(what string, f func() error) error {
		t := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(os.Stderr, "callgen: %s (%s)\n", what, time.Since(t).Round(time.Millisecond))
		return nil
	}
	exec := func(q string, args ...any) func() error {
		return func() error { _, err := tx.Exec(ctx, q, args...); return err }
	}
	if err := step("copy call_tags", func() error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"call_tags"}, []string{"call_pk", "kind", "value"},
			pgx.CopyFromSlice(len(l.tags), func(i int) ([]any, error) {
				t := l.tags[i]
				return []any{t.pk, t.kind, t.value}, nil
			}))
		return err
	}); err != nil {
		return err
	}
	for v := range l.vocab {
		if _, err := tx.Exec(ctx, `INSERT INTO call_vocabulary (account_id, kind, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			l.account, v[0], v[1]); err != nil {
			return err
		}
	}
	for _, q := range l.rebuild {
		if err := step(q, exec(q)); err != nil {
			return err
		}
	}
	// The statements below plan by the table's statistics, which a table
	// filled in this transaction does not have yet.
	if err := step("analyze", exec(`ANALYZE calls`)); err != nil {
		return err
	}
	// The identity sequence continues after the rows COPY numbered.
	if err := step("sequence", exec(`SELECT setval(pg_get_serial_sequence('calls', 'id'), $1::bigint) WHERE $1::bigint > 0`, l.next-1)); err != nil {
		return err
	}
	// call_counts: each call in its hour and its day bucket, each under its
	// (direction, status), with '*' for any direction, any status or both
	// (store.bucketKeys); a day's key is the day - 2^40 (store.dayKey). The
	// calls are grouped by hour once; days and '*' rows sum those groups.
	if err := step("call_counts", exec(`INSERT INTO call_counts (account_id, hour, direction, status, n)
		WITH h AS (
			SELECT (start_time - ((start_time % 3600000000) + 3600000000) % 3600000000) / 3600000000 AS hour,
				direction, status, COUNT(*) AS n
			FROM calls WHERE account_id = $1 GROUP BY 1, 2, 3),
		b AS (
			SELECT hour AS k, direction, status, n FROM h
			UNION ALL
			SELECT (hour - ((hour % 24) + 24) % 24) / 24 - 1099511627776, direction, status, n FROM h)
		SELECT $1, k, COALESCE(direction, '*'), COALESCE(status, '*'), SUM(n)
		FROM b GROUP BY GROUPING SETS ((k, direction, status), (k, direction), (k, status), (k))
		ON CONFLICT (account_id, hour, direction, status) DO UPDATE SET n = call_counts.n + excluded.n`, l.account)); err != nil {
		return err
	}
	// repeated and called_back as store.refreshDerived computes them (the
	// same subqueries), set only on the calls where they are not the
	// defaults, so that the load rewrites few rows. A call from an empty
	// number is never refreshed by SaveCall, so keeps the defaults.
	w := domain.DerivedWindow.Microseconds()
	if err := step("repeated", exec(`WITH inb AS (
			SELECT id, start_time, lag(start_time) OVER (PARTITION BY caller_number ORDER BY start_time, id_sec, id_seq) AS prev
			FROM calls WHERE account_id = $1 AND direction = 'inbound' AND caller_number <> '')
		UPDATE calls SET repeated = (
			SELECT COUNT(*) FROM calls e WHERE e.account_id = calls.account_id AND e.caller_number = calls.caller_number
			AND e.direction = 'inbound' AND e.start_time >= calls.start_time - $2 AND e.start_time <= calls.start_time
			AND (e.start_time < calls.start_time OR e.id_sec < calls.id_sec OR (e.id_sec = calls.id_sec AND e.id_seq < calls.id_seq)))
		FROM inb WHERE calls.id = inb.id AND inb.prev >= inb.start_time - $2`, l.account, w)); err != nil {
		return err
	}
	if err := step("called_back", exec(`UPDATE calls SET called_back = x.cb FROM (
			SELECT c.id, (SELECT b.call_id FROM calls b WHERE b.account_id = c.account_id AND b.called_number = c.caller_number
				AND b.direction = 'outbound' AND b.start_time > c.start_time AND b.start_time <= c.start_time + $2
				ORDER BY b.start_time, b.id_sec, b.id_seq LIMIT 1) AS cb
			FROM calls c WHERE c.account_id = $1 AND c.direction = 'inbound' AND c.abandoned = 1 AND c.caller_number <> '') x
		WHERE calls.id = x.id AND x.cb IS NOT NULL`, l.account, w)); err != nil {
		return err
	}
	if err := step("commit", func() error { return tx.Commit(ctx) }); err != nil {
		return err
	}
	// What autovacuum does to a table that grew by traffic: statistics for
	// the planner, and the visibility map that lets index-only scans skip
	// the heap. A bulk load outruns it.
	return step("vacuum analyze", func() error {
		_, err := l.conn.Exec(ctx, `VACUUM (ANALYZE) calls, call_tags, call_counts`)
		return err
	})
}
