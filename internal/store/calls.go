package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

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
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(c.AccountID)
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
		err := tx.QueryRow(ctx, `SELECT id, link_gen, start_time, caller_number, called_number, direction, status,
			(SELECT `+s.groupConcat("recording_blob")+` FROM call_legs WHERE call_pk = calls.id AND recording_blob IS NOT NULL)
			FROM calls WHERE account_id = ? AND id_sec = ? AND id_seq = ?`+s.db.ForUpdate(), c.AccountID, sec, seq).
			Scan(&old.pk, &old.gen, &old.start, &old.caller, &old.called, &old.direction, &old.status, &old.blobs)
		switch {
		case err == nil:
			out.Replaced = true
			if old.blobs.Valid && old.blobs.String != "" {
				out.OldBlobs = strings.Split(old.blobs.String, ",")
			}
			if _, err := tx.Exec(ctx, `DELETE FROM calls WHERE id = ?`, old.pk); err != nil {
				return fmt.Errorf("store: replace call: %w", err)
			}
			if err := countCall(ctx, tx, c.AccountID, old.start, old.direction, old.status, -1); err != nil {
				return err
			}
		case errors.Is(err, sql.ErrNoRows):
		default:
			return fmt.Errorf("store: find call: %w", err)
		}
		pk, err := tx.Insert(ctx, insertCall, CallRow(c.AccountID, c, sec, seq, old.gen, tx.Now())...)
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
				if _, err := tx.Exec(ctx, `INSERT INTO call_tags (call_pk, kind, value) VALUES (?, ?, ?)`, pk, t.kind, v); err != nil {
					return fmt.Errorf("store: call tag: %w", err)
				}
			}
		}
		for kind, v := range map[string]string{"purpose": c.CallPurpose, "sentiment": c.CallSentiment} {
			if v == "" {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO call_vocabulary (account_id, kind, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, c.AccountID, kind, v); err != nil {
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
			if _, err := tx.Exec(ctx, `INSERT INTO call_legs (call_pk, position, unique_id, leg_call_id, bridged_from_call_id,
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
			if _, err := tx.Exec(ctx, `INSERT INTO call_transcripts (call_pk, unique_id, language, segments) VALUES (?, ?, ?, ?)`,
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
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(accountID)
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		return addEvents(ctx, tx, accountID, events...)
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
	rows, err := s.db.Readers().QueryContext(ctx, s.db.Rebind(`SELECT id FROM users WHERE account_id = ? AND deleted_at IS NULL AND id IN (`+placeholders(len(args)-1)+`)`), args...)
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

// CallRowColumns are the columns a call is stored with, in the order of
// CallRow's values: the one insert of SaveCall and BulkInsertCalls, and the
// columns the benchmark loader copies (bench/callgen), so that the three
// cannot drift apart. repeated and called_back are not among them: they are
// derived afterwards (refreshDerived).
var CallRowColumns = []string{"account_id", "call_id", "id_sec", "id_seq", "direction", "status", "status_code",
	"caller_type", "called_type", "caller_name", "caller_number", "called_name", "called_number", "dialled_number",
	"caller_id_internal", "caller_id_external", "start_time", "end_time", "duration_seconds", "talk_time_seconds",
	"wait_time_seconds", "transferred", "abandoned", "recorded", "call_purpose", "call_sentiment", "search_text",
	"link_gen", "ingested_at"}

// insertCall stores one CallRow.
var insertCall = `INSERT INTO calls (` + strings.Join(CallRowColumns, ", ") + `) VALUES (` + placeholders(len(CallRowColumns)) + `)`

// CallRow returns the values of CallRowColumns for c of the account, whose
// id parsed to (sec, seq), with link generation linkGen, ingested at
// ingestedAt (unix micros).
func CallRow(accountID int64, c *domain.Call, sec, seq, linkGen, ingestedAt int64) []any {
	var end sql.NullInt64
	if c.EndTime != nil {
		end = sql.NullInt64{Int64: micros(*c.EndTime), Valid: true}
	}
	return []any{accountID, c.ID, sec, seq, c.Direction, c.Status, c.StatusCode,
		c.CallerType, c.CalledType, c.CallerName, c.CallerNumber, c.CalledName, c.CalledNumber, c.DialledNumber,
		c.CallerIDInternal, c.CallerIDExternal, micros(c.StartTime), end, c.DurationSeconds, c.TalkTimeSeconds,
		c.WaitTimeSeconds, c.Transferred, flag(c.Abandoned), flag(c.Recorded), c.CallPurpose, c.CallSentiment,
		SearchText(c), linkGen, ingestedAt}
}

// SearchText is what filters.search looks in: the caller's and called
// party's names and numbers and the dialled number, lowercased.
func SearchText(c *domain.Call) string {
	return strings.ToLower(strings.Join([]string{c.CallerName, c.CallerNumber, c.CalledName, c.CalledNumber, c.DialledNumber}, "\n"))
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
	_, err := tx.Exec(ctx, `UPDATE calls SET
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
	if s.db.Engine() != Postgres {
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
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(?)`, k); err != nil {
			return fmt.Errorf("store: lock call numbers: %w", err)
		}
	}
	return nil
}

// groupConcat is the engine's aggregate joining strings with commas.
func (s *Store) groupConcat(col string) string {
	if s.db.Engine() == Postgres {
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
	c, err := scanCall(s.db.QueryRow(ctx, `SELECT `+callColumns+` FROM calls WHERE account_id = ? AND id_sec = ? AND id_seq = ?`, accountID, sec, seq))
	if err != nil {
		return c, fmt.Errorf("store: call: %w", notFound(err, "call"))
	}
	return c, nil
}

// CallLegs returns the legs of c in the order they were ingested.
func (s *Store) CallLegs(ctx context.Context, c StoredCall) ([]domain.CallLeg, error) {
	rows, err := s.db.Query(ctx, `SELECT unique_id, leg_call_id, bridged_from_call_id, start_time, end_time, duration_seconds,
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
	rows, err := s.db.Query(ctx, `SELECT t.unique_id, t.language, t.segments FROM call_transcripts t
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
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE calls SET link_gen = link_gen + 1 WHERE account_id = ? AND id_sec = ? AND id_seq = ?`, accountID, sec, seq)
		if err != nil {
			return fmt.Errorf("store: revoke recording links: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "call %s not found on account %d", id, accountID)
		}
		return nil
	})
}

// BulkInsertCalls inserts calls (without legs, transcripts or events) in one
// transaction, for generators and benchmarks: far faster than SaveCall, it
// does not replace existing ids, keeps call_counts exact, stores the numbers
// filter values, and leaves repeated and calledBack at zero.
func (s *Store) BulkInsertCalls(ctx context.Context, accountID int64, list []domain.Call) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(accountID)
		counts := map[bucketKey]int64{}
		for i := range list {
			c := &list[i]
			sec, seq, ok := domain.ParseCallID(c.ID)
			if !ok {
				return domain.Errorf(domain.Invalid, "id %q: want %s", c.ID, domain.CallIDShape)
			}
			pk, err := tx.Insert(ctx, insertCall, CallRow(accountID, c, sec, seq, 0, tx.Now())...)
			if err != nil {
				return fmt.Errorf("store: bulk insert call: %w", err)
			}
			for _, n := range c.Numbers {
				if _, err := tx.Exec(ctx, `INSERT INTO call_tags (call_pk, kind, value) VALUES (?, ?, ?)`, pk, domain.TagNumber, n); err != nil {
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
