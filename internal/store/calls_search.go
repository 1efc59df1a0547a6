package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"switchboard/internal/domain"
)

// CallQuery is a search of one account's calls. Nil slices do not filter;
// an empty non-nil Intervals matches nothing.
type CallQuery struct {
	AccountID  int64
	Start, End int64 // unix micros: Start ≤ start_time < End
	// Intervals, when non-nil, further restrict start_time to the union of
	// these [from, to) ranges (days of week and month, time of day).
	Intervals  [][2]int64
	Directions []string
	Statuses   []string
	Include    map[string][]string // tag kind → values, any of which matches
	Exclude    map[string][]string
	Search     string // lowercased substring
	Duration   Range
	TalkTime   Range
	WaitTime   Range
	Purposes   []string
	Sentiments []string
	Sort       string // a Call field name; "" is startTime
	Asc        bool
	Limit      int
	Offset     int
}

// Range is an inclusive range of seconds; nil ends are open.
type Range struct{ Min, Max *int64 }

// sortColumns maps the Call fields to what orders them. Absent values (a
// call without endTime or calledBack) sort lowest.
var sortColumns = map[string]string{
	"id": "", "startTime": "start_time",
	"direction": "direction", "status": "status", "statusCode": "status_code",
	"callerType": "caller_type", "calledType": "called_type", "callerName": "caller_name",
	"callerNumber": "caller_number", "calledName": "called_name", "calledNumber": "called_number",
	"dialledNumber": "dialled_number", "callerIdInternal": "caller_id_internal", "callerIdExternal": "caller_id_external",
	"endTime": "COALESCE(end_time, -9223372036854775807)", "durationSeconds": "duration_seconds",
	"talkTimeSeconds": "talk_time_seconds", "transferred": "transferred", "abandoned": "abandoned",
	"recorded": "recorded", "calledBack": "COALESCE(called_back, '')", "repeated": "repeated",
}

// textSort lists the sort columns holding text, which PostgreSQL must
// compare bytewise (as SQLite does) for both engines to agree.
var textSort = map[string]bool{
	"direction": true, "status": true, "callerType": true, "calledType": true, "callerName": true,
	"callerNumber": true, "calledName": true, "calledNumber": true, "dialledNumber": true,
	"callerIdInternal": true, "callerIdExternal": true, "calledBack": true,
}

// SortableCallField reports whether field names a Call field search can sort by.
func SortableCallField(field string) bool {
	_, ok := sortColumns[field]
	return ok
}

// bucketed reports whether q filters only on what call_counts counts, so
// that its total (and the position of a deep page) comes from the buckets.
func (q *CallQuery) bucketed() bool {
	return q.Intervals == nil && len(q.Include) == 0 && len(q.Exclude) == 0 && q.Search == "" &&
		q.Duration == (Range{}) && q.TalkTime == (Range{}) && q.WaitTime == (Range{}) &&
		q.Purposes == nil && q.Sentiments == nil
}

