package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// addEvent writes an event to the outbox in the caller's transaction. The
// capability that owns the event built its type and payload (calls and sms
// build theirs, with domain.NewEvent); the store reads neither. No write
// reads the outbox back, so the insert is queued (ExecLater on PostgreSQL;
// with its group's other events on SQLite: eventRows). Tx.Wake runs
// the OnEvents listener after the commit.
func addEvent(ctx context.Context, tx *Tx, accountID int64, typ string, payload []byte) error {
	if skipEvents {
		return nil
	}
	if typ == "" {
		// A caller that forgot to build its event: refuse the write rather
		// than commit the change without its outbox row.
		return fmt.Errorf("store: event without a type")
	}
	var err error
	if tx.Engine() == SQLite {
		err = eventRows.Exec(ctx, tx, accountID, typ, string(payload), tx.Now(), nil)
	} else {
		err = tx.ExecLater(ctx, `INSERT INTO events (account_id, type, payload, created_at) VALUES (?, ?, ?, ?)`, accountID, typ, string(payload), tx.Now())
	}
	if err != nil {
		return fmt.Errorf("store: event: %w", err)
	}
	tx.Wake()
	return nil
}

// eventRows is the outbox insert on SQLite, every event's (audience NULL for
// everyone's), so that a group's events go in together and in the order
// its writes made them (sqldb.GroupInsert): two per send, and the single
// writer's CPU bounds the send rate.
var eventRows = sqldb.GroupInsert{
	Into: `INSERT INTO events (account_id, type, payload, created_at, audience_user_id) VALUES `,
	Row:  `(?, ?, ?, ?, ?)`,
	Cols: 5,
}

// addEvents writes the capability's events in the caller's transaction, a
// personal one (Audience set) with its audience. The common, shared event
// keeps addEvent's statement, the one every send already prepares.
func addEvents(ctx context.Context, tx *Tx, accountID int64, events ...domain.Event) error {
	if skipEvents {
		return nil
	}
	for _, e := range events {
		if e.Audience == 0 {
			if err := addEvent(ctx, tx, accountID, e.Type, e.Payload); err != nil {
				return err
			}
			continue
		}
		if e.Type == "" {
			return fmt.Errorf("store: event without a type")
		}
		var err error
		if tx.Engine() == SQLite {
			err = eventRows.Exec(ctx, tx, accountID, e.Type, string(e.Payload), tx.Now(), e.Audience)
		} else {
			err = tx.ExecLater(ctx, `INSERT INTO events (account_id, type, payload, created_at, audience_user_id) VALUES (?, ?, ?, ?, ?)`,
				accountID, e.Type, string(e.Payload), tx.Now(), e.Audience)
		}
		if err != nil {
			return fmt.Errorf("store: event: %w", err)
		}
		tx.Wake()
	}
	return nil
}

// OnEvents sets fn (nil: none) to run after every commit that added outbox
// events or a delivery due now, so that the webhook dispatcher starts at once
// instead of at its next poll. One such listener per store (the stream hub has its own, OnStreamEvents), in this process only:
// other processes find the work by polling. fn runs on the writer's path and
// must return at once (Dispatcher.Wake does). The writes that add such
// work call Tx.Wake.
func (s *Store) OnEvents(fn func()) {
	setSlot(&s.wakes.dispatch, fn)
	s.db.OnWake(s.wakes.run)
}

// Event is one outbox row.
type Event struct {
	ID        int64
	AccountID int64
	Type      string
	Payload   json.RawMessage
	CreatedAt time.Time
	// Audience is the user of a personal event, 0 for everyone's (see
	// domain.Event).
	Audience int64
}

// Events lists the account's events after id, oldest first.
func (s *Store) Events(ctx context.Context, accountID, after int64, limit int) ([]Event, error) {
	rows, err := s.db.Query(ctx, `SELECT id, type, payload, created_at, COALESCE(audience_user_id, 0) FROM events WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`, accountID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{AccountID: accountID}
		var payload string
		var created int64
		if err := rows.Scan(&e.ID, &e.Type, &payload, &created, &e.Audience); err != nil {
			return nil, err
		}
		e.Payload, e.CreatedAt = json.RawMessage(payload), fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}
