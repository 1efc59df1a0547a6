package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"switchboard/internal/domain"
)

// hourMicros is the width of a call_counts bucket.
const hourMicros = int64(3600_000_000)

// SavedCall is what SaveCall did.
type SavedCall struct {
	Replaced bool
	// OldBlobs are the recordings of the call it replaced, no longer
	// referenced: the caller deletes them from the blob store.
	OldBlobs []string
}

// SaveCall stores rec for its account, replacing a call with the same id,
// keeps the hourly counts and the derived fields (repeated, calledBack) of
// the calls around it exact, and writes events, all in one transaction.
// Recording content must already be in the blob store (Recording.Blob set).
func (s *Store) SaveCall(ctx context.Context, rec *domain.CallRecord, events []domain.Event) (SavedCall, error) {
	c := &rec.Call
	sec, seq, ok := domain.ParseCallID(c.ID)
	if !ok {
		return SavedCall{}, domain.Errorf(domain.Invalid, "id: want %s", domain.CallIDShape)
	}
	var out SavedCall
	err := s.writeData(ctx, func(tx *Tx) error {
		out = SavedCall{}
		if err := accountExists(ctx, tx, c.AccountID); err != nil {
			return err
		}
		// Concurrent ingests that touch the same number must see each other
		// to keep the derived fields exact (see lockNumbers).
		if err := s.lockNumbers(ctx, tx, c.AccountID, c.CallerNumber, c.CalledNumber); err != nil {
			return err
		}
		var old struct {
			pk, gen, start    int64
			caller, called    string
			direction, status string
			blobs             sql.NullString
		}
		err := tx.queryRow(ctx, `SELECT id, link_gen, start_time, caller_number, called_number, direction, status,
			(SELECT `+s.groupConcat("recording_blob")+` FROM call_legs WHERE call_pk = calls.id AND recording_blob IS NOT NULL)
			FROM calls WHERE account_id = ? AND id_sec = ? AND id_seq = ?`+s.forUpdate(), c.AccountID, sec, seq).
			Scan(&old.pk, &old.gen, &old.start, &old.caller, &old.called, &old.direction, &old.status, &old.blobs)
		switch {
		case err == nil:
			out.Replaced = true
			if old.blobs.Valid && old.blobs.String != "" {
				out.OldBlobs = strings.Split(old.blobs.String, ",")
			}
			if _, err := tx.exec(ctx, `DELETE FROM calls WHERE id = ?`, old.pk); err != nil {
				return fmt.Errorf("store: replace call: %w", err)
			}
			if err := countCall(ctx, tx, c.AccountID, old.start, old.direction, old.status, -1); err != nil {
				return err
			}
		case err == sql.ErrNoRows:
		default:
			return fmt.Errorf("store: find call: %w", err)
		}
		var end sql.NullInt64
		if c.EndTime != nil {
			end = sql.NullInt64{Int64: micros(*c.EndTime), Valid: true}
		}
		pk, err := tx.insert(ctx, `INSERT INTO calls (account_id, call_id, id_sec, id_seq, direction, status, status_code,
			caller_type, called_type, caller_name, caller_number, called_name, called_number, dialled_number,
			caller_id_internal, caller_id_external, start_time, end_time, duration_seconds, talk_time_seconds,
			wait_time_seconds, transferred, abandoned, recorded, call_purpose, call_sentiment, search_text, link_gen, ingested_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.AccountID, c.ID, sec, seq, c.Direction, c.Status, c.StatusCode,
			c.CallerType, c.CalledType, c.CallerName, c.CallerNumber, c.CalledName, c.CalledNumber, c.DialledNumber,
			c.CallerIDInternal, c.CallerIDExternal, micros(c.StartTime), end, c.DurationSeconds, c.TalkTimeSeconds,
			c.WaitTimeSeconds, c.Transferred, flag(c.Abandoned), flag(c.Recorded), c.CallPurpose, c.CallSentiment,
			SearchText(c), old.gen, tx.now)
		if err != nil {
			return fmt.Errorf("store: insert call: %w", err)
		}
		for _, t := range []struct {
			kind   string
			values []string
		}{
			{domain.TagNumber, c.Numbers}, {domain.TagExtension, c.Extensions}, {domain.TagQueue, c.Queues},
			{domain.TagHuntgroup, c.Huntgroups}, {domain.TagUser, c.Users},
		} {
			for _, v := range dedupe(t.values) {
				if _, err := tx.exec(ctx, `INSERT INTO call_tags (call_pk, kind, value) VALUES (?, ?, ?)`, pk, t.kind, v); err != nil {
					return fmt.Errorf("store: call tag: %w", err)
				}
			}
		}
		for kind, v := range map[string]string{"purpose": c.CallPurpose, "sentiment": c.CallSentiment} {
			if v == "" {
				continue
			}
			if _, err := tx.exec(ctx, `INSERT INTO call_vocabulary (account_id, kind, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, c.AccountID, kind, v); err != nil {
				return fmt.Errorf("store: call vocabulary: %w", err)
			}
		}
		for i, l := range rec.Legs {
			var lend sql.NullInt64
			if l.EndTime != nil {
				lend = sql.NullInt64{Int64: micros(*l.EndTime), Valid: true}
			}
			var blob, ctype sql.NullString
			var size sql.NullInt64
			if r := l.Recording; r != nil && r.Blob != "" {
				blob = sql.NullString{String: r.Blob, Valid: true}
				ctype = sql.NullString{String: r.ContentType, Valid: true}
				size = sql.NullInt64{Int64: r.Bytes, Valid: true}
			}
			if _, err := tx.exec(ctx, `INSERT INTO call_legs (call_pk, position, unique_id, leg_call_id, bridged_from_call_id,
				start_time, end_time, duration_seconds, talk_time_seconds, from_number, to_number,
				recording_blob, recording_type, recording_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				pk, i, l.UniqueID, l.CallID, l.BridgedFromCallID, micros(l.StartTime), lend, l.DurationSeconds,
				l.TalkTimeSeconds, l.From, l.To, blob, ctype, size); err != nil {
				return fmt.Errorf("store: call leg: %w", err)
			}
		}
		for _, t := range rec.Transcripts {
			segs, err := json.Marshal(t.Segments)
			if err != nil {
				return err
			}
			if _, err := tx.exec(ctx, `INSERT INTO call_transcripts (call_pk, unique_id, language, segments) VALUES (?, ?, ?, ?)`,
				pk, t.UniqueID, t.Language, string(segs)); err != nil {
				return fmt.Errorf("store: call transcript: %w", err)
			}
		}
		if err := countCall(ctx, tx, c.AccountID, micros(c.StartTime), c.Direction, c.Status, 1); err != nil {
			return err
		}
		// The derived fields of the calls this one (and the one it replaced)
		// could change: later calls from the same caller, and abandoned calls
		// it may have returned.
		t := micros(c.StartTime)
		if err := refreshDerived(ctx, tx, c.AccountID, c.CallerNumber, t, t+derivedWindow); err != nil {
			return err
		}
		if c.Direction == domain.CallOutbound {
			if err := refreshDerived(ctx, tx, c.AccountID, c.CalledNumber, t-derivedWindow, t); err != nil {
				return err
			}
		}
		if out.Replaced {
			if err := s.lockNumbers(ctx, tx, c.AccountID, old.caller, old.called); err != nil {
				return err
			}
			if old.caller != c.CallerNumber || old.start != t {
				if err := refreshDerived(ctx, tx, c.AccountID, old.caller, old.start, old.start+derivedWindow); err != nil {
					return err
				}
			}
			if old.direction == domain.CallOutbound {
				if err := refreshDerived(ctx, tx, c.AccountID, old.called, old.start-derivedWindow, old.start); err != nil {
					return err
				}
			}
		}
		for _, e := range events {
			if err := addEvent(ctx, tx, c.AccountID, e.Type, e.Payload); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// AddEvents writes events for an account in one transaction (real-time call
// events, which change nothing else).
func (s *Store) AddEvents(ctx context.Context, accountID int64, events []domain.Event) error {
	return s.writeData(ctx, func(tx *Tx) error {
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		for _, e := range events {
			if err := addEvent(ctx, tx, accountID, e.Type, e.Payload); err != nil {
				return err
			}
		}
		return nil
	})
}

// KnownUsers returns the ids in ids (decimal user ids) that are users of
// the account, in their order, in one statement: ingest drops the others
// (docs/decisions.md, call history). An id that is not a positive decimal
// integer is no user. Callers bound len(ids).
func (s *Store) KnownUsers(ctx context.Context, accountID int64, ids []string) ([]string, error) {
	args := make([]any, 0, len(ids)+1)
	args = append(args, accountID)
	for _, id := range ids {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
			args = append(args, n)
		}
	}
	if len(args) == 1 {
		return []string{}, nil
	}
	// The IN list's length varies, so the statement is not kept prepared
	// (as searchQuery does for search's lists).
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT id FROM users WHERE account_id = ? AND id IN (`+placeholders(len(args)-1)+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: known users: %w", err)
	}
	defer rows.Close()
	known := make(map[string]bool, len(ids))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: known users: %w", err)
		}
		known[strconv.FormatInt(id, 10)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: known users: %w", err)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if known[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// derivedWindow is domain.DerivedWindow in microseconds.
var derivedWindow = domain.DerivedWindow.Microseconds()

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// SearchText is what filters.search looks in: the caller's and called
// party's names and numbers and the dialled number, lowercased.
func SearchText(c *domain.Call) string {
	return strings.ToLower(strings.Join([]string{c.CallerName, c.CallerNumber, c.CalledName, c.CalledNumber, c.DialledNumber}, "\n"))
}

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
	_, err := tx.exec(ctx, `INSERT INTO call_counts (account_id, hour, direction, status, n) VALUES (?, ?, ?, ?, ?)
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

// refreshDerived recomputes repeated and called_back of the account's calls
// from caller whose start is in [from, to]. repeated counts earlier inbound
// calls from the same caller number within the window before a call (earlier
// by start time, then id); called_back of an abandoned inbound call is the
// first outbound call to its caller number that starts after it, within the
// window after it.
func refreshDerived(ctx context.Context, tx *Tx, accountID int64, caller string, from, to int64) error {
	if caller == "" {
		return nil
	}
	w := derivedWindow
	_, err := tx.exec(ctx, `UPDATE calls SET
		repeated = CASE WHEN direction = 'inbound' THEN (
			SELECT COUNT(*) FROM calls e WHERE e.account_id = calls.account_id AND e.caller_number = calls.caller_number
			AND e.direction = 'inbound' AND e.start_time >= calls.start_time - ? AND e.start_time <= calls.start_time
			AND (e.start_time < calls.start_time OR e.id_sec < calls.id_sec OR (e.id_sec = calls.id_sec AND e.id_seq < calls.id_seq))
		) ELSE 0 END,
		called_back = CASE WHEN direction = 'inbound' AND abandoned = 1 THEN (
			SELECT b.call_id FROM calls b WHERE b.account_id = calls.account_id AND b.called_number = calls.caller_number
			AND b.direction = 'outbound' AND b.start_time > calls.start_time AND b.start_time <= calls.start_time + ?
			ORDER BY b.start_time, b.id_sec, b.id_seq LIMIT 1
		) ELSE NULL END
		WHERE account_id = ? AND caller_number = ? AND start_time >= ? AND start_time <= ?`,
		w, w, accountID, caller, from, to)
	if err != nil {
		return fmt.Errorf("store: derived call fields: %w", err)
	}
	return nil
}

// lockNumbers serializes, on PostgreSQL, the ingest transactions that
// involve the same numbers of an account: each refreshes the derived fields
// of the calls around it, and must see the other's call once it commits
// (READ COMMITTED gives every statement a fresh snapshot, so waiting on the
// lock is enough). Locks are taken in a fixed order. SQLite has one writer.
func (s *Store) lockNumbers(ctx context.Context, tx *Tx, accountID int64, numbers ...string) error {
	if s.engine != Postgres {
		return nil
	}
	var keys []int64
	for _, n := range numbers {
		if n == "" {
			continue
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "calls\x00%d\x00%s", accountID, n)
		keys = append(keys, int64(h.Sum64()))
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, k); err != nil {
			return fmt.Errorf("store: lock call numbers: %w", err)
		}
	}
	return nil
}

// groupConcat is the engine's aggregate joining strings with commas.
func (s *Store) groupConcat(col string) string {
	if s.engine == Postgres {
		return "string_agg(" + col + ", ',')"
	}
	return "group_concat(" + col + ", ',')"
}

// callPageColumns are the columns of what the public API shows of a call, in
// the order callPage scans them: all a search page reads, since each column
// stepped through costs (a page is the hot path of call search).
const callPageColumns = `call_id, direction, status, status_code, caller_type, called_type,
	caller_name, caller_number, called_name, called_number, dialled_number, caller_id_internal, caller_id_external,
	start_time, end_time, duration_seconds, talk_time_seconds, transferred, abandoned, recorded, repeated, called_back`

// callColumns are the columns scanCall reads, in order.
const callColumns = `calls.id, calls.account_id, ` + callPageColumns + `, wait_time_seconds, call_purpose, call_sentiment, link_gen`

// StoredCall is a call with the store's handles on it.
type StoredCall struct {
	domain.Call
	pk      int64
	LinkGen int64 // the generation of its recording links
}

// callPage scans callPageColumns into a Call: dest, then finish once Scan
// has filled them.
type callPage struct {
	start               int64
	end                 sql.NullInt64
	calledBack          sql.NullString
	abandoned, recorded int64
}

func (p *callPage) dest(c *domain.Call) []any {
	return []any{&c.ID, &c.Direction, &c.Status, &c.StatusCode, &c.CallerType, &c.CalledType,
		&c.CallerName, &c.CallerNumber, &c.CalledName, &c.CalledNumber, &c.DialledNumber, &c.CallerIDInternal, &c.CallerIDExternal,
		&p.start, &p.end, &c.DurationSeconds, &c.TalkTimeSeconds, &c.Transferred, &p.abandoned, &p.recorded, &c.Repeated, &p.calledBack}
}

func (p *callPage) finish(c *domain.Call) {
	c.StartTime = fromMicros(p.start)
	if p.end.Valid {
		t := fromMicros(p.end.Int64)
		c.EndTime = &t
	}
	c.Abandoned, c.Recorded = p.abandoned != 0, p.recorded != 0
	c.CalledBack = p.calledBack.String
}

// pageRow scans one row of callPageColumns with scan (database/sql's or
// pgx's Rows.Scan) into a call of the account.
func pageRow(scan func(...any) error, accountID int64) (domain.Call, error) {
	c := domain.Call{AccountID: accountID}
	var p callPage
	if err := scan(p.dest(&c)...); err != nil {
		return c, err
	}
	p.finish(&c)
	return c, nil
}

func scanCall(sc interface{ Scan(...any) error }) (StoredCall, error) {
	var c StoredCall
	var p callPage
	dest := append([]any{&c.pk, &c.AccountID}, p.dest(&c.Call)...)
	if err := sc.Scan(append(dest, &c.WaitTimeSeconds, &c.CallPurpose, &c.CallSentiment, &c.LinkGen)...); err != nil {
		return c, err
	}
	p.finish(&c.Call)
	return c, nil
}

// Call returns the account's call with id, or not_found.
func (s *Store) Call(ctx context.Context, accountID int64, id string) (StoredCall, error) {
	sec, seq, ok := domain.ParseCallID(id)
	if !ok {
		return StoredCall{}, domain.Errorf(domain.NotFound, "call not found")
	}
	c, err := scanCall(s.queryRow(ctx, `SELECT `+callColumns+` FROM calls WHERE account_id = ? AND id_sec = ? AND id_seq = ?`, accountID, sec, seq))
	if err != nil {
		return c, fmt.Errorf("store: call: %w", notFound(err, "call"))
	}
	return c, nil
}

// CallLegs returns the legs of c in the order they were ingested.
func (s *Store) CallLegs(ctx context.Context, c StoredCall) ([]domain.CallLeg, error) {
	rows, err := s.query(ctx, `SELECT unique_id, leg_call_id, bridged_from_call_id, start_time, end_time, duration_seconds,
		talk_time_seconds, from_number, to_number, recording_blob, recording_type, recording_bytes
		FROM call_legs WHERE call_pk = ? ORDER BY position`, c.pk)
	if err != nil {
		return nil, fmt.Errorf("store: call legs: %w", err)
	}
	defer rows.Close()
	out := []domain.CallLeg{}
	for rows.Next() {
		var l domain.CallLeg
		var start int64
		var end, size sql.NullInt64
		var blob, ctype sql.NullString
		if err := rows.Scan(&l.UniqueID, &l.CallID, &l.BridgedFromCallID, &start, &end, &l.DurationSeconds,
			&l.TalkTimeSeconds, &l.From, &l.To, &blob, &ctype, &size); err != nil {
			return nil, err
		}
		l.StartTime = fromMicros(start)
		if end.Valid {
			t := fromMicros(end.Int64)
			l.EndTime = &t
		}
		if blob.Valid {
			l.Recording = &domain.Recording{Blob: blob.String, ContentType: ctype.String, Bytes: size.Int64}
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// CallTranscripts returns the transcripts of c, by leg order then language.
func (s *Store) CallTranscripts(ctx context.Context, c StoredCall) ([]domain.Transcript, error) {
	rows, err := s.query(ctx, `SELECT t.unique_id, t.language, t.segments FROM call_transcripts t
		LEFT JOIN call_legs l ON l.call_pk = t.call_pk AND l.unique_id = t.unique_id
		WHERE t.call_pk = ? ORDER BY COALESCE(l.position, -1), t.unique_id, t.language`, c.pk)
	if err != nil {
		return nil, fmt.Errorf("store: call transcripts: %w", err)
	}
	defer rows.Close()
	out := []domain.Transcript{}
	for rows.Next() {
		var t domain.Transcript
		var segs string
		if err := rows.Scan(&t.UniqueID, &t.Language, &segs); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(segs), &t.Segments); err != nil {
			return nil, fmt.Errorf("store: transcript segments: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeRecordingLinks makes every signed link to the account's call stop
// working, by moving the call's link generation on.
func (s *Store) RevokeRecordingLinks(ctx context.Context, accountID int64, id string) error {
	sec, seq, ok := domain.ParseCallID(id)
	if !ok {
		return domain.Errorf(domain.Invalid, "call id: want %s", domain.CallIDShape)
	}
	return s.writeData(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE calls SET link_gen = link_gen + 1 WHERE account_id = ? AND id_sec = ? AND id_seq = ?`, accountID, sec, seq)
		if err != nil {
			return fmt.Errorf("store: revoke recording links: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "call %s not found on account %d", id, accountID)
		}
		return nil
	})
}

// RecordingKey returns the secret that signs recording links, creating it on
// first use.
func (s *Store) RecordingKey(ctx context.Context) ([]byte, error) {
	key, err := cached(ctx, s, "recording-key", func() ([]byte, error) { return s.recordingKey(ctx) })
	if err == nil && key == nil {
		// None yet: make one (two processes racing keep the newest).
		if err := s.RotateRecordingKey(ctx); err != nil {
			return nil, err
		}
		return s.recordingKey(ctx)
	}
	return key, err
}

func (s *Store) recordingKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := s.queryRow(ctx, `SELECT secret FROM recording_keys ORDER BY id DESC LIMIT 1`).Scan(&key)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: recording key: %w", err)
	}
	return key, nil
}

