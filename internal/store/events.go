package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// addEvent writes an event to the outbox in the caller's transaction. The
// payload is the domain's encoding (domain/events.go); the store does not
// read it.
func addEvent(ctx context.Context, tx *Tx, accountID int64, typ string, payload []byte) error {
	if _, err := tx.exec(ctx, `INSERT INTO events (account_id, type, payload, created_at) VALUES (?, ?, ?, ?)`, accountID, typ, string(payload), tx.now); err != nil {
		return fmt.Errorf("store: event: %w", err)
	}
	return nil
}

// Event is one outbox row.
type Event struct {
	ID        int64
	AccountID int64
	Type      string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Events lists the account's events after id, oldest first.
func (s *Store) Events(ctx context.Context, accountID, after int64, limit int) ([]Event, error) {
	rows, err := s.query(ctx, `SELECT id, type, payload, created_at FROM events WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`, accountID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{AccountID: accountID}
		var payload string
		var created int64
		if err := rows.Scan(&e.ID, &e.Type, &payload, &created); err != nil {
			return nil, err
		}
		e.Payload, e.CreatedAt = json.RawMessage(payload), fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}