// where builds the WHERE clause of q over [from, to).
func (s *Store) callWhere(q *CallQuery, from, to int64) (string, []any) {
	var b strings.Builder
	args := []any{q.AccountID, from, to}
	b.WriteString(`account_id = ? AND start_time >= ? AND start_time < ?`)
	in := func(col string, vals []string) {
		if vals == nil {
			return
		}
		if len(vals) == 0 {
			b.WriteString(` AND 1 = 0`)
			return
		}
		b.WriteString(` AND ` + col + ` IN (` + placeholders(len(vals)) + `)`)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("direction", q.Directions)
	in("status", q.Statuses)
	in("call_purpose", q.Purposes)
	in("call_sentiment", q.Sentiments)
	if q.Intervals != nil {
		if len(q.Intervals) == 0 {
			b.WriteString(` AND 1 = 0`)
		} else {
			b.WriteString(` AND (`)
			for i, iv := range q.Intervals {
				if i > 0 {
					b.WriteString(` OR `)
				}
				b.WriteString(`(start_time >= ? AND start_time < ?)`)
				args = append(args, iv[0], iv[1])
			}
			b.WriteString(`)`)
		}
	}
	for _, r := range []struct {
		col string
		r   Range
	}{{"duration_seconds", q.Duration}, {"talk_time_seconds", q.TalkTime}, {"wait_time_seconds", q.WaitTime}} {
		if r.r.Min != nil {
			b.WriteString(` AND ` + r.col + ` >= ?`)
			args = append(args, *r.r.Min)
		}
		if r.r.Max != nil {
			b.WriteString(` AND ` + r.col + ` <= ?`)
			args = append(args, *r.r.Max)
		}
	}
	if q.Search != "" {
		if s.db.Engine() == Postgres {
			b.WriteString(` AND strpos(search_text, ?) > 0`)
		} else {
			b.WriteString(` AND instr(search_text, ?) > 0`)
		}
		args = append(args, q.Search)
	}
	tags := func(m map[string][]string, not string) {
		for _, kind := range sortedKeys(m) {
			vals := m[kind]
			if len(vals) == 0 {
				continue
			}
			b.WriteString(` AND ` + not + `EXISTS (SELECT 1 FROM call_tags t WHERE t.call_pk = calls.id AND t.kind = ? AND t.value IN (` + placeholders(len(vals)) + `))`)
			args = append(args, kind)
			for _, v := range vals {
				args = append(args, v)
			}
		}
	}
	tags(q.Include, "")
	tags(q.Exclude, "NOT ")
	return b.String(), args
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// SearchCalls returns one page of the calls matching q and the exact number
// of matches; the page's calls hold what the public API shows of a call
// (callPageColumns). A search that filters only on direction and status
// takes its total from the hourly counts and seeks a deep page through them,
// so its cost depends on the window and the page, not on the account's
// history.
func (s *Store) SearchCalls(ctx context.Context, q CallQuery) (int64, []domain.Call, error) {
	from, to, offset := q.Start, q.End, q.Offset
	var total int64
	if q.bucketed() {
		// Per-hour segments only when a deep page needs them to seek; the
		// first page needs only their sum.
		deep := (q.Sort == "" || q.Sort == "startTime") && offset > 0
		if !deep && s.db.Engine() == Postgres && q.Start%hourMicros == 0 && q.End%hourMicros == 0 && q.Start < q.End {
			return s.firstPagePG(ctx, &q)
		}
		segs, err := s.callSegments(ctx, &q, !deep)
		if err != nil {
			return 0, nil, err
		}
		for _, sg := range segs {
			total += sg.n
		}
		if deep {
			var at segment
			from, to, offset, at = seek(segs, q.Asc, from, to, offset)
			if at.to-at.from > hourMicros {
				// The page starts inside a whole day: seek again through its hours.
				d := floorDiv(at.from, dayMicros)
				hours, err := s.bucketSegments(ctx, &q, d*24, d*24+24)
				if err != nil {
					return 0, nil, err
				}
				from, to, offset, _ = seek(hours, q.Asc, from, to, offset)
			}
		}
	} else {
		where, args := s.callWhere(&q, q.Start, q.End)
		if err := s.db.Readers().QueryRowContext(ctx, s.db.Rebind(`SELECT COUNT(*) FROM calls WHERE `+where), args...).Scan(&total); err != nil {
			return 0, nil, fmt.Errorf("store: count calls: %w", err)
		}
	}
	calls := []domain.Call{}
	if int64(q.Offset) >= total || q.Limit == 0 {
		return total, calls, nil
	}
	query, args := s.pageStatement(&q, from, to, offset)
	rows, err := s.searchQuery(ctx, &q, query, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("store: search calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := pageRow(rows.Scan, q.AccountID)
		if err != nil {
			return 0, nil, err
		}
		calls = append(calls, c)
	}
	return total, calls, rows.Err()
}

// firstPagePG is SearchCalls on PostgreSQL for a page that needs no seek
// in a window of whole hours: the total (one sum of call_counts) and the page
// go to PostgreSQL in one pipeline, one round trip instead of two, and the
// rows are read with pgx's own interface rather than through database/sql
// (the round trips and the row decoding were most of the server's CPU per
// search on PostgreSQL; docs/benchmarks.md, call search).
func (s *Store) firstPagePG(ctx context.Context, q *CallQuery) (int64, []domain.Call, error) {
	sumQuery, sumArgs := bucketSumStatement(q, bucketSpans(q.Start/hourMicros, q.End/hourMicros))
	pageQuery, pageArgs := s.pageStatement(q, q.Start, q.End, q.Offset)
	conn, err := s.db.Readers().Conn(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("store: search calls: %w", err)
	}
	defer conn.Close()
	var total int64
	calls := []domain.Call{}
	err = conn.Raw(func(dc any) error {
		c, isPgx := dc.(*stdlib.Conn)
		if !isPgx {
			return fmt.Errorf("store: PostgreSQL driver connection %T is not pgx's", dc)
		}
		b := &pgx.Batch{}
		b.Queue(s.db.Rebind(sumQuery), sumArgs...)
		b.Queue(s.db.Rebind(pageQuery), pageArgs...)
		br := c.Conn().SendBatch(ctx, b)
		defer br.Close()
		if err := br.QueryRow().Scan(&total); err != nil {
			return fmt.Errorf("store: call counts: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("store: search calls: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			c, err := pageRow(rows.Scan, q.AccountID)
			if err != nil {
				return fmt.Errorf("store: search calls: %w", err)
			}
			calls = append(calls, c)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, nil, err
	}
	return total, calls, nil
}

// pageStatement is the statement of q's page: the calls of [from, to) in
// q's order from offset.
func (s *Store) pageStatement(q *CallQuery, from, to int64, offset int) (string, []any) {
	where, args := s.callWhere(q, from, to)
	dir := " DESC"
	if q.Asc {
		dir = " ASC"
	}
	order := "start_time" + dir + ", id_sec" + dir + ", id_seq" + dir
	if q.Sort != "" && q.Sort != "startTime" {
		col := sortColumns[q.Sort]
		if col == "" {
			order = "id_sec" + dir + ", id_seq" + dir
		} else {
			if s.db.Engine() == Postgres && textSort[q.Sort] {
				col += ` COLLATE "C"`
			}
			order = col + dir + ", id_sec" + dir + ", id_seq" + dir
		}
	}
	return `SELECT ` + callPageColumns + ` FROM calls WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ? OFFSET ?`, append(args, q.Limit, offset)
}

// searchQuery runs a search statement. A search filtering only on direction
// and status has one of a bounded set of texts, so it uses the store's
// prepared statements; any other (IN lists of any length, time-of-day
// ranges) is prepared per request rather than cached forever.
func (s *Store) searchQuery(ctx context.Context, q *CallQuery, query string, args ...any) (*sql.Rows, error) {
	if q.bucketed() {
		return s.db.Query(ctx, query, args...)
	}
	return s.db.Readers().QueryContext(ctx, s.db.Rebind(query), args...)
}

// segment is a run of start times [from, to) holding n matching calls.
type segment struct{ from, to, n int64 }

// callSegments splits q's window into the partial hour at each end, counted
// from the calls themselves, and what lies between from call_counts: the
// whole days as one segment each, and the whole hours around them; in start
// order. With sumOnly, everything between the partial hours comes back as
// one segment.
func (s *Store) callSegments(ctx context.Context, q *CallQuery, sumOnly bool) ([]segment, error) {
	firstFull := floorDiv(q.Start+hourMicros-1, hourMicros)
	lastFull := floorDiv(q.End, hourMicros) // exclusive
	count := func(from, to int64) (int64, error) {
		where, args := s.callWhere(q, from, to)
		var n int64
		err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM calls WHERE `+where, args...).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("store: count calls: %w", err)
		}
		return n, nil
	}
	if firstFull >= lastFull {
		n, err := count(q.Start, q.End)
		return []segment{{q.Start, q.End, n}}, err
	}
	var segs []segment
	if head := firstFull * hourMicros; head > q.Start {
		n, err := count(q.Start, head)
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{q.Start, head, n})
	}
	spans := bucketSpans(firstFull, lastFull)
	if sumOnly {
		total, err := s.bucketSum(ctx, q, spans)
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{firstFull * hourMicros, lastFull * hourMicros, total})
	} else {
		for _, sp := range spans {
			more, err := s.bucketSegments(ctx, q, sp[0], sp[1])
			if err != nil {
				return nil, err
			}
			segs = append(segs, more...)
		}
	}
	if tail := lastFull * hourMicros; tail < q.End {
		n, err := count(tail, q.End)
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{tail, q.End, n})
	}
	return segs, nil
}

// seek narrows [from, to) past the segments a page at offset skips whole, and
// returns the offset left within what remains and the segment where the page
// starts (zero when the offset reaches past every segment).
func seek(segs []segment, asc bool, from, to int64, offset int) (int64, int64, int, segment) {
	left := int64(offset)
	if asc {
		for _, sg := range segs {
			if sg.n > left {
				return from, to, int(left), sg
			}
			left -= sg.n
			from = sg.to
		}
	} else {
		for i := len(segs) - 1; i >= 0; i-- {
			sg := segs[i]
			if sg.n > left {
				return from, to, int(left), sg
			}
			left -= sg.n
			to = sg.from
		}
	}
	return from, to, int(left), segment{}
}