// RotateRecordingKey replaces the key that signs recording links: every link
// handed out before stops working.
func (s *Store) RotateRecordingKey(ctx context.Context) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	return s.write(ctx, func(tx *Tx) error {
		id, err := tx.insert(ctx, `INSERT INTO recording_keys (secret, created_at) VALUES (?, ?)`, key, tx.now)
		if err != nil {
			return fmt.Errorf("store: rotate recording key: %w", err)
		}
		_, err = tx.exec(ctx, `DELETE FROM recording_keys WHERE id < ?`, id)
		return err
	})
}

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
		if s.engine == Postgres {
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
		if !deep && s.engine == Postgres && q.Start%hourMicros == 0 && q.End%hourMicros == 0 && q.Start < q.End {
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
		if err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM calls WHERE `+where), args...).Scan(&total); err != nil {
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
	conn, err := s.r.Conn(ctx)
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
		b.Queue(s.q(sumQuery), sumArgs...)
		b.Queue(s.q(pageQuery), pageArgs...)
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
			if s.engine == Postgres && textSort[q.Sort] {
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
		return s.query(ctx, query, args...)
	}
	return s.r.QueryContext(ctx, s.q(query), args...)
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
		err := s.queryRow(ctx, `SELECT COUNT(*) FROM calls WHERE `+where, args...).Scan(&n)
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
	if err := s.queryRow(ctx, query, args...).Scan(&n); err != nil {
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

// IngestToken is a credential a phone system pushes calls with.
type IngestToken struct {
	ID        int64
	AccountID int64
	Name      string
	Prefix    string
	CreatedAt int64
	RevokedAt *int64
}

// CreateIngestToken stores the hash of a new ingest token.
func (s *Store) CreateIngestToken(ctx context.Context, accountID int64, name, prefix string, hash []byte) (IngestToken, error) {
	t := IngestToken{AccountID: accountID, Name: name, Prefix: prefix}
	err := s.write(ctx, func(tx *Tx) error {
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		id, err := tx.insert(ctx, `INSERT INTO ingest_tokens (account_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
			accountID, name, prefix, hash, tx.now)
		if err != nil {
			return fmt.Errorf("store: create ingest token: %w", err)
		}
		t.ID, t.CreatedAt = id, tx.now
		return nil
	})
	return t, err
}

