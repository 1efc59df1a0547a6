package store

import (
	"context"
	"fmt"
	"strings"
)

// hourMicros is the width of a call_counts bucket.
const hourMicros = int64(3600_000_000)

// The buckets of call_counts. Each call counts in its hour and in its day
// (a day's key is dayKey(day), far below every hour's), each under four
// (direction, status) pairs: its own, and with "*" for any direction, any
// status, or both. An exact total of a window then sums a few rows: whole
// days, the whole hours at either end, and only the rows of the filter.
const (
	dayMicros = 24 * hourMicros
	anyValue  = "*"
)

func dayKey(day int64) int64 { return day - 1<<40 }

// keyDay returns the day of a day bucket's key; ok is false for an hour's
// (every hour since 1 BC is far above the days' keys).
func keyDay(k int64) (day int64, ok bool) { return k + 1<<40, k < -1<<39 }

// countCall adds delta to the call's buckets.
func countCall(ctx context.Context, tx *Tx, accountID, start int64, direction, status string, delta int64) error {
	for _, k := range bucketKeys(start, direction, status) {
		if err := countBucket(ctx, tx, accountID, k, delta); err != nil {
			return err
		}
	}
	return nil
}

type bucketKey struct {
	hour              int64
	direction, status string
}

func bucketKeys(start int64, direction, status string) []bucketKey {
	out := make([]bucketKey, 0, 8)
	for _, h := range []int64{floorDiv(start, hourMicros), dayKey(floorDiv(start, dayMicros))} {
		out = append(out, bucketKey{h, direction, status}, bucketKey{h, direction, anyValue},
			bucketKey{h, anyValue, status}, bucketKey{h, anyValue, anyValue})
	}
	return out
}

func countBucket(ctx context.Context, tx *Tx, accountID int64, k bucketKey, delta int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO call_counts (account_id, hour, direction, status, n) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (account_id, hour, direction, status) DO UPDATE SET n = call_counts.n + excluded.n`,
		accountID, k.hour, k.direction, k.status, delta)
	if err != nil {
		return fmt.Errorf("store: call counts: %w", err)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketSpans are the ranges of call_counts keys that cover the whole hours
// [firstFull, lastFull): the whole days as one range of day keys, and the
// whole hours around them.
func bucketSpans(firstFull, lastFull int64) [][2]int64 {
	firstDay := floorDiv(firstFull+23, 24)
	lastDay := floorDiv(lastFull, 24) // exclusive
	if firstDay >= lastDay {
		return [][2]int64{{firstFull, lastFull}}
	}
	return [][2]int64{{firstFull, firstDay * 24}, {dayKey(firstDay), dayKey(lastDay)}, {lastDay * 24, lastFull}}
}

// countFilter is the condition on call_counts' (direction, status) rows that
// count q's calls.
func (q *CallQuery) countFilter() (string, []any) {
	dirs, stats := q.Directions, q.Statuses
	if dirs == nil {
		dirs = []string{anyValue}
	}
	if stats == nil {
		stats = []string{anyValue}
	}
	if len(dirs) == 0 || len(stats) == 0 {
		return ` AND 1 = 0`, nil
	}
	var args []any
	for _, d := range dirs {
		args = append(args, d)
	}
	for _, st := range stats {
		args = append(args, st)
	}
	return ` AND direction IN (` + placeholders(len(dirs)) + `) AND status IN (` + placeholders(len(stats)) + `)`, args
}

// bucketSum counts q's calls in the buckets with keys in the spans [from,
// to), in one statement: a sum per span, each an index range (a range of
// hours, then of days, then of hours again), added together. Statements,
// not rows, were the cost of three separate sums.
func (s *Store) bucketSum(ctx context.Context, q *CallQuery, spans [][2]int64) (int64, error) {
	query, args := bucketSumStatement(q, spans)
	var n int64
	if err := s.db.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: call counts: %w", err)
	}
	return n, nil
}

// bucketSumStatement is bucketSum's statement.
func bucketSumStatement(q *CallQuery, spans [][2]int64) (string, []any) {
	filter, fargs := q.countFilter()
	var sums []string
	var args []any
	for _, sp := range spans {
		if sp[0] >= sp[1] {
			continue
		}
		sums = append(sums, `(SELECT COALESCE(SUM(n), 0) FROM call_counts WHERE account_id = ? AND hour >= ? AND hour < ?`+filter+`)`)
		args = append(append(args, q.AccountID, sp[0], sp[1]), fargs...)
	}
	if len(sums) == 0 {
		return `SELECT 0`, nil
	}
	return `SELECT ` + strings.Join(sums, ` + `), args
}

// bucketSegments returns the non-empty buckets with keys in [from, to), all
// hours or all days, as segments in start order.
func (s *Store) bucketSegments(ctx context.Context, q *CallQuery, from, to int64) ([]segment, error) {
	if from >= to {
		return nil, nil
	}
	filter, fargs := q.countFilter()
	rows, err := s.searchQuery(ctx, q, `SELECT hour, SUM(n) FROM call_counts WHERE account_id = ? AND hour >= ? AND hour < ?`+filter+` GROUP BY hour ORDER BY hour`,
		append([]any{q.AccountID, from, to}, fargs...)...)
	if err != nil {
		return nil, fmt.Errorf("store: call counts: %w", err)
	}
	defer rows.Close()
	var segs []segment
	for rows.Next() {
		var k, n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		if d, ok := keyDay(k); ok {
			segs = append(segs, segment{d * dayMicros, (d + 1) * dayMicros, n})
		} else {
			segs = append(segs, segment{k * hourMicros, (k + 1) * hourMicros, n})
		}
	}
	return segs, rows.Err()
}
