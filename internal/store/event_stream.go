package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// The live event stream (GET /events, internal/stream) reads the outbox in
// the order events became visible, the same order the webhook fan-out uses:
// on SQLite the single writer commits events in id order, so the order is
// id; on PostgreSQL ids are handed out in one order and committed in another,
// so the order is (xid, id), read only below the horizon of the oldest
// transaction still running (fanOutHorizon, migration 0022), behind which no
// event can still appear.

// EventPos is an event's place in the stream order: (Xid, ID), Xid always 0
// on SQLite. An event written without an xid on PostgreSQL (a test
// delivery's own, rows fanned out before migration 0022) is never streamed;
// resuming after one counts its xid as 0.
type EventPos struct {
	Xid, ID int64
}

// After reports whether p comes after q in the stream order.
func (p EventPos) After(q EventPos) bool {
	return p.Xid > q.Xid || (p.Xid == q.Xid && p.ID > q.ID)
}

// StreamEvent is one outbox row as the stream reads it.
type StreamEvent struct {
	Pos       EventPos
	AccountID int64
	// AudienceUserID is the user a personal event is for (migration 0029);
	// 0 for an event every credential that may see its subject receives.
	AudienceUserID int64
	Type           string
	Payload        json.RawMessage
	CreatedAt      time.Time
}

const streamColumns = `id, account_id, audience_user_id, type, payload, created_at`