// IngestTokenAccount returns the account of the live ingest token with hash.
func (s *Store) IngestTokenAccount(ctx context.Context, hash []byte) (int64, error) {
	return cached(ctx, s, "ingest:"+string(hash), func() (int64, error) {
		var account int64
		err := s.queryRow(ctx, `SELECT account_id FROM ingest_tokens WHERE hash = ? AND revoked_at IS NULL`, hash).Scan(&account)
		if err != nil {
			return 0, fmt.Errorf("store: ingest token: %w", notFound(err, "ingest token"))
		}
		return account, nil
	})
}

// IngestTokens lists the account's ingest tokens, oldest first.
func (s *Store) IngestTokens(ctx context.Context, accountID int64) ([]IngestToken, error) {
	rows, err := s.query(ctx, `SELECT id, account_id, name, prefix, created_at, revoked_at FROM ingest_tokens WHERE account_id = ? ORDER BY id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: ingest tokens: %w", err)
	}
	defer rows.Close()
	out := []IngestToken{}
	for rows.Next() {
		var t IngestToken
		var revoked sql.NullInt64
		if err := rows.Scan(&t.ID, &t.AccountID, &t.Name, &t.Prefix, &t.CreatedAt, &revoked); err != nil {
			return nil, err
		}
		if revoked.Valid {
			t.RevokedAt = &revoked.Int64
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeIngestToken revokes one of the account's ingest tokens.
func (s *Store) RevokeIngestToken(ctx context.Context, accountID, id int64) error {
	return s.write(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE ingest_tokens SET revoked_at = ? WHERE account_id = ? AND id = ? AND revoked_at IS NULL`, tx.now, accountID, id)
		if err != nil {
			return fmt.Errorf("store: revoke ingest token: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "no live ingest token %d on account %d", id, accountID)
		}
		return nil
	})
}

// BulkInsertCalls inserts calls (without legs, transcripts or events) in one
// transaction, for generators and benchmarks: far faster than SaveCall, it
// does not replace existing ids, keeps call_counts exact, stores the numbers
// filter values, and leaves repeated and calledBack at zero.
func (s *Store) BulkInsertCalls(ctx context.Context, accountID int64, list []domain.Call) error {
	return s.writeData(ctx, func(tx *Tx) error {
		counts := map[bucketKey]int64{}
		for i := range list {
			c := &list[i]
			sec, seq, ok := domain.ParseCallID(c.ID)
			if !ok {
				return domain.Errorf(domain.Invalid, "id %q: want %s", c.ID, domain.CallIDShape)
			}
			var end sql.NullInt64
			if c.EndTime != nil {
				end = sql.NullInt64{Int64: micros(*c.EndTime), Valid: true}
			}
			pk, err := tx.insert(ctx, `INSERT INTO calls (account_id, call_id, id_sec, id_seq, direction, status, status_code,
				caller_type, called_type, caller_name, caller_number, called_name, called_number, dialled_number,
				caller_id_internal, caller_id_external, start_time, end_time, duration_seconds, talk_time_seconds,
				wait_time_seconds, transferred, abandoned, recorded, call_purpose, call_sentiment, search_text, link_gen, ingested_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				accountID, c.ID, sec, seq, c.Direction, c.Status, c.StatusCode,
				c.CallerType, c.CalledType, c.CallerName, c.CallerNumber, c.CalledName, c.CalledNumber, c.DialledNumber,
				c.CallerIDInternal, c.CallerIDExternal, micros(c.StartTime), end, c.DurationSeconds, c.TalkTimeSeconds,
				c.WaitTimeSeconds, c.Transferred, flag(c.Abandoned), flag(c.Recorded), c.CallPurpose, c.CallSentiment,
				SearchText(c), 0, tx.now)
			if err != nil {
				return fmt.Errorf("store: bulk insert call: %w", err)
			}
			for _, n := range c.Numbers {
				if _, err := tx.exec(ctx, `INSERT INTO call_tags (call_pk, kind, value) VALUES (?, ?, ?)`, pk, domain.TagNumber, n); err != nil {
					return fmt.Errorf("store: bulk call tag: %w", err)
				}
			}
			for _, k := range bucketKeys(micros(c.StartTime), c.Direction, c.Status) {
				counts[k]++
			}
		}
		for k, n := range counts {
			if err := countBucket(ctx, tx, accountID, k, n); err != nil {
				return err
			}
		}
		return nil
	})
}