// StreamHead is the position of the last event a stream may read now: a
// stream starting there receives every event written later, and no earlier
// one.
func (s *Store) StreamHead(ctx context.Context) (EventPos, error) {
	var p EventPos
	var err error
	if s.db.Engine() == Postgres {
		err = s.db.QueryRow(ctx, `SELECT xid, id FROM events WHERE xid IS NOT NULL AND xid < `+fanOutHorizon+`
			ORDER BY xid DESC, id DESC LIMIT 1`).Scan(&p.Xid, &p.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return EventPos{}, nil
		}
	} else {
		err = s.db.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM events`).Scan(&p.ID)
	}
	if err != nil {
		return EventPos{}, fmt.Errorf("store: stream head: %w", err)
	}
	return p, nil
}

// StreamEvents reads up to limit events of every account after pos, in the
// stream order. held reports, on PostgreSQL, that an event past the last one
// returned exists but a transaction still running holds it back (or it was
// committed after the read): the caller should look again soon.
func (s *Store) StreamEvents(ctx context.Context, after EventPos, limit int) (events []StreamEvent, held bool, err error) {
	if s.db.Engine() != Postgres {
		events, err = s.streamRows(ctx, `SELECT `+streamColumns+`, 0 FROM events WHERE id > ? ORDER BY id LIMIT ?`, after.ID, limit)
		return events, false, err
	}
	events, err = s.streamRows(ctx, `SELECT `+streamColumns+`, xid FROM events
		WHERE xid IS NOT NULL AND (xid, id) > (?, ?) AND xid < `+fanOutHorizon+`
		ORDER BY xid, id LIMIT ?`, after.Xid, after.ID, limit)
	if err != nil || len(events) == limit {
		return events, false, err
	}
	if len(events) > 0 {
		after = events[len(events)-1].Pos
	}
	var one int
	err = s.db.QueryRow(ctx, `SELECT 1 FROM events WHERE xid IS NOT NULL AND (xid, id) > (?, ?) ORDER BY xid, id LIMIT 1`, after.Xid, after.ID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return events, false, nil
	case err != nil:
		return events, false, fmt.Errorf("store: stream events: %w", err)
	}
	return events, true, nil
}

// AccountStreamEvents reads up to limit of the account's events in
// (after, upTo] that sel lets through, in the stream order: a stream's
// replay, from the position it resumes after up to the position where it
// joins the live events. Fewer than limit: none is left in the range.
func (s *Store) AccountStreamEvents(ctx context.Context, accountID int64, after, upTo EventPos, sel StreamSelect, limit int) ([]StreamEvent, error) {
	where, args, ok := s.streamSelect(sel)
	if !ok {
		return nil, nil
	}
	if s.db.Engine() != Postgres {
		return s.streamRows(ctx, `SELECT `+streamColumns+`, 0 FROM events
			WHERE account_id = ? AND id > ? AND id <= ?`+where+` ORDER BY id LIMIT ?`,
			append(append([]any{accountID, after.ID, upTo.ID}, args...), limit)...)
	}
	return s.streamRows(ctx, `SELECT `+streamColumns+`, xid FROM events
		WHERE xid IS NOT NULL AND (xid, id) > (?, ?) AND (xid, id) <= (?, ?) AND account_id = ?`+where+`
		ORDER BY xid, id LIMIT ?`, append(append([]any{after.Xid, after.ID, upTo.Xid, upTo.ID, accountID}, args...), limit)...)
}

// StreamSelect narrows a replay (AccountStreamEvents) to the events one
// stream may see: the stream's visibility rule (internal/stream) in SQL, so
// that a replay reads what it sends and not the account's whole history.
type StreamSelect struct {
	// User, when set, leaves out the personal events of other users.
	User int64
	// Any are the sets of events the stream may see; none: no event.
	Any []StreamClause
}

// StreamClause is one set of events a stream may see.
type StreamClause struct {
	// Types are the event types of the set.
	Types []string
	// Lines, when not nil, are the lines (the payload's line) an event of
	// the set is about; Lined: it is about some line.
	Lines []string
	Lined bool
}

// streamSelect is sel as SQL conditions (each with its leading AND) and
// their arguments; ok is false when sel lets nothing through. The lists go
// in as one JSON array each, so that the statement's text depends on sel's
// shape alone and stays prepared.
func (s *Store) streamSelect(sel StreamSelect) (where string, args []any, ok bool) {
	line, in := `json_extract(payload, '$.line')`, ` IN (SELECT value FROM json_each(?))`
	if s.db.Engine() == Postgres {
		// An array the planner reads once, and a filter it checks after the
		// type's: as a join, it parsed every event's payload first (ten
		// times the cost of a replay that sends nothing).
		line, in = `(payload::jsonb ->> 'line')`, ` = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))`
	}
	list := func(l []string) any {
		b, _ := json.Marshal(l) // strings always marshal
		return string(b)
	}
	var sets []string
	for _, c := range sel.Any {
		if len(c.Types) == 0 || (c.Lines != nil && len(c.Lines) == 0) {
			continue // matches nothing
		}
		cond := `type` + in
		args = append(args, list(c.Types))
		if c.Lines != nil {
			cond += ` AND ` + line + in
			args = append(args, list(c.Lines))
		}
		if c.Lined {
			cond += ` AND COALESCE(` + line + `, '') <> ''`
		}
		sets = append(sets, `(`+cond+`)`)
	}
	if len(sets) == 0 {
		return "", nil, false
	}
	where = ` AND (` + strings.Join(sets, ` OR `) + `)`
	if sel.User != 0 {
		where = ` AND COALESCE(audience_user_id, 0) IN (0, ?)` + where
		args = append([]any{sel.User}, args...)
	}
	return where, args, true
}

// EventPosition returns the position and time of the account's event id;
// not_found when the account has no such event (never had, or it was
// pruned).
func (s *Store) EventPosition(ctx context.Context, accountID, id int64) (EventPos, time.Time, error) {
	xid := `0`
	if s.db.Engine() == Postgres {
		xid = `COALESCE(xid, 0)`
	}
	p := EventPos{ID: id}
	var created int64
	err := s.db.QueryRow(ctx, `SELECT `+xid+`, created_at FROM events WHERE id = ? AND account_id = ?`, id, accountID).Scan(&p.Xid, &created)
	if err != nil {
		return EventPos{}, time.Time{}, notFound(err, "event")
	}
	return p, fromMicros(created), nil
}

func (s *Store) streamRows(ctx context.Context, query string, args ...any) ([]StreamEvent, error) {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: stream events: %w", err)
	}
	defer rows.Close()
	var out []StreamEvent
	for rows.Next() {
		var e StreamEvent
		var audience sql.NullInt64
		var payload string
		var created int64
		if err := rows.Scan(&e.Pos.ID, &e.AccountID, &audience, &e.Type, &payload, &created, &e.Pos.Xid); err != nil {
			return nil, fmt.Errorf("store: stream events: %w", err)
		}
		e.AudienceUserID, e.Payload, e.CreatedAt = audience.Int64, json.RawMessage(payload), fromMicros(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: stream events: %w", err)
	}
	return out, nil
}

// wakeSlots are the listeners of commits that wrote events (Tx.Wake): the
// webhook dispatcher's (OnEvents) and the stream hub's (OnStreamEvents).
// The engine runs one listener; this is it.
type wakeSlots struct {
	dispatch, stream atomic.Pointer[func()]
}

func (w *wakeSlots) run() {
	if fn := w.dispatch.Load(); fn != nil {
		(*fn)()
	}
	if fn := w.stream.Load(); fn != nil {
		(*fn)()
	}
}

func setSlot(slot *atomic.Pointer[func()], fn func()) {
	if fn == nil {
		slot.Store(nil)
		return
	}
	slot.Store(&fn)
}

// OnStreamEvents sets fn (nil: none) to run after every commit in this
// process that added outbox events, beside the OnEvents listener: the
// stream hub reads them at once. Same rules as OnEvents.
func (s *Store) OnStreamEvents(fn func()) {
	setSlot(&s.wakes.stream, fn)
	s.db.OnWake(s.wakes.run)
}

// AccountLastEvent is the position of the account's last event at or
// before upTo in the stream order, zero when it has none: the id a new
// stream's first message and a reset message carry, so that a client
// reconnecting with it resumes at upTo (event 0 counts as the start of the
// order).
func (s *Store) AccountLastEvent(ctx context.Context, accountID int64, upTo EventPos) (EventPos, error) {
	var p EventPos
	var err error
	if s.db.Engine() == Postgres {
		err = s.db.QueryRow(ctx, `SELECT xid, id FROM events WHERE xid IS NOT NULL AND (xid, id) <= (?, ?) AND account_id = ?
			ORDER BY xid DESC, id DESC LIMIT 1`, upTo.Xid, upTo.ID, accountID).Scan(&p.Xid, &p.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return EventPos{}, nil
		}
	} else {
		err = s.db.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM events WHERE account_id = ? AND id <= ?`, accountID, upTo.ID).Scan(&p.ID)
	}
	if err != nil {
		return EventPos{}, fmt.Errorf("store: account's last event: %w", err)
	}
	return p, nil
}
